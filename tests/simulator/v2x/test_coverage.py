"""Coverage maps for the CoverageMap RPC (and the blockage ablation's direction)."""

from __future__ import annotations

import numpy as np
import pytest

from lastv2x.core.spec import V2X
from services.simulator.v2x.channel import ChannelParams
from services.simulator.v2x.coverage import channel_params_for, coverage, render_png
from services.simulator.v2x.geometry import synthetic_urban_canyon


@pytest.fixture(scope="module")
def canyon():
    return synthetic_urban_canyon(3, 3, pitch_m=100.0, road_width_m=20.0, sample_m=4.0, seed=1)


def test_coverage_grid_and_fractions(canyon):
    rsu = [(105.0, 105.0)]  # a corner of the centre intersection, on the sidewalk
    cov = coverage(canyon.road_points, rsu, canyon.buildings, ChannelParams(range_m=150.0), cell_m=10.0)
    assert 0.0 < cov.fraction < cov.in_range_fraction < 1.0
    assert cov.best_rssi_dbm.shape == cov.covered_share.shape
    on_road = ~np.isnan(cov.covered_share)
    assert np.all((cov.covered_share[on_road] >= 0) & (cov.covered_share[on_road] <= 1))
    assert cov.points.shape[0] == canyon.road_points.shape[0]
    d = cov.to_dict()
    assert d["fraction"] == cov.fraction and d["range_m"] == 150.0


def test_lower_blockage_loss_raises_coverage(canyon):
    rsu = [(105.0, 105.0)]
    hi = coverage(canyon.road_points, rsu, canyon.buildings, V2X(channel={"range_m": 150, "blockage_db_per_m": 5}))
    lo = coverage(canyon.road_points, rsu, canyon.buildings, V2X(channel={"range_m": 150, "blockage_db_per_m": 1}))
    assert lo.in_range_fraction > hi.in_range_fraction
    assert channel_params_for(V2X(channel={"range_m": 50})).range_m == 50.0


def test_open_space_within_range_is_fully_covered():
    pts = np.column_stack([np.linspace(-100, 100, 201), np.zeros(201)])
    cov = coverage(pts, np.array([[0.0, 5.0]]), None, ChannelParams(range_m=150.0), cell_m=5.0)
    assert cov.fraction == 1.0 and cov.in_range_fraction == 1.0


def test_road_map_input_uses_its_buildings():
    maps = pytest.importorskip("services.simulator.maps")
    pytest.importorskip("carla")
    road_map = maps.load_map("signalized_4way")
    cov = coverage(road_map, [(8.0, 8.0)], None, ChannelParams(range_m=100.0), cell_m=5.0)
    assert cov.points.shape[0] > 100 and 0.0 < cov.fraction <= 1.0


def test_png_renderer(tmp_path, canyon):
    pytest.importorskip("matplotlib")
    cov = coverage(canyon.road_points, [(105.0, 105.0)], canyon.buildings, ChannelParams(), cell_m=10.0)
    out = render_png(cov, tmp_path / "cov.png", buildings=canyon.buildings)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
