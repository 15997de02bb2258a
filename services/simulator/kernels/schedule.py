"""Message schedules as kernels (issue 32, stage 2): a sender transmits on ``phase + k * period``; which senders
have a slot in ``(t_prev, t_now]`` (:func:`due_slots`), and a time before which none has one after ``t_now``
(:func:`quiet_until`). ``services.simulator.v2x.messages`` (``due_mask``, ``quiet_until_s``) wraps them; their
numpy body and their float twin for small sender sets are gone: one body for every batch size."""

from __future__ import annotations

import math

import numpy as np

from services.simulator.kernels import kernel

SLOT_TOLERANCE = 1e-9  # a slot counts from this early: t exactly on phase + k * period is in slot k


@kernel
def due_slots(t_prev: float, t_now: float, phase_s: np.ndarray, period_s: float) -> np.ndarray:
    """Per sender: is there a slot ``phase + k * period`` in ``(t_prev, t_now]``? (A non-finite phase: never.)"""
    n = phase_s.shape[0]
    out = np.empty(n, np.bool_)
    for i in range(n):
        p = phase_s[i]
        out[i] = np.floor((t_now - p) / period_s + SLOT_TOLERANCE) > np.floor((t_prev - p) / period_s + SLOT_TOLERANCE)
    return out


@kernel
def quiet_until(t_now: float, phase_s: np.ndarray, period_s: float, guard_s: float) -> float:
    """The earliest next slot after ``t_now`` over the senders (each one's slot ``k`` at ``t_now`` as
    :func:`due_slots` counts it, then ``phase + (k + 1) * period``), ``guard_s`` earlier; -inf when a phase is not
    finite, +inf without senders."""
    first = math.inf
    for i in range(phase_s.shape[0]):
        p = phase_s[i]
        a = (t_now - p) / period_s + SLOT_TOLERANCE
        if not math.isfinite(a):
            return -math.inf
        nxt = p + (np.floor(a) + 1 - SLOT_TOLERANCE) * period_s
        first = nxt if nxt < first else first
    return first - guard_s
