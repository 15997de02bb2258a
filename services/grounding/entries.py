"""The map catalogue's entries: what grounding knows of a junction, as plain data.

Junctions, approaches, movements, stop bars, conflict points, building exposure and
candidate RSU sites of one map (:class:`MapEntry`), frozen and JSON round-trippable
(:func:`entry_to_dict` / :func:`entry_from_dict`, schema ``SCHEMA`` of
``CATALOGUE_VERSION``); the geometry rules retrieval and role validation share
(:func:`heading_gap_rad`, ``PERPENDICULAR``, ``OPPOSITE_MIN_RAD``). Extraction from a
parsed map is ``services.grounding.extract``; the on-disk cache is ``catalogue``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

CATALOGUE_VERSION = 1  # bump when extraction rules or the JSON layout change
SCHEMA = "lastv2x.catalogue/1"

PERPENDICULAR = (math.radians(45.0), math.radians(135.0))  # heading gap of a crossing approach, rad
OPPOSITE_MIN_RAD = math.radians(135.0)  # least heading gap of the opposite approach


def heading_gap_rad(a: float, b: float) -> float:
    """|a - b| wrapped into [0, pi]."""
    return abs(math.remainder(a - b, 2.0 * math.pi))


def compass_from(heading_rad: float) -> str:
    """Where traffic with this travel heading comes from: 'south' for a northbound approach."""
    ang = math.degrees(heading_rad + math.pi) % 360.0
    names = ("east", "northeast", "north", "northwest", "west", "southwest", "south", "southeast")
    return names[int(((ang + 22.5) % 360.0) // 45.0)]


@dataclass(frozen=True)
class ConflictInfo:
    movement_a: str
    movement_b: str
    kind: str  # "crossing" | "merging"
    xy: tuple[float, float]


@dataclass(frozen=True)
class MovementInfo:
    id: str
    approach_id: str
    from_lane_id: str
    to_lane_id: str
    turn: str
    signal_group_id: str | None
    length_m: float
    speed_limit_mps: float
    conflicts: tuple[str, ...]  # movement ids it crosses or merges with


@dataclass(frozen=True)
class StopBarInfo:
    lane_id: str
    xy: tuple[float, float]


@dataclass(frozen=True)
class ApproachInfo:
    id: str
    junction_id: str
    heading_rad: float  # travel direction towards the junction
    compass: str  # where its traffic comes from
    lane_ids: tuple[str, ...]  # left to right
    stop_bars: tuple[StopBarInfo, ...]
    movement_ids: tuple[str, ...]
    turns: tuple[str, ...]
    signal_group_ids: tuple[str, ...]
    signalized_turns: tuple[str, ...]  # turns with a signal group
    speed_limit_mps: float
    run_up_m: float  # route length available upstream of the stop bar (capped at RUN_UP_CAP_M)
    next_junction_id: str | None  # first junction ahead along the straight movement
    next_junction_m: float | None  # road length between the two junction boxes
    chain_ahead: tuple[str, ...]  # junctions ahead along straight movements (corridor)

    @property
    def lane_count(self) -> int:
        return len(self.lane_ids)


@dataclass(frozen=True)
class BuildingExposure:
    radius_m: float
    count: int  # buildings with any footprint vertex within the radius
    built_fraction: float  # share of the disc covered by footprints
    max_height_m: float
    mean_height_m: float  # footprint-weighted within the disc


@dataclass(frozen=True)
class RsuSiteInfo:
    id: str
    xy: tuple[float, float]
    height_m: float
    approach_id: str  # the approach on whose near-right corner it stands
    los_approaches: int  # approaches whose lane RSU_VIEW_M upstream it sees unobstructed (2-D)


@dataclass(frozen=True)
class JunctionInfo:
    id: str
    map_name: str
    centre: tuple[float, float]
    signalized: bool
    kinds: tuple[str, ...]
    approaches: tuple[ApproachInfo, ...]
    movements: tuple[MovementInfo, ...]
    conflicts: tuple[ConflictInfo, ...]
    signal_group_ids: tuple[str, ...]
    speed_limit_mps: float
    exposure: BuildingExposure
    rsu_sites: tuple[RsuSiteInfo, ...]

    @property
    def approach_count(self) -> int:
        return len(self.approaches)

    def approach(self, approach_id: str) -> ApproachInfo:
        for a in self.approaches:
            if a.id == approach_id:
                return a
        raise KeyError(approach_id)

    def movement(self, movement_id: str) -> MovementInfo:
        for m in self.movements:
            if m.id == movement_id:
                return m
        raise KeyError(movement_id)

    def movements_of(self, approach_id: str, turn: str | None = None) -> tuple[MovementInfo, ...]:
        return tuple(m for m in self.movements if m.approach_id == approach_id and (turn is None or m.turn == turn))

    def conflict(self, a: str, b: str) -> ConflictInfo | None:
        for c in self.conflicts:
            if {c.movement_a, c.movement_b} == {a, b}:
                return c
        return None


@dataclass(frozen=True)
class MapEntry:
    name: str
    content_sha256: str
    fingerprint: str  # sha256 of the source bytes (+ sidecar); the cache key
    source: str  # "builtin" or a file path
    summary: dict[str, int]
    junctions: tuple[JunctionInfo, ...]
    notes: tuple[str, ...] = ()
    catalogue_version: int = CATALOGUE_VERSION
    build_s: float = 0.0

    def junction(self, junction_id: str) -> JunctionInfo:
        for j in self.junctions:
            if j.id == junction_id:
                return j
        raise KeyError(f"{self.name}: no junction {junction_id!r}")

    @property
    def signalized_junction_count(self) -> int:
        return sum(j.signalized for j in self.junctions)


@dataclass(frozen=True)
class MapErrorEntry:
    name: str
    source: str
    reason: str


def entry_to_dict(entry: MapEntry) -> dict[str, Any]:
    return {"schema": SCHEMA, **asdict(entry)}


def entry_from_dict(data: dict[str, Any]) -> MapEntry:
    if data.get("schema") != SCHEMA or data.get("catalogue_version") != CATALOGUE_VERSION:
        raise ValueError("catalogue entry of another schema or version")

    def t(x: Any) -> tuple:
        return tuple(x) if x is not None else ()

    junctions = []
    for j in data["junctions"]:
        approaches = tuple(ApproachInfo(
            id=a["id"], junction_id=a["junction_id"], heading_rad=a["heading_rad"], compass=a["compass"],
            lane_ids=t(a["lane_ids"]), stop_bars=tuple(StopBarInfo(b["lane_id"], tuple(b["xy"])) for b in a["stop_bars"]),
            movement_ids=t(a["movement_ids"]), turns=t(a["turns"]), signal_group_ids=t(a["signal_group_ids"]),
            signalized_turns=t(a["signalized_turns"]), speed_limit_mps=a["speed_limit_mps"], run_up_m=a["run_up_m"],
            next_junction_id=a["next_junction_id"], next_junction_m=a["next_junction_m"],
            chain_ahead=t(a["chain_ahead"])) for a in j["approaches"])
        movements = tuple(MovementInfo(**{**m, "conflicts": t(m["conflicts"])}) for m in j["movements"])
        conflicts = tuple(ConflictInfo(c["movement_a"], c["movement_b"], c["kind"], tuple(c["xy"]))
                          for c in j["conflicts"])
        junctions.append(JunctionInfo(
            id=j["id"], map_name=j["map_name"], centre=tuple(j["centre"]), signalized=j["signalized"],
            kinds=t(j["kinds"]), approaches=approaches, movements=movements, conflicts=conflicts,
            signal_group_ids=t(j["signal_group_ids"]), speed_limit_mps=j["speed_limit_mps"],
            exposure=BuildingExposure(**j["exposure"]),
            rsu_sites=tuple(RsuSiteInfo(**{**s, "xy": tuple(s["xy"])}) for s in j["rsu_sites"])))
    return MapEntry(name=data["name"], content_sha256=data["content_sha256"], fingerprint=data["fingerprint"],
                    source=data["source"], summary=dict(data["summary"]), junctions=tuple(junctions),
                    notes=t(data.get("notes")), catalogue_version=data["catalogue_version"],
                    build_s=data.get("build_s", 0.0))


__all__ = [
    "CATALOGUE_VERSION", "OPPOSITE_MIN_RAD", "PERPENDICULAR", "SCHEMA", "ApproachInfo", "BuildingExposure",
    "ConflictInfo", "JunctionInfo", "MapEntry", "MapErrorEntry", "MovementInfo", "RsuSiteInfo", "StopBarInfo",
    "compass_from", "entry_from_dict", "entry_to_dict", "heading_gap_rad",
]
