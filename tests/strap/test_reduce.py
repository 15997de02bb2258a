"""Smoothing, segmentation, clipping, de-duplication and pre-roll (Algorithm 1)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.strap import reduce as reduce_module
from services.strap.reduce import (
    ReduceParams,
    clip_length_frames,
    reduce_frames,
    segment_runs,
    smooth,
    vector_ids,
)

A, B, C, G = 1, 2, 3, 9


def col(*xs):
    return np.array(xs)[:, None]


def ts(n, hz=20.0):
    return (np.arange(n) * (1e9 / hz)).astype(np.int64)


def naive_smooth(v, w):
    rows = [tuple(r) for r in v]
    n = len(rows)
    out = []
    for i in range(n):
        ww = min(w, n)
        s = min(max(i - (ww - 1) // 2, 0), max(n - ww, 0))
        counts = Counter(rows[s:s + ww])
        top = max(counts.values())
        winners = [r for r, c in counts.items() if c == top]
        out.append(winners[0] if len(winners) == 1 else rows[i])
    return np.array(out, dtype=v.dtype).reshape(v.shape)


def test_window_majority_edges_and_ties():
    assert smooth(col(A, B, A), 3).ravel().tolist() == [A, A, A]
    assert smooth(col(A, B, C), 3).ravel().tolist() == [A, B, C]          # all tie: keep own
    assert smooth(col(A, A, B, B), 3).ravel().tolist() == [A, A, B, B]    # forward / backward edges
    assert smooth(col(A, A, C, B, B), 5).ravel().tolist() == [A, A, C, B, B]  # A/B tie: own
    assert smooth(col(A, A, A, G, A, A), 3).ravel().tolist() == [A] * 6   # glitch removed
    assert smooth(col(A, G), 3).ravel().tolist() == [A, G]                # shorter than the window
    assert smooth(col(A, G, A), 1).ravel().tolist() == [A, G, A]


def test_segments_are_maximal_runs_and_glitches_do_not_split():
    v = col(A, A, A, G, A, A, B, B, B, B)
    r = reduce_frames(ts(10), v, ReduceParams(clip_frames=100, preroll_s=0))
    assert [(s.start, s.end) for s in r.segments] == [(0, 6), (6, 10)]
    assert [s.vector for s in r.segments] == [(A,), (B,)]
    starts, ends = segment_runs(vector_ids(col(A, A, B, A)))
    assert starts.tolist() == [0, 2, 3] and ends.tolist() == [2, 3, 4]


def test_clip_by_time_at_the_aligned_rate():
    assert clip_length_frames(ts(10, 15.0), ReduceParams()) == 45  # paper: 45 frames ~ 3 s at 15 Hz
    assert clip_length_frames(ts(10, 20.0), ReduceParams()) == 60
    assert clip_length_frames(ts(10), ReduceParams(clip_frames=7)) == 7
    r = reduce_frames(ts(200), col(*([A] * 150 + [B] * 50)))
    assert [(s.start, s.clip_end, s.end) for s in r.segments] == [(0, 60, 150), (150, 200, 200)]
    assert r.kept_frames == 110 and r.reduction_ratio == pytest.approx(1 - 110 / 200)


def test_drop_seen_vectors_keeps_first_occurrence():
    v = col(*([A] * 10 + [B] * 10 + [A] * 10 + [C] * 10))
    r = reduce_frames(ts(40), v, ReduceParams(clip_frames=5))
    assert [(s.index, s.start, s.vector) for s in r.segments] == [(0, 0, (A,)), (1, 10, (B,)), (3, 30, (C,))]
    assert r.n_segments_total == 4
    assert r.segment_vectors.tolist() == [[A], [B], [C]]
    keep_all = reduce_frames(ts(40), v, ReduceParams(clip_frames=5, dedupe=False))
    assert len(keep_all.segments) == 4


def test_min_segment_duration_filter_is_off_by_default_and_runs_before_dedupe():
    v = col(*([A] * 4 + [B] * 40 + [A] * 40))            # short A (0.2 s), long B, long A
    default = reduce_frames(ts(84), v)
    assert [s.start for s in default.segments] == [0, 4]  # the later A is a duplicate
    filt = reduce_frames(ts(84), v, ReduceParams(min_segment_duration_s=1.0))
    assert [(s.start, s.vector) for s in filt.segments] == [(4, (B,)), (44, (A,))]


def test_preroll_of_one_second_outside_the_clip():
    v = col(*([A] * 100 + [B] * 100))
    r = reduce_frames(ts(200), v, ReduceParams(clip_frames=10))
    first, second = r.segments
    assert first.preroll_start == 0 == first.start
    assert second.preroll_start == 80 and second.start == 100   # 20 frames = 1 s at 20 Hz
    assert second.preroll_start_ns == ts(200)[80] and second.clip_last_ns == ts(200)[109]
    assert second.clip_end_ns == ts(200)[110] and first.clip_end_ns == ts(200)[10]
    last = reduce_frames(ts(5), col(A, A, A, A, A)).segments[0]
    assert last.clip_end_ns == ts(5)[4] + 50_000_000  # one frame period past the last frame
    assert r.preroll_frames == 20 and r.kept_frames == 20
    assert r.reduction_ratio_with_preroll == pytest.approx(1 - 40 / 200)


def test_empty_and_invalid_inputs():
    r = reduce_frames(np.zeros(0, np.int64), np.zeros((0, 3), np.int16))
    assert r.segments == () and r.reduction_ratio == 0.0
    with pytest.raises(ValueError):
        reduce_frames(ts(3), np.zeros((4, 1)))
    with pytest.raises(ValueError):
        ReduceParams(window=0)


vectors = st.integers(1, 40).flatmap(lambda n: st.integers(1, 3).flatmap(
    lambda q: st.lists(st.lists(st.integers(0, 2), min_size=q, max_size=q), min_size=n, max_size=n)))


@settings(max_examples=300, deadline=None)
@given(vectors, st.integers(1, 7))
def test_smoothing_matches_naive_reference(rows, w):
    v = np.array(rows, dtype=np.int16)
    assert np.array_equal(smooth(v, w), naive_smooth(v, w))


@settings(max_examples=200, deadline=None)
@given(vectors, st.integers(1, 5), st.integers(1, 6))
def test_reduction_invariants(rows, w, n_clip):
    v = np.array(rows, dtype=np.int16)
    r = reduce_frames(ts(len(v)), v, ReduceParams(window=w, clip_frames=n_clip))
    sm = naive_smooth(v, w)
    starts, ends = segment_runs(vector_ids(sm))
    assert starts[0] == 0 and ends[-1] == len(v) and np.all(starts[1:] == ends[:-1])
    assert all(not np.array_equal(sm[a], sm[b]) for a, b in zip(starts[1:] - 1, starts[1:], strict=True))
    kept = [s.vector for s in r.segments]
    assert len(kept) == len(set(kept)) == len({tuple(x) for x in sm})
    for s in r.segments:
        assert 1 <= s.clip_frames <= n_clip and s.clip_end <= s.end and s.preroll_start <= s.start
        assert s.vector == tuple(sm[s.start]) and all(tuple(x) == s.vector for x in sm[s.start:s.end])
    assert [s.start for s in r.segments] == sorted(s.start for s in r.segments)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=60), st.integers(1, 7), st.integers(1, 9))
def test_smoothing_in_blocks_gives_what_one_pass_gives(ids: list[int], window: int, block: int) -> None:
    """Memory stays flat (the temporaries are one block of frames): the blocks' seams change nothing."""
    arr = np.asarray(ids, np.int64)
    whole = reduce_module.smooth_sources(arr, window)
    old = reduce_module.SMOOTH_BLOCK_FRAMES
    try:
        reduce_module.SMOOTH_BLOCK_FRAMES = block
        blocked = reduce_module.smooth_sources(arr, window)
    finally:
        reduce_module.SMOOTH_BLOCK_FRAMES = old
    assert blocked.tolist() == whole.tolist()
