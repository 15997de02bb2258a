"""ROS 1 bags and ROS 2 bags through rosbags, including its failure cases."""

from __future__ import annotations

import pytest

from services.strap.errors import (
    MessageDecodeError,
    RecordingError,
    UnsupportedRecordingError,
)
from services.strap.readers import RosbagsRecording, open_recording


@pytest.fixture(scope="module")
def rec_dir(shared_data):
    return shared_data / "recordings"


def test_ros1_example_bag(rec_dir):
    rec = open_recording(rec_dir / "ros1_bag" / "example.bag")
    assert isinstance(rec, RosbagsRecording) and rec.format == "ros1"
    counts = rec.message_counts()
    assert sum(counts.values()) == 8647 and counts["/tf"] == 2688 and counts["/turtle1/pose"] == 1344
    first, last = rec.time_range_ns()
    assert 21.0 < (last - first) / 1e9 < 22.0  # 21.7 s turtlesim demo
    pose = open_recording(rec_dir / "ros1_bag" / "example.bag", channels=["/turtle1/pose"])
    items = list(pose)
    assert len(items) == 1344
    assert [t for _, t, _ in items] == sorted(t for _, t, _ in items)
    assert 0.0 <= items[0].message.x <= 11.1  # turtlesim field


def test_compressed_variants_stream_identically(rec_dir):
    def head(name):
        return [(c, t) for (c, t, _), _ in zip(open_recording(rec_dir / "ros1_bag" / name), range(300),
                                               strict=False)]
    plain = head("example.bag")
    assert head("example-bz2.bag") == plain and head("example-lz4.bag") == plain


def test_unsorted_chunks_and_empty_bag(rec_dir):
    items = list(open_recording(rec_dir / "ros1_bag" / "example-unsorted-chunks.bag"))
    assert [m.message.data for m in items] == ["1", "2", "3"]
    assert [m.timestamp_ns for m in items] == sorted(m.timestamp_ns for m in items)
    empty = open_recording(rec_dir / "ros1_bag" / "no-messages.bag")
    assert empty.channels() == {} and list(empty) == [] and empty.message_counts() == {}
    assert empty.time_range_ns() is None  # rosbags reports a huge negative duration here


def test_ros2_sqlite3_bags(rec_dir):
    cdr = list(open_recording(rec_dir / "ros2_bag" / "sqlite3" / "cdr_test"))
    assert len(cdr) == 7
    talker = rec_dir / "ros2_bag" / "sqlite3" / "talker"
    topic = list(open_recording(talker, channels=["/topic"]))  # rosbags alone yields 0 here
    assert [m.message.data for m in topic][:2] == ["Hello, world! 0", "Hello, world! 1"]
    assert len(topic) == 10
    with pytest.raises(MessageDecodeError) as err:  # its /rosout Log matches no known definition
        list(open_recording(talker))
    assert err.value.channel == "/rosout" and str(talker) in str(err.value)


def test_forced_rosbags_on_mcap_bags(rec_dir):
    talker = open_recording(rec_dir / "ros2_bag" / "mcap" / "talker", backend="rosbags")
    assert sum(1 for _ in talker) == 20  # QoS mismatch in metadata.yaml worked around
    with pytest.raises(UnsupportedRecordingError) as err:
        open_recording(rec_dir / "ros2_bag" / "mcap" / "bag_with_topics_and_service_events",
                       backend="rosbags")
    assert "service" in str(err.value)


def test_truncated_ros1_bag_is_a_typed_error(tmp_path, rec_dir):
    data = (rec_dir / "ros1_bag" / "example.bag").read_bytes()
    cut = tmp_path / "cut.bag"
    cut.write_bytes(data[:5000])
    with pytest.raises(RecordingError) as err:
        rec = open_recording(cut)
        list(rec)
    assert str(cut) in str(err.value)


def test_missing_and_unknown_paths(tmp_path):
    with pytest.raises(RecordingError):
        open_recording(tmp_path / "nope.mcap")
    (tmp_path / "x.txt").write_text("plain text")
    with pytest.raises(UnsupportedRecordingError):
        open_recording(tmp_path / "x.txt")
    with pytest.raises(UnsupportedRecordingError):
        open_recording(tmp_path)  # a directory without metadata.yaml
