"""The no-silent-drop guard: an independent detector of degradation cues in an intent.

Whatever backend answered (the offline grammar or an LLM), the answer's faults are
compared with the clauses of the intent that *ask* for a fault. A clause asks for one
when it holds a degradation cue (words and patterns a person uses when messages are
lost, late, stale, frozen, silent or wrong: "stops coming", "lags", "2 s old", "off by
8 m", "claims to be going slower", "flipped", "out of range") in a communication
context (messages, SPaT, BSMs, broadcasts, "what the ego knows", a reported field).
The detector shares no cue table with the grammar (``lexicon.FAULT_CUES``), so a gap in the
grammar is not a gap here. It does share the lexicon's tables of words that are never a fault
(``LATENCY_BUDGET_MET``, ``NOT_A_FAULT``, ``APP_OUTPUT_LATE``: a latency budget, a KPI, the
warning itself being late), read on the raw clause: one home for what a run only mentions.

The intent is split into clauses (sentences, semicolons, "and", "but", "while", "then",
"before that", "until then", "separately", ...). A clause that refers back ("before that they
come in 300 ms late") takes its communication context and its stream from the clauses it can
refer to. Faults are accounted per clause: each cue clause needs a fault of its own (a maximum
matching of clauses to answer faults: an operator of the clause's family first, then any
other), on the stream the clause names when the answer gives streams, so one parsed fault never
covers a second fault clause. A cue clause left without a fault becomes a ``parser.unparsed_fault``
WARNING finding naming the clause. The spec is still returned (``lastv2x parse`` exits
non-zero unless ``--allow-partial``; ParseIntent carries the finding in its report), so a
user never runs a healthy scenario believing it is a fault test.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from lastv2x.core.catalogue import operators_in_family
from lastv2x.core.verifier import Finding, Severity
from services.llm import lexicon as lx
from services.llm.intent_text import NEGATED, correct_typos, normalize

CHECK = "parser.unparsed_fault"

_F = re.IGNORECASE
# operator families by the words people use (the catalogue's FaultOperatorInfo.cue_families): resolved when a
# clause is matched, so an operator registered later that declares a family is accepted for its clauses
_LOSS, _LATE, _STALE, _FROZEN, _WRONG = "loss", "late", "stale", "frozen", "wrong"
_NONE = ""  # described, but no operator expresses it

# (family, pattern, needs a communication context in the clause)
_CUES: tuple[tuple[str, str, bool], ...] = (
    (_NONE, r"\bduplicat\w*|out of order|re-?order\w*|(scal|multipl)\w* by|factor of|\b(doubled|halved|tripled)\b"
            r"|\b(arriv\w*|sent|received|delivered|comes?|shows? up) twice\b|\b(two|2|extra) copies\b", True),
    # a forged vehicle (ghost_sender): what it is wrong about is that the sender exists
    (_WRONG, r"\bphantom\b|\bghost[- ]((eebl|bsm|v2x|cam|denm) )?(vehicles?|cars?|trucks?|senders?)\b|\b(non-?existent|fictitious|imaginary"
             r"|forged|spoofed|bogus|fake|pretend|make-believe) (\w+ ){0,1}(vehicles?|cars?|trucks?|senders?)\b|\b(does|do) ?n[o']?t (really )?exist"
             r"|\b(is|are) ?n[o']?t (really )?there\b|\b(pretend\w*|pos(es|ing|ed)) (to be |as )(a |an )?(\w+ ){0,1}"
             r"(vehicles?|cars?|trucks?)\b|\bno (actual|real) (vehicles?|cars?|trucks?) (is )?there\b", False),
    # a forged roadside unit (spoofed_rsu): what it is wrong about is who sends the SPaT
    (_WRONG, r"\b(fake|forged|spoofed|rogue|bogus|counterfeit|impostor|fraudulent|malicious|cloned) (\w+ ){0,1}(rsus?"
             r"|roadside units?|road-side units?)\b|\b(impersonat\w*|masquerad\w*|pretend\w* to be|pos(es|ing|ed) as)\b"
             r"[^.;]{0,30}\b(rsus?|roadside units?|road-side units?)\b|\bnot the (real|genuine) (one|rsu|roadside unit)\b",
     False),
    # messages that were never sent (injection): no operator adds messages; after the forged senders above, so that
    # "inject a phantom car" is the forged vehicle it names
    (_NONE, r"\bfake (?!(rsus?|roadside units?|road-side units?|vehicles?|cars?|trucks?|senders?)\b)(\w+ ){0,2}(alerts?"
            r"|messages?|warnings?|events?|broadcasts?|bsms?|packets?|spats?)\b|\binject\w* (?:(?:fake|false|extra|additional"
            r"|spurious|bogus|made-up|forged) )?(?:\w+ ){0,1}(?:messages?|alerts?|warnings?|events?|broadcasts?|packets?)\b"
            r"|\bghost messages?\b", False),
    # the corruption word binds to the nearest field: no other field noun may stand between them
    (_NONE, r"\b(heading|direction|acceleration|brake status|yaw)\b(?:(?!\b(?:position|location|coordinates|speed"
            r"|velocity|timestamp|phase|countdown|timing)\b)[^.;]){0,40}\b(flip\w*|revers\w*|invert\w*|"
            r"wrong|corrupt\w*|off|garbl\w*|backwards?|mirrored)|\b(flip\w*|revers\w*|invert\w*|corrupt\w*) (the |its |their )?"
            r"(heading|direction|acceleration)", False),
    # the ego's own positioning jammed, its sensors blinded, its bus or software faulted: no message fault expresses
    # them (before the loss words: "jam")
    (_NONE, r"\b(jam|degrad|disturb|spoof|deny|denied)\w* (the )?(ego'?s? )?(own )?(gnss|gps)\b|\b(gnss|gps) (jamm\w*|jammer"
            r"|multipath|interference|outage|denial|degradation)\b"
            r"|\b(rain|fog|snow|glare|dirt|mud|spray)\b[^.;]{0,20}\b(on|over|covering|blinding|degrading|obscuring|affecting)"
            r" (the )?(\w+ )?(camera|lidar|radar|sensor)s?\b"
            r"|\b(cloud|backend|back-end|server|backend server)s?\b[^.;]{0,20}\b(down|outage|offline|unavailable|unreachable"
            r"|crash\w*)\b|\b(camera|lidar|radar)s? (will be |is |are |gets? |got |being )*(blind\w*|blocked|obstructed|covered|dazzled"
            r"|failing|failed)\b|\bjitter\w* (the )?(\w+ ){0,2}(radar|lidar|camera)\b|\b(add|inject)\w* (\w+ ){0,2}(noise|jitter|errors?) (to|on|into)"
            r" (the )?(\w+ ){0,2}(radar|lidar|camera)\b"
            # "blind the ego's front camera with an IR flood"; the weather a config file sets ("rain = heavy", "road =
            # wet_asphalt"; weather said in a scene's prose, "in light rain", is its setting, not a request)
            r"|\b(blind\w*|dazzl\w*|obstruct\w*|cover\w*) (the )?(ego'?s? )?(front |rear |forward |forward[- ]facing )?(camera|lidar"
            r"|radar)s?\b|\b(rain|snow|fog|sleet|hail|weather)\s*(=|:)\s*\w+|\broad( surface)?\s*(=|:)\s*(wet|icy|snow)\w*"
            r"|\b(rain|snow|fog|weather|wet[- ]road) simulation\b|\bsimulat\w* (it|that|this|fog|rain|snow|glare) on the "
            r"(\w+ )?(camera|lidar|radar)s?\b|\b(knock\w* out|disabl\w*|kill\w*|switch\w* off|turn\w* off) (the )?(ego'?s? )?"
            r"(forward |front |rear )?(radar|lidar|camera)s?\b"
            r"|\bcan[- ]?bus (fault|error|failure|corruption)s?\b|\b(fault|error|failure|corruption)s? on the can[- ]?bus\b"
            r"|\bcan[- ]?bus\b[^.;]{0,60}\b(garbl\w*|corrupt\w*|scrambl\w*|attack\w*|spoof\w*|jamm\w*|flood\w*)"
            r"|\b(lag|delay|latency)\w* (on|in|of|to) (the )?(ego'?s? )?(brake|braking|steering|throttle) (actuator|system"
            r"|controller|ecu)s?\b|\b(brake|steering|throttle) (actuator|system|controller|ecu)s? (lag|delay|latency)\b"
            # a road user no scene holds ("a cyclist in the crosswalk")
            r"|\b(add|want|include|put|place|spawn|with) (a |an |some )?(\w+ )?(cyclists?|pedestrians?|bicyclists?|joggers?)\b"
            r"|\b(attack\w*|hack\w*|spell|inject\w*|flood\w*) (on|into|against|onto) (the )?(\S+ ){0,3}?can[- ]?bus\b"
            r"|\b(ota|over-the-air) (software |firmware )?updates?\b|\bfirmware update\w*\b(?! (introduced|caused|fixed))",
     False),
    (_FROZEN, r"\b(blocked|stuck|locked|pinned|held|frozen) (on|at) (the |its |their )?(same|old|last|previous|initial"
              r"|first|identical)\b", False),
    (_LOSS, r"\b(lost|los(e|es|ing)|loss|drop(s|ped|ping)?|discard\w*|missing|vanish\w*|disappear\w*|blocked"
            r"|jamm?\w*|outage|blackout|erased)\b", True),
    (_LOSS, r"\bout of (radio |communication )?range\b", False),
    (_LOSS, r"\b(never|not|don'?t|doesn'?t|fails? to|stops?|stopped|cease\w*) (\w+ ){0,2}?(arriv\w*|reach\w*"
            r"|com(e|es|ing)( in| through)?|get(s|ting)? through|received|heard)\b|\bno (\w+ ){0,2}(messages?|data"
            r"|information|updates?|bsms?|spats?)\b (at all|from|reach|arriv)", False),
    (_LOSS, r"\b(says|sends|transmits|broadcasts) nothing\b|\bnone of\b[^.;]{0,60}?\b(reach\w*|arriv\w*|gets? through"
            r"|makes? it)\b|\b(do|does|did)(n'?t| not) make it\b|\bstops? getting through\b", False),
    (_LOSS, r"\b(switched|turned|powered|shut) (off|down)\b|\b(go|goes|gone|went|going) (dark|offline)\b", True),
    (_LOSS, r"\b(silent|quiet|mute[sd]?|silenced|suppress\w*)\b|\b(never|not|stops?|stopped|ceases?|doesn'?t)"
            r" (\w+ ){0,1}(transmit\w*|broadcast\w*|send\w*)\b", False),
    (_FROZEN, r"\bfr(ee|o)z\w*|\bstuck\b|stops? (to )?(updating|update|changing|change)\b|(repeat|replay|re-?send|keep\w* sending)\w* (\w+ ){0,2}"
              r"(same|old|last|stale)", False),
    (_STALE, r"\b(stale|outdated|out of date|old|older|backdated|in the past)\b", True),
    # ("6 metres behind its true spot" is a position: a distance before "behind" is no lateness)
    (_LATE, r"\b(late|later|early|earlier|delay\w*|postpone\w*|latency|lag\w*|(?<!\dm )(?<!\d m )(?<!metres )(?<!meters )"
            r"(?<!feet )(?<!\dft )(?<!\d ft )(?<!yards )behind|held back|hold(s|ing)? (every |all |the |its |their )?(\w+ ){0,2}?back|after (they|it) should)\b"
            r"|\blonger to (arriv\w*|reach\w*|get (there|through|in)|come( in)?|be delivered)\b", True),
    # the lane map pointing the ego's lane at some other signal group, in whatever words
    (_WRONG, r"\bmap\b[^.;]{0,60}\b(lane|approach)\w*\b[^.;]{0,40}\b(to|with|under|onto|at) [^.;]{0,40}\b(group|head"
             r"|signal|light|arrow)('s|s)?\b", False),
    (_WRONG, r"\bmis-?associat\w*|wrong (signal |lane )?(group|head|signal|lane|phase|association)|scrambl\w*"
             r"|garbl\w*|links? (\w+ ){0,3}to the wrong", False),
    # a lane-to-signal mapping said to be crossed, swapped, mixed up; our lane given another approach's lights
    (_WRONG, r"\b(mapping|association|assignment)\b[^.;]{0,40}\b(crossed|cross-wired|swapped|mixed up|confused"
             r"|reversed|wrong|broken)\b|\b(our|the ego'?s?|ego|my) lane\b[^.;]{0,20}\b(inherits?|gets?|receives?"
             r"|takes?|follows?|is given|obeys?)\b[^.;]{0,40}\b(lights?|signals?|group|heads?|arrows?)\b", False),
    (_WRONG, r"\b(wrong|incorrect\w*|off|offset|shift\w*|skew\w*|bias\w*|error\w*|erroneous|false|fake|spoof\w*"
             r"|corrupt\w*|falsif\w*|tamper\w*|bogus|lies|lying|misreport\w*|(under|over)-?report\w*|flip\w*"
             r"|invert\w*|revers\w*|displac\w*|jumps?|inflat\w*|deflat\w*|exaggerat\w*|(over|under)-?(stat|estimat)\w*)\b"
             r"|\b\d+(\.\d+)? ?(ms|s|secs?|seconds?|milliseconds?) (too )?(short|long)\b", True),
    # a field that "reads green", a position "12 m back from its true place", "lags its true location by 9 m"
    (_WRONG, r"\b(phase|state|status|colou?r|aspect)\b[^.;]{0,25}\b(reads?|reading|shows?|says|reports?|indicates?"
             r"|is set to) (a |an )?(green|red|amber|yellow)\b|\b(back|behind|ahead|forward|away|short|off|out)"
             r" (from|of) (its|their|the) (true|real|actual|correct)\b|\b(lags?|lagging|trails?|trailing|leads?"
             r"|leading) (behind )?(its|their|the) (true|real|actual|correct)\b", True),
    (f"{_WRONG}|{_FROZEN}", r"\bkeeps? (report\w*|say\w*|show\w*|tell\w*|claim\w*|broadcast\w*|send\w*)\b", True),
    (_WRONG, r"\b(higher|lower|faster|slower|further|farther|closer|more|less|longer|shorter|earlier|later)\b"
             r"[^.;]{0,25}? than\b[^.;]{0,30}?\b(real\w*|actual\w*|true|truth|it|its|they|should)\b"
             r"|\btoo (high|low|fast|slow|long|short|early|far)\b|\b(when|while|although|though|after|but) (it|the light|the signal|the phase)('s| is| has)? "
             r"(actually |really |still |already |in fact )*((has )?(turned|changed|gone|switched)( to)? )?"
             r"(red|green|amber|yellow)\b", True),
)

_CONTEXT = re.compile(
    r"\b(messages?|msgs?|packets?|bsms?|spats?|spatems?|mapems?|cams?|denms?|cooperative awareness|map ?data|mapmsg|map|broadcasts?|beacons?|feeds?|data|updates?"
    r"|frames?|information|info|knowledge|transmissions?|transmitted|signals? (timing|data|info\w*)|timing"
    r"|phase|countdown|timestamps?|stamped|reports?|reported|reporting|claims?|says|shows?|shown|appears?"
    r"|appearing|reads|sees|thinks|believes|told|learns|receives?|received|v2v|v2x|radio|warnings?|alerts?"
    r"|notifications?|events?|gps|position|location|speed|heading|coordinates|time-to-change|remaining"
    r"|green will|association|mapping|estimates?|residual|published|end-of-(green|red|amber|yellow))\b", _F)
_HEALTHY = re.compile(r"\b(is|are|stays?|remains?) (fine|healthy|normal|nominal|ok|perfect|clean)\b|\b(radios?"
                      r"|communications?|comms|v2x|messages?|links?) (fine|ok|healthy|working|nominal|clean)\b|\bno (faults?"
                      r"|errors?|degradation)\b|\bhealthy\b|\bpristine\b|\bwithout (any )?(faults?|errors?)\b|"
                      + lx.NO_FAULTS, _F)
_NOT_NOW = re.compile(lx.NOT_NOW, _F)
_HAZARD = re.compile(lx.HAZARD_HEADING, _F)
_PUTS_ASIDE = re.compile(lx.PUTS_ASIDE_PREVIOUS, _F)
_TAKEN_BACK = re.compile(lx.TAKEN_BACK, _F)
_APP_HANDLING = re.compile(lx.APP_OWN_HANDLING, _F)
_LOOKS_LIKE = re.compile(lx.LOOKS_LIKE, _F)
_FORGED_RSU = re.compile(lx.SPOOFED_RSU, _F)
_NOT_COMM = re.compile(r"\bquiet (junction|intersection|road|street|traffic|area|hour|time|night)s?\b"
                       # an email's disclaimer ("If you received it in error, please notify the sender")
                       r"|\breceived (it|this( e-?mail| message)?) in error\b|\bin error,? please (notify|delete|inform)\b"
                       # a stream left out ("leave the MAP alone, only the SPaT: ...", "don't touch the BSMs")
                       r"|\b(leave|leaving|leaves|keep|keeping) (the |our |its )?(bsms?|spats?|mapmsgs?|maps?|eebls?)"
                       r" (alone|untouched|as (it|they) (is|are)|clean)\b|\b(don'?t|do not|never) touch (the |our |its )?"
                       r"(bsms?|spats?|mapmsgs?|maps?|eebls?)\b"
                       # a report's column or counter named by a fault word ("the 'lost' column should read zero")
                       r"|['\"\u2018\u201c]?\b(lost|dropped|drops|missing|late|delayed|stale|frozen|corrupted|suppressed)\b"
                       r"['\"\u2019\u201d]?[- ](packets?[- ]|messages?[- ]|msgs?[- ])?(columns?|counters?|counts?|metrics?"
                       r"|tally|tallies|stats?|statistics?|kpis?|fields? (in|of) the (report|log|summary))\b"
                       # a test procedure's heading ("Fault injection: (a) ... SPaT messages are lost"): the faults are
                       # what follows it, not messages injected
                       r"|\b(fault|error|impairment|degradation)[- ]injection\s*:"
                       r"|" + lx.LATENCY_BUDGET_MET + r"|" + lx.NOT_A_FAULT + r"|" + lx.FAULT_LABEL +
                       # the application's own output late: the outcome a test checks ("whether the alert comes too late")
                       r"|" + lx.APP_OUTPUT_LATE + r"|"
                       # a vehicle's or a driver's own motion and timing: "the lead car drops back", "a lost in thought
                       # driver who reacts 1.5 s late", "the ego's departure is delayed by 2 s"
                       r"\b(drop\w*|fall\w*|fell) (back|behind|away)\b|\blost in thought\b|\b(reacts?|reacting|responds?"
                       r"|responding|departs?|leaves?|sets? off) (\d+(\.\d+)? ?(ms|s|secs?|seconds?|milliseconds?) )?"
                       r"(too |much too )?(late|later)\b|\b(departure|start|launch|take-?off|release)('s)? (is |was |gets "
                       r"|got )?(delayed|late|postponed)\b|\b(arriv\w*|gets? there|reach\w*) (\S+ ){0,3}?(after|before|behind"
                       r"|ahead of|earlier than|later than) (the |our )?(ego|us|we)\b|\b(drops?|dropped|dropping) (its|his|her|their|the) speed\b|\b(brak\w*|arriv\w*|stops?"
                       r"|turns?|decid\w*|reacts?) (too )?late\b|\blate (in|into) the (amber|yellow|green|red)"
                       r"|\blate (yellow|amber|red|green)s?\b|\blag\w* behind (the|a) (car|truck|van|lead)|\bbehind (a |the )?(\w+ )?(truck|lorry|lorries|hgv|trailer|suv|pickup|bus|van|building"
                       r"|car|vehicle|lead|leader)s?\b"
                       # the forged vehicle going away ("how quickly it clears after the ghost disappears")
                       r"|\b(ghost|phantom)\w* (\w+ )?(disappears?|vanish\w*|goes away|is gone)\b"
                       # the fault named as an event ("the car receives SPaT fine before the freeze"): a reference to it
                       r"|\b(before|after|during|until|since|throughout) the (freeze|delay|outage|loss|drop|blackout|attack"
                       r"|fault|injection|replay)\b"
                       # a vehicle behind another ("a tailgating car behind the ego", "a follower tagging along 15 m
                       # behind"): where it drives
                       r"|\b(car|vehicle|truck|van|bus|motorcycle|tailgater|follower)s? (\w+ ){0,2}?behind (the |our )?(ego"
                       r"|us|me)\b|\b(car|vehicle|truck|van|bus|motorcycle|tailgater|follower)s? (\w+ ){0,3}?\d+(\.\d+)? ?(m"
                       r"|metres?|meters?|ft|feet|yards?) behind\b", _F)
_CLAUSE = re.compile(r"(?<=[.;!?])\s+|;\s*|(?<!hundred)(?<!thousand)(?<!phase),?\s+\b(?:and(?! a half)|but"
                     r"|while(?! it('s| is)\b)|whereas|plus|also|then|on top of that|(?:before|after|prior to) th(?:at|is)"
                     r"|until then|afterwards|meanwhile|separately|additionally|in addition)\b,?\s+"
                     r"|,\s+(?=(?:its|their|the|and)\b)", _F)
# a sentence ends at . ! ? or a line break (a bulleted list: "conditions:\n- 12 SPaT lost\n- MAP late")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[.!?]['\"\u2019\u201d])\s+|\s*\n\s*(?:[-*\u2022]\s+|\d+[.)]\s+)?")
# a gloss marker ("on the cross street, i.e. BSMs from a car that isn't there"): what follows restates what came before,
# so it neither ends a sentence nor opens a clause of its own
_GLOSS = re.compile(r"\b(?:i\.\s?e\.|that is|in other words|namely),?\s*", re.IGNORECASE)
_BACK_REFERENCE = re.compile(r"\b(it|its|they|their|them|these|those|ones)\b", _F)
# A stream the clause names outright (not the grammar's table: bare words only, no inference from the app).
_STREAMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("SPAT", re.compile(r"\bspats?\b|\bspatems?\b|signal phase and timing|phase[- ]and[- ]timing", _F)),
    ("MAP", re.compile(r"\bMAP\b|\b(?i:map ?(data|messages?|msgs?|broadcasts?|updates?)|mapmsg|mapems?)\b")),
    # (the application's name alone is no stream: "EEBL from V1", "silent on EEBL" are; "the EEBL test" is not)
    ("EEBL", re.compile(r"\beebl (messages?|events?|warnings?|broadcasts?|alerts?|notifications?)\b|\bdenms?\b"
                        r"|\beebl (from|of|by|sent)\b|\b(on|over|via) (the )?eebl\b(?! (test|run|scenario|case))", _F)),
    ("BSM", re.compile(r"\bbsms?\b|basic safety messages?|\bcams?\b|cooperative awareness", _F)),
)


@dataclass(frozen=True)
class CueClause:
    """A clause of the intent that asks for a fault."""

    text: str
    family: str  # the catalogue's cue families of the words, "|"-joined (loss, late, stale, frozen, wrong; "": none)

    @property
    def operators(self) -> frozenset[str]:
        """The fault operators that express it (empty: none does), from the catalogue's cue families."""
        return frozenset().union(*(operators_in_family(f) for f in self.family.split("|") if f))
    cue: str
    stream: str | None = None  # the stream the clause names, or the one its "they"/"its" refers back to
    sentence: int = -1  # index of its sentence


@dataclass(frozen=True)
class Clause:
    text: str
    sentence: int  # index of its sentence (split at . ! ?)
    context: bool  # names a communication context itself
    stream: str | None  # the one stream it names (None: none, or several)
    back_reference: bool


def names_a_fault(text: str) -> bool:
    """Does ``text`` use a fault word at all (any cue family, context aside: "the IMA speed-offset case")?"""
    return any(re.search(pattern, text, _F) for _, pattern, _ in _CUES)


def healthy(text: str) -> bool:
    """Does the clause say communication is healthy ("which is nominal", "radios fine", "no faults")?"""
    return _HEALTHY.search(text) is not None


def clauses(text: str) -> list[tuple[str, str]]:
    """(clause, its sentence) pairs."""
    return [(c.text, sentence) for c, sentence in _split(text)]


def read_clauses(text: str) -> list[Clause]:
    """The clauses as :func:`detect` reads them (the parser's one-edit typo corrections applied)."""
    return [c for c, _ in _split(correct_typos(text))]


def read_clauses_in_sentences(text: str) -> list[tuple[Clause, str]]:
    """:func:`read_clauses`, each with the sentence it stands in."""
    return _split(correct_typos(text))


_QUOTED = re.compile(r"'((?:[^'\\]|\\.|'(?=[a-z]))*)'" + r'|"((?:[^"\\]|\\.)*)"')


def quoted_clause(finding: Finding) -> str:
    """The clause a ``parser.unparsed_fault`` finding quotes (its first quoted string; "" when none)."""
    m = _QUOTED.search(finding.message)
    return (m.group(1) if m.group(1) is not None else m.group(2)) if m else ""


def _split(text: str) -> list[tuple[Clause, str]]:
    out = []
    # (the application's own handling of a track, "IMA holds last track? or drops it?", is no sender's fault)
    for i, sentence in enumerate(_SENTENCE.split(_APP_HANDLING.sub(" ", _GLOSS.sub("", text)))):
        for part in _CLAUSE.split(sentence):
            part = (part or "").strip(" ,.;:!?")
            if part:
                scrubbed = _NOT_COMM.sub(" ", part)
                named = {name for name, pattern in _STREAMS if pattern.search(scrubbed)}  # (not a stream left out)
                out.append((Clause(part, i, bool(named) or _CONTEXT.search(scrubbed) is not None,  # (a stream named)
                                   named.pop() if len(named) == 1 else None,
                                   _BACK_REFERENCE.search(scrubbed) is not None), sentence))
    return out


_REQUIREMENT = re.compile(lx.ROBUSTNESS_REQUIREMENT, _F)


def within_requirement(sentence: str, clause: str) -> bool:
    """Does the clause start inside what a robustness requirement says must be withstood ("FCW has to tolerate up
    to 300 ms of BSM latency and 10 % loss without missing a warning": its second clause too)?"""
    at = sentence.find(clause)
    return at >= 0 and any(m.start() <= at < m.end() for m in _REQUIREMENT.finditer(sentence))


def detect(text: str) -> list[CueClause]:
    """The clauses of ``text`` that ask for a fault, in order.

    A clause that refers back ("they come in late", "its position is off") takes its communication
    context and its stream from the clauses it can refer to: the earlier clauses of its sentence (across
    semicolons) and of the sentence before, nearest first. The clauses are read with the parser's own
    one-edit typo corrections ("lateny" -> "latency"), so a misspelt fault is not a silent one.
    """
    pairs = _split(correct_typos(text))
    split = [c for c, _ in pairs]
    put_aside = {c.sentence - 1 for c, sentence in pairs if _PUTS_ASIDE.search(sentence)}
    taken_back = [(c.sentence, lx.taken_back_operators(m.group("what"))) for c, _ in pairs
                  for m in _TAKEN_BACK.finditer(c.text)]
    out: list[CueClause] = []
    for i, (clause, sentence) in enumerate(pairs):
        if _HEALTHY.search(clause.text) or _NOT_NOW.search(sentence) or within_requirement(sentence, clause.text) \
                or clause.sentence in put_aside or _HAZARD.search(sentence):
            continue  # healthy, or a sentence about another run or test ("... but this we test in other campaign")
        scrubbed = _NOT_COMM.sub(" ", clause.text)
        context, stream = clause.context, clause.stream
        if clause.back_reference:
            before = [c for c in split[:i] if c.sentence >= clause.sentence - 1][::-1]
            same = [c for c in split if c.sentence == clause.sentence]
            context = context or any(c.context for c in before + same)
            stream = stream or next((c.stream for c in before if c.stream), None)
        for family, pattern, needs_context in _CUES:
            m = re.search(pattern, scrubbed, _F)
            if m and (context or not needs_context) and not _negated(scrubbed, m.start()):
                cue = CueClause(clause.text, family, m.group(0), stream, clause.sentence)
                if not (out and _continues(out[-1], cue, split[i - 1] if i else None, clause)):
                    out.append(cue)
                break
    for said_in, ops in taken_back:  # the clause of a fault taken back later ("Actually, scrap the burst drop")
        names = {op.value for op in ops}
        earlier = [c for c in out if c.sentence < said_in and c.operators & names]
        if earlier:
            out.remove(earlier[-1])
    return out


def taken_back(text: str) -> set[str]:
    """The clauses of ``text`` whose fault a later sentence takes back (``lexicon.TAKEN_BACK``): no fault, and their
    quantities are no settings to read."""
    pairs = _split(correct_typos(text))
    kinds = [(c.sentence, {op.value for op in lx.taken_back_operators(m.group("what"))}) for c, _ in pairs
             for m in _TAKEN_BACK.finditer(c.text)]
    if not kinds:
        return set()
    said = {c.text for c in detect(text)}
    out: set[str] = set()
    for sentence, names in kinds:
        earlier = [c for c, _ in pairs if c.sentence < sentence and c.text not in said and c.text not in out
                   and any(re.search(pattern, _NOT_COMM.sub(" ", c.text), _F) and operators_in_family(family) & names
                           for family, pattern, _ in _CUES if family)]
        if earlier:
            out.add(earlier[-1].text)
    return out


# a clause that starts with a verb phrase (no subject of its own) after "and": the same subject goes on
_VERB_FIRST = re.compile(r"^\s*(it |they |(its|their|the) (messages|data|broadcasts|packets|updates|reports|radio"
                         r"|transmitter|unit) (simply |just )?)?(also |then "
                         r"|still )?(keeps?|stays?|remains?|never|no longer|goes|go|gets?|is|are|stops?|sends?|repeats?"
                         r"|continues?|just)\b", _F)


def _continues(previous: CueClause, cue: CueClause, before: Clause | None, clause: Clause) -> bool:
    """Is ``cue`` the same fault said again ("the feed freezes and keeps repeating the old state", "the radio stays
    quiet and never sends")? Its clause follows the previous cue's clause directly, has no subject of its own
    and names operators of the previous one; or the previous clause announces the fault and a colon opens its
    details ("the residual green time is inflated: ..., the end-of-green estimate is pushed 6 s later")."""
    if before is None or before.text != previous.text or before.sentence != clause.sentence:
        return False
    at = previous.text.lower().find(previous.cue.lower())
    announced = at >= 0 and ":" in previous.text[at + len(previous.cue):]
    return (_VERB_FIRST.match(clause.text) is not None or announced) and bool(cue.operators & previous.operators)


def _negated(text: str, pos: int) -> bool:
    """The parser's own negation rule (``intent_text.NEGATED``) over the 48 characters before ``pos``."""
    return NEGATED.search(text[max(0, pos - 48):pos]) is not None


def unparsed(text: str, operators: Sequence[str], streams: Sequence[str | None] | None = None) -> list[CueClause]:
    """Cue clauses of ``text`` left without a fault of their own among the answer's faults.

    ``operators`` (and, where the answer has them, ``streams``, in the same order) are the answer's faults.
    Each cue clause needs its own fault: one fault never covers two clauses. A fault may cover a clause
    when their streams agree (or either is unknown): one of the clause's operator family first, then any
    other (the answer read the clause as another operator). The pairing is a maximum matching, so a
    clause is reported only when no assignment of the faults covers it.
    """
    cues = detect(text)
    faults = list(zip(operators, streams if streams is not None else [None] * len(operators), strict=True))

    def fits(cue: CueClause, fault: tuple[str, str | None], strict: bool) -> bool:
        op, stream = fault
        if cue.stream is not None and stream is not None and stream != cue.stream:
            return False
        return op in cue.operators if strict else bool(cue.operators)

    owner: dict[int, int] = {}  # fault index -> cue index

    def augment(c: int, strict: bool, seen: set[int]) -> bool:
        for f, fault in enumerate(faults):
            if f in seen or not fits(cues[c], fault, strict):
                continue
            seen.add(f)
            if f not in owner or augment(owner[f], strict, seen):
                owner[f] = c
                return True
        return False

    for strict in (True, False):  # family matches first; the fallback never unseats a covered clause
        for c in range(len(cues)):
            if c not in owner.values():
                augment(c, strict, set())
    covered = set(owner.values())
    return [cue for c, cue in enumerate(cues) if c not in covered
            and not any(_restates(cue, cues[d]) for d in covered)]


def _quantity(text: str) -> bool:
    """Does the clause hold a quantity with a unit, or a count ("5 m/s", "three consecutive messages"; not "IMA-88")?"""
    return bool(normalize(text).quantities)


def _restates(cue: CueClause, other: CueClause) -> bool:
    """Are ``cue`` and ``other`` one fault said twice, in adjacent sentences (or a title and any sentence), one of them
    with nothing of its own (no quantity; the same operators and stream): a heading and its description ("Cross-traffic speed inflated\nDescription: the BSM speed
    field reads 5 m/s higher"), a fault and its gloss ("its OBU never transmits. V2X silence, not a radar dropout.")?"""
    if cue.sentence == other.sentence and any(_LOOKS_LIKE.search(c.text) for c in (cue, other)) \
            and _same_quantities(cue.text, other.text) and bool(cue.operators & other.operators):
        return True  # what the fault looks like, with its own amount ("...; the lead therefore appears 5 m farther away")
    if _FORGED_RSU.search(cue.cue) and _FORGED_RSU.search(other.cue) and (
            not (_quantity(cue.text) and _quantity(other.text)) or _same_quantities(cue.text, other.text)):
        return True  # one forged roadside unit named twice ("rogue roadside unit transmits ...; fake RSU advertising")
    if cue.sentence == other.sentence:
        # in one sentence only an effect in passing that names no stream and no field ("the oncoming car appearing
        # slower than it is, its BSM speed understated by 20 km/h"); "the position is wrong and the speed is off by
        # 5 m/s" stays two faults
        bare = cue if not _quantity(cue.text) else other
        if bare.stream is not None or _FIELD.search(bare.text):
            return False
    near = abs(cue.sentence - other.sentence) <= 1 or any(_heading(c) for c in (cue, other))
    return (near and cue is not other
            and (not (_quantity(cue.text) and _quantity(other.text)) or _same_quantities(cue.text, other.text))
            and bool(cue.operators & other.operators)
            and (cue.stream is None or other.stream is None or cue.stream == other.stream))


def _same_quantities(a: str, b: str) -> bool:
    """Do two clauses state the same quantities ("15 metres further back", "15 m behind its real position")?"""
    def values(text: str) -> set[tuple[str, float]]:
        return {(q.kind, round(q.value, 6)) for q in normalize(text).quantities}
    return values(a) == values(b)


def _heading(cue: CueClause) -> bool:
    """A title: the text's first sentence, short and without a quantity ("RLVW-231 Stale SPaT near stop line",
    a ticket's summary line, with the field line the text's check joins to it: "Type: Test | Priority: High"), which
    the description below it may restate however far down."""
    return (cue.sentence == 0 or _SUMMARY_LINE.match(cue.text) is not None) and not _quantity(cue.text) \
        and len(cue.text.split()) <= 16


# a ticket's summary, title or reason field, however far down ("Bug reproduction request - BUG-5521\nSummary: FCW late warning
# when lead BSM freezes."): the title the steps below restate
_SUMMARY_LINE = re.compile(r"^\W*(?:summary|title|subject|headline|reason|purpose|rationale|motivation)\s*:", re.IGNORECASE)


_FIELD = re.compile(r"\b(positions?|locations?|gps|coordinates|speeds?|velocity|phases?|countdowns?|end[- ]?times?"
                    r"|timestamps?|clocks?|lanes?|signal groups?|headings?|green|red|amber|yellow)\b", re.IGNORECASE)


def findings(text: str, operators: Sequence[str], streams: Sequence[str | None] | None = None) -> list[Finding]:
    """One ``parser.unparsed_fault`` WARNING per cue clause without a fault of its own in the answer."""
    out = []
    for cue in unparsed(text, operators, streams):
        why = ("no fault operator expresses it" if not cue.operators else
               f"expected one of {sorted(cue.operators)}"
               + (f" on {cue.stream}" if cue.stream else ""))
        out.append(Finding(CHECK, Severity.WARNING,
                           f"the intent asks for a fault the spec does not contain: {cue.text!r} "
                           f"(cue {cue.cue!r}; {why}); the spec runs without it",
                           ("faults",)))
    return out


def foreign_findings(text: str, language: str, streams: Sequence[str | None],
                     already: Sequence[Finding] = ()) -> list[Finding]:
    """In a text the offline parser reads only the English words of, one ``parser.unparsed_fault`` WARNING per
    clause that names a message stream no fault of the answer is on ("die MAP die Ego-Spur der falschen
    Signalgruppe zuordnen"), unless another finding quotes it: what it asks of that stream went unread."""
    quoted = [quoted_clause(f).lower() for f in already if f.check == CHECK]
    on = set(streams)
    out = []
    for clause in read_clauses(text):
        named = [name for name, pattern in _STREAMS if pattern.search(clause.text)]
        low = clause.text.lower()
        if not named or all(n in on for n in named) or any(q and (low in q or q in low) for q in quoted):
            continue
        out.append(Finding(CHECK, Severity.WARNING,
                           f"the intent asks for something the spec does not contain: {clause.text!r} (in {language}, "
                           f"of the {'/'.join(named)} stream: only its English words were read); the spec runs without "
                           "it", ("faults",)))
    return out


def problems(found: Sequence[Finding]) -> list[dict[str, object]]:
    """The findings as repair problems for an LLM backend's next attempt."""
    return [{"field": "faults", "description": f.message,
             "hint": "add one fault for that clause (operator, stream, anchor, magnitude with its unit), "
                     "keeping the faults already there"} for f in found]


__all__ = ["CHECK", "Clause", "CueClause", "clauses", "detect", "findings", "foreign_findings", "healthy", "problems",
           "quoted_clause", "read_clauses", "unparsed", "within_requirement"]
