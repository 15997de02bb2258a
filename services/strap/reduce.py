"""Test reduction, STRaP §4.2 / Algorithm 1, vectorised with numpy.

Steps, in order:

1. **Smoothing** — each frame takes the majority vector of a sliding window of
   ``window`` frames (paper: 3).  The window is centred (``i-(w-1)//2`` ...) and
   shifted forward at the start / backward at the end so it always holds ``w``
   frames (Algorithm 1 lines 6-16; its end case prints ``V[i:i+w-1]``, which
   would run past the end — we read it as the backward window).  A *unique*
   strict maximum wins; any tie for the maximum keeps the frame's own vector.
2. **Segmentation** — a segment is a maximal run of equal smoothed vectors
   (Algorithm 1's if/else is inverted in print).
3. **Optional minimum duration** — drop segments shorter than
   ``min_segment_duration_s`` (the reference code does this at 1 s; the paper
   does not; default off).  Applied *before* de-duplication so a short glitch
   cannot claim a vector that a longer segment later shows.
4. **De-duplication** — keep only the first segment with each segment vector.
5. **Clipping** — keep the first ``n`` frames of each kept segment; ``n`` is
   ``clip_frames`` or ``clip_duration_s`` at the aligned frame rate (median
   frame spacing), paper 45 frames ≈ 3 s.
6. **Pre-roll** — each kept segment records the first frame of the
   ``preroll_s`` (1 s) before it: replay starts there to warm modules up
   (paper §5.2) but those frames are *outside* the clip and are not compared.

Implementation: vectors are replaced by exact integer ids (run-compress, then
``np.unique`` over run representatives only), the window majority is
``w²`` comparisons of id arrays, segmentation is one ``!=`` over ids.  Measured
well above 10⁶ frames/s for ``w = 3`` (see ``bench/bench_strap.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ReduceParams:
    window: int = 3
    clip_frames: int | None = None
    clip_duration_s: float | None = 3.0
    preroll_s: float = 1.0
    min_segment_duration_s: float | None = None
    dedupe: bool = True

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError("window must be >= 1")
        if self.clip_frames is not None and self.clip_frames < 1:
            raise ValueError("clip_frames must be >= 1")
        if self.clip_duration_s is not None and self.clip_duration_s <= 0:
            raise ValueError("clip_duration_s must be > 0")
        if self.preroll_s < 0:
            raise ValueError("preroll_s must be >= 0")


@dataclass(frozen=True)
class Segment:
    """A kept segment.  Frame indices are into the aligned recording;
    ``end``/``clip_end`` are exclusive; ``*_ns`` are frame timestamps."""

    index: int            # chronological position among all segments (before filtering)
    start: int
    end: int              # end of the full run
    clip_end: int         # end after clipping, <= end
    preroll_start: int    # first warm-up frame, <= start
    start_ns: int
    clip_last_ns: int     # timestamp of the last clipped frame
    clip_end_ns: int      # exclusive end of the clip's time span: the next frame's timestamp
    preroll_start_ns: int
    vector: tuple[int, ...]

    @property
    def clip_frames(self) -> int:
        return self.clip_end - self.start


@dataclass(frozen=True)
class Reduction:
    segments: tuple[Segment, ...]
    segment_vectors: np.ndarray     # (M, Q), rows = segments[i].vector
    n_frames: int
    n_segments_total: int           # before min-duration filter and de-duplication
    clip_frames: int
    frame_period_s: float

    @property
    def kept_frames(self) -> int:
        return sum(s.clip_frames for s in self.segments)

    @property
    def preroll_frames(self) -> int:
        return sum(s.start - s.preroll_start for s in self.segments)

    @property
    def reduction_ratio(self) -> float:
        """Fraction of replay time saved, clips only (paper RQ1): 1 - kept/total."""
        return 1.0 - self.kept_frames / self.n_frames if self.n_frames else 0.0

    @property
    def reduction_ratio_with_preroll(self) -> float:
        if not self.n_frames:
            return 0.0
        return 1.0 - (self.kept_frames + self.preroll_frames) / self.n_frames


def vector_ids(vectors: np.ndarray) -> np.ndarray:
    """Exact integer id per row (equal rows ↔ equal ids), fast when runs are long."""
    v = np.asarray(vectors)
    n = v.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    if v.ndim == 1:
        v = v[:, None]
    if v.shape[1] == 0:
        return np.zeros(n, np.int64)
    change = np.any(v[1:] != v[:-1], axis=1)
    run_starts = np.concatenate(([0], np.flatnonzero(change) + 1))
    reps = np.ascontiguousarray(v[run_starts])
    _, rep_ids = np.unique(reps, axis=0, return_inverse=True)
    run_of_frame = np.cumsum(np.concatenate(([0], change.astype(np.int64))))
    return rep_ids.reshape(-1)[run_of_frame].astype(np.int64)


def window_starts(n: int, window: int) -> np.ndarray:
    """First frame of each frame's window (centred, shifted at the edges)."""
    w = min(window, n)
    return np.clip(np.arange(n) - (w - 1) // 2, 0, max(n - w, 0))


SMOOTH_BLOCK_FRAMES = 8192  # smoothing works through the frames in blocks: its temporaries stay this size


def smooth_sources(ids: np.ndarray, window: int) -> np.ndarray:
    """For each frame, the frame whose vector it takes after majority smoothing."""
    n = ids.shape[0]
    w = min(window, n)
    own = np.arange(n)
    if w <= 1:
        return own
    starts = window_starts(n, w)
    out = np.empty(n, np.int64)
    for a in range(0, n, SMOOTH_BLOCK_FRAMES):  # each frame's window is read from the whole ``ids``
        b = min(a + SMOOTH_BLOCK_FRAMES, n)
        members = starts[None, a:b] + np.arange(w)[:, None]    # (w, block) frame indices
        wid = ids[members]                                       # (w, block) ids in the window
        counts = np.zeros((w, b - a), np.int32)
        for p in range(w):
            for q in range(w):
                counts[p] += wid[p] == wid[q]
        best = counts.argmax(axis=0)                             # first maximal position
        cols = np.arange(b - a)
        top = counts[best, cols]
        winner = wid[best, cols]
        tie = np.any((counts == top) & (wid != winner), axis=0)
        out[a:b] = np.where(tie, own[a:b], members[best, cols])
    return out


def smooth(vectors: np.ndarray, window: int = 3) -> np.ndarray:
    """Majority-smoothed copy of ``vectors`` (see module docstring)."""
    v = np.asarray(vectors)
    return v[smooth_sources(vector_ids(v), window)]


def segment_runs(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of maximal runs of equal ids; ends exclusive."""
    n = ids.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.concatenate(([0], np.flatnonzero(ids[1:] != ids[:-1]) + 1))
    ends = np.concatenate((starts[1:], [n]))
    return starts, ends


def frame_period_ns(timestamps_ns: np.ndarray) -> float:
    ts = np.asarray(timestamps_ns, np.int64)
    return float(np.median(np.diff(ts))) if ts.shape[0] >= 2 else 0.0


def clip_length_frames(timestamps_ns: np.ndarray, params: ReduceParams) -> int:
    """``n`` of the clip: explicit, or ``clip_duration_s`` at the aligned rate."""
    if params.clip_frames is not None:
        return params.clip_frames
    n_frames = int(np.asarray(timestamps_ns).shape[0])
    if params.clip_duration_s is None:
        return max(n_frames, 1)
    period = frame_period_ns(timestamps_ns)
    if period <= 0:
        return max(n_frames, 1)
    return max(1, int(round(params.clip_duration_s * 1e9 / period)))


def reduce_frames(
    timestamps_ns: np.ndarray, vectors: np.ndarray, params: ReduceParams | None = None
) -> Reduction:
    """Smooth, segment, filter, de-duplicate and clip an aligned recording."""
    p = params or ReduceParams()
    ts = np.asarray(timestamps_ns, np.int64)
    v = np.asarray(vectors)
    if v.ndim != 2 or v.shape[0] != ts.shape[0]:
        raise ValueError(f"vectors {v.shape} do not match {ts.shape[0]} timestamps")
    n = ts.shape[0]
    period = frame_period_ns(ts)
    n_clip = clip_length_frames(ts, p)
    if n == 0:
        return Reduction((), np.zeros((0, v.shape[1]), v.dtype), 0, 0, n_clip, 0.0)
    ids = vector_ids(v)
    src = smooth_sources(ids, p.window)
    starts, ends = segment_runs(ids[src])
    n_total = starts.shape[0]
    keep = np.ones(n_total, bool)
    if p.min_segment_duration_s is not None:
        end_ts = np.where(ends < n, ts[np.minimum(ends, n - 1)], ts[-1] + period)
        keep &= (end_ts - ts[starts]) >= p.min_segment_duration_s * 1e9
    seg_ids = ids[src[starts]]
    if p.dedupe:
        cand = np.flatnonzero(keep)
        _, first = np.unique(seg_ids[cand], return_index=True)
        keep = np.zeros(n_total, bool)
        keep[cand[first]] = True
    kept = np.flatnonzero(keep)
    clip_ends = np.minimum(ends, starts + n_clip)
    pre = np.minimum(np.searchsorted(ts, ts[starts] - int(round(p.preroll_s * 1e9)), side="left"), starts)
    # a frame at t_i stands for [t_i, t_{i+1}); the last one for one median period
    next_ts = np.append(ts[1:], ts[-1] + max(int(round(period)), 1))
    seg_vectors = v[src[starts[kept]]]
    segments = tuple(
        Segment(int(k), int(starts[k]), int(ends[k]), int(clip_ends[k]), int(pre[k]),
                int(ts[starts[k]]), int(ts[clip_ends[k] - 1]), int(next_ts[clip_ends[k] - 1]),
                int(ts[pre[k]]), tuple(int(x) for x in row))
        for k, row in zip(kept, seg_vectors, strict=True)
    )
    return Reduction(segments, seg_vectors, n, n_total, n_clip, period / 1e9)
