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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application
from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.map_hosting import signal_required
from lastv2x.core.spec import AgentRole, Ego, JunctionKind, SignalPlan
from lastv2x.core.verifier import Finding, Severity
from services.llm import lexicon as lx
from services.llm.assignment import Assigner
from services.llm.intent_faults import (
    fault_json,
    fault_magnitudes,
    merge_restatements,
    parse_faults,
)
from services.llm.intent_text import (
    BAR,
    Mention,
    Normalized,
    ParseState,
    Q,
    Quantity,
    agent_for,
    clean,
    normalize,
    role_mentions,
    rx,
    subject,
)
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
    _fcw_hazard(p, app, agents)
    for q in n.quantities:
        if q.used is None:
            p.note(f"unused quantity {q.raw!r}")

    junction = geometry.pop("__kind")
    control = APPLICATIONS[app].junction_signalized
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
                               signal_required(app, needed.value, geometry.get("signalized")))
        geometry["town"] = assigner.town(pool)
        p.note(f"map.town {geometry['town']} assigned from seed among {list(pool)}")
    if "speed_mps" not in ego:
        ego["speed_mps"] = assigner.ego_speed_mps()
        p.note(f"ego.speed_mps {ego['speed_mps']} assigned from seed")
    if APPLICATIONS[app].kind is not AppKind.CONFLICT:  # a conflict's timing is the agents' too: not the plan's
        _signal_at_ego(p, ego, signal)
    agent_list = []
    for i, agent in enumerate(agents.values()):
        if "speed_mps" not in agent:
            agent["speed_mps"] = assigner.agent_speed_mps(i)
            p.note(f"{agent['id']}.speed_mps {agent['speed_mps']} assigned from seed")
        agent_list.append(agent)
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


def _language_gate(p: ParseState, raw: str) -> None:
    domain = len(rx(_DOMAIN).findall(p.t)) + len(p.n.maps)
    script, share = _script_of(raw)
    words = re.findall(r"[^\W\d_]+", p.t)
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
        p.findings.append(Finding("parser.language", Severity.WARNING,
                                  f"the text appears to be {language}; only English domain words were read, "
                                  "the rest was ignored", ("intent",)))


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


def _maneuvers(p: ParseState, app: Application, roles: list[Mention], ego: dict[str, Any],
               agents: dict[str, dict[str, Any]]) -> None:
    info = APPLICATIONS[app]
    for pattern, turn in ((lx.LEFT, "left"), (lx.RIGHT, "right")):
        for m in p.finditer(pattern):
            subj = subject(p, roles, m.start(), 25)
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


def _fcw_hazard(p: ParseState, app: Application, agents: dict[str, dict[str, Any]]) -> None:
    """FCW warns of a closing lead. A stopped or slow lead when the intent says so; else, unless it gave the
    lead a speed or a behaviour, a lead braking hard (the reference scene's hazard): a lead cruising at
    the ego's speed hosts no mechanism, so no communication fault could ever matter."""
    if app is not Application.FCW:
        return
    lead = agent_for(agents, "lead")
    if "speed_mps" in lead or (lead.get("behaviour") or {}).get("kind", "none") != "none":
        return
    for pattern, speed, words in ((lx.STOPPED_LEAD, STOPPED_LEAD_MPS, "stopped"), (lx.SLOW_LEAD, SLOW_LEAD_MPS, "slow")):
        hit = p.has(pattern)
        if hit:
            lead["speed_mps"] = speed
            p.note(f"lead.speed_mps {speed} (a {words} lead) from {clean(hit.group(0))!r}")
            return
    lead["behaviour"] = {"kind": "hard_brake", "at_time_s": FCW_LEAD_BRAKE_AT_S}
    p.note(f"lead.behaviour hard_brake at {FCW_LEAD_BRAKE_AT_S:g} s (FCW needs a closing lead; the intent named none)")


def _behaviours(p: ParseState, app: Application, roles: list[Mention], ego: dict[str, Any],
                agents: dict[str, dict[str, Any]]) -> None:
    for m in p.finditer(lx.HARD_BRAKE):
        if p.negated(m.start()):
            continue
        subj = subject(p, roles, m.start(), 60)
        role = subj.what if subj and subj.what in ("lead", "cross", "opposing", "relay") else "lead"
        if role == "lead" and not APPLICATIONS[app].follows_lead and not subj:
            continue
        agent = agent_for(agents, role)
        behaviour: dict[str, Any] = agent.setdefault("behaviour", {})
        behaviour["kind"] = "hard_brake"
        after = rx(r"^\W*(?:\w+\W+){0,3}?(?:at|after) (?:t ?= ?)?" + Q("time")).search(p.t[m.end():m.end() + 40])
        before = rx(r"(?:at|after) (?:t ?= ?)?" + Q("time") + r",? (?:\w+\W+){0,5}$").search(
            p.t[max(0, m.start() - 50):m.start()])
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
    if app is Application.EEBL:
        lead = agent_for(agents, "lead").setdefault("behaviour", {})
        if lead.get("kind") != "hard_brake":
            lead["kind"] = "hard_brake"
            p.note("lead.behaviour hard_brake (EEBL needs a braking lead)")
        if "at_time_s" not in lead:
            # "the lead brakes at 6 s": the braking time, left free for a fault anchored to it ("goes quiet as it
            # brakes at 4 s")
            stated = p.has(r"\bbrak\w* (?:at|after) (?:t ?= ?)?" + Q("time"))
            lead["at_time_s"] = p.q(stated).value if stated else 4.0
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


_START = (r"(?:\b(?:starts|begins|spawns|is placed|is positioned|initially|approaches from|approaching from)"
          r"|\b(?:ego|car|vehicle) (?:starting|beginning|placed|positioned))")


def _start_distance(p: ParseState, ego: dict[str, Any]) -> None:
    # (not a reported position placed some metres off: "placed 30 m back from where the car really is")
    for pattern in (_START + r" (?:\w+ ){0,3}?" + Q("dist") + r"(?! (?:back|behind|forward|ahead|off) (?:from|of) "
                    r"(?:where|its|their|the (?:true|real|actual)))(?: away)?(?: (?:before|from|short of|upstream of|"
                    r"ahead of) (?:the )?" + BAR + r")?",
                    Q("dist") + r" (?:away |out )?(?:from|before|short of|upstream of) (?:the )?" + BAR
                    + r" (?:at the start|initially|at t ?= ?0)"):
        for m in p.finditer(pattern):
            if p.free(m):
                ego["start_distance_m"] = p.use(m, "ego.start_distance_m")
                p.note(f"ego.start_distance_m {ego['start_distance_m']} from {m.group(0)!r}")
                return


def _v2x(p: ParseState, app: Application, agents: dict[str, dict[str, Any]], ego: dict[str, Any]) -> dict[str, Any]:
    v2x: dict[str, Any] = {}
    channel: dict[str, Any] = {}
    pen_patterns = (
        Q("pct") + r" (?:v2x |market |obu |connected[- ]vehicle )?(?:penetration|equipage|equipped|connected)",
        r"(?:penetration|equipage)(?: rate)?(?: of| at| is| =| to)? (?:" + Q("pct") + r"|(?P<bare>\d*\.?\d+)\b)",
        Q("pct") + r" of (?:the )?(?:other |background )?(?:vehicles|cars|traffic)(?: are| is)? (?:v2x[- ])?"
                   r"(?:equipped|connected)",
    )
    for pattern in pen_patterns:
        m = p.has(pattern)
        if m:
            if m.groupdict().get("bare"):
                value = float(m.group("bare"))
                value = value / 100 if value > 1 else value
            elif p.free(m):
                value = p.use(m, "v2x.penetration")
            else:
                continue
            v2x["penetration"] = round(value, 4)
            p.note(f"v2x.penetration {v2x['penetration']} from {m.group(0)!r}")
            break
    else:
        for pattern, value in ((r"full penetration|all (other )?(vehicles|cars) (are )?(v2x[- ])?(equipped|connected)"
                                r"|fully (equipped|connected)", 1.0),
                               (r"half (of )?the (vehicles|cars|traffic)", 0.5),
                               (r"low penetration|few (vehicles|cars) (are )?(equipped|connected)", 0.1),
                               (r"no other (vehicle|car)s? (is |are )?(equipped|connected)|only the ego is "
                                r"(equipped|connected)", 0.0)):
            if p.has(pattern):
                v2x["penetration"] = value
                p.note(f"v2x.penetration {value} from wording")
                break
    m = p.has(r"(?:radio |communication |comm |transmission |v2x |dsrc |c-v2x |rsu |link )?range (?:of |is |at |to "
              r"|limited to |reduced to |= ?)?(?:only )?(?:about |around |roughly |approximately |approx\.? |some |nearly |almost |~ ?|≈ ?)?"
              + Q("dist"))
    m = m or p.has(Q("dist") + r" (?:of )?(?:radio |communication |transmission |v2x |dsrc )?(?:range|coverage)\b")
    if m and p.free(m):
        channel["range_m"] = p.use(m, "v2x.channel.range_m")
        p.note(f"v2x.channel.range_m {channel['range_m']}")
    for m in p.finditer(Q("db")):
        if p.free(m):
            channel["blockage_db_per_m"] = p.use(m, "v2x.channel.blockage_db_per_m")
            p.note(f"v2x.channel.blockage_db_per_m {channel['blockage_db_per_m']}")
    if p.has(lx.SINGLE_RSU):
        v2x["rsu_placement"] = "single"
        p.note("v2x.rsu_placement single (the junctions ahead uncovered)")
    elif p.has(lx.NO_RSU):
        v2x["rsu_placement"] = "none"
        p.note("v2x.rsu_placement none")
    elif p.has(lx.RSU_CHAIN):
        v2x["rsu_placement"] = "chain"
        p.note("v2x.rsu_placement chain")
    relay_off = p.has(lx.NO_RELAY)
    if p.has(lx.SPAT_RELAY) and not relay_off:
        v2x["spat_relay"] = True
        v2x["rsu_placement"] = "chain"
        p.note("v2x.spat_relay on (RSU chain)")
    elif app is Application.GLOSA and p.has(r"\brelay\w*\b") and not relay_off:
        v2x["spat_relay"] = True
        v2x["rsu_placement"] = "chain"
        p.note("v2x.spat_relay on (GLOSA relay)")
    if app is Application.EEBL:
        if relay_off:
            v2x["eebl_rebroadcast"] = False
            agents.pop("relay", None)
            p.note("v2x.eebl_rebroadcast off")
        elif p.has(lx.EEBL_RELAY):
            v2x["eebl_rebroadcast"] = True
            agent_for(agents, "relay")
            p.note("v2x.eebl_rebroadcast on, relay vehicle placed")
    if p.has(lx.BACKHAUL) and not p.has(r"\b(no|without( a| any)?) back[- ]?haul"):
        backhaul: dict[str, Any] = {}
        m = p.has(r"back[- ]?haul (?:latency|delay)(?: of| is| =)? " + Q("time"))
        m = m or p.has(Q("time") + r" (?:of )?back[- ]?haul (?:latency|delay)")
        if m and p.free(m):
            backhaul["latency_s"] = p.use(m, "v2x.backhaul.latency_s")
        m = p.has(r"back[- ]?haul (?:loss|packet loss|drops?)(?: of| is| =)? " + Q("pct"))
        m = m or p.has(Q("pct") + r" (?:of )?back[- ]?haul (?:loss|packet loss)")
        if m and p.free(m):
            backhaul["loss"] = p.use(m, "v2x.backhaul.loss")
        v2x["backhaul"] = backhaul
        v2x["rsu_placement"] = "chain"
        p.note(f"v2x.backhaul {backhaul} (RSU chain)")
    _equipage(p, app, agents, ego)
    _agent_applications(p, app, agents)
    if channel:
        v2x["channel"] = channel
    return v2x


def _agent_applications(p: ParseState, app: Application, agents: dict[str, dict[str, Any]]) -> None:
    """Mutual yield / "both vehicles run IMA": the conflict agent runs the application too."""
    if app not in (Application.IMA, Application.LTA) or not p.has(lx.MUTUAL_APP):
        return
    required = APPLICATIONS[app].required_roles
    role = required[0] if required else None
    if role is None:
        return
    agent_for(agents, role)["application"] = app.value
    p.note(f"{role}.application {app.value} (both vehicles decide)")


# a relay chain with no gap in the text: the relay this far ahead, the lead twice as far (increasing gaps)
CHAIN_RELAY_GAP_M = 30.0
CHAIN_OUT_OF_RANGE = 1.5  # with a radio range in the text: the lead this many ranges ahead (the relay is needed)


PLATOON_SPACING_M = 20.0  # a platoon with no spacing in the text: this far apart
PLATOON_MAX_AHEAD = 15  # vehicles ahead of the ego (the spec's agent cap is 16)


def _platoon(p: ParseState, agents: dict[str, dict[str, Any]], v2x: dict[str, Any]) -> None:
    """A platoon ahead of the ego at increasing gaps: "a platoon of N vehicles" (the ego the last of them)
    or "braking N cars ahead in a platoon"; the front one is the lead, those between it and the ego
    are ``platoon1``, ``platoon2``, ... (relays when EEBL is rebroadcast, else leads), evenly spaced by
    the spacing the text gives ("20 m apart"), else from the lead's gap, else 20 m apart."""
    m = p.has(r"platoon of (?P<n>\d+) (?:vehicles|cars|trucks)")
    ahead = int(m.group("n")) - 1 if m else None
    if ahead is None:
        m = p.has(r"(?P<n>\d+) (?:vehicles|cars|trucks) ahead(?: of (?:the )?ego)? in (?:a|the) platoon")
        ahead = int(m.group("n")) if m else None
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


def _equipage(p: ParseState, app: Application, agents: dict[str, dict[str, Any]], ego: dict[str, Any]) -> None:
    roles = role_mentions(p)
    for m in p.finditer(lx.UNEQUIPPED):
        subj = subject(p, roles, m.start(), 60)
        after = [r for r in roles if r.start >= m.end() and r.start - m.end() <= 12]
        target = subj or (after[0] if after else None)
        if target and target.what == "ego":
            ego["equipped"] = False  # drives by sight, runs no application (lastv2x.core.perception)
            p.note(f"ego.equipped false from {m.group(0)!r} (drives by sight)")
            continue
        role = target.what if target and target.what in agents else None
        if role is None:
            required = APPLICATIONS[app].required_roles
            role = required[0] if required else None
        if role is None:  # no agent to speak of: the ego is the one without V2X
            ego["equipped"] = False
            p.note(f"ego.equipped false from {m.group(0)!r} (no agent to unequip; drives by sight)")
            continue
        agent_for(agents, role)["equipped"] = False
        p.note(f"{role}.equipped false from {m.group(0)!r}")


def _scenario_duration(p: ParseState) -> float | None:
    for pattern in (r"(?:scenario|run|simulation|test|episode)\w* (?:of |lasting |lasts |runs? for |for |duration "
                    r"(?:of )?|length (?:of )?)" + Q("time"),
                    # "a 60-second approach": the run is the ego's approach
                    Q("time") + r" (?:long )?(?:scenario|run|simulation|test|approach|drive)\b",
                    r"(?:simulate|run) (?:it |for )?" + Q("time")):
        m = p.has(pattern)
        # "make the countdown run 8 s short": a comparative after it is an offset, not the run's length
        if m and p.has(r"^ (?:too |much )?(?:short|shorter|long|longer|late|later|early|earlier|behind|ahead|fast|slow|more"
                       r"|less)\b", p.t[m.end():m.end() + 12]):
            continue
        if m and p.free(m) and not p.has(r"\binto the $", p.t[max(0, m.start() - 9):m.start()]):
            value = p.use(m, "duration_s")
            p.note(f"duration_s {value} from {m.group(0)!r}")
            return value
    return None


def _signal_plan(p: ParseState) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, word in (("cycle_s", r"(?:signal )?cycle"), ("green_s", r"green"), ("amber_s", r"(?:amber|yellow)"),
                      ("all_red_s", r"all[- ]red")):
        for pattern in (word + r" (?:time |phase |interval |split |duration |length |clearance )?(?:of |is |lasts )?"
                        + Q("time"),
                        Q("time") + r" (?:of )?" + word + r"(?: time| phase| interval| length)?\b"):
            m = p.has(pattern)
            if m and p.free(m):
                out[key] = p.use(m, f"signal.{key}")
                p.note(f"signal.{key} {out[key]}")
                break
    _signal_event_time(p, out)
    return out


def _signal_event_time(p: ParseState, out: dict[str, Any]) -> None:
    """ "The light turns amber at 6 s": the plan's phase offset that puts that onset at that time (the
    fixed-time plan's green starts at t = -offset_s, amber green_s later, red amber_s after that)."""
    m = p.has(r"(?:light|signal|lamp)s? (?:turns|changes to|goes|switches to|is) (?P<ph>amber|yellow|red|green) at "
              r"(?:t ?= ?)?" + Q("time"))
    if not m or not p.free(m):
        return
    plan = SignalPlan()
    green, amber, cycle = (out.get(k, getattr(plan, k)) for k in ("green_s", "amber_s", "cycle_s"))
    onset = {"green": 0.0, "amber": green, "yellow": green, "red": green + amber}
    at = p.use(m, "signal.offset_s")
    out["offset_s"] = round((onset[m.group("ph")] - at) % cycle, 3)
    p.note(f"signal.offset_s {out['offset_s']:g} from {clean(m.group(0))!r}")


def _signal_at_ego(p: ParseState, ego: dict[str, Any], out: dict[str, Any]) -> None:
    """The light's timing said from the ego's side: "the light becomes red when the car is still 80 m away" (the
    plan's offset that puts that onset where the ego, at its speed from its start distance, is 80 m out); "the ego's
    departure is delayed by 2 s" (the lights run 2 s ahead of the ego). Only when the plan has no offset yet."""
    if "offset_s" in out:
        return
    plan = SignalPlan()
    green, amber, cycle = (out.get(k, getattr(plan, k)) for k in ("green_s", "amber_s", "cycle_s"))
    onset = {"green": 0.0, "amber": green, "yellow": green, "red": green + amber}
    m = p.has(r"(?:light|signal|lamp)s? (?:turns|becomes|goes|changes to|switches to|is) (?:to )?(?P<ph>amber|yellow|red"
              r"|green) (?:when|as|once|while) (?:the )?(?:ego|car|vehicle|we|it|our car)(?: is| are|'s)? (?:still |only "
              r"|just )?(?:about )?" + Q("dist") + r" (?:away|out|(?:from|before|short of) (?:the )?" + BAR + r")")
    if m and p.free(m):
        start = ego.get("start_distance_m", Ego().start_distance_m)
        at_distance = p.q(m).value
        if at_distance < start:
            p.use(m, "signal.offset_s")
            at = (start - at_distance) / ego["speed_mps"]
            out["offset_s"] = round((onset[m.group("ph")] - at) % cycle, 3)
            p.note(f"signal.offset_s {out['offset_s']:g} from {clean(m.group(0))!r} (the ego {at_distance:g} m out at "
                   f"{at:.2f} s)")
            return
    m = p.has(r"(?:the ego'?s?|our|its|the car'?s) (?:departure|start) (?:is |gets )?(?:delayed|postponed|held back) "
              r"(?:by )?" + Q("time"))
    if m and p.free(m):
        delay = p.use(m, "signal.offset_s")
        out["offset_s"] = round(delay % cycle, 3)
        p.note(f"signal.offset_s {out['offset_s']:g} from {clean(m.group(0))!r} (the lights run ahead of the ego)")


def _arrivals(p: ParseState, app: Application, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> None:
    default = "opposing" if app is Application.LTA else "cross"
    rules = (
        # (not a message that "arrives 2 s behind time")
        (r"arriv\w* (?:at the (?:conflict point|intersection|junction) )?" + Q("time")
         + r" (?P<rel>after|before|later than|earlier than|ahead of|behind)(?! (?:time|schedule|reality|real[- ]?time)\b)",
         None),
        (Q("time") + r" (?P<rel>after|before|later than|earlier than|ahead of|behind) the ego", None),
        (r"(?:at the same time|simultaneously|together) (?:as|with)", 0.0),
        (Q("time") + r" (?P<rel>gap|headway)\b", None),  # "a 3 second gap": the agent arrives that much later
    )
    for pattern, fixed in rules:
        for m in p.finditer(pattern):
            if fixed is None and not p.free(m):
                continue
            subj = subject(p, roles, m.start(), 80)
            role = subj.what if subj and subj.what in ("cross", "opposing") else default
            if role not in agents:
                continue
            if fixed is None:
                rel = m.group("rel")
                if rel in ("gap", "headway") and app not in (Application.IMA, Application.LTA):
                    continue  # FCW's "2 s headway" is a following distance, not an arrival
                value = p.use(m, f"{role}.arrival_offset_s")
                value = -value if rel in ("before", "earlier than", "ahead of") else value
            else:
                value = fixed
            agents[role]["arrival_offset_s"] = value
            p.note(f"{role}.arrival_offset_s {value:+g} s from {clean(m.group(0))!r}")


def _gaps(p: ParseState, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> None:
    # "puts it 9 m ahead of where it actually is" is a position offset, not a gap
    for pattern in (Q("dist") + r" (?:ahead|in front|gap|headway)(?! of (?:where|its|their|the (?:true|real|actual))\b)",
                    r"(?:gap|headway|following distance|distance)(?: of| is| to the lead(?: vehicle)?)? " + Q("dist"),
                    # "at 90 km/h, 40 m behind a truck": the ego follows the lead at that gap
                    Q("dist") + r" behind (?:a |the |that |this |our |its )?(?:\w+ )?(?:lead|leader|truck|car|vehicle|van"
                                r"|bus|lorry)\b",
                    # "the lead slams on the brakes at 40 m": the gap the braking starts at
                    r"(?:brak\w*|brakes) (?:hard |sharply |suddenly )?at " + Q("dist") + r"(?! (?:from|before|past|after|short of)\b)"):
        for m in p.finditer(pattern):
            if not p.free(m):
                continue
            if " behind " in m.group(0) and p.has(r"\b(positions?|locations?|gps|placed|shown|puts?|reported|reports"
                                                  r"|appears?|claims?|says|broadcasts?)\b[^.;]{0,40}$",
                                                  p.t[max(0, m.start() - 60):m.start()]):
                continue  # "its reported position 9 m behind the truck" is a position offset, not a gap
            subj = subject(p, roles, m.start(), 60)
            role = subj.what if subj and subj.what in ("lead", "relay") else "lead"
            if role not in agents:
                continue
            agents[role]["gap_m"] = p.use(m, f"{role}.gap_m")
            p.note(f"{role}.gap_m {agents[role]['gap_m']} from {clean(m.group(0))!r}")


def _speeds(p: ParseState, roles: list[Mention], ego: dict[str, Any], agents: dict[str, dict[str, Any]]) -> None:
    for m in p.finditer(Q("speed")):
        if not p.free(m):
            continue
        subj = subject(p, roles, m.start(), 60)
        target = subj.what if subj and subj.what in agents else "ego"
        value = round(p.use(m, f"{target}.speed_mps"), 3)
        (agents[target] if target != "ego" else ego)["speed_mps"] = value
        p.note(f"{target}.speed_mps {value} from {p.n.quantities[int(m.group('q'))].raw!r}")


__all__ = ["GrammarResult", "Normalized", "Quantity", "normalize", "parse_text"]
