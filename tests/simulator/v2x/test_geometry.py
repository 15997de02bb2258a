"""Footprint / ray-chord geometry used by the channel's blockage term."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.simulator.kernels import channel as k_channel
from services.simulator.v2x.channel import ChannelParams, blockage_db
from services.simulator.v2x.geometry import (
    BuildingSet,
    all_pairs,
    rectangle,
    synthetic_urban_canyon,
)

# 1 dB per metre of a ray fully below the roofs, no cap, no walls: the blockage is the chord length in metres
_CHORD_METRES = ChannelParams(blockage_db_per_m=1.0, blockage_saturation_m=1.0, blockage_cap_db=math.inf)


def chord_length_per_link(b: BuildingSet, p0, p1) -> np.ndarray:
    """The length [m] of each segment inside footprints (ground-level rays under 100 m roofs)."""
    return blockage_db(p0, 0.0, p1, 0.0, b.with_heights([100.0] * len(b)), _CHORD_METRES)


def test_rejects_bad_polygons():
    with pytest.raises(ValueError):
        BuildingSet([(np.zeros((2, 2)), 10.0)])
    with pytest.raises(ValueError):
        BuildingSet([(rectangle(0, 0, 1, 1), -1.0)])
    with pytest.raises(ValueError):
        BuildingSet([(np.zeros((4, 3)), 10.0)])
    with pytest.raises(ValueError):
        BuildingSet([rectangle(0, 0, 1, 1)])  # missing height


def test_closing_vertex_is_dropped_and_arrays_are_read_only():
    sq = rectangle(0, 0, 10, 10)
    b = BuildingSet([(np.vstack([sq, sq[:1]]), 12.0)])
    assert b.polygons[0].shape == (4, 2)
    with pytest.raises(ValueError):
        b.heights_m[0] = 1.0


def test_contains():
    b = BuildingSet([(rectangle(0, 0, 10, 10), 5.0), (rectangle(20, 0, 30, 10), 5.0)])
    pts = np.array([[5, 5], [15, 5], [25, 5], [-1, 5], [5, 11]], float)
    assert b.contains(pts).tolist() == [True, False, True, False, False]
    assert BuildingSet.empty().contains(pts).tolist() == [False] * 5


def test_prefilter_drops_far_buildings():
    b = BuildingSet([(rectangle(0, 0, 10, 10), 5.0), (rectangle(500, 500, 510, 510), 5.0),
                     (rectangle(40, 40, 50, 50), 5.0)])
    bbox = b.kernel_arrays[0]
    # the segment (y = 5) misses both other bboxes
    assert [bool(k_channel.meets_box(-5.0, 5.0, 60.0, 5.0, bbox, i)) for i in range(3)] == [True, False, False]


def test_detailed_and_simple_footprints_together():
    circle = np.column_stack([np.cos(np.linspace(0, 2 * np.pi, 40, endpoint=False)),
                              np.sin(np.linspace(0, 2 * np.pi, 40, endpoint=False))]) * 10
    b = BuildingSet([(rectangle(-50, -5, -40, 5), 9.0), (circle, 9.0)])
    got = chord_length_per_link(b, np.array([[-60.0, 0.0]]), np.array([[60.0, 0.0]]))
    assert got[0] == pytest.approx(10.0 + 20.0, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000))
def test_chords_match_dense_sampling(seed):
    rng = np.random.default_rng(seed)
    c = synthetic_urban_canyon(2, 2, split=2, sample_m=20.0, seed=seed)
    lo, hi = c.extent_min - 20, c.extent_max + 20
    n = 8
    p0 = rng.uniform(lo, hi, (n, 2))
    p1 = rng.uniform(lo, hi, (n, 2))
    got = chord_length_per_link(c.buildings, p0, p1)
    k = 4001
    t = np.linspace(0, 1, k)
    for i in range(n):
        pts = p0[i] + t[:, None] * (p1[i] - p0[i])
        inside = c.buildings.contains(pts).astype(float)
        d = math.dist(p0[i], p1[i])
        want = np.trapezoid(inside, t) * d
        crossings = np.count_nonzero(np.diff(inside))
        assert got[i] == pytest.approx(want, abs=(crossings + 1) * d / (k - 1) + 1e-9)


def test_all_pairs():
    i, j = all_pairs(3)
    assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == [
        (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    i, j = all_pairs(2, 3)
    assert len(i) == 6
    i, j = all_pairs(2, exclude_self=False)
    assert len(i) == 4


def test_synthetic_canyon_layout():
    c = synthetic_urban_canyon()
    assert len(c.buildings) == 48
    assert c.intersections.shape == (25, 2)
    assert np.all((c.buildings.heights_m >= 20) & (c.buildings.heights_m <= 40))
    assert not c.buildings.contains(c.road_points).any()
    assert not c.buildings.contains(c.intersections).any()
    # Same seed, same city.
    again = synthetic_urban_canyon()
    assert np.array_equal(again.buildings.heights_m, c.buildings.heights_m)


def test_synthetic_detached_houses():
    c = synthetic_urban_canyon(2, 2, split=3, split_y=2, gap_m=6.0, sample_m=4.0)
    assert len(c.buildings) == 2 * 2 * 3 * 2
    # Gaps are open ground: a point between two houses of one block is not inside.
    assert not c.buildings.contains([[10 + 18 + 3, 30.0]])[0]
    with pytest.raises(ValueError):
        synthetic_urban_canyon(split=10, gap_m=10.0)


_grid = st.integers(-6, 6).map(lambda v: 10.0 * v)  # bbox corners and edges hit exactly, axis-parallel links
_point = st.one_of(st.tuples(_grid, _grid), st.tuples(st.floats(-70.0, 70.0), st.floats(-70.0, 70.0)))


@settings(max_examples=300, deadline=None)
@given(boxes=st.lists(st.tuples(_grid, _grid, st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=12),
       links=st.lists(st.tuples(_point, _point), min_size=1, max_size=4))
def test_the_box_prefilter_drops_no_chord(boxes, links) -> None:
    """Skipping the footprints whose bounding box a segment misses changes no chord length: touching,
    axis-parallel and zero-length links included (the kernels as Python, every box walked)."""
    b = BuildingSet([(rectangle(x, y, x + 10.0 * w, y + 10.0 * h), 10.0) for x, y, w, h in boxes])
    p0 = np.array([a for a, _ in links], dtype=np.float64)
    p1 = np.array([c for _, c in links], dtype=np.float64)
    filtered = chord_length_per_link(b, p0, p1)
    with pytest.MonkeyPatch.context() as mp:
        for name in ("blockages", "blockage", "inside", "excess_length"):
            fn = getattr(k_channel, name)
            mp.setattr(k_channel, name, getattr(fn, "py_func", fn))
        mp.setattr(k_channel, "meets_box", lambda *_args: True)
        every_box = chord_length_per_link(b, p0, p1)
    assert np.array_equal(every_box, filtered)
