"""Check family 7 of the verifier (``lastv2x.core.verifier``), decision_window: every decision epoch
the applications take (``decision_epochs``), which of them each fault can reach (``_reach``), the
approach geometry a fault may move (GLOSA), and the finding for a fault no decision can see.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from lastv2x.core import catalogue as cat
from lastv2x.core.catalogue import FAULT_OPERATORS, REACTION_TIME_S, Stream, stopping_distance_m
from lastv2x.core.spec import (
    AgentRole,
    BehaviourKind,
    FaultOperator,
    JunctionKind,
    Phase,
    RsuPlacement,
)
from lastv2x.core.timeline import (
    GLOSA_MIN_SPEED_MPS,
    epoch_rule_stops,
    epoch_travel_s,
    green_release_s,
    phase_at,
    stopped_at_s,
)
from lastv2x.core.verifier_base import (
    DecisionEpochs,
    Finding,
    Repair,
    Severity,
    _budget,
    _Ctx,
    _f,
    _period,
)
from lastv2x.core.verifier_freshness import _absent_until_s, _freshness_budget
from lastv2x.core.verifier_repairs import (
    _before_amber_repair,
    _go_on_red_repair,
    _pick_repair,
    _scene_repairs,
)

# Every decision epoch the applications take (services/simulator/apps), on the spec-level timeline:
#
# * signal applications decide on the approach when d <= ds(v) (GLOSA: somewhere between the
#   constant-speed approach and the slower one its advisory drives); an ego told to stop then
#   decides again at *every* instant while it stands at the bar -- a believed green releases it, so
#   until the true green onset a phase that reads green is causal; past the bar of its junction it
#   decides nothing more, unless the route runs on through junctions the spec cannot place (a
#   corridor, a chain of RSUs, SPaT relayed from junctions ahead), whose epochs may come at any time;
# * FCW / EEBL check their lead every step from the moment the gap closes (at the latest the hard
#   brake) until the ego has stopped behind it (a stopped lead is struck no less);
# * IMA / LTA check the conflict point every step from the decision epoch until the ego has crossed
#   its stop bar: at once when the point is clear, or after it yields to the last crossing agent or
#   waits for its own green.
DECISION_SLACK_S = 0.15  # an epoch falls on a simulation step just after its closed-form time [s]
INSTANT_STEP_S = 0.1  # decision instants are sampled this finely (a message period; the ends always) [s]
STOP_SLACK_S = 0.5  # the ego may stand (v < STOPPED_MPS) this much before the closed-form stop time [s]
# FCW starts caring when TTC falls to this [s] (the catalogue's threshold, read by services.simulator.apps.conflict too)
FCW_RELEASE_TTC_S = cat.APPLICATIONS[cat.Application.FCW].threshold("release_ttc_s")
CROSSING_CLEAR_S = 1.0  # an ego yielding to an agent at the conflict point moves on this soon after it [s]
CONFLICT_CHECKS_S = 8.0  # FCW / EEBL: checks this long after the brake (the ego may still strike the stopped lead) [s]


def _effective_end(ctx: _Ctx, i: int) -> float:
    """A message sent just before a window closes stays in use until the next one arrives."""
    stream = ctx.spec.faults[i].stream
    return ctx.windows[i][1] + _period(stream) + cat.NOMINAL_LATENCY_S


def _signal_epochs(ctx: _Ctx) -> DecisionEpochs:
    spec, plan = ctx.spec, ctx.spec.signal
    glosa = ctx.app.name is cat.Application.GLOSA
    # the ego's own speed; GLOSA: also the advised approach (the ground truth's), a fault may move it off
    timelines = (ctx.own_speed,) if ctx.own_speed is ctx.ego else (ctx.own_speed, ctx.ego)
    cands = [(e.decision_epoch_s, e.speed_mps) for e in timelines if math.isfinite(e.decision_epoch_s)]
    if not cands:
        return DecisionEpochs()
    advised = ctx.ego.speed_mps if glosa and math.isfinite(ctx.ego.decision_epoch_s) else None
    a0, a1 = min(t for t, _v in cands), max(t for t, _v in cands)
    # faults on the signal streams around the approach epoch may stop an ego the truth lets go
    inducing = []
    for i, f in enumerate(spec.faults):
        if f.stream in (Stream.SPAT, Stream.MAP) and ctx.windows[i][0] <= a1 + DECISION_SLACK_S:
            end = _effective_end(ctx, i)
            if end >= a0 - _budget(ctx, f.stream):
                inducing.append(end)
    stops = [(t, v) for t, v in cands if epoch_rule_stops(plan, t, epoch_travel_s(v), glosa)]
    wait = None
    if stops or inducing:
        t_stop = min(stopped_at_s(t, v) for t, v in (stops or cands)) - STOP_SLACK_S
        t_free = max([t_stop, *inducing]) if inducing else t_stop
        t_go = min(green_release_s(plan, t_free), spec.duration_s)
        if t_go > t_stop:
            wait = (t_stop, t_go)
    corridor = (spec.map.junction_kind is JunctionKind.CORRIDOR or spec.v2x.rsu_placement is RsuPlacement.CHAIN
                or spec.v2x.spat_relay)
    return DecisionEpochs(approach=(a0, a1), wait=wait, beyond_s=a1 if corridor else math.inf, advised_mps=advised)


def _conflict_epochs(ctx: _Ctx) -> DecisionEpochs:
    spec, ego = ctx.spec, ctx.ego
    if ctx.app.follows_lead:  # FCW, EEBL (the catalogue's required roles)
        leads = [a for a in spec.agents if a.role in (AgentRole.LEAD, AgentRole.RELAY)]
        braking = [a for a in leads if a.behaviour.kind is BehaviourKind.HARD_BRAKE]
        t_b = min((a.behaviour.at_time_s or 0.0 for a in braking), default=0.0)
        start = t_b
        for a in leads:  # a lead slower than the ego closes the gap before any brake
            closing = ego.speed_mps - a.speed_mps
            if closing > 1e-6:
                bumper_gap = a.gap_m - 5.0  # less about a car length
                start = min(start, max(0.0, (bumper_gap - FCW_RELEASE_TTC_S * closing) / closing))
        # the ego strikes a stopped lead no less: checks matter until it has stopped behind it
        end = t_b + CONFLICT_CHECKS_S if braking else spec.duration_s
        return DecisionEpochs(checks=(start, min(spec.duration_s, end)))
    t_dec = 0.0 if math.isinf(ego.decision_epoch_s) else ego.decision_epoch_s
    t_conf = ctx.conflict_time_s()
    last = max(ego.stop_bar_s, t_conf)
    for a in spec.agents:
        if a.role in (AgentRole.CROSS, AgentRole.OPPOSING):
            last = max(last, t_conf + a.arrival_offset_s + CROSSING_CLEAR_S)
    if spec.map.signalized is not False and phase_at(spec.signal, ego.stop_bar_s) is not Phase.GREEN:
        # on a (possibly) signalized junction a conflict-application ego obeys its light: it checks
        # until it crosses its bar on the next green
        last = max(last, green_release_s(spec.signal, ego.stop_bar_s) + CROSSING_CLEAR_S)
    return DecisionEpochs(checks=(max(0.0, t_dec - ctx.app.freshness_budget_s), min(spec.duration_s, last)))


def decision_epochs(ctx: _Ctx) -> DecisionEpochs:
    return _signal_epochs(ctx) if ctx.signal_app else _conflict_epochs(ctx)


def decision_window_s(ctx: _Ctx) -> tuple[float, float]:
    """The approach decision's window (signal apps: the freshness budget before the epoch) or the
    interval of repeated conflict checks; ``decision_epochs`` has every epoch."""
    ep = ctx.epochs
    if ep.checks is not None:
        return ep.checks
    if ep.approach is None:
        return math.inf, math.inf
    return max(0.0, ep.approach[0] - ctx.app.freshness_budget_s), ep.approach[1]


def _reach(ctx: _Ctx, i: int) -> set[str]:
    """The decision epochs fault ``i`` can reach: 'approach', 'wait', 'beyond' (signal apps), 'checks'.

    Temporal faults on a signal stream reach only the approach (and junctions beyond): a stopped ego
    holds on stale information. Content faults reach the wait too; whether what they say releases the
    ego is ``semantic_corruption``'s question."""
    fault = ctx.spec.faults[i]
    start, _end = ctx.windows[i]
    eff_end = _effective_end(ctx, i)
    semantic = FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC
    ep, out = ctx.epochs, set()
    if ep.checks is not None:
        c0, c1 = ep.checks
        if start < c1 and eff_end > c0:
            out.add("checks")
        return out
    rng = _approach_range(ctx, i)
    if rng is not None:
        a0, a1 = rng
        lo = a0 - (0.0 if semantic else _budget(ctx, fault.stream)) - DECISION_SLACK_S
        if start <= a1 + DECISION_SLACK_S and eff_end >= lo:
            out.add("approach")
    if ep.wait is not None and semantic and start < ep.wait[1] and eff_end > ep.wait[0]:
        out.add("wait")
    if eff_end > ep.beyond_s and start < ctx.spec.duration_s:
        out.add("beyond")
    return out


def _decision_window(ctx: _Ctx) -> Iterator[Finding]:
    ep = ctx.epochs
    if ep.approach is None and ep.checks is None:
        return  # reported by anchor_reachability / timing
    w0, w1 = decision_window_s(ctx)
    last = max(w1, ep.wait[1] if ep.wait is not None else w1)
    where = f"the decision window [{w0:.2f}, {w1:.2f}] s"
    if ep.wait is not None:
        where += f" and the wait at the red [{ep.wait[0]:.2f}, {ep.wait[1]:.2f}) s"
    for i, fault in enumerate(ctx.spec.faults):
        if fault.stream not in ctx.app.consumes or ctx.reach[i]:
            continue
        start, end = ctx.windows[i]
        semantic = FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC
        lead = 1.5 if ctx.signal_app else 0.5
        offset = round(-lead - (_budget(ctx, fault.stream) if not semantic else 0.0), 3)
        candidates = [*_scene_repairs(ctx, i),
                      Repair("re-anchor the window to the decision epoch",
                             ((_f(i, "anchor.kind"), "ego_event"), (_f(i, "anchor.event"), "decision_epoch"),
                              (_f(i, "anchor.offset_s"), offset), (_f(i, "duration_s"), None)))]
        if semantic and ctx.signal_app and fault.stream is Stream.SPAT:
            candidates.insert(-1, _before_amber_repair(ctx, i))
        elif ctx.signal_app:
            candidates.append(_go_on_red_repair(ctx, i, "keep the fault", (), offset=offset))
        repair = _pick_repair(ctx, i, "decision_window", candidates)
        when = "before" if start < w0 else "after" if start >= last else "outside"
        yield Finding("decision_window", Severity.ERROR,
                      f"the fault is active [{start:.2f}, {end:.2f}) s, {when} {where}"
                      f"{'' if semantic or ep.wait is None else ' (a stopped ego holds on stale information)'}; "
                      "magnitude cannot fix timing",
                      (_f(i, "anchor"), _f(i, "duration_s")), repair)
    if not ctx.signal_app or math.isinf(ctx.ego.decision_epoch_s):
        return
    stale_problems = {f.fields[0].split(".")[0] for f in _freshness_budget(ctx) if f.severity is Severity.ERROR}
    for i, fault in enumerate(ctx.spec.faults):
        if ctx.reach[i] != {"approach"} or FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC:
            continue
        stale = _stale_instants(ctx, i)
        if _f(i) in stale_problems or any(_truth_stops(ctx, i, t) for t in stale):
            continue  # it cannot make the feed stale (freshness_budget's finding), or it matters
        budget = _budget(ctx, fault.stream)
        earlier = Repair("open the window a budget before the decision epoch, active to the end",
                         ((_f(i, "anchor.kind"), "ego_event"), (_f(i, "anchor.event"), "decision_epoch"),
                          (_f(i, "anchor.group"), None), (_f(i, "anchor.distance_m"), None),
                          (_f(i, "anchor.offset_s"), round(-0.5 - budget, 3)), (_f(i, "duration_s"), None)))
        red = _go_on_red_repair(ctx, i, "keep the fault", (), offset=round(-0.5 - budget, 3))
        if stale:
            yield Finding("decision_window", Severity.ERROR,
                          f"the fault can leave the ego without fresh {fault.stream} only at approach epochs where the "
                          "true phase lets it go anyway (a stale feed falls back to proceeding)",
                          (_f(i, "anchor"), _f(i, "duration_s"), "signal.offset_s"),
                          _pick_repair(ctx, i, "decision_window", [*_scene_repairs(ctx, i), red]))
        else:
            yield Finding("decision_window", Severity.ERROR,
                          f"the fault cannot leave the ego without fresh {fault.stream} at its decision epoch: "
                          f"{fault.stream} turns stale only {budget:g} s into a gap",
                          (_f(i, "anchor"), _f(i, "duration_s")),
                          _pick_repair(ctx, i, "decision_window", [
                              *_scene_repairs(ctx, i), earlier, red,
                              Repair("drop every message, from a budget before the decision epoch",
                                     (*earlier.patch, (_f(i, "probability"), None), (_f(i, "burst_count"), None)))]))


def _stale_instants(ctx: _Ctx, i: int) -> list[float]:
    """Approach instants at which fault i (temporal) may leave the ego without fresh information
    (or, for a delay, with information from before a phase change): from a budget after the window
    opens (a delay: at once) until the next message after it closes has arrived."""
    fault, rng = ctx.spec.faults[i], _approach_range(ctx, i)
    if rng is None:
        return []
    start, end = ctx.windows[i]
    period, lat = _period(fault.stream), cat.NOMINAL_LATENCY_S
    lo = start if fault.operator is FaultOperator.DELAY else start + _budget(ctx, fault.stream) - period - lat
    if _absent_until_s(ctx, i) > start:
        lo = 0.0  # nothing arrived before the window: absent from the start
    if fault.operator is FaultOperator.DROP and fault.burst_count is not None:
        end = min(end, start + fault.burst_count * period)
    late = (fault.magnitude or 0.0) if fault.operator is FaultOperator.DELAY else 0.0
    a = max(lo, rng[0]) - DECISION_SLACK_S
    b = min(end + period + lat + late, rng[1]) + DECISION_SLACK_S
    if a > b:
        return []
    n = min(2000, int((b - a) / INSTANT_STEP_S) + 2)
    return [a + k * (b - a) / (n - 1) for k in range(n)]


# Where a fault may move the approach epoch (GLOSA) and what the true phase says there.
def _glosa_epoch_s(ctx: _Ctx, s: float, v: float) -> float:
    """GLOSA: the approach epoch of an ego that follows the true advisory until s, then holds v."""
    adv = ctx.epochs.advised_mps or ctx.spec.ego.speed_mps
    s = max(0.0, s)
    return s + (ctx.spec.ego.start_distance_m - adv * s - stopping_distance_m(v)) / v


def _approach_range(ctx: _Ctx, i: int) -> tuple[float, float] | None:
    """First and last approach epoch fault i may meet. GLOSA's depends on the fault: the truth drives
    the advised approach, a fault that opens before it may move the ego off it -- a stale feed ends
    the advisory (back to the ego's own speed), corrupted content may advise anything from the
    slowest advisory to the ego's own speed."""
    ep = ctx.epochs
    if ep.approach is None:
        return None
    if ep.advised_mps is None:
        return ep.approach
    fault, start = ctx.spec.faults[i], _influence_start_s(ctx, i)
    t_adv = ep.approach[1]
    if start >= t_adv:
        return t_adv, t_adv
    semantic = FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC
    v_max = ctx.spec.ego.speed_mps
    v_min = min(GLOSA_MIN_SPEED_MPS, v_max)
    a0 = min(t_adv, _glosa_epoch_s(ctx, start, v_max))
    a1 = max(t_adv, _glosa_epoch_s(ctx, start, v_min)) if semantic else t_adv
    return a0, a1


def _influence_start_s(ctx: _Ctx, i: int) -> float:
    """When fault i starts to change what the ego believes: at once for content and delay faults,
    a freshness budget into the window for the others (or at once when it withholds from the start)."""
    fault, start = ctx.spec.faults[i], ctx.windows[i][0]
    if FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC or fault.operator is FaultOperator.DELAY \
            or _absent_until_s(ctx, i) > start:
        return start
    return start + _budget(ctx, fault.stream) - _period(fault.stream) - cat.NOMINAL_LATENCY_S


def _epoch_speed(ctx: _Ctx, i: int, t: float) -> float:
    """The speed of an ego whose approach epoch falls at t (under fault i): its own, or (GLOSA) the
    speed it holds from the fault's start on to reach its decision distance at t."""
    v_max, ep = ctx.spec.ego.speed_mps, ctx.epochs
    if ep.advised_mps is None or ep.approach is None:
        return ctx.ego.speed_mps
    start = _influence_start_s(ctx, i)
    if start >= ep.approach[1]:
        return ep.advised_mps
    # t = s + (D - ds(v)) / v, ds(v) = v t_r + v^2 / (2 a): v^2 / (2 a) + (t - s + t_r) v - D = 0
    s0 = max(0.0, start)
    d = ctx.spec.ego.start_distance_m - ep.advised_mps * s0
    b = t - s0 + REACTION_TIME_S
    a = cat.COMFORT_DECEL_MPS2
    v = a * (-b + math.sqrt(b * b + 2.0 * max(d, 0.0) / a))
    return min(max(v, min(GLOSA_MIN_SPEED_MPS, v_max)), v_max)


def _truth_stops(ctx: _Ctx, i: int, t: float) -> bool:
    """The epoch rule on the true phase for an approach epoch at t (under fault i)."""
    return epoch_rule_stops(ctx.spec.signal, t, epoch_travel_s(_epoch_speed(ctx, i, t)),
                            ctx.app.name is cat.Application.GLOSA)

