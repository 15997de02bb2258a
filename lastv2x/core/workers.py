"""A pool of worker processes sized to the container's CPU limit, streaming in completion order.

The simulator is CPU-bound Python: one process uses one core. ``WorkerPool`` runs picklable
tasks in ``n`` long-lived worker processes (``spawn``: no inherited gRPC threads or locks) and
hands results back as they complete, each with the index of its task. A worker that dies
(killed, out of memory, a crash in native code) fails only the task it held: that task's
result is a :class:`WorkerDied` naming the exit code, a fresh worker takes its place, and the
other tasks are unaffected.

``cpu_limit()`` is the number of cores this process may use: the cgroup v2 quota
(``/sys/fs/cgroup/cpu.max``), else the cgroup v1 CFS quota (``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``), rounded up, capped by the CPU affinity mask (``os.sched_getaffinity``);
without a quota the affinity mask, else ``os.cpu_count()``. A pod limited to 2 CPUs on a
64-core node gets 2 workers, not 64.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _quota(root: Path) -> float | None:
    """CPUs the cgroup quota allows (fractional), None without a quota."""
    try:  # cgroup v2: "<quota> <period>" or "max <period>"
        quota_s, period_s = (root / "cpu.max").read_text().split()[:2]
        return None if quota_s == "max" else int(quota_s) / int(period_s)
    except (OSError, ValueError):
        pass
    for d in (root / "cpu", root / "cpu,cpuacct"):  # cgroup v1: quota -1 = none
        try:
            quota = int((d / "cpu.cfs_quota_us").read_text())
            period = int((d / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        return None if quota <= 0 or period <= 0 else quota / period
    return None


def cpu_limit(root: Path = CGROUP_ROOT) -> int:
    """Cores this process may use: the cgroup CPU quota (rounded up) capped by the affinity mask."""
    cores = _affinity()
    q = _quota(root)
    return max(1, cores if q is None else min(cores, math.ceil(q - 1e-9)))


@dataclass(frozen=True)
class WorkerDied:
    """The worker running a task exited before answering (``exitcode``: negative = killed by that signal)."""

    exitcode: int | None

    def message(self) -> str:
        how = f"killed by signal {-self.exitcode}" if self.exitcode is not None and self.exitcode < 0 \
            else f"exit code {self.exitcode}"
        return f"the worker process running it died ({how}); the other rows are unaffected"


@dataclass(frozen=True)
class TaskError:
    """The task raised in its worker: the exception object when it pickles, else its text."""

    error: BaseException | None
    text: str


def _serve(conn: Connection) -> None:  # the worker's loop: (fn, args) in, ("ok" | "err", value) out
    while True:
        try:
            item = conn.recv()
        except EOFError:
            return
        if item is None:
            return
        fn, args = item
        try:
            conn.send(("ok", fn(*args)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            try:
                conn.send(("err", exc, text))
            except Exception:  # noqa: BLE001 - the exception does not pickle: its text does
                conn.send(("err", None, text))


class _Worker:
    def __init__(self, ctx: Any):
        parent, child = ctx.Pipe()
        self.conn: Connection = parent
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True, name="lastv2x-worker")
        self.proc.start()
        child.close()

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=5)
        self.conn.close()


class WorkerPool:
    """``n`` worker processes shared by every caller (thread-safe); see the module docstring."""

    def __init__(self, n: int, start_method: str = "spawn"):
        self.n = max(1, n)
        self._ctx = multiprocessing.get_context(start_method)
        self._idle: list[_Worker] = []
        self._started = 0
        self._cond = threading.Condition()
        self._closed = False

    def _checkout(self, block: bool) -> _Worker | None:
        """An idle worker, or a new one while under ``n``; else wait (``block``) or None. A caller
        that holds busy workers never blocks here: it reads its results first (no deadlock between
        callers each waiting for the other's worker)."""
        with self._cond:
            while True:
                if self._closed:
                    raise RuntimeError("the worker pool is closed")
                while self._idle:
                    w = self._idle.pop()
                    if w.proc.is_alive():
                        return w
                    self._started -= 1  # died while idle: its slot is free again
                    w.conn.close()
                if self._started < self.n:
                    self._started += 1
                    break
                if not block:
                    return None
                self._cond.wait()
        try:
            return _Worker(self._ctx)
        except BaseException:
            with self._cond:
                self._started -= 1
                self._cond.notify()
            raise

    def _checkin(self, w: _Worker | None) -> None:
        """Back to the idle list; None: the worker died or was stopped (its slot is free again)."""
        with self._cond:
            if w is None or self._closed:
                self._started -= 1
            else:
                self._idle.append(w)
            self._cond.notify()
        if w is not None and self._closed:
            w.stop()

    def imap_unordered(self, fn: Callable[..., Any], tasks: Iterable[tuple[Any, ...]],
                       stop: Callable[[], bool] | None = None) -> Iterator[tuple[int, Any]]:
        """``(task index, fn(*task))`` in completion order; the value is a :class:`TaskError` when the
        task raised and a :class:`WorkerDied` when its worker died. ``stop()`` is asked before each task
        is handed out: once true no further task starts, the running ones are killed (their workers
        replaced) and the iterator ends (the caller knows which indices it got)."""
        pending = list(enumerate(tasks))
        pending.reverse()
        busy: dict[Connection, tuple[int, _Worker]] = {}
        try:
            while pending or busy:
                if stop is not None and stop():
                    return
                while pending and len(busy) < self.n:
                    w = self._checkout(block=not busy)
                    if w is None:
                        break  # all workers busy: wait for one of ours to answer
                    i, args = pending[-1]
                    try:
                        w.conn.send((fn, args))
                    except OSError:  # the worker died while idle: replace it, send the task again
                        w.stop(kill=True)
                        self._checkin(None)
                        continue
                    except BaseException:  # the task does not pickle: the caller's error
                        self._checkin(w)
                        raise
                    pending.pop()
                    busy[w.conn] = (i, w)
                ready = wait(list(busy) + [w.proc.sentinel for _, w in busy.values()], timeout=1.0)
                for r in ready:
                    if isinstance(r, Connection) and r in busy:
                        i, w = busy.pop(r)
                        try:
                            msg = r.recv()
                        except (EOFError, OSError):
                            w.proc.join(timeout=5)
                            w.stop(kill=True)
                            self._checkin(None)
                            yield i, WorkerDied(w.proc.exitcode)
                            continue
                        self._checkin(w)
                        yield i, (msg[1] if msg[0] == "ok" else TaskError(msg[1], msg[2]))
                for conn, (i, w) in list(busy.items()):
                    if not w.proc.is_alive() and not conn.poll():
                        busy.pop(conn)
                        w.stop(kill=True)
                        self._checkin(None)
                        yield i, WorkerDied(w.proc.exitcode)
        finally:
            for _i, w in busy.values():  # stopped early: the tasks still running are abandoned
                w.stop(kill=True)
                self._checkin(None)

    def run_on_each(self, fn: Callable[..., Any], args: tuple[Any, ...] = ()) -> list[Any]:
        """``fn(*args)`` once in each of the ``n`` workers, starting those not running yet (a warm-up before
        the first request: imports, caches). One result per worker; a :class:`TaskError` when it raised, a
        :class:`WorkerDied` when its worker died (its slot is freed: the next use starts a new one)."""
        held: list[_Worker] = []
        dead: set[int] = set()
        try:
            while len(held) < self.n:
                w = self._checkout(block=True)
                assert w is not None  # block=True waits for one
                held.append(w)
            for k, w in enumerate(held):
                try:
                    w.conn.send((fn, args))
                except OSError:
                    dead.add(k)
            out: list[Any] = []
            for k, w in enumerate(held):
                try:
                    if k in dead:
                        raise EOFError
                    msg = w.conn.recv()
                except (EOFError, OSError):
                    dead.add(k)
                    w.stop(kill=True)
                    out.append(WorkerDied(w.proc.exitcode))
                    continue
                out.append(msg[1] if msg[0] == "ok" else TaskError(msg[1], msg[2]))
            return out
        finally:
            for k, w in enumerate(held):
                self._checkin(None if k in dead else w)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for w in idle:
            w.stop()


_SHARED: dict[int, WorkerPool] = {}
_SHARED_LOCK = threading.Lock()


def shared_pool(n: int) -> WorkerPool:
    """The process-wide pool of ``n`` workers (started lazily, one per size, closed at exit)."""
    with _SHARED_LOCK:
        pool = _SHARED.get(n)
        if pool is None:
            if not _SHARED:
                import atexit

                atexit.register(_close_all)
            pool = _SHARED[n] = WorkerPool(n)
        return pool


def _close_all() -> None:
    with _SHARED_LOCK:
        pools = list(_SHARED.values())
        _SHARED.clear()
    for p in pools:
        p.close()


__all__ = ["TaskError", "WorkerDied", "WorkerPool", "cpu_limit", "shared_pool"]
