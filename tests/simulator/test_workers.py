"""ExecuteBatch on all cores: the worker pool's size from the cgroup quota, completion-order
streaming with indices, a dead worker failing only its rows, and the same bytes as in-process."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import grpc
import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.workers import TaskError, WorkerDied, WorkerPool, cpu_limit
from lastv2x.rpc.convert import program_to_proto
from lastv2x.v1 import simulator_pb2
from services.simulator.core import SimulatorCore
from services.simulator.execute import SimulatorLimits, pool_chunks
from services.simulator.reference import reference_program
from tests.simulator.conftest import served_simulator


def _affinity() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@pytest.mark.parametrize("files, want", [
    ({"cpu.max": "150000 100000\n"}, 2),  # v2: 1.5 CPUs -> 2 workers
    ({"cpu.max": "100000 100000\n"}, 1),
    ({"cpu.max": "max 100000\n"}, None),  # v2 without a quota: the affinity mask
    ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),  # v1
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),  # v1 without a quota
    ({}, None),  # no cgroup files at all
])
def test_cpu_limit_reads_the_cgroup_quota(tmp_path: Path, files: dict[str, str], want: int | None) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    got = cpu_limit(tmp_path)
    assert got == (_affinity() if want is None else min(want, _affinity()))


def _square_or_die(i: int) -> int:
    if i == 3:
        os._exit(7)  # a crash in native code, an OOM kill: the worker is gone mid-task
    if i == 5:
        raise ValueError("five is bad")
    time.sleep(0.05)
    return i * i


def test_a_dead_worker_fails_only_its_task_and_is_replaced() -> None:
    pool = WorkerPool(2)
    try:
        got = dict(pool.imap_unordered(_square_or_die, [(i,) for i in range(8)]))
        assert sorted(got) == list(range(8))  # every task answered once, with its index
        assert isinstance(got[3], WorkerDied) and got[3].exitcode == 7 and "exit code 7" in got[3].message()
        assert isinstance(got[5], TaskError) and isinstance(got[5].error, ValueError) and "five" in got[5].text
        assert {i: v for i, v in got.items() if i not in (3, 5)} == {i: i * i for i in range(8) if i not in (3, 5)}
        assert dict(pool.imap_unordered(_square_or_die, [(2,)])) == {0: 4}  # the pool still serves
    finally:
        pool.close()


def test_pooled_batch_gives_the_in_process_bytes() -> None:
    programs = [reference_program(a, seed=i) for i, a in enumerate(Application)]
    seeds = [p.seed for p in programs]
    one = SimulatorCore(SimulatorLimits(workers=1))
    two = SimulatorCore(SimulatorLimits(workers=2))

    def run(core: SimulatorCore) -> dict[int, bytes]:
        out = {}
        for first, outs in core.execute_batch(programs, seeds, chunk=2):
            for i, o in enumerate(outs, first):
                out[i] = o.to_json_bytes()  # type: ignore[union-attr]
        return out

    a, b = run(one), run(two)
    assert sorted(b) == list(range(len(programs))) and a == b


@pytest.fixture(scope="module")
def pooled_sim():
    with served_simulator(SimulatorLimits(max_duration_s=60.0, workers=2, max_batch=16)) as stub:
        yield stub


def _batch(n: int) -> simulator_pb2.ExecuteBatchRequest:
    apps = list(Application)
    return simulator_pb2.ExecuteBatchRequest(requests=[
        simulator_pb2.ExecuteRequest(program=program_to_proto(reference_program(apps[i % 6], seed=i)))
        for i in range(n)])


def test_killing_a_worker_mid_batch_fails_only_its_rows(pooled_sim) -> None:
    replies = []
    killed: list[int] = []
    batch = _batch(16)
    for i, req in enumerate(batch.requests):  # chunk 1 (programs 0-7) short, chunk 2 twenty times longer:
        req.program.duration_s = 3.0 if i < 8 else 60.0  # when chunk 1 is back, chunk 2 is still running
    for r in pooled_sim.ExecuteBatch(batch, timeout=300):
        replies.append(r)
        if not killed:  # the first chunk is back: kill the workers still running chunks
            for p in multiprocessing.active_children():
                if p.name == "lastv2x-worker":
                    p.kill()
                    killed.append(p.pid)  # type: ignore[arg-type]
    assert killed
    assert sorted(r.index for r in replies) == list(range(16))  # every program answered once
    failed = [r for r in replies if r.error]
    ok = [r for r in replies if not r.error]
    assert failed and ok
    for r in failed:
        assert "worker process" in r.error and "died" in r.error and not r.HasField("outcome")
    for r in ok:
        assert r.outcome.outcome_sha256
    again = list(pooled_sim.ExecuteBatch(_batch(16), timeout=300))  # the pool replaced its workers
    assert sorted(r.index for r in again) == list(range(16)) and not any(r.error for r in again)


def test_limits_still_answer_invalid_argument_in_the_pool(pooled_sim) -> None:
    with pytest.raises(grpc.RpcError) as info:
        list(pooled_sim.ExecuteBatch(_batch(17), timeout=60))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    bad = _batch(12)
    bad.requests[10].program.duration_s = 600.0
    with pytest.raises(grpc.RpcError) as info:
        list(pooled_sim.ExecuteBatch(bad, timeout=60))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(("n", "workers", "chunk", "want"), [
    (12, 2, 8, [0, 6]),  # a campaign's generation after gating: 6 + 6, not 8 + 4
    (8, 2, 8, [0, 4]),  # one chunk's worth: both workers, not one core
    (7, 2, 8, [0, 4]),
    (24, 2, 8, [0, 8, 16]),  # a large batch: chunks of ``chunk``, handed out as workers free up
    (5, 1, 8, [0]),
    (3, 4, 8, [0, 1, 2]),
    (0, 2, 8, []),
])
def test_pool_chunks_gives_every_worker_a_share(n: int, workers: int, chunk: int, want: list[int]) -> None:
    assert pool_chunks(n, workers, chunk) == want


def test_run_batch_on_workers_keeps_request_order_and_bytes() -> None:
    """What the search service's in-process fan-out calls: the pool's chunks back in request order."""
    from services.simulator.execute import run_batch, run_batch_on_workers

    programs = [reference_program(a, seed=i) for i, a in enumerate(Application)]
    seeds = [p.seed for p in programs]
    here = [o.to_json_bytes() for o in run_batch(programs, seeds, SimulatorLimits(workers=1))]
    pooled = run_batch_on_workers(programs, seeds, SimulatorLimits(workers=2), chunk=2)
    assert [o.to_json_bytes() for o in pooled] == here  # type: ignore[union-attr]


def test_a_stopped_pooled_batch_runs_no_further_chunk() -> None:
    """ExecuteBatch's deadline on the pool: once ``stop()`` is true no chunk is handed out, the running
    ones are abandoned (their workers replaced) and the call ends with Cancelled."""
    from lastv2x.core.errors import Cancelled

    programs = [reference_program(list(Application)[i % 6], seed=i) for i in range(24)]
    core = SimulatorCore(SimulatorLimits(workers=2))
    got: list[int] = []
    with pytest.raises(Cancelled, match="chunks not run"):
        for first, outs in core.execute_batch(programs, [None] * 24, chunk=4, stop=lambda: bool(got)):
            got.extend(range(first, first + len(outs)))
    # the first chunk back (and the other one, had it finished in the same instant); none started after
    assert len(got) in (4, 8)
    again = list(core.execute_batch(programs[:8], [None] * 8, chunk=4))  # the pool serves again
    assert sorted(f for f, _ in again) == [0, 4]
