"""Pure-numpy polyline geometry: arc length, interpolation, projection, intersection.

Every function is vectorized over query arrays. Coordinates are metres in the
OpenDRIVE inertial frame (x east, y north, headings counter-clockwise from +x).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_EPS = 1e-9


def as_polyline(points: object, *, min_step_m: float = 1e-6) -> np.ndarray:
    """Return a read-only (N, 2) float64 copy with consecutive duplicates removed."""
    arr = np.array(points, dtype=np.float64, copy=True)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
        raise ValueError(f"polyline must be (N, 2) with N >= 1, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("polyline has non-finite coordinates")
    if arr.shape[0] > 1:
        step = np.hypot(*np.diff(arr, axis=0).T)
        keep = np.concatenate(([True], step > min_step_m))
        arr = arr[keep]
    if arr.shape[0] == 1:  # a degenerate path still needs a segment
        arr = np.vstack([arr, arr])
    arr.setflags(write=False)
    return arr


def sample_stations(s0: float, s1: float, spacing_m: float) -> np.ndarray:
    """Stations over [s0, s1] at most ``spacing_m`` apart, 1 mm inside both ends.

    Staying inside keeps an OpenDRIVE parser on this lane section (at a section
    boundary it answers for the next one); sub-4 mm sections shrink the margin.
    """
    length = max(s1 - s0, 0.0)
    eps = min(1e-3, 0.25 * length) if length > 0 else 0.0
    n = max(2, int(np.ceil(length / spacing_m)) + 1)
    return np.linspace(s0 + eps, s1 - eps, n)


def cumulative_s(points: np.ndarray) -> np.ndarray:
    """Arc length at every vertex, starting at 0 (read-only array)."""
    seg = np.hypot(*np.diff(points, axis=0).T)
    s = np.concatenate(([0.0], np.cumsum(seg)))
    s.setflags(write=False)
    return s


def _segment_index(s_cum: np.ndarray, s: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(s_cum, s, side="right") - 1
    return np.clip(idx, 0, len(s_cum) - 2)


def position_at(points: np.ndarray, s_cum: np.ndarray, s: object) -> np.ndarray:
    """Positions at arc lengths ``s`` (scalar -> (2,), array -> (..., 2)); clamped to the ends."""
    s_arr = np.clip(np.asarray(s, dtype=np.float64), 0.0, s_cum[-1])
    idx = _segment_index(s_cum, s_arr)
    seg_len = s_cum[idx + 1] - s_cum[idx]
    t = np.where(seg_len > _EPS, (s_arr - s_cum[idx]) / np.maximum(seg_len, _EPS), 0.0)
    p0 = points[idx]
    return p0 + t[..., None] * (points[idx + 1] - p0)


def heading_at(points: np.ndarray, s_cum: np.ndarray, s: object) -> np.ndarray:
    """Tangent heading (rad, CCW from +x) of the segment holding each ``s``."""
    s_arr = np.clip(np.asarray(s, dtype=np.float64), 0.0, s_cum[-1])
    d = np.diff(points, axis=0)
    heads = np.arctan2(d[:, 1], d[:, 0])
    return heads[_segment_index(s_cum, s_arr)]


def project(points: np.ndarray, s_cum: np.ndarray, xy: object) -> tuple[np.ndarray, np.ndarray]:
    """Closest point on the polyline for each query: returns (s along, distance), both (K,)."""
    q = np.atleast_2d(np.asarray(xy, dtype=np.float64))
    a = points[:-1]
    ab = points[1:] - a
    ab2 = np.maximum(np.einsum("ij,ij->i", ab, ab), _EPS)
    aq = q[:, None, :] - a[None, :, :]
    t = np.clip(np.einsum("kij,ij->ki", aq, ab) / ab2, 0.0, 1.0)
    foot = a[None] + t[..., None] * ab[None]
    dist = np.hypot(*(q[:, None, :] - foot).transpose(2, 0, 1))
    best = np.argmin(dist, axis=1)
    rows = np.arange(q.shape[0])
    seg_len = s_cum[1:] - s_cum[:-1]
    return s_cum[best] + t[rows, best] * seg_len[best], dist[rows, best]


def wrap_angle(a: object) -> np.ndarray | float:
    """Wrap angles to [-pi, pi)."""
    out = (np.asarray(a, dtype=np.float64) + np.pi) % (2.0 * np.pi) - np.pi
    return float(out) if out.ndim == 0 else out


def circular_mean(angles: Sequence[float]) -> float:
    a = np.asarray(angles, dtype=np.float64)
    return float(np.arctan2(np.sin(a).mean(), np.cos(a).mean()))


@dataclass(frozen=True)
class Crossing:
    """One intersection between polyline ``a`` and polyline ``b`` of a set."""

    a: int
    b: int
    x: float
    y: float
    s_a: float
    s_b: float


def polyline_crossings(
    polylines: Sequence[np.ndarray], *, chunk: int = 512, end_tol_m: float = 0.05
) -> list[Crossing]:
    """All proper crossings between different polylines of a set, vectorized.

    Segments of every polyline are stacked and tested against each other in
    row chunks (memory stays ~chunk x total). Touches within ``end_tol_m`` of
    both polylines' ends (shared start or shared end points) are not crossings;
    collinear overlaps are ignored (they are merges, handled by the caller).
    """
    if len(polylines) < 2:
        return []
    owner = np.concatenate([np.full(len(p) - 1, i) for i, p in enumerate(polylines)])
    p0 = np.concatenate([p[:-1] for p in polylines])
    p1 = np.concatenate([p[1:] for p in polylines])
    s0 = np.concatenate([cumulative_s(p)[:-1] for p in polylines])
    lengths = np.array([cumulative_s(p)[-1] for p in polylines])
    d = p1 - p0
    seg_len = np.hypot(d[:, 0], d[:, 1])
    lo, hi = np.minimum(p0, p1), np.maximum(p0, p1)
    found: list[Crossing] = []
    n = len(owner)
    for start in range(0, n, chunk):
        r = slice(start, min(start + chunk, n))
        # bounding-box prefilter and only pairs of distinct polylines, a < b
        ok = (owner[r, None] < owner[None, :]) & np.all(
            (lo[r, None, :] <= hi[None, :, :]) & (lo[None, :, :] <= hi[r, None, :]), axis=2
        )
        ii, jj = np.nonzero(ok)
        if ii.size == 0:
            continue
        ii = ii + start
        da, db = d[ii], d[jj]
        denom = da[:, 0] * db[:, 1] - da[:, 1] * db[:, 0]
        w = p0[jj] - p0[ii]
        par = np.abs(denom) < _EPS
        safe = np.where(par, 1.0, denom)
        t = (w[:, 0] * db[:, 1] - w[:, 1] * db[:, 0]) / safe
        u = (w[:, 0] * da[:, 1] - w[:, 1] * da[:, 0]) / safe
        hit = (~par) & (t >= 0.0) & (t <= 1.0) & (u >= 0.0) & (u <= 1.0)
        for k in np.nonzero(hit)[0]:
            i, j = ii[k], jj[k]
            sa = s0[i] + t[k] * seg_len[i]
            sb = s0[j] + u[k] * seg_len[j]
            a, b = int(owner[i]), int(owner[j])
            near_a = min(sa, lengths[a] - sa) <= end_tol_m
            near_b = min(sb, lengths[b] - sb) <= end_tol_m
            if near_a and near_b:
                continue
            x, y = p0[i] + t[k] * da[k]
            found.append(Crossing(a, b, float(x), float(y), float(sa), float(sb)))
    return found
