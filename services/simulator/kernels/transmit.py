"""Transmit as kernels (issue 32, stage 2): which vehicles send a BSM in a step, their message numbers and their
bus delays, in one call per step (``services.simulator.v2x.transmit`` gathers the rest of the message from the
snapshot, applies the faults and collects the links). No other body of these rules exists: the slots are
:mod:`.schedule`'s, the delays the counter-based draw of :mod:`.draws` (``BusJitter.bus_delay_s`` draws an RSU's
the same way)."""

from __future__ import annotations

import numpy as np

from services.simulator.kernels import kernel
from services.simulator.kernels.draws import keyed_uniforms
from services.simulator.kernels.schedule import due_slots, quiet_until


@kernel
def bsm_slots(t_prev: float, t_now: float, period_s: float, guard_s: float, rows: np.ndarray, phase_s: np.ndarray,
              sends: np.ndarray, keys: np.ndarray, count: np.ndarray, sender_hash: np.ndarray, delay_base: np.uint64,
              delay_max_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The BSMs of a step. ``rows``: the snapshot rows that may send (all but the ego's), ``phase_s`` their
    phases; ``sends``: per snapshot row, equipped and alive; ``keys``: per snapshot row its sender key;
    ``count``: per sender key its next message number (advanced here for every sender due); ``sender_hash``: per
    sender key its id hash; the bus delay of message ``m`` is ``delay_max_s * U(delay_base; hash, m + 1)``.
    Returns (the due rows, their message numbers, their bus delays [s], the time before which none of ``rows``
    has a slot after ``t_now``: :func:`.schedule.quiet_until`)."""
    due = due_slots(t_prev, t_now, phase_s, period_s)
    quiet = quiet_until(t_now, phase_s, period_s, guard_s)
    n = 0
    for j in range(rows.shape[0]):
        if due[j] and sends[rows[j]]:
            n += 1
    vi = np.empty(n, np.int64)
    msg_id = np.empty(n, np.int64)
    columns = np.empty((2, n), np.uint64)
    m = 0
    for j in range(rows.shape[0]):
        r = rows[j]
        if due[j] and sends[r]:
            k = keys[r]
            vi[m] = r
            msg_id[m] = count[k]
            count[k] += 1
            columns[0, m] = sender_hash[k]
            columns[1, m] = np.uint64(msg_id[m] + 1)
            m += 1
    if delay_max_s > 0.0:
        delay = delay_max_s * keyed_uniforms(np.full(n, delay_base, np.uint64), columns)
    else:
        delay = np.zeros(n)
    return vi, msg_id, delay, quiet


__all__ = ["bsm_slots"]
