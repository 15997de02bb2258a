"""The offline grammar's V2X setup: channel, penetration, RSUs, relays, backhaul, equipage.

``_v2x`` fills the spec's ``v2x`` block (penetration, radio range and power, the RSU placement,
SPaT relays and EEBL rebroadcast, an RSU chain's backhaul) and marks who drives without V2X
(``_equipage``) and which conflict agent runs the application too (``_agent_applications``).
Called from ``grammar.parse_text``.
"""

from __future__ import annotations

from typing import Any

from lastv2x.core.catalogue import APPLICATIONS, Application
from lastv2x.core.variation import RANGES
from lastv2x.core.verifier import Finding, Severity
from services.llm import fault_cues
from services.llm import lexicon as lx
from services.llm.intent_text import (
    ParseState,
    Q,
    agent_for,
    role_mentions,
    rx,
    stated_range,
    subject,
)


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
    if p.has(lx.RSU_FAR_SIDE):
        v2x["rsu_site"] = "far_side"
    elif p.has(lx.RSU_NEAR_SIDE):
        v2x["rsu_site"] = "near_side"
    if "rsu_site" in v2x:
        p.note(f"v2x.rsu_site {v2x['rsu_site']} from the wording")
    m = p.has(lx.RSU_HEIGHT)
    if m:
        group = next(g for g in ("q", "q2", "q3", "q4", "q5") if m.group(g) is not None)
        if p.free(m, group):
            v2x["rsu_height_m"] = p.use(m, "v2x.rsu_height_m", group)
            p.note(f"v2x.rsu_height_m {v2x['rsu_height_m']:g} from {m.group(0)!r}")
    if p.has(lx.WINNER_B1_80211P):
        channel["model"] = "winner_b1_80211p"
    elif p.has(lx.TR37885_HIGHWAY):
        channel["model"] = "tr37885_highway"
    elif p.has(lx.TR37885_URBAN) or p.has(lx.TR37885):
        channel["model"] = "tr37885_urban" if p.has(lx.TR37885_URBAN) or p.has(lx.URBAN_CANYON) else "tr37885_highway"
    if "model" in channel:
        p.note(f"v2x.channel.model {channel['model']} from the wording")
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


def perception(p: ParseState) -> dict[str, Any] | None:
    """``perception`` from the wording: drivers with V2X who still watch the lights (``equipped_see_signals``), and
    how far a signal is seen (``signal_sight_distance_m``); None when the intent says neither."""
    out: dict[str, Any] = {}
    m = p.has(lx.SIGHT_DISTANCE)
    if m and p.free(m, "q"):
        out["signal_sight_distance_m"] = p.use(m, "perception.signal_sight_distance_m", "q")
        p.note(f"perception.signal_sight_distance_m {out['signal_sight_distance_m']:g} from {m.group(0)!r}")
    m = p.has(lx.SEES_SIGNALS)
    if m:
        out["equipped_see_signals"] = True
        p.note(f"perception.equipped_see_signals from {m.group(0)!r} (equipped drivers act on the signal they see)")
    return out or None


def variation(p: ParseState) -> dict[str, Any] | None:
    """``variation`` from the wording, for seed-varied worlds: the drivers' leader-perception reaction time ("drivers
    react 1.2 s late", "reaction times between 0.8 and 1.5 s"), the reaction to a warning ("drivers respond to a warning
    within 0.7 to 1.5 s"), a speed range ("speeds drawn between 10 and 15 m/s") and an arrival jitter ("arrival jitter
    of ±1 s"); each pinned (one value) or drawn per seed (a range). Before the speeds and faults, so that a range read
    here is nobody's speed and no fault's size. A value outside its range (``lastv2x.core.variation.RANGES``) is
    reported with the range, never clamped. None when the intent says none."""
    out: dict[str, Any] = {}
    for key, pattern in (("alerted_reaction_s", lx.WARNING_REACTION), ("reaction_time_s", lx.REACTION_TIME),
                         ("desired_speed_mps", lx.VARIED_SPEED), ("arrival_jitter_s", lx.ARRIVAL_JITTER)):
        for m in p.finditer(pattern):
            group = next((g for g in ("q", "qa", "q2") if m.groupdict().get(g) is not None), None)
            if group is None or not p.free(m, group):
                continue
            rng = stated_range(p.n, p.q(m, group))
            high = p.use(m, f"variation.{key}", group)
            low = high
            if rng is not None:
                low = rng.low
                if rng.low_quantity is not None:
                    rng.low_quantity.used = f"variation.{key} (the lower end)"
            if key == "arrival_jitter_s" and rng is None:
                low = -high  # "±1 s", "up to 1 s early or late": either way
            lowest, highest, unit = RANGES[key]
            if low < lowest or high > highest:  # stated, so never clamped: said back with the range instead
                clause = rx(r"<q(\d+):\w+>").sub(lambda k: p.n.quantities[int(k.group(1))].raw,
                                                   p.n.sentence(p.n.sentence_of(m.start()))).strip(" .;!?")
                p.findings.append(Finding(fault_cues.CHECK, Severity.WARNING,
                                          f"the intent asks for something the spec cannot hold: {clause!r} "
                                          f"(variation.{key} [{low:g}, {high:g}] is outside [{lowest:g}, {highest:g}] "
                                          f"{unit}); the spec runs without it", (f"variation.{key}",)))
                break
            out[key] = {"min": low, "max": high}
            p.note(f"variation.{key} [{low:g}, {high:g}] from {m.group(0)!r} (drawn per seed)")
            break
    return out or None


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
