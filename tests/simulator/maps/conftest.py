"""Session-scoped map fixtures: every map is parsed once per test session."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.simulator.maps.invariants import CARLA_TOWNS


@pytest.fixture(scope="session")
def carla_parser():
    """Skip cleanly where the optional carla extra is not installed."""
    return pytest.importorskip("carla", reason="carla extra not installed")


@pytest.fixture(scope="session")
def town_dir(shared_data: Path) -> Path:
    path = shared_data / "opendrive" / "carla"
    if not path.is_dir():
        pytest.skip(f"CARLA towns not found at {path}")
    return path


@pytest.fixture(scope="session")
def town_load(carla_parser, town_dir: Path):
    """{town: (RoadMap, load seconds)} for every CARLA town, loaded once."""
    from services.simulator.maps import load_map

    out = {}
    for town in CARLA_TOWNS:
        path = town_dir / f"{town}.xodr"
        if not path.is_file():
            continue
        t0 = time.perf_counter()
        road_map = load_map(path)
        out[town] = (road_map, time.perf_counter() - t0)
    if not out:
        pytest.skip("no CARLA town files")
    return out


@pytest.fixture(scope="session")
def towns(town_load):
    return {name: rm for name, (rm, _) in town_load.items()}


@pytest.fixture(scope="session")
def esmini_paths(shared_data: Path) -> list[Path]:
    paths = sorted((shared_data / "opendrive" / "esmini_unittest").glob("*.xodr"))
    paths += sorted((shared_data / "openscenario" / "esmini" / "xodr").glob("*.xodr"))
    if not paths:
        pytest.skip("no esmini roads in shared data")
    return paths


@pytest.fixture(scope="session")
def esmini_maps(carla_parser, esmini_paths):
    from services.simulator.maps import load_map

    return {p.name: load_map(p) for p in esmini_paths}


@pytest.fixture(scope="session")
def map_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("map-cache")


@pytest.fixture(scope="session")
def builtins(carla_parser, map_cache: Path):
    from services.simulator.maps import builtin_map_names, load_builtin

    return {name: load_builtin(name, cache_dir=map_cache) for name in builtin_map_names()}


@pytest.fixture(scope="session")
def all_maps(builtins, towns, esmini_maps):
    return {**{f"builtin:{k}": v for k, v in builtins.items()}, **towns, **esmini_maps}
