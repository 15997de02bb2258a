"""The information seam: what the world is, and what the ego believes it is.

Every step the simulator hands each rollout's ego a :class:`WorldSnapshot` (ground
truth, struct-of-arrays numpy) and asks its :class:`InformationSource` for an
:class:`EgoInformation` (the ego's *belief*: signal states, neighbour tracks, EEBL
events, each with its age of information). The safety applications read only the
belief; adjudication reads only the snapshot. Paired execution runs the same
scene twice and swaps only the source:

* :class:`GroundTruthSource` (here): perfect, instant information (AoI 0);
* ``V2XInformationSource`` (``services.simulator.v2x``): messages, channel, faults,
  reconstruction.

Conventions: metres, seconds, radians CCW from +x, speeds in m/s. Phase codes are
small ints so they vectorize: ``PHASE_GREEN = 0``, ``PHASE_AMBER = 1``,
``PHASE_RED = 2`` (``PHASE_UNKNOWN = -1`` for "no information").

This module is a contract other packages build on: add fields only with defaults.
Added since the first cut (all defaulted): ``BelievedSignal.time_to_green_s`` (GLOSA),
``Track.valid`` / ``EEBLEvent.valid`` (a source may mark stale entries; applications also
check ``aoi_s`` against their freshness budget), ``EgoInformation.map_aoi_s``,
``DecisionRecord.after_epoch`` / ``.app``, the optional ``trace`` keyword of ``reset``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from lastv2x.core.spec import Phase
from services.simulator.fastinit import fast_init

if TYPE_CHECKING:
    from lastv2x.core.program import ScenarioProgram

PHASE_UNKNOWN = -1
PHASE_GREEN = 0
PHASE_AMBER = 1
PHASE_RED = 2
PHASE_CODE: Mapping[Phase, int] = {Phase.GREEN: PHASE_GREEN, Phase.AMBER: PHASE_AMBER, Phase.RED: PHASE_RED}
PHASE_NAME: Mapping[int, str] = {PHASE_UNKNOWN: "unknown", PHASE_GREEN: "green", PHASE_AMBER: "amber",
                                 PHASE_RED: "red"}

HARD_BRAKE_THRESHOLD_MPS2 = 0.4 * 9.80665  # J2945/1 eventHardBraking: deceleration > 0.4 g
BRAKE_FLAG_THRESHOLD_MPS2 = 0.5  # brakes applied (BSM brakeAppliedStatus) above this deceleration
NO_GROUP = -1  # next_group_index where a vehicle has no signalized crossing ahead


@dataclass(frozen=True, eq=False)
class WorldSnapshot:
    """Ground truth of one rollout at one step. Arrays are read-only; index ``i`` is ``vehicle_ids[i]``.

    Vehicles: ``N`` rows (padding rows have ``alive == False``). ``route_s_m`` is the
    centre's arc length along the vehicle's own route; ``stop_bar_distance_m`` is
    from the front bumper to the next stop bar on its route (``inf`` when none is
    ahead) and ``next_group_index`` the index into ``signal_group_ids`` of the group
    controlling it (``NO_GROUP`` when unsignalized or none ahead).

    Signals: ``G`` groups; ``true_phase`` codes, ``time_to_change_s`` the true SPaT
    countdown of the current phase, ``time_to_green_s`` until the next green onset
    (0 while green).

    RSUs: ``R`` rows of ids, positions and antenna heights.
    """

    t_s: float
    step: int
    vehicle_ids: tuple[str, ...]
    xy_m: np.ndarray  # (N, 2)
    speed_mps: np.ndarray  # (N,)
    heading_rad: np.ndarray  # (N,)
    accel_mps2: np.ndarray  # (N,) longitudinal, negative = braking
    brake_flag: np.ndarray  # (N,) bool
    hard_brake_event: np.ndarray  # (N,) bool, deceleration > HARD_BRAKE_THRESHOLD_MPS2 while moving
    equipped: np.ndarray  # (N,) bool
    alive: np.ndarray  # (N,) bool
    route_s_m: np.ndarray  # (N,)
    stop_bar_distance_m: np.ndarray  # (N,)
    next_group_index: np.ndarray  # (N,) int
    length_m: np.ndarray  # (N,)
    ego_index: int
    signal_group_ids: tuple[str, ...]
    true_phase: np.ndarray  # (G,) int
    time_to_change_s: np.ndarray  # (G,)
    time_to_green_s: np.ndarray  # (G,)
    rsu_ids: tuple[str, ...] = ()
    rsu_xy_m: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # (R, 2)
    rsu_height_m: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (R,)
    rollout: str = ""  # "md" or "gt" in paired execution

    @property
    def n_vehicles(self) -> int:
        return len(self.vehicle_ids)

    @property
    def ego_id(self) -> str:
        return self.vehicle_ids[self.ego_index]

    @property
    def ego_xy_m(self) -> np.ndarray:
        return self.xy_m[self.ego_index]

    @property
    def ego_group_id(self) -> str | None:
        """The group that truly controls the ego's next stop bar (the true MAP association)."""
        g = int(self.next_group_index.item(self.ego_index))  # item(): a Python int without a numpy scalar
        return None if g < 0 else self.signal_group_ids[g]

    def index_of(self, vehicle_id: str) -> int:
        return self.vehicle_ids.index(vehicle_id)

    def group_index(self, group_id: str) -> int:
        return self.signal_group_ids.index(group_id)


@fast_init
@dataclass(frozen=True, slots=True)
class BelievedSignal:
    """The ego's belief about one signal group. ``valid`` False = no usable SPaT for it."""

    phase: int  # PHASE_* code
    time_to_change_s: float  # believed countdown of the current phase, s
    aoi_s: float  # age of the information the belief rests on, s
    valid: bool = True
    time_to_green_s: float | None = None  # until the next green onset, when the source knows it


@fast_init
@dataclass(frozen=True, slots=True)
class Track:
    """A reconstructed neighbour (from BSMs, dead-reckoned to ``EgoInformation.t_s``)."""

    vehicle_id: str
    xy_m: tuple[float, float]
    speed_mps: float
    heading_rad: float
    accel_mps2: float
    aoi_s: float
    hard_brake_event: bool = False
    relayed: bool = False
    valid: bool = True  # False: the source itself judges the track unusable (applications also check aoi_s)


@fast_init
@dataclass(frozen=True, slots=True)
class EEBLEvent:
    """A hard-braking event known to the ego (own reception or relayed)."""

    origin_id: str
    xy_m: tuple[float, float]
    decel_mps2: float
    aoi_s: float
    relayed: bool = False
    hops: int = 0
    valid: bool = True


@fast_init
@dataclass(frozen=True)
class EgoInformation:
    """Everything the ego's applications may read at time ``t_s``.

    ``ego_group_id`` is the lane -> signal-group association in use (from MAP); the
    applications read ``signals[ego_group_id]``. ``map_aoi_s`` is the age of that
    association (MAP is 1 Hz).
    """

    t_s: float
    signals: Mapping[str, BelievedSignal]
    ego_group_id: str | None
    tracks: Mapping[str, Track]
    eebl_events: Sequence[EEBLEvent] = ()
    map_aoi_s: float = 0.0

    def ego_signal(self) -> BelievedSignal | None:
        if self.ego_group_id is None:
            return None
        return self.signals.get(self.ego_group_id)


@dataclass(frozen=True)
class DecisionRecord:
    """One application decision as paired execution hands it to a monitor."""

    t_s: float
    action: str
    epoch: bool  # True at the decision epoch (signal apps: first step with d <= ds(v))
    reason: str = ""
    after_epoch: bool = False  # taken at or after the decision epoch (the consequential decisions)
    app: str = ""
    # signal apps at an epoch on a route that crosses several signalized junctions: how many of
    # those still ahead the ego held fresh SPaT for (AppContext.junctions_known_ahead); else None
    known_ahead: int | None = None


@dataclass(frozen=True)
class DivergenceEpisode:
    """An interval over which the belief was wrong (LAST-V2X Appendix D monitor).

    ``kind``: ``"signal_phase"``, ``"countdown"``, ``"track_displaced"``, ``"ghost_track"``,
    ``"missing"`` ... ; ``end_s`` None = still open at the end of the run.
    """

    kind: str
    subject: str  # group or vehicle id
    start_s: float
    end_s: float | None
    max_error: float = 0.0
    detail: str = ""


@dataclass(frozen=True)
class MonitorReport:
    """What a divergence monitor returns at the end of a rollout (embedded in PairedOutcome)."""

    episodes: tuple[DivergenceEpisode, ...] = ()
    alarms: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)


class TraceSink(Protocol):
    """Where trace messages go (``services.simulator.trace.TraceWriter`` implements it)."""

    def publish(self, channel: str, t_s: float, message: Mapping[str, Any]) -> None: ...


@runtime_checkable
class InformationSource(Protocol):
    """Produces the ego's belief. ``reset`` once per rollout, ``observe`` every step, in order."""

    def reset(self, program: ScenarioProgram, seed: int, *, trace: TraceSink | None = None) -> None: ...

    def observe(self, snapshot: WorldSnapshot) -> EgoInformation: ...


@runtime_checkable
class MonitoredSource(Protocol):
    """Optional: a source that also monitors divergence reports at the end of the rollout."""

    def report(self, decisions: Sequence[DecisionRecord]) -> MonitorReport: ...


@runtime_checkable
class BatchSource(Protocol):
    """Optional: a source class that observes the rows of a batch together at each step.
    ``observe_batch(sources, snapshots)`` returns what ``[s.observe(snap) for ...]`` would, bit for bit. Paired
    execution calls it for the untraced rows whose source is of the class, when a step has two or more, and only
    where it is defined at or below the class's ``observe`` (a subclass overriding ``observe`` alone runs row by
    row)."""

    @staticmethod
    def observe_batch(sources: Sequence[Any], snapshots: Sequence[WorldSnapshot]) -> list[EgoInformation]: ...


SourceFactory = Callable[[], InformationSource]


class GroundTruthSource:
    """Perfect information: the true phase and countdown of every group, a track for every
    other live vehicle (equipped or not), every hard-braking vehicle as an EEBL event,
    the true lane -> group association; every age of information is 0."""

    def reset(self, program: ScenarioProgram, seed: int, *, trace: TraceSink | None = None) -> None:
        self._groups: tuple[str, ...] | None = None

    def observe(self, snapshot: WorldSnapshot) -> EgoInformation:
        signals = ground_truth_signals(snapshot.signal_group_ids, snapshot.true_phase.tolist(),
                                       snapshot.time_to_change_s.tolist(), snapshot.time_to_green_s.tolist())
        ego = snapshot.ego_index
        others = [(vid, i) for i, vid in enumerate(snapshot.vehicle_ids) if i != ego]
        xy = snapshot.xy_m
        return ground_truth_information(
            snapshot.t_s, signals, snapshot.ego_group_id, others, xy[:, 0].tolist(), xy[:, 1].tolist(),
            snapshot.speed_mps.tolist(), snapshot.heading_rad.tolist(), snapshot.accel_mps2.tolist(),
            snapshot.alive.tolist(), snapshot.hard_brake_event.tolist())


def ground_truth_signals(group_ids: Sequence[str], phase: Sequence[int], time_to_change_s: Sequence[float],
                         time_to_green_s: Sequence[float]) -> dict[str, BelievedSignal]:
    """Every group's true phase and countdowns, as believed with perfect information (age 0, valid)."""
    return {g: BelievedSignal(phase[k], time_to_change_s[k], 0.0, True, time_to_green_s[k])
            for k, g in enumerate(group_ids)}


def ground_truth_information(t_s: float, signals: dict[str, BelievedSignal], ego_group_id: str | None,
                             others: Iterable[tuple[str, int]], x_m: Sequence[float], y_m: Sequence[float],
                             speed_mps: Sequence[float], heading_rad: Sequence[float], accel_mps2: Sequence[float],
                             alive: Sequence[bool], hard_brake: Sequence[bool]) -> EgoInformation:
    """The one ground-truth belief (:class:`GroundTruthSource` and paired execution's fast path).

    ``others``: (vehicle id, index into the per-vehicle lists) of every vehicle but the ego.
    Each live one becomes a track of age 0 (equipped or not) and, while it brakes hard, an
    EEBL event; ``signals`` from :func:`ground_truth_signals`; no map age."""
    tracks: dict[str, Track] = {}
    events: list[EEBLEvent] = []
    for vid, i in others:
        if not alive[i]:
            continue
        p = (x_m[i], y_m[i])
        if hard_brake[i]:
            tracks[vid] = Track(vid, p, speed_mps[i], heading_rad[i], accel_mps2[i], 0.0, True, False)
            events.append(EEBLEvent(vid, p, -accel_mps2[i], 0.0, False, 0))
        else:
            tracks[vid] = Track(vid, p, speed_mps[i], heading_rad[i], accel_mps2[i], 0.0, False, False)
    return EgoInformation(t_s, signals, ego_group_id, tracks, tuple(events), 0.0)


def ground_truth_factory() -> InformationSource:
    return GroundTruthSource()


__all__ = [
    "BRAKE_FLAG_THRESHOLD_MPS2", "HARD_BRAKE_THRESHOLD_MPS2", "NO_GROUP", "PHASE_AMBER", "PHASE_CODE",
    "PHASE_GREEN", "PHASE_NAME", "PHASE_RED", "PHASE_UNKNOWN", "BelievedSignal", "DecisionRecord",
    "DivergenceEpisode", "EEBLEvent", "EgoInformation", "GroundTruthSource", "InformationSource",
    "MonitorReport", "MonitoredSource", "SourceFactory", "TraceSink", "Track", "WorldSnapshot",
    "ground_truth_factory", "ground_truth_information", "ground_truth_signals",
]
