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

from lastv2x.core.catalogue import stopping_distance_m
from lastv2x.core.spec import AnchorEvent, AnchorKind, Fault, Phase, ScenarioSpec, SignalPlan

EGO_GROUP_ALIASES = (None, "", "ego")
CROSS_GROUP = "cross"

_ONSET_PHASE = {AnchorEvent.GREEN_ONSET: Phase.GREEN, AnchorEvent.AMBER_ONSET: Phase.AMBER,
                AnchorEvent.RED_ONSET: Phase.RED}


def _phase_starts(plan: SignalPlan, group: str | None) -> dict[Phase, float]:
    """Start of each phase within the cycle (u coordinates) for the ego or cross group."""
    g, a, r, c = plan.green_s, plan.amber_s, plan.all_red_s, plan.cycle_s
    if group == CROSS_GROUP:
        return {Phase.GREEN: g + a + r, Phase.AMBER: c - a - r, Phase.RED: c - r}
    return {Phase.GREEN: 0.0, Phase.AMBER: g, Phase.RED: g + a}


def phase_at(plan: SignalPlan, t_s: float, group: str | None = None) -> Phase:
    """True phase of the ego group (or 'cross') at scenario time t_s."""
    u = (t_s + plan.offset_s) % plan.cycle_s
    starts = _phase_starts(plan, group)
    if group == CROSS_GROUP:
        if starts[Phase.GREEN] <= u < starts[Phase.AMBER]:
            return Phase.GREEN
        if starts[Phase.AMBER] <= u < starts[Phase.RED]:
            return Phase.AMBER
        return Phase.RED
    if u < starts[Phase.AMBER]:
        return Phase.GREEN
    if u < starts[Phase.RED]:
        return Phase.AMBER
    return Phase.RED


def time_to_change_s(plan: SignalPlan, t_s: float, group: str | None = None) -> float:
    """Seconds until the group's current phase ends (the true SPaT countdown)."""
    u = (t_s + plan.offset_s) % plan.cycle_s
    starts = sorted(_phase_starts(plan, group).values())
    for s in starts:
        if s > u + 1e-12:
            return s - u
    return starts[0] + plan.cycle_s - u


def next_onset_s(plan: SignalPlan, event: AnchorEvent, after_s: float, group: str | None = None) -> float:
    """First time >= after_s at which the group's phase named by ``event`` begins."""
    start_u = _phase_starts(plan, group)[_ONSET_PHASE[event]]
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
