"""The offline grammar's vehicles: the ego and the agents around it (``grammar.parse_text`` calls these).

Maneuvers (who turns), behaviours (a hard brake "at 4 s", a red-light runner, yield / no yield, an
aggressive or cautious profile), the ego's start distance, the gaps to a lead or relay, a platoon
ahead of the ego (``platoon1``, ``platoon2``, ...), an EEBL relay chain at increasing gaps, the
speeds, and FCW's default hazard (a lead braking hard when the intent names no closing lead).
The radio side of the scene is in ``intent_v2x``, the timing (signal plan, arrivals, duration) in
``intent_timing``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from lastv2x.core.catalogue import APPLICATIONS, FAULT_OPERATORS, Application
from lastv2x.core.spec import Agent, FaultOperator
from services.llm import lexicon as lx
from services.llm.intent_fault_draft import owner_of
from services.llm.intent_text import BAR, Mention, ParseState, Q, agent_for, clean, rx, subject


def _maneuvers(p: ParseState, app: Application, roles: list[Mention], ego: dict[str, Any],
               agents: dict[str, dict[str, Any]]) -> None:
    info = APPLICATIONS[app]
    for pattern, turn in ((lx.LEFT, "left"), (lx.RIGHT, "right")):
        for m in p.finditer(pattern):
            subj = subject(p, roles, m.start(), 25)
            if subj and subj.what == "opposing" and app is Application.LTA and turn == "left" and p.has(
                    r"\b(?:during|in|through|for|on|throughout) (?:a |an |the |our |the ego'?s? )?$",
                    p.t[max(0, m.start() - 24):m.start()]):
                subj = None  # "oncoming car goes silent during left turn": the ego's turn, LTA's own, not the car's
            if subj and subj.what in agents:
                agents[subj.what]["maneuver"] = turn
                p.note(f"{subj.what}.maneuver {turn} from {m.group(0)!r}")
            elif "maneuver" not in ego:
                ego["maneuver"] = turn
    want = ego.get("maneuver", "straight")
    if want not in info.ego_maneuvers:
        p.note(f"{app.value} ego goes {'/'.join(info.ego_maneuvers)}; {want!r} replaced")
        ego["maneuver"] = info.ego_maneuvers[0]
    elif "maneuver" in ego:
        p.note(f"ego.maneuver {want}")


STOPPED_LEAD_MPS = 0.5  # "a stopped car ahead": the slowest a vehicle may drive (speeds are > 0), m/s
SLOW_LEAD_MPS = 4.0  # "a slow car ahead", m/s
FCW_LEAD_BRAKE_AT_S = 4.0  # the default hazard's onset: a lead braking hard, as EEBL's default
GHOST_LEAD_BEYOND_M = 40.0  # an FCW/EEBL lead the intent does not place sits this far beyond a phantom vehicle
# where a lead's hard brake was read when no subject was named (-1: EEBL's default), until _lead_hazard pops it
_BRAKE_AT = "__brake_at"


def _said_of_phantom(p: ParseState, faults: Sequence[Any], pos: int) -> bool:
    """Does the phrase at ``pos`` belong to a phantom vehicle's clause (its own sentence's ghost_sender)?"""
    owner = owner_of(list(faults), p, pos)
    return owner is not None and owner.sentence == p.n.sentence_of(pos) \
        and owner.operator == FaultOperator.GHOST_SENDER


def _lead_hazard(p: ParseState, app: Application, agents: dict[str, dict[str, Any]],
                faults: Sequence[Any] = ()) -> bool:
    """FCW warns of a closing lead. A stopped or slow lead when the intent says so; else, unless it gave the
    lead a speed or a behaviour, a lead braking hard (the reference scene's hazard): a lead cruising at
    the ego's speed hosts no mechanism, so no communication fault could ever matter. A phantom vehicle
    (``ghost_sender``) is the hazard itself, for FCW and EEBL alike: its lead cruises, or a real hard brake would
    mask the phantom's (EEBL's default braking lead, and a hard brake said of the phantom, "spoofs hard-braking
    messages from a nonexistent car", are dropped; one the intent gives the lead itself stays). True: a time or a
    deceleration read for the dropped brake was given back (the phantom's window may take it)."""
    phantom_brakes = {id(a): a.get("behaviour", {}).pop(_BRAKE_AT, None) for a in agents.values()}
    if app not in (Application.FCW, Application.EEBL):
        return False
    released = False
    ghosts = [f for f in faults if f.operator == FaultOperator.GHOST_SENDER]
    if ghosts:
        lead = agent_for(agents, "lead")
        at = phantom_brakes.get(id(lead))
        if at is not None and (at < 0 or _said_of_phantom(p, faults, at)):
            lead["behaviour"] = {"kind": "none"}
            p.note("lead.behaviour none (the phantom's forged hard brake is the hazard; a real one would mask it)")
            # the brake's time and deceleration were the phantom's ("a hard-braking event 30 s into the drive"): free
            # for its window
            for q in p.n.quantities:
                if q.used is not None and q.used.startswith("lead.behaviour."):
                    q.used, released = None, True
        far = max(float(f.magnitude if f.magnitude is not None else
                        FAULT_OPERATORS["ghost_sender"].default_magnitude or 0.0) for f in ghosts)
        if "gap_m" not in lead and far > 0.0:  # the phantom must be the nearest vehicle ahead, or it is never seen
            lead["gap_m"] = round(min(300.0, far + GHOST_LEAD_BEYOND_M), 1)
            p.note(f"lead.gap_m {lead['gap_m']:g} ({GHOST_LEAD_BEYOND_M:g} m beyond the phantom vehicle)")
        if "speed_mps" not in lead and not lead.get(SAME_SPEED_KEY) and len(ghosts) == len(faults):
            # ... and it keeps the ego's pace: a slower draw is closed on and warned of in both rollouts alike (unless
            # another fault acts on it: "delay the lead's BSMs" needs a lead to close on)
            lead[SAME_SPEED_KEY] = True
            p.note("lead.speed_mps: the ego's (the phantom is the hazard; a slower lead would be one too)")
        return released
    if app is not Application.FCW:
        return False
    lead = agent_for(agents, "lead")
    if "speed_mps" in lead or (lead.get("behaviour") or {}).get("kind", "none") != "none":
        return False
    for pattern, speed, words in ((lx.STOPPED_LEAD, STOPPED_LEAD_MPS, "stopped"), (lx.SLOW_LEAD, SLOW_LEAD_MPS, "slow")):
        hit = p.has(pattern)
        if hit:
            lead["speed_mps"] = speed
            p.note(f"lead.speed_mps {speed} (a {words} lead) from {clean(hit.group(0))!r}")
            return False
    lead["behaviour"] = {"kind": "hard_brake", "at_time_s": FCW_LEAD_BRAKE_AT_S}
    p.note(f"lead.behaviour hard_brake at {FCW_LEAD_BRAKE_AT_S:g} s (FCW needs a closing lead; the intent named none)")
    return False


_BY_THE_EGO = rx(r" (?:by|of|from) (?:the |our |its )?(?:ego(?:'s)? )?(?:driver|ego)\b")


def _behaviours(p: ParseState, app: Application, roles: list[Mention], ego: dict[str, Any],
                agents: dict[str, dict[str, Any]]) -> None:
    for m in p.finditer(lx.HARD_BRAKE):
        if p.negated(m.start()) or _BY_THE_EGO.match(p.t, m.end()):
            continue  # (the ego's own: "a false alert provokes unnecessary hard braking by the driver")
        subj = subject(p, roles, m.start(), 60)
        role = subj.what if subj and subj.what in ("lead", "cross", "opposing", "relay") else "lead"
        if role == "lead" and not APPLICATIONS[app].follows_lead and not subj:
            continue
        agent = agent_for(agents, role)
        behaviour: dict[str, Any] = agent.setdefault("behaviour", {})
        behaviour["kind"] = "hard_brake"
        # (in the braking's own sentence: "At t=10 s the lead brakes hard. Just before, at t=9 s, ..." and a run
        # sheet's next line, "van brakes hard\nat t = 12 s ...", time other things)
        first, last = p.n.sentences[p.n.sentence_of(m.start())]
        after = rx(r"^\W*(?:(?:\w+\W+){0,3}?(?:at|after|from|around|about|near) (?:t ?= ?)?|t ?= ?)" + Q("time")).search(
            p.t[m.end():min(m.end() + 40, last)])  # ("brakes hard at 12 s", "lead brakes t=10 @ -6 m/s2")
        # "at t = 12 s from scenario start the lead vehicle brakes", a run sheet's "at t = 8.5 s van brakes hard"
        before = rx(r"(?:at|after) (?:t ?= ?)?" + Q("time") + r",? (?:from (?:the )?(?:scenario |run |test )?start,? )?"
                    r"(?:\w+\W+){0,5}$").search(p.t[max(first, m.start() - 75):m.start()])
        into = rx(Q("time") + r" into the (?:scenario|run|simulation|test),? (?:\w+\W+){0,5}$").search(
            p.t[max(0, m.start() - 60):m.start()])
        # "does a panic stop 6 seconds after start", "brakes hard 3 s into the run"
        # "brakes at 6 m/s2 25 s in"
        since = rx(r"^\W*(?:\w+\W+){0,2}?" + Q("time") + r" (?:after (?:the )?(?:start|beginning|launch)\b"
                   r"|into the (?:scenario|run|simulation|test|drive)\b|in\b(?! (?:the|a|an|our|its|their)\b))"
                   ).search(p.t[m.end():m.end() + 50])
        for hit in (after, before, into, since):
            if hit and p.free(hit):
                behaviour["at_time_s"] = p.use(hit, f"{role}.behaviour.at_time_s")
                break
        s = p.n.sentence_of(m.start())
        for d in p.finditer(Q("accel")):
            if p.n.sentence_of(d.start()) == s and p.free(d):
                behaviour["decel_mps2"] = p.use(d, f"{role}.behaviour.decel_mps2")
        p.note(f"{role}.behaviour hard_brake from {m.group(0)!r}")
        if subj is None:
            behaviour[_BRAKE_AT] = m.start()  # whose brake it is, the phantom's or the lead's: _lead_hazard decides
    if app is Application.EEBL:
        lead = agent_for(agents, "lead").setdefault("behaviour", {})
        if lead.get("kind") != "hard_brake":
            lead["kind"] = "hard_brake"
            lead[_BRAKE_AT] = -1
            p.note("lead.behaviour hard_brake (EEBL needs a braking lead)")
        if "at_time_s" not in lead:
            # "the lead brakes at 6 s": the braking time, left free for a fault anchored to it ("goes quiet as it
            # brakes at 4 s"); "lead brakes 9 m/s2 at t=12 s": its deceleration too
            stated = p.has(r"\bbrak\w* (?:(?:at |with )?" + Q("accel", "a") + r" )?(?:at|after) (?:t ?= ?)?" + Q("time"))
            lead["at_time_s"] = p.use(stated, "lead.behaviour.at_time_s") if stated else 4.0
            if stated and stated.group("a") is not None and "decel_mps2" not in lead:
                decel = p.n.quantities[int(stated.group("a"))]
                if decel.used is None:
                    decel.used = "lead.behaviour.decel_mps2"
                    lead["decel_mps2"] = decel.value
                    p.note(f"lead.behaviour.decel_mps2 {decel.value:g} from {decel.raw!r}")
            p.note(f"lead.behaviour.at_time_s {lead['at_time_s']:g} s " + (f"from {clean(stated.group(0))!r}" if stated
                                                                          else "(default)"))
    cross_role = "opposing" if app is Application.LTA else "cross"
    if p.has(lx.RED_RUNNER) and (app in (Application.IMA, Application.LTA) or "cross" in agents):
        role = "cross" if "cross" in agents or app is Application.IMA else cross_role
        agent_for(agents, role).setdefault("behaviour", {})["kind"] = "red_light_runner"
        p.note(f"{role}.behaviour red_light_runner")
    for pattern, kind in ((lx.NO_YIELD, "no_yield"), (lx.YIELD, "yield")):
        hit = p.has(pattern)
        if hit:
            subj = subject(p, roles, hit.start(), 60)
            if subj and subj.what == "ego":
                break
            role = subj.what if subj and subj.what in ("cross", "opposing") else cross_role
            if role in agents:
                b = agents[role].setdefault("behaviour", {})
                b.setdefault("kind", kind)
                p.note(f"{role}.behaviour {kind}")
            break
    for pattern, profile in ((lx.AGGRESSIVE, "aggressive"), (lx.CAUTIOUS, "cautious")):
        for m in p.finditer(pattern):
            subj = subject(p, roles, m.start() + len(m.group(0)) + 30, 60) or subject(p, roles, m.start(), 60)
            target = agents[subj.what] if subj and subj.what in agents else ego
            target["profile"] = profile
            p.note(f"{subj.what if subj and subj.what in agents else 'ego'}.profile {profile}")


_START = (r"(?:\b(?:starts|begins|spawns|is placed|is positioned|initially|approaches from|approaching from|approach from"
          r"|(?:must|should|shall|will|to) start)"
          r"|\b(?:ego|car|vehicle) (?:starting|beginning|placed|positioned|departs|sets off|leaves))")


# the ego's own words up to its start: no other vehicle said on the way ("Ego turning at 15 km/h, oncoming car at 45 km/h
# 80 m away", "ego doing 30 mph cross traffic coming in at 25 mph about 50 meters from the crossing": theirs)
_OWN = (r"(?:(?!\b(?:oncoming|opposing|cross|crossing|lead|leader|relay|follower|other|braking|truck|bus)\b)"
        r"[^.;])")
_BAR_OR_SIG = rf"(?:{BAR}|sig\b|crossing\b)"  # (a whiteboard's "400m to sig")
# the ego approaching ("An ego vehicle approaches", "a GLOSA car approaches"; not an oncoming or crossing car)
_EGO_APPROACHES = (r"\b(?<!oncoming )(?<!opposing )(?<!crossing )(?<!cross )(?<!other )(?<!lead )(?:ego|we|our car|car)\b"
                   r"(?: vehicle)? approach\w* ")


def _start_distance(p: ParseState, ego: dict[str, Any]) -> None:
    # (not a reported position placed some metres off: "placed 30 m back from where the car really is")
    for pattern in (_START + r" (?:\w+ ){0,3}?" + Q("dist") + r"(?! (?:back|behind|forward|ahead|off) (?:from|of) "
                    r"(?:where|its|their|the (?:true|real|actual)))(?! (?:ahead|behind|in front) of (?:said |the |our )?"
                    r"(?:ego|us)\b)(?: away)?(?: (?:before|from|short of|upstream of|"
                    r"ahead of|below) (?:the )?" + BAR + r")?",
                    # a line of its own: "Four hundred metres to the line" (a song's verse)
                    r"(?:^|(?<=[./;\n]))\s*" + Q("dist") + r" (?:out |away )?(?:to|from|before) (?:the )?" + _BAR_OR_SIG,
                    Q("dist") + r" (?:away |out )?(?:from|before|short of|upstream of) (?:the )?" + BAR
                    + r" (?:at the start|initially|at t ?= ?0)",
                    # "RLVW with signal at 300 m", "three signals, first one at two hundred metres": the first stop
                    # bar that far ahead of the ego's start
                    r"\b(?:with (?:the |a )?|the )?(?:signal|traffic light|light|junction|intersection)s? (?:is )?at "
                    + Q("dist") + r"(?! (?:before|after|from|past|beyond|behind|apart|spacing|intervals?)\b)",
                    r"(?<!cross )(?<!crossing )(?<!oncoming )(?<!opposing )(?<!lead )\b(?:dist|distance) to (?:the )?"
                    r"(?:stop[- ]?(?:line|bar)|stopline|signal|light|junction|intersection)\s*(?:is |of |[=:] ?)?" + Q("dist"),
                    # a form's key: "Ego start distance: 100 m to stop line", "start_dist_m = 400", "start dist 250m"
                    r"\b(?:ego )?start(?:ing)? (?:distance|dist|position)\s*(?:is |of |[=:] ?)?" + Q("dist"),
                    # "ego at 45 km/h, 300 m from the signal", "ego ... starting 250 m out", "the car comes at 60 km/h from 400
                    # meters"
                    r"\bego (?:at <q\d+:speed>,? )?" + Q("dist") + r" from the (?:signal|light|stop[- ]?(?:line|bar)|junction"
                    r"|intersection)\b",
                    r"\bstart(?:s|ing)? " + Q("dist") + r" (?:out|away|back)\b(?! (?:from|of)\b)",
                    r"\b(?:the car|ego|the ego|we|our car) (?:comes?|approach\w*|arriv\w*) (?:in )?at <q\d+:speed> from "
                    + Q("dist") + r"(?! (?:away|out|ahead|behind)\b)",
                    # "ego at 60 km/h, one signal 300 m out"
                    r"\b(?:one |a |the |first )?(?:signal|traffic light|light|junction|intersection|stop[- ]?(?:line|bar)) "
                    + Q("dist") + r" (?:out|away|ahead)\b(?! (?:from|of)\b)",
                    r"\bfirst (?:one|1|signal|light|junction|intersection) (?:is )?at " + Q("dist")
                    + r"(?! (?:before|after|from|past|beyond|behind|apart)\b)",
                    # "Ego approaching at 50 kph, about 300 metres out"
                    r"\b(?:ego|we)\b (?:is |are )?approaching\b[^.;]{0,30}?(?:about |roughly |around |~ ?)?" + Q("dist")
                    + r" (?:out|away)\b(?! (?:from|of))",
                    # a terse scene: "ego 60 km/h, 80 m from stop bar", "ego at 40 km/h 150 m before the stop line"
                    # (with its speed: "start: ego 120 m before the stop bar" is when a fault starts)
                    r"\bego (?:at )?<q\d+:speed>,? " + Q("dist") + r" (?:away )?(?:from|before|short of) (?:the )?" + BAR,
                    # "Next run: ego 16 m/s from 220 m to the stop line"
                    r"\bego (?:at )?<q\d+:speed>,? from " + Q("dist") + r" to (?:the )?" + BAR,
                    # "Ego 50 km/h from 250 m" (a handover note's shorthand)
                    r"\bego (?:at )?<q\d+:speed>,? from " + Q("dist") + r"(?! (?:ahead|behind|away|off|in front|of|to)\b)",
                    # "here comes the ego down the approach at 50 kph, 150 metres to the stop line"
                    r"\bego\b" + _OWN + r"{0,50}?<q\d+:speed>,? " + Q("dist") + r" (?:to|from|before) (?:the )?stop[- ]?(?:line|bar)\b",
                    # "ego at 55 km/h starting 180 m before the stop line", "beginning 130 m from the stop line", "opening
                    # 350 m from the light", "starting some 50 m short of the junction", "150 metres back from the line"
                    # (said of the ego: "Beginning 40 m before the stop line the RSU keeps sending ..." times a fault)
                    # (not another car's: "cross car 12 m/s starting 50 m from the junction")
                    r"(?:\b(?:ego|(?<!cross )(?<!crossing )(?<!oncoming )(?<!opposing )(?<!lead )(?<!relay )(?:car|vehicle)|we)\b"
                    r"|(?<!cross car )(?<!crossing car )(?<!oncoming car )(?<!cross vehicle )<q\d+:speed>)" + _OWN
                    + r"{0,60}?\b(?:starting|beginning|opening|spawning|(?:shall |will |should |to |must |and )(?:start|begin))(?: out)? "
                    r"(?:some |about |roughly |around |~ ?)?['\"\u2018\u201c]?" + Q("dist")
                    + r"['\"\u2019\u201d]? (?:back |out |away )?(?:from|before|short of|back of) (?:the )?" + _BAR_OR_SIG,
                    # "An ego vehicle approaches an unsignalised junction at 14 m/s from 100 m"
                    _EGO_APPROACHES + r"(?:\w+ ){0,3}?at <q\d+:speed> from " + Q("dist")
                    + r"(?! (?:ahead|behind|out|away|off)\b)",
                    # "a GLOSA car approaches at 35 mph from 220 metres out" (the ego's: not "an oncoming sedan approaches
                    # at 50 km/h from 60 m", said back)
                    _EGO_APPROACHES + r"at <q\d+:speed> from " + Q("dist") + r" (?:out|away)\b(?! (?:from|of)\b)",
                    # "Ego crawling toward the junction at 25 km/h, 45 metres out", "ego 60kmh, 400m to sig"
                    # ("ego at 12 m/s and 60 m from the junction", "Ego 50 km/h, 200 m out from the light")
                    r"\bego\b" + _OWN + r"{0,50}?<q\d+:speed>(?:,| and)? (?:about |some |roughly )?" + Q("dist")
                    + r" (?:(?:out |away )?(?:to|from) (?:the )?" + _BAR_OR_SIG + r"|out|away)(?! (?:from|of)\b)",
                    # "Ego go with 11 m/s and is 45 m to stop line at start", "the ego sits 60 m from the stop bar" (not a
                    # trigger's "when the ego is 30 m from the stop bar": "is" only with the start said)
                    r"\bego\b" + _OWN + r"{0,50}?\b(?:is (?=[^.;\n]{0,40}\b(?:at (?:the )?start|initially|at t ?= ?0)\b)"
                    r"|sits |stands |waits )(?:about |some |roughly )?" + Q("dist")
                    + r" (?:out |away )?(?:to|from|before|short of) (?:the )?" + _BAR_OR_SIG):
        for m in p.finditer(pattern):
            if p.free(m) and "(quoted)" not in p.t[p.n.sentences[p.n.sentence_of(m.start())][0]:m.start()]:
                ego["start_distance_m"] = p.use(m, "ego.start_distance_m")
                p.note(f"ego.start_distance_m {ego['start_distance_m']} from {m.group(0)!r}")
                return


# a relay chain with no gap in the text: the relay this far ahead, the lead twice as far (increasing gaps)
CHAIN_RELAY_GAP_M = 30.0
CHAIN_OUT_OF_RANGE = 1.5  # with a radio range in the text: the lead this many ranges ahead (the relay is needed)


PLATOON_SPACING_M = 20.0  # a platoon with no spacing in the text: this far apart
PLATOON_MAX_AHEAD = 15  # vehicles ahead of the ego (the spec's agent cap is 16)


def _platoon(p: ParseState, agents: dict[str, dict[str, Any]], v2x: dict[str, Any]) -> None:
    """A platoon ahead of the ego at increasing gaps: "a platoon of N vehicles" (the ego the last of them)
    or "braking N cars ahead (in a platoon)"; the front one is the lead, those between it and the ego
    are ``platoon1``, ``platoon2``, ... (relays when EEBL is rebroadcast, else leads), evenly spaced by
    the spacing the text gives ("20 m apart"), else from the lead's gap, else 20 m apart."""
    m = p.has(r"platoon of (?P<n>\d+) (?:vehicles|cars|trucks)")
    ahead = int(m.group("n")) - 1 if m else None
    if ahead is None:
        # "braking 3 cars ahead in a platoon", "the car two vehicles ahead": the vehicles between are traffic too,
        # unless the text names the one between itself ("the middle car relays": a relay chain, _chain's)
        m = p.has(r"(?P<n>\d+) (?:vehicles|cars|trucks) (?:ahead|in front|up front)(?: of (?:the ego|us|me|our car))?"
                  r"(?P<platoon> in (?:a|the) platoon)?")
        ahead = int(m.group("n")) if m and (m.group("platoon") or "relay" not in agents) else None
    if ahead is None or ahead < 2 or "lead" not in agents:
        return
    ahead = min(ahead, PLATOON_MAX_AHEAD)
    spacing = None
    for pattern in (Q("dist") + r" (?:apart|spacing|between (?:them|vehicles|cars|each))",
                    r"(?:spacing|spaced|inter-?vehicle (?:gap|distance))(?: of| at| by)? " + Q("dist")):
        for ms in p.finditer(pattern):
            if p.free(ms):
                spacing = p.use(ms, "platoon spacing")
                break
        if spacing is not None:
            break
    lead = agents["lead"]
    if spacing is None:
        spacing = round(lead["gap_m"] / ahead, 1) if "gap_m" in lead else PLATOON_SPACING_M
    spacing = max(5.0, spacing)
    role = "relay" if v2x.get("eebl_rebroadcast") else "lead"
    agents.pop("relay", None)
    for k in range(1, ahead):
        agents[f"platoon{k}"] = {"id": f"platoon{k}", "role": role, "gap_m": round(min(300.0, k * spacing), 1)}
    lead["gap_m"] = round(min(300.0, ahead * spacing), 1)
    p.note(f"platoon: {ahead} vehicles ahead {spacing:g} m apart, lead.gap_m {lead['gap_m']:g}")


def _chain(p: ParseState, agents: dict[str, dict[str, Any]], v2x: dict[str, Any]) -> None:
    """An EEBL relay chain (lead, relay, ego) at increasing gaps along the route, from the gaps and the
    range the text gives: a missing gap is placed from the other (relay half-way to the lead, lead twice
    the relay's), both missing from the radio range (lead beyond it, so the relay is needed) or else
    at 30 / 60 m."""
    if "lead" not in agents or "relay" not in agents:
        return
    lead, relay = agents["lead"], agents["relay"]
    lg, rg = lead.get("gap_m"), relay.get("gap_m")
    rng = v2x.get("channel", {}).get("range_m")
    if lg is None and rg is None:
        lg = min(300.0, round(CHAIN_OUT_OF_RANGE * rng, 1)) if rng else 2 * CHAIN_RELAY_GAP_M
        rg = max(5.0, round(lg / 2, 1))
        why = f"beyond the {rng:g} m range" if rng else "default chain"
    elif lg is None:
        assert rg is not None  # (both None is the first branch)
        lg = min(300.0, 2 * rg)
        why = "twice the relay's gap"
    elif rg is None:
        rg = max(5.0, round(lg / 2, 1))
        why = "relay half-way"
    else:
        if lg <= rg:
            p.note(f"relay chain: lead gap {lg:g} m is not beyond the relay's {rg:g} m")
        return
    lead["gap_m"], relay["gap_m"] = lg, rg
    p.note(f"relay chain: relay.gap_m {rg:g}, lead.gap_m {lg:g} ({why})")


def _follower_gap(p: ParseState, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> None:
    """A follower's distance behind the ego: the first free distance after its mention in the sentence ("a
    tailgater 8 m behind", "followed closely by a van at 12 m"); before the lead's gap patterns take it. A
    tailgater whose distance the words leave open follows :data:`lexicon.TAILGATER_GAP_M` behind (the agents'
    default gap, 30 m, is two seconds: not tailgating)."""
    if "follower" not in agents:
        return
    _stated_follower_gap(p, roles, agents)
    tailgates = any(m.what == "follower" and p.has(lx.TAILGATING, p.t[m.start:m.end]) for m in roles)
    if "gap_m" not in agents["follower"] and tailgates:
        agents["follower"]["gap_m"] = lx.TAILGATER_GAP_M
        p.note(f"follower.gap_m {lx.TAILGATER_GAP_M:g}: a tailgater's (no distance stated)")


def _stated_follower_gap(p: ParseState, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> None:
    for mention in roles:
        if mention.what != "follower":
            continue
        # from its start: the distance may stand inside the mention ("a motorcycle riding 10 m behind us")
        hit = rx(r"^[^.;]{0,80}?" + Q("dist") + r"(?! (?:ahead|in front)\b)").search(p.t[mention.start:])
        if hit is None:
            continue
        m = rx(Q("dist")).search(p.t, mention.start + hit.start(), mention.start + hit.end())
        if m is not None and p.free(m):
            agents["follower"]["gap_m"] = p.use(m, "follower.gap_m")
            p.note(f"follower.gap_m {agents['follower']['gap_m']} from {clean(m.group(0))!r}")
            return


# a quantity said as a bound or a tolerance ("from a vehicle \u2264 300 m ahead", "at most 40 m", "jitters \u00b14 km/h"): what
# a requirement allows or a run showed, never a vehicle's gap or speed
_BOUND_BEFORE = rx(r"(?:\u2264|\u2265|(?<!\w)<=?|(?<!\w)>=?|\u00b1|\+/-|\+-|\bup to|\bat most|\bno more than|\bnot more than)\s*$")


# the application's own words quoted ("the advisory says 'hold 38 mph, you'll make the green'"): its output, not a speed
# of the scene
_QUOTED_OUTPUT = rx(r"\b(?:says|reads|shows|displays|advises|tells (?:you|us|the driver)|suggests)\s+['\"\u2018\u201c][^'\"\u2019\u201d]*$")


def _a_bound(p: ParseState, m: re.Match[str]) -> bool:
    """A bound or a tolerance said with the quantity, or the application's own words quoted around it."""
    return _BOUND_BEFORE.search(p.t[max(0, m.start() - 16):m.start()]) is not None \
        or _QUOTED_OUTPUT.search(p.t[max(0, m.start() - 60):m.start()]) is not None


# a lead's gap said as a time ("follows at 2 s headway", "a time gap of 1.5 s"): the grammar turns it into metres at the
# ego's speed once that is known (HEADWAY_KEY holds the seconds and the words until then)
HEADWAY_KEY = "__headway_s"
# the spec's lower bound of an agent's gap_m (read from the spec, one home)
SMALLEST_GAP_M = next(float(m.ge) for m in Agent.model_fields["gap_m"].metadata if hasattr(m, "ge"))
_HEADWAY = (r"(?:at |with )?(?:an? )?" + Q("time") + r" (?:time )?(?:headway|time gap|following gap|ahead|ahd"
            r"|gap (?:in front|ahead))\b"
            r"|\b(?:time )?(?:headway|time gap)(?: of| is| =)? " + Q("time", "q2"))


# a crossing or oncoming car's distance to the conflict point ("cross veh 35 km/h, 45 m from conflict pt", "Oncoming at 45
# km/h, 80 m away"): the spec times such a car by its arrival there, so the grammar turns the distance into that
# arrival (or places the ego to meet it) once the speeds are known; CONFLICT_DISTANCE_KEY holds (metres, words) until then
CONFLICT_DISTANCE_KEY = "__conflict_distance"
_CONFLICT_DISTANCE = (Q("dist") + r" (?:(?:out|away|off)\b(?! (?:from|of)\b)|(?:(?:out |away )?from|to|before|short of) (?:the )?"
                      r"(?:conflict(?: point| pt| zone| area)?|crossing|junction(?: box)?|intersection|box|stop ?line"
                      r"|stop ?bar)\b|gap\b|(?:ahead|in front)(?: of (?:us|the ego|ego))?\b(?! of))",
                      # a matrix's "cross_dist_to_junction=[40 m]"
                      r"\b(?:dist|distance) to (?:the )?(?:conflict(?: point| pt| zone)?|junction|intersection|crossing)"
                      r"\s*(?:is |of |[=:] ?)?" + Q("dist"),
                      # a matrix's "crossing vehicle gap 55 m"
                      r"\b(?:gap|distance|dist)\s*(?:is |of |[=:] ?)?" + Q("dist"),
                      # "the oncoming car approaches at 50 km/h from 75 m"
                      r"\b(?:approach\w*|coming|comes)\b[^.;,]{0,30}? from " + Q("dist") + r"(?![ -](?:ahead|behind|before|past"
                      r"|of|from|to)\b)",
                      # "oncoming 55 km/h at 65 m"
                      r"\bat (?:about |some |roughly |around )?" + Q("dist") + r"(?![ -](?:ahead|behind|from|before|of"
                      r"|past|beyond|in|into|out|away|further|farther|closer|nearer|back|forward)\b)")
# (a window's start or end said by where the car is; not a question's scene: "Does IMA still work when the cross vehicle
# is 20 meters from the conflict point?")
_WHEN_THERE = rx(r"\b(?:(?:from|starting|beginning|begins?|starts?|opens?) (?:when|once|as soon as|the moment)|until|till"
                 r"|by the time)\b[^.;,]{0,40}$")
# (a message "puts" a car somewhere; the writer's "put the oncoming vehicle 110 m out" places the car itself)
_REPORTED_PLACE = rx(r"\b(?:positions?|locations?|gps|placed|shown|puts|reported|reports|appears?|claims?|says|broadcasts?"
                     r"|offset|shifted|displaced)\b[^.;]{0,40}$")


def _conflict_distances(p: ParseState, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> None:
    for m in (m for pattern in _CONFLICT_DISTANCE for m in p.finditer(pattern)):
        if not p.free(m) or _a_bound(p, m):
            continue
        subj = subject(p, roles, m.start(), 60)
        if subj is None or subj.what not in ("cross", "opposing") or subj.what not in agents:
            continue
        if _REPORTED_PLACE.search(p.t[max(0, m.start() - 60):m.start()]):
            continue  # "its reported position 8 m ahead": a position offset
        if _WHEN_THERE.search(p.t[max(0, m.start() - 50):m.start()]):
            continue  # "stamped 2 s in the past from when it is 60 m from the conflict point": a moment, not its start
        first = p.n.sentences[p.n.sentence_of(m.start())][0]
        if p.has(lx.GHOST_VEHICLE, p.t[max(first, m.start() - 100):m.start()]):
            continue  # "a ghost crossing car 20 m ahead of the ego" places the forged vehicle
        agent = agents[subj.what]
        if CONFLICT_DISTANCE_KEY in agent:
            continue
        words = clean(p.t[subj.start:m.end()])
        agent[CONFLICT_DISTANCE_KEY] = (p.use(m, f"{subj.what}.arrival_offset_s"), words)


def _gaps(p: ParseState, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> None:
    _follower_gap(p, roles, agents)
    m = p.has(_HEADWAY)
    group = "q" if m is not None and m.group("q") is not None else "q2"
    if m and p.free(m, group) and "lead" in agents:
        agents["lead"][HEADWAY_KEY] = (p.use(m, "lead.gap_m", group), clean(m.group(0)))
        p.note(f"lead headway {agents['lead'][HEADWAY_KEY][0]:g} s from {clean(m.group(0))!r}")
    # "puts it 9 m ahead of where it actually is" is a position offset, not a gap
    for pattern in (Q("dist") + r" (?:ahead|in front|gap|headway)(?! of (?:where|its|their|the (?:true|real|actual)|true"
                    r"|truth|reality|actual|real)\b)",
                    r"(?:gap|headway|following distance|distance)(?:(?: of| is|:| =| to the lead(?: vehicle)?)? |\s?[=:]\s?)"
                    + Q("dist"),
                    # "the red hatchback leading by 40 metres"
                    r"\b(?:leading|ahead|in front) (?:of (?:us|the ego|ego) )?by " + Q("dist"),
                    # "a red SUV way up ahead, 120 m", "a truck up ahead -- 90 metres", "lead car up ahead at 80 metres"
                    r"\b(?:up |far |way up |further )?ahead(?:,| --| -| \u2014|:| at) (?:about |some |roughly |around )?"
                    + Q("dist"),
                    # "at 90 km/h, 40 m behind a truck": the ego follows the lead at that gap
                    Q("dist") + r" behind (?:a |the |that |this |our |its )?(?:\w+ )?(?:lead|leader|truck|car|vehicle|van"
                                r"|bus|lorry)\b",
                    # "the ego tailgates the lead at 10 m", "follows the truck by 15 m": the ego's gap to its lead
                    r"(?:follow\w*|tailgat\w*|trail\w*) (?:the |a |its |our )?(?:\w+ )?(?:lead|leader|truck|car|vehicle|van"
                    r"|bus|lorry)(?: vehicle)? (?:at|by|with a gap of) " + Q("dist") + r"(?! (?:behind|back)\b)",
                    # "the lead slams on the brakes at 40 m": the gap the braking starts at
                    r"(?:brak\w*|brakes) (?:hard |sharply |suddenly )?at " + Q("dist") + r"(?! (?:from|before|past|after|short of)\b)"):
        for m in p.finditer(pattern):
            if not p.free(m) or _a_bound(p, m):
                continue
            if " behind " in m.group(0) and p.has(r"\b(positions?|locations?|gps|placed|shown|puts?|reported|reports"
                                                  r"|appears?|claims?|says|broadcasts?)\b[^.;]{0,40}$",
                                                  p.t[max(0, m.start() - 60):m.start()]):
                continue  # "its reported position 9 m behind the truck" is a position offset, not a gap
            first = p.n.sentences[p.n.sentence_of(m.start())][0]
            if p.has(lx.GHOST_VEHICLE, p.t[max(first, m.start() - 100):m.start()]):
                continue  # "a phantom car stopped 30 m ahead" places the forged vehicle (ghost_sender), not the lead
            subj = subject(p, roles, m.start(), 60)
            role = subj.what if subj and subj.what in ("lead", "relay") else "lead"
            if role not in agents:
                continue
            agents[role]["gap_m"] = p.use(m, f"{role}.gap_m")
            p.note(f"{role}.gap_m {agents[role]['gap_m']} from {clean(m.group(0))!r}")
    _conflict_distances(p, roles, agents)


# an expected outcome's line ("expect: advisory within 45-55 km/h band", "Pass: ...", "KPI: advisory accuracy ±2
# km/h"); not an "AC:" line, which often
# sets the scene ("AC: ego at 50 km/h passes all 4 lights")
_CRITERION = rx(r"^\W*(?:expect(?:ed|ation)?s?|pass(?:ing)?|success|kpis?)\b[\w ]{0,20}:")


# an agent said to drive at the ego's speed ("cruising at the same speed as us", "at matching speed", "keeping pace with
# us"; not "repeating the same speed", a frozen broadcast): the grammar gives it the ego's speed once that is known (the
# key marks it until then)
SAME_SPEED_KEY = "__same_speed"
_SAME_SPEED = (r"\b(?:at|doing|holding|going|driving at|travell?ing at|cruising at|keeps?|keeping) (?:the |a )?(?:same"
               r"|matching|equal|identical) (?:speed|spd|pace|velocity)\b(?! (?:as|like) (?:the |a |its |their )?(?!us\b"
               r"|ego\b|ours\b|we\b)\w)"
               r"|\b(?:same|matching) (?:speed|spd|pace) as (?:us|the ego|ego|ours|we)\b"
               r"|\b(?:matching|keeping pace with|keeps pace with) (?:us|the ego|our speed|the ego's speed)\b")


def _same_speeds(p: ParseState, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> None:
    """Mark the agents said to keep the ego's speed (``SAME_SPEED_KEY``); a speed stated for them wins."""
    for m in p.finditer(_SAME_SPEED):
        subj = subject(p, roles, m.start(), 80)
        if subj is None or subj.what not in agents or p.negated(m.start()):
            continue
        agents[subj.what][SAME_SPEED_KEY] = True
        p.note(f"{subj.what}.speed_mps: the ego's, from {clean(m.group(0))!r}")


# an agent's speed said against the ego's ("10 m/s slower than us"): the grammar adds it to the ego's once that is known
RELATIVE_SPEED_KEY = "__relative_speed_mps"
_RELATIVE_SPEED = Q("speed") + r" (?P<way>slower|faster) than (?:us|the ego|ego|we are|our car|ours)\b"


def _relative_speeds(p: ParseState, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> None:
    for m in p.finditer(_RELATIVE_SPEED):
        subj = subject(p, roles, m.start(), 80)
        if subj is None or subj.what not in agents or not p.free(m):
            continue
        delta = p.use(m, f"{subj.what}.speed_mps")
        agents[subj.what][RELATIVE_SPEED_KEY] = -delta if m.group("way") == "slower" else delta
        p.note(f"{subj.what}.speed_mps: the ego's {'-' if m.group('way') == 'slower' else '+'} {delta:g}, from "
               f"{clean(m.group(0))!r}")


# one speed said of every vehicle of a sentence ("relay car 30 m ahead between us and the lead, all at 25 m/s")
_ALL_AT = (r"\b(?:all|both|everyone|each)(?: of (?:us|them))? (?:at|doing|travell?ing at|moving at|driving at|cruising at) "
           + Q("speed"))


def _all_at(p: ParseState, roles: list[Mention], ego: dict[str, Any], agents: dict[str, dict[str, Any]]) -> None:
    for m in p.finditer(_ALL_AT):
        if not p.free(m):
            continue
        s = p.n.sentence_of(m.start())
        ego["speed_mps"] = round(p.use(m, "ego.speed_mps"), 3)
        named = {r.what for r in roles if p.n.sentence_of(r.start) == s and r.what in agents}
        for role in named:
            agents[role][SAME_SPEED_KEY] = True
        p.note(f"ego.speed_mps {ego['speed_mps']} from {clean(m.group(0))!r}, and {sorted(named)} at the ego's")


def _speeds(p: ParseState, roles: list[Mention], ego: dict[str, Any], agents: dict[str, dict[str, Any]]) -> None:
    _all_at(p, roles, ego, agents)
    _same_speeds(p, roles, agents)
    _relative_speeds(p, roles, agents)
    for m in p.finditer(Q("speed")):
        if not p.free(m) or _a_bound(p, m) or _CRITERION.search(p.n.sentence(p.n.sentence_of(m.start()))):
            continue  # (a pass criterion's speed is checked, not driven: "expect: advisory within 45-55 km/h")
        subj = subject(p, roles, m.start(), 60)
        target = subj.what if subj and subj.what in agents else "ego"
        value = round(p.use(m, f"{target}.speed_mps"), 3)
        (agents[target] if target != "ego" else ego)["speed_mps"] = value
        p.note(f"{target}.speed_mps {value} from {p.n.quantities[int(m.group('q'))].raw!r}")
