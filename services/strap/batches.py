"""Feeding a time-ordered recording to the vectorizer's channel buffers in batches.

A *batch* is every selected message of one time window, grouped by channel:
``[(channel, timestamps int64 ascending, payloads), ...]``; windows follow each other in
time (a window may start at the timestamp the previous one ended with). Readers produce
them (``Recording.iter_batches``: an MCAP chunk at a time, else windows of the message
stream); :func:`stream_batches` makes them from any message iterable.

:func:`consume` applies, per batch and channel, the channel's ``where`` filter (filtered
messages do not exist, for context values either), feeds the context values, and hands
each channel's messages to its buffer together with the context each message sees: the
state after every context message with a timestamp ``<=`` its own (messages with equal
timestamps feed the context before any of them is extracted, whatever the stream order).
A batch is handed over only once a later batch starts strictly after it ends (or the
stream ends), so context messages at the same timestamp in the next window are counted.
Context states are shared snapshots (a new mapping only when a value changes).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from .paths import field_column
from .readers.base import Batch, stream_batches
from .scene_schema import ChannelMap

__all__ = ["Batch", "Context", "consume", "stream_batches"]


class Context:
    """Context values (``$name`` in rules) over time: the latest value each source channel
    published, the first non-empty source winning (see scene_schema)."""

    def __init__(self, cmap: ChannelMap, names: Iterable[str]) -> None:
        self.sources = {n: cmap.context[n] for n in sorted(set(names))}
        self.by_channel: dict[str, list[tuple[str, int, Callable[[Any], list[Any]]]]] = {}
        for name, srcs in self.sources.items():
            for k, (ch, getter) in enumerate(srcs):
                self.by_channel.setdefault(ch, []).append((name, k, getter))
        self.latest: dict[str, list[Any]] = {n: [None] * len(s) for n, s in self.sources.items()}
        self.values: Mapping[str, Any] = dict.fromkeys(self.sources)
        self.base = self.values              # state before the first pending change
        self.change_ts: list[int] = []       # timestamps of pending changes, ascending
        self.states: list[Mapping[str, Any]] = []  # state after each pending change

    def add(self, batch: Batch) -> None:
        """Apply the context messages of ``batch`` in time order (stable per channel)."""
        feeds = [(ts, msgs, self.by_channel[ch]) for ch, ts, msgs in batch if ch in self.by_channel]
        if not feeds:
            return
        if len({ch for ch, _, _ in batch if ch in self.by_channel}) == len(feeds):
            self._add_changes(feeds)
        else:
            self._add_each(feeds)

    def _add_each(self, feeds: list[tuple[np.ndarray, list[Any], list[Any]]]) -> None:
        """Every context message in time order (stable per channel), one by one."""
        times = np.concatenate([ts for ts, _, _ in feeds])
        owner = np.repeat(np.arange(len(feeds)), [len(m) for _, m, _ in feeds])
        index = np.concatenate([np.arange(len(m)) for _, m, _ in feeds])
        for i in np.argsort(times, kind="stable").tolist():
            _ts, msgs, srcs = feeds[owner[i]]
            msg = msgs[index[i]]
            for name, k, getter in srcs:
                got = getter(msg)
                self.latest[name][k] = got[0] if got else None
                value = next((v for v in self.latest[name] if v is not None), None)
                old = self.values[name]
                if value != old or type(value) is not type(old):
                    self.values = {**self.values, name: value}
                    self.change_ts.append(int(times[i]))
                    self.states.append(self.values)

    def _add_changes(self, feeds: list[tuple[np.ndarray, list[Any], list[Any]]]) -> None:
        """:meth:`add` when each source channel has one run of messages in the batch: only the
        messages where a source's own value changes (by value or type) can change a context
        value, so those are found per source with one comprehension and applied in time order
        (ties as the stable sort of :meth:`add`: batch order, then message order).  A NaN value
        (never equal to itself: every message counts as a change) takes :meth:`_add_each`."""
        values = [[_source_values(getter, msgs) for _name, _k, getter in srcs] for _ts, msgs, srcs in feeds]
        if any(v.__class__ is float and v != v for per_src in values for vals in per_src for v in vals) or any(
                v.__class__ is float and v != v for latest in self.latest.values() for v in latest):
            self._add_each(feeds)
            return
        events: list[tuple[int, int, int, int, str, int, Any]] = []
        for fi, (ts, _msgs, srcs) in enumerate(feeds):
            times = ts.tolist()
            for j, (name, k, _getter) in enumerate(srcs):
                vals = values[fi][j]
                last = self.latest[name][k]
                for i, v in enumerate(vals):
                    if v != last or type(v) is not type(last):
                        events.append((times[i], fi, i, j, name, k, v))
                        last = v
        events.sort(key=lambda e: e[:4])
        for t, _fi, _i, _j, name, k, v in events:
            latest = self.latest[name]
            latest[k] = v
            value = next((x for x in latest if x is not None), None)
            old = self.values[name]
            if value != old or type(value) is not type(old):
                self.values = {**self.values, name: value}
                self.change_ts.append(int(t))
                self.states.append(self.values)

    def snapshots(self, ts: np.ndarray) -> list[Mapping[str, Any]]:
        """The state each timestamp sees (every change at or before it applied)."""
        if not self.change_ts:
            return [self.base] * len(ts)
        seen = np.searchsorted(np.asarray(self.change_ts, np.int64), ts, side="right")
        states = [self.base, *self.states]
        return list(map(states.__getitem__, seen.tolist()))

    def collapse(self, before_ts: int) -> None:
        """Fold the changes before ``before_ts`` into the base (no later message needs them apart)."""
        j = int(np.searchsorted(np.asarray(self.change_ts, np.int64), before_ts, side="left")) \
            if self.change_ts else 0
        if j:
            self.base = self.states[j - 1]
            del self.change_ts[:j]
            del self.states[:j]


def _source_values(getter: Callable[[Any], list[Any]], msgs: list[Any]) -> list[Any]:
    """The value a context source reads from each message (None where it has none): one plain
    field over JSON dicts or structs as a column, else the getter message by message."""
    name = getattr(getter, "field", None)
    col = field_column(msgs, name) if name is not None else None
    if col is not None:
        return col
    return [g[0] if (g := getter(m)) else None for m in msgs]


def consume(batches: Iterable[Batch], buffers: Mapping[str, Any], filters: Mapping[str, Callable[[Any], bool]],
            ctx: Context) -> None:
    """Filter, feed the context and hand every buffered channel its messages (module docstring)."""
    queue: deque[tuple[int, int, Batch]] = deque()

    def hand_over(batch: Batch) -> None:
        for ch, ts, msgs in batch:
            buf = buffers.get(ch)
            if buf is not None:
                buf.add_many(ts, msgs, ctx.snapshots(ts))

    for batch in batches:
        kept: Batch = []
        for ch, ts, msgs in batch:
            if ch not in buffers and ch not in ctx.by_channel:
                continue
            test = filters.get(ch)
            if test is not None:
                batch_test = getattr(test, "batch", None)
                keep = np.asarray(batch_test(msgs) if batch_test else [bool(test(m)) for m in msgs], bool)
                if not keep.all():
                    ts = ts[keep]
                    msgs = [m for m, k in zip(msgs, keep.tolist(), strict=True) if k]
            if len(msgs):
                kept.append((ch, ts, msgs))
        if not kept:
            continue
        lo, hi = min(int(ts[0]) for _, ts, _ in kept), max(int(ts[-1]) for _, ts, _ in kept)
        ctx.add(kept)
        while queue and queue[0][1] < lo:
            hand_over(queue.popleft()[2])
        queue.append((lo, hi, kept))
        ctx.collapse(queue[0][0])
    while queue:
        hand_over(queue.popleft()[2])
