"""Platform trace writer/reader pair and streaming memory behaviour."""

from __future__ import annotations

import itertools
import tracemalloc

from mcap.reader import make_reader

from services.strap.readers import (
    PLATFORM_CHANNELS,
    TRACE_PROFILE,
    open_recording,
    read_trace,
    write_trace,
)
from services.strap.synthetic import synthetic_platform_messages


def test_round_trip_orders_and_profiles(tmp_path):
    path = tmp_path / "trace.mcap"
    items = [("/v2x/rx", 30, {"messages": []}), ("/gt/vehicles", 10, {"vehicles": [{"kind": "car"}]}),
             ("/v2x/rx", 20, {"lost": 2})]
    assert write_trace(path, items) == 3
    with open(path, "rb") as f:
        assert make_reader(f).get_header().profile == TRACE_PROFILE
    rec = read_trace(path)
    assert [(c, t, m) for c, t, m in rec] == sorted(items, key=lambda x: x[1])
    assert rec.channels()["/v2x/rx"].encoding == "json"
    assert rec.format == "platform_trace" and rec.time_range_ns() == (10, 30)
    assert rec.message_counts() == {"/v2x/rx": 2, "/gt/vehicles": 1}


def test_synthetic_trace_covers_platform_channels(tmp_path):
    path = tmp_path / "syn.mcap"
    write_trace(path, synthetic_platform_messages(50.0, 20.0, n_channels=10))
    rec = open_recording(path)
    assert set(PLATFORM_CHANNELS) <= set(rec.channels())
    counts = rec.message_counts()
    ticks = 50 * 20
    assert counts["/gt/vehicles"] == counts["/signals/true"] == counts["/diag/0"] == ticks
    assert counts["/recon/ego"] == counts["/ctrl/ego"] == 2 * ticks  # both rollouts, as the simulator
    assert counts["/v2x/belief"] == ticks // 10 and counts["/monitor/events"] == 1
    assert 2 <= counts["/app/decision"] < ticks  # on change only


def _peak_while_reading(path) -> int:
    tracemalloc.start()
    try:
        for _ in open_recording(path):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_reading_memory_is_flat_in_length(tmp_path):
    short, long = tmp_path / "short.mcap", tmp_path / "long.mcap"
    msgs = synthetic_platform_messages(10_000.0, 20.0, n_channels=2, fault_every_s=0)
    write_trace(short, itertools.islice(msgs, 5_000), chunk_size_bytes=1 << 16)
    msgs = synthetic_platform_messages(10_000.0, 20.0, n_channels=2, fault_every_s=0)
    write_trace(long, itertools.islice(msgs, 20_000), chunk_size_bytes=1 << 16)
    peak_short, peak_long = _peak_while_reading(short), _peak_while_reading(long)
    # 4x the messages, about the same peak (one chunk + indexes), far below 4x
    assert peak_long < 1.5 * peak_short + 256 * 1024, (peak_short, peak_long)
