"""Session fixtures: one catalogue of the built-in maps and every CARLA town, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

CARLA_TOWNS = ("Town01", "Town02", "Town03", "Town04", "Town05", "Town06", "Town07", "Town10HD")
DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def town_dir(shared_data: Path) -> Path:
    pytest.importorskip("carla", reason="carla extra not installed (CARLA towns need its parser)")
    path = shared_data / "opendrive" / "carla"
    if not path.is_dir():
        pytest.skip(f"CARLA towns not found at {path}")
    return path


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("catalogue-cache")


@pytest.fixture(scope="session")
def builtin_catalogue(tmp_path_factory):
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue

    return MapCatalogue(CatalogueConfig(cache_dir=tmp_path_factory.mktemp("builtin-cache"),
                                        map_cache_dir=tmp_path_factory.mktemp("builtin-maps")))


@pytest.fixture(scope="session")
def catalogue(town_dir: Path, cache_dir: Path, tmp_path_factory):
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue

    return MapCatalogue(CatalogueConfig(cache_dir=cache_dir, map_paths=(town_dir,),
                                        map_cache_dir=tmp_path_factory.mktemp("maps")))


@pytest.fixture(scope="session")
def index(catalogue):
    from services.grounding.index import RetrievalIndex

    return RetrievalIndex(catalogue)


@pytest.fixture(scope="session")
def grounder(catalogue, index):
    from services.grounding.ground import Grounder

    return Grounder(catalogue, index)


@pytest.fixture(scope="session")
def builtin_grounder(builtin_catalogue):
    from services.grounding.ground import Grounder
    from services.grounding.index import RetrievalIndex

    return Grounder(builtin_catalogue, RetrievalIndex(builtin_catalogue))
