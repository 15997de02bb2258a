"""Segment export to MCAP from every source format, read back with our reader."""

from __future__ import annotations

import json

from mcap.reader import make_reader

from services.strap.export import SEGMENTS_METADATA, export_segments, replay_windows
from services.strap.readers import open_recording, write_trace
from services.strap.reduce import Segment


def seg(index, pre, start, last, end=None):
    return Segment(index=index, start=0, end=0, clip_end=0, preroll_start=0, start_ns=start,
                   clip_last_ns=last, clip_end_ns=last + 1 if end is None else end,
                   preroll_start_ns=pre, vector=())


def test_replay_windows_merge_overlaps():
    windows = replay_windows([seg(0, 0, 5, 9), seg(1, 10, 11, 12), seg(2, 20, 21, 22)])
    assert windows == [(0, 13), (20, 23)]  # half-open; touching windows merge


def test_platform_trace_export_keeps_window_messages_and_metadata(tmp_path):
    src = tmp_path / "t.mcap"
    write_trace(src, [("/a", t, {"t": t}) for t in range(0, 100, 5)] + [("/b", 42, {"x": 1})])
    out = tmp_path / "out.mcap"
    summary = export_segments(open_recording(src), [seg(3, 10, 20, 30, 35), seg(7, 60, 70, 71, 75)], out)
    got = [(c, t, m) for c, t, m in open_recording(out)]
    assert [t for _, t, _ in got] == [10, 15, 20, 25, 30, 60, 65, 70]  # 35 and 75 are excluded ends
    assert summary.messages == 8 and open_recording(out).format == "platform_trace"
    with open(out, "rb") as f:
        meta = {m.name: m.metadata for m in make_reader(f).iter_metadata()}
    windows = json.loads(meta[SEGMENTS_METADATA]["segments"])
    assert [w["id"] for w in windows] == ["seg-3", "seg-7"] and windows[0]["preroll_start_ns"] == 10


def test_cyber_export_reads_back_as_protobuf_mcap(tmp_path, shared_data):
    rec = open_recording(shared_data / "recordings" / "apollo_cyber" / "example.record.00000")
    first, last = rec.time_range_ns()
    out = tmp_path / "apollo.mcap"
    export_segments(rec, [seg(0, first, first, last)], out, channels=["/apollo/planning", "/apollo/prediction"])
    back = list(open_recording(out))
    assert [c for c, _, _ in back] == ["/apollo/prediction", "/apollo/planning", "/apollo/prediction"]
    planning = next(m for c, _, m in back if c == "/apollo/planning")
    assert planning.decision.main_decision.WhichOneof("task") == "stop"


def test_ros_bag_exports_read_back(tmp_path, shared_data):
    bag = open_recording(shared_data / "recordings" / "ros1_bag" / "example.bag")
    first, _ = bag.time_range_ns()
    out = tmp_path / "ros1.mcap"
    n = export_segments(bag, [seg(0, first, first, first + 500_000_000)], out,
                        channels=["/turtle1/pose"]).messages
    back = list(open_recording(out))
    orig = [m for _, t, m in open_recording(bag.path, channels=["/turtle1/pose"]) if t <= first + 500_000_000]
    assert n == len(back) == len(orig) > 0 and back[0].message.x == orig[0].x
    ros2 = open_recording(shared_data / "recordings" / "ros2_bag" / "sqlite3" / "cdr_test")
    a, b = ros2.time_range_ns()
    out2 = tmp_path / "ros2.mcap"
    export_segments(ros2, [seg(0, a, a, b)], out2)
    assert [m.message.int32_value for m in open_recording(out2, channels=["/test_topic"])][0] == 123
