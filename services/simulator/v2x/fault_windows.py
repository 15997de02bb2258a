"""When a fault acts (LAST-V2X Appendix C): what the fault engine knows of the scenario (:class:`FaultContext`,
:class:`PhaseCodes`), the ego's state that anchors ego events (:class:`EgoEventInput`), a fault's window
``[start, end)`` resolved from its anchor -- scenario time; a signal group's phase onset, closed form from the
plan or predicted online; the ego's stop-bar distance or decision epoch, locked the first time it holds
(:class:`FaultWindow`) -- and what a fault did, reported per run (:class:`FaultActivity`). The operators and the
engine that runs them are in :mod:`.faults`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lastv2x.core.catalogue import stopping_distance_m
from lastv2x.core.spec import AnchorEvent, AnchorKind, Phase
from services.simulator.info import PHASE_AMBER, PHASE_GREEN, PHASE_RED

from .messages import FloatArray, IntArray, KeyTable

CROSS_GROUP_ALIAS = "cross"
EGO_GROUP_ALIASES = ("", "ego")


@dataclass(frozen=True)
class PhaseCodes:
    """Integer phase codes of the simulator (the seam's ``true_phase`` codes)."""

    green: int
    amber: int
    red: int

    def code(self, phase: Phase | str) -> int:
        return {"green": self.green, "amber": self.amber, "red": self.red}[str(Phase(phase).value)]

    def next_code(self, code: int) -> int:
        return {self.green: self.amber, self.amber: self.red, self.red: self.green}.get(int(code), -1)


SEAM_PHASES = PhaseCodes(PHASE_GREEN, PHASE_AMBER, PHASE_RED)


@dataclass(frozen=True)
class FaultContext:
    """What the faults need to know about the scenario (built once per reset)."""

    seed: int
    duration_s: float
    phases: PhaseCodes = SEAM_PHASES
    ego_group_id: str | None = None
    cross_group_id: str | None = None
    ego_lane_ids: tuple[str, ...] = ()
    rsu_ids: tuple[str, ...] = ()
    #: first onset time >= 0 of (group id, onset event); None = predict online.
    signal_onset_s: Callable[[str, AnchorEvent], float] | None = None
    #: the ego route's polyline (ghost_sender places its forged vehicle on it); None = no route known
    ego_route_xy_m: Any = None
    #: the crossing route's polyline and its conflict point's arc length (a ghost_sender on ``ghost_route: cross``
    #: drives it); None = the program has no agent with a conflict point
    cross_route_xy_m: Any = None
    cross_conflict_s_m: float | None = None


@dataclass
class EgoEventInput:
    """Per-step ego state for ego-event anchors (None fields = unknown this step)."""

    t_s: float
    stop_bar_distance_m: float | None
    speed_mps: float


@dataclass
class FaultActivity:
    """What a fault did during the run (evidence for digests and classification)."""

    name: str
    operator: str
    stream: str
    field: str
    sender: str | None
    anchor: str
    start_s: float | None  # None: never resolved (anchor never happened)
    end_s: float | None
    magnitude: float | None
    provenance: str
    messages_affected: int = 0
    first_affected_s: float | None = None
    last_affected_s: float | None = None
    # a random drop (probability): its longest run of consecutive lost messages from one sender; None otherwise
    longest_drop_run: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        if out["longest_drop_run"] is None:  # (outcomes without a random drop keep their bytes)
            del out["longest_drop_run"]
        return out


# ---------------------------------------------------------------------------
# Window resolution
# ---------------------------------------------------------------------------

class FaultWindow:
    """Resolves and answers the activation window of one fault."""

    def __init__(self, fault: Any, ctx: FaultContext, resolved: tuple[float, float] | None = None,
                 anchor_group_id: str | None = None):
        self.fault = fault
        self.ctx = ctx
        anchor = fault.anchor
        self.kind = AnchorKind(anchor.kind)
        self.event = AnchorEvent(anchor.event)
        self.offset_s = float(anchor.offset_s)
        self.start_s: float | None = None
        self.end_s: float | None = None
        self._group = anchor_group_id or self._anchor_group(anchor.group)
        if resolved is not None and self.kind is not AnchorKind.EGO_EVENT:
            self._set_start(resolved[0])
        elif self.kind is AnchorKind.SCENARIO_TIME:
            self._set_start(self.offset_s)
        elif self.kind is AnchorKind.SIGNAL_EVENT and ctx.signal_onset_s is not None and self._group:
            onset = ctx.signal_onset_s(self._group, self.event)
            if math.isfinite(onset):
                self._set_start(onset + self.offset_s)
            else:
                self.never = True

    never = False

    def _anchor_group(self, group: str | None) -> str | None:
        if group in (None, *EGO_GROUP_ALIASES):
            return self.ctx.ego_group_id
        if group == CROSS_GROUP_ALIAS:
            return self.ctx.cross_group_id
        return group

    def _set_start(self, start: float) -> None:
        self.start_s = max(0.0, float(start))
        dur = self.fault.duration_s
        self.end_s = math.inf if dur is None else self.start_s + float(dur)

    @property
    def resolved(self) -> bool:
        return self.start_s is not None

    def update(self, t_s: float, ego: EgoEventInput | None, group_keys: KeyTable | None = None,
               phase: IntArray | None = None, time_to_change: FloatArray | None = None,
               group_index: dict[str, int] | None = None) -> None:
        """Online resolution (ego events; signal events without a closed form)."""
        if self.resolved or self.never:
            return
        if self.kind is AnchorKind.EGO_EVENT:
            if ego is None or ego.stop_bar_distance_m is None:
                return
            d = ego.stop_bar_distance_m
            v = max(ego.speed_mps, 0.0)
            target = (stopping_distance_m(v) if self.event is AnchorEvent.DECISION_EPOCH
                      else float(self.fault.anchor.distance_m or 0.0))
            if d <= target:
                self._set_start(t_s + self.offset_s)
            elif self.offset_s < 0.0 and v > 0.1:
                # constant-speed prediction of the event; lock once the start is due
                if self.event is AnchorEvent.DECISION_EPOCH:
                    # d - v*dt = ds(v)  (speed held)  -> dt = (d - ds(v)) / v
                    t_event = t_s + (d - stopping_distance_m(v)) / v
                else:
                    t_event = t_s + (d - target) / v
                if t_event + self.offset_s <= t_s + 1e-9:
                    self._set_start(t_s)
            return
        if self.kind is AnchorKind.SIGNAL_EVENT and phase is not None and group_index is not None:
            gi = group_index.get(self._group or "")
            if gi is None:
                return
            want = self.ctx.phases.code(Phase(self.event.value.removesuffix("_onset")))
            cur = int(phase[gi])
            if self.ctx.phases.next_code(cur) == want:
                ttc = float(time_to_change[gi]) if time_to_change is not None else 0.0
                # predicted onset; a start already due is clamped to now
                self._set_start(max(t_s + ttc + self.offset_s, t_s))

    def active(self, t_s: float) -> bool:
        return self.start_s is not None and self.start_s <= t_s < (self.end_s or math.inf)


# ---------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------


__all__ = ["CROSS_GROUP_ALIAS", "EGO_GROUP_ALIASES", "EgoEventInput", "FaultActivity", "FaultContext", "FaultWindow",
           "PhaseCodes"]
