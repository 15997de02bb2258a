"""The compiled engine's kernels (issue 32; the plan is ``docs/concepts/engine.md``): plain loops over
``(rows, vehicles)`` arrays, state in and state out, no Python objects, so numba compiles them to
machine code. Stage 1 ("floor"): the traffic step (:mod:`.traffic`), the signal plans
(:mod:`.signals`) and the adjudicator (:mod:`.adjudicate`). The modules that own the objects
(``services.simulator.traffic``, ``signals``, ``adjudicate``) pack their arrays for these kernels and
wrap the results; no other body of these rules exists.

**Compiled or interpreted, one body.** :func:`kernel` compiles with numba (``cache=True``: the
machine code is kept beside these files and loaded by later processes; IEEE division: ``x / 0`` is
``inf``, never an exception) unless ``LASTV2X_SIMULATOR_JIT=0``, when the same functions run as
plain Python. Compiled, a process pays about 0.6 s to import numba and 0.5 s to load the cached
code once (the first compile: a few seconds, once per machine and source version), which a service
pays at start (``SimulatorCore.warm_up``). Both give the same bits (``tests/simulator/test_kernels.py``):
the arithmetic is ``+ - * /``, ``sqrt``, ``hypot`` and ``**`` (libm's either way) in the same order.

Ties follow numpy's ``minimum`` / ``maximum`` (the second operand on ties), which matters for
signed zeros only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from lastv2x.core.settings import env_flag

# SimulatorLimits.jit documents it (docs/reference/settings.md); the kernels are compiled as they are defined,
# so the module reads the variable itself, by the same rule, once
JIT = env_flag(os.environ.get("LASTV2X_SIMULATOR_JIT", "1"))


def kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled by numba (nopython, cached on disk, IEEE division), or ``fn`` itself when
    ``LASTV2X_SIMULATOR_JIT=0``."""
    if not JIT:
        return fn
    import numba

    return numba.njit(cache=True, error_model="numpy", nogil=True)(fn)


__all__ = ["JIT", "kernel"]
