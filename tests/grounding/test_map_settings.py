"""LASTV2X_MAP_* in grounding: signal intents ground on an older CARLA town only when its
4-ways are explicitly signalized; the settings are part of every cached identity."""

from __future__ import annotations

import pytest

from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.spec import parse_spec

RLVW_TOWN03 = {"application": "RLVW", "map": {"town": "Town03"}}


def _grounder(town_dir, tmp_path, settings):
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue
    from services.grounding.ground import Grounder
    from services.grounding.index import RetrievalIndex

    cat = MapCatalogue(CatalogueConfig(cache_dir=tmp_path / "cache", include_builtins=False,
                                       map_paths=(town_dir / "Town03.xodr",), map_settings=settings))
    return cat, Grounder(cat, RetrievalIndex(cat))


def test_signalized_town03_grounds_a_signal_intent(town_dir, tmp_path):
    from services.grounding.core import GroundingConfig
    from services.simulator.maps import MapSettings
    from services.simulator.paired import execute_batch

    plain_cat, plain = _grounder(town_dir, tmp_path, MapSettings())
    with pytest.raises(FailedPrecondition):
        plain.ground(parse_spec(RLVW_TOWN03))
    settings = GroundingConfig.from_env({"LASTV2X_MAP_SIGNALIZE_4WAY": "Town03"}).map_settings
    assert settings == MapSettings(signalize_4way=("Town03",))
    cat, grounder = _grounder(town_dir, tmp_path, settings)  # same cache directory: a new key
    assert cat.version != plain_cat.version
    assert cat.entry("Town03").content_sha256 != plain_cat.entry("Town03").content_sha256
    program = grounder.ground(parse_spec(RLVW_TOWN03))
    assert program.map_name == "Town03" and program.signal_groups
    rm = cat.road_map("Town03")
    assert {g.id for g in program.signal_groups} <= set(rm.signal_groups)
    assert program.ego.route.signal_group_id in rm.signal_groups
    (outcome,) = execute_batch([program])
    assert not outcome.gt.failed


def test_generated_buildings_switch_off(town_dir, tmp_path):
    from services.grounding.core import GroundingConfig

    on, _ = _grounder(town_dir, tmp_path, GroundingConfig.from_env({}).map_settings)
    off_settings = GroundingConfig.from_env({"LASTV2X_MAP_GENERATED_BUILDINGS": "0"}).map_settings
    off, _ = _grounder(town_dir, tmp_path, off_settings)
    assert on.list_maps()[0]["building_count"] > 0 and off.list_maps()[0]["building_count"] == 0
    assert on.version != off.version


def test_the_simulator_service_loads_the_map_as_grounding_did(town_dir, tmp_path):
    """A program grounded on a signalized Town03 runs on the simulator's settings (it was refused
    there, naming its unknown signal groups, while the simulator loaded user maps with defaults)."""
    from lastv2x.core.errors import InvalidArgument
    from services.grounding.core import GroundingConfig
    from services.simulator.execute import SimulatorLimits, run_one

    env = {"LASTV2X_MAP_SIGNALIZE_4WAY": "Town03", "LASTV2X_MAP_PATHS": str(town_dir / "Town03.xodr")}
    _, grounder = _grounder(town_dir, tmp_path, GroundingConfig.from_env(env).map_settings)
    program = grounder.ground(parse_spec(RLVW_TOWN03))
    outcome, _ = run_one(program, None, SimulatorLimits.from_env(env))
    assert not outcome.gt.failed
    with pytest.raises(InvalidArgument, match="signal group"):  # the same service without the setting
        run_one(program, None, SimulatorLimits.from_env({"LASTV2X_MAP_PATHS": env["LASTV2X_MAP_PATHS"]}))
