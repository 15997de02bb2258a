"""Test prioritization, STRaP §4.3 / Algorithm 2, and the paper's baselines.

Every method returns an **execution order**: an int array ``order`` of segment
indices, ``order[0]`` replayed first (Algorithm 2's ``DescendingArgsort``).
Ties are broken chronologically (stable sorts), so results are deterministic.

* **RSC** (rarity + semantic coverage): weight ``w_j = N / nnz_j`` where ``N`` is
  the number of frames and ``nnz_j`` the frames whose feature ``j`` is non-zero;
  a feature that never occurs gets weight 0 (not a division by zero); weights are
  normalised to sum 1.  Score ``= Σ_j w_j · [sv_j ≠ 0]`` — the paper's text sums
  the rarity of the *non-zero* features; Algorithm 2 read literally multiplies
  by label codes, which would weight by arbitrary code values.  Descending.
  Scores are rounded to 12 decimals so mathematically equal sums tie exactly.
* **SC** (semantic coverage): greedy *additional* coverage — repeatedly take the
  segment covering the most not-yet-covered non-zero ``(feature, value)``
  pairs; ties by total non-zero count, then chronology.  When nothing new can
  be covered the covered set is reset (classic additional-coverage
  prioritization); all-zero segments come last, chronologically.
* **CH**: chronological.  **RD**: ``n_shuffles`` (100) seeded random
  permutations; evaluate each and average (``evaluate.random_baseline``).
* **CC**: descending number of calls to the changed function per segment
  (counts supplied by the caller, e.g. from module logs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

METHODS = ("RSC", "SC", "CH", "RD", "CC")


def rsc_weights(frame_vectors: np.ndarray) -> np.ndarray:
    """Normalised rarity weights of the features (Algorithm 2 lines 8-14)."""
    v = np.asarray(frame_vectors)
    if v.ndim != 2:
        raise ValueError("frame_vectors must be 2-D (frames x features)")
    n = v.shape[0]
    nnz = np.count_nonzero(v, axis=0).astype(np.float64)
    w = np.divide(float(n), nnz, out=np.zeros_like(nnz), where=nnz > 0)
    total = w.sum()
    return w / total if total > 0 else w


def rsc_scores(segment_vectors: np.ndarray, frame_vectors: np.ndarray) -> np.ndarray:
    """Rarity score per segment: ``Σ_j w_j · [sv_j ≠ 0]``."""
    sv = np.asarray(segment_vectors)
    w = rsc_weights(frame_vectors)
    if sv.ndim != 2 or sv.shape[1] != w.shape[0]:
        raise ValueError(f"segment vectors {sv.shape} do not match {w.shape[0]} features")
    return np.round((sv != 0).astype(np.float64) @ w, 12)


def prioritize_rsc(segment_vectors: np.ndarray, frame_vectors: np.ndarray) -> np.ndarray:
    scores = rsc_scores(segment_vectors, frame_vectors)
    return np.argsort(-scores, kind="stable")


def prioritize_sc(segment_vectors: np.ndarray) -> np.ndarray:
    sv = np.asarray(segment_vectors)
    m = sv.shape[0]
    items = [{(int(j), int(sv[i, j])) for j in np.flatnonzero(sv[i])} for i in range(m)]
    sizes = [len(s) for s in items]
    remaining = list(range(m))
    covered: set[tuple[int, int]] = set()
    order: list[int] = []
    while remaining:
        gains = [len(items[i] - covered) for i in remaining]
        best_gain = max(gains)
        if best_gain == 0:
            if covered and any(sizes[i] for i in remaining):
                covered = set()
                continue
            order.extend(remaining)  # only all-zero segments are left
            break
        pick = max(range(len(remaining)), key=lambda k: (gains[k], sizes[remaining[k]], -remaining[k]))
        seg = remaining.pop(pick)
        covered |= items[seg]
        order.append(seg)
    return np.asarray(order, dtype=np.int64)


def prioritize_ch(n_segments: int) -> np.ndarray:
    return np.arange(n_segments, dtype=np.int64)


def prioritize_rd(n_segments: int, n_shuffles: int = 100, seed: int = 0) -> np.ndarray:
    """``(n_shuffles, n_segments)`` random orders from a seeded generator."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n_segments) for _ in range(n_shuffles)]) if n_shuffles else \
        np.zeros((0, n_segments), np.int64)


def prioritize_cc(call_counts: Sequence[int] | np.ndarray) -> np.ndarray:
    counts = np.asarray(call_counts, dtype=np.float64)
    return np.argsort(-counts, kind="stable")


def prioritize(
    method: str,
    segment_vectors: np.ndarray,
    *,
    frame_vectors: np.ndarray | None = None,
    call_counts: Sequence[int] | None = None,
    seed: int = 0,
    n_shuffles: int = 100,
) -> np.ndarray:
    """Dispatch by name.  RD returns ``(n_shuffles, M)``; the others ``(M,)``."""
    name = method.upper()
    m = int(np.asarray(segment_vectors).shape[0])
    if name == "RSC":
        if frame_vectors is None:
            raise ValueError("RSC needs the recording's frame vectors")
        return prioritize_rsc(segment_vectors, frame_vectors)
    if name == "SC":
        return prioritize_sc(segment_vectors)
    if name == "CH":
        return prioritize_ch(m)
    if name == "RD":
        return prioritize_rd(m, n_shuffles, seed)
    if name == "CC":
        if call_counts is None or len(call_counts) != m:
            raise ValueError("CC needs one call count per segment")
        return prioritize_cc(call_counts)
    raise ValueError(f"unknown method {method!r} (one of {', '.join(METHODS)})")
