"""Generic MCAP backend: JSON / protobuf / ROS 2 CDR decoding, order, errors."""

from __future__ import annotations

import json

import pytest
from google.protobuf import descriptor_pb2
from mcap.writer import CompressionType, IndexType, Writer

from services.strap.errors import (
    CorruptRecordingError,
    MessageDecodeError,
    TruncatedRecordingError,
    UnsupportedEncodingError,
)
from services.strap.extract import compile_path
from services.strap.readers import McapRecording, open_recording, write_trace
from tests.strap.helpers import apollo_like_file, message_classes


def _writer(path, **kw):
    f = open(path, "wb")
    w = Writer(f, compression=CompressionType.NONE, **kw)
    w.start()
    return f, w


def _proto_file(path, n=5):
    """Protobuf channel whose FileDescriptorSet lists a dependent file *before* its import."""
    base = apollo_like_file()
    wrapper = descriptor_pb2.FileDescriptorProto(name="fake/wrapper.proto", package="fake",
                                                 dependency=[base.name], syntax="proto2")
    msg = wrapper.message_type.add(name="Frame")
    msg.field.add(name="obstacles", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                  label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                  type_name=".apollo.perception.PerceptionObstacles")
    fds = descriptor_pb2.FileDescriptorSet(file=[wrapper, base])
    f, w = _writer(path)
    sid = w.register_schema("fake.Frame", "protobuf", fds.SerializeToString())
    cid = w.register_channel("/frames", "protobuf", sid)
    obstacles = message_classes(base)["PerceptionObstacles"]
    for i in range(n):
        o = obstacles()
        o.perception_obstacle.add(id=i, sub_type=3 + (i % 2))
        data = b"\x0a" + bytes([len(o.SerializeToString())]) + o.SerializeToString()  # Frame{obstacles}
        w.add_message(cid, log_time=i * 10, data=data, publish_time=i * 10)
    w.finish()
    f.close()


def test_protobuf_channel_decodes_from_descriptor_set(tmp_path):
    path = tmp_path / "pb.mcap"
    _proto_file(path)
    rec = open_recording(path)
    assert rec.channels()["/frames"].encoding == "protobuf"
    msgs = list(rec)
    assert [t for _, t, _ in msgs] == [0, 10, 20, 30, 40]
    subtypes = [compile_path("obstacles.perception_obstacle[*].sub_type")(m)[0] for _, _, m in msgs]
    assert subtypes == ["ST_CAR", "ST_VAN", "ST_CAR", "ST_VAN", "ST_CAR"]  # enums resolve to names


def test_json_and_unknown_encoding(tmp_path):
    path = tmp_path / "mixed.mcap"
    f, w = _writer(path)
    j = w.register_channel("/json", "json", 0)
    s = w.register_schema("x.Y", "flatbuffer", b"\x00")
    fb = w.register_channel("/fb", "flatbuffer", s)
    for i in range(3):
        w.add_message(j, log_time=i, data=json.dumps({"i": i}).encode(), publish_time=i)
        w.add_message(fb, log_time=i, data=b"\x01\x02", publish_time=i)
    w.finish()
    f.close()
    assert [m for _, _, m in open_recording(path, channels=["/json"])] == [{"i": 0}, {"i": 1}, {"i": 2}]
    with pytest.raises(UnsupportedEncodingError) as err:
        list(open_recording(path))
    assert err.value.channel == "/fb" and "flatbuffer" in str(err.value) and str(path) in str(err.value)


def test_overlapping_chunks_and_unindexed_files_come_out_sorted(tmp_path):
    times = [50, 10, 40, 20, 30, 0, 60, 5]
    for name, kw in {"overlap": dict(chunk_size=64),
                     "unindexed": dict(use_chunking=False, index_types=IndexType.NONE,
                                       use_summary_offsets=False, use_statistics=False)}.items():
        path = tmp_path / f"{name}.mcap"
        f, w = _writer(path, **kw)
        c = w.register_channel("/a", "json", 0)
        for t in times:
            w.add_message(c, log_time=t, data=json.dumps({"t": t}).encode(), publish_time=t)
        w.finish()
        f.close()
        got = [(t, m["t"]) for _, t, m in open_recording(path)]
        assert got == [(t, t) for t in sorted(times)], name


def test_truncated_and_corrupt_files(tmp_path, shared_data):
    src = shared_data / "recordings" / "ros2_bag" / "mcap" / "cdr_test" / "cdr_test_0.mcap"
    data = src.read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TruncatedRecordingError) as err:
        open_recording(cut)
    assert err.value.offset == len(data) // 2
    notmcap = tmp_path / "bad.mcap"
    notmcap.write_bytes(b"NOTMCAP!" + data[8:])
    with pytest.raises(CorruptRecordingError) as err:
        open_recording(notmcap)
    assert err.value.offset == 0
    # this file has no chunk CRC: a damaged payload surfaces as a typed decode error
    damaged = bytearray(data)
    damaged[data.index(b"Complex Hello1") - 4] ^= 0x7F  # string length field
    bad = tmp_path / "damaged.mcap"
    bad.write_bytes(bytes(damaged))
    with pytest.raises(MessageDecodeError) as err:
        list(open_recording(bad))
    assert err.value.channel == "/array_topic" and err.value.offset is not None
    # our traces carry chunk CRCs: a flipped payload byte is caught as corruption
    trace = tmp_path / "trace.mcap"
    write_trace(trace, [("/a", i, {"text": "hello-world"}) for i in range(10)], compression="none")
    raw = bytearray(trace.read_bytes())
    raw[raw.index(b"hello-world")] ^= 0x01
    trace.write_bytes(bytes(raw))
    with pytest.raises(CorruptRecordingError) as err:
        list(open_recording(trace))
    assert err.value.offset is not None and "crc" in err.value.reason.lower()


ROS2 = ("recordings", "ros2_bag", "mcap")


def test_ros2_cdr_in_mcap_decodes_with_rosbags(shared_data):
    rec = open_recording(shared_data.joinpath(*ROS2, "cdr_test", "cdr_test_0.mcap"))
    assert isinstance(rec, McapRecording) and rec.format == "mcap"
    msgs = list(rec)
    assert rec.time_range_ns() == (msgs[0].timestamp_ns, msgs[-1].timestamp_ns)
    assert len(msgs) == 7
    basic = [m for c, _, m in msgs if c == "/test_topic"]
    assert [b.int32_value for b in basic][0] == 123
    arrays = next(m for c, _, m in msgs if c == "/array_topic")
    assert list(arrays.string_values) == ["Complex Hello1", "Complex Hello2", "Complex Hello3"]


def test_rosbag2_mcap_directories(shared_data):
    talker = open_recording(shared_data.joinpath(*ROS2, "talker"))  # rosbags yields 0 here
    assert sum(1 for _ in talker) == 20
    assert talker.message_counts() == {"/rosout": 10, "/parameter_events": 0, "/topic": 10}
    split = open_recording(shared_data.joinpath(*ROS2, "wbag"))
    assert len(split.files) == 5
    ts = [t for _, t, _ in split]
    assert len(ts) == 6074 and ts == sorted(ts)
    old_style = list(open_recording(shared_data.joinpath(*ROS2, "test_bag_for_seek")))
    assert [m.int32_value for _, _, m in old_style] == [1, 2, 3, 4, 5]  # "test_msgs/BasicTypes"


def test_service_event_bag_gives_clear_error_and_plain_topics_still_read(shared_data):
    bag = shared_data.joinpath(*ROS2, "bag_with_topics_and_service_events")
    with pytest.raises(UnsupportedEncodingError) as err:
        list(open_recording(bag))
    assert err.value.channel.endswith("/_service_event") and "service" in str(err.value)
    plain = list(open_recording(bag, channels=["/test_topic1", "/test_topic2"]))
    assert len(plain) == 2 and plain[0].message.string_value_default1 == "Hello world!"
