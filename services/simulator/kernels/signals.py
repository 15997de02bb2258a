"""Fixed-time signal plans as kernels (the definition is :mod:`services.simulator.signals`'s, which wraps
them): per group, with ``u = (t + offset_s) mod cycle_s``, green on ``[0, G)``, amber on ``[G, G+A)``, red on
``[G+A, C)``, each boundary ``SIGNAL_EPS`` early; the countdown to the next phase start and to the next green
onset (0 while green)."""

from __future__ import annotations

import numpy as np

from services.simulator.info import PHASE_AMBER, PHASE_GREEN, PHASE_RED
from services.simulator.kernels import kernel

SIGNAL_EPS = 1e-9  # a phase starts this early: a plan's own boundary times fall in the new phase [s]


@kernel
def _phase_of(u: float, green_s: float, amber_s: float) -> int:
    """The phase code (0 green, 1 amber, 2 red) at position ``u`` in the cycle [s]."""
    if u < green_s - SIGNAL_EPS:
        return PHASE_GREEN
    if u < green_s + amber_s - SIGNAL_EPS:
        return PHASE_AMBER
    return PHASE_RED


@kernel
def phase_code(t_s: float, cycle_s: float, green_s: float, amber_s: float, offset_s: float) -> int:
    """The phase code of one group at ``t_s``."""
    return _phase_of((t_s + offset_s) % cycle_s, green_s, amber_s)


@kernel
def state(times_s: np.ndarray, cycle_s: np.ndarray, green_s: np.ndarray, amber_s: np.ndarray,
          offset_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(phase codes int8, time_to_change_s, time_to_green_s), each (T, R, G), at ``times_s`` (T,) for plans
    shaped (R, G)."""
    nt = times_s.shape[0]
    nr, ng = cycle_s.shape
    phase = np.empty((nt, nr, ng), np.int8)
    ttc = np.empty((nt, nr, ng))
    ttg = np.empty((nt, nr, ng))
    for k in range(nt):
        for r in range(nr):
            for g in range(ng):
                c, gr, am = cycle_s[r, g], green_s[r, g], amber_s[r, g]
                u = (times_s[k] + offset_s[r, g]) % c
                ph = _phase_of(u, gr, am)
                phase[k, r, g] = ph
                ttc[k, r, g] = gr - u if ph == PHASE_GREEN else (gr + am) - u if ph == PHASE_AMBER else c - u
                ttg[k, r, g] = 0.0 if ph == PHASE_GREEN else c - u
    return phase, ttc, ttg


__all__ = ["SIGNAL_EPS", "phase_code", "state"]
