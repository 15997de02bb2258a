"""Route geometry for the traffic core: uniform resampling, batched lookups, shared segments.

Every route is resampled at ``ROUTE_SAMPLE_M`` so that position and heading at arc
length ``s`` are an index and a lerp, vectorized over ``(B, N)`` vehicles without
per-route searches. Two vehicles *share geometry* where their routes run over the
same lane/movement id (``RouteSegment.id``); on that run, ``s_j + offset_ij`` is
vehicle j's position in vehicle i's arc length, which is how leaders are found
without any all-pairs Python loop at run time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lastv2x.core.program import Route
from services.simulator.kernels.traffic import positions

ROUTE_SAMPLE_M = 1.0  # resampling step [m]; chord error on an 8 m radius arc ~1.6 cm


def resample(points: Sequence[Sequence[float]], step_m: float = ROUTE_SAMPLE_M) -> tuple[np.ndarray, float]:
    """Points every ``step_m`` along the polyline (last sample at the end). Returns ((K, 2), length)."""
    p = np.asarray(points, dtype=np.float64)
    seg = np.hypot(*np.diff(p, axis=0).T)
    keep = np.concatenate(([True], seg > 1e-9))
    p = p[keep]
    s = np.concatenate(([0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T))))
    length = float(s[-1])
    q = np.arange(0.0, length, step_m)
    q = np.append(q, length) if (length - q[-1]) > 1e-9 or len(q) == 1 else q
    xy = np.stack([np.interp(q, s, p[:, 0]), np.interp(q, s, p[:, 1])], axis=1)
    return xy, length


@dataclass(frozen=True, eq=False)
class RouteTable:
    """Resampled routes of a batch: ``xy (B, N, K, 2)``, ``heading (B, N, K)``, ``length_m (B, N)``.

    Sample ``k`` is at arc length ``k * step_m``; rows past a route's end repeat its last sample.
    """

    xy: np.ndarray
    heading: np.ndarray
    length_m: np.ndarray
    step_m: float
    # flat views for lookups (the compiled step's too): samples (B*N*K, 2) and headings (B*N*K,), vehicle (b, n)'s
    # first sample index (B, N), the last sample a lerp may start from, 1 / step_m
    samples_xy: np.ndarray = field(init=False, repr=False)
    samples_heading: np.ndarray = field(init=False, repr=False)
    sample_base: np.ndarray = field(init=False, repr=False)
    k_max: float = field(init=False, repr=False)
    inv_step: float = field(init=False, repr=False)

    @classmethod
    def build(cls, routes: Sequence[Sequence[Route | None]], n: int, step_m: float = ROUTE_SAMPLE_M) -> RouteTable:
        sampled = [[resample(r.points_xy_m, step_m) if r is not None else None for r in row] for row in routes]
        k = max(len(x[0]) for row in sampled for x in row if x is not None) + 1
        b = len(routes)
        xy = np.zeros((b, n, k, 2))
        length = np.zeros((b, n))
        for bi, row in enumerate(sampled):
            for ni, x in enumerate(row):
                if x is None:
                    continue
                pts, ln = x
                xy[bi, ni, : len(pts)] = pts
                xy[bi, ni, len(pts):] = pts[-1]
                length[bi, ni] = ln
        d = np.diff(xy, axis=2)
        heading = np.arctan2(d[..., 1], d[..., 0])
        heading = np.concatenate([heading, heading[..., -1:]], axis=2)
        # repeated tail samples have zero-length steps: carry the last real heading forward
        last = np.maximum(np.ceil(length / step_m).astype(int) - 1, 0)
        tail = np.take_along_axis(heading, last[..., None], axis=2)
        kk = np.arange(k)[None, None, :]
        heading = np.where(kk > last[..., None], tail, heading)
        return cls(xy, heading, length, step_m)

    def __post_init__(self) -> None:
        b, n, k, _ = self.xy.shape
        put = object.__setattr__
        put(self, "samples_xy", np.ascontiguousarray(self.xy).reshape(-1, 2))  # samples, flat over (B, N, K)
        put(self, "samples_heading", np.ascontiguousarray(self.heading).ravel())
        put(self, "sample_base", (np.arange(b * n) * k).reshape(b, n))
        put(self, "inv_step", 1.0 / self.step_m)
        put(self, "k_max", float(k - 2))

    def lookup(self, s_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(xy (B, N, 2), heading (B, N)) at arc lengths ``s_m`` (B, N), clamped to the route (the compiled step's
        own lookup, :func:`services.simulator.kernels.traffic.positions`)."""
        return positions(np.ascontiguousarray(s_m, np.float64), np.ascontiguousarray(self.length_m, np.float64),
                         self.samples_xy, self.samples_heading, self.sample_base, self.k_max, self.inv_step)


def shared_geometry(routes: Sequence[Route | None], n: int, observers: Sequence[int] | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every ordered pair (i, j): ``offset[i, j]`` mapping j's arc length into i's, valid while
    ``lo[i, j] <= s_j <= hi[i, j]`` (NaN offset: no shared segment). Consecutive shared segments
    with the same offset merge into one run; where a pair shares several runs the longest wins.
    ``observers``: only these rows i (the result has one row per observer, in their order)."""
    rows = {i: r for r, i in enumerate(range(n) if observers is None else observers)}
    offset = np.full((len(rows), n), np.nan)
    lo = np.full((len(rows), n), np.inf)
    hi = np.full((len(rows), n), -np.inf)
    by_segment: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for i, r in enumerate(routes):
        if r is None:
            continue
        for seg in r.segments:
            by_segment[seg.id].append((i, seg.start_s_m, seg.length_m))
    runs: dict[tuple[int, int], dict[float, list[float]]] = defaultdict(dict)
    for members in by_segment.values():
        if len(members) < 2:
            continue
        for i, si, _li in members:
            if i not in rows:
                continue
            for j, sj, lj in members:
                if i == j:
                    continue
                key = round(si - sj, 6)
                span = runs[(i, j)].setdefault(key, [np.inf, -np.inf])
                span[0] = min(span[0], sj)
                span[1] = max(span[1], sj + lj)
    for (i, j), by_off in runs.items():
        off, (a, b) = max(by_off.items(), key=lambda kv: (kv[1][1] - kv[1][0], -kv[0]))
        offset[rows[i], j], lo[rows[i], j], hi[rows[i], j] = off, a, b
    return offset, lo, hi


def project(xy_samples: np.ndarray, step_m: float, length_m: float, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arc length and unsigned lateral distance of ``points`` (M, 2) on a resampled route (K, 2)."""
    a = xy_samples[:-1]
    ab = xy_samples[1:] - a
    ab2 = np.maximum((ab * ab).sum(axis=1), 1e-12)
    aq = points[:, None, :] - a[None]
    t = np.clip((aq * ab[None]).sum(axis=2) / ab2, 0.0, 1.0)
    foot = a[None] + t[..., None] * ab[None]
    dist = np.hypot(*(points[:, None, :] - foot).transpose(2, 0, 1))
    best = np.argmin(dist, axis=1)
    rows = np.arange(len(points))
    seg_len = np.sqrt(ab2)
    s = np.minimum(best * step_m + t[rows, best] * seg_len[best], length_m)
    return s, dist[rows, best]


def project_polyline(points: np.ndarray, s_cum: np.ndarray, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arc length and unsigned lateral distance of ``xy`` (M, 2) on a polyline (P, 2) with vertex arc lengths."""
    a = points[:-1]
    ab = points[1:] - a
    ab2 = np.maximum((ab * ab).sum(axis=1), 1e-12)
    aq = xy[:, None, :] - a[None]
    t = np.clip((aq * ab[None]).sum(axis=2) / ab2, 0.0, 1.0)
    dx = aq[..., 0] - t * ab[None, :, 0]
    dy = aq[..., 1] - t * ab[None, :, 1]
    dist = np.hypot(dx, dy)
    best = np.argmin(dist, axis=1)
    rows = np.arange(len(xy))
    return s_cum[best] + t[rows, best] * (s_cum[best + 1] - s_cum[best]), dist[rows, best]


__all__ = ["ROUTE_SAMPLE_M", "RouteTable", "project", "project_polyline", "resample", "shared_geometry"]
