"""Alignment, STRaP §4.1.1: hand examples and properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.strap.align import align_indices, align_stream, choose_reference, gather_rows


def test_figure3_like_example():
    ref = np.array([0, 10, 20, 30])
    tgt = np.array([5, 12, 18, 35])
    # [0,10) <- 5 ; [10,20) <- 12 and 18, the latest wins ; [20,30) none -> copy ; last open-ended <- 35
    assert align_indices(ref, tgt).tolist() == [0, 2, 2, 3]


def test_before_first_target_message_is_none_and_earlier_messages_carry_in():
    ref = np.array([0, 10, 20])
    assert align_indices(ref, np.array([15])).tolist() == [-1, 0, 0]
    assert align_indices(ref, np.array([-5])).tolist() == [0, 0, 0]   # published before t_0
    assert align_indices(ref, np.array([10])).tolist() == [-1, 0, 0]  # exactly t_1 -> frame 1
    assert align_indices(ref, np.array([], dtype=np.int64)).tolist() == [-1, -1, -1]
    rows = gather_rows(np.array([[7, 8]]), np.array([-1, 0, 0]))
    assert rows.tolist() == [[0, 0], [7, 8], [7, 8]]


def test_unsorted_target_rejected_and_reference_choice():
    with pytest.raises(ValueError):
        align_indices(np.array([0, 1]), np.array([3, 2]))
    assert choose_reference({"/b": 5, "/a": 5, "/c": 2}) == "/a"
    assert choose_reference({"/b": 5, "/a": 5, "/c": 9}, candidates=["/a", "/b"]) == "/a"
    with pytest.raises(ValueError):
        choose_reference({"/a": 0})


def test_stream_equal_timestamps_target_before_reference():
    stream = [("a", 0, "a0"), ("r", 0, "r0"), ("a", 10, "a1"), ("r", 10, "r1"), ("r", 10, "r2")]
    frames = list(align_stream(stream, "r"))
    assert [(f.index, f.timestamp_ns, f.messages["r"], f.messages["a"]) for f in frames] == [
        (0, 0, "r0", "a0"), (1, 10, "r1", "a0"), (2, 10, "r2", "a1")]


streams = st.lists(st.tuples(st.sampled_from(["r", "a", "b"]), st.integers(0, 40)), max_size=60).map(
    lambda items: sorted(items, key=lambda x: x[1]))


@settings(max_examples=200, deadline=None)
@given(streams)
def test_stream_and_indices_agree_and_length_matches_reference(items):
    stream = [(c, t, f"{c}{k}") for k, (c, t) in enumerate(items)]
    ref_msgs = [(t, m) for c, t, m in stream if c == "r"]
    frames = list(align_stream(stream, "r", channels=["a", "b"]))
    assert len(frames) == len(ref_msgs)
    assert [f.timestamp_ns for f in frames] == [t for t, _ in ref_msgs]
    assert [f.messages["r"] for f in frames] == [m for _, m in ref_msgs]
    ref_ts = np.array([t for t, _ in ref_msgs], dtype=np.int64)
    for ch in ("a", "b"):
        tgt = [(t, m) for c, t, m in stream if c == ch]
        idx = align_indices(ref_ts, np.array([t for t, _ in tgt], dtype=np.int64))
        assert idx.shape[0] == ref_ts.shape[0]
        expected = [None if j < 0 else tgt[j][1] for j in idx]
        assert [f.messages[ch] for f in frames] == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-20, 60), min_size=1, max_size=30),
       st.lists(st.integers(-20, 60), max_size=30))
def test_index_is_latest_target_before_next_reference(ref, tgt):
    ref_ts, tgt_ts = np.sort(np.array(ref)), np.sort(np.array(tgt, dtype=np.int64))
    idx = align_indices(ref_ts, tgt_ts)
    assert idx.shape == ref_ts.shape
    bounds = list(ref_ts[1:]) + [np.iinfo(np.int64).max]
    for i, j in enumerate(idx):
        before = np.flatnonzero(tgt_ts < bounds[i])
        assert j == (before[-1] if before.size else -1)
    assert np.all(np.diff(idx) >= 0)  # frames never go back in a channel's history
