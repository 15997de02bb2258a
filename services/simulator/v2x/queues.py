"""Queues (steps 1 and 4 of :class:`~.stack.V2XInformationSource`): messages in flight.

Survivors of the channel and the faults wait in an :class:`Inbox` per kind of receiver
(the ego, relay vehicles, relay RSUs) until ``rx = tx + channel latency + fault delay``;
each step the receivers take what has arrived, in reception order, and the ego's
receptions go to the trace (``/v2x/rx``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lastv2x.core.catalogue import Stream

from .faults import StepBatch
from .messages import (
    BSM_STREAM,
    EEBL_STREAM,
    MAP_STREAM,
    SPAT_STREAM,
    BsmBatch,
    EeblBatch,
    RecordBatch,
    SpatBatch,
    filled,
    message_count,
    message_starts,
    row_messages,
)

# a chunk in flight: (receiver key, batch, rx time, earliest rx, latest rx) -- the bounds as Python floats (NaN
# when a rx time is NaN: neither bound test holds) decide most pops without numpy
_Chunk = tuple[np.ndarray, RecordBatch, np.ndarray, float, float]


def _chunk(recv: np.ndarray, batch: RecordBatch, rx: np.ndarray) -> _Chunk:
    rx_l = rx.tolist()
    if len(rx_l) == 1:  # (most chunks: one BSM) its rx is both bounds, NaN or not
        return recv, batch, rx, rx_l[0], rx_l[0]
    if any(r != r for r in rx_l):
        return recv, batch, rx, math.nan, math.nan
    return recv, batch, rx, min(rx_l), max(rx_l)


class Inbox:
    """Messages in flight to one kind of receiver: (receiver key, batch, rx time) chunks per stream."""

    def __init__(self) -> None:
        self._pending: dict[Stream, list[_Chunk]] = {}
        # earliest pending rx time per stream: pop returns early before it, and a caller may skip pop then
        # (``next_rx_s[stream] > t + 1e-12``; absent = nothing pending; NaN = check the chunks)
        self.next_rx_s: dict[Stream, float] = {}

    def push(self, stream: Stream, receiver: np.ndarray, batch: RecordBatch, rx: np.ndarray) -> None:
        if len(batch):
            chunk = _chunk(receiver, batch, rx)
            self._pending.setdefault(stream, []).append(chunk)
            first = chunk[3]
            if not first >= self.next_rx_s.get(stream, math.inf):  # (a NaN disables the early return)
                self.next_rx_s[stream] = first

    def pop(self, stream: Stream, t_s: float) -> tuple[np.ndarray, RecordBatch, np.ndarray] | None:
        """The rows due by ``t_s`` in reception order (stable: push order among equal rx times); the
        rest stays queued in push order. Chunks are split and merged only as far as needed."""
        chunks = self._pending.get(stream)
        if not chunks:
            return None
        if self.next_rx_s.get(stream, math.inf) > t_s + 1e-12:  # (absent: only rx = inf pushed)
            return None  # nothing due yet
        lim = t_s + 1e-12
        due_parts: list[_Chunk] = []
        rest: list[_Chunk] = []
        for chunk in chunks:
            if chunk[4] <= lim:  # every row due
                due_parts.append(chunk)
            elif chunk[3] > lim:  # none due
                rest.append(chunk)
            else:
                recv, batch, rx = chunk[:3]
                due = rx <= lim
                nd = int(np.count_nonzero(due))
                if nd == rx.shape[0]:
                    due_parts.append(chunk)
                elif nd == 0:
                    rest.append(chunk)
                else:
                    keep = ~due
                    due_parts.append(_chunk(recv[due], batch.take(due), rx[due]))
                    rest.append(_chunk(recv[keep], batch.take(keep), rx[keep]))
        self._pending[stream] = rest
        self.next_rx_s[stream] = min(c[3] for c in rest) if rest else math.inf
        if not due_parts:
            return None
        if len(due_parts) == 1:
            recv, batch, rx, first, last = due_parts[0]
            if first == last:  # one rx time for every row (a SPaT's groups, a lone row): in order already
                return recv, batch, rx
        else:
            recv = np.concatenate([c[0] for c in due_parts])
            batch = type(due_parts[0][1]).concat([c[1] for c in due_parts])
            rx = np.concatenate([c[2] for c in due_parts])
        if rx.shape[0] > 1 and not bool(np.all(rx[1:] >= rx[:-1])):  # else the stable sort is the identity
            order = np.argsort(rx, kind="stable")
            recv, batch, rx = recv[order], batch.take(order), rx[order]
        return recv, batch, rx


# (stream, link span name) of the RSU messages to the ego, in queueing order
RSU_EGO_SPANS = tuple((s, f"{s.value}_ego") for s in (SPAT_STREAM, MAP_STREAM))
_RECEIVER_COLUMNS: dict[tuple[int, int], np.ndarray] = {}


def _receiver_column(key: int, n: int) -> np.ndarray:
    """``filled(n, key, np.int64)``, read-only and shared: a receiver column is never written to."""
    out = _RECEIVER_COLUMNS.get((key, n))
    if out is None:
        out = _RECEIVER_COLUMNS[(key, n)] = filled(n, key, np.int64)
        out.setflags(write=False)
    return out


# the ego's streams in ingest order: (stream, Receiver method, stream value: Enum.value is a Python-level property)
_EGO_STREAMS = tuple((s, f"ingest_{s.value.lower()}", s.value)
                     for s in (MAP_STREAM, SPAT_STREAM, BSM_STREAM, EEBL_STREAM))


class Queues:
    """Delivery and queueing of the V2X source (a mixin of ``V2XInformationSource``)."""

    keep_rx: bool = False  # keep each step's ego arrivals (raw-message mode; off: no cost)
    rx_batches: list[tuple[Stream, RecordBatch, np.ndarray]] = []  # noqa: RUF012 (replaced, never mutated, when off)

    def _deliver(self, t: float) -> None:
        """Relay receivers (RSUs, vehicles) take what has arrived by t."""
        lim = t + 1e-12  # pop is skipped when nothing is due, as in _deliver_ego
        inbox = self.inbox_rsu
        got = None if inbox.next_rx_s.get(SPAT_STREAM, math.inf) > lim else inbox.pop(SPAT_STREAM, t)
        if got is not None:
            recv, batch, rx = got
            assert isinstance(batch, SpatBatch)
            for r in np.unique(recv).tolist():
                m = recv == r
                self.rsu_rx[int(r)].ingest_spat(batch.take(m), rx[m])
        inbox = self.inbox_relay
        got = None if inbox.next_rx_s.get(EEBL_STREAM, math.inf) > lim else inbox.pop(EEBL_STREAM, t)
        if got is not None:
            recv, batch, rx = got
            assert isinstance(batch, EeblBatch)
            for i in range(len(batch)):
                v = int(recv[i])
                table = self.relay_events.setdefault(v, {})
                key = (int(batch.origin[i]), int(batch.event_id[i]))
                row = table.get(key)
                ts = float(batch.timestamp_s[i])
                if row is None or ts > row["ts"]:
                    table[key] = {"ts": ts, "x": float(batch.x_m[i]), "y": float(batch.y_m[i]),
                                  "h": float(batch.heading_rad[i]), "v": float(batch.speed_mps[i]),
                                  "d": float(batch.decel_mps2[i]),
                                  "hop": float(min(batch.hop_count[i], row["hop"] if row else 1e9)),
                                  "rx": float(rx[i])}
                else:
                    row["rx"] = max(row["rx"], float(rx[i]))
                    row["hop"] = min(row["hop"], float(batch.hop_count[i]))

    def _deliver_ego(self, t: float) -> None:
        ego = self.ego
        received: list[dict[str, Any]] | None = [] if self.trace is not None else None
        keep = self.keep_rx  # raw-message mode: this step's arrivals kept for arrivals()
        if keep:
            self.rx_batches = []
        inbox = self.inbox_ego
        next_rx, lim = inbox.next_rx_s, t + 1e-12
        for stream, ingest, name in _EGO_STREAMS:
            if next_rx.get(stream, math.inf) > lim:
                continue  # nothing due: pop would return None (most streams, most steps)
            got = inbox.pop(stream, t)
            if got is not None:
                _, batch, rx = got
                getattr(ego, ingest)(batch, rx)
                if keep:
                    self.rx_batches.append((stream, batch, rx))
                # (a lone row is one message: message_count's list walk only for more)
                self.stats.delivered[name] += 1 if rx.shape[0] == 1 else message_count(batch)
                if received is not None:
                    received += self._message_rows(stream, batch, rx)
        ego.expire(t)
        if received:
            assert self.trace is not None
            self.trace.publish("/v2x/rx", t, {"messages": received})

    def _queue_ego(self, steps: dict[Stream, StepBatch], spans: dict[str, slice], ok: np.ndarray,
                   lat: np.ndarray, bsm: BsmBatch, msg_rows: dict[Stream, np.ndarray]) -> None:
        sl = spans.get("bsm")
        if sl is not None:
            st = steps[BSM_STREAM]
            # BSM rows may have been replaced by a freeze but keep one row per message
            if st.untouched_rows:  # row i is link i, kept, no delay (adding 0.0 would only turn a -0.0 sum to 0.0)
                self._push_ego(BSM_STREAM, st.batch, ok[sl], st.batch.tx_time_s + lat[sl])
            elif st.batch is bsm:  # untouched by content faults: row i is link i
                self._push_ego(BSM_STREAM, st.batch, ok[sl] & st.keep, st.batch.tx_time_s + lat[sl] + st.extra_delay_s)
            else:
                row_link = self._link_of(st.batch, bsm)
                self._push_ego(BSM_STREAM, st.batch, ok[sl][row_link] & st.keep,
                               st.batch.tx_time_s + lat[sl][row_link] + st.extra_delay_s)
            st = steps[EEBL_STREAM]
            if len(st.batch):
                row_link = self._link_of(st.batch, bsm)
                has = row_link >= 0
                good = has & ok[sl][np.maximum(row_link, 0)] & st.keep
                rx = st.batch.tx_time_s + lat[sl][np.maximum(row_link, 0)] + st.extra_delay_s
                self._push_ego(EEBL_STREAM, st.batch, good, rx)
        for s, span in RSU_EGO_SPANS:
            sl = spans.get(span)
            if sl is None:
                continue
            st = steps[s]
            msg_of_row = row_messages(st.batch)
            if st.untouched_rows:
                self._push_ego(s, st.batch, ok[sl][msg_of_row], st.batch.tx_time_s + lat[sl][msg_of_row])
            else:
                self._push_ego(s, st.batch, ok[sl][msg_of_row] & st.keep,
                               st.batch.tx_time_s + lat[sl][msg_of_row] + st.extra_delay_s)

    def _push_ego(self, stream: Stream, batch: RecordBatch, good: np.ndarray, rx: np.ndarray) -> None:
        """Queue the rows ``good`` of ``batch`` (received at ``rx``) for the ego."""
        n = int(np.count_nonzero(good))
        if n == 0:
            return  # (push ignores an empty batch)
        if n == good.shape[0]:  # every row delivered (the usual step): no copies
            self.inbox_ego.push(stream, _receiver_column(self.ego_key, n), batch, rx)
        else:
            self.inbox_ego.push(stream, _receiver_column(self.ego_key, n), batch.take(good), rx[good])

    @staticmethod
    def _link_of(batch: RecordBatch, bsm: BsmBatch) -> np.ndarray:
        """Index of the carrier BSM (same sender and msg_id) of each row; -1 if none."""
        if len(bsm) == 0:
            return np.full(len(batch), -1, np.int64)
        code_b = bsm.sender * (1 << 32) + bsm.msg_id
        order = np.argsort(code_b)
        code = batch.sender * (1 << 32) + batch.msg_id
        pos = np.searchsorted(code_b[order], code)
        pos = np.minimum(pos, len(bsm) - 1)
        found = code_b[order][pos] == code
        return np.where(found, order[pos], -1)

    def _queue_rsu(self, st: StepBatch, starts: np.ndarray, pairs: np.ndarray, ok: np.ndarray,
                   lat: np.ndarray) -> None:
        msg_of_row = np.cumsum(message_starts(st.batch.sender, st.batch.msg_id)) - 1
        for p in range(pairs.shape[0]):
            if not ok[p]:
                continue
            rows = (msg_of_row == pairs[p, 0]) & st.keep
            if not np.count_nonzero(rows):
                continue
            dst = int(self.rsu_keys[pairs[p, 1]])
            rx = st.batch.tx_time_s[rows] + lat[p] + st.extra_delay_s[rows]
            self.inbox_rsu.push(SPAT_STREAM, np.full(int(rows.sum()), dst), st.batch.take(rows), rx)


__all__ = ["Inbox", "Queues"]
