"""The batch (columnar) rule engine (services/strap/columns.py) equals the per-message
reference (services/strap/extract.py) on every built-in map and the example user map."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from services.strap.columns import BatchCoder
from services.strap.extract import LabelCoder
from services.strap.pipeline import ingest
from services.strap.readers import open_recording, write_trace
from services.strap.scene_schema import SCHEMA_DIR, ChannelMap, load_channel_map
from services.strap.synthetic import synthetic_platform_messages
from services.strap.vectorize import vectorize_messages, vectorize_recording


def _per_message(cmap: ChannelMap) -> ChannelMap:
    """The map with its batch rules replaced by the reference rules applied message by message."""
    def wrap(feats, fn):
        def batch(msgs, ctxs, columns=None):
            cols = {f: np.zeros(len(msgs), np.int16) for f in feats}
            for i, (m, c) in enumerate(zip(msgs, ctxs, strict=True)):
                for feat, code in fn(m, c):
                    cols[feat][i] = max(cols[feat][i], code)
            return list(cols.items())
        return feats, batch
    return dataclasses.replace(cmap, batch_rules={ch: tuple(wrap(f, fn) for f, fn in rules)
                                                  for ch, rules in cmap.rules.items()})


def _same(a, b) -> None:
    assert a.feature_names == b.feature_names
    assert np.array_equal(a.timestamps_ns, b.timestamps_ns)
    assert np.array_equal(a.vectors, b.vectors)


@pytest.mark.parametrize("modules", [None, ["reconstruction"], ["application"]])
def test_platform_map_batch_equals_per_message(modules) -> None:
    msgs = list(synthetic_platform_messages(300.0, rate_hz=20, n_channels=8))
    cmap = load_channel_map("platform")
    fast = vectorize_messages(msgs, cmap, modules=modules)
    _same(fast, vectorize_messages(msgs, _per_message(cmap), modules=modules))
    assert fast.vectors.any()


def test_platform_trace_file_batch_equals_per_message(tmp_path: Path) -> None:
    path = tmp_path / "t.mcap"
    write_trace(path, synthetic_platform_messages(120.0, rate_hz=20, n_channels=10))
    cmap = load_channel_map("platform")
    with open_recording(path) as rec:
        ref = vectorize_recording(rec, _per_message(cmap))
    _same(ingest(path, "platform"), ref)


def _third_party(shared_data: Path, *parts: str) -> Path:
    p = shared_data.joinpath("recordings", *parts)
    if not p.exists():
        pytest.skip(f"{p} absent")
    return p


def test_apollo_protobuf_batch_equals_per_message(shared_data: Path) -> None:
    record = _third_party(shared_data, "apollo_cyber", "example.record.00000")
    cmap = load_channel_map("apollo")
    with open_recording(record) as rec:
        ref = vectorize_recording(rec, _per_message(cmap), missing="none")
    _same(ingest(record, "apollo", missing="none"), ref)


def test_ros1_user_map_batch_equals_per_message(shared_data: Path) -> None:
    bag = _third_party(shared_data, "ros1_bag", "example.bag")
    cmap = load_channel_map(str(SCHEMA_DIR / "examples" / "turtlesim.json"))
    with open_recording(bag) as rec:
        ref = vectorize_recording(rec, _per_message(cmap))
    fast = ingest(bag, cmap)
    _same(fast, ref)
    assert len(np.unique(fast.vectors, axis=0)) > 3


def test_batch_coder_equals_label_coder_on_odd_values() -> None:
    vocab = ["stopped", "slow", "moving"]
    for spec in ({"bands": [[0.3, "stopped"], [5.0, "slow"], [None, "moving"]]},
                 {"bands": [[5.0, "slow"], [0.3, "stopped"]], "default": "moving"},  # not ascending
                 {"map": {"true": "stopped", "x": "slow"}, "default": "moving"}):
        coder = LabelCoder(spec, vocab, "t")
        values = [0.0, 0.3, 4.99, 5.0, 1e9, float("nan"), float("inf"), -1, True, False, "x", "X", "slow",
                  None, [1], 7]
        assert BatchCoder(coder)(values).tolist() == [coder(v) for v in values]
        floats = [0.0, 0.29, 0.3, 5.0, float("nan"), float("inf"), -3.0, 2]
        assert BatchCoder(coder)(floats).tolist() == [coder(v) for v in floats]


def test_the_cyclic_collector_is_paused_only_during_a_pass(tmp_path: Path) -> None:
    import gc

    path = tmp_path / "t.mcap"
    write_trace(path, synthetic_platform_messages(5.0, rate_hz=20, n_channels=8))
    assert gc.isenabled()
    ingest(path, "platform")
    assert gc.isenabled()
    with pytest.raises(Exception):  # noqa: B017 - any failure inside the pass
        ingest(path, "apollo", missing="error")
    assert gc.isenabled()


def test_batching_does_not_change_the_table() -> None:
    from services.strap.readers.base import stream_batches

    msgs = list(synthetic_platform_messages(120.0, rate_hz=20, n_channels=8))
    ref = vectorize_messages(msgs, "platform")
    for size in (1, 7, 333):
        _same(vectorize_messages((), "platform", batches=stream_batches(msgs, size)), ref)


def test_mcap_chunk_batches_equal_the_message_stream(tmp_path: Path) -> None:
    path = tmp_path / "t.mcap"
    write_trace(path, synthetic_platform_messages(200.0, rate_hz=20, n_channels=10))
    with open_recording(path) as rec:
        stream = vectorize_messages(list(rec), "platform", available_channels=rec.channels())
    _same(ingest(path, "platform"), stream)


def test_a_message_index_that_lies_is_a_corrupt_recording(tmp_path: Path) -> None:
    import struct

    from mcap.reader import make_reader

    from services.strap.errors import CorruptRecordingError

    path = tmp_path / "t.mcap"
    write_trace(path, synthetic_platform_messages(30.0, rate_hz=20, n_channels=6))
    with open(path, "rb") as f:
        summary = make_reader(f).get_summary()
    ci = summary.chunk_indexes[0]
    topic_of = {cid: ch.topic for cid, ch in summary.channels.items()}
    cid, off = next((c, o) for c, o in ci.message_index_offsets.items() if topic_of[c] == "/recon/ego")
    raw = bytearray(path.read_bytes())
    struct.pack_into("<Q", raw, off + 1 + 8 + 6 + 8, 7)  # first message's offset -> not a message record
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptRecordingError, match="message index"):
        ingest(path, "platform")


@pytest.mark.parametrize("nan", [False, True])
def test_context_from_changes_equals_message_by_message(nan: bool) -> None:
    """Context.add's change-only path applies the same states at the same times as the
    message-by-message path, on values that are equal across types (1, 1.0, True), nulls,
    missing keys, timestamps tied across the two source channels, and NaN (which takes the
    message-by-message path: every message is a change there)."""
    from services.strap.batches import Context

    cmap = load_channel_map("platform")
    rng = np.random.default_rng(5)
    pool: list = ["j0.sg0", "j0.sg1", None, 1, 1.0, True, "MISSING", *([float("nan")] if nan else [])]

    def feed(n: int, t0: int) -> list:
        ts = np.sort(t0 + rng.integers(0, 40, n)).astype(np.int64)
        return [(ch, ts, [{} if (v := pool[int(rng.integers(len(pool)))]) == "MISSING" else {"ego_group_id": v}
                          for _ in range(n)]) for ch in ("/signals/true", "/recon/ego")]

    batches = [feed(int(rng.integers(1, 30)), 100 * k) for k in range(60)]
    by_changes, each = Context(cmap, {"ego_group"}), Context(cmap, {"ego_group"})
    for b in batches:
        by_changes.add(b)  # one run per channel: the change-only path
        each._add_each([(ts, msgs, each.by_channel[ch]) for ch, ts, msgs in b])
    assert by_changes.change_ts == each.change_ts and len(by_changes.change_ts) > 50
    assert [repr(s) for s in by_changes.states] == [repr(s) for s in each.states]


def test_odd_json_shapes_batch_equals_per_message() -> None:
    """Where a path meets a scalar, a list or null instead of an object (or the reverse), the
    whole-batch resolver hands the batch to the per-message resolvers: same table."""
    odd_signal: list = ["x", [1, 2], None, {"phase": [0, 2], "aoi_s": "old"}, {"phase": None}, 3.5]
    odd_tracks: list = [{"a": 1}, [None, {"aoi_s": 0.5}, 3], "t", [{"aoi_s": None}], []]
    odd_vehicles: list = ["v", [None, {"alive": 1, "kind": 4}, {"alive": "true", "speed_mps": "fast"}], [{}]]
    msgs = []
    for k, (ch, t, m) in enumerate(synthetic_platform_messages(120.0, rate_hz=20, n_channels=8)):
        m = dict(m)
        if ch == "/recon/ego" and k % 7 == 0:
            m["signal"] = odd_signal[(k // 7) % len(odd_signal)]
        if ch == "/recon/ego" and k % 11 == 0:
            m["tracks"] = odd_tracks[(k // 11) % len(odd_tracks)]
        if ch == "/gt/vehicles" and k % 13 == 0:
            m["vehicles"] = odd_vehicles[(k // 13) % len(odd_vehicles)]
        if ch == "/signals/true" and k % 17 == 0:
            m["groups"] = [{"id": 1, "phase": 2}, "g", {"id": "j0.sg0", "phase": True}]
        msgs.append((ch, t, m))
    cmap = load_channel_map("platform")
    fast = vectorize_messages(msgs, cmap)
    _same(fast, vectorize_messages(msgs, _per_message(cmap)))
    assert fast.vectors.any()
