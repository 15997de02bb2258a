"""Counter-based draws as a kernel (issue 32, stage 2): the engine's compiled form of
``lastv2x.core.rng.splitmix_uniforms``, the one body of every counter-keyed uniform (a link's delivery, a
message's bus delay, a fault's drop, a shadowing lattice node). The core runs that function on numpy arrays;
here numba compiles the same function, so both give the same bits (integer arithmetic mod 2**64, then the top
53 bits as a float). Its float twins on Python ints (``counter_uniform_rows``, ``LinkDraws.uniform_rows``) are
gone: one body for every batch size."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from lastv2x.core.rng import pack_counters, splitmix_uniforms
from services.simulator.kernels import kernel

#: ``splitmix_uniforms(bases, columns)`` compiled: per element its own base (a link's stream key), then the
#: counter rows of ``columns`` (shape ``(k, n)``, uint64)
keyed_uniforms = kernel(splitmix_uniforms)


def counter_uniform(base: int, *counters: Any) -> NDArray[np.float64]:
    """``lastv2x.core.rng.counter_uniform`` (same bits, same shapes) on the compiled kernel."""
    bases, columns, shape = pack_counters(base, *counters)
    return keyed_uniforms(bases, columns).reshape(shape)


__all__ = ["counter_uniform", "keyed_uniforms"]
