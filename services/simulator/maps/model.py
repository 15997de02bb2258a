"""The typed road model shared by the simulator and the grounding catalogue.

Everything here is pure numpy + frozen dataclasses (no carla). Coordinates are
metres in the OpenDRIVE inertial frame: x east, y north, headings in radians
counter-clockwise from +x. (CARLA's Unreal frame has y flipped; the loader
converts.) Polylines are read-only (N, 2) float64 arrays in driving direction.

Ids are strings and unique across the whole map:

* lane ``r{road}.s{section}.l{lane}`` (OpenDRIVE road / lane-section index /
  lane id of the first section it covers),
* movement ``j{junction}.m{k}``, approach ``j{junction}.a{k}``,
* signal group ``j{junction}.sg{k}``, junction ``j{junction}``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from services.simulator.maps import geometry as geo
from services.simulator.maps.errors import MapError

XY = tuple[float, float]


class FrozenMap(Mapping):
    """A read-only, picklable mapping (``MappingProxyType`` does not pickle)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping | None = None) -> None:
        self._data = dict(data or {})

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"FrozenMap(<{len(self._data)} entries>)"

    def __getstate__(self):
        return self._data

    def __setstate__(self, state) -> None:
        self._data = state


class Turn(enum.StrEnum):
    STRAIGHT = "straight"
    LEFT = "left"
    RIGHT = "right"
    UTURN = "uturn"


# |heading change| up to this is straight, from UTURN_MIN_RAD on a U-turn.
STRAIGHT_MAX_RAD = float(np.deg2rad(35.0))  # as CARLA's GlobalRoutePlanner
UTURN_MIN_RAD = float(np.deg2rad(150.0))


def classify_turn(heading_change_rad: float) -> Turn:
    """Straight / left / right / U-turn from the signed heading change (CCW positive)."""
    d = float(geo.wrap_angle(heading_change_rad))
    if abs(d) <= STRAIGHT_MAX_RAD:
        return Turn.STRAIGHT
    if abs(d) >= UTURN_MIN_RAD:
        return Turn.UTURN
    return Turn.LEFT if d > 0 else Turn.RIGHT


class _Path:
    """Arc-length helpers for anything with a ``polyline`` and a cached ``s_m``."""

    polyline: np.ndarray
    s_m: np.ndarray

    def _init_path(self) -> None:
        pts = geo.as_polyline(self.polyline)
        object.__setattr__(self, "polyline", pts)
        object.__setattr__(self, "s_m", geo.cumulative_s(pts))

    @property
    def length_m(self) -> float:
        return float(self.s_m[-1])

    def position_at(self, s: object) -> np.ndarray:
        """(x, y) at arc length ``s`` (scalar or array, clamped to [0, length])."""
        return geo.position_at(self.polyline, self.s_m, s)

    def heading_at(self, s: object) -> np.ndarray:
        return geo.heading_at(self.polyline, self.s_m, s)

    def project(self, xy: object) -> tuple[np.ndarray, np.ndarray]:
        """(s, lateral distance) of the closest polyline point to each query point."""
        return geo.project(self.polyline, self.s_m, xy)


@dataclass(frozen=True, eq=False)
class Lane(_Path):
    """A directed driving lane outside junctions (one or more OpenDRIVE lane sections).

    ``successor_ids`` holds lane ids for a plain continuation and movement ids
    where the lane ends at a junction (see ``RoadMap.next_ids``).
    """

    id: str
    polyline: np.ndarray
    width_m: float
    speed_limit_mps: float
    successor_ids: tuple[str, ...] = ()
    predecessor_ids: tuple[str, ...] = ()
    road_id: str = ""
    xodr_lane_id: int = 0
    s_m: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._init_path()


@dataclass(frozen=True)
class StopBar:
    lane_id: str
    xy: XY
    s_m: float  # along the lane; the stop bar is the lane's end at the junction


@dataclass(frozen=True)
class Approach:
    id: str
    junction_id: str
    incoming_lane_ids: tuple[str, ...]
    heading_rad: float  # travel direction towards the junction
    stop_bars: tuple[StopBar, ...]

    @property
    def stop_bar_xy(self) -> XY:
        """Centre of the stop bar across all incoming lanes."""
        pts = np.array([b.xy for b in self.stop_bars])
        return (float(pts[:, 0].mean()), float(pts[:, 1].mean()))


@dataclass(frozen=True, eq=False)
class Movement(_Path):
    """From-lane -> to-lane through one junction; ``polyline`` is the connector."""

    id: str
    junction_id: str
    from_lane_id: str
    to_lane_id: str
    turn: Turn
    polyline: np.ndarray
    heading_change_rad: float
    width_m: float
    speed_limit_mps: float
    signal_group_id: str | None = None
    approach_id: str = ""
    via: tuple[str, ...] = ()  # OpenDRIVE connecting lanes "r{road}.s{sec}.l{lane}"
    s_m: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._init_path()


@dataclass(frozen=True)
class ConflictPoint:
    movement_a: str
    movement_b: str
    xy: XY
    s_a_m: float  # along movement a's connector
    s_b_m: float
    kind: str = "crossing"  # "crossing" | "merging" (same exit lane)


@dataclass(frozen=True)
class SignalGroup:
    id: str
    junction_id: str
    movement_ids: tuple[str, ...]
    stop_bars: tuple[StopBar, ...]
    signal_ids: tuple[str, ...] = ()  # OpenDRIVE signal ids (landmarks) merged here


@dataclass(frozen=True)
class Junction:
    id: str
    centre: XY
    approaches: tuple[Approach, ...]
    movements: tuple[Movement, ...]
    conflicts: tuple[ConflictPoint, ...]
    signalized: bool
    signal_group_ids: tuple[str, ...] = ()

    def conflicts_of(self, movement_id: str) -> tuple[ConflictPoint, ...]:
        return tuple(c for c in self.conflicts if movement_id in (c.movement_a, c.movement_b))


@dataclass(frozen=True, eq=False)
class Building:
    id: str
    footprint: np.ndarray  # (N, 2) polygon, counter-clockwise, not closed
    height_m: float

    def __post_init__(self) -> None:
        fp = np.array(self.footprint, dtype=np.float64)
        if fp.ndim != 2 or fp.shape[1] != 2 or fp.shape[0] < 3 or not np.isfinite(fp).all():
            raise ValueError(f"building {self.id}: footprint must be (N>=3, 2) finite")
        if not (np.isfinite(self.height_m) and self.height_m > 0):
            raise ValueError(f"building {self.id}: height_m must be > 0")
        fp.setflags(write=False)
        object.__setattr__(self, "footprint", fp)


@dataclass(frozen=True, eq=False)
class Route(_Path):
    """A concatenated path over lane / movement ids; ``offsets_m[i]`` = start of ids[i]."""

    ids: tuple[str, ...]
    polyline: np.ndarray
    offsets_m: tuple[float, ...]
    s_m: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._init_path()


@dataclass(frozen=True, eq=False)
class RoadMap:
    name: str
    content_sha256: str
    lanes: Mapping[str, Lane]
    junctions: Mapping[str, Junction]
    signal_groups: Mapping[str, SignalGroup]
    buildings: tuple[Building, ...]
    bounds: tuple[float, float, float, float]  # xmin, ymin, xmax, ymax
    source: str = ""
    notes: tuple[str, ...] = ()  # loader diagnostics (e.g. lights that control nothing)
    traffic_lights: int = 0  # traffic-light landmarks (type 1000001) read from the source
    _movements: Mapping[str, Movement] = field(init=False, repr=False)
    _from_lane: Mapping[str, tuple[Movement, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        moves = {m.id: m for j in self.junctions.values() for m in j.movements}
        object.__setattr__(self, "_movements", FrozenMap(moves))
        by_lane: dict[str, list[Movement]] = {}
        for m in moves.values():
            by_lane.setdefault(m.from_lane_id, []).append(m)
        object.__setattr__(self, "_from_lane", FrozenMap({k: tuple(v) for k, v in by_lane.items()}))

    @property
    def movements(self) -> Mapping[str, Movement]:
        return self._movements

    def element(self, element_id: str) -> Lane | Movement:
        """The lane or movement with this id."""
        found = self.lanes.get(element_id) or self._movements.get(element_id)
        if found is None:
            raise MapError(self.name, f"unknown lane or movement id {element_id!r}")
        return found

    def next_ids(self, element_id: str) -> tuple[str, ...]:
        """What can follow an element: successor lanes/movements, or a movement's exit lane."""
        el = self.element(element_id)
        return el.successor_ids if isinstance(el, Lane) else (el.to_lane_id,)

    def movements_from(self, lane_id: str) -> tuple[Movement, ...]:
        """Movements leaving a lane at its junction (empty if it does not end in one)."""
        return self._from_lane.get(lane_id, ())

    def route(self, ids: Sequence[str], *, check_connected: bool = True) -> Route:
        """Concatenate the polylines of consecutive lanes/movements into one path."""
        if not ids:
            raise MapError(self.name, "empty route")
        parts, starts, n = [], [], 0
        for k, eid in enumerate(ids):
            el = self.element(eid)
            if check_connected and k and eid not in self.next_ids(ids[k - 1]):
                raise MapError(self.name, f"route break: {eid!r} does not follow {ids[k - 1]!r}")
            starts.append(n)
            parts.append(el.polyline)
            n += len(el.polyline)
        stacked = np.vstack(parts)
        s_raw = geo.cumulative_s(stacked)  # dedup in Route keeps these s values
        offsets = tuple(float(s_raw[i]) for i in starts)
        return Route(ids=tuple(ids), polyline=stacked, offsets_m=offsets)

    def route_polyline(self, ids: Sequence[str]) -> np.ndarray:
        return self.route(ids).polyline

    def summary(self) -> dict[str, int]:
        return {
            "lanes": len(self.lanes),
            "junctions": len(self.junctions),
            "signalized_junctions": sum(j.signalized for j in self.junctions.values()),
            "movements": len(self._movements),
            "conflicts": sum(len(j.conflicts) for j in self.junctions.values()),
            "signal_groups": len(self.signal_groups),
            "traffic_lights": self.traffic_lights,
            "buildings": len(self.buildings),
        }
