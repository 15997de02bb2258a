"""The offline parser's vocabulary: domain words as data, one table per slot.

Every pattern is a regular expression over the *normalized* intent (lower case,
number words as digits, quantities replaced by ``<qN:kind>`` placeholders, the
upper-case stream name ``MAP`` rewritten to ``mapmsg``; see ``intent_text.normalize``).
Tables are ordered: the first matching entry wins where a slot takes one value.

Application cues carry weights: an explicit name or title scores 10, a catalogue
synonym or a characteristic description 3, a weak hint 1. The application with the
highest total wins; ties and intents with no cue at all are assigned from the
scenario seed (``Substream.ASSIGNMENT``), so an intent that leaves the application
open still compiles deterministically.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from lastv2x.core.catalogue import APPLICATIONS, FAULT_OPERATORS, Application, Stream
from lastv2x.core.perception import (
    TAILGATER_GAP_M as TAILGATER_GAP_M,  # (read as lx.TAILGATER_GAP_M)
)
from lastv2x.core.spec import AgentRole, AnchorEvent, FaultOperator

A = Application

# ── applications ───────────────────────────────────────────────────────────
# a turn named as signal hardware ("the left-turn arrow", "the left-turn lane's group") is not the manoeuvre
_HARDWARE = r"(?![- ](arrows?|signals?|phases?|lanes?|groups?|lights?|heads?|pockets?)('s)?\b)"
APP_CUES: tuple[tuple[Application, str, int], ...] = (
    # explicit names and titles
    (A.RLVW, r"\brlvw\b|red[- ]light (violation )?warning|signal violation warning", 10),
    (A.GLOSA, r"\bglosa\b|green[- ]light optimal speed", 10),
    (A.FCW, r"\bfcw\b|forward[- ]collision", 10),
    (A.EEBL, r"\beebl\b|emergency electronic brake|electronic brake lights?", 10),
    (A.IMA, r"\bima\b|intersection movement( assist)?|intersection assist", 10),
    (A.LTA, r"\blta\b|left[- ]turn assist", 10),
    # RLVW descriptions
    (A.RLVW, r"\bred[- ]light\b(?![- ]runners?\b)|signal violation|\bruns? (a |the )?red\b|running[- ](a[- ]|the[- ])?red\b",
     3),
    (A.RLVW, r"dilemma zone|(stop|brake) (or|vs\.?|versus) (go|proceed)|whether (to )?(stop|brake)", 3),
    (A.RLVW, r"(light|signal)s? (ahead |is |are )?(about to )?(turns?|turning|changes?|changing|goes|going|go|switch\w*) "
             r"(to )?(amber|yellow|red)|\bred (entry|violation)|about to (turn|change|go)( to)? (red|amber|yellow)", 3),
    (A.RLVW, r"end of (the )?green|last seconds of (the )?green|(alert\w*|warn\w*|tell\w*|told) (\w+ ){0,4}(to )?(stop|brake)\b",
     3),
    (A.RLVW, r"(cross\w*|pass\w*|enter\w*) (the )?(stop bar|stop line|intersection|junction) (on|under|during|against) "
             r"(a |the )?red", 3),
    (A.RLVW, r"enter\w* (the intersection |the junction )?(on|under|during|against) (a |the )?red", 3),
    (A.RLVW, r"stop bar|stop line|\bamber\b|\byellow\b", 1),
    # GLOSA descriptions
    (A.GLOSA, r"speed advi\w*|optimal speed|green wave|eco[- ]?(approach|driving)|advis\w* (\w+ )?(a |the )?speed", 3),
    (A.GLOSA, r"speed (profile|suggestion|recommendation)|suggest\w* (a |an )?(target |approach )?speed|how fast to (go|drive)"
              r"|adapt\w* (its |the |their )?speed|tim\w* (its |the )?arrival|\bsmooth\w*", 3),
    (A.GLOSA, r"(make|catch\w*|hit\w*) the (next )?green|(turn|turns|turning|switch\w*|change\w*) (to )?green"
              r"|(wait|waiting|idl\w*) at (the |a )?(red |traffic )?light|never (stops|stopping|has to stop)", 3),
    (A.GLOSA, r"catch\w* (the |a )?green|arriv\w* (on|at|during) (the |a )?green|recommend\w* (a )?speed", 3),
    (A.GLOSA, r"(avoid|avoids|avoiding|without|fewer|number of|counts?|counting|minimi[sz]\w*|reduc\w*) (the )?"
              r"(number of )?(stops?|stopping)\b|how many times (\w+ ){0,4}stop", 3),
    (A.GLOSA, r"(fuel|energy)[- ]?(efficient|efficiency|saving|consumption)|glid\w*|coast\w* (to|through|toward)", 3),
    (A.GLOSA, r"corridor|arterial|(series|string|chain|sequence) of ([\w-]+ )?(signals|lights|intersections|junctions)", 2),
    (A.GLOSA, r"(successive|consecutive|several|multiple|\d) (signali[sz]ed )?(traffic )?(signals|lights|intersections|junctions)",
     2),
    (A.GLOSA, r"rsu (chain|relay)|relay\w* (the )?spat|spat (is )?relay", 2),
    # FCW descriptions
    (A.FCW, r"rear[- ]end|collision warning|tailgat\w*|time[- ]to[- ]collision|\bttc\b|closing speed", 3),
    (A.FCW, r"\b(front|forward|frontal)[- ](crash|collision|impact)", 4),
    (A.FCW, r"clos\w* (in )?(fast |quickly |rapidly )?on|follow\w* (\w+ ){0,3}?(too )?close|following distance"
            r"|safe distance", 3),
    (A.FCW, r"(slow(er)?|slow-moving|stopped|stationary|crawling|stalled|broken-down|decelerating) "
            r"(vehicle|car|truck|lead|van|bus|traffic)", 3),
    (A.FCW, r"(queue|traffic jam|congestion|stopped traffic) ahead|tail of (a |the )?(jam|queue)|end of (a |the )?queue"
            r"|catch\w* up (with|to)|gap (to the \w+( vehicle)? )?(shrink|clos|narrow)\w*", 3),
    (A.FCW, r"(car|vehicle|truck) (ahead|in front) (slows|decelerates|brakes)", 1),
    # "Our lead vehicle brakes", "the lead's messages show up late"
    (A.FCW, r"\blead(er)?( car| vehicle| truck| van)? (brakes|slows|decelerates)\b|\bthe lead(er)?'s (messages?|msgs?"
            r"|broadcasts?|packets?)\b", 2),
    # the ego following its lead and that lead's own BSMs ("18 m behind the lead", "the lead car's BSMs")
    (A.FCW, r"\bbehind (the |a |its |our )?lead(er)?\b|\blead(er)?( car| vehicle| truck| van)?('s|s')? (bsms?|basic "
            r"safety messages?)\b|\bbsms? (of|from) the lead\b", 2),
    (A.FCW, r"\bahead\b|in front", 1),
    # EEBL descriptions
    (A.EEBL, r"emergency[- ]brak\w*|hard[- ]brak\w*|brak\w* (hard|sharply|heavily|abruptly)|brake[- ]lights?", 3),
    (A.EEBL, r"(sudden|hard|emergency)[- ]brak\w* (alert|warning|notice)|brak\w* (alert|notice)", 3),
    (A.EEBL, r"(several|multiple|two|three|few|\d) (cars|vehicles) ahead|brak\w*[- ]events?", 3),
    (A.EEBL, r"hidden|obscured|out of sight|line of sight|can(no|')t see|not visible|invisible", 3),
    (A.EEBL, r"rebroadcast\w*|relay (vehicle|car)|\brelay\b(?! spat)|platoon", 3),
    # IMA descriptions
    (A.IMA, r"cross(ing)?[- ]traffic|(crossing|cross) (vehicle|car|truck)|perpendicular", 3),
    (A.IMA, r"\b(junction |intersection )?crossing[- ](assist|path|conflict|collision|warning|alert)|cross[- ]path"
            r"|side[- ](traffic|car|vehicle)s?\b", 4),
    (A.IMA, r"\b(crossing|cross[- ]path|cross[- ]traffic|junction) collision (warning|alert)", 10),
    (A.IMA, r"from the (left|right|side)( street| road)?|from (its|the ego's|our) (left|right)|side[- ](street|road)", 3),
    (A.IMA, r"\b(cutting |cuts |cut )?across (our|the ego'?s?|my) path", 4),
    (A.IMA, r"(?<!and )at (nearly |about |roughly |almost )?the same time(?! we\b)", 3),
    (A.IMA, r"blind (intersection|junction|corner)|t-bone|broadside|side[- ]impact|angle collision", 3),
    (A.IMA, r"stop[- ]sign|(stop|yield|priority)[- ]controlled|unsignali[sz]ed|unsignall?ed|uncontrolled|all-way stop|two-way stop|red[- ]light runners?\b",
     3),
    # LTA descriptions
    (A.LTA, r"left[- ]turn\w*" + _HARDWARE + r"|turn\w* left|unprotected left|makes? a left|oncoming"
            r"|opposing (traffic|vehicle|car|lane)"
            r"|opposite direction|(coming|from) the other way", 3),
    (A.LTA, r"gap acceptance|accept\w* a gap|across (the )?(oncoming |opposing )?traffic", 3),
    # stream hints
    (A.RLVW, r"\bspat\b|traffic (light|signal)|signali[sz]ed", 1),
    (A.GLOSA, r"\bspat\b|traffic (light|signal)|signali[sz]ed|\bgreen\b", 1),
)


def _synonym_cues() -> tuple[tuple[Application, str, int], ...]:
    """Every catalogue synonym is a cue of weight 4 (between a description and a name); a turn named as signal
    hardware ("the left-turn arrow's group") names no application."""
    out = []
    for app in APPLICATIONS.values():
        for syn in app.synonyms:
            body = r"[- ]".join(re.escape(w) for w in re.split(r"[- ]", syn))
            out.append((app.name, rf"\b{body}\b(?![- ]runners?\b)" + (_HARDWARE if "turn" in syn else ""), 4))
    return tuple(out)


# the application said to be this run's, over another one named for comparison ("Like the GLOSA corridor run from
# Tuesday, but this one is for RLVW")
_DESCRIBED_APP_CUES = APP_CUES + tuple(
    (app, rf"\b(this (?:one|1)|this run|this test|this time|this case|today) (is |it'?s )?(for|about|with|on) (the )?"
          rf"{app.value.lower()}\b|\bbut for (the )?{app.value.lower()}\b", 25) for app in A)
APP_CUES = _DESCRIBED_APP_CUES + _synonym_cues()


def app_cue_table() -> tuple[tuple[Application, str, int], ...]:
    """The application cues, read when asked: the descriptions above, then every registered application's
    catalogue synonyms (an application added to the catalogue is named by its own entry)."""
    return _DESCRIBED_APP_CUES + _synonym_cues()

# ── streams ────────────────────────────────────────────────────────────────
STREAM_CUES: tuple[tuple[Stream, str], ...] = (
    # ETSI names are synonyms of the streams: SPATEM = SPaT, MAPEM = MAP, CAM = BSM, DENM = the EEBL event
    (Stream.SPAT, r"\bspats?\b|\bspatems?\b|signal phase and timing|phase[- ]and[- ]timing|signal[- ]timing|\bcountdown\b"
                  r"|(signal|traffic[- ]light|(?<!brake )(?<!brake-)light's|(?<!brake )(?<!brake-)light|signal's|phase) (feed|broadcasts?|messages?|data|updates?"
                  r"|information|info|packets?|frames?|timing)|timing (information|info|messages?|data|feed)"
                  r"|(knowledge|information|info|data) (of|about) the (traffic )?(light|signal)"
                  r"|(signal|light|lamp|traffic[- ]light)[- ](status|state)|light[- ]timing|timing (packets?|updates?"
                  r"|broadcasts?)"),
    (Stream.MAP, r"\bmapmsg\b|\bmapems?\b|\bmap ?data\b|\bmap (messages?|feed|broadcasts?|updates?)\b|lane (topology|map)"
                 r"|intersection (geometry|topology) (messages?|data)"),
    # a stream named right before a field ("the EEBL position", "the DENM speed") names the fault's stream
    (Stream.EEBL, r"\beebl (messages?|events?|warnings?|broadcasts?|notifications?|alerts?|flags?|payloads?"
                  r"|positions?|locations?|coordinates|speeds?|headings?|timestamps?|time ?stamps?)\b"
                  # "goes completely quiet on EEBL", "EEBL from V1" (the application's name alone is no stream)
                  r"|\b(on|over|via) (the )?eebl\b(?! (test|run|scenario|case|app))|\beebl (from|of|by|sent)\b"
                  r"|(brake|braking) (warning|event|alert)s?|hard[- ]braking (events?|messages?|warnings?|alerts?)"
                  r"|emergency[- ]brak\w* (messages?|warnings?|events?|alerts?)|\bdenms?\b|event flags?"
                  r"|(brake|braking) (notifications?|messages?|position|location)|event messages?"
                  r"|(hazard|hard[- ]stop|danger) (alerts?|warnings?|messages?|notices?|notifications?)"
                  r"|braking (car|vehicle)'s (alerts?|warnings?)"
                  # the application's own name: "(emergency) (electronic) brake light messages"
                  r"|brake[- ]lights? (messages?|warnings?|events?|alerts?|broadcasts?|notifications?|packets?)"),
    (Stream.BSM, r"\bbsms?\b|basic safety messages?|(position|status|safety|position[- ]and[- ]speed|speed[- ]and[- ]position"
                 r"|kinematic) (broadcasts?|beacons?|messages?)"
                 r"|heartbeats?|\bcams?\b|cooperative awareness( messages?| traffic| data| broadcasts?)?|v2v (messages?|broadcasts?)"
                 r"|\bbeacons?\b"),
)

COMM_CONTEXT = (r"\b(spats?|spatems?|bsms?|cams?|cooperative awareness|mapmsg|mapems?|map ?data|eebl|denms?|messages?|packets?|feeds?|broadcasts?|data|updates?"
                r"|sends?|notices?|snapshots?"
                r"|v2x|information|transmissions?|beacons?|heartbeats?|timestamps?|countdown|warnings?|alerts?"
                r"|signal phase|phase and timing|reception|radio|learns?|knows?|knowledge|hears?|told|sees?|thinks?"
                r"|believes?|claims?|reports?|reported|notifications?|timing|frames?|info|stamped|tells?|says"
                r"|(digital|lane) map|map of the (junction|intersection))\b")

# ── fault operators ────────────────────────────────────────────────────────
# "the crossing car arriving 1 s after the ego": an arrival compared with a vehicle is the scene's timing
_NOT_AFTER_VEHICLE = (r"(?! (after|before|behind|ahead of|earlier than|later than) (the |our |its |their )?(ego|us|we"
                      r"|car|vehicle|lead|other|truck|van|bus|first|second)\b)")
# (operator, pattern, needs communication context in the sentence, priority)
# Priority resolves several cues for one fault ("frozen, stale SPaT" is one freeze).
SEMANTIC = "semantic"  # generic corruption; refined by field words and stream
# a forged vehicle (ghost_sender), also read by the scene parser: a distance that places it is not a lead gap

GHOST_VEHICLE = (r"\bphantom (vehicles?|cars?|trucks?|senders?|obstacles?|leads?)\b|\bphantom\b"
                 r"|\bghost[- ]((crossing|cross|oncoming|opposing|lead|leading|braking|stopped) )?((eebl|bsm|v2x|cam|denm) )?"
                 r"(vehicles?|cars?|trucks?"
                 r"|senders?|bsms?|leads?|obstacles?|rvs?|remote vehicles?)\b|\bsybil\b"
                 r"|\b(non-?existent|fake|forged|fictitious|imaginary|invented|made-up|make-believe|pretend|spoofed|bogus|fabricated"
                 r"|falsified|counterfeit|phony|phoney|sham)"
                 r" (\w+ ){0,1}(vehicles?|cars?|trucks?|senders?|obstacles?)\b"
                 r"|\b(vehicles?|cars?|trucks?|senders?) (that|which) (is|are|was|were) ?n[o']?t (really )?"
                 r"(there|real)\b|\b(vehicles?|cars?|trucks?|senders?) (that|which) (does|do) ?n[o']?t "
                 r"(really )?exist\b|\b(vehicles?|cars?|trucks?) (that )?(isn'?t|aren'?t|is not|are not) "
                 r"(really )?(there|real)\b"
                 # "somebody pretends to be a car up ahead", "there's no actual car there"
                 r"|\b(pretend\w*|pos(es|ing|ed)) (to be |as )(a |an )?(\w+ ){0,1}(vehicles?|cars?|trucks?)\b"
                 r"|\bno (actual|real) (vehicles?|cars?|trucks?) (is )?there\b")
# where a phantom (ghost_sender) drives for IMA / LTA: on the crossing route ("a fake car on the cross street",
# "approaching the junction from the left", "a phantom oncoming car", "across our path") or on ours ("ahead of us",
# "in front of the ego", "in our lane", "behind us")
GHOST_CROSS_ROUTE = (r"\b(?:cross(?:ing)?[- ]?(?:street|road|traffic|lane|direction)|side (?:street|road)|from the "
                     r"(?:left|right|side)|intersecting (?:street|road)|perpendicular|oncoming|opposing|across "
                     r"(?:our|the ego'?s?|my) path|(?:towards?|approaching|entering|heading (?:for|to|into)) the "
                     r"(?:intersection|junction|crossing|conflict point)|before the (?:intersection|junction|conflict "
                     r"point)|from the (?:intersection|junction|conflict point))\b")
GHOST_OWN_ROUTE = (r"\b(?:ahead of|in front of|behind) (?:us|me|the ego|ego|our (?:car|vehicle))\b|\b(?:in|on) (?:our|the "
                   r"ego'?s?|my|the same) (?:lane|route|path|road)\b")
# a forged roadside unit (spoofed_rsu): SPaT from a transmitter that is not the junction's RSU
_RSU_NOUN = r"(rsus?|roadside units?|road-side units?|traffic (light|signal) (transmitters?|beacons?)|signal beacons?)"
SPOOFED_RSU = (r"\b(fake|forged|spoofed|rogue|bogus|counterfeit|impostor|fraudulent|malicious|cloned) (\w+ ){0,1}"
               + _RSU_NOUN + r"\b|\b(impersonat\w*|pos(es|ing|ed) as|pretend\w* to be|masquerad\w* as) (the |a |an )?"
               r"([\w']+ ){0,2}?" + _RSU_NOUN + r"\b|\b" + _RSU_NOUN + r" (that|which) (is|are) ?n[o']?t (the |a )?"
               r"(real|genuine|junction's|intersection's)\b|\bnot the (real|genuine|junction's|intersection's) "
               + _RSU_NOUN + r"\b|\bspoof(s|ed|ing)? (the )?([\w']+ ){0,1}?" + _RSU_NOUN + r"\b"
               # "a rogue transmitter near the stop line sends its own SPaT pretending to be the junction": a forged
               # sender of signal data, named by what it sends or whom it pretends to be
               r"|\b(fake|forged|spoofed|rogue|bogus|counterfeit|impostor|fraudulent|malicious|cloned) (\w+ ){0,1}"
               r"(transmitters?|radios?|devices?|stations?|senders?|emitters?)\b(?=[^.;]{0,60}?\b(spats?|spatems?|signal "
               r"(phase|timing)|phase and timing|(pretend\w* to be|impersonat\w*|pos(es|ing) as) (the |a |an )?"
               r"(junction|intersection|signal|traffic light)))")
# the verbs that tie a lane to a signal group (map_misassociation's cues)
_TIES = (r"(binds?|bound|binding|ties?|tied|tying|links?|linked|linking|maps?|mapped|mapping|assigns?|assigned|assigning"
         r"|associates?|associating)")
FAULT_CUES: tuple[tuple[FaultOperator | str, str, bool, int], ...] = (
    # a forged roadside unit (spoofed_rsu): first, so that "a fake RSU broadcasting green while it is red" is not
    # read as a phase corruption of the real RSU's SPaT
    (FaultOperator.SPOOFED_RSU, SPOOFED_RSU, False, 10),
    # a forged vehicle (ghost_sender): BSMs from a sender that does not exist; first, so that "spoofed" or "fake"
    # next to a vehicle is not read as a content error of a real one ("fake braking alerts" names no vehicle: it
    # stays unsupported)
    (FaultOperator.GHOST_SENDER, GHOST_VEHICLE, False, 9),
    # a captured message played back later with its own (old) timestamps; first, so that "replays an old SPaT",
    # "re-sent 2 s later" are not read as a freeze ("keeps re-sending the same ..." / "replays the same ...": the one
    # message held, which stays freeze)
    (FaultOperator.REPLAY, r"\breplay(s|ed|ing)?\b(?! (the )?(same|last|identical)\b)|\breplay[- ]attacks?\b"
                           r"|\bplay(s|ed|ing)? (\w+ ){0,3}?back\b(?! (up|down|off)\b)"
                           r"|\bre-?(sen(d|ds|t|ding)|broadcast(s|ed|ing)?|transmit(s|ted|ting)?|emit(s|ted|ting)?)\b"
                           r"[^.;]{0,50}?<q\d+:time> (later|afterwards|after (it was|they were|being) (sent|captured"
                           r"|recorded|received))\b", False, 7),
    (FaultOperator.REPLAY, r"\bre-?(sen(d|ds|t|ding)|broadcast(s|ed|ing)?|transmit(s|ted|ting)?) (an? |some |the )?(old|older"
                           r"|earlier|previous|outdated)\b|\b(captured|recorded|intercepted|sniffed|eavesdropped|old"
                           r"|earlier)\b[^.;]{0,40}?\b(re-?sen(d|ds|t|ding)|re-?broadcast\w*|re-?transmit\w*|played back"
                           r"|sent again|broadcast again|transmitted again)\b|\bre-?sen(d|ds|t|ding)\b[^.;]{0,50}?\b(captured"
                           r"|recorded|intercepted) <q\d+:time> (earlier|before|ago)\b"
                           # "someone recording the crossing car's BSMs and rebroadcasting them 2 seconds stale"
                           r"|\b(?:record\w*|captur\w*|sniff\w*)\b[^.;]{0,60}?\band (?:then )?(?:re-?broadcast\w*|re-?send\w*"
                           r"|re-?transmit\w*|play\w* (?:them|it) back)\b"
                           # "the van's live BSMs are replaced by its own broadcasts from 2 seconds earlier"
                           r"|\b(?:replaced|substituted|swapped) (?:by|with|for) (?:its|their|the) (?:own )?(?:\w+ )?"
                           r"(?:broadcasts?|messages?|msgs?|bsms?|spats?|packets?) from <q\d+:time> (?:earlier|before|ago)\b"
                           # "cross car BSMs replaced by 3-second-old recordings"
                           r"|\b(?:replaced|substituted|swapped) (?:by|with|for) <q\d+:time>[- ]old (?:recordings?|recorded "
                           r"(?:copies|messages?|bsms?|spats?)|copies|captures?)\b"
                           # "re-broadcasts that bus's EEBL messages from 3 s ago"
                           r"|\bre-?(sen(d|ds|t|ding)|broadcast(s|ed|ing)?|transmit(s|ted|ting)?) (\S+ ){0,4}?(messages?|msgs?"
                           r"|bsms?|spats?|broadcasts?|packets?) from <q\d+:time> (earlier|before|ago)\b"
                           # "re-broadcast what the RSU said 10 s ago"
                           r"|\bre-?(sen(d|ds|t|ding)|broadcast(s|ed|ing)?|transmit(s|ted|ting)?) what (the |its |their )?(\w+ )"
                           r"{0,2}?(said|sent|broadcast|transmitted|reported|showed) <q\d+:time> (earlier|before|ago)\b"
                           r"|\bwith (its|their|the) (original|old|own"
                           r"|earlier) (time ?stamps?|generation times?)\b", False, 7),
    (FaultOperator.MAP_MISASSOCIATION, r"\b" + _TIES + r"\b (our|the "
                                       r"ego'?s?|the|its) lane\b[^.;]{0,40}?\bto the (\S+ ){0,3}?(signal group|group|arrow"
                                       r"|signal|light)s?\b[^.;]{0,30}?\binstead of\b", False, 9),
    # "MAP binds ego lane to the left-turn signal group": a named group the ego lane does not belong to (a table
    # cell says no "instead of")
    (FaultOperator.MAP_MISASSOCIATION, r"\b" + _TIES + r"\b (our "
                                       r"|the |its )?(ego'?s? )?lane\b[^.;|]{0,20}?\bto the (left[- ]turn|right[- ]turn"
                                       r"|turn|pedestrian|cross(ing)?|through|wrong|other|opposing) (\S+ ){0,2}?(signal "
                                       r"group|group|arrow|signal|phase)s?\b", False, 9),
    # a request said as a prohibition: "don't let the MAP tie our lane to its proper signal group"
    (FaultOperator.MAP_MISASSOCIATION, r"\b(don'?t|do not|never) let (the )?(map|mapmsg) (tie|link|bind|associate|map)s? (our|the "
                                       r"ego'?s?|the|its) lane\b[^.;]{0,20}?\bto (its|the) (proper|own|correct|right|real|true)"
                                       r" (signal )?group\b", False, 10),
    # "MAP ties ego lane to signal group 4 (true group is 2)": a numbered group said against the true one
    (FaultOperator.MAP_MISASSOCIATION, r"\b" + _TIES + r"\b (our |the |its )?(ego'?s? )?lane\b"
                                       r"[^.;|]{0,20}?\bto (the )?(signal )?group \w{1,4}\b(?=[^.;]{0,12}\b(true|correct|real"
                                       r"|actual|right|its own)\b)", False, 9),
    (FaultOperator.MAP_MISASSOCIATION, r"mis-?associat\w*|wrong (signal )?group|wrong (lane|signal)[- ]association"
                                       r"|associat\w* (the |its |our |my )?(ego('s)? )?lane\b[^.;]{0,30}?\bwith|mapped to the wrong"
                                       r"|wrong (lane )?mapping|\blane[ _-]?(mismatch|misassignment|swap)\b", False, 9),
    (FaultOperator.SUPPRESS_SENDER, r"suppress\w*|stop(s|ped)? (transmitting|broadcasting|sending)|go(es)? silent"
                                    r"|\bsends? no (\w+ ){0,2}?(eebl|bsms?|spats?|messages?|msgs?|broadcasts?)\b"
                                    r"|falls? silent|\bsilenced?\b|never (transmits|broadcasts|sends)"
                                    r"|does ?n[o']t (transmit|broadcast|send)|\bmute[sd]?\b"
                                    # a terse line: "relay R1 completely silent on EEBL for the whole run"
                                    r"|\bsilent (on|over) (the )?(eebl|bsms?|spats?|mapmsg|v2x|radio|dsrc|c-v2x)\b", False, 8),
    (FaultOperator.FREEZE, r"\bfr(ee|o)z\w*|\bstuck\b|stop(s|ped)? (to )?(updating|update)\b|\bhangs?\b"
                           r"|\b(send\w*|repeat\w*|broadcast\w*|transmit\w*) (the )?same (content|contents|payload|data"
                           r"|values?|message|state)( again)? (again and again|over and over|repeatedly|each time|every time)"
                           r"|keeps? (repeating|re-?sending|broadcasting|sending|transmitting|tx'?ing) (the|its|their) (very )?(same"
                           r"|last|old)"
                           r"|repeat\w* the (same|last|old)|replay\w* (the )?(same|old|last)"
                           # "same phase, same countdown, served again and again ... with only the timestamps fresh"
                           r"|\bsame (phase|payload|content|countdown|position|speed|values?|data), same\b"
                           r"|\b(only|just) the timestamps? (fresh|new|updated|changing|moving)\b", False, 8),
    (FaultOperator.FREEZE, r"(messages?|broadcasts?|data|feeds?|updates?|info\w*|spats?|bsms?) (\w+ )?stall\w*"
                           r"|stops? (to )?(changing|change)\b|(never|no longer) changes\b|\bunchanged\b|keeps? (its|their|the) "
                           r"(first|initial|old|last|same|previous) (content|contents|payload|values?|state|data)"
                           r"|repeat\w* (\w+ ){0,2}?(stale|old|same|last|previous|identical)\b", True, 7),
    # "SPaT time-to-change reads 2 s short", "the countdown reads 3 s long"
    (FaultOperator.SPAT_COUNTDOWN_OFFSET, r"(countdowns?|time[- ]to[- ]change|remaining time)\b[^.;|]{0,15}?\b(reads?|shows?"
                                          r"|is|runs?) <q\d+:time> (too )?(short|long|early|late)\b"
                                          # "make the SPaT countdown read way too long" (no amount: the default)
                                          r"|(countdowns?|time[- ]to[- ]change|remaining time)\b[^.;|]{0,15}?\b(reads?|shows?|is)"
                                          r" (way |much |far |a lot )?too (short|long)\b"
                                          # "the countdown reads longer, +5 s"
                                          r"|(countdowns?|time[- ]to[- ]change|remaining time)\b[^.;|]{0,15}?\b(reads?|shows?"
                                          r"|is|runs?) (longer|shorter|later|earlier),? (by )?<q\d+:time>", False, 6),
    (FaultOperator.SPAT_COUNTDOWN_OFFSET, r"(countdowns?|time[- ]to[- ]change)\b[^.;]{0,20}?\b(over|under)-?(report|stat|estimat)\w*"
                                          r"|(over|under)-?(report|stat|estimat)\w* (the )?(remaining|countdown)\b", False, 6),
    (FaultOperator.SPAT_COUNTDOWN_OFFSET, r"countdowns? (is |are |runs? )?(<q\d+:time> )?(off|wrong|early|late|shifted|offset|skewed"
                                          r"|ahead|behind|in error)|(shift|offset|skew)\w* (the )?(spat )?countdown"
                                          r"|countdown (offset|error|shift|skew)|end[- ]times? (is |are )?(shifted|off|wrong)"
                                          r"|(shift|offset)\w* (the )?(min |max )?end[- ]times?", False, 6),
    # a J2735 SPaT time field shifted by a signed amount ("spat.min_end_time +4s", "minEndTime -2 s")
    (FaultOperator.SPAT_COUNTDOWN_OFFSET, r"\b(min[ _]?end[ _]?times?|max[ _]?end[ _]?times?|likely[ _]?times?)\W{0,3}<q\d+:time>",
     False, 6),
    (FaultOperator.BSM_POSITION_OFFSET, r"(positions?|locations?|gps|coordinates)( fix)? (is |are )?(<q\d+:dist> )?(off|wrong|offset"
                                        r"|shifted|displaced|jumps?|spoofed|in error)|(offset|shift|displac|spoof)\w* "
                                        r"(the |its |their )?([\w-]+ ){0,2}?([\w-]+'s )?(reported |broadcast )?(positions?|locations?"
                                        r"|gps)"
                                        r"|position (offset|error|shift)|misreport\w* (its |the |their )?(position|location)",
     False, 6),
    # "Bump the oncoming pickup's reported speed up by 9 mph", "lower its broadcast speed by 2 m/s"
    (FaultOperator.BSM_SPEED_OFFSET, r"\b(bump\w*|rais\w*|increas\w*|boost\w*|lower\w*|reduc\w*|decreas\w*|cut\w*) (the )?(\S+ )"
                                     r"{0,3}?(reported|broadcast|claimed|advertised|transmitted) speed\b"
                                     # "add 3 m/s to its reported speed", "take 2 m/s off the broadcast speed"
                                     r"|\b(add\w*|subtract\w*|tak(e|es|ing)) <q\d+:speed> (to|from|off) (the |its |their )?(\S+ )"
                                     r"{0,3}?(reported|broadcast|claimed|advertised|transmitted) speed\b", False, 7),
    (FaultOperator.BSM_SPEED_OFFSET, r"(reported |broadcast )?speed (is |are )?(off|wrong|offset|biased|in error)"
                                     r"|report\w* (a |its |their )?speed (of )?(<q\d+:speed> )?(lower|higher|slower|faster)"
                                     r"|(under|over)-?report\w* (of )?(its |the |their )?([\w']+ ){0,3}?speed|(offset|bias)\w* (the |its )?"
                                     r"(reported )?speed|speed (offset|error|bias)|misreport\w* (its |the |their )?speed",
     False, 6),
    (FaultOperator.SPAT_PHASE_CORRUPT, r"(reports?|shows?|claims?|broadcasts?|says|advertises|displays|telling|tells|swears?"
                                       r"|swore) (a |an )?"
                                       r"(false |wrong |fake )?(green|red|amber|yellow)(?! (will|would|is going to) "
                                       r"|('s|s)? (lasts?|ends?|remains?|time|countdown)\b)|(false|fake|spoofed) (green|red|amber"
                                       r"|yellow)|(phases?|spat)\w* (is |are )?(corrupt\w*|falsif\w*|flipped|spoofed|wrong"
                                       r"|inverted)|corrupt\w* (the )?(spat )?phase|wrong phase|\bphase[ _-]?(flip|swap|lie)s?\b",
     False, 6),
    (FaultOperator.TIMESTAMP_OFFSET, r"\bclocks?\b[^.;]{0,25}?<q\d+:time> (slow|behind)\b|<q\d+:time> slow\b"
                                     r"|\bclocks?\b[^.;]{0,15}?\b(lags?|lagging|runs? (slow|behind)|is behind|drifts?"
                                     r"|drifting)\b", False, 5),
    (FaultOperator.TIMESTAMP_OFFSET, r"\bstale\b|backdat\w*|outdated|timestamps?\b[^.;]{0,30}?\b(in the past|old|behind"
                                     r"|lag\w*|offset|shifted|wrong|early)\b|(offset|shift)\w* (the )?timestamps?", False, 5),
    (FaultOperator.DROP, r"\bdrop\w*|\blos(e|es|ing|t)\b|\bloosing\b|\bloss\b|discard\w*|go(es)? missing|\bmissing\b"
                         r"|never arriv\w*|fail\w* to arriv\w*|erased|\berasures?\b"
                         # "the hard-braking event messages ... are withheld, i.e. not delivered" (not "advice must be
                         # withheld": the application's own output)
                         r"|\b(messages?|msgs?|packets?|frames?|bsms?|spats?|broadcasts?)\b[^.;]{0,60}?\b(are|is|get|gets|being)"
                         r" (withheld|not delivered)\b|\bwithhold\w* (the |its |their )?(messages?|msgs?|packets?|bsms?|spats?"
                         r"|broadcasts?)\b"
                         # a delivery ratio below 100 % ("packet delivery ratio 80 % on EEBL"): the rest is lost
                         r"|\b(packet )?(delivery|reception) (ratio|rate)\b(?! (target|budget|requirement|kpi|limit|of at "
                         r"least|must|shall|should))|\bpdr\b(?! (target|kpi))"
                         # "we kill ten BSMs in a row from it"
                         r"|\bkill(s|ed|ing)? (\S+ ){0,2}?(bsms?|spats?|mapmsgs?|eebls?|messages?|msgs?|packets?)\b", True, 4),
    (FaultOperator.DROP, r"outage|blackout|jamm\w*|interference", False, 4),
    # "only nine out of ten SPaT messages get through": a drop said by what arrives (the probability is the rest)
    (FaultOperator.DROP, r"<q\d+:pct> of (the )?(\S+ ){0,2}?(messages?|msgs?|packets?|bsms?|spats?|mapmsgs?|broadcasts?"
                         r"|updates?|frames?) (only |still )?((get|gets|make it|makes it) through|(are|get|gets) delivered"
                         r"|arrive (intact|fine|normally|ok|as sent))\b", False, 6),
    # "don't let the next 30 SPaT messages through": a drop said as a prohibition
    (FaultOperator.DROP, r"\b(don'?t|do not|never) let (the )?(next |first )?(<q\d+:count> )?(\S+ ){0,2}?(messages?|msgs?|packets?"
                         r"|bsms?|spats?|mapmsgs?|broadcasts?|updates?|frames?)\b (\S+ ){0,2}?through\b", False, 6),
    # a request written as key = value ("app=EEBL; stream=EEBL; loss=30 %", "fault: delay; 0.6 s")
    (FaultOperator.DROP, r"\b(?:fault|op|operator)\s*[=:]\s*(?:drop|loss|packet[ _-]?loss)\b|\b(?:loss|drops?|pkt[ _-]?loss"
                         r"|packet[ _-]?loss)\s*[=:]\s*<q\d+:(?:pct|count)>", False, 5),
    # an age of information set on a stream ("set AoI 1.5 s on the EEBL stream"): that much delay
    (FaultOperator.DELAY, r"\b(set |an? )?aoi (of |at |to |= ?)?(?=<q\d+:time>)", False, 6),
    # the effect of a delay, said from the application ("the app sees the truck where it was two seconds ago")
    (FaultOperator.DELAY, r"\b(sees?|shows?|displays?|thinks?|believes?|puts?) (?:the \w+|it|them|him|her) where (it|they|he"
                          r"|she) (was|were) <q\d+:time> (ago|earlier|before)\b", False, 7),
    (FaultOperator.DELAY, r"\b(?:fault|op|operator)\s*[=:]\s*(?:delay|latency)\b|\b(?:delay|latency|lag)\s*[=:]\s*<q\d+:time>",
     False, 5),
    (FaultOperator.DELAY, r"\bdelay\w*|\bpostpone\w*|\blate\b|latency|\blag\w*|held back|\bhold(s|ing)? (every |all |the |its |their )?(\w+ ){0,2}?back\b|arriv\w* late|\bretard(ed)?\b",
     True, 4),
    # effects: what a receiver would see (issue 19); the quantity's kind and the comparative decide
    (FaultOperator.MAP_MISASSOCIATION, r"(ties|tied|links?|linked|puts?|assigns?|points?|pointing|associates?)\b"
                                       r"[^.;]{0,40}?\b(to|with|under|at) (the |a )?wrong (signal|group|phase|light"
                                       r"|head)|\bto the wrong signal\b|(lane[- ]to[- ](phase|signal)\w*|lane[- ]signal"
                                       r"[- ]group) (mapping|association|link)\w* (is |are )?(scrambl|wrong|swap|mix|"
                                       r"corrupt|broken)\w*|(mapping|association) (is |are )?(scrambl|swap|mix)\w*",
     False, 9),
    (FaultOperator.SUPPRESS_SENDER, r"\b(is|are|goes|go|gone|went|stays?|remains?|falls?|turns?) (completely |totally "
                                    r"|entirely |radio[- ])?(silent|quiet)\b|never (sends|transmits|broadcasts|transmitting"
                                    r"|sending|broadcasting)\b|no longer (sends|transmits|broadcasts)", False, 8),
    # "SPaT should wrongly say amber", "the RSU falsely reports red", "have the RSU report signal group 2 as green"
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\b(?:(?:wrongly|falsely|incorrectly|erroneously) (?:say|says|show|shows|report"
                                       r"|reports|broadcast|broadcasts|claim|claims|indicate|indicates|announce|announces)"
                                       r" (?:a |an )?|(?:report|reports|reporting|show|shows|showing|broadcast|broadcasts"
                                       r"|announce|announces) (?:the )?(?:signal group|group|sg|phase|light|signal) ?\w{0,3}"
                                       r" as )(?P<shown>green|red|amber|yellow)\b", False, 8),
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\b(?P<shown>green|red|amber|yellow)\b( light)?( in the (messages?|broadcasts?"
                                       r"|spat|data))?[^.;]{0,30}?\b(when|while|although|though|after|but|despite)\b "
                                       r"(it|the (traffic )?(lights?|lamp|signal( head)?|phase))('s| is| has| was)? ?(actually |really |still "
                                       r"|already |in fact )*((has )?(turned|changed|gone|switched)( to)? )?(green|red"
                                       r"|amber|yellow)\b|(sees?|shows?|showing|keeps? \w+ing|reporting|saying) (a |an )?"
                                       r"(?P<shown2>green|red|amber|yellow)( light| phase)? in the (messages?|broadcasts?"
                                       r"|spat|data)", False, 7),
    (FaultOperator.SPAT_COUNTDOWN_OFFSET, r"(countdown|time[- ]to[- ](change|red|green)|time[- ](left|remaining)|remaining"
                                          r"[- ]time|end[- ]times?|end[- ]of[- ](green|red|amber|yellow|phase)"
                                          r"|residual[- ](green[- ]|red[- ]|amber[- ])?time|(green|amber|red|yellow)('s)? (will )?(last|lasts|ends?"
                                          r"|starts?|begins?|end[- ]time))\b[^.;]{0,40}?(<q\d+:time> (more|less|longer"
                                          r"|shorter|short|long|early|earlier|later|too long|too short|too early|too late)\b|(short"
                                          r"|long|early|late|off) by <q\d+:time>)|<q\d+:time> (more|less|extra|fewer"
                                          r"|longer|shorter)\b[^.;]{0,12}?\b(green|amber|red|yellow)\b", False, 6),
    (FaultOperator.BSM_SPEED_OFFSET, r"<q\d+:speed> (too )?(higher|lower|faster|slower|more|less|high|low|above|below"
                                     r"|under|over)\b"
                                     # "a green wave at 60 km/h over 6 junctions": over a stretch of road, not a comparison
                                     r"(?! (the |a |an |all |every |several |<q\d+:\w+> |\d+ )?(junctions?|intersections?"
                                     r"|signals?|lights?|corridor|arterial|route|road|stretch|section|distance))"
                                     r"|<q\d+:speed> too (fast|slow)\b", False, 6),
    (FaultOperator.BSM_POSITION_OFFSET, r"<q\d+:dist> (off|wrong|out(?! (from|of|before))|in error|displaced|shifted)\b"
                                        r"|<q\d+:dist> (further"
                                        r"|farther|closer|nearer)\b[^.;]{0,20}?\bthan\b|<q\d+:dist> (behind|ahead of|in front of"
                                        r"|away from|from|short of|beyond|past) (the truth\b|reality\b|where (it|they) (is|are) "
                                        r"(really|actually|truly)\b|(its|their|the) (true|real|actual)"
                                        r"|where (it|they)|where (the|its|their) \w+ (really|actually|truly|in fact) (is|are|was"
                                        r"|were|stands?|sits?))\b", False, 6),
    (FaultOperator.TIMESTAMP_OFFSET, r"<q\d+:time> (old|older|stale|out of date|outdated|in the past|behind real[- ]?time)"
                                     r"\b|\bout of date\b|\bstale by\b|(look|appear|seem|are|is)\w* <q\d+:time> older"
                                     r"|stamped (<q\d+:time> )?in the past", False, 5),
    (FaultOperator.DROP, r"stop(s|ped)? (arriving|coming( in| through)?|reaching)|never (get|gets|got|come|comes) "
                         r"through|never reach\w*|(don'?t|do not|doesn'?t|does not|fails? to) (arrive|get through|reach)"
                         r"|\bout of (radio |communication |v2x )?range\b|los(e|es|t|ing) track of|no (signal |spat |map"
                         r" |v2x )?(information|messages|data|updates)( at all)?\b(?! (go|goes|are|get|gets|is|were|was)"
                         r" (missing|lost|dropped|delayed|late|corrupted))|\bdrop out\b", False, 4),
    (FaultOperator.DROP, r"vanish\w*|disappear\w*|\bblocked\b|never (make it|get) (to|through)", True, 4),
    (FaultOperator.DELAY, r"\blag\w*|show(s)? up|after (they|it) should|come in|arriv\w* <q\d+:time>" + _NOT_AFTER_VEHICLE,
     True, 4),
    # campaign wording (issue 31): paraphrases a test engineer writes without our vocabulary
    (FaultOperator.MAP_MISASSOCIATION, r"\b(links?|linked|linking|ties|tied|assigns?|assigned|puts?|associates?"
                                       r"|associated|points?|pointing|maps?|mapped)\b[^.;]{0,40}?\b(to|with|under|at) "
                                       r"(the |a )?(light|signal|signal head|head|group|signal group|phase)s? (of|for) "
                                       r"(the |a )?(cross|crossing|other|neighbou?r\w*|adjacent|side|opposing|wrong)\b"
                                       r"|\b(to|with|under|at) (the |a )?(cross[- ]street|cross[- ]road|side[- ]street"
                                       r"|neighbou?r\w*|adjacent|other|another) ?(lane|approach|street|road)?('s|s')? "
                                       r"(signal|light|head|group)", False, 9),
    (FaultOperator.MAP_MISASSOCIATION, r"\b(on|in|to|into|for|with) the wrong (lane|approach)\b", True, 9),
    (FaultOperator.MAP_MISASSOCIATION, r"\b(lane[- ]to[- ](phase|signal|group)[\w-]*|lane[- ]signal[- ]group|signal[- ]group)"
                                       r" (mapping|association|assignment|link)s?\b[^.;]{0,40}?\b(is |are )?(crossed"
                                       r"|cross-wired|swapped|mixed up|confused|reversed|scrambled|wrong|broken)\b"
                                       r"|\b(our|the ego'?s?|ego) lane (inherits?|gets?|receives?|takes?|follows?|obeys?"
                                       r"|is given) (the |a )?(cross[- ]street|cross[- ]road|side[- ]street|side[- ]road"
                                       r"|other|opposing|neighbou?r\w*|adjacent|wrong)\w*('s|s')? (\w+ )?(lights?|signals?"
                                       r"|group|heads?|arrows?|phases?)\b", False, 9),
    (FaultOperator.SUPPRESS_SENDER, r"\bnone of\b[^.;]{0,60}?\b(reach\w*|arriv\w*|gets? through|makes? it|(is|are) "
                                    r"(received|heard))\b", False, 8),
    (FaultOperator.SUPPRESS_SENDER, r"\b(says|sends|transmits|broadcasts) nothing\b", False, 8),
    # "the braking vehicle transmits no hard-braking notification whatsoever"
    (FaultOperator.SUPPRESS_SENDER, r"\b(transmits?|sends?|broadcasts?|emits?) no ([\w-]+ ){0,3}?(notifications?|messages?"
                                    r"|alerts?|warnings?|bsms?|spats?|data|events?|broadcasts?|notices?|denms?)\b", False, 8),
    # "its brake alert is never transmitted", "the beacons never get sent"
    (FaultOperator.SUPPRESS_SENDER, r"\b(is|are|gets?|get) never (transmitted|sent|broadcast)\b|\bnever (gets?|get) "
                                    r"(transmitted|sent|broadcast)\b", False, 8),
    (FaultOperator.SUPPRESS_SENDER, r"\b(switched|turned|powered|shut) (off|down)\b|\b(go|goes|gone|went|going) "
                                    r"(dark|offline)\b", True, 8),
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\b(reported|shown|given|broadcast|sent|displayed|announced|told) as (a |an )?"
                                       r"(green|red|amber|yellow)\b", True, 7),
    (FaultOperator.SPAT_COUNTDOWN_OFFSET, r"(countdown|time[- ]to[- ](change|red|green)|remaining[- ]time|time[- ](left"
                                          r"|remaining|until|till|to)[- ]\w+|how long (green|amber|red|yellow) (remains"
                                          r"|lasts|is left|will last))\b[^.;]{0,50}?\b(inflated|overstated|understated"
                                          r"|exaggerated|cut short|shortened|lengthened|padded|deflated|overestimated"
                                          r"|underestimated|too long|too short|cut|reduced|trimmed|lowered|decreased"
                                          r"|raised|increased|extended) by <q\d+:time>", False, 6),
    # "the residual time carried in the SPaT understates the true time remaining by 2.5 s"
    (FaultOperator.SPAT_COUNTDOWN_OFFSET, r"\b(countdown|residual[- ]((green|red|amber|yellow)[- ])?time|remaining[- ]time"
                                          r"|time[- ](left|remaining)|time[- ]to[- ](change|red|green)|end[- ]times?)\b"
                                          r"[^.;]{0,60}?\b(inflat|overstat|understat|exaggerat|overestimat|underestimat"
                                          r"|deflat)\w*\b[^.;]{0,40}?\bby <q\d+:time>", False, 6),
    # "a position 12 meters more back than the real one"; "lower of 3 m/s than the real one", "15 km/h too small"
    (FaultOperator.BSM_POSITION_OFFSET, r"<q\d+:dist> (more|further|farther) (back|behind|forward|ahead)\b[^.;]{0,20}?\bthan\b"
                                        r"|\b(further|farther|closer|nearer|more back|more forward) (of|by) <q\d+:dist>"
                                        r"[^.;]{0,20}?\bthan\b", False, 6),
    (FaultOperator.BSM_SPEED_OFFSET, r"<q\d+:speed> (too )?(small|big|large|great)\b|\b(higher|lower|faster|slower|greater"
                                     r"|smaller|bigger|less|more) (of|by) <q\d+:speed>[^.;]{0,20}?\bthan\b", False, 6),
    (FaultOperator.BSM_POSITION_OFFSET, r"\b(positions?|locations?|(?<!can )(?<!could )(?<!to )spot|place)\b"
                                        r"[^.;]{0,25}?<q\d+:dist> (back|behind"
                                        r"|ahead|further|farther|closer|nearer|off|away|forward|short|out)\b", False, 6),
    (FaultOperator.BSM_SPEED_OFFSET, r"\b(under|over)-?(stat|estimat)\w* (its |the |their )?(own )?speed"
                                     r"|\bspeeds?\b[^.;]{0,25}?\b(is |are )?(over|under)-?(stat|estimat|report)\w*"
                                     r"|\bspeeds?\b[^.;]{0,25}?\b(is |are )?(inflated|exaggerated|deflated)\b", False, 6),
    (FaultOperator.DROP, r"stop(s|ped)? getting (through|in)\b|(don'?t|do not|doesn'?t|does not|never|fails? to) "
                         r"makes? it\b|(messages?|broadcasts?|data|feeds?|updates?|info\w*|packets?|stream)('s)? "
                         r"stops?\b(?! (to )?(updating|update|changing|change|sending|transmitting|broadcasting))", False, 4),
    (FaultOperator.DELAY, r"\bheld up\b|\bhold-?ups?\b|\bholds? up\b", True, 4),
    (FaultOperator.DELAY, r"\btakes? <q\d+:time> to (reach|arrive|get|come)|<q\d+:time> after (it|they) (was|were|is"
                          r"|are|has been|have been) (sent|transmitted|broadcast)", False, 4),
    # more user wording (issue 31, the fresh campaign sets)
    (FaultOperator.DROP, r"\binterrupt\w*|\bthrown away\b|\bthrow\w* away\b|\b(go(es|ing)?|went|gone) astray\b"
                         r"|\bastray\b", True, 4),
    (FaultOperator.DELAY, r"<q\d+:time> behind (schedule|reality|real[- ]?time|time)\b", False, 4),
    # "every BSM needs 300 ms longer to arrive"
    (FaultOperator.DELAY, r"\b(needs?|takes?|requires?) <q\d+:time> (longer|more|extra) to (arriv\w*|reach\w*|get|come"
                          r"|be delivered)\b|<q\d+:time> longer to (arriv\w*|reach\w*|get (there|through|in)|come in)\b",
     False, 4),
    # messages that "reach the car 400 ms behind", "come to us 0.8 s too late": the messages' own arrival, late by
    # a time (not a driver who "brakes 1 s too late": the subject is a message and the verb an arrival)
    (FaultOperator.DELAY, r"\b(messages?|msgs?|packets?|broadcasts?|updates?|frames?|beacons?|spats?|bsms?|data|feeds?"
                          r"|info\w*|notices?|notifications?|denms?)\b[^.;]{0,40}?\b(arriv\w*|reach\w*|com(e|es|ing)"
                          r"|gets?|getting|show(s|ing)? up|turns? up|lands?|landing|delivered|received)\b[^.;]{0,25}?"
                          r"<q\d+:time> (too late|late|later|behind|delayed)\b", False, 4),
    (FaultOperator.DELAY, r"\bbehind schedule\b", True, 4),
    # "the SPaT content stays blocked on the same values", "stuck at its old values"
    (FaultOperator.FREEZE, r"\b(blocked|stuck|locked|pinned|held|frozen) (on|at) (the |its |their )?(same|old|last|previous"
                           r"|initial|first|identical)\b", False, 7),
    (FaultOperator.FREEZE, r"\b(go(es)? on|keeps?|continues?|carry|carries) (repeating|re-?sending|broadcasting|sending)"
                           r" (the |their |its )?(old |stale |same |previous |earlier )?(content|contents|payload|data"
                           r"|values?|state|snapshot)\b", True, 7),
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\b(broadcasts?|broadcasting|sends?|sending|shows?|showing|reports?|reporting"
                                       r"|signals?|says|claims?) (a |an )?(green|red|amber|yellow)\b[^.;]{0,10}?\b(when|while"
                                       r"|although|though) (it'?s|it is|the light is|the signal is|the phase is) (actually "
                                       r"|really |in fact |truly )?(green|red|amber|yellow)\b", True, 7),
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\b(claims?|claiming|says|saying|tells?|telling|insists?|insisting|announc\w*"
                                       r"|swore|swears?|swearing|reports?|reporting|indicat\w*|signals?)\b( (the|our) (car|ego"
                                       r"|vehicle|driver|receiver)| everyone| everybody| us| drivers| (the )?(cars|vehicles))?"
                                       r" (that )?['\"]?(it'?s|it is|the light is|the signal is|the phase is) (still |now |already )?"
                                       r"(green|red|amber|yellow)\b", True, 7),
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\b(showing|reporting|claiming|broadcasting|displaying|advertising"
                                       r"|indicating|sending) (a |an )?(false |wrong |fake )?(green|red|amber|yellow)\b"
                                       r"(?! (light|lights)[- ]violation)", True, 7),
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\bannounc\w* (a |an )?(false |wrong |fake )?(green|red|amber|yellow)\b", False, 7),
    # "I want the dashboard to believe the light is green while the real signal is red"
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\b(believe|believes|think|thinks|see|sees)\b (that )?(the )?(light|signal|phase) is"
                                       r" (green|red|amber|yellow)\b(?=[^.;]{0,40}\b(while|when|whereas|but|although) (the )?"
                                       r"(real|actual|true) (light|signal|phase) is\b)", False, 7),
    # "the SPaT broadcast reports the phase as green"
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\b(reports?|reporting|shows?|showing|gives?|giving|broadcasts?|announc\w*|sends?"
                                       r"|marks?|marking|flags?|labels?|lists?|declares?|presents?) (the |its |our |a |an )?"
                                       r"(current )?(phase|state|signal|light|status|aspect|colou?r)( \w+)? as (a |an )?"
                                       r"(green|red|amber|yellow)\b", True, 7),
    # "the phase field in SPaT reads green", "the signal state is set to red"
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\b(phase|state|status|aspect)( field| value| byte| entry)?\b[^.;]{0,25}?\b(reads?"
                                       r"|reading|indicates?|indicating|is set to|set to) (a |an )?(false |wrong |fake )?"
                                       r"(green|red|amber|yellow)\b", True, 7),
    (FaultOperator.SPAT_COUNTDOWN_OFFSET, r"\b(remaining[- ](green|red|amber|yellow)[- ]time|(green|red|amber|yellow)"
                                          r"[- ]time (remaining|left))\b[^.;]{0,50}?\b(inflated|overstated|understated"
                                          r"|exaggerated|cut short|shortened|lengthened|padded|overestimated"
                                          r"|underestimated|too long|too short|off) by <q\d+:time>", False, 6),
    (FaultOperator.MAP_MISASSOCIATION, r"\b(lane[- ]to[- ](phase|signal)[\w-]*|lane[- ]signal[- ]group) (mapping"
                                       r"|association|link)\w*\b[^.;]{0,40}?\b(points?|pointing|goes|leads?|refers?)"
                                       r" (at|to) the (\w+[- ]){0,3}(arrow|group|signal|head|light)", False, 9),
    (FaultOperator.BSM_POSITION_OFFSET, r"\b(positions?|locations?)\b[^.;]{0,30}?\b(trails?|trailing|lags?|lagging"
                                        r"|leads?|leading)\b[^.;]{0,30}?\bby <q\d+:dist>"
                                        r"|\b(positions?|locations?|placed|shown|put|reported)\b[^.;]{0,40}?<q\d+:dist> "
                                        r"(back|behind|forward|ahead) (from|of) (where|its|their|the (true|real|actual))",
     False, 6),
    (FaultOperator.SUPPRESS_SENDER, r"\b(transmitters?|radios?|v2x units?|on-?board units?|obus?|rsus?|roadside units?)"
                                    r" (dies|died|dead|goes dead|cuts? out|quits?|fails?|failed|breaks? down)\b",
     False, 8),
    (FaultOperator.MAP_MISASSOCIATION, r"\b(lane map|lane table|intersection map|junction map|map data|map messages?"
                                       r"|mapdata|mapmsg)\b[^.;]{0,30}?\b(sends?|maps?|points?|routes?|assigns?|assigning"
                                       r"|ties|links?|gives?|giving|hands?|handing|allocates?|allocating|attaches?)\b"
                                       r"[^.;]{0,60}?\b(to|at) the (\w+[-' ]*){0,4}(arrow|group|signal|head|light)",
     False, 9),
    (SEMANTIC, r"corrupt\w*|falsif\w*|spoof\w*|tamper\w*|misreport\w*", False, 3),
    (SEMANTIC, r"\bwrong\b|incorrect\w*|\boff by\b|\berrors?\b|\boffset\b|\bshifted\b|\bbias\w*|\berroneous\b"
               r"|\bskew\w*|displac\w*", True, 3),
)

# Field words that refine a generic corruption cue.
FIELD_REFINEMENT: tuple[tuple[FaultOperator, str], ...] = (
    (FaultOperator.SPAT_COUNTDOWN_OFFSET, r"countdown|end[- ]times?|timer|time[- ]to[- ]change|remaining (green )?time"),
    (FaultOperator.TIMESTAMP_OFFSET, r"\btimestamps?\b|\bclocks?\b"),
    (FaultOperator.BSM_POSITION_OFFSET, r"positions?|locations?|gps|coordinates|\bplaced\b|\bplacement\b"),
    (FaultOperator.BSM_SPEED_OFFSET, r"\bspeeds?\b|velocity"),
    (FaultOperator.MAP_MISASSOCIATION, r"signal group|lane association"),
    (FaultOperator.SPAT_PHASE_CORRUPT, r"\bphases?\b|\bgreen\b|\bred\b|\bamber\b|\byellow\b"),
)



def operator_stream(op: FaultOperator | str, consumed: Iterable[Stream] = ()) -> Stream | None:
    """The stream an operator implies: the first of the streams the catalogue lets it target that the application
    consumes (``consumed``), else the first it may target, for operators that cannot act on every stream (the
    catalogue is the one home of operator facts); read when asked, so an operator registered later counts."""
    info = FAULT_OPERATORS[str(op)]
    if set(info.streams) == set(Stream):
        return None
    return next((s for s in info.streams if s in set(consumed)), info.streams[0])


def fault_cue_table() -> tuple[tuple[FaultOperator | str, str, bool, int], ...]:
    """``FAULT_CUES`` and, after them, the cues an operator's catalogue entry brings (priority 5, no
    communication context needed): an added operator is parsed from its entry alone."""
    extra = tuple((FaultOperator(o.name), pattern, False, 5) for o in FAULT_OPERATORS.values() for pattern in o.cues)
    return FAULT_CUES + extra if extra else FAULT_CUES

# The sign right after a magnitude wins over the sentence's words ("3 m/s lower", "4 s longer").
# (not across a comma: "under-reports its speed by 10 mph, plus 150 ms extra latency" says nothing of the speed's sign)
POSITIVE_SIGN = r"^[^\w,;]*(too )?(higher|faster|more|longer|later|above|over|high|plus|extra|big|large|great)\b"


PHASES = {"amber": "amber", "yellow": "amber", "red": "red", "green": "green"}
ONSET = {"amber": AnchorEvent.AMBER_ONSET, "red": AnchorEvent.RED_ONSET, "green": AnchorEvent.GREEN_ONSET}

# ── vehicle roles ──────────────────────────────────────────────────────────
_VEH = (r"(vehicle|car|truck|bus|van|driver|motorist|motorbike|motorcycle|motor ?bike|bike|scooter|hatchback|sedan|suv"
        r"|pickup|lorry|coach|taxi|minivan|coupe|convertible|wagon|estate|jeep|cab|tram|tractor|moped|roadster)")
VEHICLE = _VEH  # a vehicle's noun, for the anchors that name one (intent_windows)
_BEHIND_EGO = r"(?:(?:the )?ego(?: vehicle| car)?|us|me|our (?:car|vehicle)|it)\b"
# a vehicle behind the ego (role follower); also what the reflector looks for before it adds one. Its nouns are wider
# than _VEH ("a sedan tailgates us", "a pickup follows us"); "behind" must not name what the ego itself follows
_TRAILING = r"(vehicle|car|truck|bus|van|driver|motorist|sedan|suv|pickup|lorry|motorcycle|motorbike|bike|taxi|minivan" \
            r"|coupe|hatchback|scooter|trailer|follower)s?"
_NOT_AHEAD_OF_EGO = r"(?! (?:a|an|the|that|this|its) (?!ego\b))"
# a phantom's own noun ("a phantom vehicle behind us", "a fake tailgater") is the forged vehicle, never a real follower
_NOT_PHANTOM = "".join(rf"(?<!{w} )" for w in ("phantom", "ghost", "fake", "forged", "spoofed", "nonexistent",
                                               "non-existent", "fictitious", "imaginary", "bogus", "fabricated"))
# a follower that tailgates (its distance behind the ego where the words give none: TAILGATER_GAP_M, above)
TAILGATING = r"\btailgat\w*"
FOLLOWER_CUE = (rf"{_NOT_PHANTOM}(?:\btailgaters?\b|tailgating {_TRAILING}|{_TRAILING} (?:is |keeps )?tailgat\w* {_BEHIND_EGO}"
                rf"|{_TRAILING} (?:that is |which is |is )?(?:follow\w*|trail\w*) (?:close(?:ly)? )?(?:behind )?"
                rf"{_BEHIND_EGO}"
                rf"|{_TRAILING} (?:that is |which is |is )?(?:follow\w*|trail\w*|riding|driving|sitting|travell?ing) "
                rf"(?:(?:right |close(?:ly)? |directly |just |immediately )?behind\b{_NOT_AHEAD_OF_EGO}"
                rf"|(?:\w+ ){{0,2}}?<q\d+:dist> (?:behind|back)\b{_NOT_AHEAD_OF_EGO})"
                rf"|{_TRAILING} (?:right |close(?:ly)? |directly |just |immediately |<q\d+:dist> )?behind {_BEHIND_EGO}"
                rf"|{_TRAILING} (?:right |just |riding )?on (?:our|your|the ego'?s?|its) (?:rear )?(?:bumper|tail)\b"
                # "follower 20 m behind", "your little follower 10 metres on your bumper" (the noun says it)
                rf"|\bfollowers? (?:(?:vehicle|car) )?(?:<q\d+:dist> )?(?:behind|back|on (?:our|your|the ego'?s?) (?:rear )?bumper)\b"
                rf"|followed (?:close(?:ly)? |tightly )?by (?:a|an|another) (?:\w+ )?{_TRAILING}"
                rf"|following {_TRAILING}\b(?! (?:a|an|the|that|this)\b))")
ROLE_CUES: tuple[tuple[AgentRole, str], ...] = (
    (AgentRole.FOLLOWER, FOLLOWER_CUE),
    (AgentRole.RELAY, rf"relay {_VEH}|\brelay\b(?! spat)(?!ed)|middle {_VEH}|{_VEH} in between|intermediate {_VEH}"),
    (AgentRole.OPPOSING, rf"oncoming {_VEH}?|opposing {_VEH}?|{_VEH} (approaching |coming )?from the opposite "
                         rf"(direction|approach)|{_VEH} coming the other way"),
    (AgentRole.CROSS, rf"cross(ing)?[- ]traffic|(crossing|cross) {_VEH}|\bcrosser\b|red[- ]light runner"
                      rf"|{_VEH} (coming |crossing |approaching )?from the (left|right|side)( street| road)?|side[- ]street {_VEH}"
                      rf"|perpendicular {_VEH}|{_VEH} on the cross street"),
    (AgentRole.LEAD, rf"lead(ing)? {_VEH}|\blead\b(?!s)|\bleader\b|{_VEH} (directly |just )?(ahead|in front)"
                     rf"|\bthe (first|head) (one|1|{_VEH}) (in|of) (the |a )?(column|platoon|line|queue|convoy|chain)\b"
                     rf"|(column|platoon|line|queue|convoy|chain)\b[^.;]{{0,6}}\bthe (first|head) (one|1|{_VEH})\b"
                     rf"|front {_VEH}|preceding {_VEH}|{_VEH} it follows"
                     # EEBL's "braking car 40 m ahead at 70 km/h" (its speed is the lead's, not the ego's)
                     rf"|(?<!ego )(?<!our )(?<!ego's )(?:hard[- ])?braking {_VEH}"),
)
EGO_CUE = r"\bego\b|subject vehicle|host vehicle|\bhv\b|test vehicle|our (car|vehicle)|the ego's"
RSU_CUE = r"\brsus?\b|roadside unit|the (traffic )?(light|signal) controller|infrastructure"

UNEQUIPPED = (r"\b(unequipped|un-equipped|not equipped|non-equipped|not v2x[- ]equipped|unconnected|non-connected"
              r"|not connected|legacy)\b|without (a |an )?(v2x|obu|radio|on-board unit)|\bno obu\b")
EQUIPPED_NOTE = r"\b(equipped|connected)\b"

# ── drivers' perception and seed-varied worlds (ScenarioSpec.perception, .variation) ──
# drivers with V2X who also act on the signal face they see (perception.equipped_see_signals): "the driver still
# watches the lights", "pays attention to the traffic lights", "shall comply with visible traffic signals",
# "notices the red and stops", "an attentive driver"; a negated verb ("never looks at", "doesn't watch") is not one
_SIGNAL_FACE = r"(?:lights?|signals?|signal (?:heads?|faces?)|reds?)\b(?! (?:phase|timing|messages?|data|says))"
SEES_SIGNALS = (r"\b(?:drivers?|everyone|everybody|ego)\b[^.;]{0,40}?(?<!not )(?<!n't )(?<!cannot )(?<!never )"
                r"\b(?:watch(?:es|ing)?|sees?|seeing|looks? at|looking at|keeps? (?:an eye on|looking at|watching)|"
                r"keeping an eye on|obey(?:s|ing)?|respects?|respecting|follows?|pays? attention to|paying attention "
                r"to|compl(?:y|ies|ying) with|notices?|noticing|spots?|spotting|heeds?) "
                r"(?:the |a |any |every |each |its |their |what )?(?:(?:traffic|visible|red) ){0,2}" + _SIGNAL_FACE +
                r"|\battentive drivers?\b|\bstops? (?:at|for) (?:a |any |the )?(?:visible )?reds? (?:it|they|he|she) "
                r"(?:can )?sees?\b|\bvisible red")
# how far a driver sees a signal: "sees the lights from 60 m", "can see the signal heads from about 60 m", "can spot
# the red from 50 m away", "signals visible from 60 m", "sight distance 60 m", "limits visibility of the lights to 25 m"
SIGHT_DISTANCE = (r"\b(?:(?:lights?|signals?|signal (?:heads?|faces?))[^.;]{0,12}?\b(?:visible|seen|in sight)|(?:sees?|spots?) "
                  r"(?:the |a )?(?:traffic )?(?:lights?|signals?|signal (?:heads?|faces?)|reds?)|sight distance|"
                  r"visibility(?: of (?:the )?(?:traffic )?(?:lights?|signals?|signal (?:heads?|faces?)))?)"
                  r"(?: of| is| =)?(?: (?:only |just )?(?:from|within|at|up to|to|limited to|down to))?"
                  r"(?: (?:about|around|roughly))? <q(?P<q>\d+):dist>")

# a driver's reaction time said of every driver ("drivers react 1.2 s late", "a reaction time of 1.5 s", "reaction times
# between 0.8 and 1.5 s"): the leader-perception delay the seed draws (variation.reaction_time_s); a range's upper end
# in the quantity (intent_text.stated_range gives its lower end)
REACTION_TIME = (r"\b(?:(?:drivers?|everyone|everybody|all (?:the )?drivers|the driver)\b[^.;]{0,20}?\b(?:reacts?|responds?"
                 r"|reacting|responding) (?:with a delay of |after )?<q(?P<q>\d+):time>(?: (?:late|later|delay))?"
                 r"|(?:perception[- ])?reaction[- ]times? (?:of |is |are |= |at |around |about )?(?:(?:between|from) )?"
                 r"(?:[\d.]+ ?(?:and|to|-) ?)?<q(?P<qa>\d+):time>)")


# seed-varied worlds (spec variation): a speed range the seed draws ("speeds drawn between 10 and 15 m/s", "every
# vehicle's desired speed varies from 40 to 60 km/h"), an arrival jitter ("arrival jitter of ±1 s", "arrives up to 1 s
# early or late"), the reaction to a warning ("drivers respond to a warning within 0.7 to 1.5 s"); the quantity is a
# range's upper end (intent_text.stated_range gives its lower end)
_RANGE_TO = r"(?:(?:between|from|in|within|in the range(?: of)?) )?(?:[\d.]+ ?(?:and|to|-) ?)?"
VARIED_SPEED = (r"\b(?:speeds?|desired speeds?|(?:every|each) (?:vehicle|car|driver)'?s? (?:desired )?speed)\b[^.;]{0,20}?"
                r"\b(?:drawn|varied|vary|varies|varying|ranging|ranges|randomi[sz]ed|sampled|spread|distributed)\b"
                r"(?: (?:uniformly|randomly|per seed|over seeds|across seeds))? " + _RANGE_TO + r"<q(?P<q>\d+):speed>")
ARRIVAL_JITTER = (r"\barrival (?:time )?(?:jitter|spread|variation)\b[^.;]{0,12}?(?:±|\+/-|\+-|plus or minus |of |up to )*"
                  r"<q(?P<q>\d+):time>|\barriv\w* (?:up to )?<q(?P<q2>\d+):time> (?:early or late|earlier or later|either way)")
WARNING_REACTION = (r"\b(?:respond\w*|react\w*|reaction)\b (?:times? )?to (?:an? |the |each )?(?:in-vehicle )?(?:warnings?|alerts?)"
                    r"\b[^.;]{0,12}?" + _RANGE_TO + r"<q(?P<q>\d+):time>|\b(?:warning|alert|alerted) reaction (?:times? )?"
                    r"(?:of |is |= )?" + _RANGE_TO + r"<q(?P<q2>\d+):time>")


# ── maps and geometry ──────────────────────────────────────────────────────
UNSUPPORTED_GEOMETRY = (
    (r"roundabouts?|traffic circles?|rotary", "a roundabout"),
    (r"on-ramps?|off-ramps?|\bramps?\b|(highway|motorway|freeway) merge|merging lane|merge lane", "a ramp or merge"),
    (r"tunnels?", "a tunnel"),
    (r"\bbridges?\b|overpass", "a bridge"),
    (r"level crossing|railway crossing|rail crossing|train crossing", "a level crossing"),
    (r"parking (lot|garage|deck)|car park", "a parking area"),
    (r"cloverleaf|interchange|diverging diamond", "an interchange"),
)
T_JUNCTION = r"\bt[- ]junctions?|\bt[- ]intersections?|\btee junction"
CORRIDOR = (r"corridor|arterial|(series|string|chain|sequence) of (signals|lights|intersections|junctions)"
            r"|(successive|consecutive|several|multiple) (signali[sz]ed )?(signals|lights|intersections|junctions)")
# a corridor traversal (spec map.junctions_ahead / map.whole_corridor): "along all 5 junctions", "through 4
# intersections", "crossing 3 consecutive signals"; "the whole corridor", "every junction of the corridor"
_JUNCTIONS = r"(?:junctions|intersections|signals|traffic lights|lights|crossings)"
JUNCTION_COUNT = (r"\b(?:along|through|across|via|over|past|cross(?:es|ing)?|travers(?:es?|ing)|pass(?:es|ing)?(?: through"
                  r"| by)?|drives? (?:through|along|past)|approach(?:es|ing)?|the first)\s(?:all |the |every |of )*(?P<n>\d+) "
                  r"(?:successive |consecutive |coordinated |signali[sz]ed |connected |equipped )*" + _JUNCTIONS + r"\b"
                  r"|\b(?P<n2>\d+) (?:successive|consecutive) (?:signali[sz]ed )?" + _JUNCTIONS + r"\b"
                  r"|\b(?P<n3>\d+) (?:signali[sz]ed )?" + _JUNCTIONS + r" in a row\b")
WHOLE_CORRIDOR = (r"\b(?:whole|entire|full|complete) (?:length of the )?(?:corridor|arterial)\b"
                  r"|\b(?:all|every|each) (?:of )?(?:the )?(?:junction|intersection|signal|light)s? (?:of|on|along|in) "
                  r"(?:the )?(?:corridor|arterial)\b|\b(?:corridor|arterial) from (?:one )?end to (?:the other )?end\b"
                  r"|\bthe length of the (?:corridor|arterial)\b|\bend[- ]to[- ]end\b(?=[^.;]{0,60}\b(?:corridor|arterial)\b)"
                  r"|\b(?:corridor|arterial)\b[^.;]{0,60}\bend[- ]to[- ]end\b|\bfrom the first (?:(?:junction|intersection|signal"
                  r"|light)s? )?to the last\b|\ball (?:the )?(?:\d+ )?(?:junction|intersection|signal|light)s? (?:of|on|along|in) the "
                  r"(?:high street|main street|main road|avenue|boulevard|strip)\b")
URBAN_CANYON = (r"urban canyon|downtown|high[- ]rise|tall buildings|skyscrapers|city (center|centre|core)"
                r"|dense urban|(between|among|surrounded by) buildings|buildings? block\w*")
FOUR_WAY = r"\bcrossroads?\b|4[- ]leg\w*"
N_WAY = r"\b(\d+)[- ]?(way|leg|legged|arm|armed)\b(?! stop)"
UNSIGNALIZED = (r"unsignali[sz]ed|unsignall?ed|uncontrolled|(stop|yield|priority)[- ]controlled|stop[- ]signs?|all[- ]way stop|two[- ]way stop"
                r"|no (traffic )?(lights?|signals?)|without (a |any )?(traffic )?(lights?|signals?)")
SIGNALIZED = r"(?<!un)signali[sz]ed|traffic (lights?|signals?)|\bspat\b|\bamber\b|\bred onset|\bgreen onset"
BUSY = (r"\bbusy\b|heavy traffic|dense traffic|congest\w*|rush[- ]hour|peak[- ]hour|lots of traffic|crowded"
        r"|background traffic")
QUIET = r"light traffic|\bempty\b|\bquiet\b|no other traffic|sparse traffic|free[- ]flow"

# signal coordination of the junctions after the scenario junction (spec signal.coordination); a bare "green
# wave" names GLOSA's purpose, not a plan, so only a wave of the signals counts
GREEN_WAVE = (r"\b(?:signals|lights|traffic lights|junctions|intersections) (?:are |is )?(?:coordinated|synchroni[sz]ed|"
              r"linked|timed|progressed)(?: as a green wave)?\b(?! (?:independently|separately|randomly|individually))|\bgreen wave (?:of|across|along|through|over|on) (?:the |all "
              r"(?:the )?|every |each )?(?:signals|lights|traffic lights|junctions|intersections|corridor|arterial)\b"
              r"|\b(?:coordinated|synchroni[sz]ed|progressive) (?:signals|lights|traffic lights|signal timing|timing)\b"
              r"|\bgreen[- ]wave (?:at|for|of) (?:a |an )?(?:design |progression )?(?:speed (?:of )?)?<q\d+:speed>"
              r"|\bgreen[- ]wave (?:design |progression )?speed (?:of |is |= )?<q\d+:speed>"
              r"|\bprogression (?:speed )?(?:designed |timed |set )?(?:at|for|of) <q\d+:speed>"
              r"|\b(?:corridor|arterial|signals|lights) (?:is |are )?coordinated (?:for|at) <q\d+:speed>")
RANDOM_OFFSETS = (r"\brandom (?:signal )?offsets?\b|\b(?:un|non[- ]?)coordinated (?:signals|lights|traffic lights|"
                  r"junctions|intersections|signal timing|timing)\b|\b(?:signals|lights|traffic lights) (?:are |is )?"
                  r"(?:not coordinated|uncoordinated|random(?:ly timed)?)\b|\beach (?:signal|light|junction) "
                  r"(?:has |with )?(?:its own|a random|a different) (?:offset|timing)\b|\bindependent (?:timing|signal timing"
                  r"|plans|timing plans|offsets|signal plans)\b|\b(?:timed|running|operating|run|operate|switching)"
                  r" (?:independently|separately|individually)\b|\bno coordination\b|\b(?:signals|lights) not "
                  r"(?:coordinated|synchroni[sz]ed)\b")
# where each junction's RSU stands (spec v2x.rsu_site) and how high (v2x.rsu_height_m)
_RSU = r"(?:rsus?|roadside units?|road-side units?|beacons?)"
RSU_FAR_SIDE = (_RSU + r"\b[^.;]{0,50}?\b(?:on|at) the far (?:side|corner)|" + _RSU + r"\b[^.;]{0,30}?\b(?:across|beyond|"
                r"past|after) the (?:junction|intersection|crossing|stop (?:line|bar))|\bfar[- ](?:side|corner) " + _RSU
                + r"|" + _RSU + r"\b[^.;]{0,40}?\bon the (?:other|opposite) side (?:of the (?:junction|intersection))?")
RSU_NEAR_SIDE = (_RSU + r"\b[^.;]{0,50}?\b(?:on|at) the near (?:side|corner)|" + _RSU + r"\b[^.;]{0,30}?\bbefore the "
                 r"(?:junction|intersection|stop (?:line|bar))|\bnear[- ](?:side|corner) " + _RSU + r"|" + _RSU
                 + r"\b[^.;]{0,30}?\bon (?:our|the approach|this|the ego'?s?) side\b")
RSU_HEIGHT = (_RSU + r"\b[^.;]{0,40}?\b(?:mounted|installed|sits|placed|antenna)?[^.;]{0,12}?\b(?:at a height of|"
              r"height of|at|on a pole of|on a mast of)\s<q(?P<q>\d+):dist> (?:high|up|tall|above (?:the )?(?:ground|road)"
              r"|height)\b|" + _RSU + r"\b[^.;]{0,40}?\b(?:at a height of|with a height of|with an antenna height of|"
              r"(?:mounted|installed) (?:at|on a pole of|on a mast of)|at a (?:mast|pole|antenna) height of|(?:antenna|mast|pole)"
              r"(?: height)?(?: of| at| is| =)?)\s<q(?P<q2>\d+):dist>(?! (?:before|after|from|ahead|behind|back|past|beyond"
              r"|short|away))|" + _RSU + r"\b[^.;]{0,40}?\b(?:on )?an? <q(?P<q3>\d+):dist> (?:pole|mast|antenna)\b"
              r"|" + _RSU + r"\b[^.;]{0,30}?\bantenna <q(?P<q4>\d+):dist> (?:high|tall|up)\b"
              # "RSU mounted on the mast arm, 6 m high"
              r"|" + _RSU + r"\b[^.;]{0,40}?, <q(?P<q5>\d+):dist> (?:high|tall|up|above (?:the )?(?:ground|road))\b")

# the channel model (spec v2x.channel.model)
TR37885_HIGHWAY = (r"\b(?:3gpp|tr ?37\.?885|37\.885)\b[^.;]{0,40}\b(?:highway|freeway|motorway)\b"
                   r"|\b(?:highway|freeway|motorway) (?:3gpp|tr ?37\.?885) (?:channel|model|path ?loss)")
TR37885_URBAN = (r"\b(?:3gpp|tr ?37\.?885|37\.885)\b[^.;]{0,40}\b(?:urban|city|street|grid)\b"
                 r"|\b(?:urban|city) (?:3gpp|tr ?37\.?885) (?:channel|model|path ?loss)")
TR37885 = r"\b3gpp (?:v2v )?(?:channel|path ?loss|propagation)(?: model)?\b|\btr ?37\.?885\b|\b37\.885\b"
# WINNER+ B1 with the 802.11p receiver, the channel checked against Sepulcre et al.'s analytical model
WINNER_B1_80211P = (r"\bwinner ?\+? ?b1\b|\bsepulcre\b|\banalytic(?:al)? (?:ieee )?802\.11p\b"
                    r"|\b(?:ieee )?802\.11p (?:analytic(?:al)?|fer|frame error rate) (?:model|receiver|curve|channel)\b")

# ── V2X ────────────────────────────────────────────────────────────────────
NO_RSU = r"\bno rsus?\b|without (an? |any )?(rsus?|roadside units?)|\bno roadside units?"
SINGLE_RSU = (r"\b(only|just) (one|1|a single) (rsu|roadside unit)|\ba single (rsu|roadside unit)"
              r"|\b(one|1) (rsu|roadside unit) only|(no|without) (rsus?|roadside units?) (at|on) the (next|following|other) "
              r"(junctions?|intersections?|signals?)")
RSU_CHAIN = (r"rsu chain|chain of rsus|rsus? (at|on) (every|each) (junction|intersection|signal)|rsu relay"
             r"|relay\w* (the )?spat|spat (is )?relay\w*|rsu-to-rsu")
SPAT_RELAY = (r"rsu relay|relay\w* (the )?spat|spat (is )?relay\w*|rsu-to-rsu|relay between rsus"
              r"|\b(?:forward|pass|relay|rebroadcast|broadcast)\w* (?:each other'?s |one another'?s |the |their )?spat\b"
              r"[^.;]{0,30}?\b(?:to each other|to one another|over the air|by radio|via radio|wirelessly)\b"
              r"|\brebroadcast\w* (?:each other'?s|one another'?s) spat\b")
EEBL_RELAY = r"rebroadcast\w*|relay (vehicle|car)|\brelay\w*\b"
NO_RELAY = (r"\b(no|without( a| any)?) (relay|rebroadcast\w*)\b|relay (is )?(off|disabled)"
            # a scene sheet's row: "relay: none", "relay vehicle = n/a"
            r"|\brelay( vehicle| car| truck)?\s*[:=]\s*(none|no|n/?a|nil|-|off)\b")
# RSU-to-RSU forwarding over a wired link (spec v2x.backhaul), not the radio
BACKHAUL = (r"\bback[- ]?haul\b|" + _RSU + r" (are |is )?(connected|linked|wired|networked) (by|over|via|with|through) "
            r"(a |an )?(wire|wired|fib(re|er)|ethernet|cable|network)\b(?! to the (backend|cloud|server))|\bwired (network|link"
            r"|connection)s?\b[^.;]{0,40}?\bshar\w*|\b(?:linked|connected) by (?:fib(?:re|er)|wire|cable|ethernet)\b")
# agents that run the application themselves (spec agents[].application): mutual yield, both deciding
MUTUAL_APP = (r"\bmutual(ly)?[- ]yield\w*|\bboth (vehicles|cars|drivers) (run|use|have|are running) "
              r"(the |an? )?(ima|lta|application|app)\b|\b(other|cross\w*|oncoming|opposing) (vehicle|car|driver) "
              r"(also )?(runs|uses|has|is running) (the |an? )?(ima|lta|application|app)\b")

# ── words that are never a fault: a healthy run, a mention, a pass criterion ───
NO_FAULTS = (r"\bfaults?\s*[=:]\s*(none|no|0|n/a)\b"
             # "0 ms added latency", "zero seconds of extra delay"
             r"|\b(zero|0) ?(ms|s|sec|secs|seconds?|milliseconds?) (of )?(added |extra |additional )?(latency|delay|lag)\b|\b(no|without( any)?) (injected |simulated |induced |added )?(communications? "
             r"|comms? |message |messaging "
             r"|v2x |radio |network |link |channel |fault )?(faults?|errors?|degradation|injection"
             r"|impairments?)\b|\bnothing (is |gets |will be )?injected\b|\bno (faults?|errors?) to inject\b"
             r"|healthy (communication|channel|v2x)|pristine|normal communication|nominal communication"
             # "we are NOT injecting loss here", "nothing broken on the comms side", "do not inject any", "we're not
             # injecting anything this run", "today only normal messages", "this row is the clean reference"
             r"|\b(not|n't|never) (be )?(inject\w*|simulat\w*|introduc\w*|add\w*) (any )?(packet |message )?(loss|losses"
             r"|delays?|latency|faults?|errors?|drops?)\b|\bnothing (is )?(broken|wrong|faulty|off) (on|in|with) the "
             r"(comms?|communications?|v2x|radio|network|channel|link)\b|\b(do not|don't|dont|not|n't) (inject|injecting) "
             r"any(thing)?\b|\bonly normal messages\b|\bnormal messages only\b|\bclean reference\b"
             r"|\bno (injected |simulated |added )?(loss|delay|latency)( or (loss|delay|latency))? (this time|today|tonight"
             r"|in this run|this run)\b(?!,? (?:only|just|but)\b)"  # (not "no delay this time, only drops": one fault left out)
             # "a clean baseline run", "this is a clean run", "clean messages only" (not "every clean run we've thrown at
             # it": past runs); "All messages shall be delivered unaltered", "every message delivered"
             r"|(?<!every )(?<!all )(?<!previous )(?<!past )(?<!earlier )(?<!other )\bclean (baseline|run|messages? only"
             r"|test run)\b|\b(all |every )?messages? (shall be |are |is |get |gets |will be )?delivered (unaltered|intact"
             r"|as sent|untouched|unchanged)\b|\bevery message delivered\b")

# a report's column, counter or metric named by a fault word, quoted or not ("the 'lost' column in the report should
# read zero", "the dropped-packets counter", "the late count"): a mention of what a run shows, never a fault cue
REPORT_ITEM = (r"['\"\u2018\u201c]?\b(lost|dropped|drops|missing|late|delayed|stale|frozen|corrupted|suppressed)\b['\"\u2019\u201d]?"
               r"[- ](packets?[- ]|messages?[- ]|msgs?[- ])?(columns?|counters?|counts?|metrics?|tally|tallies|stats?"
               r"|statistics?|kpis?|fields? (in|of) the (report|log|summary))\b")

# the application's own output late, the outcome a test checks ("want to see if the warning comes late", "no warning
# should be late", "whether the alert fires too late"): never a message delay
APP_OUTPUT_LATE = (r"\blate ([\w-]+ ){0,2}?(warnings?|alerts?|alarms?|advisories|notifications?)\b"
                   r"|\b(warnings?|alerts?|alarms?|advisory|advisories|advice|notifications?) (\w+ ){0,3}?(comes?|came|fires?"
                   r"|fired|triggers?|triggered|gets? issued|is issued|goes off|sounds|is raised|is given|(should|must|shall"
                   r"|may|will|would)( not)? be|(is|are|was|were) (not )?(still )?) ?(too |much too |far too )?(late|later"
                   r"|early)( enough)?\b|\b(warnings?|alerts?|advisory|advice) (\w+ ){0,2}?(early|soon) enough\b")

# a hazard analysis's outcome heading ("Hazard: ... so LTA judges the gap as safe and stays silent", "Effect: driver enters
# on red"): what goes wrong, which the test it asks for says again ("Test: offset ..."), not a fault of its own
HAZARD_WORDS = r"hazard|(?:failure )?effects?|consequences?"
HAZARD_HEADING = r"^\W*(?:" + HAZARD_WORDS + r")\s*:"
# a sentence that states what the test expects, not what it injects ("Expected: ...", "Pass criterion: ...", "KPI:"):
# its quantities are no fault's (intent_fault_draft.owner_of) and no setting (quantity_guard)
CRITERION_HEADING = (r"^\W*(?:expect(?:ed)?(?: result| behaviou?r| outcome)?|pass(?:ing)?(?: criteri\w*)?|fail(?:ure)?"
                     r"|acceptance(?: criteri\w*)?|expectations?|success criteri\w*|criteri\w*|kpis?|requirements?|ac"
                     # a bug report's observed outcome ("Actual: warning ~0.8 s late")
                     r"|actual(?: result| behaviou?r| outcome)?|observed(?: behaviou?r| result)?"
                     r"|" + HAZARD_WORDS + r")\s*:")

# a latency budget met ("radio link within its latency budget"): said of a healthy link, never a delay (the parser's
# cue filter and the unparsed-fault guard both read it)
LATENCY_BUDGET_MET = (r"\blatency\s*(<(?!q\d)|=<|\u2264)|\b(within|inside|under|below|meets?|meeting|met) (its |the |their |our |a )?latency (budget|limit"
                      r"|requirement|target|spec\w*)\b|\blatency (budget|limit|requirement|target)\b|\blatency (must|shall"
                      r"|should|has to) (stay|be|remain|keep) (below|under|within|less than)\b"
                      r"|\blatency (below|under|less than|within|of at most|at most)\b")
# a past incident told in a past tense ("last month on the Elm Avenue corridor (five signals, 600 m apart) we saw ...
# an RSU firmware update introduced about 300 ms of SPaT latency"): none of its words or quantities are this run's
PAST_INCIDENT = (r"\b(last|previous) (month|year|week|time|run|release|campaign|summer|winter|sprint|build|version"
                 r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|test)\b,? (we|they|i|you) [a-z]+ed\b[^.;]*"
                 # "The previous campaign replayed brake messages", "Last week we ran it with ...", "Last month Kumar has done
                 # the same scenario with ...", "we logged a rogue roadside box"
                 r"|\b(last|previous|earlier) (campaign|run|test|batch|sweep|session)s? [a-z]+ed\b[^.;]*"
                 r"|\b(last|previous) (month|year|week|time|sprint|season|monday|tuesday|wednesday|thursday|friday|saturday"
                 r"|sunday)\b,? (\w+ ){1,2}?(ran|did|had|has done|have done|has run|have run|saw|got|made|set|took|put)\b[^.;]*"
                 r"|\b(we|they) (logged|recorded|observed|spotted|noticed|measured)\b[^.;]*"
                 # an incident's report: "Field unit at Oak & 5th received SPaT from an unauthorised RSU showing green"
                 r"|\b(field|customer|fleet|production|deployed) (unit|vehicle|car|truck|device|obu)s?\b[^.;\n]{0,60}"
                 r"\b(received|saw|got|logged|reported|recorded|heard|experienced)\b[^.;]*"
                 # "Prior studies injected SPaT freezes", "we already covered FCW last sprint with a BSM freeze"
                 r"|\b(prior|previous|earlier|past) (studies|work|runs|campaigns|tests|papers|experiments)\b[^.;]*"
                 r"|\b(?:already|previously) (?:covered|tested|ran|did|done|checked|ran through)\b[^.;]*"
                 # ("Last Tuesday we spoofed the MAP and replayed ...")
                 r"|\b(last|previous) (month|year|week|time|run|release|campaign|summer|winter|sprint|build|version"
                 r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|season|quarter|trip|tour|spring|autumn|fall"
                 r"|test)\b[^.;]*\b(saw|observed"
                 r"|noticed|had|was|were|went|introduced|caused|showed|got|received|lost|experienced)\b[^.;]*"
                 # hearsay ("I keep hearing GLOSA 'falls apart when SPaT freezes'")
                 r"|\b(i|we) (keep |kept |have )?(hear|heard|hearing|been told|read)\b[^.;?]*"
                 # a run of a named past day ("quick q re last Thursday's runs (the ones with the phantom crossing car
                 # and 40% BSM loss): did the warning ever fire late?")
                 r"|[^.;?]{0,60}\b(last (monday|tuesday|wednesday|thursday|friday|saturday|sunday|night)|yesterday)'?s? ([\w-]+ "
                 r"){0,4}?(runs?|tests?|campaigns?|batch|session|drives?)\b[^.;?]*"
                 # a month's incident ("In March a replayed brake event slipped through")
                 r"|\bin (january|february|march|april|may|june|july|august|september|october|november|december)\b[^.;]*"
                 r"\b(slipped|was|were|went|happened|occurred|caused|showed|had|got|saw|found)\b[^.;]*"
                 # what someone reported of a past run ("Your tech said EEBL messages were dropped", "the logs show the
                 # replay fault was still configured from the previous test")
                 # a trial of a stated year or an earlier one ("In our 2023 field trial, ... BSMs were arriving 600 ms late")
                 r"|\b(in|during) (our|the|a|an) (\d{4}|earlier|previous|last|recent) [^.;]{0,30}?\b(trials?|tests?|pilots?"
                 r"|deployments?|campaigns?|drives?)\b[^.;]*"
                 # what happened in a numbered run ("during FCW run 14 the lead vehicle's BSMs dropped out for about 2 s")
                 r"|\bduring ([\w-]+ ){0,2}?(run|test|trial|drive|session|lap)s? ?#?\d+\b[^.;]*\b(dropped|went|was|were"
                 r"|fired|failed|lost|stopped|froze|had|showed)\b[^.;]*"
                 r"|\b(said|told (us|me)|reported|claimed|explained|logs? show(ed)?|logs? said) (that )?[^.;]{0,60}?\b(were"
                 r"|was|had been)\b[^.;]*"
                 # "a GNSS position offset of 0.4 m was measured in calibration"
                 r"|[^.;]*\b(was|were) (measured|observed|found|seen|logged) (in|during) (calibration|the field|the logs?"
                 r"|earlier runs?|a previous run|field tests?)\b[^.;]*"
                 # a test log's observed outcome ("Actual: alert at 2.1 s, late")
                 r"|(?:^|\n)\W*(?:actual|observed)(?: result| behaviou?r| outcome)?\s*:[^\n]*"
                 # a pasted log line ("[10.42] bsm rx V2 pos err +4.9 m"): what a run recorded, not what to inject
                 r"|(?:^|\n)\s*\[\d{1,3}(?:[.:]\d+){1,2}\](?!\s*[a-z]{2,15}:\s)[^\n]*")  # (not a call's "[09:14:02] Marco: ...")

# a fault word about another time or another test, never this run's: a question not to run ("what would happen if the
# lead's BSMs were replayed ...?"), another test's coverage ("replay attack covered in L-08", "but this we test in other
# campaign, not now", "currently we only cover countdown errors"), a past incident told in a past tense ("last month ...
# an RSU firmware update introduced about 300 ms of SPaT latency"), a quantity observed rather than injected ("measure
# BSM packet loss and delay as observed"). Part of NOT_A_FAULT; the quantity guard also reads it per sentence (the
# quantities of such a sentence are not this run's settings)
NOT_NOW = (r"\bwhat would happen if\b[^.;?]*"
           # a variant kept out of this run ("the spat-freeze and map-misassociation variants live in a separate manifest
           # and are NOT applied here", "the bsm-freeze variant stays commented out until v2")
           r"|[^.;\n]{0,120}\b(?:are|is) not (?:applied|enabled|active|used|injected|included|exercised|played|run|tested)"
           r" (?:here|in this \w+|today|now|tonight)\b[^.;\n]*|[^.;\n]{0,120}\bbelongs? to (?:the|a|another) (?:[\w-]+ )"
           r"{0,2}(?:campaign|suite|test|run|sweep)\b[^.;\n]*"
           r"|\bnext (?:week|month|sprint|release)'s\b[^.;\n]*|\b(?:are|is|am|'re) not (?:running|doing|testing|injecting"
           r"|using|applying|playing|exercising)\b[^.;\n]*|[^.;\n]{0,120}\blives? in (?:a |an )?(?:separate|different|other|another) (?:manifest"
           r"|file|config\w*|suite|branch|job|pipeline)\b[^.;\n]*|[^.;\n]{0,80}\b(?:stays?|remains?|is|are|kept|left)"
           r" commented[- ]out\b[^.;\n]*"
           # "Future work will revisit the spoofed-RSU case."; a colleague's test ("Priya is running the IMA speed-offset case
           # on her rig this afternoon")
           r"|\bfuture work\b[^.;\n]*|[^.;\n]{0,80}\b(?:is|are) (?:running|doing|testing|covering|trying)\b[^.;\n]{0,80}\bon"
           r" (?:her|his|their|another|a different|the other|a separate) (?:rig|bench|setup|car|track|hil|machine|station)"
           r"\b[^.;\n]*"
           # a hypothetical's consequence ("And if a vehicle that does not exist ... announced hard braking?" -- "Then
           # our car would be warned of a phantom."); the question itself may be the request ("What if the SPaT
           # arrives 0.7 s late?")
           r"|(?:^|(?<=[.!?:] )|(?<=\n))\W*then\b[^.;?\n]{0,80}\bwould\b[^.;?\n]*"
           # "... goes in tomorrow's batch, not this one"; "planned for sprint 14"; "that's a decision for after we see this
           # result"; "the test matrix has 'BSM delay 200 ms' ...; that's a copy-paste error"; a configuration to remove
           # ("night shift left the crossing car's position offset configured from their run, please take it out")
           r"|[^.;\n]{0,120}\btomorrow'?s (?:batch|run|session|campaign|list|slot|plan)\b[^.;\n]*"
           r"|[^.;\n]{0,120}\b(?:planned|scheduled|slated) for (?:sprint|release|iteration|version|phase) \d+\b[^.;\n]*"
           r"|[^.\n]*\bthat'?s a decision for (?:after|later|another day)\b[^.\n]*"
           r"|[^.\n]{0,160};\s*that'?s (?:a |just a )?(?:copy[- ]paste|typo|mistake|leftover|error)\b"
           r"|[^.;\n]{0,160}\bconfigured from (?:their|the previous|the last|an earlier|yesterday'?s) (?:run|test|session)\b"
           r"[^.;\n]*|\b(?:take|remove|clear|delete) (?:it|that|them|this) out\b"
           # "I know you're all itching to try the spoofed RSU and the countdown offset; that's Thursday."
           r"|[^.\n]{0,160};\s*that'?s (?:for )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|next week"
           r"|later|another day)\b"
           # a listing of what comes later ("NEXT WEEK at 20:00: 'The Ghost Car' -- a phantom oncoming sender")
           r"|(?:^|\n|(?<=[.!?] ))\W*next (?:week|month|episode|sprint|release)\b[^.;\n]*"
           # a chat line the next speaker turned down ("Ines: add 50 % EEBL loss? Kai: no, keep it clean"), marked so
           # by the text check (roles.check_text)
           r"|\((withdrawn|quoted)\)[^\n]*"
           # a fault planned for a later run ("We'll do the 40 % drop variant separately next week", "moved to next
           # sprint (not in this run)")
           r"|[^.;\n]{0,80}\b(we'?ll|we will|will be|to be|planned|scheduled|moved|deferred|postponed|pushed to|comes"
           r"|coming|follows|saved for)\b[^.;\n]{0,60}"
           r"\b(next (week|sprint|month|release|time|run)|tomorrow|later (this|next) (week|month|sprint))\b[^.;\n]*"
           r"|[^.;\n]{0,80}\bnot in this (run|test|campaign)\b[^.;\n]*"
           # a question about what an earlier run had ("was that the 150 ms delay we injected on the brake-event stream?")
           r"|[^.;?\n]{0,80}\b(was|is|were) (that|it|this) (the|from the|due to the|because of the|caused by the) [^.;?]{0,60}?"
           r"\b(we|they|you) (injected|applied|had|used|ran)\b[^.;?\n]*"
           # a fault withdrawn as it is said ("..., and also drop every fourth packet -- no wait, skip the second one")
           r"|[^.;,\n]{0,80}(?:--|\u2014|\u2013)\s*no,? wait\b(?!,? make (?:it|that)\b)[^.;\n]*"
           # a counterfactual ("if the oncoming vehicle's BSMs were lost for a full second, LTA would have to coast")
           r"|\bif\b[^.;?]{0,80}\b(were|was)\b[^.;?]{0,80}\bwould\b[^.;?]*"
           # a safety case's context ("SPaT spoofing, countdown errors and MAP misassociation are argued separately")
           r"|[^.;\n]{0,120}\b(are|is) (argued|covered|handled|treated|addressed|tested|assessed) separately\b[^.;\n]*"
           # a case put off to a later release ("TC-02 (50 % event loss) deferred to release 3.1 — not in scope")
           r"|[^.;\n]{0,120}\b(deferred|postponed|pushed|moved|parked)\b (to|until|for) (a |the )?(later |future |next )?"
           r"(release|version|sprint|phase|milestone|iteration|cycle|backlog)\b[^;\n]{0,40}"
           # a case called off or left for another run (fresh34: "the spoofed-RSU recreation is postponed until the review
           # signs off", "I wanted to try the ghost-vehicle attack -- ... -- but our safety lead vetoed it", "the add-on
           # ... has been withdrawn from this lot and will NOT be run", "the 300 ms BSM delay exercise is for next
           # week's lesson -- do NOT inject it today", "will stage their replay attack this afternoon -- but not here")
           # (each from its clause's start: a lazy scan from a clause boundary, not a bounded one from every position)
           r"|(?:^|(?<=[.;\n]))[^.;\n]*?\b(?:(?:is|are|was|were|has been|have been) (?:postponed|withdrawn|vetoed"
           r"|cancell?ed|shelved|scrapped|dismissed|(?:expressly |explicitly )?excluded)|vetoed"
           r"|(?:will not|won't|will never|shall not|shall never) be (?:run|injected|applied|used|tested)"
           r"|(?:do not|don't|never) inject (?:it|them|this|that|those)|but not (?:here|in this run|today|this time|now)"
           # fresh35: "those belong to the guest in the next room", "Nothing herein shall be construed as a request to
           # inject ...", "do not walk their path"
           r"|(?:those|these|they) belong to (?:the |a |another |some |our )?(?:\w+ )?(?:guests?|someone|somebody|teams?"
           r"|persons?|testers?|groups?|colleagues?|customers?)|nothing herein shall be construed|do not walk their path"
           r"|(?:some of you|you all|we all|everyone) remembers?|those who\b[^.;\n]*\bbefore (?:you|us)"
           # fresh36: "We're NOT reproducing the delay", "so don't model it", "leave it out of this one", "The SPaT freeze
           # thing is Priya's ticket", "on someone else's rig", "the other group's ghost-sender results"
           r"|(?:are|is|am|'re) not (?:reproducing|recreating|modell?ing|simulating|including)"
           r"|(?:don't|do not|never) (?:model|simulate|reproduce|recreate|include) (?:it|that|them|this|those)"
           r"|leave (?:it|that|them|this) out|is \w+'s (?:ticket|test|case|job|task)|on someone else's (?:rig|bench|setup"
           r"|car|track)|(?:the )?(?:other|another) (?:group|team|lab)'s"
           # fresh37: "Ghost-sender case was already merged in #790 and isn't part of this PR", "Freeze on MAP was done
           # yesterday, don't redo"
           r"|(?:was|were|has been|have been) (?:already )?(?:merged|done|run|tested|covered|landed)(?: already)?"
           r" (?:in|on|yesterday|last|before|earlier|already)|(?:don't|do not) redo|(?:isn't|is not|aren't|are not)"
           r" part of this"
           # fresh42: "the replay-attack stuff is @mei's, not ours", "so not retrying that today", "the stale-SPaT and
           # phase-corruption variants (...) come after the review on 14 June"
           r"|(?:is|are) @?\w+'s,? not (?:ours|mine)|not (?:retrying|repeating|rerunning|re-running) (?:it|that|this|those)"
           r"|(?:comes?|coming) after the (?:review|sign-?off|audit|approval|hara|safety review)"
           # a site's own outage, not a fault this run injects ("the signal's SPaT broadcast is switched off for
           # maintenance, which LTA does not use anyway")
           r"|(?:switched|turned|shut|taken) (?:off|down) for (?:maintenance|servicing|repairs?|an? upgrade)"
           # a past run finished ("Last week's -5 m offset run is done")
           r"|(?:last week'?s|yesterday'?s|the previous|the earlier|the last) [^.;\n]{0,40}\b(?:run|test|case) (?:is|was)"
           r" (?:done|finished|complete|over)"
           # a commit's housekeeping (fresh43: "chore(ci): pin carla to 0.9.15, drop flaky replay fixture")
           r"|drop(?:ped|s)? (?:the |a )?(?:flaky |old |stale |unused |broken )?(?:[\w-]+ )?(?:fixtures?|mocks?|stubs?"
           r"|helpers?))"
           r"\b[^.;\n]*"
           # a hazard named by its id, its description in brackets ("hazard H-RLVW-02 (missed red-light warning due to
           # stale SPaT, ASIL B)"): what the analysis fears, not what this run injects
           r"|\bhazard [\w-]*\d[\w-]* \([^)]*\)"
           # what happened before ("you had previously reported BSM drops at that junction", "That was the field
           # incident last spring", "Previous owners reported a MAP that tied the lane to the wrong group -- fully
           # repaired")
           r"|(?:^|(?<=[.;?\n]))[^.;?\n]*?\b(?:(?:you|we|they|i) (?:had )?previously reported|that was the (?:field "
           r"|road |earlier |last )?incident)\b[^.;?\n]*"
           r"|\bprevious (owners?|tenants?|teams?)\b[^.;\n]*\b(repaired|fixed|resolved)\b[^.;\n]*"
           r"|[^.;\n]{0,120}\b(not in|out of) scope\b"
           # a changelog's entry ("- Fixed: replay lag was off by one message period"): what a release changed
           r"|(?:^|\n)\s*[-*\u2022]?\s*(fixed|resolved|changed|removed|deprecated|bug ?fix(es)?)\s*:[^\n]*"
           # what was used in an earlier batch ("the +2 s countdown offset we had in that batch")
           r"|[^.;?\n]{0,80}\b(we|they|you) (had|used|ran|injected|applied) (in|on|during|for) (that|the|this|last|"
           r"yesterday's|the overnight|the previous|an earlier) (batch|run|campaign|test|series|sweep)\b[^.;?\n]*"
           r"|\b[\w-]+( attacks?| faults?| errors?)? (is |are )?(covered|tested|handled) (in|by|elsewhere)\b[^.;|]*"
           r"|[^.;|]{0,120}\b(in|for) (an? )?(other|another|separate|different|later) (campaign|test|run|suite|ticket)"
           r"s?\b[^.;|]*|\b(only |currently |already )?cover(s|ed)? (\w+ ){0,2}?(countdown|delay|loss|latency|phase"
           r"|position|speed|timestamp|replay|spoofing|freeze) (errors?|faults?|cases?)\b"
           r"|" + PAST_INCIDENT +
           r"|\b(packet |message )?(loss|delay|latency)( and (loss|delay|latency))? as (observed|measured|they come)\b")

# a sentence that puts the one before it aside ("What happens if the crossing car's BSM freezes, or if someone spoofs the
# MAP? Good questions, but I'm not asking them today."): that sentence asks for nothing (the unparsed-fault guard)
PUTS_ASIDE_PREVIOUS = (r"^\W*(?:(?:good|great|fair|nice|interesting|valid) )?(?:questions?|points?|ideas?|thoughts?)\b[^.;]{0,30}"
                       r"\bnot (?:asking|testing|running|doing|covering|answering|trying|for) (?:them|that|those|it|these"
                       r"|this)\b"
                       # a story's "I waited for them: the ghost vehicles, the frozen messages ... None came."
                       r"|^\W*(?:none|nothing|neither) (?:of (?:them|it|that|those) )?(?:came|happened|showed up|arrived"
                       r"|appeared)\b"
                       # "'Shall we drop the EEBL messages ...?' 'Not today,' said the hare"; "... itching to try the spoofed
                       # RSU and the countdown offset; that's Thursday."
                       r"|^\W*(?:not today|not now|not this time|maybe later|nope|no,? (?:not|let'?s not|we won'?t|we don'?t))\b"
                       # a FAQ's answer: "Q: Does RLVW still warn if the SPaT phase gets corrupted to green? A: That's the
                       # next batch, not this one." (fresh43)
                       r"|^\W*(?:a:\s*)?(?:that'?s|it'?s|this is) (?:for )?(?:the )?next (?:batch|run|round|sprint|campaign|week)\b"
                       # "Q: Should this LTA run include the position offset from last week? A: No."
                       r"|^\W*a:\s*no\W*$"
                       # "customer thinks MAP misassociation is breaking IMA on their side. Engineering already ruled that
                       # out" (fresh36)
                       r"|^\W*(?:[\w-]+ ){0,3}?(?:already |has |have )*ruled (?:that|it|this|those) out\b"
                       r"|^\W*that'?s (?:for )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|next week"
                       r"|later|another day)\b"
                       # a hypothetical's consequence ("SOCRATES: And if a vehicle that does not exist ... announced hard
                       # braking? MENO: Then our car would be warned of a phantom."): the question was no request
                       r"|^\W*(?:\w+:\s*)?then\b[^.;?]{0,80}\bwould\b"
                       # "(The spoofed-MAP sideline ...?! was analysed in prep but is not played today"
                       r"|^\W*(?:was|were|is|are) (?:analy[sz]ed|discussed|considered|covered|prepared)\b[^.;]{0,40}\bnot "
                       r"(?:played|run|tested|used|exercised|applied|injected)\b")

# a fault taken back later in the text by its kind ("Also drop 5 EEBL messages in a row ... Actually, scrap the burst
# drop, Ana says it's covered in EEBL-04"): the parser removes the last fault of that kind said before, and the
# unparsed-fault guard its clause (``taken_back_operators``: the kinds a noun names)
# (and "don't add the speed offset Priya suggested", a sentence "No freeze." after an either/or the writer resolved)
TAKEN_BACK = (r"(?:\b(?:scrap|cancel|forget|remove|skip|strike|ditch|leave out|take out|(?:don'?t|do not|never) (?:add"
              r"|include|inject))|(?:^|(?<=[.;!] ))no(?=(?: the| any)? [\w-]+(?: [\w-]+)?\s*(?:[.;!]|$)))"
              r" (?:the |that |this |any )?(?:[\w-]+ )"
              r"{0,2}?(?P<what>drop|loss|delay|lag|freeze|replay|ghost|phantom|spoof\w*|countdown offset|position offset"
              r"|speed offset|timestamp offset)\b(?! (?:of|by|on)\b)")


def taken_back_operators(noun: str) -> tuple[FaultOperator, ...]:
    """The fault operators a taken-back noun names ("the burst drop": drop; "the spoofed RSU": spoofed_rsu)."""
    if noun.startswith("spoof"):
        return (FaultOperator.SPOOFED_RSU,)
    return {"drop": (FaultOperator.DROP,), "loss": (FaultOperator.DROP,), "delay": (FaultOperator.DELAY,),
            "lag": (FaultOperator.DELAY,), "freeze": (FaultOperator.FREEZE,), "replay": (FaultOperator.REPLAY,),
            "ghost": (FaultOperator.GHOST_SENDER,), "phantom": (FaultOperator.GHOST_SENDER,),
            "countdown offset": (FaultOperator.SPAT_COUNTDOWN_OFFSET,),
            "position offset": (FaultOperator.BSM_POSITION_OFFSET,), "speed offset": (FaultOperator.BSM_SPEED_OFFSET,),
            "timestamp offset": (FaultOperator.TIMESTAMP_OFFSET,)}.get(noun.lower(), ())


# a correction of a value said before ("edit: make that 3 s lag, not 2", "correction: it should be 0.5 s, not 0.3",
# "(*0.3 s sorry, not 3)"): the prefix before the new value and the tail naming the old one (the parser takes the new
# value; the quantity guard counts the old one as said)
CORRECTION = (r"(?:\b(?:edit|correction|update|actually|sorry|typo|no wait|wait)\b\W{0,3}(?:make (?:that|it)|change (?:that|it) to|(?:that|it)"
              r" should be|should be|read|it'?s|it is) "
              # a footnote's star: "3s* longer ... (*0.3 s sorry, not 3, fat fingers)"
              r"|\(?\*\s?)")
CORRECTED_FROM = r"(?: [\w-]+){0,2}?,? (?:not|instead of|rather than) (?P<old>\d+(?:\.\d+)?)"
# a value corrected right after it is said ("half a second, no wait, make that 800 milliseconds"), or a few words on
# after a dash or a comma ("half a second in the past -- no wait, make it 0.7 seconds"): what lies between the old
# quantity and the new one (the parser takes the new value; the quantity guard counts the old one as said)
# ("shifted 10 m — sorry, 8 m — ahead": a dash right after the old one)
CORRECTED_AFTER = (r"(?:,?|\s*(?:--?|\u2014|\u2013)|(?: \w+){1,3}\s*(?:,|--|\u2014|\u2013))\s*(?:no,? wait|wait|sorry|i mean"
                   r"|correction|actually)"
                   r"[,:]? (?:make (?:that|it) |change (?:that|it) to |it'?s |rather )?")

# what a fault looks like from the receiver, said after it in its sentence ("..., so the lead therefore appears 5 m
# farther away"): the same fault said again (the parser's restatement merge and the unparsed-fault guard both read it)
LOOKS_LIKE = r"\b(therefore|thus|hence|so|then) (appears?|looks?|seems?|shows? up)\b"

# the application's own handling of what it heard, offered as alternatives ("IMA holds last track? or drops it?"):
# the application is the subject, no sender's fault (the parser's cue filter and the unparsed-fault guard both read it)
APP_OWN_HANDLING = (r"\b(rlvw|glosa|fcw|eebl|ima|lta|the app|the application|the logic|the system)\b (\w+ly )?(holds?|keeps?"
                    r"|retains?|uses?) (on to )?(its |the )?(last |old |stale )?(tracks?|targets?|objects?)\b\W{0,3}(or|and"
                    r"|then) (\w+ly )?(drops?|discards?|forgets?|clears?|deletes?|loses?) (it|them)\b")

# a fault named as the label of a ticket, a bug or a disabled variant ("the delayed-SPaT ticket", "our packet-loss bug",
# "the frozen-SPaT bug from March is fixed", "the SPaT phase-corruption variant stays disabled"): a reference to it,
# not a fault to inject (the parser and the unparsed-fault guard both read it)
FAULT_LABEL = (r"\b(?=[\w-]*\b(?:delay\w*|late|lag\w*|lost|loss|drop\w*|frozen|freez\w*|stale|offset|silent|missing"
               r"|corrupt\w*|corruption|stuck|spoof\w*|ghost|phantom|replay\w*)\b)[\w]+(?:-[\w]+)+(?= (?:ticket|bug|issue"
               r"|incident|defect|story|regression|jira|variant|sideline|drill|experiment|edge)s?\b)")

# what an application must withstand, not what is injected ("the advisory should handle like up to ten percent spat
# loss", "must tolerate 200 ms of delay"); part of NOT_A_FAULT, and an outcome to the quantity guard
ROBUSTNESS_REQUIREMENT = (r"\b(should|must|shall|has to|have to|needs? to|is to) (\w+ )?(handle|tolerate|cope with"
                          r"|survive|withstand|ride out|absorb)\b[^.;]{0,50}"
                          # "shall maintain warning availability with up to 10 % EEBL packet loss"
                          r"|\b(should|must|shall)\b[^.;]{0,60}\b(with|under|despite) (up to|at most|as much as) [^.;]{0,50}"
                          # "robustness to up to 10 % BSM loss is a requirement", "robust against 200 ms of delay"
                          # ("the draft should require robustness to 25 per cent BSM loss from the opposing vehicle and
                          # to 300 ms latency")
                          r"|\brobust(ness)? (to|against)\b[^.;]{0,90}")

# what a test measures or leaves out, said with a fault word ("a packet error rate target of 10 %", "the previous run
# lost its logs", "a late-warning check", "stale map tiles are out of scope"): never a fault to inject (the parser's cue
# filter and the unparsed-fault guard both read it)
NOT_A_FAULT = (r"\bpackets? error rates?\b|\bper (target|budget|limit|kpi|requirement)\b"
               # an exam's question about the run ("(b) Justify your answer with reference to the stale phase data")
               r"|\bjustify (your|the|this|that|each|an?) [^.;?\n]*"
               # (a letter's opening "With reference to the assessment of ..., the Authority requests ...: (a) a spoofed
               # roadside unit ...": the reference ends at its clause)
               r"|\bwith reference to\b[^.;:,?\n]*"
               # a fault put aside ("let's skip the loss idea for now"), added nowhere ("don't add anything"), the ego's
               # own position lost with its GNSS ("so it loses its own position fix": said with the jamming)
               r"|\bskip(ping)? (the |that |this )?[\w-]+ (idea|variant|case|test|part|bit)\b"
               r"|\b(don'?t|do not|never) add (anything|any faults?|any \w+)\b[^.;]{0,30}"
               # how far out the ego starts ("Ego approaching at 50 kph, about 300 metres out"): no position offset
               # a fault said to go on ("the MAP feed runs 2 seconds late and stays late"): its window, not a second fault
               r"|\band stays? (late|that way|so|frozen|stale|silent|down|off)\b"
               # a re-run said as a replay ("Runbook action: replay on platform -- EEBL app, drop ...")
               r"|\breplay(ed|ing)? (it |this |that |the (case|incident|scenario|alert) )?(on|in) (the )?(platform|simulator"
               r"|sim|farm|rig|bench|lab)\b"
               # a vehicle's speed said against the ego's ("the lead 40 m ahead and 10 m/s slower than us"): the scene's
               r"|(<q\d+:speed>|\d+(\.\d+)? ?(m/s|km/h|kph|mph)) (slower|faster) than (us|the ego|ego|we are|our car|ours)\b"
               # (and an oncoming car's: "oncoming car 90 m out doing 55 mph")
               r"|\b(ego|we|approach\w*|starts?|starting|(oncoming|opposing) (car|vehicle|traffic))\b"
               r"(?:(?!position|location|report|gps)[^.;]){0,40}(<q\d+:dist>"
               r"|\d+(\.\d+)? ?(m|metres?|meters?|ft|feet|yards?)) (out|away|off)\b(?! (from|of))"
               # a fault named as the event that times another ("after the delay ends, drop 5 BSMs")
               r"|\b(after|before|once|when|until|since|as soon as) (the|that|this) ([\w-]+ ){0,2}?(fault|delay|freeze|drop|loss"
               r"|outage|offset|replay|injection|error)\b(?= (ends|has ended|is over|stops|finishes|expires|starts|begins)\b)"
               # "No messages dropped or delayed on purpose"
               r"|\bno (\w+ )?(messages?|packets?|msgs?|bsms?|spats?|frames?) (are |were |get |got |is |was )?(dropped|lost"
               r"|delayed|corrupted|injected|touched|manipulated|altered)\b[^.;]*"
               # the time to collision falling ("Expect the alert before TTC drops below 2 s"), logging a latency
               r"|\bttc (drops?|falls?|goes)\b|\blog(s|ged|ging)? (the )?(end-to-end |e2e |channel |radio )?(latency|delay"
               r"|loss)\b"
               # what relaying itself brings ("duplicate EEBL msgs w/ older timestamps - expected from relaying")
               r"|[^.;\n]{0,70}\bexpected (from|with|due to|because of) (the )?(relay\w*|rebroadcast\w*|multi-?hop\w*)\b"
               r"|\blos(e|es|ing|t) (its|their|the|his|her) (own )?(position|gps|gnss|location) (fix|lock)\b"
               # what the application wrongly said, the outcome a test looks at ("our drivers keep getting bogus red light
               # warnings")
               # (and "phantom 'vehicle braking ahead' alerts": the alerts' own words quoted between)
               r"|\b(bogus|false|spurious|wrong|unjustified|nuisance|phantom|ghost) (['\"\u2018\u201c][^'\"\u2019\u201d]{1,40}"
               r"['\"\u2019\u201d] )?(red[- ]light |collision |brake |forward[- ]collision "
               r"|left[- ]turn |intersection |speed )?(violation )?(warnings?|alerts?|alarms?)\b(?:[^.;]{0,20}?\b(suppress\w*"
               r"|discard\w*|filter\w*|dropp\w*|ignor\w*|block\w*)\b(?: by [^.;,]{0,30})?)?"
               # a fault taken out of the run ("rerun with the replay removed", "the freeze disabled")
               r"|\b(the |any |that )?(replay|freeze|frozen \w+|delay|latency|loss|drop|spoof\w*|ghost|offset|fault)s? "
               r"(is |are |was |were )?(removed|disabled|turned off|switched off|taken out|cleared|deleted|gone)\b|\b(error|loss|drop) rate (target|budget|requirement|kpi|limit)s?\b"
               r"|\blos(t|es|ing) (its|the|their|our|all) (logs?|log files?|recordings?|results?|traces?|data files?)\b"
               r"|\blate[- ](warning|alert|advisory|braking)s?\b[- ](check|test|case|regression|scenario|ticket)s?\b"
               r"|\b[^.;]{0,60}\b(is|are) (out of scope|not part of (this|the) (test|run|scenario)|not tested|excluded)\b"
               # a scene edit ("we dropped pedestrians from the scene"), a pass criterion ("warning within 500 ms", "must
               # appear within 0.5 s", "no late braking"), a software or map version ("the old map version 2.1")
               r"|\b(dropp?\w*|remov\w*|delet\w*) (the |all )?(pedestrians?|cyclists?|bikes?|trucks?|buses|cars?|vehicles?"
               r"|agents?|background traffic|parked cars?)\b[^.;]{0,20}?\bfrom (the )?(scene|scenario|map|test|run)\b"
               r"|\b(warnings?|alerts?|advisory|advice|alarms?|notifications?)\b[^.;]{0,30}?\bwithin (<q\d+:time>|\d+(\.\d+)? ?"
               r"(ms|s|secs?|seconds?|milliseconds?))\b|\b(no|without) late (braking|brakes?|reactions?|warnings?)\b"
               r"|\b(old|older|previous|outdated|legacy) (map|software|firmware|sw|hmi) (version|release|build)s?\b"
               # the application's own output suppressed or discarded ("the false alert to be suppressed by plausibility
               # checks", "whether the warning is discarded"), zero loss, and another test named by its fault ("the
               # replay and spoofing campaign", "the control for the replay case", "before the freeze tests")
               r"|(?<!brake )(?<!braking )(?<!hazard )(?<!eebl )(?<!emergency )\b(warnings?|alerts?|alarms?|advisory|advice)\b"
               r"[^.;]{0,20}?\b(to be|is|are|gets?|being) (suppress\w*|discard\w*|filtered|rejected|ignored)\b|\b(zero|0) (packet |message )?(loss|losses|drops?|delay|latency)\b"
               r"|\b(the |a |for the )?(\w+ and )?(replay|spoof\w*|freeze|delay|drop|loss|latency|ghost)\w* (campaign|case|tests?"
               r"|suite|scenarios?|runs?|series)\b"
               r"|\b(message|packet|msg|pkt) (drop|loss|delay|lateness)s? (counters?|counts?|histograms?|rates?|statistics"
               r"|stats?)\b|\b(delay|latency) histograms?\b|\b(drop|loss) counts?\b|\bper (target|budget|requirement)\b"
               r"|\bdrops? support\b|\bmsg counters?\b|\bmessage counters?\b"
               r"|\b[^.;]{0,80}\bnot (an? )?(injected|simulated|induced|added)\b"
               r"|\b(speed )?limits? (was |is |has been |gets )?(dropped|lowered|reduced|raised|cut)\b"
               # a freeze's fresh stamps ("the same content, only with fresh timestamps"): never a timestamp fault
               r"|\b(fresh|new|current|updated|correct|valid|live) (time ?stamps?|stamps?)\b"
               # where the ego is ("red onset when ego is ~60 m out"): a distance to the junction, never a position offset
               r"|(?<!ghost )(?<!phantom )(?<!fake )(?<!forged )(?<!spoofed )"  # (a forged vehicle's place is its fault's)
               r"\b(ego|car|vehicle|we|our car|it)( is| are|'s) (still |about |only |roughly |around |~ ?)?(<q\d+:dist>"
               r"|\d+(\.\d+)? ?m(etres|eters)?) (out|away)\b"
               # what a run logs or measures ("we want packet loss logged per junction", "log BSM inter-arrival times
               # and timestamp offset statistics", "record SPaT age / staleness in the log", "we only measure the
               # speed-advice delay KPI"); not "log into the RSU and drop ...", and "measure the effect of a 0.5 s
               # delay" stays a delay
               r"|\b(log|logs|logged|logging|record|recorded|recording)\b(?! (in|into|on|onto)\b)[^.;]{0,60}\b(loss"
               r"|losses|drops?|delays?|latenc\w*|staleness|age|offsets?|timestamps?|inter-arrival\w*|statistics"
               r"|histograms?)\b"
               r"|\b(loss|losses|drops?|delays?|latenc\w*|staleness)\b[^.;]{0,30}?\b(logged|recorded|measured|in the log)\b"
               r"|\b[\w-]+ (delay|latency|loss) kpis?\b|\b(offset|error|delay|latency|loss|age)s? (statistics|stats"
               r"|histograms?|distributions?)\b"
               # a past run ("last week's run had a position offset", "the sender went silent last time")
               r"|\blast (week|time|run|night)('s)? (run|test)?\s*(had|showed|was|were|went|got)\b"
               # injectors kept off ("Do NOT arm the ghost-vehicle or position-offset injectors")
               r"|\b(do not|don't|dont|never|not to) (arm|enable|activate|switch on|turn on)\b[^.;]{0,60}?\b(injectors?"
               r"|faults?|profiles?|impairments?|attacks?|offsets?|delays?|drops?|loss|freezes?|replays?)\b"
               # where the ego is when something happens ("at 100 metres out, the SPaT goes stale"), what a run reports
               # ("Report the alert latency")
               r"|\bat (<q\d+:dist>|\d+(\.\d+)? ?(m|metres?|meters?|ft|feet)) (out|away)\b"
               r"|\b(report|measure|record|note|log)\b (the )?([\w-]+ ){0,2}?(latency|delay|lateness)\b"
               # what a past fault did ("an unexpected phantom car spooked their driver last month")
               r"|[^.;]{0,60}\b(spooked|scared|startled|surprised|confused|fooled|tricked|happened|occurred)\b[^.;]{0,60}?"
               r"\blast (time|week|month|run|night|year)\b"
               r"|\b(went|was|were|had|got)\b[^.;]{0,60}?\blast (time|week|run|night)\b"
               # a hypothetical in a requirement ("advice must stay valid even if the countdown were off by a second")
               r"|\beven if\b[^.;]{0,60}?\b(were|was|would be|should be)\b[^.;]{0,40}"
               # the application's own silence ("the left-turn assist stayed silent"): an outcome, not a silenced sender
               r"|\b(warnings?|alerts?|assist|advisory|app|application|system|hmi)\b[^.;]{0,15}?\b(goes|go|stayed|stays|remained"
               r"|remains|was|kept|went|stay|remain) (silent|quiet|mute)\b"
               r"|\b(rlvw|glosa|fcw|eebl|ima|lta)\b[^.;]{0,15}?\b(stayed|stays|remained|remains|kept|stay|remain) (silent"
               r"|quiet|mute)\b"
               r"|" + ROBUSTNESS_REQUIREMENT + r"|" + NOT_NOW)

# ── behaviours and profiles ────────────────────────────────────────────────
# "emergency brake light (warning)" names the application, not a braking
HARD_BRAKE = (r"brak\w* (very |really |extremely )?(hard|sharply|suddenly|abruptly|heavily|strong|strongly|firmly)\b"
              r"|\b(firm|hard|sharp) brake (by|from) (the |a )?(lead|leader|truck|car|vehicle|van)\b"
              # (not the messages that announce one: "send EEBL hard-braking msgs")
              r"|hard[- ]brak\w*\b(?! (msgs?|messages?|events?|warnings?|alerts?|notifications?|flags?|broadcasts?)\b)"
              r"|emergency[- ]brak\w*\b(?![- ]lights?\b)"
              r"|slam\w* (on )?(the |its |their )?brakes|(hard|sudden|emergency|panic) stop|brak\w* (at|with) (?=<q\d+:accel>)"
              # "Lead hits the brakes 8 seconds in", "stands on the brakes"
              r"|\b(hits?|hitting|stands? on|standing on|stomps? on|jams? on) (the |its |their )?brakes\b"
              # a paper's "a lead vehicle ..., which decelerates sharply at t = 6 s"
              r"|\bdecelerat(es|ing|ed) (very |really )?(hard|sharply|suddenly|abruptly|heavily|strongly)\b"
              # "brakes at 10 s at 4 m/s2", "brakes at t = 6 s": a braking said with its onset (the onset read after it)
              r"|brak(es|ing|ed) (?=(?:(?:at|after) (?:t ?= ?)?|t ?= ?)<q\d+:time>)"
              # "lead brakes 7 s in", "the truck brakes 5 s into the run"
              r"|brak(es|ing|ed) (?=<q\d+:time> in(?:to the (?:scenario|run|simulation|test|drive))?\b(?! (?:the|a|an|our"
              r"|its|their)\b))"
              r"|decelerat\w* (at|with|by) (?=<q\d+:accel>)"
              # a hand-typed field: "lead decel: -6 m/s2 at t=10", "deceleration = 7 m/s²"
              r"|\bdecel(eration)?\s*[:=]?\s*(of )?(?=<q\d+:accel>)")
_VEHICLE = r"(?:car|vehicle|truck|van|bus|lead|leader|lorry)"
STOPPED_LEAD = (rf"\b(?:stopped|stationary|parked|broken[- ]down|stalled|halted|standing)\s+(?:\w+\s+)?{_VEHICLE}"
                rf"|\b{_VEHICLE}\s+(?:ahead\s+|in front\s+)?(?:is\s+|sits\s+|stands\s+)?(?:stopped|stationary|at a standstill)"
                r"|(?:stopped|standing) traffic|traffic jam|end of (?:a |the )?queue|tail of (?:a |the )?(?:jam|queue)")
SLOW_LEAD = rf"\b(?:slow(?:er)?|slow-moving|crawling)\s+(?:\w+\s+)?{_VEHICLE}|\b{_VEHICLE}\s+(?:ahead\s+)?(?:crawls|creeps)"
RED_RUNNER = r"red[- ]light runn\w*|runs? (the|a) (red|stop sign|light|signal)|running (the|a) (red|stop sign)"
NO_YIELD = r"(does not|doesn't|fails? to|won't|never|refuses? to) yield|\bno[- ]yield\b|ignores the right of way"
YIELD = r"\byields?\b|gives way"
AGGRESSIVE = r"\b(aggressive\w*|reckless\w*|impatient)\b"
CAUTIOUS = r"\b(cautious\w*|careful\w*|timid|defensive\w*|hesitant)\b"
LEFT = r"turn\w* left|left[- ]turn\w*|unprotected left|makes? a left"
RIGHT = r"turn\w* right|right[- ]turn\w*"

# ── prompt injection (recorded as a warning; the text stays data) ─────────
INJECTION = (r"ignore (all |any |the |your |previous |prior |above |earlier )*(instructions|schema|rules|prompts?|constraints)"
             r"|disregard (all |the |your |previous )*(instructions|schema|rules)|system prompt|you are now|act as"
             r"|(output|return|write|print|emit) (some |a |the )?(python|code|script|shell|javascript|sql)"
             r"|```|\bexec\s*\(|\beval\s*\(|__import__|import os|os\.system|subprocess|rm -rf|<script")

# ── language detection (for a clear error instead of an empty spec) ───────
ENGLISH_WORDS = frozenset(
    "the a an and or of to when with at in on is are that this check test make sure stays safe while "
    "from for by as it its be before after just into until during ego vehicle vehicles car cars truck "
    "traffic light signal road lane junction intersection drive drives driving approaches approach turns "
    "turn left right ahead behind stop stops speed warning feed message messages brake brakes braking "
    "crossing oncoming lead relay busy town scenario run".split())
FOREIGN_WORDS = {
    "German": frozenset("der die das und ist nicht mit bei wenn eine einen ein zu von auf für sich des dem den "
                        "prüfen prüfe bleibt sicher ampel kreuzung fahrzeug kurz vor".split()),
    "French": frozenset("le la les et est une un des du pour avec dans sur que qui pas vérifier reste feu "
                        "rouge véhicule carrefour quand juste avant".split()),
    "Spanish": frozenset("el la los las y es una un del para con en que por no comprobar sigue seguro "
                         "semáforo vehículo cruce cuando justo antes".split()),
    "Italian": frozenset("il lo gli le e è una un del per con che non controllare resta sicuro semaforo "
                         "veicolo incrocio quando appena prima".split()),
    "Polish": frozenset("i w z na do się nie że jest przy proszę pojazd przez po od dla oraz".split()),
    "Swedish": frozenset("och att det som en på är för med till inte vi när även tack mot".split()),
    "Dutch": frozenset("de het een en is niet met bij als van op voor controleer blijft veilig verkeerslicht "
                       "voertuig kruispunt".split()),
    "Portuguese": frozenset("o a os as e é uma um do da para com em que não verificar permanece seguro "
                            "semáforo veículo cruzamento quando".split()),
}
# the value words of an intent written partly in another language, in English: a colour, a number before a unit, a
# unit, "saying it is" (the parser reads English domain words and these; grammar.LANGUAGE_CHECK tells the user); a colour or number
# word that is also English ("rot", "six") is left alone
FOREIGN_VALUES: tuple[tuple[str, str | Callable[[re.Match[str]], str]], ...] = (
    (r"\b(?:rojo|roja|rosso|rossa|rouge|rood|vermelho|vermelha)\b", "red"),
    (r"\b(?:verde|vert|grün|gruen|groen)\b", "green"),
    (r"\b(?:amarillo|ámbar|giallo|ambra|jaune|gelb|oranje|amarelo)\b", "amber"),
    (r"\b(?:segundos?|secondi|secondo|secondes?|sekunden|sekunde|seconden)\b", "seconds"),
    (r"\b(?:metros?|metri|metro|mètres?|meter)\b", "metres"),
    (r"\b(?:verspätet|verzögert|retrasad[oa]s?|in ritardo|en retard|atrasad[oa]s?|vertraagd)\b", "delayed"),
    (r"\b(?:geisterfahrzeug|vehículo fantasma|veicolo fantasma|véhicule fantôme|spookvoertuig|veículo fantasma)\b",
     "ghost vehicle"),
    (r"\b(?:rsu|roadside unit) (?:falso|falsa|falsificad[oa]|faux|fausse|gefälscht\w*|nep)\b", "fake rsu"),
    (r"\b(?:indicando|indiquant|anzeigend|aangevend)\b", "showing"),
    (r"\b(?:contagem regressiva|cuenta regresiva|conto alla rovescia|compte à rebours)\b", "countdown"),
    (r"\b(?:mais curta|más corta|più corta|plus courte|kürzer|korter)\b", "shorter"),
    (r"\b(?:mais longa|más larga|più lunga|plus longue|länger|langer)\b", "longer"),
    (r"\b(?:desde o início|desde el inicio|dall'inizio|depuis le début|von anfang an|vanaf het begin)\b", "from the start"),
    (r"\bvor (?:dem|uns(?:erem)?) ego\b|\bvor uns\b", "ahead of the ego"),
    (r"\b(?:wordt|werd) het zwijgen opgelegd\b|\b(?:verstummt|schweigt|zwijgt)\b", "is silenced"),
    (r"\b(eebl|bsm|spat|map)-?(?:stroom|strom|flujo|flusso|flux|fluxo)\b", r"\1 stream"),
    (r"\bop de\b", "on the"),
    (r"\blosow\w*\b", "random"), (r"\butrat\w*\b", "loss"), (r"\bz prawdopodobieństwem\b", "with probability"),
    (r"\bprzez cały przebieg\b|\bhela körningen\b", "for the whole run"), (r"\b(?:przez|under) (?=\d+(?:\.\d+)? ?(?:s|sekund\w*)\b)", "for "),
    (r"\bsekund\w*\b", "seconds"), (r"\bhamuje\b|\bbromsar\b", "brakes"), (r"\bprzy (?=t ?=)", "at "),
    (r"\bgrönt\b|\bgrön\b|\bzielon\w*\b", "green"), (r"\brött\b|\bröd\b|\bczerwon\w*\b", "red"),
    (r"\b(?:bremst|remt|frena|freine|trava) (?:hart|hard|bruscamente|fort|forte|a fondo|brusquement)\b", "brakes hard"),
    (r"\b(?:bei|op|à|a las|alle|em) (?=t ?=)", "at "),
    (r"\b(?:abstand|afstand|distanza|distancia|distância)\b", "gap"),
    (r"\b(?:vrachtwagen|lkw|camion|camión|caminhão|transporter)\b", "truck"),
    (r"\b(?:vóór ons|voor ons|davanti a noi|delante de nosotros|devant nous|à nossa frente)\b", "ahead of us"),
    (r"\b(?:diciendo|dicendo|disant|sagend|zeggend|dizendo) (?:que|che|qu'|dass|dat)\s?(?:está|esta|es|è|e|il est"
     r"|elle est|est|es ist|er ist|het is|is)? ?(?:en |in |au |sul |su |auf |op |no |em )?", "saying it is "),
    (r"\b(?:durante|pendant|während|gedurende|per|für|pour|por|para) (?=\d|uno|una|dos|tres|cuatro|cinco|due|tre"
     r"|quattro|cinque|deux|trois|quatre|cinq|zwei|drei|vier|fünf)", "for "),
    # "quando scatta il verde", "cuando se pone en rojo", "quand le feu passe au vert", "wenn die Ampel rot wird" (after
    # the colours above)
    (r"\b(?:quando|cuando|quand|wenn|als|wanneer) (?:(?:il|el|le|la|die|de|het|o|a) (?:semaforo|semáforo|feu|ampel"
     r"|verkeerslicht|luz|luce|sinal) )?(?:scatta|diventa|passa|se pone|se enciende|cambia|passe|devient|wird|springt|wordt"
     r"|ficar|fica|fique)"
     r" ?(?:a |al |en |au |à |auf |il |el |la |le |sul |op )?(green|red|amber)(?: wird| wordt)?\b", r"when the light turns \1"),
    (r"\b(?:ab dem moment,? (?:wo|wenn|als|in dem)|wenn|sobald|als) (?:die )?(?:ampel )?(green|red|amber|rot) (?:wird|ist"
     r"|zeigt)\b", lambda m: f"when the light turns {'red' if m.group(1) == 'rot' else m.group(1)}"),
    (r"\b(?:semaforo|semáforo|feu|ampel|verkeerslicht) (?:a|à|en|bei|in|op|auf) (?=\d)", "traffic light at "),
    (r"(?:\ba partir de|\bà partir de|\ba partire da|\bab|\bvanaf|\bdesde) (?:los |las |la |el |les |le |l'|i |gli |den )?"
     r"(?:t ?= ?)?(?=\d|uno|una|dos|tres|cuatro|cinco|due|tre|quattro|cinque|deux|trois|quatre|cinq|zwei|drei|vier|fünf)",
     "from t = "),
)
# number words of those languages, before a unit ("cinco segundos", "tre secondi", "fünf Sekunden")
FOREIGN_NUMBERS = {"uno": 1, "una": 1, "dos": 2, "due": 2, "deux": 2, "zwei": 2, "tres": 3, "tre": 3, "trois": 3,
                   "drei": 3, "cuatro": 4, "quattro": 4, "quatre": 4, "vier": 4, "cinco": 5, "cinque": 5, "cinq": 5,
                   "fünf": 5, "seis": 6, "sei": 6, "sechs": 6, "siete": 7, "sette": 7, "sieben": 7, "ocho": 8, "otto": 8,
                   "huit": 8, "nueve": 9, "nove": 9, "neuf": 9, "neun": 9, "diez": 10, "dieci": 10, "zehn": 10}
SCRIPTS = (  # (name, inclusive code point ranges)
    ("CJK", ((0x4E00, 0x9FFF), (0x3400, 0x4DBF))),
    ("Japanese kana", ((0x3040, 0x30FF),)),
    ("Hangul", ((0xAC00, 0xD7AF), (0x1100, 0x11FF))),
    ("Cyrillic", ((0x0400, 0x04FF),)),
    ("Greek", ((0x0370, 0x03FF),)),
    ("Arabic", ((0x0600, 0x06FF),)),
    ("Hebrew", ((0x0590, 0x05FF),)),
    ("Devanagari", ((0x0900, 0x097F),)),
    ("Thai", ((0x0E00, 0x0E7F),)),
)

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
}

# Words the typo corrector (intent_text.correct_typos) may correct to, besides every word of the
# patterns above and ENGLISH_WORDS; and words it must leave alone (valid English near a domain word).
TYPO_VOCABULARY = frozenset(
    "where which while what when with without warning warnings collision movement intersection assist "
    "oncoming turn violation before after delayed dropped latency messages message offset transmitting "
    "transmits vehicle vehicles crossing position location speed reported reports timestamps stale lost "
    "arrive arrives arriving late later early signal signals light lights timing phase countdown forward "
    "emergency electronic brake braking braked brakes green amber yellow advisory optimal packets broadcasts broadcast "
    "replayed replaying replays replay test "
    "frozen freezes stuck silent quiet never every seconds second metres meters feet percent degrees "
    "junction approaching approach opposing opposite direction lead leading truck front ahead behind "
    "spoofed shifted wrong delay delays lagging lags jammed missing blocked range reaches reach through "
    "test scenario there their these those this that they then than them from into onto also other "
    "rate rates line lines lane lanes stop stops stopped some same come comes came cross side road roads "
    "sent send sends seen sees show shows shown time times tell told like just only once over under more "
    "less most least fast faster slow slower high higher lower long longer short shorter half quarter third "
    "thinks think believes says said claims claim appears appear reads read data info information "
    "knowledge event events alert alerts notification notifications state states value values".split())

# Fault words among them: a word is corrected into one of these by a letter missed, doubled or swapped
# ("delayd", "lattency", "stcuk"), but by one letter changed only where the two letters are neighbours on the
# keyboard or sound alike ("latensy", "delsy"): other changes turn real words into faults ("stock" -> "stuck",
# "logging" -> "lagging"), and an invented fault is worse than a missed typo, which the unparsed-fault guard
# reports anyway
FAULT_TYPO_TARGETS = frozenset(
    "delayed dropped latency offset stale lost late later frozen freezes stuck silent quiet spoofed shifted wrong "
    "delay delays lagging lags jammed missing blocked".split())
_KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
TYPO_LETTER_PAIRS = frozenset(
    {frozenset((row[i], row[i + 1])) for row in _KEYBOARD_ROWS for i in range(len(row) - 1)}
    | {frozenset((a, b)) for a, b in zip("qwertyuiasdfghjkzxcvbn", "asdfghjkzxcvbnm,", strict=False) if b.isalpha()}
    | {frozenset(p) for p in ("cs", "ck", "sz", "iy", "ae", "ei")})

COMMON_WORDS = frozenset(
    "heads head whose point points react reacts stomps stomp minus heading headings advise advises glide glides "
    "count counts reduce reduces about above across actually again against already although always among another "
    "anything around away back because been being below beside besides between both cannot could does doing done "
    "down during each either else enough even ever first follow follows following further given goes going gone "
    "good great have having here however itself keep keeps kept know known last least left less made make makes "
    "many maybe might much must near need needs next none nothing nowhere often once others ought over own part "
    "perhaps place please quite rather real really right round running same seems several should since still such "
    "sure take takes taken than thing things three through thus together toward towards truth true twice until upon "
    "very want wants well went were whether whole whom will within would write your yours since check checks "
    "runs ran rider riders ride rides drive drives driver drivers still wait waits waiting watch reading fine "
    "route routes rural urban city town towns north south east west plan plans place model mode rain snow night "
    "fog wet dry open opens tend tends tended hold holds roll rolls blow blows went gets give gives gave pass passes passed "
    "along alongside case cases sense moment moments ends ending ended begins begin began starts start started "
    "function functions style styled thanks thank stock stocks stick sticks stack stacks comms stable stability "
    "steady tile tiles scope version versions bother bothers bothered bothering".split())

# (kind, unit regex, factor to SI) — longest alternatives first
UNITS: tuple[tuple[str, str, float], ...] = (
    ("speed", r"km/h|kmph|kmh|kph|km per hour|kilomet(er|re)s? (?:per|an) hour|k'?s an hour", 1 / 3.6),
    ("speed", r"mph|miles (?:per|an) hour", 0.44704),
    ("speed", r"kn|knots?|kts", 0.514444),  # (a sea-minded writer's speed: "making 30 kn")
    ("speed", r"ft/s|fps|feet per second", 0.3048),
    ("accel", r"m/s²|m/s\^2|m/s2|mps2|met(er|re)s? per second squared", 1.0),
    ("speed", r"m/s|mps|met(er|re)s? (?:per|a) second", 1.0),
    ("db", r"db/m|db per met(er|re)", 1.0),
    ("time", r"ms|msec|millisec(ond)?s?", 1e-3),
    ("time", r"decisec(ond)?s?", 0.1),  # ("stamped 5 deciseconds in the past": a bench's tenth-second clock)
    ("time", r"s|secs?|seconds?", 1.0),
    ("time", r"min|mins|minutes?", 60.0),
    ("dist", r"km|kilomet(er|re)s?", 1000.0),
    ("dist", r"m|met(er|re)s?", 1.0),
    ("dist", r"ft|feet|foot", 0.3048),
    ("dist", r"yds?|yards?", 0.9144),
    ("pct", r"%|percent|per cent", 0.01),
    ("angle", r"°|deg|degrees?", 1.0),
)
COUNT_NOUNS = (r"(of (the |its |their )?)?(consecutive |successive |back-to-back |sequential )?(lead |lead's |leader's |leading |crossing "
               r"|oncoming |opposing |braking |relay )?(spat |bsm |map |mapmsg |eebl |signal phase |signal timing "
               r"|phase |status |position |safety |brake |braking |hard-braking |cam |denm |spatem |mapem )?(event )?"
               r"(bsms?|spats?|cams?|denms?|spatems?|mapems?|messages?|msgs?|packets?|updates?|broadcasts?|frames?|beacons?)")
