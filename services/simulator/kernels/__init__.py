"""The compiled engine's kernels (issue 32; the plan is ``docs/concepts/engine.md``): plain loops over
``(rows, vehicles)`` arrays, state in and state out, no Python objects, so numba compiles them to
machine code. Stage 1 ("floor"): the traffic step (:mod:`.traffic`), the signal plans
(:mod:`.signals`) and the adjudicator (:mod:`.adjudicate`). The modules that own the objects
(``services.simulator.traffic``, ``signals``, ``adjudicate``) pack their arrays for these kernels and
wrap the results; no other body of these rules exists.

**Compiled or interpreted, one body.** :func:`kernel` compiles with numba (``cache=True``: the
machine code is kept beside these files, under ``__pycache__/jit-<digest>``, and loaded by later
processes; IEEE division: ``x / 0`` is
``inf``, never an exception) unless ``LASTV2X_SIMULATOR_JIT=0``, when the same functions run as
plain Python. Compiled, a process pays about 0.6 s to import numba and 0.5 s to load the cached
code once (the first compile: a few seconds, once per machine and source version), which a service
pays at start (``SimulatorCore.warm_up``). Both give the same bits (``tests/simulator/test_engine_parity.py``):
the arithmetic is ``+ - * /``, ``sqrt`` (correctly rounded), and ``**``, ``log10``, ``exp``, ``tanh`` (libm's
either way) in the same order; never ``math.hypot``, which is libm's compiled and CPython's own as Python.

**Why a digest.** numba checks only the stamp of the file that defines a cached function, so a cached
kernel would keep the old value of a constant it imports (``COMFORT_DECEL_MPS2`` from the catalogue, the
phase codes from ``services.simulator.info``) or the old body of a kernel it calls from another file. The
cache folder is therefore named by a digest of every source the kernels read (:data:`SOURCES`): change any
of them and the kernels compile afresh. ``NUMBA_CACHE_DIR`` moves the whole cache elsewhere.

Ties follow numpy's ``minimum`` / ``maximum`` (the second operand on ties), which matters for
signed zeros only.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lastv2x.core.settings import env_flag

# SimulatorLimits.jit documents it (docs/reference/settings.md); the kernels are compiled as they are defined,
# so the module reads the variable itself, by the same rule, once
JIT = env_flag(os.environ.get("LASTV2X_SIMULATOR_JIT", "1"))

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent.parent.parent
# every source whose names the kernels read: the kernels themselves and the modules they import constants (or, for
# the counter-based draws, a whole function: lastv2x.core.rng.splitmix_uniforms) from
# (tests/simulator/test_engine_parity.py checks that the list covers the kernels' imports)
SOURCES = (*sorted(_HERE.glob("*.py")), _ROOT / "lastv2x" / "core" / "catalogue.py",
           _ROOT / "lastv2x" / "core" / "rng.py", _ROOT / "services" / "simulator" / "info.py")


def cache_dir() -> Path:
    """Where compiled kernels are cached: ``jit-<digest of SOURCES>`` under ``NUMBA_CACHE_DIR``, else under
    this package's ``__pycache__`` (the image's build fills it), else, where that is read-only (a pod's
    root file system), under the temp folder."""
    digest = hashlib.sha256()
    for path in SOURCES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    base = Path(os.environ["NUMBA_CACHE_DIR"]) if os.environ.get("NUMBA_CACHE_DIR") else _HERE / "__pycache__"
    if not os.access(base if base.exists() else base.parent, os.W_OK):
        base = Path(tempfile.gettempdir()) / "lastv2x-kernels"
    return base / f"jit-{digest.hexdigest()[:16]}"


def kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled by numba (nopython, cached on disk under :func:`cache_dir`, IEEE division), or ``fn``
    itself when ``LASTV2X_SIMULATOR_JIT=0``."""
    if not JIT:
        return fn
    import numba

    if not getattr(kernel, "_cache_set", False):  # once per process, before the first kernel is defined
        numba.config.CACHE_DIR = str(cache_dir())  # type: ignore[attr-defined]
        kernel._cache_set = True  # type: ignore[attr-defined]
    return numba.njit(cache=True, error_model="numpy", nogil=True)(fn)


__all__ = ["JIT", "SOURCES", "cache_dir", "kernel"]
