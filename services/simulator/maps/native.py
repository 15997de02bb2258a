"""Built-in layouts -> ``RawNetwork`` without carla (the default backend's path).

The ``carla`` wheel is an optional extra, but the built-in simulator backend
is the default and must run on a fresh machine. Built-in maps use a tiny
OpenDRIVE subset (straight roads, line + arc connectors, constant lane widths,
one lane section per road), so the same ``RoadSpec`` records that
``xodr_writer`` serialises are sampled here directly, with the same stations
(``geometry.sample_stations``) and the same (road, section, lane) keys carla
would report. ``assemble`` then applies the identical structural rules, and a
test checks both paths agree to a millimetre.
"""

from __future__ import annotations

import numpy as np

from services.simulator.maps.geometry import sample_stations
from services.simulator.maps.raw import Key, RawNetwork, RawSegment, RawSignal
from services.simulator.maps.xodr_writer import (
    Layout,
    RoadSpec,
    advance,
    build_roads,
    signal_placement,
)


def reference_line(road: RoadSpec, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, heading) of the road's reference line at stations ``s`` (vectorized)."""
    starts, poses = [0.0], [(road.x, road.y, road.hdg)]
    for kind, length, k in road.geoms:
        poses.append(advance(*poses[-1], kind, length, k))
        starts.append(starts[-1] + length)
    idx = np.clip(np.searchsorted(starts, s, side="right") - 1, 0, len(road.geoms) - 1)
    x0, y0, h0 = (np.array([poses[i][c] for i in idx]) for c in range(3))
    ds = s - np.array(starts)[idx]
    k = np.array([road.geoms[i][2] for i in idx])
    curved = np.abs(k) > 1e-12
    safe_k = np.where(curved, k, 1.0)
    h = h0 + k * ds
    x = np.where(curved, x0 + (np.sin(h) - np.sin(h0)) / safe_k, x0 + ds * np.cos(h0))
    y = np.where(curved, y0 + (np.cos(h0) - np.cos(h)) / safe_k, y0 + ds * np.sin(h0))
    return x, y, h


def _segment(road: RoadSpec, lane: int, width: float, speed: float,
             spacing: float) -> RawSegment:
    s = sample_stations(0.0, road.length, spacing)
    forward = lane < 0  # right-hand traffic: right lanes drive along +s
    if not forward:
        s = s[::-1]
    x, y, h = reference_line(road, s)
    t = np.sign(lane) * (abs(lane) - 0.5) * width  # lane centre, + = left of reference
    pts = np.column_stack([x - t * np.sin(h), y + t * np.cos(h)])
    heads = h if forward else h + np.pi
    jid = road.junction if road.junction >= 0 else None
    return RawSegment((road.id, 0, lane), jid, pts, np.arctan2(np.sin(heads), np.cos(heads)),
                      width, speed, forward, (0.0, road.length))


def layout_network(layout: Layout, *, lane_spacing_m: float = 2.0,
                   connector_spacing_m: float = 1.0) -> RawNetwork:
    roads, _connectors, signals = build_roads(layout)
    w, speed = layout.lane_width_m, layout.speed_limit_kmh / 3.6
    segments: dict[Key, RawSegment] = {}
    succ: dict[Key, list[Key]] = {}
    for road in roads:
        in_junction = road.junction >= 0
        lanes = [-1] if in_junction else [lid for k in range(1, road.lanes + 1) for lid in (-k, k)]
        spacing = connector_spacing_m if in_junction else lane_spacing_m
        for lane in lanes:
            seg = _segment(road, lane, w, speed, spacing)
            segments[seg.key] = seg
        if in_junction and road.lane_links is not None:
            lane_in, lane_out = road.lane_links
            me = (road.id, 0, -1)
            succ.setdefault((road.pred[1], 0, lane_in), []).append(me)
            succ.setdefault(me, []).append((road.succ[1], 0, lane_out))
    by_id = {r.id: r for r in roads}
    raw_signals = []
    for sid, (_jid, rid, contact, n) in sorted(signals.items()):
        s_sig, _t, _orient, validity = signal_placement(by_id[rid].length, contact, n, w)
        raw_signals.append(RawSignal(str(sid), rid, s_sig, (validity,)))
    ranges = {r.id: [(0.0, r.length)] for r in roads}
    return RawNetwork(segments, {k: tuple(v) for k, v in succ.items()}, raw_signals, ranges)
