"""Check family 8 of the verifier (``lastv2x.core.verifier``), semantic_corruption: what a content
fault makes the ego believe (``_belief``), the decision instants it covers, whether the belief lets
go an ego the true phase stops, and the repairs that make it do so; the budgets of BSM content faults.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from lastv2x.core import catalogue as cat
from lastv2x.core import tolerance
from lastv2x.core.catalogue import FAULT_OPERATORS, Stream
from lastv2x.core.faults import CROSS_GHOST_APPS, rewires_lanes
from lastv2x.core.program import DEFAULT_VEHICLE_LENGTH_M
from lastv2x.core.spec import AgentRole, FaultOperator, GhostRoute, Phase
from lastv2x.core.timeline import (
    CROSS_GROUP,
    GLOSA_RED_END_MARGIN_S,
    epoch_travel_s,
    offset_for_amber_at,
    phase_at,
    signal_rule_stops,
    time_to_change_s,
)
from lastv2x.core.verifier_base import Finding, Repair, Severity, _Ctx, _f, _period
from lastv2x.core.verifier_epochs import (
    DECISION_SLACK_S,
    INSTANT_STEP_S,
    _approach_range,
    _effective_end,
    _epoch_speed,
    _truth_stops,
    decision_window_s,
)
from lastv2x.core.verifier_repairs import (
    _before_amber_repair,
    _go_on_red_repair,
    _pick_repair,
    _repair_window,
    _scene_repairs,
)


# A signal application fails by entering on red, so a content fault matters only where it lets an
# ego go that the true phase stops: at an approach epoch (believed go, true stop) or while the ego
# stands at the red (believed green). Each modelled fault's belief at t is (phase, countdown).
def _instants(ctx: _Ctx, i: int, lo: float, hi: float) -> list[float]:
    """Decision instants in [lo, hi] that fault i's effective window covers, every INSTANT_STEP_S or finer."""
    a, b = max(lo, ctx.windows[i][0]), min(hi, _effective_end(ctx, i))
    if a > b:
        return []
    n = min(2000, int((b - a) / INSTANT_STEP_S) + 2)
    return [a + k * (b - a) / (n - 1) for k in range(n)]


def _approach_instants(ctx: _Ctx, i: int, retimed: bool = False) -> list[float]:
    """Approach instants fault i covers; ``retimed``: every approach instant, as if its window covered them."""
    rng = _approach_range(ctx, i)
    if rng is None or ("approach" not in ctx.reach[i] and not retimed):
        return []
    a0, a1 = rng
    lo, hi = a0 - _period(ctx.spec.faults[i].stream) - cat.NOMINAL_LATENCY_S, a1 + DECISION_SLACK_S
    if retimed:
        n = min(2000, int((hi - lo) / INSTANT_STEP_S) + 2)
        return [lo + k * (hi - lo) / (n - 1) for k in range(n)]
    return _instants(ctx, i, lo, hi)


def _wait_instants(ctx: _Ctx, i: int) -> list[float]:
    wait = ctx.epochs.wait
    return _instants(ctx, i, wait[0], wait[1]) if wait is not None and "wait" in ctx.reach[i] else []


Belief = Callable[[float], tuple[Phase, float]]


def _belief(ctx: _Ctx, i: int) -> Belief | None:
    """What fault ``i`` alone makes the ego believe at t, as (phase, countdown); None = not modelled."""
    plan, fault = ctx.spec.signal, ctx.spec.faults[i]
    op = fault.operator
    if op is FaultOperator.SPAT_PHASE_CORRUPT and fault.target_phase is not None:
        target = fault.target_phase
        return lambda t: (target, time_to_change_s(plan, t))
    if op is FaultOperator.SPAT_COUNTDOWN_OFFSET and fault.magnitude is not None \
            and ctx.app.name is not cat.Application.GLOSA:  # GLOSA reads countdowns in every phase
        shift = fault.magnitude
        return lambda t: (phase_at(plan, t), max(0.0, time_to_change_s(plan, t) + shift))
    if op is FaultOperator.FREEZE and fault.stream is Stream.SPAT:
        c = max(0.0, ctx.windows[i][0] - _period(fault.stream))  # the last message before the window
        phase, end = phase_at(plan, c), c + time_to_change_s(plan, c)  # min_end_time is absolute
        return lambda t: (phase, max(0.0, end - t))
    if rewires_lanes(fault) and fault.target_group in (None, CROSS_GROUP):  # a real or a forged MAP
        return lambda t: (phase_at(plan, t, CROSS_GROUP), time_to_change_s(plan, t, CROSS_GROUP))
    return None


def _goes_on_red(ctx: _Ctx, i: int, belief: Belief, retimed: bool = False) -> bool:
    """Does the belief let the ego go where the true phase stops it, at an epoch fault i covers
    (``retimed``: at any approach epoch, wherever its window is)?"""
    plan, glosa = ctx.spec.signal, ctx.app.name is cat.Application.GLOSA
    for t in _approach_instants(ctx, i, retimed):
        phase, ttc = belief(t)
        if _truth_stops(ctx, i, t) and not signal_rule_stops(phase, ttc, epoch_travel_s(_epoch_speed(ctx, i, t)), glosa):
            return True
    return not retimed and any(belief(t)[0] is Phase.GREEN and phase_at(plan, t) is not Phase.GREEN
                               for t in _wait_instants(ctx, i))


def _countdown_shifts(ctx: _Ctx, i: int, retimed: bool = False) -> list[float]:
    """Countdown shifts that let the ego go where the truth stops it, at an approach instant fault i
    covers (0.25 s past the margin): a longer amber it believes it clears, a red (GLOSA) it believes
    ends before it arrives."""
    plan, glosa, out = ctx.spec.signal, ctx.app.name is cat.Application.GLOSA, []
    for t in _approach_instants(ctx, i, retimed):
        if not _truth_stops(ctx, i, t):
            continue
        travel, phase, ttc = epoch_travel_s(_epoch_speed(ctx, i, t)), phase_at(plan, t), time_to_change_s(plan, t)
        if phase is Phase.AMBER:
            out.append(travel - ttc + 0.25)
        elif phase is Phase.RED and glosa:
            out.append(travel - GLOSA_RED_END_MARGIN_S - ttc - 0.25)
    return out


def _signal_content(ctx: _Ctx, i: int) -> Iterator[Finding]:
    """Content faults of a signal application that never let the ego go on red. A fault whose window
    meets no epoch (decision_window's finding) is judged as if it did: would what it says matter there?"""
    spec, fault = ctx.spec, ctx.spec.faults[i]
    reach = ctx.reach[i]
    if "beyond" in reach or math.isinf(ctx.ego.decision_epoch_s):
        return  # junctions the spec cannot place
    retimed = not reach
    belief = _belief(ctx, i)
    if belief is None or _goes_on_red(ctx, i, belief, retimed):
        return
    start = ctx.windows[i][0]
    op = fault.operator
    approach = bool(_approach_instants(ctx, i, retimed))
    scene = _scene_repairs(ctx, i)
    if op is FaultOperator.FREEZE:
        phase = belief(start)[0]
        yield Finding("semantic_corruption", Severity.ERROR,
                      f"the freeze captures {phase} at {start:.2f} s: at the decision epoch it lets no ego go that the "
                      "true phase stops" if approach else
                      f"the freeze opens at {start:.2f} s, after the approach decision: a stopped ego keeps "
                      "seeing the phase it stopped for", (_f(i, "anchor"),),
                      _pick_repair(ctx, i, "semantic_corruption", [*scene, _before_amber_repair(ctx, i)]))
    elif op is FaultOperator.SPAT_PHASE_CORRUPT:
        target = fault.target_phase
        green = Repair("report green", ((_f(i, "target_phase"), "green"),))
        composite = _go_on_red_repair(ctx, i, "report green", ((_f(i, "target_phase"), "green"),))
        if not approach and target is not Phase.GREEN:
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"reporting {target} to an ego stopped at the red releases nothing: only a believed "
                          "green does", (_f(i, "target_phase"),),
                          _pick_repair(ctx, i, "semantic_corruption", [green, *scene, composite]))
        elif approach and target is not Phase.GREEN and any(
                _truth_stops(ctx, i, t) for t in _approach_instants(ctx, i, retimed)):
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"reporting {target} stops the ego wherever the true phase does: nothing lets it go on red",
                          (_f(i, "target_phase"),), _pick_repair(ctx, i, "semantic_corruption", [green, *scene, composite]))
        else:
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"reporting {target} while the true phase lets the ego go corrupts nothing",
                          (_f(i, "target_phase"), _f(i, "anchor")),
                          _pick_repair(ctx, i, "semantic_corruption", [*scene, green, composite]))
    elif op is FaultOperator.SPAT_COUNTDOWN_OFFSET:
        lo, hi = FAULT_OPERATORS[op.value].magnitude_range or (-60.0, 60.0)
        shifts = [m for m in _countdown_shifts(ctx, i, retimed) if lo <= m <= hi]
        window, t_ref = _repair_window(ctx, i, -0.5)
        travel = epoch_travel_s(ctx.own_speed.speed_mps)
        amber = spec.signal.amber_s
        x = min(max(1.0, amber - travel + 0.5), max(amber - 0.25, 0.0))  # amber onset x s before the epoch
        need = round(max(0.5, travel - (amber - x)) + 0.25, 2)
        composite = Repair(f"time amber {x:.2f} s before the decision epoch and lengthen the believed amber",
                           (*window, (_f(i, "magnitude"), need),
                            ("signal.offset_s", round(offset_for_amber_at(spec.signal, t_ref - x), 3))))
        if shifts:
            current: float = fault.magnitude or 0.0
            shifts.sort(key=lambda shift: abs(shift - current))
            best = round(shifts[0], 2)
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"a {fault.magnitude} s countdown error does not let the ego go where the true phase stops "
                          f"it; {best} s would", (_f(i, "magnitude"),),
                          _pick_repair(ctx, i, "semantic_corruption",
                                       [*scene, Repair("shift the countdown past the margin",
                                                       ((_f(i, "magnitude"), best),)), composite]))
        else:
            yield Finding("semantic_corruption", Severity.ERROR,
                          "a countdown error matters only on an amber (GLOSA: a red) that stops the ego at the "
                          "decision epoch; the fault covers none", (_f(i, "magnitude"), _f(i, "anchor")),
                          _pick_repair(ctx, i, "semantic_corruption", [*scene, composite]))
    elif rewires_lanes(fault):
        yield Finding("semantic_corruption", Severity.ERROR,
                      "the cross group never lets the ego go where its own group stops it, nor shows green while "
                      "it stands at its red", (_f(i, "anchor"), _f(i, "target_group")),
                      _pick_repair(ctx, i, "semantic_corruption",
                                   [*scene, _go_on_red_repair(ctx, i, "keep the misassociation",
                                                              ((_f(i, "target_group"), None),))]))


def _safe_side(ctx: _Ctx, i: int) -> Iterator[Finding]:
    """A BSM content error that can only make a conflict application more cautious (ERROR, with the repair that
    reports the other way). Sign conventions (``services/simulator/v2x/faults.py``): a position offset > 0
    reports the sender behind where it is, a speed offset < 0 slower than it is.

    * FCW, speed understated: the lead looks slower, the closing speed larger, the TTC shorter, so the ego
      brakes earlier, never later.
    * FCW, position behind by up to a car length: the lead looks that much closer, the gap and the TTC shorter,
      so the ego brakes earlier, never later (further, a lead the real gap has nearly closed on could be
      reported behind the ego itself and drop out of view: not judged).
    * IMA / LTA, position behind: a crossing or opposing car heading for the conflict point looks
      ``magnitude / speed`` seconds later. A later track never looks cleared (cleared means predicted
      before the ego); it leaves the yield window [ego - clearance, ego + window] only at the far end, and a
      car that truly meets the ego there is pushed out only by a shift past half the window (for contact the
      arrivals must lie within well under that of each other: the ego and a car of 4.5 m cross a 2.5 m
      conflict zone in under a second above 10 m/s). Below that shift the ego yields at least as often.
    """
    spec, fault = ctx.spec, ctx.spec.faults[i]
    mag = float(fault.magnitude or 0.0)
    app = ctx.app.name
    if app is cat.Application.FCW and fault.operator is FaultOperator.BSM_SPEED_OFFSET and mag < 0.0:
        yield Finding("semantic_corruption", Severity.ERROR,
                      f"the lead reported {-mag} m/s slower than it is makes FCW brake earlier, never later: "
                      "only an overstated speed (or a lead reported ahead of where it is) delays its warning",
                      (_f(i, "magnitude"),), Repair("overstate the speed instead", ((_f(i, "magnitude"), -mag),)))
        return
    if app is cat.Application.FCW and fault.operator is FaultOperator.BSM_POSITION_OFFSET \
            and 0.0 < mag <= DEFAULT_VEHICLE_LENGTH_M:
        yield Finding("semantic_corruption", Severity.ERROR,
                      f"the lead reported {mag:g} m behind where it is looks closer, so FCW brakes earlier, never "
                      "later: only a lead reported ahead of where it is (or an overstated speed) delays its warning",
                      (_f(i, "magnitude"),), Repair("report it ahead of where it is", ((_f(i, "magnitude"), -mag),)))
        return
    if app not in (cat.Application.IMA, cat.Application.LTA) or fault.operator is not FaultOperator.BSM_POSITION_OFFSET \
            or mag <= 0.0:
        return
    window_s = cat.CONFLICT_WINDOW_S if app is cat.Application.IMA else ctx.app.threshold("gap_s")
    movers = [a for a in spec.agents if a.role in (AgentRole.CROSS, AgentRole.OPPOSING)
              and (fault.sender is None or a.id == fault.sender)]
    if not movers:
        return
    shift_s = max(mag / max(a.speed_mps, 0.1) for a in movers)
    if shift_s <= window_s / 2:
        yield Finding("semantic_corruption", Severity.ERROR,
                      f"a car reported {mag} m behind where it is looks {shift_s:.2f} s later at the conflict point: "
                      f"{app.value} yields to it as before (it only leaves the {window_s:g} s window past "
                      f"{window_s / 2:g} s); a car reported ahead of where it is can look cleared",
                      (_f(i, "magnitude"),), Repair("report it ahead of where it is", ((_f(i, "magnitude"), -mag),)))


def _ghost_visibility(ctx: _Ctx, i: int) -> Iterator[Finding]:
    """A ghost (``ghost_sender``) the application cannot see changes nothing (ERROR, with the repair that puts it
    where it is seen). The ghost sits ``magnitude`` m ahead of the ego on the ego's route when its window opens
    (negative: behind) and moves along it at ``ghost_speed_mps``.

    * FCW (ahead only): a ghost behind the ego is never a lead; one moving away at least as fast as the ego is
      never closed on (TTC infinite).
    * IMA / LTA: they yield to a crossing track heading for the conflict point: never to one travelling the ego's
      way (a ghost on the ego's route: the repair puts it on the crossing route, ``ghost_route: cross``, where it
      sits ``magnitude`` m before the conflict point), and never to a stopped one (predicted there never)."""
    spec, fault = ctx.spec, ctx.spec.faults[i]
    mag = float(fault.magnitude or 0.0)
    v = float(fault.ghost_speed_mps or 0.0)
    app = ctx.app.name
    cross = fault.ghost_route is GhostRoute.CROSS
    if app in CROSS_GHOST_APPS and not cross:
        yield Finding("semantic_corruption", Severity.ERROR,
                      f"a ghost on the ego's route travels the ego's way: {app.value} yields only to crossing traffic",
                      (_f(i, "ghost_route"),),
                      Repair("put the ghost on the crossing route, heading for the conflict point",
                             ((_f(i, "ghost_route"), GhostRoute.CROSS.value), (_f(i, "magnitude"), abs(mag) or 60.0),
                              (_f(i, "ghost_speed_mps"), v or float(spec.ego.speed_mps)))))
    elif ctx.app.ahead_only and mag < 0.0:
        yield Finding("semantic_corruption", Severity.ERROR,
                      f"a ghost {-mag:g} m behind the ego is never ahead of it: {app.value} only looks ahead",
                      (_f(i, "magnitude"),), Repair("place the ghost ahead of the ego", ((_f(i, "magnitude"), -mag),)))
    elif app is cat.Application.FCW and v >= spec.ego.speed_mps > 0.0:
        yield Finding("semantic_corruption", Severity.ERROR,
                      f"a ghost moving at {v:g} m/s, no slower than the ego ({spec.ego.speed_mps:g} m/s), is never "
                      "closed on: its time to collision stays infinite",
                      (_f(i, "ghost_speed_mps"),), Repair("stop the ghost in the lane", ((_f(i, "ghost_speed_mps"), None),)))
    elif app in (cat.Application.IMA, cat.Application.LTA) and v <= 0.0:
        yield Finding("semantic_corruption", Severity.ERROR,
                      f"a stopped ghost is never predicted at the conflict point: {app.value} "
                      "yields only to a track heading there",
                      (_f(i, "ghost_speed_mps"),),
                      Repair("move the ghost toward the conflict point at the ego's speed",
                             ((_f(i, "ghost_speed_mps"), float(spec.ego.speed_mps)),)))


def _semantic_corruption(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    for i, fault in enumerate(spec.faults):
        if fault.stream not in ctx.app.consumes:
            continue
        start, end = ctx.windows[i]
        op = fault.operator
        kind = FAULT_OPERATORS[op.value].tolerance  # lastv2x.core.tolerance
        if op is FaultOperator.FREEZE and fault.stream is Stream.MAP and ctx.signal_app and not any(
                rewires_lanes(f) for f in spec.faults):
            yield Finding("semantic_corruption", Severity.ERROR,
                          "MAP does not change during a scenario: a frozen MAP repeats the truth",
                          (_f(i, "operator"),), Repair("drop the MAP instead", ((_f(i, "operator"), "drop"),)))
        elif kind == "countdown" and fault.magnitude is not None and ctx.app.name is cat.Application.GLOSA:
            # its advisory reads the countdown in every phase and moves the epoch: only the tolerance
            if tolerance.tolerated(kind, ctx.app, fault.stream, fault.magnitude):
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"a {fault.magnitude} s countdown error is within the {cat.COUNTDOWN_DIVERGENCE_S} s tolerance",
                              (_f(i, "magnitude"),),
                              Repair("exceed the tolerance", ((_f(i, "magnitude"), math.copysign(
                                  cat.COUNTDOWN_DIVERGENCE_S + 0.5, fault.magnitude or 1.0)),)))
        elif ctx.signal_app and fault.stream in (Stream.SPAT, Stream.MAP):
            yield from _signal_content(ctx, i)
        elif op is FaultOperator.FREEZE and fault.stream in (Stream.BSM, Stream.EEBL):
            mover = max((a.speed_mps for a in spec.agents if a.role is not AgentRole.BACKGROUND), default=0.0)
            _w0, w1 = decision_window_s(ctx)
            shift = mover * max(0.0, min(end, w1) - start)
            if shift <= cat.POSITION_BUDGET_BASE_M:
                need = round(cat.POSITION_BUDGET_BASE_M / max(mover, 0.1) + 0.5, 3)
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"a frozen BSM drifts {shift:.2f} m before the decision, within the "
                              f"{cat.POSITION_BUDGET_BASE_M} m position budget",
                              (_f(i, "duration_s"),), Repair("freeze for longer", ((_f(i, "duration_s"), need),)))
        elif kind == "position" and fault.magnitude is not None:
            budget = tolerance.limit(kind, ctx.app, fault.stream)
            if tolerance.tolerated(kind, ctx.app, fault.stream, fault.magnitude):
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"a {fault.magnitude} m offset is within the {budget:.2f} m position budget",
                              (_f(i, "magnitude"),), Repair("exceed the position budget", ((_f(i, "magnitude"), round(
                                  math.copysign(budget + 0.5, fault.magnitude), 2)),)))
            else:
                yield from _safe_side(ctx, i)
        elif kind == "speed" and fault.magnitude is not None:
            if tolerance.tolerated(kind, ctx.app, fault.stream, fault.magnitude):
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"a {fault.magnitude} m/s speed error barely moves the dead-reckoned track",
                              (_f(i, "magnitude"),), Repair("use at least 2 m/s", ((_f(i, "magnitude"), -2.0),)))
            else:
                yield from _safe_side(ctx, i)
        elif op is FaultOperator.GHOST_SENDER and fault.magnitude is not None:
            yield from _ghost_visibility(ctx, i)
        elif rewires_lanes(fault) and not ctx.signal_app:
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"{ctx.app.name} does not read the lane -> signal-group association",
                          (_f(i, "operator"),), Repair("use a signal application or another operator", ()))

