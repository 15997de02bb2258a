"""The cyclic garbage collector's first generation, widened while paired execution's step loops run.

A step makes a few dozen short-lived objects per row (snapshots, beliefs, message batches), and a batch
whose V2X rows are observed together holds all its rows' at once: at CPython's default threshold (700)
a 64-program batch ran a young collection nearly every step, each walking objects that reference counting
frees a moment later (385 collections, 550 ms of a 64-program V2X batch; 13 and 104 ms widened).
"""

from __future__ import annotations

import gc
import threading

GC_YOUNG_PER_ROW = 300  # first-generation threshold per row of a running step loop (~15 steps of a row's objects)
_lock = threading.Lock()
_loops = 0  # step loops running in this process (threads)
_saved: tuple[int, int, int] | None = None  # the thresholds before the first of them


def widen_young_gc(rows: int) -> None:
    """Raise the first-generation threshold to ``GC_YOUNG_PER_ROW`` per row of a step loop that starts; while
    other loops run (other threads), the first one's setting holds. Never lowers a threshold, never enables a
    collector switched off (threshold 0). Pair every call with :func:`restore_young_gc`."""
    global _loops, _saved
    with _lock:
        if _loops == 0:
            _saved = gc.get_threshold()
            young = GC_YOUNG_PER_ROW * rows
            if 0 < _saved[0] < young:
                gc.set_threshold(young, *_saved[1:])
        _loops += 1


def restore_young_gc() -> None:
    """A step loop ended: when it was the last one running, the thresholds from before come back."""
    global _loops, _saved
    with _lock:
        _loops -= 1
        if _loops == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            _saved = None
