"""Analytic verifier (LAST-V2X Appendix A): can this spec's faults matter at all?

Before any simulation, eleven check families read the spec and the closed-form
timeline (``lastv2x.core.timeline``) and return findings. Each finding names the
check, a severity, the responsible field paths and a minimal repair, a list of
(path, value) patches that the parser's repair loop can apply verbatim.

Severities: ``error`` blocks execution (and triggers parser revision or gates a
search mutant); ``warning`` flags a low-attribution or uninformative scenario;
``note`` records a property (for instance a deliberate silent-miss probe).

Age of information (AoI), closed form, for a stream of period T and latency L:
  burst of n drops      AoI_peak = (n + 1) * T + L      breach iff AoI_peak > B
  added delay d         AoI_peak = T + L + d
  timestamp offset o    perceived age = o + L (+ up to T)
  sender suppressed     AoI grows without bound from the window start
so the smallest breaching burst is n* = floor((B - L) / T) and the shortest
breaching episode is n* * T seconds.

The families, in order: consistency, roster, stream_consumption, operator_field,
anchor_reachability, freshness_budget, decision_window, semantic_corruption,
timing, penetration, channel_baseline.

The verifier is also the search's feasibility gate, so a fault may be blocked only where no
decision the application actually takes can see it (``DecisionEpochs``): the approach epoch
(GLOSA: wherever its advisory, or a fault that moves it, takes the ego), every instant an ego
stopped at its red waits for a believed green, junctions a corridor adds at times the spec
cannot tell, and the repeated checks of the conflict applications. Signal applications fail
by entering on red, so a fault matters where it lets go an ego the true phase stops: a
content fault by what it makes the ego believe, a stale feed (the fallback proceeds) only
where the truth stops it. Repairs are tried on a copy of the spec and the first that clears
the fault is returned; those that keep the fault as written (re-timing the signal, moving
the ego or the brake) come before those that move its window.

This module holds families 1-5 and 9-11, their registration order and ``verify``; the rest
sit below it: ``verifier_base`` (findings, the report, the per-run context, the registry),
``verifier_freshness`` (6), ``verifier_repairs`` (repairs shared by 7 and 8, tried on a copy
through the context), ``verifier_epochs`` (the decision epochs and 7), ``verifier_semantic`` (8).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import partial

from lastv2x.core import catalogue as cat
from lastv2x.core.catalogue import APPLICATIONS, STREAMS
from lastv2x.core.faults import free_id, operator_field_problems
from lastv2x.core.perception import TAILGATER_GAP_M
from lastv2x.core.spec import (
    AgentRole,
    AnchorEvent,
    AnchorKind,
    BehaviourKind,
    FaultOperator,
    GhostRoute,
    RsuPlacement,
    ScenarioSpec,
)
from lastv2x.core.timeline import (
    CROSS_GROUP,
    EGO_GROUP_ALIASES,
    anchor_time_s,
    ego_timeline,
    fault_window_s,
    glosa_timeline,
)
from lastv2x.core.variation import problems as variation_problems
from lastv2x.core.verifier_base import (
    CHECKS,
    Check,
    DecisionEpochs,
    Finding,
    Repair,
    Severity,
    VerificationReport,
    _Ctx,
    _f,
)
from lastv2x.core.verifier_epochs import (
    CONFLICT_CHECKS_S,
    CROSSING_CLEAR_S,
    DECISION_SLACK_S,
    FCW_RELEASE_TTC_S,
    INSTANT_STEP_S,
    STOP_SLACK_S,
    _decision_window,
    _reach,
    decision_epochs,
    decision_window_s,
)
from lastv2x.core.verifier_freshness import (
    _freshness_budget,
    burst_breach_probability,
    smallest_breaching_burst,
)
from lastv2x.core.verifier_semantic import _semantic_corruption


# 1 consistency ───────────────────────────────────────────────────────────────
def _consistency(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    ids = [a.id for a in spec.agents]
    for i, a in enumerate(spec.agents):
        if a.id == "ego" or ids.index(a.id) != i:
            yield Finding("consistency", Severity.ERROR, f"agent id {a.id!r} is not unique",
                          (f"agents[{i}].id",), Repair("rename the agent", ((f"agents[{i}].id", f"{a.id}_{i}"),)))
    names = [f.name for f in spec.faults]
    agents = {a.id: a for a in spec.agents}
    for i, fault in enumerate(spec.faults):
        if names.index(fault.name) != i:
            yield Finding("consistency", Severity.ERROR, f"fault name {fault.name!r} is not unique",
                          (_f(i, "name"),), Repair("rename the fault", ((_f(i, "name"), f"{fault.name}_{i}"),)))
        sender = fault.sender
        if sender is None or fault.operator in (FaultOperator.GHOST_SENDER, FaultOperator.SPOOFED_RSU):
            # a forged sender's id is nobody's (operator_field)
            continue
        kind = STREAMS[fault.stream].sender
        if sender == "rsu":
            if kind != "rsu":
                yield Finding("consistency", Severity.ERROR, f"RSUs do not send {fault.stream}",
                              (_f(i, "sender"),), Repair("restrict to a vehicle sender or none", ((_f(i, "sender"), None),)))
        elif sender == "ego":
            yield Finding("consistency", Severity.ERROR, "the ego does not receive its own messages",
                          (_f(i, "sender"),), Repair("restrict to another sender or none", ((_f(i, "sender"), None),)))
        elif sender not in agents:
            yield Finding("consistency", Severity.ERROR, f"sender {sender!r} is not an agent of this spec",
                          (_f(i, "sender"),), Repair(f"use one of {sorted(agents) or ['rsu']}", ((_f(i, "sender"), None),)))
        elif kind == "rsu":
            yield Finding("consistency", Severity.ERROR, f"vehicles do not send {fault.stream}",
                          (_f(i, "sender"),), Repair("use sender 'rsu'", ((_f(i, "sender"), "rsu"),)))
        elif not agents[sender].equipped:
            j = ids.index(sender)
            yield Finding("consistency", Severity.ERROR, f"sender {sender!r} is unequipped and sends nothing to fault",
                          (_f(i, "sender"), f"agents[{j}].equipped"),
                          Repair("equip the sender", ((f"agents[{j}].equipped", True),)))


    yield from _equipage(spec)
    for p in variation_problems(spec):  # seed-drawn bounds: one rule with the program builders'
        yield Finding("consistency", Severity.ERROR, p.message, p.fields, Repair(p.repair, p.patch))
    var = spec.variation
    if var is not None and var.background_vehicles is not None and not spec.map.busy:
        yield Finding("consistency", Severity.WARNING, "variation.background_vehicles draws background traffic "
                      "but map.busy is false, so none is placed", ("variation.background_vehicles", "map.busy"),
                      Repair("turn background traffic on", (("map.busy", True),)))
    if var is not None and var.arrival_jitter_s is not None and not any(
            a.role in (AgentRole.CROSS, AgentRole.OPPOSING) for a in spec.agents):
        yield Finding("consistency", Severity.WARNING, "variation.arrival_jitter_s has no cross or opposing agent "
                      "to move", ("variation.arrival_jitter_s",), Repair("drop the jitter",
                                                                         (("variation.arrival_jitter_s", None),)))


# 2 roster ────────────────────────────────────────────────────────────────────
def _equipage(spec: ScenarioSpec) -> Iterator[Finding]:
    """Equipage that contradicts what the spec asks of a vehicle (issue 17: drivers without V2X)."""
    for i, a in enumerate(spec.agents):
        if a.role is AgentRole.RELAY and not a.equipped and spec.v2x.eebl_rebroadcast:
            yield Finding("consistency", Severity.ERROR,
                          f"agent {a.id!r} is asked to relay (v2x.eebl_rebroadcast) but is unequipped: it can "
                          "rebroadcast nothing (for an unequipped middle car, give it role 'lead')",
                          (f"agents[{i}].equipped", f"agents[{i}].role", "v2x.eebl_rebroadcast"),
                          Repair("equip the relay", ((f"agents[{i}].equipped", True),)))
    for i, a in enumerate(spec.agents):
        if a.application is not None and not a.equipped:
            yield Finding("consistency", Severity.ERROR,
                          f"agent {a.id!r} is asked to run {a.application.value} but is unequipped: it receives nothing",
                          (f"agents[{i}].equipped", f"agents[{i}].application"),
                          Repair("equip the agent", ((f"agents[{i}].equipped", True),)))
    bh = spec.v2x.backhaul
    for i, fault in enumerate(spec.faults):
        if fault.operator is FaultOperator.SPOOFED_RSU and spec.v2x.rsu_placement is RsuPlacement.NONE:
            yield Finding("consistency", Severity.ERROR,
                          "a forged roadside unit transmits from beside the junction's RSU site, and rsu_placement "
                          "'none' places no RSU", (_f(i, "operator"), "v2x.rsu_placement"),
                          Repair("place an RSU at the junction", (("v2x.rsu_placement", "junction"),)))
    if bh is not None and spec.v2x.rsu_placement is not RsuPlacement.CHAIN:
        placed = "no RSU" if spec.v2x.rsu_placement is RsuPlacement.NONE else "one RSU (rsu0)"
        yield Finding("consistency", Severity.ERROR,
                      f"v2x.backhaul joins RSUs that do not exist: rsu_placement "
                      f"{spec.v2x.rsu_placement.value!r} places {placed}",
                      ("v2x.backhaul", "v2x.rsu_placement"),
                      Repair("place an RSU at every junction of the route", (("v2x.rsu_placement", "chain"),)))
    if bh is not None:
        for i, link in enumerate(bh.links):
            if link.rsu_a == link.rsu_b:
                kept = [ln.model_dump(mode="json") for k, ln in enumerate(bh.links) if k != i]
                yield Finding("consistency", Severity.ERROR, f"v2x.backhaul.links[{i}] joins {link.rsu_a} to itself",
                              (f"v2x.backhaul.links[{i}]",), Repair("drop the link", (("v2x.backhaul.links", kept),)))
    if not spec.ego.equipped and spec.faults:
        yield Finding("consistency", Severity.ERROR,
                      "the ego is unequipped: it receives no messages for the faults to act on",
                      ("ego.equipped", "faults"), Repair("equip the ego", (("ego.equipped", True),)))
    if spec.perception is not None and not spec.perception.equipped_see_signals and spec.ego.equipped and all(
            a.equipped for a in spec.agents):
        yield Finding("consistency", Severity.WARNING,
                      "perception applies to unequipped vehicles, and every scenario vehicle is equipped",
                      ("perception",), Repair("drop perception", (("perception", None),)))


def _roster(ctx: _Ctx) -> Iterator[Finding]:
    spec, app = ctx.spec, ctx.app
    roles = [a.role for a in spec.agents]
    for role in app.required_roles:
        if AgentRole(role) not in roles:
            yield Finding("roster", Severity.ERROR, f"{app.name} needs a '{role}' agent", ("agents",),
                          Repair(f"add a {role} agent", (("agents[+]", {"id": role, "role": role}),)))
    if spec.ego.maneuver.value not in app.ego_maneuvers:
        want = app.ego_maneuvers[0]
        yield Finding("roster", Severity.ERROR, f"{app.name} ego must go {'/'.join(app.ego_maneuvers)}",
                      ("ego.maneuver",), Repair(f"set the ego manoeuvre to {want}", (("ego.maneuver", want),)))
    # a phantom's forged hard brake (ghost_sender on EEBL) raises the event without a braking lead
    forged_event = any(f.operator is FaultOperator.GHOST_SENDER and f.stream is cat.Stream.EEBL for f in spec.faults)
    if app.name is cat.Application.EEBL and not forged_event:
        leads = [i for i, a in enumerate(spec.agents) if a.role is AgentRole.LEAD]
        if leads and not any(spec.agents[i].behaviour.kind is BehaviourKind.HARD_BRAKE for i in leads):
            i = leads[0]
            yield Finding("roster", Severity.ERROR, "EEBL needs a hard-braking lead to raise the event",
                          (f"agents[{i}].behaviour.kind",),
                          Repair("make the lead brake hard", ((f"agents[{i}].behaviour.kind", "hard_brake"),)))
    hazard = any(a.role is AgentRole.LEAD and a.behaviour.kind is BehaviourKind.HARD_BRAKE for a in spec.agents)
    yield from _phantom_follower(ctx)
    for i, a in enumerate(spec.agents):
        if a.role is AgentRole.FOLLOWER and app.ahead_only and hazard:
            yield Finding("roster", Severity.WARNING,
                          f"follower {a.id!r} (an inattentive driver, 2 s) strikes any hard brake of the ego, so it also "
                          "strikes the ground-truth twin braking for the lead's real hard brake: such a scene cannot "
                          "admit a failure unless a fault invents the hazard (ghost_sender)",
                          (f"agents[{i}].role",), Repair("make it background traffic",
                                                          ((f"agents[{i}].role", "background"),)))
        if a.role is AgentRole.FOLLOWER and not app.ahead_only:
            yield Finding("roster", Severity.WARNING,
                          f"{app.name} counts any collision, so follower {a.id!r} (an inattentive driver, 2 s) striking "
                          "the ego is a failure in both rollouts whenever both stop (a real red or real cross "
                          "traffic): a failure is admitted only where a fault makes the message-driven ego alone "
                          "stop or yield",
                          (f"agents[{i}].role",), Repair("make it background traffic",
                                                          ((f"agents[{i}].role", "background"),)))
    if spec.v2x.eebl_rebroadcast and AgentRole.RELAY not in roles:
        yield Finding("roster", Severity.WARNING, "EEBL rebroadcast is on but no relay vehicle is placed",
                      ("v2x.eebl_rebroadcast", "agents"),
                      Repair("add a relay agent", (("agents[+]", {"id": "relay", "role": "relay"}),)))


PHANTOM_FOLLOWER = "phantom_follower"  # the check of a phantom brake that nobody can strike (a campaign applies it)


def _phantom_follower(ctx: _Ctx) -> Iterator[Finding]:
    """A phantom (``ghost_sender``) ahead of an FCW or EEBL ego can only make it brake for nothing, and the
    adjudicator's only failure of a needless brake is a rear strike by a vehicle behind within 3 s: with nobody
    following the ego, no run of the scene can fail. Repair: a tailgater at the ego's speed
    (``perception.TAILGATER_GAP_M`` behind), the driver a needless brake endangers. A WARNING (the spec is valid
    as stated, and the parser leaves the user's scene alone); a campaign applies it as an observability repair."""
    spec, app = ctx.spec, ctx.app
    ghosts = [i for i, f in enumerate(spec.faults) if f.operator is FaultOperator.GHOST_SENDER]
    if not (app.ahead_only and ghosts) or any(a.role is AgentRole.FOLLOWER for a in spec.agents):
        return
    taken = {"ego", *(a.id for a in spec.agents), *(f.sender for f in spec.faults if f.sender)}
    name = free_id("follower", taken)
    yield Finding(PHANTOM_FOLLOWER, Severity.WARNING,
                  f"a phantom ({spec.faults[ghosts[0]].name!r}) can only make the ego brake for nothing, and "
                  f"{app.name} fails on a needless brake only when a vehicle behind strikes it: nobody follows the "
                  "ego, so no run of this scene can fail",
                  ("agents", _f(ghosts[0], "operator")),
                  Repair("add a tailgater behind the ego", (("agents[+]", {
                      "id": name, "role": "follower", "gap_m": TAILGATER_GAP_M,
                      "speed_mps": float(spec.ego.speed_mps)}),)))


# 3 stream_consumption ────────────────────────────────────────────────────────
def _stream_consumption(ctx: _Ctx) -> Iterator[Finding]:
    consumed = ctx.app.consumes
    for i, fault in enumerate(ctx.spec.faults):
        if fault.stream not in consumed:
            target = next(iter(consumed))
            yield Finding("stream_consumption", Severity.ERROR,
                          f"{ctx.app.name} never consumes {fault.stream}; the fault cannot reach the decision",
                          (_f(i, "stream"),), Repair(f"target a consumed stream ({', '.join(consumed)})",
                                                     ((_f(i, "stream"), target.value),)))
        elif fault.field not in (None, "*") and fault.field not in consumed[fault.stream]:
            yield Finding("stream_consumption", Severity.ERROR,
                          f"{ctx.app.name} does not read {fault.stream}.{fault.field}",
                          (_f(i, "field"),), Repair(f"target one of {', '.join(consumed[fault.stream])}",
                                                    ((_f(i, "field"), None),)))


# 4 operator_field ────────────────────────────────────────────────────────────
def _operator_field(ctx: _Ctx) -> Iterator[Finding]:
    """The operator/field/magnitude rules of ``lastv2x.core.faults`` (the simulator refuses the same)."""
    for i, fault in enumerate(ctx.spec.faults):
        for p in operator_field_problems(fault, ctx.spec):
            yield Finding("operator_field", Severity.ERROR, p.message, tuple(_f(i, x) for x in p.fields),
                          Repair(p.repair, tuple((_f(i, x), v) for x, v in p.patch)))


# 5 anchor_reachability ───────────────────────────────────────────────────────
def _anchor_reachability(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    for i, fault in enumerate(spec.faults):
        anchor = fault.anchor
        if anchor.kind is AnchorKind.SIGNAL_EVENT:
            if spec.map.signalized is False:
                yield Finding("anchor_reachability", Severity.ERROR, "signal events never happen on an unsignalized map",
                              (_f(i, "anchor"), "map.signalized"),
                              Repair("anchor to scenario time", ((_f(i, "anchor.kind"), "scenario_time"),
                                                                 (_f(i, "anchor.event"), "none"))))
                continue
            if anchor.group not in EGO_GROUP_ALIASES and anchor.group != CROSS_GROUP:
                yield Finding("anchor_reachability", Severity.NOTE,
                              f"signal group {anchor.group!r} is resolved at grounding; timing assumes the ego group",
                              (_f(i, "anchor.group"),))
        if anchor.event is AnchorEvent.STOP_BAR_DISTANCE and (anchor.distance_m or 0.0) > spec.ego.start_distance_m:
            d = spec.ego.start_distance_m - 1.0
            yield Finding("anchor_reachability", Severity.ERROR,
                          f"the ego starts {spec.ego.start_distance_m} m from the stop bar, never {anchor.distance_m} m",
                          (_f(i, "anchor.distance_m"), "ego.start_distance_m"),
                          Repair("anchor inside the approach", ((_f(i, "anchor.distance_m"), d),)))
            continue
        if anchor.event is AnchorEvent.DECISION_EPOCH and math.isinf(ctx.ego.decision_epoch_s):
            need = math.ceil(ctx.ego.decision_distance_m + 20.0)
            yield Finding("anchor_reachability", Severity.ERROR,
                          f"the ego starts inside its decision distance ({ctx.ego.decision_distance_m:.1f} m)",
                          (_f(i, "anchor"), "ego.start_distance_m"),
                          Repair("start the ego farther out", (("ego.start_distance_m", float(need)),)))
            continue
        start, _end = ctx.windows[i]
        if start >= spec.duration_s:
            t_anchor = anchor_time_s(spec, fault, ctx.ego)
            yield Finding("anchor_reachability", Severity.ERROR,
                          f"the window opens at {start:.2f} s, after the scenario ends ({spec.duration_s} s)",
                          (_f(i, "anchor"), "duration_s"),
                          Repair("extend the scenario", (("duration_s", float(math.ceil(t_anchor + anchor.offset_s + 10))),)))


# 6 freshness_budget ──────────────────────────────────────────────────────────
# in lastv2x.core.verifier_freshness

# 7 decision_window ───────────────────────────────────────────────────────────
# in lastv2x.core.verifier_epochs (with the decision epochs; its repairs: verifier_repairs)

# 8 semantic_corruption ───────────────────────────────────────────────────────
# in lastv2x.core.verifier_semantic

# 9 timing ────────────────────────────────────────────────────────────────────
def _timing(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    if ctx.app.follows_lead:  # FCW, EEBL (the catalogue's required roles)
        for i, a in enumerate(spec.agents):
            t_b = a.behaviour.at_time_s
            if a.behaviour.kind is BehaviourKind.HARD_BRAKE and t_b is not None and t_b >= spec.duration_s:
                yield Finding("timing", Severity.ERROR, f"the hard brake at {t_b} s is after the scenario ends",
                              (f"agents[{i}].behaviour.at_time_s", "duration_s"),
                              Repair("brake earlier", ((f"agents[{i}].behaviour.at_time_s", round(spec.duration_s / 3, 2)),)))
        return
    t_bar = ctx.ego.stop_bar_s
    if t_bar > spec.duration_s:
        yield Finding("timing", Severity.ERROR,
                      f"the ego reaches the stop bar at {t_bar:.2f} s, after the scenario ends",
                      ("duration_s", "ego.start_distance_m", "ego.speed_mps"),
                      Repair("extend the scenario", (("duration_s", float(math.ceil(t_bar + 10.0))),)))
    t_conf = ctx.conflict_time_s()
    # a phantom on the crossing route (ghost_sender, ghost_route cross) is the conflict: the real one may stay away
    phantom = any(f.operator is FaultOperator.GHOST_SENDER and f.ghost_route is GhostRoute.CROSS for f in spec.faults)
    for i, a in enumerate(spec.agents):
        if a.role not in (AgentRole.CROSS, AgentRole.OPPOSING):
            continue
        if abs(a.arrival_offset_s) > cat.CONFLICT_WINDOW_S and not phantom:
            yield Finding("timing", Severity.ERROR,
                          f"{a.id} arrives {a.arrival_offset_s} s from the ego, outside the "
                          f"{cat.CONFLICT_WINDOW_S} s arrival-overlap window: no conflict",
                          (f"agents[{i}].arrival_offset_s",),
                          Repair("arrive within the window", ((f"agents[{i}].arrival_offset_s",
                                                               math.copysign(cat.CONFLICT_WINDOW_S, a.arrival_offset_s)),)))
        elif t_conf + a.arrival_offset_s < 0.0:
            yield Finding("timing", Severity.ERROR, f"{a.id} would have to reach the conflict point before t = 0",
                          (f"agents[{i}].arrival_offset_s",),
                          Repair("arrive later", ((f"agents[{i}].arrival_offset_s", round(-t_conf + 1.0, 2)),)))


# 10 penetration ──────────────────────────────────────────────────────────────
def _penetration(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    if spec.v2x.penetration < cat.PENETRATION_WARNING_BELOW:
        yield Finding("penetration", Severity.WARNING,
                      f"penetration {spec.v2x.penetration} < {cat.PENETRATION_WARNING_BELOW}: few senders, low attribution",
                      ("v2x.penetration",), Repair("raise penetration", (("v2x.penetration", cat.PENETRATION_WARNING_BELOW),)))
    key_roles = {AgentRole(r) for r in ctx.app.required_roles}
    unequipped = [i for i, a in enumerate(spec.agents) if a.role in key_roles and not a.equipped]
    if unequipped and not spec.faults:
        yield Finding("penetration", Severity.NOTE,
                      "silent-miss probe: the conflict agent is unequipped and no fault is injected",
                      tuple(f"agents[{i}].equipped" for i in unequipped))
    elif unequipped:
        yield Finding("penetration", Severity.WARNING,
                      "the conflict agent is unequipped: its absence, not the fault, drives the outcome",
                      tuple(f"agents[{i}].equipped" for i in unequipped),
                      Repair("equip the conflict agent", tuple((f"agents[{i}].equipped", True) for i in unequipped)))


# 11 channel_baseline ─────────────────────────────────────────────────────────
RSU_SETBACK_M = 10.0  # RSU mast distance beyond the stop bar


RANGE_LEAD_S = 2.0  # a range repair covers this much driving before the decision epoch [s]


def _channel_baseline(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    range_m = spec.v2x.channel.range_m
    if ctx.signal_app:
        if spec.v2x.rsu_placement is RsuPlacement.NONE:
            yield Finding("channel_baseline", Severity.WARNING,
                          "no RSU: SPaT never arrives, the pristine channel is already over budget",
                          ("v2x.rsu_placement",), Repair("place an RSU at the junction", (("v2x.rsu_placement", "junction"),)))
        elif range_m < ctx.ego.decision_distance_m + RSU_SETBACK_M:
            # in range for RANGE_LEAD_S of driving before the decision epoch: SPaT and MAP acquired and fresh by then
            need = math.ceil(ctx.ego.decision_distance_m + RSU_SETBACK_M + max(10.0, RANGE_LEAD_S * spec.ego.speed_mps))
            yield Finding("channel_baseline", Severity.WARNING,
                          f"at the decision epoch the ego is {ctx.ego.decision_distance_m + RSU_SETBACK_M:.0f} m from the RSU, "
                          f"beyond range {range_m} m: the pristine channel already breaches the budget",
                          ("v2x.channel.range_m",), Repair("extend the range or relay SPaT", (("v2x.channel.range_m", float(need)),)))
        return
    relays = [a for a in spec.agents if a.role is AgentRole.RELAY and a.equipped] if spec.v2x.eebl_rebroadcast else []
    for i, a in enumerate(spec.agents):
        if a.role in (AgentRole.CROSS, AgentRole.OPPOSING):
            horizon = 4.0
            dist = math.hypot(spec.ego.speed_mps * horizon, a.speed_mps * horizon)
        elif a.role is AgentRole.LEAD:
            dist = a.gap_m
            if relays and dist <= range_m:  # a relay chain whose lead the ego hears directly (issue 17, item 7)
                nearer = [r.gap_m for r in relays if r.gap_m < dist]
                yield Finding("channel_baseline", Severity.WARNING,
                              f"the relay is not needed: {a.id} is {dist:.0f} m ahead, within the ego's direct "
                              f"range {range_m} m", (f"agents[{i}].gap_m", "v2x.channel.range_m"),
                              Repair("shorten the range to between the relay's and the lead's gaps",
                                     (("v2x.channel.range_m", round(max(10.0, (dist + max(nearer)) / 2), 1)),))
                              if nearer and (dist + max(nearer)) / 2 >= 10.0 else None)
            if relays and any(r.gap_m < dist and dist - r.gap_m <= range_m >= r.gap_m for r in relays):
                continue  # beyond the ego's range, within a relay's: what a relay chain is for
        else:
            continue
        if dist > range_m:
            yield Finding("channel_baseline", Severity.WARNING,
                          f"{a.id} is {dist:.0f} m from the ego when it matters, beyond range {range_m} m",
                          ("v2x.channel.range_m", f"agents[{i}]"),
                          Repair("extend the range", (("v2x.channel.range_m", float(math.ceil(dist + 10))),)))


# The families, registered in this order: findings are reported in it, and the parser's repair loop
# applies the first error's repair. Families 6-8 are implemented in their own modules.
_FAMILIES: tuple[tuple[str, Check], ...] = (
    ("consistency", _consistency),
    ("roster", _roster),
    ("stream_consumption", _stream_consumption),
    ("operator_field", _operator_field),
    ("anchor_reachability", _anchor_reachability),
    ("freshness_budget", _freshness_budget),
    ("decision_window", _decision_window),
    ("semantic_corruption", _semantic_corruption),
    ("timing", _timing),
    ("penetration", _penetration),
    ("channel_baseline", _channel_baseline),
)
for _name, _check in _FAMILIES:
    CHECKS.register(_name, _check)


def verify(spec: ScenarioSpec) -> VerificationReport:
    """Run every check family; pure, deterministic, no simulation."""
    return _verify(spec)


def _verify(spec: ScenarioSpec, search_repairs: bool = True) -> VerificationReport:
    const = ego_timeline(spec)
    # GLOSA's ego drives its advisory: ego events (and the ego's epoch) fall where the advisory takes it
    ego = glosa_timeline(spec) if spec.application is cat.Application.GLOSA else const
    ctx = _Ctx(spec, APPLICATIONS[spec.application], ego, [fault_window_s(spec, f, ego) for f in spec.faults],
               const=const, rerun=partial(_verify, search_repairs=False) if search_repairs else None)
    ctx.epochs = decision_epochs(ctx)
    ctx.reach = [_reach(ctx, i) for i in range(len(spec.faults))]
    findings = tuple(f for name in CHECKS for f in CHECKS[name](ctx))
    return VerificationReport(findings, ego.decision_epoch_s, ego.stop_bar_s)


__all__ = ["CHECKS", "Finding", "Repair", "Severity", "VerificationReport", "verify",
           "smallest_breaching_burst", "burst_breach_probability", "decision_window_s", "DecisionEpochs",
           "decision_epochs", "Check", "RSU_SETBACK_M", "DECISION_SLACK_S", "INSTANT_STEP_S", "STOP_SLACK_S",
           "FCW_RELEASE_TTC_S", "CROSSING_CLEAR_S", "CONFLICT_CHECKS_S"]
