"""The scalar adjudicator's projection on an ego route: a long route's squares computed by numpy decide exactly
as the float loop does (segment, parameter, on-route), ties and corners included; outcomes of grounded runs
do not move."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from services.simulator import scalar
from services.simulator.adjudicate import ROUTE_LATERAL_M
from services.simulator.scalar import ROUTE_SEGMENTS_NUMPY, ScalarAdjudicator, route_segments


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
        j, t, on_route = _projector(pts, numpy_scan)._route_projection(0, 30.0, -1.0)
        assert (j, t, on_route) == (28, 1.0, True)  # the end of segment 28 (the corner), within the lateral band


def test_a_grounded_runs_outcome_bytes_are_the_same_with_either_scan(tmp_path, monkeypatch) -> None:
    from lastv2x.core.spec import parse_spec
    from services.grounding.core import GroundingConfig, GroundingCore
    from services.simulator.execute import SimulatorLimits, validate_program
    from services.simulator.paired import execute_paired
    from services.simulator.v2x.stack import v2x_source_factory

    spec = parse_spec({"application": "FCW", "seed": 7, "map": {"town": "corridor"},  # the demo campaign's FCW
                       "agents": [{"id": "lead", "role": "lead", "gap_m": 30.0,
                                   "behaviour": {"kind": "hard_brake", "decel_mps2": 6.0}}],
                       "faults": [{"name": "delay_bsm", "operator": "delay", "stream": "BSM", "sender": "lead",
                                   "anchor": {"kind": "scenario_time"}, "magnitude": 0.3}]})
    program = GroundingCore(GroundingConfig(cache_dir=tmp_path)).ground(spec)  # a built-in map's real route
    assert len(program.ego.route.points_xy_m) - 1 > ROUTE_SEGMENTS_NUMPY
    source = v2x_source_factory(road_map=validate_program(program, SimulatorLimits()))
    scans: list[bool] = []  # per projection: whether numpy scanned the route
    project = ScalarAdjudicator._route_projection

    def counted(self: ScalarAdjudicator, bi: int, px: float, py: float) -> tuple[int, float, bool]:
        scans.append(self.seg_cols[bi] is not None)
        return project(self, bi, px, py)

    monkeypatch.setattr(ScalarAdjudicator, "_route_projection", counted)
    by_numpy = execute_paired(program, 1, md_source_factory=source).to_json_bytes()
    assert scans and all(scans)  # the run projected vehicles on its route, with numpy
    monkeypatch.setattr(scalar, "ROUTE_SEGMENTS_NUMPY", 10**9)
    assert execute_paired(program, 1, md_source_factory=source).to_json_bytes() == by_numpy
    assert not any(scans[-1:])  # the second run took the float loop
