"""Prioritization (RSC, SC, CH, RD, CC) and evaluation (APFD, Top-K, fault test)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.strap.evaluate import (
    apfd,
    fault_coverage,
    first_detection_positions,
    is_inconsistent,
    random_baseline,
    top_k,
)
from services.strap.prioritize import (
    prioritize,
    prioritize_cc,
    prioritize_rd,
    prioritize_sc,
    rsc_scores,
    rsc_weights,
)

FRAMES = np.array([[1, 0, 0], [1, 2, 0], [1, 0, 0], [1, 0, 0]])
SEGS = np.array([[1, 0, 0], [1, 2, 0], [0, 0, 5], [1, 1, 0]])


def test_rsc_weights_scores_and_order():
    assert rsc_weights(FRAMES) == pytest.approx([0.2, 0.8, 0.0])  # N/nnz = 1, 4, (never) 0
    assert rsc_scores(SEGS, FRAMES) == pytest.approx([0.2, 1.0, 0.0, 1.0])
    # indicator, not label codes: segments 1 (code 2) and 3 (code 1) tie; stable -> 1 first
    assert prioritize("RSC", SEGS, frame_vectors=FRAMES).tolist() == [1, 3, 0, 2]
    assert rsc_weights(np.zeros((3, 2))).tolist() == [0.0, 0.0]


def test_sc_greedy_additional_coverage_with_reset():
    sv = np.array([[1, 0, 0], [1, 2, 0], [0, 0, 3], [2, 2, 3]])
    assert prioritize_sc(sv).tolist() == [3, 1, 0, 2]
    assert prioritize_sc(np.array([[0, 0], [1, 0], [0, 0]])).tolist() == [1, 0, 2]
    assert prioritize_sc(np.zeros((0, 2))).tolist() == []


def test_baselines_ch_cc_rd():
    assert prioritize("CH", SEGS).tolist() == [0, 1, 2, 3]
    assert prioritize_cc([3, 7, 7, 0]).tolist() == [1, 2, 0, 3]
    rd = prioritize_rd(6, n_shuffles=100, seed=3)
    assert rd.shape == (100, 6) and all(sorted(r) == list(range(6)) for r in rd)
    assert np.array_equal(rd, prioritize_rd(6, 100, seed=3)) and not np.array_equal(rd, prioritize_rd(6, 100, 4))
    with pytest.raises(ValueError):
        prioritize("CC", SEGS)
    with pytest.raises(ValueError):
        prioritize("XYZ", SEGS)


def test_apfd_hand_computed():
    # seg0: f0 ; seg1: f1, f2 ; seg2: f0 ; seg3: f2 ; an extra fault nobody reveals
    fm = np.array([[1, 0, 0, 0], [0, 1, 1, 0], [1, 0, 0, 0], [0, 0, 1, 0]], dtype=bool)
    order = [2, 0, 3, 1]
    assert first_detection_positions(order, fm).tolist() == [1, 4, 3]
    assert apfd(order, fm) == pytest.approx(1 - 8 / (4 * 3) + 1 / 8)  # 0.458333...
    assert top_k(order, fm) == 1
    assert top_k([1, 0, 2, 3], fm) == 1 and top_k([3, 1, 0, 2], fm) == 1
    one = np.array([[True], [False]])
    assert apfd([0, 1], one) == pytest.approx(0.75) and apfd([1, 0], one) == pytest.approx(0.25)
    assert top_k([1, 0], one) == 2
    none = np.zeros((3, 2), bool)
    assert np.isnan(apfd([0, 1, 2], none)) and top_k([0, 1, 2], none) is None
    with pytest.raises(ValueError):
        apfd([0, 0, 1, 2], fm)


def test_random_baseline_is_seeded_and_near_half():
    fm = np.zeros((10, 1), bool)
    fm[7, 0] = True
    a, b = random_baseline(fm, 100, seed=0), random_baseline(fm, 100, seed=0)
    assert a == b and a.apfd == pytest.approx(0.5, abs=0.1) and a.top_k == pytest.approx(5.5, abs=1.0)


def test_fault_is_more_than_ten_percent_after_warmup():
    before = np.zeros((30, 2), int)
    after = before.copy()
    after[:20, 0] = 1                      # all inside the 20-frame warm-up: ignored
    assert not is_inconsistent(before, after, warmup_frames=20)
    after[20, 1] = 5                       # 1 of 10 compared frames = 10 %: not more than 10 %
    assert not is_inconsistent(before, after, warmup_frames=20)
    after[21, 1] = 5                       # 2 of 10
    assert is_inconsistent(before, after, warmup_frames=20)
    assert fault_coverage(np.array([[1, 0, 0]], bool), np.array([1, 1, 0], bool)) == 0.5


matrices = st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=n, max_size=n),
    st.permutations(list(range(n)))))


@settings(max_examples=200, deadline=None)
@given(matrices)
def test_apfd_bounds_and_orders_are_permutations(data):
    rows, order = data
    fm = np.array(rows, dtype=bool)
    n = fm.shape[0]
    value = apfd(order, fm)
    if fm.any():
        assert 1 / (2 * n) - 1e-12 <= value <= 1 - 1 / (2 * n) + 1e-12
        assert 1 <= top_k(order, fm) <= n
    else:
        assert np.isnan(value)
    for method in ("RSC", "SC", "CH"):
        o = prioritize(method, fm.astype(int), frame_vectors=fm.astype(int))
        assert sorted(o.tolist()) == list(range(n))
