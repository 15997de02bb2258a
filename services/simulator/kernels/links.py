"""Which radio links a step puts on the air, as kernels (issue 32, stage 2). ``services.simulator.v2x.links``
gathers the step's links and calls these; no other body of these rules exists.

:func:`relay_pairs`: the (EEBL record, relay candidate) pairs of V2V rebroadcast, record-major: every equipped
vehicle but the ego and the record's carrier, within the channel's range ``R`` of the carrier (a link beyond
``R`` is lost anyway: the noise floor). The range test is ``hypot(dx, dy) <= R`` decided on the squared length
outside a relative guard band of 1e-9 (where that square is a normal number) and on ``np.hypot`` (libm's,
compiled or not) otherwise.
"""

from __future__ import annotations

import numpy as np

from services.simulator.kernels import kernel

GUARD_BAND = 1e-9  # relative band around R * R inside which the squared length does not decide the range test
TINY_M2 = 1e-290  # squared lengths at or below this are not compared on squares (near the subnormals)


@kernel
def relay_pairs(carrier: np.ndarray, candidates: np.ndarray, x_m: np.ndarray, y_m: np.ndarray,
                range_m: float) -> np.ndarray:
    """(record, candidate row) pairs, shape (m, 2): for each record ``r`` (its carrier's row ``carrier[r]``, -1: the
    carrier is not in the snapshot, no pair) each candidate row ``c`` (in the order given) other than the carrier
    within ``range_m`` of it; ``x_m``, ``y_m`` the snapshot's positions by row."""
    lo2 = range_m * range_m * (1.0 - GUARD_BAND)
    hi2 = range_m * range_m * (1.0 + GUARD_BAND)
    out = np.empty((carrier.shape[0] * candidates.shape[0], 2), np.int64)
    m = 0
    for r in range(carrier.shape[0]):
        ci = carrier[r]
        if ci < 0:
            continue
        for j in range(candidates.shape[0]):
            c = candidates[j]
            if c == ci:
                continue
            dx = x_m[ci] - x_m[c]
            dy = y_m[ci] - y_m[c]
            q = dx * dx + dy * dy
            # on the squares only where they are exact enough: a square near the subnormals has lost its
            # relative precision (a 1e-169 m gap squares to 0); NaN falls through to hypot
            if q > TINY_M2 and q <= lo2:
                within = True
            elif q > TINY_M2 and q > hi2:
                within = False
            else:
                within = np.hypot(dx, dy) <= range_m
            if within:
                out[m, 0] = r
                out[m, 1] = c
                m += 1
    return out[:m]


__all__ = ["GUARD_BAND", "TINY_M2", "relay_pairs"]
