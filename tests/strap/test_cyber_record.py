"""Our Apollo Cyber ``.record`` reader: the real example file and synthetic edge cases."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from services.strap.errors import (
    CorruptRecordingError,
    MessageDecodeError,
    MissingChannelsError,
    TruncatedRecordingError,
    UnsupportedRecordingError,
)
from services.strap.readers import CyberRecording, open_recording
from services.strap.scene_schema import load_schema
from services.strap.vectorize import vectorize_recording
from tests.strap.helpers import apollo_like_file, message_classes, write_cyber_record

EXAMPLE_COUNTS = {
    "/apollo/localization/pose": 15, "/apollo/canbus/chassis": 15, "/apollo/prediction": 2,
    "/apollo/planning": 1, "/apollo/routing_response_history": 1,
    "/apollo/routing_request": 0, "/apollo/monitor": 0, "/apollo/routing_response": 0,
}


@pytest.fixture(scope="module")
def example(shared_data):
    return shared_data / "recordings" / "apollo_cyber" / "example.record.00000"


def test_example_record_channels_counts_and_order(example):
    rec = open_recording(example)
    assert isinstance(rec, CyberRecording)
    assert rec.message_counts() == EXAMPLE_COUNTS
    assert rec.channels()["/apollo/planning"].type_name == "apollo.planning.ADCTrajectory"
    items = list(rec)
    assert len(items) == 34
    ts = [t for _, t, _ in items]
    assert ts == sorted(ts)
    assert (ts[0], ts[-1]) == rec.time_range_ns() == (rec.header.begin_time, rec.header.end_time)


def test_example_record_payloads_decode_from_embedded_descriptors(example):
    rec = open_recording(example, channels=["/apollo/planning", "/apollo/canbus/chassis"])
    msgs = list(rec)
    assert {c for c, _, _ in msgs} == {"/apollo/planning", "/apollo/canbus/chassis"}
    planning = next(m for c, _, m in msgs if c == "/apollo/planning")
    assert planning.DESCRIPTOR.full_name == "apollo.planning.ADCTrajectory"
    assert planning.decision.main_decision.WhichOneof("task") == "stop"
    assert len(planning.trajectory_point) == 94
    chassis = next(m for c, _, m in msgs if c == "/apollo/canbus/chassis")
    assert chassis.header.module_name == "SimControl"


def test_example_record_vectorizes_with_apollo_map(example):
    rec = open_recording(example)
    with pytest.raises(MissingChannelsError) as err:
        vectorize_recording(rec, "apollo", modules=["planning"])
    assert err.value.missing == ("/apollo/perception/traffic_light",)
    table = vectorize_recording(rec, "apollo", modules=["planning"], missing="none")
    assert table.n_frames == 15 and table.reference_channel == "/apollo/canbus/chassis"
    assert table.missing_channels == ("/apollo/perception/traffic_light",)
    action = table.column("ego.action")
    stop_code = 1 + load_schema().vocab("ego.action").index("stop")
    assert action[0] == 0 and action[-1] == stop_code  # planning publishes after the first frames
    assert set(table.column("ego.motion")) == {3}      # speed 0 -> "stopped"


def _fake_channels():
    fdp = apollo_like_file()
    return fdp, {
        "/apollo/perception/obstacles": ("apollo.perception.PerceptionObstacles", fdp),
        "/apollo/perception/traffic_light": ("apollo.perception.TrafficLightDetection", fdp),
    }


def _obstacles(cls, *sub_types):
    msg = cls["PerceptionObstacles"]()
    for i, st in enumerate(sub_types):
        msg.perception_obstacle.add(id=i, sub_type=st)
    return msg.SerializeToString()


def test_overlapping_chunks_are_merged_in_time_order(tmp_path):
    fdp, channels = _fake_channels()
    cls = message_classes(fdp)
    obs = "/apollo/perception/obstacles"
    chunk_a = [(obs, t, _obstacles(cls, 3)) for t in (100, 300, 500)]
    chunk_b = [(obs, t, _obstacles(cls, 5)) for t in (200, 400, 250)]  # overlaps, unsorted inside
    path = tmp_path / "x.record"
    write_cyber_record(path, channels, [chunk_a, chunk_b])
    ts = [t for _, t, _ in open_recording(path)]
    assert ts == [100, 200, 250, 300, 400, 500]


def test_apollo_map_on_synthetic_perception_record(tmp_path):
    fdp, channels = _fake_channels()
    cls = message_classes(fdp)
    obs, tl = "/apollo/perception/obstacles", "/apollo/perception/traffic_light"
    red = cls["TrafficLightDetection"]()
    red.traffic_light.add(color=1)
    msgs = [(obs, 0, _obstacles(cls, 3, 11)), (tl, 10, red.SerializeToString()),
            (obs, 100, _obstacles(cls, 10)), (obs, 200, _obstacles(cls))]
    path = tmp_path / "p.record"
    write_cyber_record(path, channels, [msgs])
    table = vectorize_recording(open_recording(path), "apollo", modules=["perception_obstacle"],
                                missing="none")
    assert table.reference_channel == obs and table.n_frames == 3
    assert list(table.column("vehicle.car")) == [1, 0, 0]
    assert list(table.column("traffic_cone")) == [1, 0, 0]
    assert list(table.column("pedestrian")) == [0, 1, 0]
    table = vectorize_recording(open_recording(path), "apollo", modules=["perception_traffic_light"],
                                missing="none")
    # only the traffic-light channel (and planning for always-kept features) is aligned now
    assert table.reference_channel == tl and list(table.column("traffic_light.color")) == [4]  # red
    assert "vehicle.car" not in table.feature_names and "intersection" in table.feature_names


def test_truncated_record_names_offset(tmp_path, example):
    data = example.read_bytes()
    cut = tmp_path / "cut.record"
    cut.write_bytes(data[:240_000])  # inside the single chunk body (starts at 232002)
    with pytest.raises(TruncatedRecordingError) as err:
        open_recording(cut)
    assert err.value.offset == 232002 and str(cut) in str(err.value)
    tiny = tmp_path / "tiny.record"
    tiny.write_bytes(data[:10])
    with pytest.raises(TruncatedRecordingError):
        open_recording(tiny)


def test_corrupt_section_header_and_body(tmp_path, example):
    data = bytearray(example.read_bytes())
    bad = tmp_path / "bad.record"
    data[2064:2068] = (9).to_bytes(4, "little")  # first channel section gets type 9
    bad.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordingError) as err:
        open_recording(bad)
    assert err.value.offset == 2064
    fdp, channels = _fake_channels()
    path = tmp_path / "garbage.record"
    offs = write_cyber_record(path, channels, [[("/apollo/perception/obstacles", 5, b"\xff\xff\xff")]])
    with pytest.raises(MessageDecodeError) as err:  # payload is not a PerceptionObstacles
        list(open_recording(path))
    assert err.value.offset == offs["chunk_body_0"]
    assert err.value.channel == "/apollo/perception/obstacles"
    raw = bytearray(path.read_bytes())
    body = offs["chunk_body_0"] + 16
    raw[body:body + 4] = b"\xff\xff\xff\xff"  # the chunk body itself no longer parses
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptRecordingError) as err:
        list(open_recording(path))
    assert err.value.offset == offs["chunk_body_0"]


def test_compressed_and_non_record_inputs(tmp_path, example):
    fdp, channels = _fake_channels()
    path = tmp_path / "z.record"
    write_cyber_record(path, channels, [[("/apollo/perception/obstacles", 1, b"")]], compress=1)
    with pytest.raises(UnsupportedRecordingError):
        open_recording(path)
    other = tmp_path / "notes.record"
    other.write_text("hello, this is not a record at all, just text" * 100)
    with pytest.raises(CorruptRecordingError):
        open_recording(other)
    renamed = tmp_path / "example_without_suffix"
    shutil.copyfile(example, renamed)
    assert open_recording(renamed).format == "cyber"  # sniffed


def test_record_without_index_counts_by_scanning(tmp_path):
    fdp, channels = _fake_channels()
    cls = message_classes(fdp)
    path = tmp_path / "noindex.record"
    obs = "/apollo/perception/obstacles"
    write_cyber_record(path, channels, [[(obs, t, _obstacles(cls, 3)) for t in range(5)]], with_index=False)
    rec = open_recording(path)
    assert rec.channels()[obs].message_count is None
    assert rec.message_counts() == {obs: 5, "/apollo/perception/traffic_light": 0}
    assert np.array_equal([t for _, t, _ in rec], np.arange(5))


def test_a_recording_is_read_with_the_channel_map_its_channels_select(tmp_path):
    from services.strap.pipeline import ingest
    from services.strap.scene_schema import select_channel_map

    assert select_channel_map(None, "cyber", ["/apollo/canbus/chassis"]).name == "apollo"
    assert select_channel_map(None, "mcap", ["/gt/vehicles", "/ctrl/ego"]).name == "platform"
    fdp, channels = _fake_channels()
    cls = message_classes(fdp)
    path = tmp_path / "p.record"
    write_cyber_record(path, channels, [[("/apollo/perception/obstacles", 0, _obstacles(cls, 3))]])
    auto = ingest(path, None, modules=["perception_obstacle"], missing="none")
    assert auto.feature_names == ingest(path, "apollo", modules=["perception_obstacle"], missing="none").feature_names
    assert list(auto.column("vehicle.car")) == [1]
