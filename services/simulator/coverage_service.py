"""CoverageMap core: a map name + RSU layout -> the channel's in-range road coverage grid.

Pure (no grpc): the servicer converts the request. Default RSUs: one per signalized
junction on a corner mast (``RSU_CORNER_OFFSET_M`` from the junction centre, 5 m up).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.simulator.maps import RoadMap, load_map
from services.simulator.v2x.channel import ChannelParams
from services.simulator.v2x.coverage import CoverageMap, coverage

RSU_CORNER_OFFSET_M = 8.0  # RSU mast distance from the junction centre, along both axes
RSU_HEIGHT_M = 5.0


@dataclass(frozen=True)
class RsuPlacement:
    id: str
    xy_m: tuple[float, float]
    height_m: float
    junction_id: str


def default_rsus(map_name: str, road_map: RoadMap | None = None) -> list[RsuPlacement]:
    road_map = road_map if road_map is not None else load_map(map_name)
    return [RsuPlacement(f"rsu_{j.id}", (float(j.centre[0]) + RSU_CORNER_OFFSET_M,
                                         float(j.centre[1]) + RSU_CORNER_OFFSET_M), RSU_HEIGHT_M, j.id)
            for j in road_map.junctions.values() if j.signalized]


def coverage_for(map_name: str, rsus: Sequence[RsuPlacement] = (), *, blockage_db_per_m: float | None = None,
                 range_m: float | None = None, cell_m: float = 5.0,
                 road_map: RoadMap | None = None) -> tuple[CoverageMap, list[RsuPlacement]]:
    """``road_map``: the map already resolved (the service resolves names only); else ``map_name`` is
    loaded as ``load_map`` does (a built-in name or a path: the in-process CLI)."""
    road_map = road_map if road_map is not None else load_map(map_name)
    layout = list(rsus) or default_rsus(map_name, road_map)
    if not layout:
        from lastv2x.core.errors import FailedPrecondition

        raise FailedPrecondition(f"map {map_name!r} has no signalized junction for a default RSU",
                                 "pass rsus explicitly")
    params = ChannelParams()
    if blockage_db_per_m is not None:
        params = dataclasses.replace(params, blockage_db_per_m=blockage_db_per_m)
    if range_m is not None:
        params = dataclasses.replace(params, range_m=range_m)
    cov = coverage(road_map, layout, None, params, cell_m)
    return cov, layout


def grid_values(cov: CoverageMap) -> np.ndarray:
    """Row-major best RSSI grid as float32 (NaN off-road)."""
    return np.asarray(cov.best_rssi_dbm, dtype=np.float32).ravel()
