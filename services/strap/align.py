"""Message alignment, STRaP §4.1.1.

Modules publish asynchronously at different rates, so channels are aligned to
a *reference channel* — the one with the most messages — before frames can be
compared.  With reference timestamps ``t_0 <= t_1 <= ... <= t_{N-1}``:

1. a target message created in ``[t_i, t_{i+1})`` is re-stamped to ``t_i``
   (the paper writes the open interval; a message exactly at ``t_i`` already
   "is at t_i");
2. several target messages in one interval: **the latest wins**;
3. no target message in an interval: the prior message is copied forward;
4. before a target channel's first message its value is *none* (features 0).

Equivalently, frame ``i`` holds the latest target message with timestamp
``< t_{i+1}``.  Two boundary decisions the paper leaves open, made here:

* target messages *before* ``t_0`` are carried into frame 0 (rule 3 applied to
  the first interval: they are the "prior message");
* the last interval is open-ended, ``[t_{N-1}, +inf)``: a recording ends with its
  last reference message, and later target messages update the last frame.

The output always has exactly one frame per reference message, stamped with the
reference timestamps (property-tested).  Equal reference timestamps give empty
intervals, i.e. copies of the prior state.

Two implementations that agree exactly (tested against each other):

* :func:`align_indices` — vectorised with ``np.searchsorted`` over timestamp
  arrays; the vectorizer uses it on per-channel feature rows, so message payloads
  are never held per frame;
* :func:`align_stream` — a one-pass generator over a time-ordered message stream
  yielding :class:`AlignedFrame` s with the messages themselves (for exports and
  replay), holding only the latest message of each channel.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .readers.base import RecordedMessage

NO_MESSAGE = -1


def choose_reference(message_counts: Mapping[str, int], candidates: Iterable[str] | None = None) -> str:
    """The channel with the most messages; ties go to the lexicographically first
    name so the choice does not depend on map or file order."""
    pool = {c: n for c, n in message_counts.items() if candidates is None or c in set(candidates)}
    pool = {c: n for c, n in pool.items() if n > 0}
    if not pool:
        raise ValueError("no channel with messages to use as the alignment reference")
    return min(pool, key=lambda c: (-pool[c], c))


def align_indices(reference_ts_ns: np.ndarray, target_ts_ns: np.ndarray) -> np.ndarray:
    """For each reference frame, the index of the target message it holds, or -1.

    ``target_ts_ns`` must be sorted (stream order for ties).  Frame ``i`` takes the
    last target index ``j`` with ``target[j] < reference[i+1]`` (``+inf`` for
    the last frame); ``-1`` if the target has not published yet.
    """
    ref = np.asarray(reference_ts_ns, dtype=np.int64)
    tgt = np.asarray(target_ts_ns, dtype=np.int64)
    n = ref.shape[0]
    out = np.full(n, NO_MESSAGE, dtype=np.int64)
    if n == 0 or tgt.shape[0] == 0:
        return out
    if tgt.shape[0] > 1 and np.any(tgt[1:] < tgt[:-1]):
        raise ValueError("target timestamps must be sorted")
    out[:-1] = np.searchsorted(tgt, ref[1:], side="left") - 1
    out[-1] = tgt.shape[0] - 1
    return out


@dataclass(frozen=True)
class AlignedFrame:
    """Frame ``index`` at reference time ``timestamp_ns``; ``messages`` maps every
    aligned channel to its message in this frame, ``None`` before its first."""

    index: int
    timestamp_ns: int
    messages: Mapping[str, Any]


def align_stream(
    messages: Iterable[RecordedMessage | tuple[str, int, Any]],
    reference_channel: str,
    channels: Iterable[str] | None = None,
) -> Iterator[AlignedFrame]:
    """Align a time-ordered stream to ``reference_channel`` in one pass.

    ``channels`` lists the target channels to carry (default: every channel
    seen; a channel first seen late appears from then on, with ``None`` before).
    Equal timestamps are handled as in :func:`align_indices`: a target message
    stamped exactly at ``t_{i+1}`` belongs to frame ``i+1`` even if the stream
    delivers it before the reference message.
    """
    wanted = None if channels is None else set(channels) | {reference_channel}
    state: dict[str, Any] = {} if wanted is None else dict.fromkeys(wanted)
    pending: tuple[int, Any] | None = None  # (timestamp, reference message) of the open frame
    index = 0
    group_ts: int | None = None
    group: list[tuple[str, Any]] = []

    def flush(ts: int) -> Iterator[AlignedFrame]:
        nonlocal pending, index
        refs = [m for c, m in group if c == reference_channel]
        for ref_msg in refs:
            if pending is not None:  # close the open frame before this group's targets apply
                yield AlignedFrame(index, pending[0], {**state, reference_channel: pending[1]})
                index += 1
            pending = (ts, ref_msg)
        for ch, msg in group:
            if ch != reference_channel:
                state[ch] = msg  # stream order: the latest at equal time wins

    last_ts: int | None = None
    for channel, ts, msg in messages:
        if wanted is not None and channel not in wanted:
            continue
        if last_ts is not None and ts < last_ts:
            raise ValueError(f"stream not time-ordered: {ts} after {last_ts}")
        last_ts = ts
        if group_ts is not None and ts != group_ts:
            yield from flush(group_ts)
            group.clear()
        group_ts = ts
        group.append((channel, msg))
    if group_ts is not None:
        yield from flush(group_ts)
    if pending is not None:
        yield AlignedFrame(index, pending[0], {**state, reference_channel: pending[1]})


def gather_rows(rows: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``rows[indices]`` with ``-1`` mapped to an all-zero ("none") row."""
    rows = np.asarray(rows)
    out = np.zeros((indices.shape[0],) + rows.shape[1:], dtype=rows.dtype)
    valid = indices >= 0
    if rows.shape[0]:
        out[valid] = rows[indices[valid]]
    return out
