"""The offline intent parser: a deterministic grammar over the domain vocabulary.

Design. An intent is normalized once (``intent_text.normalize``): number words
become digits and every number with a unit a typed placeholder ``<qN:kind>``, so
rules are plain regular expressions over text such as "freezes <q0:time> before
amber", and a quantity consumed by one slot (an anchor offset) can never be reused
by another (a fault magnitude). Fault phrases live in ``intent_faults``.

Slots are filled in a fixed order, most specific first: behaviours (a hard brake
"at 4 s" owns its time), the ego's start distance, channel and penetration, the
scenario duration, fault anchors, fault durations, arrival offsets, gaps, fault
magnitudes, and finally speeds. Fault phrases (a stream, a sender, an anchor, a
magnitude) attach to the nearest fault cue in their sentence. Every decision is
recorded as a note ("fault[0] anchor amber_onset -0.5 s from 'just before amber'"),
so the output is explainable and the benchmark can show where a label came from.

Fields the intent leaves open are assigned from the scenario seed through an
``Assigner`` (the ASSIGNMENT substream), never from ``random``.

The grammar knows English only; text in another language or without any scenario
vocabulary is refused with a reason rather than turned into an arbitrary spec.

Where things live. This module is the entry point: ``parse_text`` composes the slots
in the order above, and it holds the language gate, the map geometry and the
application (``stated_applications``). The rest is split by concern:
``intent_agents`` (the ego and the agents: maneuvers, behaviours, start distance,
gaps, platoon, relay chain, speeds, FCW's default hazard), ``intent_v2x`` (channel,
penetration, RSUs, relays, backhaul, equipage), ``intent_timing`` (the signal plan
and its phase offset, arrival offsets, the scenario duration), ``intent_faults``
(fault phrases: operators, streams, senders, magnitudes), ``intent_windows`` (a fault's
anchor and duration), ``intent_fault_draft`` (the fault clause being read and which
clause owns a phrase) and ``intent_text`` (normalization, quantities, roles, the parse
state).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application
from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.map_hosting import junctions_ahead_needed, signal_required
from lastv2x.core.spec import Agent, AgentRole, AnchorEvent, Ego, FaultOperator, JunctionKind
from lastv2x.core.timeline import CONFLICT_BEYOND_BAR_M, conflict_time_s
from lastv2x.core.verifier import Finding, Severity
from services.llm import lexicon as lx
from services.llm.assignment import Assigner
from services.llm.intent_agents import (
    CONFLICT_DISTANCE_KEY,
    HEADWAY_KEY,
    RELATIVE_SPEED_KEY,
    SAME_SPEED_KEY,
    SMALLEST_GAP_M,
    _behaviours,
    _chain,
    _gaps,
    _lead_hazard,
    _maneuvers,
    _platoon,
    _speeds,
    _start_distance,
)
from services.llm.intent_faults import (
    fault_json,
    fault_magnitudes,
    merge_restatements,
    parse_faults,
)
from services.llm.intent_text import (
    Normalized,
    ParseState,
    Quantity,
    clean,
    normalize,
    role_mentions,
    rx,
)
from services.llm.intent_timing import _arrivals, _scenario_duration, _signal_at_ego, _signal_plan
from services.llm.intent_v2x import _v2x, perception, variation
from services.llm.intent_windows import fault_anchors
from services.llm.maps import MapView, junction_kind_for


@dataclass
class GrammarResult:
    spec: dict[str, Any]
    notes: list[str]
    findings: list[Finding]


def parse_text(text: str, assigner: Assigner, maps: MapView | None = None) -> GrammarResult:
    """Parse an English intent into ScenarioSpec JSON data (not yet validated)."""
    maps = maps or MapView()
    n = normalize(text)
    p = ParseState(n, assigner, maps)
    _language_gate(p, text)
    geometry = _geometry(p)
    roles = role_mentions(p)
    app = _application(p)
    info = APPLICATIONS[app]
    agents: dict[str, dict[str, Any]] = {}
    for role in info.required_roles:
        agents[role] = {"id": role, "role": role}
    for mention in roles:
        if mention.what in {r.value for r in AgentRole} and mention.what not in agents:
            if mention.what == AgentRole.RELAY.value and app is not Application.EEBL:
                continue
            agents[mention.what] = {"id": mention.what, "role": mention.what}
    ego: dict[str, Any] = {}
    _maneuvers(p, app, roles, ego, agents)
    _behaviours(p, app, roles, ego, agents)
    _start_distance(p, ego)
    v2x = _v2x(p, app, agents, ego)
    seen = perception(p)  # before the faults: "spots the red from 50 m" is a sight distance, not a fault's size
    varied = variation(p)  # before the faults too: "drivers react 1.2 s late" is a driver, not a message
    duration = _scenario_duration(p)
    faults = parse_faults(p, app, roles, agents)
    signal = _signal_plan(p)
    _arrivals(p, app, roles, agents)
    _gaps(p, roles, agents)
    _platoon(p, agents, v2x)
    _chain(p, agents, v2x)
    fault_magnitudes(p, app, faults)
    faults = merge_restatements(p, faults)
    _speeds(p, roles, ego, agents)
    if _lead_hazard(p, app, agents, faults):
        # a phantom's window said with the brake it forges ("a hard-braking event 30 s into the drive"): read once the
        # lead has given that time back
        fault_anchors(p, app, [f for f in faults if f.operator == FaultOperator.GHOST_SENDER and f.anchor is None],
                      agents)

    junction = geometry.pop("__kind")
    control = APPLICATIONS[app].junction_signalized
    if "signalized" not in geometry and control is False and junction is JunctionKind.SIGNALIZED_4WAY:
        # "a rural crossroad" for IMA: four approaches, no signal said, so none (the application's junction)
        junction = JunctionKind.ANY
        geometry.pop("junction_kind", None)
        p.note(f"map.junction_kind any with {geometry.get('min_approaches', 4)} approaches (a four-way crossing the "
               f"intent gives no signals, for {app.value})")
    if "signalized" not in geometry and p.has(lx.RED_RUNNER):
        geometry["signalized"] = True  # a red-light runner needs a red light
        p.note("map.signalized true (a red-light runner needs a signal)")
    if "signalized" not in geometry and control is not None \
            and junction.value in ("any", APPLICATIONS[app].junction_kind, "urban_canyon"):
        geometry["signalized"] = control  # the application's junction when the intent says nothing
        p.note(f"map.signalized {str(control).lower()} ({app.value} needs a junction "
               f"{'without' if control is False else 'with'} signals; the intent names none)")
    town = geometry.get("town")
    if town is None:
        needed = junction_kind_for(junction, app)
        pool = maps.candidates(needed, geometry.get("min_approaches", 3),
                               signal_required(app, needed.value, geometry.get("signalized")),
                               junctions_ahead_needed(geometry.get("junctions_ahead", 0),
                                                      bool(geometry.get("whole_corridor"))))
        geometry["town"] = assigner.town(pool)
        p.note(f"map.town {geometry['town']} assigned from seed among {list(pool)}")
    if "speed_mps" not in ego:
        # an FCW phantom with a stated speed is closed on only by a faster ego (the verifier's ghost rule)
        ahead = [f.ghost_speed_mps for f in faults if FaultOperator(f.operator) is FaultOperator.GHOST_SENDER
                 and f.ghost_speed_mps is not None] if app is Application.FCW else []
        ego["speed_mps"] = assigner.ego_speed_mps(max(ahead) if ahead else None)
        lead_mps = agents.get("lead", {}).get("speed_mps") if APPLICATIONS[app].follows_lead else None
        if lead_mps is not None and not ahead and lead_mps > ego["speed_mps"]:
            # a lead whose stated speed is above the drawn one (FCW, EEBL) is followed at that speed: "a truck ahead
            # doing 80 km/h" brakes in front of an ego that keeps up with it, not one left behind that never meets
            # its braking (a slower lead stays closed on, the application's usual scene)
            ego["speed_mps"] = lead_mps
            p.note(f"ego.speed_mps {lead_mps:g}: following the lead at its stated speed (above the seed's draw)")
        elif (meets := [float(a["speed_mps"]) for a in agents.values() if a.get("role") in ("cross", "opposing")
                        and "speed_mps" in a]) and max(meets) > ego["speed_mps"]:
            # crossing or oncoming traffic whose stated speed is above the drawn one (IMA, LTA): the ego approaches no
            # slower, so that traffic, timed to meet it at the conflict point, starts on its own approach's road (a
            # 40 km/h crosser timed to a 30 km/h ego needs 174 m of road before the conflict point, a 4-way has 161)
            ego["speed_mps"] = max(meets)
            p.note(f"ego.speed_mps {max(meets):g}: no slower than the stated conflicting traffic (above the seed's draw)")
        else:
            p.note(f"ego.speed_mps {ego['speed_mps']} assigned from seed"
                   + (f" (above the phantom's stated {max(ahead):g} m/s)" if ahead else ""))
    _start_before_anchor(p, ego, faults)
    if APPLICATIONS[app].kind is not AppKind.CONFLICT:  # a conflict's timing is the agents' too: not the plan's
        _signal_at_ego(p, ego, signal)
    for q in n.quantities:  # (after the last reader of a quantity)
        if q.used is None:
            p.note(f"unused quantity {q.raw!r}")
    for agent in agents.values():  # a headway in seconds is a gap at the ego's speed
        said_headway = agent.pop(HEADWAY_KEY, None)
        if said_headway is not None and "gap_m" not in agent:
            headway, words = said_headway
            gap = round(headway * float(ego["speed_mps"]), 1)
            agent["gap_m"] = max(gap, SMALLEST_GAP_M)
            p.note(f"{agent['id']}.gap_m {agent['gap_m']:g} from {words!r} (a {headway:g} s headway at the ego's "
                   f"{float(ego['speed_mps']):g} m/s" + (f", raised to the smallest gap, {SMALLEST_GAP_M:g} m"
                                                          if gap < SMALLEST_GAP_M else "") + ")")
    for agent in agents.values():  # "cruising at the same speed as us", "10 m/s slower than us"
        relative = agent.pop(RELATIVE_SPEED_KEY, None)
        if agent.pop(SAME_SPEED_KEY, False) and "speed_mps" not in agent:
            agent["speed_mps"] = ego["speed_mps"]
        if relative is not None and "speed_mps" not in agent:
            agent["speed_mps"] = round(max(0.0, float(ego["speed_mps"]) + relative), 3)
    agent_list = []
    for i, agent in enumerate(agents.values()):
        if "speed_mps" not in agent and agent.get("role") == "follower":
            # a follower keeps the ego's pace (a slower draw drops back and never meets the ego's brake)
            agent["speed_mps"] = ego["speed_mps"]
            p.note(f"{agent['id']}.speed_mps {agent['speed_mps']}: the ego's (a follower keeps its pace)")
        elif "speed_mps" not in agent:
            agent["speed_mps"] = assigner.agent_speed_mps(i)
            p.note(f"{agent['id']}.speed_mps {agent['speed_mps']} assigned from seed")
        agent_list.append(agent)
    _time_by_distance(p, ego, agent_list, faults)
    spec: dict[str, Any] = {
        "application": app.value,
        "intent": text[:4000],
        "seed": assigner.seed,
        "map": geometry,
        "ego": ego,
        "agents": agent_list,
        "v2x": v2x,
        "faults": [fault_json(p, app, f, i) for i, f in enumerate(faults)],
    }
    if signal:
        spec["signal"] = signal
    if seen is not None:
        spec["perception"] = seen
    if varied is not None:
        spec["variation"] = varied
    if duration is not None:
        spec["duration_s"] = duration
    return GrammarResult(spec, p.notes, p.findings)


_DOMAIN = (r"\b(vehicles?|cars?|trucks?|traffic|intersections?|junctions?|roads?|signals?|lights?|v2x|driv\w+"
           r"|approach\w*|ego|lanes?|turn\w*|brak\w*|collision|warning|speed|stop\w*|town|map|corridor|lead"
           r"|highway|motorway|street|crash\w*|rear|crossing|platoon|queue|bus|van|motorcycle"
           r"|rsu|obu|scenario|spats?|bsms?|mapmsg|eebl|glosa|rlvw|fcw|ima|lta|green[- ]wave|speed advi\w*|timing)\b")


def _script_of(text: str) -> tuple[str | None, float]:
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return None, 0.0
    counts: dict[str, int] = {}
    for ch in letters:
        cp = ord(ch)
        for name, ranges in lx.SCRIPTS:
            if any(lo <= cp <= hi for lo, hi in ranges):
                counts[name] = counts.get(name, 0) + 1
    if not counts:
        return None, 0.0
    name = max(counts, key=lambda k: counts[k])
    return name, sum(counts.values()) / len(letters)


# the warning on a text in another language, the offline parser having read only its English words ("the text appears
# to be German; ..."): the role layer then says back what that text asked of a stream (fault_cues.foreign_findings)
LANGUAGE_CHECK = "parser.language"
LANGUAGE_SAID = re.compile(r"appears to be ([\w ]+?);")


def _language_gate(p: ParseState, raw: str) -> None:
    domain = len(rx(_DOMAIN).findall(p.t)) + len(p.n.maps)
    script, share = _script_of(raw)
    words = re.findall(r"[^\W\d_]+", raw.lower())  # (the words as written: normalize puts some value words in English)
    english = sum(w in lx.ENGLISH_WORDS for w in words)
    foreign = {lang: sum(w in vocab for w in words) for lang, vocab in lx.FOREIGN_WORDS.items()}
    lang = max(foreign, key=lambda k: foreign[k])
    language = None
    if script and share > 0.3:
        language = f"{script} script"
    elif foreign[lang] >= 2 and foreign[lang] > english:
        language = lang
    hint = "write the intent in English, or use an LLM backend (openai) that reads other languages"
    if language and domain < 2:
        raise InvalidArgument(FieldViolation("text", f"the text appears to be {language}; the offline parser reads "
                                                     "English only", hint))
    if domain == 0:
        raise InvalidArgument(FieldViolation("text", "no scenario vocabulary found (no application, vehicle, place, "
                                                     "message stream or fault)",
                                             "say what to test, e.g. 'red-light warning when SPaT freezes just "
                                             "before amber'"))
    if language:
        p.findings.append(Finding(LANGUAGE_CHECK, Severity.WARNING,
                                  f"the text appears to be {language}; only English domain words and a few "
                                  "others (colours, numbers, units, some fault and scene words: lexicon.FOREIGN_VALUES) "
                                  "were read, the rest was ignored", ("intent",)))


def _geometry(p: ParseState) -> dict[str, Any]:
    for pattern, what in lx.UNSUPPORTED_GEOMETRY:
        if p.has(pattern):
            raise InvalidArgument(FieldViolation(
                "text", f"no map in the catalogue has {what}",
                f"junction kinds on offer: {', '.join(p.maps.kinds())}"))
    out: dict[str, Any] = {}
    kind = JunctionKind.ANY
    approaches: int | None = None
    for m in p.finditer(lx.N_WAY):
        k = int(m.group(1))
        if k < 3 or k > 6:
            raise InvalidArgument(FieldViolation("text", f"a {k}-way junction cannot be expressed",
                                                 "junctions have 3 to 6 approaches"))
        approaches = k
    if p.has(lx.T_JUNCTION):
        kind, approaches = JunctionKind.T_JUNCTION, 3
    elif p.has(lx.CORRIDOR):
        kind = JunctionKind.CORRIDOR
    elif p.has(lx.URBAN_CANYON):
        kind = JunctionKind.URBAN_CANYON
    unsignalized = p.has(lx.UNSIGNALIZED)
    signalized = p.has(lx.SIGNALIZED)
    if unsignalized:
        out["signalized"] = False
    elif signalized:
        out["signalized"] = True
    if (approaches == 4 or p.has(lx.FOUR_WAY)) and kind is JunctionKind.ANY:
        approaches = 4
        if not unsignalized:
            kind = JunctionKind.SIGNALIZED_4WAY
    if approaches == 3 and kind is JunctionKind.ANY:
        kind = JunctionKind.T_JUNCTION
    if kind is not JunctionKind.ANY:
        out["junction_kind"] = kind.value
        p.note(f"map.junction_kind {kind.value}")
    if approaches is not None:
        out["min_approaches"] = approaches
    _traversal(p, out)
    if (out.get("junctions_ahead") or out.get("whole_corridor")) and kind is JunctionKind.ANY:
        kind = JunctionKind.CORRIDOR  # a traversal of several junctions is a corridor
        out["junction_kind"] = kind.value
        p.note("map.junction_kind corridor (a traversal of several junctions)")
    if p.has(lx.BUSY) and not p.has(r"\bnot busy\b"):
        out["busy"] = True
        p.note("map.busy from 'busy' traffic")
    names = list(dict.fromkeys(name for name, _raw in p.n.maps))
    if len(names) > 1:
        raise InvalidArgument(FieldViolation("map.town", f"the intent names several maps {names}",
                                             "name one map per scenario"))
    if names:
        facts = p.maps.get(names[0])
        if facts is None:
            raise InvalidArgument(FieldViolation("map.town", f"no map named {names[0]!r} in the catalogue",
                                                 f"known maps: {', '.join(p.maps.names)}"))
        if not facts.offers(kind, approaches or 3):
            raise InvalidArgument(FieldViolation(
                "map.junction_kind", f"{facts.name} has no {kind.value} junction with {approaches or 3}+ approaches",
                f"{facts.name} offers {sorted(k.value for k in facts.junction_kinds)}"))
        out["town"] = facts.name
        p.note(f"map.town {facts.name} named in the intent")
    elif not p.maps.candidates(kind, approaches or 3):
        raise InvalidArgument(FieldViolation(
            "map.min_approaches" if approaches else "map.junction_kind",
            f"no map in the catalogue has a {kind.value} junction with {approaches or 3}+ approaches",
            f"junction kinds on offer: {', '.join(p.maps.kinds())}; at most "
            f"{max(m.max_approaches for m in p.maps.maps)} approaches"))
    out["__kind"] = kind
    return out


def _traversal(p: ParseState, out: dict[str, Any]) -> None:
    """A corridor traversal: "along all 5 junctions" (``map.junctions_ahead`` 4: the scenario junction and 4
    after it), "the whole corridor" (``map.whole_corridor``)."""
    whole = p.has(lx.WHOLE_CORRIDOR)
    m = p.has(lx.JUNCTION_COUNT)
    if m and whole and whole.start() < m.end() and m.start() < whole.end():
        m = None  # "along all five signals of the high street": every junction, not a count of them
    if m:
        n = int(m.group("n") or m.group("n2") or m.group("n3"))
        if n < 2 or n > 8:
            raise InvalidArgument(FieldViolation(
                "map.junctions_ahead", f"a traversal of {n} junctions cannot be expressed ({clean(m.group(0))!r})",
                "a corridor traversal crosses 2 to 8 signalized junctions"))
        out["junctions_ahead"] = n - 1
        p.note(f"map.junctions_ahead {n - 1} from {clean(m.group(0))!r} (the scenario junction and {n - 1} after it)")
    if whole:
        out["whole_corridor"] = True
        p.note("map.whole_corridor from the wording (the ego starts at the corridor's first junction)")


def _application_scores(t: str) -> tuple[dict[Application, int], dict[Application, list[str]]]:
    """Cue score of each application in the normalized text ``t``, with the phrases that scored."""
    scores = {a: 0 for a in APPLICATIONS}  # the catalogue's applications, in registration order
    hits: dict[Application, list[str]] = {a: [] for a in APPLICATIONS}
    for app, pattern, weight in lx.app_cue_table():
        found = list(dict.fromkeys(m.group(0) for m in rx(pattern).finditer(t)))[:2]  # distinct phrases, at most 2
        for phrase in found:
            scores[app] += weight
            hits[app].append(f"{phrase!r}+{weight}")
    return scores, hits


def stated_applications(text: str) -> tuple[Application, ...]:
    """The applications the intent names: the best-scoring ones (several on a tie); none when it names none."""
    scores, _ = _application_scores(normalize(text).text)
    best = max(scores.values())
    return tuple(a for a in APPLICATIONS if scores[a] == best) if best > 0 else ()


def _application(p: ParseState) -> Application:
    scores, hits = _application_scores(p.t)
    best = max(scores.values())
    tied = [a for a in APPLICATIONS if scores[a] == best]
    if best == 0:
        app = p.assigner.application(tuple(Application))
        p.note(f"application {app.value} assigned from seed (the intent names none)")
    elif len(tied) > 1:
        app = p.assigner.application(tuple(tied))
        p.note(f"application {app.value} assigned from seed among tied {[a.value for a in tied]} "
               f"({', '.join(h for a in tied for h in hits[a])})")
    else:
        app = tied[0]
        p.note(f"application {app.value} from {', '.join(hits[app])}")
    return app



# an unstated start distance short of the farthest stop-bar anchor of a fault is raised to this far before it, so the
# ego drives into the window ("from 150 m before the stop line" with the default 120 m start would never open)
ANCHOR_RUN_IN_M = 30.0


def _farthest_anchor_m(faults: list[Any]) -> float | None:
    """The farthest stop-bar distance a fault's window opens at (None: no such anchor)."""
    return max((float(f.anchor["distance_m"]) for f in faults if f.anchor and f.anchor.get("event")
                == AnchorEvent.STOP_BAR_DISTANCE.value and f.anchor.get("distance_m") is not None), default=None)


def _start_before_anchor(p: ParseState, ego: dict[str, Any], faults: list[Any]) -> None:
    if "start_distance_m" in ego:
        return  # stated: the verifier says whether its window opens
    far = _farthest_anchor_m(faults)
    if far is not None and far > Ego().start_distance_m:
        ego["start_distance_m"] = far + ANCHOR_RUN_IN_M
        p.note(f"ego.start_distance_m {ego['start_distance_m']:g}: {ANCHOR_RUN_IN_M:g} m before the fault's "
               f"{far:g} m stop-bar anchor (no start distance stated)")


# the ego's start distance bounds (read from the spec, one home)
_EGO_START_M = tuple(next(float(getattr(m, b)) for m in Ego.model_fields["start_distance_m"].metadata if hasattr(m, b))
                     for b in ("ge", "le"))
# the spec's bound of an agent's arrival_offset_s, either way
_ARRIVAL_OFFSET_S = next(float(m.le) for m in Agent.model_fields["arrival_offset_s"].metadata if hasattr(m, "le"))


def _time_by_distance(p: ParseState, ego: dict[str, Any], agents: list[dict[str, Any]], faults: list[Any]) -> None:
    """A crossing or oncoming car said to be some metres from the conflict point reaches it then (at its speed): with
    the ego's start stated, that is its arrival offset against the ego's (``timeline.conflict_time_s``); without, the
    ego starts where it reaches the conflict point at the same time (the scene the words describe meets there), though
    no nearer than the spec allows or than a fault's stop-bar anchor needs (the offset then says the difference)."""
    far = _farthest_anchor_m(faults)
    nearest_m = max(_EGO_START_M[0], far + ANCHOR_RUN_IN_M if far is not None else 0.0)
    for agent in agents:
        said = agent.pop(CONFLICT_DISTANCE_KEY, None)
        if said is None or "arrival_offset_s" in agent:
            continue
        distance_m, words = said
        v_e, v_a = float(ego["speed_mps"]), float(agent["speed_mps"])
        t_a = distance_m / max(v_a, 0.1)
        how = f"{distance_m:g} m from the conflict point at {v_a:g} m/s: there at {t_a:.2f} s"
        if "start_distance_m" not in ego:
            meet = t_a * v_e - CONFLICT_BEYOND_BAR_M
            start = round(min(max(meet, nearest_m), _EGO_START_M[1]), 1)
            ego["start_distance_m"] = start
            p.note(f"ego.start_distance_m {start:g} from {words!r} (placed to reach the conflict point with "
                   f"{agent['id']}: {how})")
            if abs(start - meet) < 0.5:
                continue  # they meet (within the start's rounding)
        t_e = conflict_time_s(float(ego["start_distance_m"]), v_e)
        offset = round(min(max(t_a - t_e, -_ARRIVAL_OFFSET_S), _ARRIVAL_OFFSET_S), 2)
        if abs(offset) < 0.005:
            continue
        agent["arrival_offset_s"] = offset
        p.note(f"{agent['id']}.arrival_offset_s {offset:+g} s from {words!r} ({how}; the ego at {t_e:.2f} s)")


__all__ = ["LANGUAGE_CHECK", "LANGUAGE_SAID", "GrammarResult", "Normalized", "Quantity", "normalize", "parse_text"]
