"""Shared types of the safety applications: the ego's kinematic state, the static context,
the decision, freshness filtering and route geometry helpers.

An application is a pure function ``decide(info, ego, ctx, previous) -> Decision`` of the
ego's belief (:class:`~services.simulator.info.EgoInformation`), its own kinematic state
(:class:`EgoState`, from its own sensors: exact in both rollouts), static knowledge
(:class:`AppContext`: its route, the stop bars and conflict point on it, nominal amber
durations) and its previous decision (for latching). Both rollouts call the same function.

Staleness: information older than the application's freshness budget
(``lastv2x.core.catalogue``; MAP: 10 periods) is treated as absent. Absent information
falls back to the nominal controller; each application documents its fallback.

Plausibility (freshness), an option of the build under test (``AppContext.plausible_age_s``, off by
default): information whose generation timestamp is older than the bound is not trusted, as if absent
(a replayed or back-dated message carries its old timestamp), nor is a SPaT stamped in the future (more than
:data:`FUTURE_STAMP_TOLERANCE_S` past its reception: a forger stamping ahead to win the receiver's newest-stamp
rule), nor, for the rest of the run, a group whose SPaT or whose lane's MAP was once seen so
(``contract._with_plausibility``). A signal application that holds such a SPaT at its decision epoch stops
(``signal``): tampering seen is not silence.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import numpy as np

from lastv2x.core.catalogue import APPLICATIONS, ROUTE_LATERAL_BAND_M, STREAMS, Application, Stream
from services.simulator.fastinit import fast_init
from services.simulator.info import BelievedSignal, EgoInformation, Track
from services.simulator.routes import project_polyline

ROUTE_LATERAL_M = ROUTE_LATERAL_BAND_M  # a track farther than this from the ego route is not on it (the catalogue's)
SAME_DIRECTION_RAD = math.radians(45.0)  # a track "ahead" travels within this of the ego's heading
START_ACCEL_MPS2 = 1.5  # a stopped ego's assumed launch when predicting its conflict-point arrival
MAP_BUDGET_S = 10.0 * STREAMS[Stream.MAP].period_s  # as the verifier's MAP budget
# plausibility: a generation time more than this past the reception is a stamp from the future (IEEE 1609.2's
# "generation time in the future" check; half a SPaT period, well above the clock error of GNSS-synchronized units)
FUTURE_STAMP_TOLERANCE_S = 0.5 * STREAMS[Stream.SPAT].period_s
LOCATE_WINDOW_M = 20.0  # route search window around a point's straight-line arc-length estimate [m]


class Action(StrEnum):
    PROCEED = "proceed"
    STOP = "stop"  # stop at the next stop bar (driver warned; acted on after the reaction time)
    BRAKE = "brake"  # warn the driver to brake at ``brake_mps2`` (after the alerted reaction; 0 s = automatic)
    YIELD = "yield"  # warn the driver to hold at the stop bar (after the alerted reaction)
    ADVISE = "advise"  # speed advisory ``target_speed_mps``
    WARN = "warn"  # a warning without a control change (plugged-in apps; nominal driving)


@fast_init
@dataclass(frozen=True, slots=True)
class EgoState:
    """The ego's own kinematic state (own sensors; identical semantics in both rollouts)."""

    t_s: float
    s_m: float  # centre arc length on its route
    speed_mps: float
    accel_mps2: float
    xy_m: tuple[float, float]
    heading_rad: float
    stop_bar_distance_m: float  # front bumper to the next stop bar; inf when none is ahead
    conflict_distance_m: float | None  # centre to the conflict point; None when none or passed


@dataclass(frozen=True, eq=False)
class AppContext:
    """Static knowledge of the ego: its route geometry and the junction's nominal timing."""

    application: Application
    route_points: np.ndarray  # (P, 2) the ego route polyline as the program gives it
    conflict_xy_m: tuple[float, float] | None
    amber_s: Mapping[str, float]  # nominal amber duration per signal group
    desired_speed_mps: float
    ego_length_m: float = 4.5
    # the signalized crossings of the whole route, (stop bar arc length, group, junction) in route
    # order (``route_crossings``); empty: unknown (the "junctions known ahead" count is then None)
    crossings: tuple[tuple[float, str, str], ...] = ()
    # the plausibility option (freshness): information whose generation timestamp, as its message carries it,
    # is older than this is not trusted (a replayed or back-dated message); None: off, the applications as they
    # always were (only the freshness budget). Set by the build under test (``contract.ReferenceApp``), not by
    # the scenario: its absence is what a campaign reveals
    plausible_age_s: float | None = None
    _s: np.ndarray = field(init=False, repr=False)

    _xs: list[float] = field(init=False, repr=False)
    _ys: list[float] = field(init=False, repr=False)
    _sl: list[float] = field(init=False, repr=False)
    freshness_budget_s: float = field(init=False, repr=False, compare=False)  # the catalogue's, per application
    # the age up to which information is used: the budget, or the plausibility bound when that is smaller
    trusted_age_s: float = field(init=False, repr=False, compare=False)
    _segs: list[tuple[float, ...]] = field(init=False, repr=False, compare=False)  # locate()'s per-segment terms

    def __post_init__(self) -> None:
        p = np.asarray(self.route_points, dtype=np.float64)
        put = object.__setattr__
        put(self, "route_points", p)
        put(self, "_s", np.concatenate(([0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T)))))
        put(self, "_xs", p[:, 0].tolist())
        put(self, "_ys", p[:, 1].tolist())
        put(self, "_sl", self._s.tolist())
        put(self, "freshness_budget_s", APPLICATIONS[self.application].freshness_budget_s)
        put(self, "trusted_age_s", self.freshness_budget_s if self.plausible_age_s is None
            else min(self.freshness_budget_s, self.plausible_age_s))
        xs, ys, sl = self._xs, self._ys, self._sl
        segs = []
        for i in range(len(sl) - 1):
            ax, ay = xs[i], ys[i]
            bx, by = xs[i + 1] - ax, ys[i + 1] - ay
            segs.append((ax, ay, bx, by, bx * bx + by * by, sl[i], sl[i + 1] - sl[i]))
        put(self, "_segs", segs)

    def locate(self, x: float, y: float, s_hint: float, window_m: float = LOCATE_WINDOW_M) -> tuple[float, float]:
        """(arc length, lateral distance) of one point, searching the route within ``window_m`` of
        ``s_hint`` (pure Python: a handful of segments beats numpy's per-call overhead here)."""
        sl, segs, hypot = self._sl, self._segs, math.hypot
        # (a hint past the route's end, an ego that drove beyond it, searches the last segment)
        i0 = min(max(bisect.bisect_right(sl, s_hint - window_m) - 1, 0), len(segs) - 1)
        i1 = bisect.bisect_left(sl, s_hint + window_m)
        if i1 > len(segs):
            i1 = len(segs)
        best_d, best_s = math.inf, math.nan
        for i in range(i0, i1 if i1 > i0 else i0 + 1):
            ax, ay, bx, by, L2, s0, ds = segs[i]
            if L2 < 1e-12:
                t = 0.0
            else:  # min(max(u, 0.0), 1.0)
                t = ((x - ax) * bx + (y - ay) * by) / L2
                if 0.0 > t:
                    t = 0.0
                if 1.0 < t:
                    t = 1.0
            d = hypot(x - ax - t * bx, y - ay - t * by)
            if d < best_d:
                best_d, best_s = d, s0 + t * ds
        return best_s, best_d

    def junctions_known_ahead(self, info: EgoInformation, ego: EgoState) -> int | None:
        """How many signalized junctions still ahead on the route (its next stop bar included) the
        ego holds fresh SPaT for: valid, within the application's freshness budget, a known phase.
        None when ``crossings`` does not list the route's junctions. (Here, not in the signal
        applications' module: a count that no decision reads is no site for STRaP's mutants.)"""
        if not self.crossings:
            return None
        bar = ego.s_m + ego.stop_bar_distance_m if math.isfinite(ego.stop_bar_distance_m) else math.inf
        known = set()
        for bar_s, group, junction in self.crossings:
            if bar_s + 0.5 < bar or junction in known:
                continue
            sig = info.signals.get(group)
            if sig is not None and sig.valid and sig.phase >= 0 and sig.aoi_s <= self.freshness_budget_s:
                known.add(junction)
        return len(known)

    def implausible_signal(self, info: EgoInformation) -> BelievedSignal | None:
        """With the plausibility option on (``plausible_age_s``): the believed signal of the ego's group when the
        ego holds one whose generation time is older than the bound (a replayed or back-dated SPaT, or one the
        radio lost for that long); None when the option is off, no signal is held, or it is young enough."""
        bound = self.plausible_age_s
        if bound is None or info.ego_group_id is None:
            return None
        sig = info.signals.get(info.ego_group_id)
        return sig if sig is not None and sig.phase >= 0 and (sig.aoi_s > bound or future_stamped(sig.aoi_s)) \
            else None

    @property
    def route_length_m(self) -> float:
        return float(self._s[-1])

    def on_route(self, xy: np.ndarray, s_from: float, s_to: float) -> tuple[np.ndarray, np.ndarray]:
        """(arc length, lateral distance) of points (M, 2) projected on the route between s_from and s_to
        (lateral +inf where the closest point lies outside that stretch)."""
        s, lat = project_polyline(self.route_points, self._s, xy)
        return s, np.where((s >= s_from) & (s <= s_to), lat, np.inf)


@fast_init
@dataclass(frozen=True, slots=True)
class Decision:
    app: Application
    action: Action
    t_s: float
    reason: str
    target_speed_mps: float | None = None
    brake_mps2: float = 0.0
    epoch: bool = False  # this call is the decision epoch
    after_epoch: bool = False  # the decision epoch has passed
    committed: bool = False  # latched (signal apps after the epoch)
    aoi_s: float | None = None  # age of the information the decision rests on
    info_valid: bool = True  # False: no fresh information, fallback used
    evidence_t_s: float | None = None  # when the hazard behind a BRAKE/YIELD was last seen
    bar_s_m: float | None = None  # signal apps: route arc length of the front bumper at the stop bar decided on
    known_ahead: int | None = None  # signal apps at an epoch: junctions ahead on the route with fresh SPaT

    def same_as(self, other: Decision | None) -> bool:
        """Same action for the same reason: paired execution records a decision only on a change."""
        return other is not None and not self.epoch and (self.action, self.reason, self.committed) == (
            other.action, other.reason, other.committed)

    def at(self, t_s: float) -> Decision:
        return replace(self, t_s=t_s, epoch=False)


DecideFn = Callable[[EgoInformation, EgoState, AppContext, "Decision | None"], Decision]


def fresh_signal(info: EgoInformation, ctx: AppContext) -> BelievedSignal | None:
    """The believed signal of the ego's associated group, or None when absent, invalid or stale."""
    if info.ego_group_id is None or info.map_aoi_s > MAP_BUDGET_S:
        return None
    sig = info.signals.get(info.ego_group_id)
    if sig is None or not sig.valid or sig.aoi_s > ctx.trusted_age_s or sig.phase < 0:
        return None
    if ctx.plausible_age_s is not None and future_stamped(sig.aoi_s):
        return None  # the plausibility option: a stamp from the future is not trusted
    return sig


def future_stamped(aoi_s: float) -> bool:
    """Is information of this age stamped in the future (beyond :data:`FUTURE_STAMP_TOLERANCE_S`)?"""
    return aoi_s < -FUTURE_STAMP_TOLERANCE_S



def route_crossings(crossings: Iterable[Any]) -> tuple[tuple[float, str, str], ...]:
    """``AppContext.crossings`` from a program route's crossings (``lastv2x.core.program.Crossing``):
    the signalized ones, in route order."""
    return tuple((float(c.stop_bar_s_m), str(c.signal_group_id), str(c.junction_id))
                 for c in crossings if c.signal_group_id)


def fresh_tracks(info: EgoInformation, ctx: AppContext) -> list[Track]:
    budget = ctx.trusted_age_s
    return [t for t in info.tracks.values() if t.valid and t.aoi_s <= budget]


def angle_diff(a: float, b: float) -> float:
    return abs((a - b + math.pi) % (2.0 * math.pi) - math.pi)


def time_to_reach_s(distance_m: float, speed_mps: float, accel_mps2: float = START_ACCEL_MPS2) -> float:
    """Time to cover ``distance_m`` from ``speed_mps`` accelerating at ``accel_mps2`` (finite when stopped)."""
    if distance_m <= 0.0:
        return 0.0
    return (-speed_mps + math.sqrt(speed_mps * speed_mps + 2.0 * accel_mps2 * distance_m)) / accel_mps2


__all__ = ["Action", "AppContext", "DecideFn", "Decision", "EgoState", "MAP_BUDGET_S", "ROUTE_LATERAL_M",
           "SAME_DIRECTION_RAD", "START_ACCEL_MPS2", "angle_diff", "fresh_signal", "fresh_tracks",
           "route_crossings", "time_to_reach_s"]
