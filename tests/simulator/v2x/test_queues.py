"""Messages in flight: the inbox pops what is due, in reception order."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lastv2x.core.catalogue import Stream
from services.simulator.v2x.messages import BsmBatch, RecordBatch
from services.simulator.v2x.queues import Inbox


class _NumpyInbox:
    """The inbox that decided every chunk with numpy (before the Python rx bounds), for one stream, as the oracle.
    (Its quirk is kept: a chunk with a NaN rx time turns the early-return time to NaN, but once popped past, the
    Python min over the chunks drops the NaN, and the chunk's other rows wait for the next chunk's time.)"""

    def __init__(self) -> None:
        self.pending: list[tuple[np.ndarray, RecordBatch, np.ndarray]] = []
        self.next_rx = math.inf

    def push(self, receiver, batch, rx):
        if len(batch):
            self.pending.append((receiver, batch, rx))
            first = float(rx.min())
            if not first >= self.next_rx:
                self.next_rx = first

    def pop(self, t_s):
        if not self.pending or self.next_rx > t_s + 1e-12:
            return None
        lim = t_s + 1e-12
        due_parts, rest = [], []
        for recv, batch, rx in self.pending:
            due = rx <= lim
            nd = int(np.count_nonzero(due))
            if nd == rx.shape[0]:
                due_parts.append((recv, batch, rx))
            elif nd == 0:
                rest.append((recv, batch, rx))
            else:
                due_parts.append((recv[due], batch.take(due), rx[due]))
                rest.append((recv[~due], batch.take(~due), rx[~due]))
        self.pending = rest
        self.next_rx = min(float(c[2].min()) for c in rest) if rest else math.inf
        if not due_parts:
            return None
        recv = np.concatenate([c[0] for c in due_parts])
        batch = BsmBatch.concat([c[1] for c in due_parts])
        rx = np.concatenate([c[2] for c in due_parts])
        order = np.argsort(rx, kind="stable")
        return recv[order], batch.take(order), rx[order]


_rx = st.one_of(st.floats(0.0, 3.0), st.sampled_from([0.0, -0.0, 1.0, 1.0 + 1e-12, math.inf, -math.inf, math.nan]))
_ops = st.lists(st.one_of(st.lists(_rx, max_size=4), st.floats(0.0, 4.0)), max_size=14)


@settings(max_examples=300, deadline=None)
@given(_ops)
def test_pop_matches_the_numpy_inbox(ops):
    """Push chunks (rx times with NaN, inf and signed zeros) and pop at times: the same rows, in the same order."""
    inbox, ref, msg = Inbox(), _NumpyInbox(), 0
    for op in ops:
        if isinstance(op, float):
            got, want = inbox.pop(Stream.BSM, op), ref.pop(op)
            assert (got is None) == (want is None)
            assert repr(inbox.next_rx_s.get(Stream.BSM, math.inf)) == repr(ref.next_rx)
            if got is not None and want is not None:
                for a, b in ((got[0], want[0]), (got[1].msg_id, want[1].msg_id), (got[2], want[2])):
                    assert repr(a.tolist()) == repr(b.tolist())
        else:
            n = len(op)
            ids = np.arange(msg, msg + n, dtype=np.int64)
            msg += n
            z = np.zeros(n)
            b = BsmBatch(sender=ids % 3, msg_id=ids, msg_count=ids, tx_time_s=z, timestamp_s=z, x_m=z, y_m=z,
                         speed_mps=z, heading_rad=z, accel_mps2=z, brake_flag=np.zeros(n, bool), event_flags=ids)
            rx = np.array(op, dtype=np.float64)
            inbox.push(Stream.BSM, ids % 5, b, rx)
            ref.push(ids % 5, b, rx)
