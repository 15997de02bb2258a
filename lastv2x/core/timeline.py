"""Closed-form scenario timeline shared by the verifier, grounding and the simulator.

The verifier reasons before any simulation, so it assumes the ego holds its initial
speed (the closed form the paper's Appendix A relies on). The simulator uses the
same signal-plan definition at every step, so "amber onset" means one thing
everywhere.

Signal plan of the ego group, with u = (t + offset_s) mod cycle_s:
green on [0, G), amber on [G, G+A), red on [G+A, C).
The cross group ("cross") is green on [G+A+R, C-A-R), amber on [C-A-R, C-R), red
otherwise, R being the all-red clearance; it never shows green while the ego
group does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lastv2x.core.catalogue import COMFORT_DECEL_MPS2, REACTION_TIME_S, stopping_distance_m
from lastv2x.core.spec import AnchorEvent, AnchorKind, Fault, Phase, ScenarioSpec, SignalPlan

EGO_GROUP_ALIASES = (None, "", "ego")
CROSS_GROUP = "cross"

_ONSET_INDEX = {AnchorEvent.GREEN_ONSET: 0, AnchorEvent.AMBER_ONSET: 1, AnchorEvent.RED_ONSET: 2}  # in _starts


def _starts(plan: SignalPlan, group: str | None) -> tuple[float, float, float]:
    """(green, amber, red) starts within the cycle (u coordinates) for the ego or cross group."""
    g, a, r, c = plan.green_s, plan.amber_s, plan.all_red_s, plan.cycle_s
    if group == CROSS_GROUP:
        return g + a + r, c - a - r, c - r
    return 0.0, g, g + a


def offset_for_amber_at(plan: SignalPlan, t_s: float) -> float:
    """The ``offset_s`` that puts the ego group's amber onset at scenario time ``t_s`` (u = G then)."""
    return (plan.green_s - t_s) % plan.cycle_s


def phase_at(plan: SignalPlan, t_s: float, group: str | None = None) -> Phase:
    """True phase of the ego group (or 'cross') at scenario time t_s."""
    u = (t_s + plan.offset_s) % plan.cycle_s
    green, amber, red = _starts(plan, group)
    if group == CROSS_GROUP:
        if green <= u < amber:
            return Phase.GREEN
        if amber <= u < red:
            return Phase.AMBER
        return Phase.RED
    if u < amber:
        return Phase.GREEN
    if u < red:
        return Phase.AMBER
    return Phase.RED


def time_to_change_s(plan: SignalPlan, t_s: float, group: str | None = None) -> float:
    """Seconds until the group's current phase ends (the true SPaT countdown)."""
    u = (t_s + plan.offset_s) % plan.cycle_s
    starts = sorted(_starts(plan, group))
    for s in starts:
        if s > u + 1e-12:
            return s - u
    return starts[0] + plan.cycle_s - u


def next_onset_s(plan: SignalPlan, event: AnchorEvent, after_s: float, group: str | None = None) -> float:
    """First time >= after_s at which the group's phase named by ``event`` begins."""
    start_u = _starts(plan, group)[_ONSET_INDEX[event]]
    u_now = (after_s + plan.offset_s) % plan.cycle_s
    wait = (start_u - u_now) % plan.cycle_s
    return after_s + wait


@dataclass(frozen=True)
class EgoTimeline:
    """Constant-speed ego timeline: when it decides and reaches the stop bar."""

    speed_mps: float
    start_distance_m: float
    decision_distance_m: float  # ds(v)
    decision_epoch_s: float  # time the ego is at ds(v) before the stop bar
    stop_bar_s: float  # time the ego reaches the stop bar

    def time_at_distance_s(self, distance_m: float) -> float:
        """Time the ego is ``distance_m`` before the stop bar (inf when it starts closer)."""
        if distance_m > self.start_distance_m:
            return math.inf
        return (self.start_distance_m - distance_m) / self.speed_mps


# where the conflict zone begins past the stop bar, in the closed form (~one car length)
CONFLICT_BEYOND_BAR_M = 5.0


def conflict_time_s(start_distance_m: float, speed_mps: float) -> float:
    """When a constant-speed ego that starts ``start_distance_m`` before its stop bar reaches the conflict zone, s
    (the verifier's closed form; the parser times a crossing car said to be "45 m from the conflict point" by it)."""
    return (start_distance_m + CONFLICT_BEYOND_BAR_M) / speed_mps


def ego_timeline(spec: ScenarioSpec) -> EgoTimeline:
    v = spec.ego.speed_mps
    d0 = spec.ego.start_distance_m
    ds = stopping_distance_m(v)
    t_dec = (d0 - ds) / v if d0 >= ds else math.inf
    return EgoTimeline(v, d0, ds, t_dec, d0 / v)


def anchor_time_s(spec: ScenarioSpec, fault: Fault, ego: EgoTimeline | None = None) -> float:
    """Scenario time of the fault's anchor event (inf when it never happens); window start = this + offset."""
    anchor = fault.anchor
    if anchor.kind is AnchorKind.SCENARIO_TIME:
        return 0.0
    if anchor.kind is AnchorKind.SIGNAL_EVENT:
        group = CROSS_GROUP if anchor.group == CROSS_GROUP else None
        return next_onset_s(spec.signal, anchor.event, 0.0, group)
    ego = ego or ego_timeline(spec)
    if anchor.event is AnchorEvent.DECISION_EPOCH:
        return ego.decision_epoch_s
    return ego.time_at_distance_s(anchor.distance_m or 0.0)


def fault_window_s(spec: ScenarioSpec, fault: Fault, ego: EgoTimeline | None = None) -> tuple[float, float]:
    """[start, end) of the fault's activation in scenario seconds; end = duration_s when unset."""
    t_anchor = anchor_time_s(spec, fault, ego)
    start = max(0.0, t_anchor + fault.anchor.offset_s)
    end = spec.duration_s if fault.duration_s is None else min(spec.duration_s, start + fault.duration_s)
    return start, end


# ── every decision a signal application takes on its junction ─────────────────
# The figures of services.simulator.apps.signal (the core cannot import it; a test pins them).
STOPPED_MPS = 0.5  # "has stopped": from here a believed green releases a latched stop [m/s]
GLOSA_MIN_SPEED_MPS = 5.0  # slowest advisory [m/s]
GLOSA_MARGIN_S = 1.0  # the advisory arrives this long after the green onset [s]
GLOSA_RED_END_MARGIN_S = 0.5  # at the epoch GLOSA drives through a red believed to end this long before arrival [s]


def epoch_travel_s(speed_mps: float) -> float:
    """d / v at the decision epoch of a constant-speed ego (d = ds(v)): the time left to the stop bar."""
    return stopping_distance_m(speed_mps) / max(speed_mps, 0.1)


def epoch_rule_stops(plan: SignalPlan, t_s: float, travel_s: float, glosa: bool = False,
                     group: str | None = None, countdown_shift_s: float = 0.0) -> bool:
    """The signal applications' rule at a decision epoch, on the phase of ``group`` at ``t_s``: stop on
    red (GLOSA: unless it ends ``GLOSA_RED_END_MARGIN_S`` before the bar), or on amber that ends before
    the bar (``travel_s`` = d / v away); ``countdown_shift_s`` is added to the countdown."""
    return signal_rule_stops(phase_at(plan, t_s, group),
                             max(0.0, time_to_change_s(plan, t_s, group) + countdown_shift_s), travel_s, glosa)


def signal_rule_stops(phase: Phase, ttc: float, travel_s: float, glosa: bool = False) -> bool:
    """The epoch rule on a believed (phase, countdown) with the stop bar ``travel_s`` away."""
    if phase is Phase.RED:
        return not (glosa and ttc + GLOSA_RED_END_MARGIN_S <= travel_s)
    if phase is Phase.AMBER:
        return travel_s >= ttc
    return False


def stopped_at_s(t_epoch_s: float, speed_mps: float) -> float:
    """When an ego told to stop at ``t_epoch_s`` has stopped at the bar: it reacts for REACTION_TIME_S,
    then brakes at the comfortable deceleration the decision distance assumes, to STOPPED_MPS."""
    return t_epoch_s + REACTION_TIME_S + max(0.0, speed_mps - STOPPED_MPS) / COMFORT_DECEL_MPS2


def green_release_s(plan: SignalPlan, t_s: float) -> float:
    """The first instant >= t_s at which the ego group shows green (t_s itself when it does)."""
    if phase_at(plan, t_s) is Phase.GREEN:
        return t_s
    return next_onset_s(plan, AnchorEvent.GREEN_ONSET, t_s)


def glosa_timeline(spec: ScenarioSpec) -> EgoTimeline:
    """The approach GLOSA advises on the true plan (what the ground-truth rollout drives): the speed in
    [GLOSA_MIN_SPEED_MPS, v] that reaches the stop bar GLOSA_MARGIN_S after the next green onset, held
    from t = 0 (the advisory is re-issued every step, so the arrival stays put while the ego slows)."""
    v_max, d0, plan = spec.ego.speed_mps, spec.ego.start_distance_m, spec.signal
    phase, ttc = phase_at(plan, 0.0), time_to_change_s(plan, 0.0)
    if phase is Phase.GREEN and d0 / v_max < ttc:
        v = v_max
    else:
        t_green = ttc if phase is Phase.RED else next_onset_s(plan, AnchorEvent.GREEN_ONSET, ttc)
        v = min(max(d0 / (t_green + GLOSA_MARGIN_S), GLOSA_MIN_SPEED_MPS), v_max)
    ds = stopping_distance_m(v)
    return EgoTimeline(v, d0, ds, (d0 - ds) / v if d0 >= ds else math.inf, d0 / v)
