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
    BsmBatch,
    EeblBatch,
    RecordBatch,
    SpatBatch,
    filled,
    message_count,
    message_starts,
    row_messages,
)


def _keep(batch: RecordBatch, mask: np.ndarray) -> RecordBatch:
    """``batch.take(mask)``; the batch itself when every row is kept (batches are never written to)."""
    return batch if np.count_nonzero(mask) == mask.shape[0] else batch.take(mask)


class Inbox:
    """Messages in flight to one kind of receiver: (receiver key, batch, rx time) chunks per stream."""

    def __init__(self) -> None:
        self._pending: dict[Stream, list[tuple[np.ndarray, RecordBatch, np.ndarray]]] = {}
        self._next_rx: dict[Stream, float] = {}  # earliest pending rx time per stream (pop returns early before it)

    def push(self, stream: Stream, receiver: np.ndarray, batch: RecordBatch, rx: np.ndarray) -> None:
        if len(batch):
            self._pending.setdefault(stream, []).append((receiver, batch, rx))
            first = float(rx.min())
            if not first >= self._next_rx.get(stream, math.inf):  # (a NaN disables the early return)
                self._next_rx[stream] = first

    def pop(self, stream: Stream, t_s: float) -> tuple[np.ndarray, RecordBatch, np.ndarray] | None:
        """The rows due by ``t_s`` in reception order (stable: push order among equal rx times); the
        rest stays queued in push order. Chunks are split and merged only as far as needed."""
        chunks = self._pending.get(stream)
        if not chunks:
            return None
        if self._next_rx[stream] > t_s + 1e-12:
            return None  # nothing due yet
        lim = t_s + 1e-12
        due_parts: list[tuple[np.ndarray, RecordBatch, np.ndarray]] = []
        rest: list[tuple[np.ndarray, RecordBatch, np.ndarray]] = []
        for recv, batch, rx in chunks:
            due = rx <= lim
            nd = int(np.count_nonzero(due))
            if nd == rx.shape[0]:
                due_parts.append((recv, batch, rx))
            elif nd == 0:
                rest.append((recv, batch, rx))
            else:
                keep = ~due
                due_parts.append((recv[due], batch.take(due), rx[due]))
                rest.append((recv[keep], batch.take(keep), rx[keep]))
        self._pending[stream] = rest
        self._next_rx[stream] = min(float(c[2].min()) for c in rest) if rest else math.inf
        if not due_parts:
            return None
        if len(due_parts) == 1:
            recv, batch, rx = due_parts[0]
        else:
            recv = np.concatenate([c[0] for c in due_parts])
            batch = type(due_parts[0][1]).concat([c[1] for c in due_parts])
            rx = np.concatenate([c[2] for c in due_parts])
        if rx.shape[0] > 1 and not bool(np.all(rx[1:] >= rx[:-1])):  # else the stable sort is the identity
            order = np.argsort(rx, kind="stable")
            recv, batch, rx = recv[order], batch.take(order), rx[order]
        return recv, batch, rx


class Queues:
    """Delivery and queueing of the V2X source (a mixin of ``V2XInformationSource``)."""

    keep_rx: bool = False  # keep each step's ego arrivals (raw-message mode; off: no cost)
    rx_batches: list[tuple[Stream, RecordBatch, np.ndarray]] = []  # noqa: RUF012 (replaced, never mutated, when off)

    def _deliver(self, t: float) -> None:
        """Relay receivers (RSUs, vehicles) take what has arrived by t."""
        got = self.inbox_rsu.pop(Stream.SPAT, t)
        if got is not None:
            recv, batch, rx = got
            assert isinstance(batch, SpatBatch)
            for r in np.unique(recv).tolist():
                m = recv == r
                self.rsu_rx[int(r)].ingest_spat(batch.take(m), rx[m])
        got = self.inbox_relay.pop(Stream.EEBL, t)
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
        for stream, fn in ((Stream.MAP, ego.ingest_map), (Stream.SPAT, ego.ingest_spat),
                           (Stream.BSM, ego.ingest_bsm), (Stream.EEBL, ego.ingest_eebl)):
            got = self.inbox_ego.pop(stream, t)
            if got is not None:
                _, batch, rx = got
                fn(batch, rx)  # type: ignore[arg-type]
                if keep:
                    self.rx_batches.append((stream, batch, rx))
                self.stats.delivered[stream.value] += message_count(batch)
                if received is not None:
                    received += self._message_rows(stream, batch, rx)
        ego.expire(t)
        if received:
            assert self.trace is not None
            self.trace.publish("/v2x/rx", t, {"messages": received})

    def _queue_ego(self, steps: dict[Stream, StepBatch], spans: dict[str, slice], ok: np.ndarray,
                   lat: np.ndarray, bsm: BsmBatch, msg_rows: dict[Stream, np.ndarray]) -> None:
        ego = self.ego_key
        sl = spans.get("bsm")
        if sl is not None:
            st = steps[Stream.BSM]
            # BSM rows may have been replaced by a freeze but keep one row per message
            if st.batch is bsm:  # untouched by faults: row i is link i (one BSM per sender and step)
                good = ok[sl] & st.keep
                rx = st.batch.tx_time_s + lat[sl] + st.extra_delay_s
            else:
                row_link = self._link_of(st.batch, bsm)
                good = ok[sl][row_link] & st.keep
                rx = st.batch.tx_time_s + lat[sl][row_link] + st.extra_delay_s
            self.inbox_ego.push(Stream.BSM, filled(int(np.count_nonzero(good)), ego, np.int64), _keep(st.batch, good),
                                rx[good])
            st = steps[Stream.EEBL]
            if len(st.batch):
                row_link = self._link_of(st.batch, bsm)
                has = row_link >= 0
                good = has & ok[sl][np.maximum(row_link, 0)] & st.keep
                rx = st.batch.tx_time_s + lat[sl][np.maximum(row_link, 0)] + st.extra_delay_s
                self.inbox_ego.push(Stream.EEBL, filled(int(np.count_nonzero(good)), ego, np.int64),
                                    _keep(st.batch, good), rx[good])
        for s in (Stream.SPAT, Stream.MAP):
            sl = spans.get(f"{s.value}_ego")
            if sl is None:
                continue
            st = steps[s]
            msg_of_row = row_messages(st.batch)
            good = ok[sl][msg_of_row] & st.keep
            rx = st.batch.tx_time_s + lat[sl][msg_of_row] + st.extra_delay_s
            self.inbox_ego.push(s, filled(int(np.count_nonzero(good)), ego, np.int64), _keep(st.batch, good), rx[good])

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
            self.inbox_rsu.push(Stream.SPAT, np.full(int(rows.sum()), dst), st.batch.take(rows), rx)


__all__ = ["Inbox", "Queues"]
