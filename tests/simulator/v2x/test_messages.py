"""Counting the messages of a row-per-item batch (SPaT: a row per group, MAP: a row per lane)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from services.simulator.v2x.messages import message_count, message_start_rows, message_starts


@dataclass
class _Rows:
    sender: np.ndarray
    msg_id: np.ndarray

    def __len__(self) -> int:
        return int(self.sender.shape[0])


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=40))
def test_count_and_start_rows_agree_with_message_starts(rows: list[tuple[int, int]]) -> None:
    """Both paths (Python rows up to 16, numpy above), the empty batch included: no rows, no message."""
    b = _Rows(np.array([s for s, _ in rows], np.int64), np.array([m for _, m in rows], np.int64))
    starts = message_starts(b.sender, b.msg_id)
    assert message_count(b) == int(starts.sum())  # type: ignore[arg-type]
    assert message_start_rows(b) == np.nonzero(starts)[0].tolist()  # type: ignore[arg-type]
    assert (message_count(b) == 0) == (not rows)  # type: ignore[arg-type]
