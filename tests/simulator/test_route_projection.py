"""The scalar adjudicator's projection on an ego route: a long route's squares computed by numpy decide exactly
as the float loop does (segment, parameter, on-route), ties and corners included; outcomes of grounded runs
do not move."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.simulator import adjudicate
from services.simulator.adjudicate import (
    ROUTE_LATERAL_M,
    ROUTE_SEGMENTS_NUMPY,
    off_route_mark,
    route_segments,
    still_off_route,
)
from services.simulator.scalar import ScalarAdjudicator


def _projector(points_xy: np.ndarray, numpy_scan: bool) -> ScalarAdjudicator:
    """A ScalarAdjudicator holding only one row's route (what ``_route_projection`` reads)."""
    a = points_xy[:-1]
    ab = points_xy[1:] - points_xy[:-1]
    ab2 = np.maximum((ab ** 2).sum(-1), 1e-12)  # as Adjudicator.__init__
    seg_s = np.concatenate([[0.0], np.cumsum(np.hypot(ab[:, 0], ab[:, 1]))])[:-1]
    segs, cols = route_segments(a, ab, ab2, seg_s)
    adj = object.__new__(ScalarAdjudicator)
    adj.segs, adj.seg_cols = [segs], [cols if numpy_scan else None]
    return adj


def _route(seed: int, n_points: int, grid: bool) -> np.ndarray:
    """A wandering polyline; on a grid (integer metres, right angles, repeated points) ties are common."""
    rng = np.random.default_rng(seed)
    if grid:
        steps = rng.integers(-1, 2, size=(n_points - 1, 2)) * rng.integers(0, 4, size=(n_points - 1, 1))
        return np.cumsum(np.vstack([[0, 0], steps]), axis=0).astype(np.float64)
    return np.cumsum(rng.normal(0.0, 4.0, size=(n_points, 2)), axis=0)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_points=st.integers(ROUTE_SEGMENTS_NUMPY + 2, 200), grid=st.booleans(),
       picks=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from([0.0, 0.5, 1.0, 0.25]),
                                st.sampled_from([0.0, 1.0, -1.0, ROUTE_LATERAL_M, 7.3])), min_size=1, max_size=8))
def test_a_long_routes_numpy_projection_decides_as_the_float_loop(seed: int, n_points: int, grid: bool,
                                                                  picks: list) -> None:
    pts = _route(seed, n_points, grid)
    by_numpy, by_floats = _projector(pts, True), _projector(pts, False)
    assert by_numpy.seg_cols[0] is not None  # the route is long enough for the numpy scan
    for k, frac, off in picks:  # on a vertex, a segment's middle, or off the route by a lateral offset
        i = k % (n_points - 1)
        px, py = (pts[i] + frac * (pts[i + 1] - pts[i]) + off).tolist()
        assert by_numpy._route_projection(0, px, py) == by_floats._route_projection(0, px, py)


def test_a_short_route_keeps_the_float_loop() -> None:
    pts = _route(3, ROUTE_SEGMENTS_NUMPY + 1, False)  # ROUTE_SEGMENTS_NUMPY segments
    assert _projector(pts, True).seg_cols[0] is None


def test_a_tie_between_two_segments_takes_the_first_of_equal_hypots() -> None:
    # a right-angle corner: a point on its bisector is as far from both legs
    pts = np.array([[float(x), 0.0] for x in range(30)] + [[29.0, float(y)] for y in range(1, 30)])
    for numpy_scan in (True, False):
        j, t, on_route, q_min = _projector(pts, numpy_scan)._route_projection(0, 30.0, -1.0)
        assert (j, t, on_route, q_min) == (28, 1.0, True, 2.0)  # segment 28's end (the corner), 1.41 m off it


_GROUNDED = {  # the demo's intents as specs: a lead on the ego's route; cross traffic at a busy junction
    "fcw_lead": {"application": "FCW", "seed": 7, "map": {"town": "corridor"},
                 "agents": [{"id": "lead", "role": "lead", "gap_m": 30.0,
                             "behaviour": {"kind": "hard_brake", "decel_mps2": 6.0}}],
                 "faults": [{"name": "delay_bsm", "operator": "delay", "stream": "BSM", "sender": "lead",
                             "anchor": {"kind": "scenario_time"}, "magnitude": 0.3}]},
    "rlvw_busy": {"application": "RLVW", "seed": 7, "map": {"town": "signalized_4way", "busy": True},
                  "signal": {"offset_s": 20.811},
                  "faults": [{"name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
                              "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}]},
}


@pytest.mark.parametrize("name", sorted(_GROUNDED))
def test_a_grounded_runs_outcome_bytes_hold_with_the_float_loop_and_without_off_route_skips(
        name: str, tmp_path, monkeypatch) -> None:
    from lastv2x.core.spec import parse_spec
    from services.grounding.core import GroundingConfig, GroundingCore
    from services.simulator.execute import SimulatorLimits, validate_program
    from services.simulator.paired import execute_paired
    from services.simulator.v2x.stack import v2x_source_factory

    program = GroundingCore(GroundingConfig(cache_dir=tmp_path)).ground(parse_spec(_GROUNDED[name]))
    assert len(program.ego.route.points_xy_m) - 1 > ROUTE_SEGMENTS_NUMPY  # a built-in map's real route
    source = v2x_source_factory(road_map=validate_program(program, SimulatorLimits()))
    scans: list[bool] = []  # per projection: whether numpy scanned the route
    project = ScalarAdjudicator._route_projection

    def counted(self: ScalarAdjudicator, bi: int, px: float, py: float) -> tuple[int, float, bool, float]:
        scans.append(self.seg_cols[bi] is not None)
        return project(self, bi, px, py)

    monkeypatch.setattr(ScalarAdjudicator, "_route_projection", counted)
    fast = execute_paired(program, 1, md_source_factory=source).to_json_bytes()
    assert scans and all(scans)  # the run projected vehicles on its route, with numpy
    projections = len(scans)
    monkeypatch.setattr(adjudicate, "ROUTE_SEGMENTS_NUMPY", 10**9)
    monkeypatch.setattr(adjudicate, "OFF_ROUTE_MARGIN_M", math.inf)  # no skip: every candidate projected
    assert execute_paired(program, 1, md_source_factory=source).to_json_bytes() == fast
    assert not any(scans[projections:])  # the second run took the float loop
    if name == "rlvw_busy":  # cross traffic: most projections of the first run were skipped
        assert len(scans) - projections > 3 * projections


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), numpy_scan=st.booleans(), start=st.tuples(st.floats(-40, 40), st.floats(-40, 40)),
       walk=st.lists(st.tuples(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0)), min_size=1, max_size=60))
def test_a_vehicle_is_skipped_only_while_the_projection_would_find_it_off_the_route(
        seed: int, numpy_scan: bool, start: tuple[float, float], walk: list[tuple[float, float]]) -> None:
    """A vehicle wandering around and across the route, marked where a projection found it off: wherever the mark
    lets it be skipped, the projection finds it off the route too."""
    adj = _projector(_route(seed, 60, False), numpy_scan)
    x, y = start
    mark = None
    for dx, dy in walk:
        x, y = x + dx, y + dy
        *_, on_route, q_min = adj._route_projection(0, x, y)
        if still_off_route(mark, x, y):
            assert not on_route
        else:
            mark = None if on_route else off_route_mark(x, y, q_min)


def test_a_vehicle_far_off_the_route_is_skipped_until_it_could_reach_it() -> None:
    adj = _projector(np.array([[float(x), 0.0] for x in range(40)]), True)  # along y = 0
    *_, on_route, q_min = adj._route_projection(0, 10.0, 20.0)
    mark = off_route_mark(10.0, 20.0, q_min)
    assert not on_route and q_min == 400.0
    assert still_off_route(mark, 10.0, 6.0)  # 14 m closer: 6 m off, at least 3.5 m beyond the band
    assert not still_off_route(mark, 10.0, 2.4)  # within 2.5 m of y = 0: must be projected again
    assert not still_off_route(None, 10.0, 20.0)
