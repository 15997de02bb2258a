"""When a fault's window opens and how long it lasts, in the offline grammar: anchors ("just before amber",
"40 m before the stop bar", "at the decision point", "after 5 s", "both start at 3 s") and durations ("for
2 s", "until t = 8 s"). Each phrase attaches to the fault that owns it (``intent_fault_draft.owner_of``); called
from ``intent_faults.parse_faults``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lastv2x.core.catalogue import APPLICATIONS, Application
from lastv2x.core.faults import CROSS_GHOST_APPS
from lastv2x.core.spec import AnchorEvent
from services.llm import lexicon as lx
from services.llm.intent_agents import FCW_LEAD_BRAKE_AT_S
from services.llm.intent_fault_draft import STRONG_SEPARATOR, FaultDraft, owner_of
from services.llm.intent_text import BAR, ParseState, Q, agent_for, clean, rx

_PHASE = r"(?P<ph>amber|yellow|red|green)"
_ONSET_OF = r"(?:the |our )?(?:onset of (?:the |our )?|start of (?:the |our )?|beginning of (?:the |our )?)?"


_TURNS = r"(?:(?:light |signal |traffic light )?(?:turns |turning |changes to |changing to |goes |switches to "\
         r"|switching to ))?"


_DECISION = (r"(?:the |its |the ego'?s? |ego'?s? )?(?:(?:left[- ]turn |turn(?:ing)? )decision(?: (?:point|epoch|moment|time))?"
             r"|decision (?:point|pt|epoch|moment|time|distance)|dilemma zone"
             r"|last comfortable stopping point|point of no return)")


# who reaches the decision point or has to decide: the ego, its driver, or the application under test
_DECIDER = (r"(?:we|you|it|the ego|ego|the hv|hv|the car|our car|the driver|the vehicle|(?:the )?app|(?:the )?application"
            r"|(?:the )?system"
            r"|the (?:warning|assist|advisory) (?:app|application|logic|system))")

_REACH = r"(?:the ego )?(?:reaches|enters|arrives at|gets to) the (?:intersection|junction|conflict(?: point| zone)?|stop bar)"


# a phase's onset said as a clause, in any tense: "the yellow comes on", "real red begins", "the amber started",
# "our light comes on green", "the lamp switched to red"
_ONSET_CLAUSE = (r"(?:(?:the|our|its|their) )?(?:(?:real|actual|true) )?(?:"
                 + _PHASE + r"(?: light| phase| signal| aspect)? (?:begins|began|begin|starts|started|start|comes on"
                 r"|came on|come on|appears|appeared|is shown|was shown|lights up|lit up|shows up|kicks in|kicked in"
                 r"|is applied|was applied|goes up|went up)\b"
                 r"|(?:light|signal|traffic light|lamp|signal head)s? (?:turns|turned|turn|become|becomes|became|changes|changed|change|goes"
                 r"|went|go|switches|switched|switch|comes on|came on|come on|flips|flipped|passes|passed|pass)(?: over)?"
                 r"(?: to| on)? " + _PHASE.replace("ph>", "ph2>") + r"\b"
                 # "right when it goes red": nothing but a light turns a colour
                 r"|(?:it|they) (?:turns|turned|goes|went|changes|changed|switches|switched|flips|flipped|passes|passed)"
                 r"(?: over)?(?: to)? " + _PHASE.replace("ph>", "ph4>") + r"\b)")


def _onset_phase(m: re.Match[str]) -> str:
    return next(m.group(g) for g in ("ph", "ph2", "ph3", "ph4") if g in m.groupdict() and m.group(g))


def _same_clause(p: ParseState, faults: list[FaultDraft], m: re.Match[str]) -> bool:
    """Does the phrase ``m`` stand in its owner fault's clause (no "and", "but", "while", ";" between)?"""
    f = owner_of(faults, p, m.start())
    return f is not None and not STRONG_SEPARATOR.search(p.t[min(m.end(), f.start):max(m.end(), f.start)])


def fault_anchors(p: ParseState, app: Application, faults: list[FaultDraft],
                  agents: dict[str, dict[str, Any]] | None = None) -> None:
    def sig(ph: str, offset: float) -> dict[str, Any]:
        return {"kind": "signal_event", "event": lx.ONSET[lx.PHASES[ph]].value, "offset_s": offset}

    def ego_ev(event: AnchorEvent, offset: float, distance: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "ego_event", "event": event.value, "offset_s": offset}
        if distance is not None:
            out["distance_m"] = distance
        return out

    def sign(rel: str) -> float:
        return -1.0 if rel in ("before", "prior to", "ahead of") else 1.0

    def last_of(m: re.Match[str]) -> dict[str, Any] | None:
        """"in the last second of amber": the window that ends at the next onset (amber -> red, green -> amber)."""
        span = p.use(m, "anchor") if m.group("q") else 1.0
        owner = owner_of(faults, p, m.start())
        if owner is not None and owner.duration_s is None:
            owner.duration_s = span
            owner.notes.append(f"duration {span:g} s from {clean(m.group(0))!r}")
        nxt = {"amber": "red", "yellow": "red", "green": "amber"}[m.group("ph")]
        return sig(nxt, -span)

    def lead_brakes(m: re.Match[str]) -> dict[str, Any] | None:
        """"once the lead starts braking": the lead's hard-brake onset, a scenario time (a lead the words make brake
        brakes, at the default onset, when nothing else said when)."""
        # a lead the scene has (FCW, EEBL: always; else one the intent placed, named, not an "it")
        it = m.groupdict().get("it") or m.groupdict().get("it2")
        if agents is None or not (APPLICATIONS[app].follows_lead or ("lead" in agents and not it)):
            return None
        behaviour = agent_for(agents, "lead").setdefault("behaviour", {})
        if behaviour.get("kind") != "hard_brake":
            behaviour.update(kind="hard_brake", at_time_s=FCW_LEAD_BRAKE_AT_S)
            p.note(f"lead.behaviour hard_brake at {FCW_LEAD_BRAKE_AT_S:g} s (a fault starts when the lead brakes: "
                   f"{clean(m.group(0))!r})")
        # an onset left open is t = 0 (Behaviour.at_time_s None: the traffic model brakes from the start); "two seconds
        # after the lead brakes": that much later
        # ("for the first 1.5 s after it brakes" is a duration from the braking, not a lag)
        first = p.has(r"\b(?:(?:the )?(?:first|initial)|for(?: about| roughly| around| approximately| some| ~)?|during|over"
                      r"|lasting) $", p.t[max(0, m.start() - 24):m.start()])
        lag = p.use(m, "anchor", "lag") if m.groupdict().get("lag") and not first else 0.0
        if m.groupdict().get("lag2"):  # "opens 1 s before that brake"
            lag = p.use(m, "anchor", "lag2") * (-1.0 if m.group("rel2") == "before" else 1.0)
        return {"kind": "scenario_time", "offset_s": float(behaviour.get("at_time_s") or 0.0) + lag}

    def for_span(m: re.Match[str]) -> bool:
        """The quantity is a window's length ("for a period of <q3:time> from the start"), not its start."""
        return p.has(r"\bfor (?:a (?:period|duration|span|window|total) of |about |around |roughly |some )?$",
                     p.t[max(0, m.start() - 30):m.start()])

    def between(m: re.Match[str]) -> dict[str, Any] | None:
        """"between t = 5 s and t = 20 s": from the first time, for the span to the second."""
        bare = m.groupdict().get("bare")
        start, end = float(bare) if bare else p.q(m).value, p.n.quantities[int(m.group("q2"))].value
        if not end > start:
            return None
        owner = owner_of(faults, p, m.start())
        if owner is not None and owner.duration_s is None and p.n.quantities[int(m.group("q2"))].used is None:
            p.n.quantities[int(m.group("q2"))].used = "duration"
            owner.duration_s = round(end - start, 6)
            owner.notes.append(f"duration {owner.duration_s:g} s from {clean(m.group(0))!r}")
        return {"kind": "scenario_time", "offset_s": start if bare else p.use(m, "anchor")}

    def crossing_near(m: re.Match[str]) -> dict[str, Any] | None:
        """"once the crossing vehicle gets near the conflict point": IMA/LTA decide on it then (the scene times the
        two to meet there), the ego's decision epoch."""
        return ego_ev(AnchorEvent.DECISION_EPOCH, 0.0) if app in CROSS_GHOST_APPS else None

    rules: list[tuple[str, Callable[[re.Match[str]], dict[str, Any] | None]]] = [
        (_LEAD_BRAKES, lead_brakes),
        # (a clock reading: "delayed between 200 ms and 300 ms" is a range of the magnitude)
        (r"\bbetween t ?= ?" + Q("time") + r" and (?:t ?= ?)?<q(?P<q2>\d+):time>", between),
        # "t=6 s to t=10 s", "from t = 6 s until t = 10 s" (both said as clock readings)
        (r"\b(?:from )?t ?= ?" + Q("time") + r" (?:to|until|till|through) t ?= ?<q(?P<q2>\d+):time>", between),
        # "from 3 to 8 s" (the unit said once, after the second time)
        (r"\b(?:from|between) (?:t ?= ?)?(?P<bare>\d+(?:\.\d+)?) (?:to|until|till|through|and|-|\u2013) (?:t ?= ?)?"
         r"<q(?P<q2>\d+):time>", between),
        (_CROSSING_NEAR, crossing_near),
        (r"\b(?:in|during|for|over|within|throughout) (?:the )?(?:last|final|closing) (?:" + Q("time") + r"|second|moment)"
         r" of (?:the |our )?(?P<ph>amber|yellow|green)\b", last_of),
        # "starting 10 seconds after the run begins"
        # ("for a period of ten seconds from the start of the scenario" is a window from t = 0: its length is a duration)
        (Q("time") + r" (?:after|from) (?:the )?(?:start|beginning|run|scenario|simulation|test)(?: (?:begins|starts|start|began"
                     r"|started|has started|has begun))?\b",
         lambda m: None if for_span(m) else {"kind": "scenario_time", "offset_s": p.use(m, "anchor")}),
        # "for 6 s after green starts", "for ~2 s after the light turns red": the window opens at the onset and
        # the quantity is its duration (read by _durations), not an offset
        (r"\bfor " + _ABOUT + Q("time") + r" (?:right |just )?(?:after|from|since|following) (?:" + _ONSET_CLAUSE + r"|(?:the )?(?:(?:onset"
         r"|start|beginning) of (?:the )?)?(?:(?:real|actual|true) )?" + _PHASE.replace("ph>", "ph3>") + r"\b)", lambda m: sig(_onset_phase(m), 0.0)),
        # "during the first four seconds of green", "in the first 2 s of the red": from the onset, for that long
        (r"\b(?:during|in|for|over|within|throughout) (?:the )?(?:first|opening|initial) " + _ABOUT + Q("time")
         + r" (?:of|into|after) (?:the )?(?:(?:real|actual|true) )?" + _PHASE + r"\b",
         lambda m: sig(m.group("ph"), 0.0)),
        (Q("time") + r" (?P<rel>before|after|prior to|ahead of|into) " + _ONSET_OF + _TURNS + _PHASE + r"\b",
         lambda m: sig(m.group("ph"), sign(m.group("rel")) * p.use(m, "anchor"))),
        (r"(?:just|right|immediately|shortly|moments?|a moment) (?P<rel>before|after) " + _ONSET_OF + _TURNS + _PHASE
         + r"\b", lambda m: sig(m.group("ph"), sign(m.group("rel")) * 0.5)),
        (r"(?P<rel>before|after) (?:the )?(?:onset|start|beginning) of (?:the )?" + _PHASE,
         lambda m: sig(m.group("ph"), sign(m.group("rel")) * 0.5)),
        (r"(?P<rel>before|after) (?:the )?(?:light|signal|traffic light|lamp) (?:turns|changes to|goes|switches to) "
         + _PHASE, lambda m: sig(m.group("ph"), sign(m.group("rel")) * 0.5)),
        (r"(?P<rel>before|after) " + _PHASE + r" (?:onset|begins|starts|phase|comes on)",
         lambda m: sig(m.group("ph"), sign(m.group("rel")) * 0.5)),
        (r"(?:at|on|upon|with|from|since|starting (?:at|from|with)) (?:the )?(?:onset|start|beginning) of (?:the |our )?"
         + _PHASE, lambda m: sig(m.group("ph"), 0.0)),
        # "from the first green on", "from green onwards", "starting with the next red"
        (r"\b(?:from|since|starting (?:at|from|with)) (?:the )?(?:(?:first|next|initial) " + _PHASE + r"\b(?: (?:light"
         r"|phase|signal))?(?: on(?:wards?)?\b)?|" + _PHASE.replace("ph>", "ph2>") + r"(?: (?:light|phase|signal))? "
         r"on(?:wards?)?\b)", lambda m: sig(m.group("ph") or m.group("ph2"), 0.0)),
        (r"(?:when|as|once|the moment|as soon as) (?:the )?(?:light|signal|traffic light|lamp) (?:turns|changes to|goes"
         r"|switches to) " + _PHASE,
         lambda m: sig(m.group("ph"), 0.0)),
        (r"(?:when|as|once) (?:the )?" + _PHASE + r" (?:begins|starts|comes on)", lambda m: sig(m.group("ph"), 0.0)),
        # "red onset", "begin at the red start" (start as a noun)
        (r"\b" + _PHASE + r" (?:onset|start)\b", lambda m: sig(m.group("ph"), 0.0)),
        (r"during (?:the )?(?:whole |entire |full )?" + _PHASE + r"(?: phase| interval| light)?", lambda m: sig(m.group("ph"), 0.5)),
        (Q("dist") + r" (?:before|from|ahead of|short of|upstream of|prior to|out from|in front of) (?:the |our |its "
         r"|their )?" + BAR,
         # (not where a crossing or oncoming car is: "oncoming car at 50 km/h, 45 m from the intersection")
         lambda m: None if _OTHER_CAR_BEFORE.search(p.t[max(0, m.start() - 60):m.start()])
         else ego_ev(AnchorEvent.STOP_BAR_DISTANCE, 0.0, p.use(m, "anchor"))),
        (Q("time") + r" (?P<rel>before|after|prior to) " + _DECISION,
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, sign(m.group("rel")) * p.use(m, "anchor"))),
        (r"(?:just|right|shortly|immediately) (?P<rel>before|after) " + _DECISION,
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, sign(m.group("rel")) * 0.5)),
        (r"(?:at|around|near|by|in|during|from|since|starting (?:at|from)|beginning (?:at|from)|t0 ?= ?|start ?= ?) "
         r"?" + _DECISION,
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # "beginning with the red phase", "starting with the amber"
        (r"\b(?:beginning|starting|begins|starts) with (?:the )?" + _PHASE + r"(?: phase| light| signal| interval)?\b",
         lambda m: sig(m.group("ph"), 0.0)),
        (r"(?:(?:right|just|exactly) )?(?:as|when|once|the moment) " + _DECIDER + r" (?:reach|reaches"
         r"|hit|hits|get to|gets to|arrive at|arrives at|come to|comes to) " + _DECISION,
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        (r"(?:when|as) the ego (?:decides|must decide|makes (?:its|the) (?:stop |go )?decision)",
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # "From the moment of decision until the turn's done", "at the moment of decision"
        (r"\b(?:from|at|in|upon) the (?:very )?(?:moment|instant|point|time) of (?:the )?(?:turn(?:ing)? |stop |go )?"
         r"decision\b", lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # "When the left-turn decision is made", "once the stop/go decision is taken"
        (r"(?:when|as|once|the moment) (?:the |its |the ego'?s? )?(?:left[- ]turn |turn(?:ing)? |stop(?:/| or )go |stop "
         r"|go )?decision (?:is|gets|has been) (?:made|taken)\b", lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # "from the moment the ego starts the turn decision", "when the crossing car is about to reach the decision point"
        (r"(?:when|as|once|the moment|from the moment) (?:the ego|ego|it|we) (?:starts|begins|makes|takes) (?:its |the "
         r"|their )?(?:turn(?:ing)? |stop |go )?decision\b", lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        (r"(?:when|as|once|the moment) (?:the )?(?:crossing |cross |oncoming |opposing )?(?:" + lx.VEHICLE + r"|it)s? "
         r"(?:is )?(?:about to reach|reaches|gets to|nears) (?:the )?" + _DECISION,
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # "SPaT time-to-change reads 2 s short starting at amber"
        (r"\b(?:starting|beginning|from) at (?:the )?" + _PHASE + r"(?: onset| phase| light)?\b",
         lambda m: sig(m.group("ph"), 0.0)),
        # "at 100 metres out, the SPaT goes stale": where the ego is from the stop line
        (r"\bat " + Q("dist") + r" (?:out|away)\b", lambda m: ego_ev(AnchorEvent.STOP_BAR_DISTANCE, 0.0, p.use(m, "anchor"))),
        # a trigger written as a condition ("trigger = ego_dist_to_stopbar <= 60m", "distance to stop line: 50 m")
        (r"\b(?:ego )?(?:dist|distance) (?:to|from) (?:the )?(?:stop ?bar|stop ?line)\s*(?:<=?|=|:|\u2264|of|is)?\s*"
         + Q("dist"), lambda m: ego_ev(AnchorEvent.STOP_BAR_DISTANCE, 0.0, p.use(m, "anchor"))),
        # "right when our car commits to the left turn": the turn decision
        (r"\b(?:when|as|once|the moment) (?:the ego|ego|we|our car|it|the hv|hv) (?:commits?|is committing|has to commit) "
         r"to (?:the |its |our )?(?:left[- ]turn|turn|manoeuvre|maneuver|crossing)\b",
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # "once the ego is within warning range": where the application decides
        (r"\b(?:when|once|as soon as|as|the instant|the moment) (?:the ego|ego|we|our car|it|the hv|hv) (?:(?:(?:is|gets|comes|are"
         r"|get) )?(?:with)?in|enters?|reach(?:es)?) (?:the )?(?:its |the app's )?(?:warning|alert|decision) (?:range|distance|zone)\b",
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # the moment named by what is decided there ("starting right at the warning decision", "at the critical moment")
        (r"\bat the (?:warning|alert|brake|braking|brake warning|critical|crucial|stop(?:/| or )go|turn) (?:decision"
         r"|moment|instant)\b", lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # shorthand for the decision point ("goes dark @ decision pt", "bias_start = at_decision")
        (r"(?:@|\bat)\s?(?:the )?(?:decision(?: (?:point|pt|epoch))?|decision[ _]point)\b",
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # the moment the warning is due ("right when I'm closing in and the warning should go off")
        (r"\b(?:right |just )?(?:when|as|once|the moment) (?:[\w']+ ){0,4}?(?:the )?(?:warning|alert|advisory|app) (?:should|would|is supposed to"
         r"|ought to|has to|must) (?:go off|fire|trigger|kick in|sound|come|warn)\b",
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        # a trigger's setting ("--trigger on:green", "trigger: on amber", "armed on red")
        (r"\b(?:trigger(?:ed)?|arm(?:ed)?)\W{1,4}on\W{1,3}" + _PHASE + r"\b", lambda m: sig(m.group("ph"), 0.0)),
        (r"(?:moment|instant|time|point|when|as) " + _DECIDER + r" (?:has to|have to|must|needs to|need to"
         r"|is about to|are about to|is forced to) (?:decide|choose)", lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        (r"(?:after|once|when|while|though|since) (?:it|the light|the signal)(?: has| had)? (?:already |in fact "
         r"|actually )*(?:turned|changed to"
         r"|gone|switched to|changed from \w+ to) " + _PHASE + r"\b", lambda m: sig(m.group("ph"), 0.0)),
        (r"(?:once|when|as|the moment|as soon as) (?:the )?" + _PHASE + r" (?:light )?(?:begins|starts|comes on|is shown"
         r"|is starting|is beginning|appears)",
         lambda m: sig(m.group("ph"), 0.0)),
        # "from the moment the yellow comes on", "when the amber started", "starting when the amber begin"
        (r"\b(?:when|whenever|as|once|the moment|the instant|the second|as soon as|from when|starting when) "
         + _ONSET_CLAUSE, lambda m: sig(_onset_phase(m), 0.0)),
        (r"\b(?:after|since|following) " + _ONSET_CLAUSE, lambda m: sig(_onset_phase(m), 0.5)),
        # "while our light is red": during that phase
        # ("while the light is red, the feed says green"; not a fault in another clause)
        (r"\b(?:while|whilst|as long as) (?:the |our |its |their )?(?:light|signal|lamp|traffic light)s? (?:is|are"
         r"|shows|still shows) (?:still )?" + _PHASE + r"\b",
         lambda m: sig(m.group("ph"), 0.5) if _same_clause(p, faults, m) else None),
        # "right as the ego gets within 40 metres of the stop line", "closer than 30 m to the junction"
        (r"\b(?:within|inside|closer than|nearer than|less than|at) " + Q("dist") + r" (?:of|from|to|before) (?:the |our "
         r"|its |their )?" + BAR, lambda m: ego_ev(AnchorEvent.STOP_BAR_DISTANCE, 0.0, p.use(m, "anchor"))),
        (Q("time") + r" before " + _REACH,
         lambda m: ego_ev(AnchorEvent.STOP_BAR_DISTANCE, -p.use(m, "anchor"), 0.0)),
        (r"(?:when|as|once) " + _REACH, lambda m: ego_ev(AnchorEvent.STOP_BAR_DISTANCE, 0.0, 0.0)),
        # "from the start", "for the whole run", "throughout the run": from t = 0 (not "3 s from the start")
        # (but "for a period of 10 s from the start": a window of that length from t = 0)
        (r"(?<!:time> )(?:\bfor (?:a (?:period|duration|span|window) of )?<q\d+:time> )?"
         r"\bfrom the (?:very )?(?:start|beginning)(?: of the (?:run|test|scenario|drive|approach))?\b"
         r"|\bfor the (?:whole|entire|full) (?:run|test|scenario|drive|approach)\b|\bthroughout the (?:run|test|scenario"
         r"|drive|approach)\b|\b(?:from )?start to (?:finish|end)\b|\bat any (?:point|time|moment) (?:in|during|of) the "
         r"(?:run|test|scenario|drive)\b|\bthe whole time\b|\bat all times\b",
         lambda m: {"kind": "scenario_time", "offset_s": 0.0} if p.n.sentence_of(m.start()) in fault_sentences else None),
        # (not a following time: "follows at 2 s headway")
        (r"\b(?:starting |beginning |from (?:the )?|at |after |opens at )(?:t ?= ?)?" + Q("time")
         + r"(?! (?:before|after|prior|into|of|delay|late|headway|time gap|gap|following|ago|earlier|old|in the past)\b)",
         lambda m: {"kind": "scenario_time", "offset_s": p.use(m, "anchor")}),
        # "showing up 8 seconds in", "kicking in 12 s in"
        (r"\b(?:showing up|shows up|appearing|appears|starting|starts|kicking in|kicks in|coming in|beginning|turning up) "
         + Q("time") + r" in\b(?! (?:the|a|an|our|its|their|front|total|length|duration|a row)\b)",
         lambda m: {"kind": "scenario_time", "offset_s": p.use(m, "anchor")}),
        # "At amber the SPaT from the RSU locks up": from that onset
        (r"(?:^|(?<=[.;:] ))at (?:the )?" + _PHASE + r"\b(?! (?:light|lights|phase|signal)? ?(?:violation|runner|onset|start|end))",
         lambda m: sig(m.group("ph"), 0.0)),
        # "start=t 9s", "start: 6 s"
        (r"\bstart(?:s|ing)?(?:\s*[=:|]\s*(?:t ?=? ?)?| t ?= ?)" + Q("time"),
         lambda m: {"kind": "scenario_time", "offset_s": p.use(m, "anchor")}),
        # "from 5 s of scenario", "at 4 s of the run"
        (r"\b(?:from|at|starting (?:at|from)|beginning (?:at|from)) (?:the )?" + Q("time") + r" (?:of|in) (?:the )?"
         r"(?:scenario|run|simulation|test|drive)\b", lambda m: {"kind": "scenario_time", "offset_s": p.use(m, "anchor")}),
        (Q("time") + r" into the (?:scenario|run|simulation|test|drive|trip|journey|approach|episode)",
         lambda m: {"kind": "scenario_time", "offset_s": p.use(m, "anchor")}),
    ]
    fault_sentences = {f.sentence for f in faults}
    for pattern, build in rules:
        # a rule's matches in a fault's own sentence first: a run sheet's "00:00:00 ego released" line does not time
        # the fault its "00:00:12 SPaT reports red" line asks for
        for m in sorted(p.finditer(pattern), key=lambda m: p.n.sentence_of(m.start()) not in fault_sentences):
            owner = owner_of(faults, p, m.start())
            if p.n.sentence_of(m.start()) in p.withdrawn:
                continue  # the timing of a fault taken back later
            if (owner is not None and p.n.sentence_of(m.start()) not in fault_sentences
                    and _VEHICLE_EVENT.search(p.n.sentence(p.n.sentence_of(m.start())))
                    and _OWN_TIME.search(p.n.sentence(owner.sentence))):
                continue  # "At t=10 s the lead brakes hard. Just before, at t=9 s, ...": the lead's time, not the fault's
            # "..., both starting when it gets near the intersection": said of every fault, in their own sentence too
            if len(faults) > 1 and _ALL_FAULTS.search(p.t[max(0, m.start() - 25):m.start()]):
                _anchor_all(p, faults, m, build)
                continue
            if owner is None and _ALL_FAULTS.search(p.n.sentence(p.n.sentence_of(m.start()))):
                _anchor_all(p, faults, m, build)  # "Begin both after 5 seconds."
                continue
            if owner is None or owner.anchor is not None:
                continue
            if "q" in m.groupdict() and m.group("q") is not None and not p.free(m):
                continue
            anchor = build(m)
            if anchor is None:
                continue
            # a sentence that opens with its anchor clause ("when the crossing car is about to reach the decision
            # point, have its BSMs report it 2 m/s slower and also 8 m further ahead") times every fault it then asks
            # for, but one said apart ("separately ...", "for the whole run")
            s = p.n.sentence_of(m.start())
            same = [f for f in faults if f.sentence == s]
            # (the comma after the clause, or none when the clause opens the sentence: "LTA: during the left-turn
            # decision the oncoming car's BSM speed reads ..., and its BSMs are also delayed ...")
            opened = len(same) > 1 and all(f.start >= m.end() for f in same) and (
                rx(r"^\s*[,:]").match(p.t[m.end():]) is not None
                or rx(r"^\W*(?:[a-z]{2,6}\s*:\s*)?$").match(p.t[p.n.sentences[s][0]:m.start()]) is not None)
            for f in (same if opened else [owner]):
                if f is not owner and _SAID_APART.search(p.t[max(0, f.start - 40):max(f.start, f.end) + 60]):
                    continue
                if f.anchor is None:
                    f.anchor = dict(anchor)
                    f.notes.append(f"anchor {anchor.get('event', 'scenario_time')} {anchor['offset_s']:+g} s from "
                                   f"{clean(m.group(0))!r}" + (" (opens the sentence of every fault in it)"
                                                               if opened else ""))


    # "over the same window, random loss with P(drop) = 20 %": the window (anchor and length) of the fault before
    for m in p.finditer(r"\b(?:over|in|during|for|within) the same (?:window|period|interval|span|time span)\b"):
        owner = owner_of(faults, p, m.start())
        before = [f for f in faults[:faults.index(owner)] if f.anchor is not None] if owner is not None else []
        if owner is not None and before and owner.anchor == before[-1].anchor and owner.duration_s is None:
            owner.same_window = before[-1]  # (its start already read with the fault before's: "from t+2 ...")
            owner.notes.append(f"duration of the fault before, from {clean(m.group(0))!r}")
            continue
        if owner is None or owner.anchor is not None or not before:
            continue
        owner.anchor = dict(before[-1].anchor or {})
        if owner.duration_s is None:
            owner.same_window = before[-1]  # (its length: read with the durations)
        owner.notes.append(f"anchor and duration of the fault before, from {clean(m.group(0))!r}")
    # "and from the same point every BSM ... arrives 2 s late": the anchor of the fault before
    # ("in the same moment", "simultaneously", "at that moment")
    for m in p.finditer(r"\b(?:from|at|in|starting (?:at|from)|beginning (?:at|from)) (?:the |that )?(?:same|very same) "
                        r"(?:point|moment|time|instant|place|distance|spot)\b|\bsimultaneously\b"
                        r"|\bat (?:that|this) (?:same |very )?(?:moment|time|instant|point)\b"):
        owner = owner_of(faults, p, m.start())
        if owner is None or owner.anchor is not None:
            continue
        before = [f for f in faults[:faults.index(owner)] if f.anchor is not None]
        if before:
            owner.anchor = dict(before[-1].anchor or {})
            owner.notes.append(f"anchor {owner.anchor.get('event', 'scenario_time')} of the fault before, from "
                               f"{clean(m.group(0))!r}")


# "once the lead starts braking", "from the moment the lead vehicle begins braking", "as soon as it starts braking" (it:
# the lead of an application that follows one)
_LEAD_BRAKES = (r"\b(?:when|whenever|once|as soon as|the moment|the instant|as|after|since|from when) (?:the |our )?"
                r"(?:(?:lead(?:ing)?|front)(?: (?:vehicle|car|truck))?|(?:vehicle|car|truck) (?:ahead|in front)"
                r"|truck|van|bus|lorry"
                r"|(?P<it>it|they|he|she)) (?:starts?|begins?"
                r"|started|began) (?:to )?brak\w*|\b(?:when|once|as soon as|the moment|the instant) (?:the |our )?lead(?:ing)?"
                r"(?: (?:vehicle|car|truck))? (?:brakes|is braking|slams on)\b"
                # "for 3 s from the braking", "from the lead's brake onset"
                r"|\b(?:from|at|starting (?:at|with)) (?:the )?(?:lead(?:'s)? )?(?:braking|brake onset|hard brake)\b"
                r"(?!'s|\s+(?:vehicles?|cars?|trucks?|vans?|bus|lorry|lights?|distance|force|level|pedal|one|event)\b)"
                # "two seconds after the lead brakes", "for the first 1.5 s after it brakes", "straight after the brake event"
                r"|(?:<q(?P<lag>\d+):time> |\bstraight |\bright |\bjust )?\bafter (?:the |our )?(?:(?:lead(?:ing)?|front)(?: (?:vehicle"
                r"|car|truck))?|(?P<it2>it|they)|(?:suv|truck|van|car|bus|lorry)) (?:brakes|has braked|braked|starts braking)\b"
                r"|\b(?:straight |right |just )?after the (?:brake|braking) event\b"
                # "Lead brakes hard at T+20 s; from then on re-send its hard-brake messages"
                r"|\blead(?:ing)?(?: (?:vehicle|car|truck))? brakes\b[^.;]{0,40}[;,] (?:and )?(?:from then on|from that "
                r"(?:moment|point) on|from there on)\b"
                # "the fault window opens 1 s before that brake", "starts 2 s after the lead's braking"
                r"|\b(?:opens?|starts?|begins?|kicks? in|comes? on) <q(?P<lag2>\d+):time> (?P<rel2>before|after) (?:that|the|its"
                r"|the lead'?s?) (?:brake|braking|hard brake)(?: event| onset)?\b")
# the clause before a distance names a crossing or oncoming car and not the ego: the distance is that car's
# ("oncoming car at 50 km/h, 45 m from the intersection"; not a fault's clause: "Bump the oncoming pickup's reported speed
# up by 9 mph from 50 m before the stop bar")
_OTHER_CAR_BEFORE = rx(r"\b(?:oncoming|opposing|crossing|cross)\b(?: [\w-]+){0,2}?(?: (?:at|doing|going|traveling|travelling)"
                       r" <q\d+:speed>)?,? (?:about |some |roughly |around )?$")
# "once it gets near the conflict point", "once the crossing vehicle is near", "once it is close to the intersection"
_CROSSING_NEAR = (r"\b(?:when|once|as soon as|as|from the time|from when|from the moment|(?:just |right |shortly )?before) "
                  r"(?:the )?(?:(?:real |actual "
                  r"|true |genuine )?(?:crossing|cross|opposing|oncoming|other)(?: (?:vehicle|car|traffic|truck))?|it|he|she"
                  r"|they|" + lx.VEHICLE + r")"
                  r" (?:(?:is|are|gets?|comes?|draws?|arrives?) (?:near|close|closer)(?: to (?:the )?(?:conflict (?:point"
                  r"|zone|area)|intersection|junction|crossing))?|(?:(?:is|are) )?(?:approach(?:es|ing)?|nears?|nearing) (?:the )?"
                  r"(?:conflict (?:point|zone|area)|intersection|junction|crossing)|(?:(?:is|are) about to )?(?:reach(?:es)?|gets? to"
                  r"|enters?) (?:the )?(?:conflict (?:point|zone|area)|intersection|junction|crossing)"
                  r"|enters? (?:the )?(?:decision|conflict) "
                  r"(?:zone|area|point|range)|(?:is|are|gets?|comes?) within (?:the )?(?:decision|warning|conflict) (?:range"
                  r"|zone|distance|area))\b")


# a fault said apart from an anchor that opens its sentence ("and separately ...", "for the whole run")
_SAID_APART = rx(r"\b(separately|independently|whole (run|test|scenario|drive)|entire (run|test|scenario|drive)"
                 r"|throughout|all the time|from the (start|beginning)|at any (point|time|moment) (in|during|of) the (run|test"
                 r"|scenario|drive)|the whole time|at all times)\b")

# a vehicle's own event, which a time in a sentence without a fault times (``lexicon.HARD_BRAKE``)
_VEHICLE_EVENT = rx(lx.HARD_BRAKE)
_OWN_TIME = rx(r"\b(?:at|from|after|starting|beginning) (?:t ?= ?)?<q\d+:time>|\bt ?= ?<q\d+:time>")

# a sentence of its own that speaks of every fault ("Begin both after 5 seconds.")
_ALL_FAULTS = rx(r"\b(both|all of them|all (?:the |these |those )?(?:faults|effects|degradations|errors)|each of them"
                 r"|each fault|every fault|all \d+|all three|all two)\b")


def _anchor_all(p: ParseState, faults: list[FaultDraft], m: re.Match[str],
                build: Callable[[re.Match[str]], dict[str, Any] | None]) -> None:
    """One anchor for every fault still without one."""
    open_faults = [f for f in faults if f.anchor is None]
    if len(faults) < 2 or not open_faults or ("q" in m.groupdict() and m.group("q") is not None and not p.free(m)):
        return
    anchor = build(m)
    if anchor is None:
        return
    for f in open_faults:
        f.anchor = dict(anchor)
        f.notes.append(f"anchor {anchor.get('event', 'scenario_time')} {anchor['offset_s']:+g} s from "
                       f"{clean(m.group(0))!r} (said of every fault)")


# "for about two seconds", "for roughly 3 s": an approximate duration is still the duration
_ABOUT = r"(?:~ ?|≈ ?)?(?:(?:about|roughly|around|approximately|approx\.?|nearly|almost|some|up to|just over|just under|over|under"\
         r"|a little over|a bit over|at least|at most|maybe|perhaps|circa|ca\.) )?"


# (after the faults' own values: "delayed 200 ms, 5 s each", "... by 0.3s. 8s each, both starting @ braking")
_EACH = r"(?:(?<=, )|(?<=\. )|(?<=\n))" + Q("time") + r" each\b"


def _said_before(p: ParseState, pos: int) -> str:
    """The words of ``pos``'s sentence before it, back to a ";" or a cell border, 60 characters at most ("both
    beginning 4 s into the run and lasting 6 s", "Both from t = 5 s, 10 s long": the "both" is the length's too)."""
    start = max(p.n.sentences[p.n.sentence_of(pos)][0], pos - 60)
    stretch = p.t[start:pos]
    cut = max((m.end() for m in re.finditer(r"[;|]", stretch)), default=0)
    return stretch[cut:]


def fault_durations(p: ParseState, faults: list[FaultDraft]) -> None:
    _durations_said(p, faults)
    for f in faults:  # "over the same window": the length of the fault before
        if f.same_window is not None and f.duration_s is None:
            f.duration_s = f.same_window.duration_s


def _durations_said(p: ParseState, faults: list[FaultDraft]) -> None:
    for pattern in (r"(?:for|lasting|over|during) (?:a |an |the )?(?:period of |window of |span of |duration of "
                    r"|burst of |total of )?(?:the (?:first|next|last|final) )?" + _ABOUT + Q("time"),
                    r"(?:in|within|throughout) the (?:first|opening|initial) " + _ABOUT + Q("time"),
                    Q("time") + r" (?:long|window|episode|burst|outage|blackout|period|gap|silence)\b",
                    # "three seconds of lies", "5 s of silence" (what a fault without a size lasts)
                    Q("time") + r" of (?:lies|lying|falsehoods?|deception|silence|corruption|spoofing|garbage|nonsense)\b",
                    r"(?:window|episode|outage|blackout|burst|silence|period) of " + Q("time"),
                    r"lasts? (?:for )?" + Q("time"), r"(?:until|till) (?:t ?= ?)?" + Q("time"),
                    # a request written as key = value: "dur=2s", "duration: 5 s", "How long: 2.5 s", "dur 3 s"
                    _EACH,  # "delayed 200 ms, 5 s each": every fault's
                    r"\b(?:dur|duration|how[ _]long|length)(?:_s)?['\"]?\s*[=:]?\s*['\"]?(?:about |around |approx\.? "
                    r"|approximately |roughly |~ ?)?" + Q("time"),
                    # "Hold both 5 s.", "hold it for 3 s"
                    r"\bhold\w* (?:both |all |them |it |each )?(?:for )?" + Q("time"),
                    # "please continue 10 seconds", "keep it going for 5 s"
                    r"\b(?:continu\w*|keep\w* (?:it |them )?(?:going|on)) (?:for )?(?:about |around )?" + Q("time"),
                    # "keep it ~6s", "keep it about 4 s"
                    r"\bkeep (?:it|them|that) (?:for )?(?:about |around |roughly |~ ?)" + Q("time"),
                    # a table row's cell holding only a time, after the cell that starts the fault: its length
                    # ("| at left-turn decision | 3 s | pending", "| start: 2 s after amber | 6 s | new")
                    r"\b(?:start\w*|at|from|onset|decision|after|when|trigger)\b[^|.;\n]*\| " + Q("time") + r" ?(?=\||$)",
                    # a start then a length, tersely: "suppress V2 BSM from t=6s, 4s"
                    r"\bfrom (?:t ?= ?)?<q\d+:time>, (?:for )?" + Q("time") + r"(?= *(?:[.;]|$))",
                    # "starting right at the warning decision, approx 2 sec."
                    r"\b(?:starting|beginning) (?:right |just )?(?:at|when|once|from) [^.;,<]{3,40}, (?:for )?(?:approx\.? "
                    r"|approximately |about |around |roughly )?" + Q("time") + r"(?= *(?:[.;]|$))",
                    # "..., same 3 s": as long as the fault before, said again
                    r"\bsame (?:duration |length |window )?(?:of )?" + Q("time") + r"(?= *(?:[.;,)]|$))",
                    # "at decision epoch, 2 s.", "from amber onset, about 3 s"
                    r"\b(?:at|from) (?:the )?(?:[\w-]+ ){0,2}?(?:epoch|point|onset|moment|decision)\b, (?:for )?(?:approx\.? "
                    r"|approximately |about |around |roughly )?" + Q("time") + r"(?= *(?:[.;]|$))"):
        for m in p.finditer(pattern):
            if pattern is _EACH and len(faults) < 2:
                break
            owner = owner_of(faults, p, m.start())
            if len(faults) > 1 and p.free(m) and (pattern is _EACH or _ALL_FAULTS.search(_said_before(p, m.start())
                                                                                       + m.group(0))) \
                    and not pattern.startswith("(?:until"):
                value = p.use(m, "duration")  # "..., both for 5 seconds": every fault's that has none
                for f in faults:
                    if f.duration_s is None:
                        f.duration_s = value
                        f.notes.append(f"duration {value:g} s from {clean(m.group(0))!r} (said of every fault)")
                continue
            if owner is None or owner.duration_s is not None or not p.free(m):
                continue
            if rx(r" (?:longer|shorter|more|less|extra|too)\b").match(p.t, m.end()):
                continue  # "amber will last 2 s longer": a countdown offset, not the fault's duration
            if rx(r"\b(?:reads?|shows?|says) (?:about |around |~ ?)?$").search(p.t[max(0, m.start() - 16):m.start()]):
                continue  # "the countdown reads 6 s long": the offset's size and sign, not the fault's duration
            value = p.use(m, "duration")
            if pattern.startswith("(?:until"):
                start = (owner.anchor or {}).get("offset_s", 0.0) if (owner.anchor or {}).get(
                    "kind", "scenario_time") == "scenario_time" else 0.0
                value = value - start
            if value > 0:
                owner.duration_s = value
                owner.notes.append(f"duration {value:g} s from {clean(m.group(0))!r}")


def chained_windows(p: ParseState, faults: list[FaultDraft]) -> None:
    """"after the delay ends, drop 5 BSMs", "Once that countdown fault ends, drop 3 MAP messages": a fault with no window
    of its own opens when the fault before it (anchor and duration known) closes."""
    for m in p.finditer(r"\b(?:after|once|when|as soon as) (?:the|that|this) (?:[\w-]+ ){0,2}?(?:fault|delay|freeze|drop|loss"
                        r"|outage|offset|replay|window|injection|error) (?:ends|has ended|is over|stops|finishes|expires)\b"):
        owner = owner_of(faults, p, m.start())
        if owner is None or owner.anchor is not None:
            continue
        before = [f for f in faults[:faults.index(owner)] if f.anchor is not None and f.duration_s is not None]
        if before:
            first = before[-1]
            assert first.anchor is not None and first.duration_s is not None
            owner.anchor = dict(first.anchor)
            owner.anchor["offset_s"] = round(float(first.anchor.get("offset_s", 0.0)) + first.duration_s, 6)
            owner.notes.append(f"anchor {owner.anchor.get('event', 'scenario_time')} {owner.anchor['offset_s']:+g} s: "
                               f"when the fault before ends, from {clean(m.group(0))!r}")


__all__ = ["chained_windows", "fault_anchors", "fault_durations"]
