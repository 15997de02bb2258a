"""The built-in Autoware channel map (issue 18, item 5) on ROS 2 recordings written with
rosbags' serializer from the public Autoware message definitions (tests/strap/fixtures)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.strap.pipeline import ingest, reduce_table
from services.strap.readers import open_recording
from services.strap.scene_schema import load_channel_map, select_channel_map
from tests.strap.autoware_bag import TOPICS, write_autoware_bag

pytest.importorskip("rosbags")


@pytest.fixture(scope="module")
def bag(tmp_path_factory) -> Path:
    return write_autoware_bag(tmp_path_factory.mktemp("autoware"), 10.0)


def _at(table, feature: str, t_s: float) -> str | None:
    i = int(np.searchsorted(table.timestamps_ns, int(t_s * 1e9), side="right")) - 1
    return table.feature_names and load_channel_map("autoware").schema.decode(feature, int(table.column(feature)[i]))


def test_definitions_come_from_the_recording_and_the_map_is_chosen_by_its_channels(bag: Path) -> None:
    with open_recording(bag) as rec:
        assert rec.format == "mcap" and set(rec.channels()) == set(TOPICS)
        assert select_channel_map(None, rec.format, rec.channels()).name == "autoware"
        first = next(iter(rec))
    assert type(first.message).__name__.startswith("autoware_perception_msgs__msg__")  # rosbags, embedded text


def test_autoware_scene_features(bag: Path) -> None:
    for source in (bag, next(bag.glob("*.mcap"))):
        table = ingest(source, None)
        assert table.channel_map == "autoware" and table.n_frames == 100 and not table.missing_channels
        assert _at(table, "traffic_light.color", 1.0) == "green" and _at(table, "traffic_light.color", 4.5) == "red"
        assert _at(table, "traffic_light.shape", 1.0) == "round" and _at(table, "intersection", 1.0) == "present"
        assert _at(table, "vehicle.car", 0.5) == "present" and _at(table, "vehicle.car.action", 1.0) == "cruise"
        assert _at(table, "vehicle.car.action", 5.0) == "stop" and _at(table, "vehicle.car.action", 8.0) == "cruise"
        assert _at(table, "pedestrian", 3.5) is None and _at(table, "pedestrian", 5.0) == "present"
        assert _at(table, "ego.action", 3.5) == "brake" and _at(table, "ego.action", 7.0) == "accelerate"
        assert _at(table, "ego.motion", 1.0) == "moving" and _at(table, "ego.motion", 5.0) == "stopped"
        red = reduce_table(table)
        assert 3 <= len(red.segments) < table.n_frames


def test_module_retention_and_partial_autoware_recording(tmp_path: Path, bag: Path) -> None:
    control = ingest(bag, "autoware", modules=["control"])
    assert "ego.action" in control.feature_names and "pedestrian" not in control.feature_names
    topics = {k: v for k, v in TOPICS.items() if "traffic_signals" not in k}
    partial = ingest(write_autoware_bag(tmp_path, 3.0, topics), None, missing="none")
    assert partial.channel_map == "autoware"
    assert partial.missing_channels == ("/perception/traffic_light_recognition/traffic_signals",)
    assert {"traffic_light", "traffic_light.color", "intersection"} <= set(partial.zeroed_features)


def test_sqlite3_storage_reads_too(tmp_path: Path) -> None:
    bag = write_autoware_bag(tmp_path, 2.0, storage="sqlite3")
    table = ingest(bag, None)
    assert table.channel_map == "autoware" and table.n_frames == 20
    assert _at(table, "traffic_light.color", 1.0) == "green"
