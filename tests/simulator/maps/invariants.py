"""Structural invariants every loaded RoadMap must satisfy (shared by the tests)."""

from __future__ import annotations

import numpy as np

from services.simulator.maps import Lane, RoadMap

CARLA_TOWNS = ("Town01", "Town02", "Town03", "Town04", "Town05", "Town06", "Town07", "Town10HD")
JOIN_TOL_M = 0.05  # lane end <-> connector start (sampling stays 1 mm inside sections)


def check_road_map(rm: RoadMap) -> None:
    assert rm.lanes, rm.name
    assert len(rm.content_sha256) == 64
    xmin, ymin, xmax, ymax = rm.bounds
    assert xmin <= xmax and ymin <= ymax
    for lane in rm.lanes.values():
        assert lane.polyline.shape[1] == 2 and lane.polyline.dtype == np.float64
        assert not lane.polyline.flags.writeable
        assert np.all(np.diff(lane.s_m) > 0), f"{lane.id}: s not strictly increasing"
        assert lane.width_m > 0 and lane.speed_limit_mps > 0
        for nxt in lane.successor_ids:
            el = rm.element(nxt)
            if isinstance(el, Lane):
                assert lane.id in el.predecessor_ids
                gap = np.hypot(*(el.polyline[0] - lane.polyline[-1]))
                # a lane tapering to zero width ends on its neighbour's edge
                tol = JOIN_TOL_M + 0.5 * max(lane.width_m, el.width_m)
                assert gap < tol, f"{lane.id} -> {nxt}: gap {gap:.3f} m"
            else:
                assert el.from_lane_id == lane.id
    for jid, j in rm.junctions.items():
        assert j.id == jid and j.movements, jid
        ids = [m.id for m in j.movements]
        assert len(set(ids)) == len(ids)
        for m in j.movements:
            assert m.junction_id == jid
            src, dst = rm.lanes[m.from_lane_id], rm.lanes[m.to_lane_id]
            assert np.hypot(*(src.polyline[-1] - m.polyline[0])) < JOIN_TOL_M, m.id
            assert np.hypot(*(dst.polyline[0] - m.polyline[-1])) < JOIN_TOL_M, m.id
            assert m.id in src.successor_ids and m.id in dst.predecessor_ids
            assert any(m.from_lane_id in a.incoming_lane_ids and a.id == m.approach_id
                       for a in j.approaches)
            if m.signal_group_id is not None:
                g = rm.signal_groups[m.signal_group_id]
                assert m.id in g.movement_ids and g.junction_id == jid
        for a in j.approaches:
            for bar in a.stop_bars:  # stop bar = end of the incoming lane
                lane = rm.lanes[bar.lane_id]
                assert np.allclose(bar.xy, lane.polyline[-1]) and bar.s_m == lane.length_m
        moves = {m.id: m for m in j.movements}
        for c in j.conflicts:
            assert c.movement_a != c.movement_b
            a, b = moves[c.movement_a], moves[c.movement_b]  # same junction
            assert a.from_lane_id != b.from_lane_id, "diverging pairs are not conflicts"
            assert 0 <= c.s_a_m <= a.length_m + 1e-9 and 0 <= c.s_b_m <= b.length_m + 1e-9
            tol = 1e-6 if c.kind == "crossing" else 0.6
            assert np.hypot(*(a.position_at(c.s_a_m) - c.xy)) < max(tol, 1e-6)
            assert np.hypot(*(b.position_at(c.s_b_m) - c.xy)) < tol + 1e-6
        assert j.signalized == bool(j.signal_group_ids)
    for gid, g in rm.signal_groups.items():
        assert g.movement_ids and g.signal_ids
        for mid in g.movement_ids:
            assert rm.movements[mid].signal_group_id == gid
        froms = {rm.movements[mid].from_lane_id for mid in g.movement_ids}
        assert {b.lane_id for b in g.stop_bars} == froms
