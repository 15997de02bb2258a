"""Evaluation: fault detection per segment, APFD and Top-K (STRaP §5.3).

Fault matrix
    ``fault_matrix[s, f]`` is ``True`` when replaying segment ``s`` reveals fault
    ``f`` (segments × faults, bool).  A fault is revealed by a segment when the
    module's outputs before and after the change are inconsistent on **more than
    10 %** of the compared frames, the 1 s warm-up pre-roll excluded
    (:func:`is_inconsistent`).

APFD (Formula 1)
    ``APFD = 1 - Σ_i TF_i / (n·m) + 1 / (2n)`` with ``n`` segments, ``m`` faults
    and ``TF_i`` the **1-based** position in the execution order of the first
    segment revealing fault ``i``.  Only faults revealed by at least one
    segment count (the paper's "n segments that detect m faults"); with none,
    APFD is undefined and we return ``nan``.

Top-K
    The 1-based position in the execution order of the first segment that
    reveals *any* fault, i.e. ``min_i TF_i`` — "the amount of segments required
    for finding the first fault".  ``None`` when no segment reveals a fault.
    Lower is better.

RD is evaluated over its shuffles and averaged (:func:`random_baseline`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .prioritize import prioritize_rd


def _check(order: np.ndarray, fault_matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fm = np.asarray(fault_matrix, dtype=bool)
    if fm.ndim != 2:
        raise ValueError("fault_matrix must be 2-D (segments x faults)")
    o = np.asarray(order, dtype=np.int64)
    if o.ndim != 1 or o.shape[0] != fm.shape[0] or not np.array_equal(np.sort(o), np.arange(fm.shape[0])):
        raise ValueError(f"order must be a permutation of the {fm.shape[0]} segments")
    return o, fm


def first_detection_positions(order: np.ndarray, fault_matrix: np.ndarray) -> np.ndarray:
    """``TF_i`` (1-based) for every fault revealed by some segment, fault order kept."""
    o, fm = _check(order, fault_matrix)
    detected = fm.any(axis=0)
    in_order = fm[o]                              # rows in execution order
    tf = np.argmax(in_order, axis=0) + 1          # first True per fault
    return tf[detected]


def apfd(order: np.ndarray, fault_matrix: np.ndarray) -> float:
    tf = first_detection_positions(order, fault_matrix)
    n, m = np.asarray(fault_matrix).shape[0], tf.shape[0]
    if m == 0 or n == 0:
        return float("nan")
    return float(1.0 - tf.sum() / (n * m) + 1.0 / (2 * n))


def top_k(order: np.ndarray, fault_matrix: np.ndarray) -> int | None:
    tf = first_detection_positions(order, fault_matrix)
    return int(tf.min()) if tf.shape[0] else None


@dataclass(frozen=True)
class Scores:
    apfd: float
    top_k: float | None


def evaluate_order(order: np.ndarray, fault_matrix: np.ndarray) -> Scores:
    k = top_k(order, fault_matrix)
    return Scores(apfd(order, fault_matrix), None if k is None else float(k))


def random_baseline(fault_matrix: np.ndarray, n_shuffles: int = 100, seed: int = 0) -> Scores:
    """RD: APFD and Top-K averaged over ``n_shuffles`` seeded random orders."""
    fm = np.asarray(fault_matrix, dtype=bool)
    orders = prioritize_rd(fm.shape[0], n_shuffles, seed)
    results = [evaluate_order(o, fm) for o in orders]
    ks = [r.top_k for r in results if r.top_k is not None]
    return Scores(float(np.mean([r.apfd for r in results])) if results else float("nan"),
                  float(np.mean(ks)) if ks else None)


def is_inconsistent(
    before: np.ndarray,
    after: np.ndarray,
    *,
    warmup_frames: int = 0,
    threshold: float = 0.10,
) -> bool:
    """Fault test for one segment: frame vectors of the module output before vs
    after a change mismatch on ``> threshold`` of the frames after warm-up."""
    b, a = np.asarray(before), np.asarray(after)
    if b.shape != a.shape:
        raise ValueError(f"before {b.shape} and after {a.shape} differ in shape")
    b, a = b[warmup_frames:], a[warmup_frames:]
    if b.shape[0] == 0:
        return False
    mismatch = np.any((b != a).reshape(b.shape[0], -1), axis=1)
    return bool(mismatch.mean() > threshold)


def fault_coverage(reduced_matrix: np.ndarray, original_detected: np.ndarray) -> float:
    """RQ2: faults revealed by the reduced segments / faults revealed originally."""
    orig = np.asarray(original_detected, dtype=bool)
    red = np.asarray(reduced_matrix, dtype=bool).any(axis=0) if np.asarray(reduced_matrix).size else \
        np.zeros_like(orig)
    return float((red & orig).sum() / orig.sum()) if orig.sum() else float("nan")
