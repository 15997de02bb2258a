"""Schema-based recording vectorization, STRaP §4.1.2 (with §4.1.1 alignment).

Pipeline (one streaming pass over the recording, then numpy):

1. decide the retained features for the updated modules and the channels they
   need (:meth:`ChannelMap.retained_features` / ``required_channels``); absent
   channels raise :class:`MissingChannelsError` listing all of them, unless
   ``missing="none"`` (then they contribute 0 = none, and are reported);
2. stream only those channels; every message is turned into its channel's small
   code row *when it arrives* (only the compiled rules that produce a wanted
   feature run), so a
   message that is copied forward into many frames is extracted once and no
   payload outlives its own iteration step;
   channel filters (``where``) drop messages first, context values (``$name``)
   are updated from every message of a timestamp before any of them is
   extracted, and interval channels become step functions of their episodes;
3. choose the reference channel (most messages among the needed ones, ties by
   name) and align every channel with :func:`align_indices`, gathering rows;
4. compute derived cross-channel features (e.g. believed-vs-true phase
   mismatch) on the aligned matrix, then keep the retained columns in schema
   order.

The result is a :class:`FrameTable`: ``timestamps_ns`` (the reference times)
and ``vectors`` (frames × features, small ints, 0 = none).
"""

from __future__ import annotations

import gc
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .align import align_indices, choose_reference, gather_rows
from .batches import Batch, Context, consume, stream_batches
from .errors import MissingChannelsError
from .readers.base import RecordedMessage, Recording
from .scene_schema import ChannelMap, load_channel_map

CODE_DTYPE = np.int16


@dataclass(frozen=True)
class FrameTable:
    """Aligned, vectorized recording: one row per reference message."""

    timestamps_ns: np.ndarray          # int64, shape (N,)
    vectors: np.ndarray                # CODE_DTYPE, shape (N, Q)
    feature_names: tuple[str, ...]
    reference_channel: str | None
    channels: tuple[str, ...]          # channels that were aligned
    missing_channels: tuple[str, ...] = ()
    source: str = ""
    zeroed_features: tuple[str, ...] = ()  # retained features that are 0 because their channel is missing
    channel_map: str = ""                  # name of the map the recording was read with

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a partial recording's reduction could not see (empty when complete)."""
        if not self.missing_channels:
            return ()
        return (f"partial recording: channel map {self.channel_map!r} needs {len(self.missing_channels)} channel(s) "
                f"the recording lacks: {', '.join(self.missing_channels)}; these features are therefore always "
                f"none (0): {', '.join(self.zeroed_features) or '(none retained)'}",)

    @property
    def n_frames(self) -> int:
        return int(self.timestamps_ns.shape[0])

    def frame_period_s(self) -> float:
        """Median spacing of the aligned frames (robust to gaps); 0 if < 2 frames."""
        if self.n_frames < 2:
            return 0.0
        return float(np.median(np.diff(self.timestamps_ns))) / 1e9

    def column(self, feature: str) -> np.ndarray:
        return self.vectors[:, self.feature_names.index(feature)]


#: messages of one channel decoded and held before their rules run as a batch (memory stays flat)
BATCH_MESSAGES = 2048


class _ChannelBuffer:
    """Timestamps and code rows of one channel: messages are held in batches of
    :data:`BATCH_MESSAGES` and coded by the map's batch rules (:mod:`services.strap.columns`).
    Code rows are kept as *runs*: a row only where it differs from the message before (scene
    features change rarely), with the index of the message that starts it; alignment maps a
    message to its run, so only the timestamps grow with the recording."""

    __slots__ = ("ts", "width", "index", "rules", "interval", "ends", "msgs", "ctxs", "starts", "runs", "last",
                 "done")

    def __init__(self, features: Sequence[str], rules, interval=None) -> None:
        self.ts = array("q")
        self.width = len(features)
        self.index = {f: i for i, f in enumerate(features)}
        self.rules = rules
        self.interval = interval       # (start getter, end getter) for episode channels
        self.ends = array("q")
        self.msgs: list[Any] = []
        self.ctxs: list[Mapping[str, Any]] = []
        self.starts: list[np.ndarray] = []  # index of the first message of each run
        self.runs: list[np.ndarray] = []    # the code row of each run
        self.last: np.ndarray | None = None  # the row of the last message coded
        self.done = 0                         # messages coded

    def add_many(self, ts: np.ndarray, messages: list[Any], ctxs: list[Mapping[str, Any]]) -> None:
        self.ts.frombytes(np.ascontiguousarray(ts, np.int64).tobytes())
        self.msgs.extend(messages)
        self.ctxs.extend(ctxs)
        if self.interval is not None:
            for t, message in zip(ts.tolist(), messages, strict=True):
                self.ends.append(_episode_end(t, message, *self.interval))
        if len(self.msgs) >= BATCH_MESSAGES:
            self.flush()

    def flush(self) -> None:
        n = len(self.msgs)
        if not n:
            return
        block = np.zeros((n, self.width), CODE_DTYPE)
        index = self.index
        columns: dict = {}  # each distinct (select, where, path) of the channel resolved once per batch
        for _feats, fn in self.rules:
            for feat, codes in fn(self.msgs, self.ctxs, columns):
                col = block[:, index[feat]]
                np.maximum(col, codes, out=col)
        change = np.ones(n, bool)
        change[1:] = (block[1:] != block[:-1]).any(axis=1)
        if self.last is not None:
            change[0] = bool((block[0] != self.last).any())
        self.starts.append(self.done + np.flatnonzero(change))
        self.runs.append(block[change])
        self.last, self.done = block[-1].copy(), self.done + n
        self.msgs, self.ctxs = [], []

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(timestamps of every message, first message of each run, code row of each run)."""
        self.flush()
        ts = np.frombuffer(self.ts, dtype=np.int64) if len(self.ts) else np.zeros(0, np.int64)
        starts = np.concatenate(self.starts) if self.starts else np.zeros(0, np.int64)
        runs = np.concatenate(self.runs) if self.runs else np.zeros((0, self.width), CODE_DTYPE)
        self.starts, self.runs = [starts], [runs]
        if self.interval is None or not len(self.ts):
            return ts, starts, runs
        codes = runs[np.searchsorted(starts, np.arange(ts.shape[0]), side="right") - 1]
        points, steps = _episodes_to_steps(ts, np.frombuffer(self.ends, dtype=np.int64), codes)
        return points, np.arange(points.shape[0]), steps


def _run_of(starts: np.ndarray, message: np.ndarray) -> np.ndarray:
    """The run holding each message index (-1 stays -1: no message yet)."""
    return np.where(message >= 0, np.searchsorted(starts, message, side="right") - 1, -1)


_OPEN_END = np.iinfo(np.int64).max


def _episode_end(ts: int, message: Any, start_of, end_of) -> int:
    start, end = start_of(message), end_of(message)
    nums = [v for v in (start[:1] + end[:1]) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(nums) < 2:
        return _OPEN_END
    return ts + max(0, int(round((float(nums[1]) - float(nums[0])) * 1e9)))


def _episodes_to_steps(starts: np.ndarray, ends: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Episodes ``[start, end)`` with code rows → a step function: one row per
    breakpoint, the ``max`` over the episodes active there (0 between them)."""
    points = np.unique(np.concatenate([starts, ends[ends != _OPEN_END]]))
    out = np.zeros((points.shape[0], codes.shape[1]), CODE_DTYPE)
    for k in range(starts.shape[0]):
        active = (points >= starts[k]) & (points < ends[k])
        out[active] = np.maximum(out[active], codes[k])
    return points, out


def vectorize_messages(
    messages: Iterable[RecordedMessage | tuple[str, int, Any]],
    channel_map: ChannelMap | str = "platform",
    *,
    available_channels: Iterable[str] | None = None,
    modules: Iterable[str] | None = None,
    reference_channel: str | None = None,
    missing: str = "error",
    source: str = "",
    batches: Iterable[Batch] | None = None,
) -> FrameTable:
    """Vectorize a time-ordered message stream (see module docstring).

    ``available_channels`` is what the recording declares (``None``: accept
    whatever the stream holds and treat silent channels as present). ``batches``
    (a reader's ``iter_batches()``) replaces ``messages`` when given.
    """
    cmap = load_channel_map(channel_map) if isinstance(channel_map, str) else channel_map
    if missing not in ("error", "none"):
        raise ValueError("missing must be 'error' or 'none'")
    modules = None if modules is None else list(modules)
    features = cmap.retained_features(modules)
    needed = cmap.required_channels(features)
    absent: tuple[str, ...] = ()
    if available_channels is not None:
        avail = set(available_channels)
        absent = tuple(ch for ch in needed if ch not in avail and ch not in cmap.optional)
        if absent and missing == "error":
            raise MissingChannelsError(absent, source or None)
        if absent and all(ch in absent or ch in cmap.optional for ch in needed):
            raise MissingChannelsError(absent, source or None)  # nothing to reduce over
    derived_of = {d.feature: d.inputs for d in cmap.derived}
    wanted = {g for f in features for g in derived_of.get(f, (f,))}
    # run only the rules that produce a wanted feature (e.g. /gt/vehicles' actor rules
    # are skipped when it is needed just for the always-kept intersection flag)
    buffers = {ch: _ChannelBuffer(cmap.channel_features[ch],
                                  [r for r in cmap.batch_rules[ch] if wanted.intersection(r[0])],
                                  cmap.intervals.get(ch))
               for ch in needed}
    ctx = Context(cmap, {n for f in wanted for n in cmap.feature_context.get(f, ())})
    consume(stream_batches(messages) if batches is None else batches, buffers, cmap.filters, ctx)
    arrays = {ch: buf.arrays() for ch, buf in buffers.items()}
    buffers.clear()  # each channel's rows now live in ``arrays`` only, dropped once aligned
    counts = {ch: a[0].shape[0] for ch, a in arrays.items()}
    if reference_channel is None:
        reference_channel = choose_reference(counts) if any(counts.values()) else None
    elif reference_channel not in arrays:
        raise MissingChannelsError([reference_channel], source or None)
    zeroed = _zeroed(cmap, features, absent)
    if reference_channel is None:
        empty = np.zeros((0, len(features)), CODE_DTYPE)
        return FrameTable(np.zeros(0, np.int64), empty, features, None, needed, absent, source, zeroed, cmap.name)
    ref_ts = arrays[reference_channel][0]
    # aligned columns go straight into the table (and the derived features' inputs aside): no
    # frames x all-features matrix next to it
    derived = {d.feature: d for d in cmap.derived}
    at = {f: k for k, f in enumerate(features)}
    inputs_needed = {x for f in features if f in derived for x in derived[f].inputs}
    out = np.zeros((ref_ts.shape[0], len(features)), CODE_DTYPE)
    aside: dict[str, np.ndarray] = {}
    for ch in needed:
        ch_ts, starts, runs = arrays.pop(ch)
        message = np.arange(ref_ts.shape[0]) if ch == reference_channel else align_indices(ref_ts, ch_ts)
        run = _run_of(starts, message)
        none = run < 0
        for j, f in enumerate(cmap.channel_features[ch]):
            if (f in at and f not in derived) or f in inputs_needed:
                column = gather_rows(runs[:, j], run) if none.any() else runs[:, j][run]
                if f in at and f not in derived:
                    out[:, at[f]] = column
                if f in inputs_needed:
                    aside[f] = column
    for k, f in enumerate(features):
        if f in derived:
            d = derived[f]
            inputs = [aside[x] for x in d.inputs]
            if d.op == "differ":
                a, b = inputs[0], inputs[1]
                out[:, k] = (a != 0) & (b != 0) & (a != b)
            else:
                out[:, k] = np.any(np.stack(inputs) != 0, axis=0)
    return FrameTable(ref_ts.copy(), out, features, reference_channel, needed, absent, source, zeroed, cmap.name)


def _zeroed(cmap: ChannelMap, features: Sequence[str], absent: Sequence[str]) -> tuple[str, ...]:
    """Retained features that cannot be non-zero without the ``absent`` channels
    (a ``differ`` needs both inputs, an ``any`` one of them)."""
    if not absent:
        return ()
    gone = set(absent)
    derived = {d.feature: d for d in cmap.derived}
    out = []
    for f in features:
        d = derived.get(f)
        if d is None:
            lost = cmap.producer[f] in gone
        else:
            lost_inputs = [cmap.producer[x] in gone for x in d.inputs]
            lost = any(lost_inputs) if d.op == "differ" else all(lost_inputs)
        if lost:
            out.append(f)
    return tuple(out)


_GC_LOCK = threading.Lock()
_GC_PAUSES = [0, False]  # passes in flight, whether the collector was enabled before the first


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while a pass decodes: its payloads (dicts, lists, protobuf
    messages) hold no cycles and are freed by reference counting, but their sheer number sets
    off full collections that cost ~20 % of a pass. Re-enabled when the last pass in the
    process ends (concurrent Reduces share the pause)."""
    with _GC_LOCK:
        if _GC_PAUSES[0] == 0:
            _GC_PAUSES[1] = gc.isenabled()
            gc.disable()
        _GC_PAUSES[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSES[0] -= 1
            if _GC_PAUSES[0] == 0 and _GC_PAUSES[1]:
                gc.enable()


def vectorize_recording(
    recording: Recording,
    channel_map: ChannelMap | str = "platform",
    *,
    modules: Iterable[str] | None = None,
    reference_channel: str | None = None,
    missing: str = "error",
) -> FrameTable:
    """Vectorize an opened recording, decoding only the channels the map needs."""
    cmap = load_channel_map(channel_map) if isinstance(channel_map, str) else channel_map
    modules = None if modules is None else list(modules)
    features = cmap.retained_features(modules)
    needed = set(cmap.required_channels(features)) | set(cmap.context_channels(features))
    declared = set(recording.channels())
    saved, saved_decoders = recording.selected, recording.struct_decoders
    recording.selected = frozenset(ch for ch in needed if ch in declared)
    recording.struct_decoders = cmap.struct_decoders
    try:
        with _cyclic_gc_paused():
            return vectorize_messages(
                (), cmap, available_channels=declared, modules=modules, reference_channel=reference_channel,
                missing=missing, source=str(recording.path), batches=recording.iter_batches())
    finally:
        recording.selected, recording.struct_decoders = saved, saved_decoders
