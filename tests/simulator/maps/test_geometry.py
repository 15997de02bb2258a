"""Pure-numpy geometry and model helpers (no carla)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from services.simulator.maps import Building, Lane, Turn, classify_turn
from services.simulator.maps import geometry as geo
from services.simulator.maps.buildings import buildings_from_json, buildings_to_json, rectangle
from services.simulator.maps.errors import MapError

coords = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


def monotone_polyline(draw_steps: np.ndarray) -> np.ndarray:
    """x strictly increasing => no self-intersection, projection is unique."""
    dx = np.abs(draw_steps[:, 0]) + 0.5
    return np.column_stack([np.cumsum(dx), np.cumsum(draw_steps[:, 1])])


steps = arrays(np.float64, st.tuples(st.integers(2, 30), st.just(2)),
               elements=st.floats(-5, 5, allow_nan=False))


@settings(max_examples=80, deadline=None)
@given(steps, st.floats(0, 1))
def test_position_at_and_project_round_trip(raw, frac):
    pts = geo.as_polyline(monotone_polyline(raw))
    s = geo.cumulative_s(pts)
    assert np.allclose(geo.position_at(pts, s, s), pts)  # vertices map to themselves
    q = frac * s[-1]
    p = geo.position_at(pts, s, q)
    s_back, dist = geo.project(pts, s, p)
    assert dist[0] < 1e-6 and s_back[0] == pytest.approx(q, abs=1e-6)
    ends = geo.position_at(pts, s, np.array([-10.0, s[-1] + 10]))  # clamped
    assert np.allclose(ends, pts[[0, -1]])


def test_position_at_is_vectorized_over_shapes():
    lane = Lane("l", np.array([[0.0, 0.0], [10.0, 0.0], [10.0, 10.0]]), 3.5, 13.9)
    assert lane.length_m == 20.0
    grid = lane.position_at(np.array([[0.0, 5.0], [15.0, 20.0]]))
    assert grid.shape == (2, 2, 2)
    assert np.allclose(grid[1, 0], [10.0, 5.0])
    assert lane.heading_at(15.0) == pytest.approx(math.pi / 2)
    assert not lane.polyline.flags.writeable


def test_duplicate_points_are_dropped():
    pts = geo.as_polyline([[0, 0], [0, 0], [1, 0], [1, 0]])
    assert pts.shape == (2, 2)
    with pytest.raises(ValueError):
        geo.as_polyline([[0, 0], [np.nan, 1]])


@settings(max_examples=100, deadline=None)
@given(st.tuples(coords, coords, coords, coords), st.tuples(coords, coords, coords, coords))
def test_crossings_match_brute_force(a, b):
    pa = np.array(a, dtype=float).reshape(2, 2)
    pb = np.array(b, dtype=float).reshape(2, 2)
    if np.hypot(*(pa[1] - pa[0])) < 1e-3 or np.hypot(*(pb[1] - pb[0])) < 1e-3:
        return
    found = geo.polyline_crossings([pa, pb], end_tol_m=0.0)
    da, db, w = pa[1] - pa[0], pb[1] - pb[0], pb[0] - pa[0]
    den = da[0] * db[1] - da[1] * db[0]
    if abs(den) < 1e-6:
        return  # near-parallel: either answer is acceptable
    t = (w[0] * db[1] - w[1] * db[0]) / den
    u = (w[0] * da[1] - w[1] * da[0]) / den
    inside = 1e-9 < t < 1 - 1e-9 and 1e-9 < u < 1 - 1e-9
    outside = t < -1e-9 or t > 1 + 1e-9 or u < -1e-9 or u > 1 + 1e-9
    if inside:
        assert len(found) == 1
        c = found[0]
        assert np.allclose([c.x, c.y], pa[0] + t * da, atol=1e-6)
        assert c.s_a == pytest.approx(t * np.hypot(*da), abs=1e-6)
    elif outside:
        assert not found


def test_crossings_skip_shared_endpoints_and_self():
    fan = [np.array([[0.0, 0.0], [10.0, 0.0]]), np.array([[0.0, 0.0], [0.0, 10.0]])]
    assert geo.polyline_crossings(fan) == []
    x = [np.array([[-5.0, 0.0], [5.0, 0.0]]), np.array([[0.0, -5.0], [0.0, 5.0]])]
    (c,) = geo.polyline_crossings(x)
    assert (c.a, c.b, c.x, c.y, c.s_a, c.s_b) == (0, 1, 0.0, 0.0, 5.0, 5.0)


@pytest.mark.parametrize(("deg", "turn"), [(0, Turn.STRAIGHT), (34, Turn.STRAIGHT),
                                           (90, Turn.LEFT), (-90, Turn.RIGHT),
                                           (-36, Turn.RIGHT), (179, Turn.UTURN),
                                           (-181, Turn.UTURN), (270, Turn.RIGHT)])
def test_classify_turn(deg, turn):
    assert classify_turn(math.radians(deg)) is turn


def test_buildings_json_round_trip_and_rejects_garbage():
    bs = (Building("a", rectangle(0, 0, 10, 20), 30.0), Building("b", rectangle(5, 5, 6, 6), 3.5))
    data = buildings_to_json("m", bs)
    back = buildings_from_json(data, "m")
    assert [b.id for b in back] == ["a", "b"] and np.allclose(back[0].footprint, bs[0].footprint)
    assert buildings_to_json("m", back) == data  # canonical bytes
    for bad in (b"not json", b"[]", b'{"schema": "x"}',
                b'{"schema": "lastv2x.buildings/1", "buildings": [{"height_m": 1}]}',
                b'{"schema": "lastv2x.buildings/1", "buildings": '
                b'[{"height_m": -1, "footprint": [[0,0],[1,0],[1,1]]}]}'):
        with pytest.raises(MapError):
            buildings_from_json(bad, "bad")
