"""Backpressure and deadlines (issue 16, item 5), over real gRPC on loopback.

A service holds at most ``max_concurrent_rpcs`` calls; one more is refused at once with
RESOURCE_EXHAUSTED and a ``google.rpc.RetryInfo``; health checks are never refused. A call
whose deadline passes stops the work done for it: ExecuteBatch between chunks of programs
(counted through a hook on the batch runner, not timed), a call waiting for a worker, a
server stream between responses, STRaP's Ingest between chunks and Reduce between stages.
"""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import services.simulator.core as sim_core
from lastv2x.core.catalogue import Application
from lastv2x.core.errors import Cancelled
from lastv2x.rpc.convert import program_to_proto
from lastv2x.rpc.errors import retry_delay_s
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import simulator_pb2, simulator_pb2_grpc
from services.simulator.execute import SimulatorLimits
from services.simulator.reference import reference_program
from services.simulator.servicer import register


class BatchHook:
    """Stands in for the batch runner: records when each chunk started and blocks or sleeps."""

    def __init__(self, sleep_s: float = 0.0):
        self.sleep_s = sleep_s
        self.release = threading.Event()
        self.entered = threading.Event()
        self.starts: list[tuple[float, int]] = []  # (monotonic start, programs)
        self.block = False

    def __call__(self, programs, seeds, limits, app=None):  # type: ignore[no-untyped-def]
        self.starts.append((time.monotonic(), len(programs)))
        self.entered.set()
        if self.block:
            self.release.wait(30)
        time.sleep(self.sleep_s)
        return [_OUTCOME] * len(programs)


_OUTCOME = None


@pytest.fixture(scope="module")
def outcome():
    """One real outcome, reused by the hook (the hook counts; it need not simulate)."""
    global _OUTCOME
    from services.simulator.execute import run_one

    _OUTCOME = run_one(reference_program(Application.RLVW), None, SimulatorLimits(), False, None)[0]
    return _OUTCOME


def _serve(config: ServerConfig):
    # one worker: the hooks stand in for run_batch in this process (the pool's own stop between chunks:
    # tests/simulator/test_workers.py)
    server, port = create_server(config, lambda s: register(s, SimulatorLimits(max_duration_s=60.0, workers=1)))
    server.start()
    return server, port


def _batch(n: int) -> simulator_pb2.ExecuteBatchRequest:
    program = program_to_proto(reference_program(Application.RLVW))
    return simulator_pb2.ExecuteBatchRequest(requests=[simulator_pb2.ExecuteRequest(program=program)] * n)


def _wait(predicate, timeout_s: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def _count(server, method: str, code: str) -> float:  # type: ignore[no-untyped-def]
    value = server.metrics.registry.get_sample_value(
        "lastv2x_rpc_calls_total", {"service": "simulator", "method": method, "code": code})
    return value or 0.0


def test_a_call_over_the_cap_is_refused_with_retry_advice(monkeypatch, outcome) -> None:
    hook = BatchHook()
    hook.block = True
    monkeypatch.setattr(sim_core, "run_batch", hook)
    server, port = _serve(ServerConfig("simulator", log_json=False, max_concurrent_rpcs=1, retry_after_s=2.5))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            sim = simulator_pb2_grpc.SimulatorServiceStub(channel)
            first = sim.ExecuteBatch(_batch(1), timeout=30)
            got: list[object] = []
            reader = threading.Thread(target=lambda: got.extend(first))
            reader.start()
            assert hook.entered.wait(10)
            with pytest.raises(grpc.RpcError) as info:
                list(sim.ExecuteBatch(_batch(1), timeout=10))
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert retry_delay_s(info.value) == pytest.approx(2.5)
            assert "LASTV2X_MAX_CONCURRENT_RPCS" in info.value.details()
            health = health_pb2_grpc.HealthStub(channel)  # probes are never refused
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == \
                health_pb2.HealthCheckResponse.SERVING
            hook.release.set()
            reader.join(10)
            assert len(got) == 1
            assert len(list(sim.ExecuteBatch(_batch(1), timeout=30))) == 1  # a slot again
        assert _count(server, "/lastv2x.v1.SimulatorService/ExecuteBatch", "RESOURCE_EXHAUSTED") == 1
        assert server.runtime.admission.held == 0
    finally:
        hook.release.set()
        server.stop(0)


def test_an_expired_batch_stops_computing(monkeypatch, outcome) -> None:
    hook = BatchHook(sleep_s=0.6)  # 8 programs per chunk, 0.6 s each: 64 programs would take 4.8 s
    monkeypatch.setattr(sim_core, "run_batch", hook)
    server, port = _serve(ServerConfig("simulator", log_json=False))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            sim = simulator_pb2_grpc.SimulatorServiceStub(channel)
            replies = []
            begun = time.monotonic()
            with pytest.raises(grpc.RpcError) as info:
                for r in sim.ExecuteBatch(_batch(64), timeout=2.0):
                    replies.append(r)
            deadline = begun + 2.0
            assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert [r.index for r in replies] == list(range(len(replies)))  # streamed per chunk, in order
            assert replies and len(replies) % 8 == 0
        method = "/lastv2x.v1.SimulatorService/ExecuteBatch"
        assert _wait(lambda: _count(server, method, "DEADLINE_EXCEEDED") == 1)  # the handler ended
        after = sum(n for t, n in hook.starts if t > deadline + 0.05)
        assert after == 0, f"{after} programs started after the deadline"
        assert sum(n for _, n in hook.starts) < 64
        assert server.runtime.admission.held == 0
    finally:
        server.stop(0)


def test_a_call_waiting_for_a_worker_leaves_at_its_deadline(monkeypatch, outcome) -> None:
    hook = BatchHook()
    hook.block = True
    monkeypatch.setattr(sim_core, "run_batch", hook)
    server, port = _serve(ServerConfig("simulator", log_json=False, max_workers=1, max_concurrent_rpcs=4))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            sim = simulator_pb2_grpc.SimulatorServiceStub(channel)
            first = sim.ExecuteBatch(_batch(1), timeout=30)
            reader = threading.Thread(target=lambda: list(first))
            reader.start()
            assert hook.entered.wait(10)
            with pytest.raises(grpc.RpcError) as info:
                list(sim.ExecuteBatch(_batch(1), timeout=0.5))  # waits: the one worker is busy
            assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert _wait(lambda: server.runtime.admission.held == 1)  # it left the queue
            assert len(hook.starts) == 1  # and never ran
            hook.release.set()
            reader.join(10)
        assert _wait(lambda: server.runtime.admission.held == 0)
    finally:
        hook.release.set()
        server.stop(0)


def test_search_watch_stops_when_its_watcher_goes_away() -> None:
    """No event for a while and the watcher gone: the watch ends within a poll, not at the next event."""
    from types import SimpleNamespace

    from services.search.core import SearchCore

    live = SimpleNamespace(changed=threading.Condition(), events=[], state="running")
    core = SimpleNamespace(store=SimpleNamespace(get_campaign=lambda _id: None), _live={"c1": live},
                           get=lambda _id: None)
    gone = threading.Event()
    out: list[object] = []
    watcher = threading.Thread(target=lambda: out.extend(SearchCore.watch(core, "c1", stop=gone.is_set,  # type: ignore[arg-type]
                                                                         poll_s=0.05)))
    watcher.start()
    time.sleep(0.2)
    assert watcher.is_alive()  # waiting for events
    gone.set()
    watcher.join(2)
    assert not watcher.is_alive() and out == []


def test_strap_reduce_stops_between_stages(tmp_path) -> None:
    from types import SimpleNamespace

    from services.strap.reduce import ReduceParams
    from services.strap.store import StrapStore

    fake = SimpleNamespace(get=lambda _id: SimpleNamespace(format="mcap", path="/nonexistent/never-read.mcap"),
                           _lock=threading.Lock(), _reductions={})
    asked: list[int] = []
    with pytest.raises(Cancelled):  # stopped before reading (the path would not open)
        StrapStore.reduce(fake, "rec", "", ReduceParams(), lambda: asked.append(1) or True)  # type: ignore[arg-type]
    assert asked == [1]


class CostHook:
    """Stands in for the simulator: a vectorized batch costs ``base_s`` plus ``per_program_s`` a program
    (both the batched path and a single run), so a coalesced Execute costs what its batch costs."""

    def __init__(self, base_s: float, per_program_s: float):
        self.base_s, self.per_program_s = base_s, per_program_s

    def batch(self, programs, seeds, limits, app=None):  # type: ignore[no-untyped-def]
        time.sleep(self.base_s + self.per_program_s * len(programs))
        return [_OUTCOME] * len(programs)

    def one(self, program, seed, limits, write_trace=False, app=None, backend=""):  # type: ignore[no-untyped-def]
        return self.batch([program], [seed], limits)[0], ""


def test_overload_admitted_calls_end_near_their_deadline(monkeypatch, outcome) -> None:
    """Issue 41: 64 hostile clients for 60 s, 20 admitted calls ran up to 6.5 s past their 10 s deadline.
    Here 48 clients hammer Execute (deadline 1 s) on a server holding 16 calls, 8 running, for ~3 s:
    backpressure refuses with RetryInfo, and no admitted call's handler runs far past its deadline
    (target: <= 10 % of it; asserted with a generous bound, the figure printed)."""
    from lastv2x.rpc import server as rpc_server

    hook = CostHook(base_s=0.2, per_program_s=0.05)
    monkeypatch.setattr(sim_core, "run_batch", hook.batch)
    monkeypatch.setattr(sim_core, "run_one", hook.one)
    deadline_s, clients, run_s = 1.0, 48, 3.0
    overruns: list[float] = []  # per admitted call: seconds its handler ran past its deadline (<= 0: in time)
    codes: dict[str, int] = {}
    record = rpc_server.RuntimeInterceptor._record

    def measured(self, method, context, start, extra=None):  # type: ignore[no-untyped-def]
        # grpcio clamps time_remaining() at 0: the handler's own time against the deadline instead
        if method.endswith("/Execute") and rpc_server._code_name(context) != "RESOURCE_EXHAUSTED":
            overruns.append(time.perf_counter() - start - deadline_s)
        return record(self, method, context, start, extra)

    monkeypatch.setattr(rpc_server.RuntimeInterceptor, "_record", measured)
    server, port = _serve(ServerConfig("simulator", log_json=False, max_workers=8, max_concurrent_rpcs=16,
                                       retry_after_s=0.1))
    request = simulator_pb2.ExecuteRequest(program=program_to_proto(reference_program(Application.RLVW)))
    lock = threading.Lock()
    retry_advised: list[float] = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            sim = simulator_pb2_grpc.SimulatorServiceStub(channel)
            end = time.monotonic() + run_s

            def client() -> None:
                while time.monotonic() < end:
                    try:
                        sim.Execute(request, timeout=deadline_s)
                        code = "OK"
                    except grpc.RpcError as exc:
                        code = exc.code().name
                        if exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                            retry_advised.append(retry_delay_s(exc) or 0.0)
                            time.sleep(0.01)  # hostile: ignores the advice
                    with lock:
                        codes[code] = codes.get(code, 0) + 1

            threads = [threading.Thread(target=client) for _ in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(run_s + 30)
        assert _wait(lambda: server.runtime.admission.held == 0, 30)  # every handler has ended
    finally:
        server.stop(0)
    worst = max(overruns)
    late = sum(1 for o in overruns if o > 0.1 * deadline_s)
    print(f"\n{len(overruns)} calls ran, codes {codes}; worst overrun {worst:.3f} s "
          f"({100 * worst / deadline_s:.0f} % of the {deadline_s} s deadline), {late} over 10 %")
    assert codes.get("OK", 0) > 0 and codes.get("RESOURCE_EXHAUSTED", 0) > 0
    assert retry_advised and all(r > 0 for r in retry_advised)  # backpressure: RetryInfo on each refusal
    assert worst <= 0.5 * deadline_s, f"an admitted call ran {worst:.2f} s past its {deadline_s} s deadline"


def test_the_coalescer_lead_hands_over_and_an_ended_call_leaves_the_queue(monkeypatch, outcome) -> None:
    """The caller that runs a coalesced batch stops leading once its own program has its outcome (the
    queue passes to a waiting caller, whose handler runs it), and a queued call whose deadline passed
    leaves at once with Cancelled, its program never run."""
    from services.simulator.core import SimulatorCore

    batches: list[tuple[str, list[int]]] = []  # (thread that ran it, seeds)
    first = threading.Event()
    release = threading.Event()

    def run_batch(programs, seeds, limits, app=None):  # type: ignore[no-untyped-def]
        batches.append((threading.current_thread().name, list(seeds)))
        first.set()
        release.wait(10)
        return [_OUTCOME] * len(programs)

    monkeypatch.setattr(sim_core, "run_batch", run_batch)
    monkeypatch.setattr(sim_core, "run_one", lambda p, s, limits, *a, **k: run_batch([p], [s], limits))
    core = SimulatorCore(SimulatorLimits())
    program = reference_program(Application.RLVW)
    ended = threading.Event()
    results: dict[str, object] = {}

    def call(name: str, seed: int, stop=None) -> None:  # type: ignore[no-untyped-def]
        try:
            results[name] = core.execute(program, seed, stop=stop)[0]
        except Cancelled as exc:
            results[name] = exc
    lead = threading.Thread(target=call, args=("lead", 1), name="lead")
    lead.start()
    assert first.wait(10)  # the lead's own batch runs (and blocks)
    others = [threading.Thread(target=call, args=("waiter", 2), name="waiter"),
              threading.Thread(target=call, args=("ended", 3, ended.is_set), name="ended")]
    for t in others:
        t.start()
    time.sleep(0.2)
    ended.set()  # its deadline passes while it waits in the queue
    assert _wait(lambda: isinstance(results.get("ended"), Cancelled), 5)
    release.set()
    for t in [lead, *others]:
        t.join(10)
    assert results["lead"] is _OUTCOME and results["waiter"] is _OUTCOME
    assert batches == [("lead", [1]), ("waiter", [2])]  # the waiter ran its own program; 3 never ran
