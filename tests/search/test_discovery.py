"""Replica discovery from EndpointSlices, against a local HTTP server that speaks the real
Kubernetes API for exactly the calls the watcher makes (no API server runs on these machines):
list with ``labelSelector`` (an EndpointSliceList with ``metadata.resourceVersion``), the same
with ``watch=true`` streaming newline-delimited ADDED / MODIFIED / DELETED / BOOKMARK events
(chunked, as the API server does), and ``410 Gone`` when the asked version was compacted away
(an ERROR event in the stream, or the HTTP status). The kubernetes client is pointed at it with
``Configuration(host=...)``. Plus the pipeline's side: channels added and drained at runtime."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import grpc
import pytest

kubernetes = pytest.importorskip("kubernetes", reason="the kubernetes client (extra 'k8s') is not installed")

from kubernetes import client  # noqa: E402

from lastv2x.core.program import ScenarioProgram  # noqa: E402
from lastv2x.core.synthetic import program_from_spec_on_straight_roads  # noqa: E402
from lastv2x.v1 import simulator_pb2, simulator_pb2_grpc  # noqa: E402
from services.search.discovery import EndpointSliceWatcher, parse_service_ref, slice_endpoints  # noqa: E402
from services.search.pipeline import ExecutionRequest  # noqa: E402
from services.search.remote import GrpcPipeline  # noqa: E402
from services.search.servicer import watch_simulator_replicas  # noqa: E402
from services.search.settings import SearchSettings  # noqa: E402
from tests.search.conftest import rlvw_failing_spec  # noqa: E402

NS, SVC = "lastv2x", "lastv2x-simulator-pods"
PATH = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
SELECTOR = f"kubernetes.io/service-name={SVC}"


def endpoint_slice(name: str, pods: dict[str, bool | None], port: int = 50051) -> dict[str, Any]:
    """An EndpointSlice as the API serves it; ``pods``: address -> conditions.ready (None: unset)."""
    return {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
            "metadata": {"name": name, "namespace": NS, "labels": {"kubernetes.io/service-name": SVC}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [a], "conditions": {} if ready is None else {"ready": ready},
                           "targetRef": {"kind": "Pod", "name": f"sim-{a}"}} for a, ready in pods.items()] or None,
            "ports": [{"name": "grpc", "protocol": "TCP", "port": port}]}


class FakeApiServer:
    """EndpointSlices of one namespace with a resourceVersion counter, an event history (the watch
    cache) and compaction: a watch from a version older than ``compacted`` is answered 410 Gone."""

    def __init__(self, gone_as_http_status: bool = False) -> None:
        self.rv = 100
        self.compacted = 0
        self.slices: dict[str, dict[str, Any]] = {}
        self.history: list[tuple[int, str, dict[str, Any]]] = []
        self.requests: list[dict[str, list[str]]] = []
        self.gone_as_http_status = gone_as_http_status
        self.cond = threading.Condition()
        self.epoch = 0  # bumped to end the open watch streams
        self.closed = False
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FakeApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    # ── what the cluster does ──────────────────────────────────────────────
    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    def put(self, obj: dict[str, Any], record: bool = True) -> None:
        with self.cond:
            name = obj["metadata"]["name"]
            kind = "MODIFIED" if name in self.slices else "ADDED"
            self.slices[name] = obj = self._stamp(obj)
            if record:
                self.history.append((self.rv, kind, obj))
            self.cond.notify_all()

    def delete(self, name: str, record: bool = True) -> None:
        with self.cond:
            obj = self._stamp(self.slices.pop(name))
            if record:
                self.history.append((self.rv, "DELETED", obj))
            self.cond.notify_all()

    def compact(self) -> None:
        """Drop the event history (etcd compaction) and end every open watch: a client resuming from
        its last version is told 410 Gone and has to re-list."""
        with self.cond:
            self.compacted = self.rv
            self.history.clear()
            self.epoch += 1
            self.cond.notify_all()

    # ── the HTTP API ───────────────────────────────────────────────────────
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _chunk(self, obj: dict[str, Any]) -> None:
                line = json.dumps(obj).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()

            def do_GET(self) -> None:
                url = urlparse(self.path)
                q = parse_qs(url.query)
                api.requests.append(q)
                if url.path != PATH:
                    return self._json(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
                if q.get("labelSelector") != [SELECTOR]:
                    return self._json(400, {"kind": "Status", "code": 400, "message": "unexpected selector"})
                if q.get("watch", ["false"])[0].lower() not in ("true", "1"):
                    with api.cond:
                        items = [api.slices[n] for n in sorted(api.slices)]
                        return self._json(200, {"kind": "EndpointSliceList", "apiVersion": "discovery.k8s.io/v1",
                                                "metadata": {"resourceVersion": str(api.rv)}, "items": items})
                self._watch(int(q.get("resourceVersion", ["0"])[0] or 0), float(q.get("timeoutSeconds", ["30"])[0]))

            def _watch(self, since: int, timeout_s: float) -> None:
                gone = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired",
                        "message": f"too old resource version: {since} ({api.compacted})", "code": 410}
                with api.cond:
                    expired = since < api.compacted
                if expired and api.gone_as_http_status:
                    return self._json(410, gone)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                deadline = time.monotonic() + timeout_s
                try:
                    if expired:
                        self._chunk({"type": "ERROR", "object": gone})
                    else:
                        self._stream(since, deadline)
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def _stream(self, since: int, deadline: float) -> None:
                with api.cond:
                    epoch = api.epoch
                sent = since
                while True:
                    with api.cond:
                        while True:
                            pending = [e for e in api.history if e[0] > sent]
                            if pending or api.closed or api.epoch != epoch or time.monotonic() >= deadline:
                                break
                            api.cond.wait(min(0.2, max(0.0, deadline - time.monotonic())))
                        if not pending:
                            return
                    for rv, kind, obj in pending:
                        self._chunk({"type": kind, "object": obj})
                        sent = rv
                    self._chunk({"type": "BOOKMARK", "object": {
                        "kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
                        "metadata": {"resourceVersion": str(sent)}}})

        return Handler


def discovery_api(host: str) -> Any:
    return client.DiscoveryV1Api(client.ApiClient(client.Configuration(host=host)))


class Changes:
    """on_change recorder; ``until`` waits (bounded) for the watcher's endpoint set to match."""

    def __init__(self) -> None:
        self.calls: queue.Queue[tuple[frozenset[str], frozenset[str]]] = queue.Queue()
        self.log: list[tuple[frozenset[str], frozenset[str]]] = []

    def __call__(self, added: frozenset[str], removed: frozenset[str]) -> None:
        self.calls.put((added, removed))

    def until(self, predicate: Callable[[], bool], timeout_s: float = 3.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            while not self.calls.empty():
                self.log.append(self.calls.get_nowait())
            if predicate():
                return
            assert time.monotonic() < deadline, f"not converged; changes so far: {self.log}"
            time.sleep(0.01)


@pytest.fixture
def apiserver() -> Iterator[FakeApiServer]:
    with FakeApiServer() as fake:
        yield fake


def test_slice_endpoints_reads_ready_addresses_of_the_named_port() -> None:
    s = endpoint_slice("a", {"10.0.0.1": True, "10.0.0.2": False, "10.0.0.3": None})
    assert slice_endpoints(s) == {"10.0.0.1:50051", "10.0.0.3:50051"}  # unset ready = ready (API docs)
    s["ports"] = [{"name": "metrics", "port": 9090}, {"name": "grpc", "port": 50052}]
    assert slice_endpoints(s) == {"10.0.0.1:50052", "10.0.0.3:50052"}
    s["ports"] = [{"name": "metrics", "port": 9090}, {"name": "other", "port": 1}]
    assert slice_endpoints(s) == frozenset()
    assert slice_endpoints(endpoint_slice("b", {})) == frozenset()  # "endpoints": null, as the API sends it
    v6 = endpoint_slice("c", {"fd00::1": True}) | {"addressType": "IPv6"}
    assert slice_endpoints(v6) == {"[fd00::1]:50051"}


@pytest.mark.parametrize("gone_as_http_status", [False, True], ids=["error-event", "http-410"])
def test_watcher_follows_pods_and_relists_after_410(gone_as_http_status: bool) -> None:
    with FakeApiServer(gone_as_http_status) as api:
        api.put(endpoint_slice("sim-a", {"10.0.0.1": True}))
        changes = Changes()
        watcher = EndpointSliceWatcher(discovery_api(api.host), NS, SVC, changes, backoff_s=0.05).start()
        try:
            changes.until(lambda: watcher.endpoints == {"10.0.0.1:50051"})
            assert changes.log[0] == ({"10.0.0.1:50051"}, frozenset())
            # a pod is added: ready -> a replica; a second one still starting (not ready) is not used
            api.put(endpoint_slice("sim-a", {"10.0.0.1": True, "10.0.0.2": True, "10.0.0.3": False}))
            changes.until(lambda: watcher.endpoints == {"10.0.0.1:50051", "10.0.0.2:50051"})
            # it becomes ready; another slice of the same Service appears
            api.put(endpoint_slice("sim-a", {"10.0.0.1": True, "10.0.0.2": True, "10.0.0.3": True}))
            api.put(endpoint_slice("sim-b", {"10.0.1.1": True}))
            changes.until(lambda: watcher.endpoints == {"10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051",
                                                        "10.0.1.1:50051"})
            # a pod goes (terminating: ready false, then gone) and a slice is deleted: drained
            api.put(endpoint_slice("sim-a", {"10.0.0.1": True, "10.0.0.2": False, "10.0.0.3": True}))
            api.delete("sim-b")
            changes.until(lambda: watcher.endpoints == {"10.0.0.1:50051", "10.0.0.3:50051"})
            assert any(r == {"10.0.1.1:50051"} for _, r in changes.log)
            assert watcher.lists == 1 and watcher.gone == 0
            # compaction while changes happen that the watch never sees: 410 Gone -> re-list -> converge
            with api.cond:
                api.put(endpoint_slice("sim-a", {"10.0.0.3": True, "10.0.0.4": True}), record=False)
                api.put(endpoint_slice("sim-c", {"10.0.2.1": True, "10.0.2.2": False}), record=False)
                api.compact()
            changes.until(lambda: watcher.endpoints == {"10.0.0.3:50051", "10.0.0.4:50051", "10.0.2.1:50051"})
            assert watcher.gone >= 1 and watcher.lists >= 2
            assert changes.log[-1] == ({"10.0.0.4:50051", "10.0.2.1:50051"}, {"10.0.0.1:50051"})
            assert watcher.resource_version == str(api.rv)
            # and the watch resumes from the re-listed version
            api.delete("sim-c")
            changes.until(lambda: watcher.endpoints == {"10.0.0.3:50051", "10.0.0.4:50051"})
        finally:
            watcher.stop(timeout_s=0.1)
    watches = [q for q in api.requests if q.get("watch")]
    assert watches and all(q["labelSelector"] == [SELECTOR] and q.get("resourceVersion") for q in watches)
    assert all(q.get("allowWatchBookmarks") for q in watches)


def test_watcher_backs_off_and_recovers_when_the_api_is_unreachable() -> None:
    changes = Changes()
    with FakeApiServer() as api:
        host = api.host
    # nothing listens there now: the list fails, the watcher backs off and keeps trying
    watcher = EndpointSliceWatcher(discovery_api(host), NS, SVC, changes, backoff_s=0.02, max_backoff_s=0.05)
    watcher.start()
    try:
        deadline = time.monotonic() + 3
        while watcher.errors < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert watcher.endpoints == frozenset() and watcher.lists == 0
    finally:
        watcher.stop(timeout_s=1)


# ── the pipeline's side: channels added and drained at runtime ───────────────


class GatedSimulator(simulator_pb2_grpc.SimulatorServiceServicer):
    """Answers Execute once ``gate`` is set; counts the calls it received."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls = 0
        self.lock = threading.Lock()

    def Execute(self, request: simulator_pb2.ExecuteRequest, context: grpc.ServicerContext
                ) -> simulator_pb2.ExecuteResponse:
        with self.lock:
            self.calls += 1
        self.gate.wait(5)
        reply = simulator_pb2.ExecuteResponse()
        reply.outcome.seed = request.seed
        reply.outcome.admitted = False
        reply.outcome.failure_margin = 1.0
        reply.outcome.outcome_json = "{}"
        return reply


@pytest.fixture
def simulators() -> Iterator[list[tuple[GatedSimulator, str]]]:
    out, servers = [], []
    for _ in range(3):
        sim = GatedSimulator()
        server = grpc.server(futures.ThreadPoolExecutor(4))
        simulator_pb2_grpc.add_SimulatorServiceServicer_to_server(sim, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        out.append((sim, f"127.0.0.1:{port}"))
    yield out
    for s in servers:
        s.stop(0)


def _program() -> ScenarioProgram:
    return program_from_spec_on_straight_roads(rlvw_failing_spec())


def test_pipeline_adds_replicas_and_drains_removed_ones_after_their_calls(
        simulators: list[tuple[GatedSimulator, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    (a, ta), (b, tb), (c, tc) = simulators
    pipeline = GrpcPipeline("127.0.0.1:1", "127.0.0.1:2", ta, timeout_s=5)
    program = _program()
    try:
        assert pipeline.replicas == (ta,)
        assert pipeline.set_replicas([ta, tb]) == ([tb], [])
        a.gate.set()
        b.gate.set()
        first = [pipeline.submit(ExecutionRequest(program, seed=i)) for i in range(4)]
        assert sorted(f.result(5).replica for f in first) == sorted([ta, ta, tb, tb])  # round robin over both
        # b has two calls in flight when it is removed: they finish there, then its channel closes
        b.gate.clear()
        held = [pipeline.submit(ExecutionRequest(program, seed=10 + i, replica=1)) for i in range(2)]
        _until(lambda: b.calls == 4)
        assert pipeline.set_replicas([ta, tc]) == ([tc], [tb])
        assert pipeline.replicas == (ta, tc) and pipeline.draining == (tb,)
        c.gate.set()
        later = [pipeline.submit(ExecutionRequest(program, seed=20 + i)) for i in range(4)]
        assert {f.result(5).replica for f in later} == {ta, tc}  # no new execution on b
        assert pipeline.draining == (tb,) and not any(f.done() for f in held)
        b.gate.set()
        assert [f.result(5).replica for f in held] == [tb, tb]
        _until(lambda: pipeline.draining == ())
        assert b.calls == 4
        with pytest.raises(ValueError):
            pipeline.set_replicas([])
    finally:
        pipeline.close()


def test_discovery_feeds_the_pipeline(apiserver: FakeApiServer, simulators: list[tuple[GatedSimulator, str]]) -> None:
    (a, ta), (b, tb), _ = simulators
    for sim, _t in simulators:
        sim.gate.set()
    port_a, port_b = int(ta.rsplit(":", 1)[1]), int(tb.rsplit(":", 1)[1])
    # one slice per port (a pod listens on its own port here; in a cluster every pod has the same port)
    settings = SearchSettings(llm_target="127.0.0.1:1", grounding_target="127.0.0.1:2",
                              simulator_targets=tb, simulator_endpointslices=f"{NS}/{SVC}")
    pipeline = GrpcPipeline("127.0.0.1:1", "127.0.0.1:2", settings.simulator_targets, timeout_s=5)
    try:
        watcher = watch_simulator_replicas(pipeline, settings, api=discovery_api(apiserver.host))
        assert pipeline.replica_server_name == SVC  # under TLS a pod address is verified as the Service
        apiserver.put(endpoint_slice("sim-a", {"127.0.0.1": True}, port=port_a))
        _until(lambda: pipeline.replicas == (ta,))  # the discovered pod replaces the static target
        apiserver.put(endpoint_slice("sim-b", {"127.0.0.1": True}, port=port_b))
        _until(lambda: set(pipeline.replicas) == {ta, tb})
        program = _program()
        done = [pipeline.submit(ExecutionRequest(program, seed=i)).result(5).replica for i in range(4)]
        assert sorted(done) == sorted([ta, ta, tb, tb])
        apiserver.put(endpoint_slice("sim-a", {"127.0.0.1": False}, port=port_a))
        _until(lambda: pipeline.replicas == (tb,))
        apiserver.delete("sim-b")
        _until(lambda: pipeline.replicas == (tb,) and watcher.endpoints == frozenset())  # none ready: the fallback
    finally:
        pipeline.close()
    assert watcher._thread is not None and not watcher._thread.is_alive()  # close stopped the watch promptly


def test_settings_name_a_namespaced_service() -> None:
    assert parse_service_ref("ns/svc") == ("ns", "svc")
    for bad in ("svc", "/svc", "ns/", "a/b/c"):
        with pytest.raises(ValueError, match="namespace"):
            parse_service_ref(bad)
    peers = {"LASTV2X_SEARCH_LLM_TARGET": "a:1", "LASTV2X_SEARCH_GROUNDING_TARGET": "b:1",
             "LASTV2X_SEARCH_SIMULATOR_TARGETS": "dns:///sim:50051"}
    s = SearchSettings.from_env({**peers, "LASTV2X_SEARCH_SIMULATOR_ENDPOINTSLICES": "lastv2x/sim"})
    assert s.simulator_endpointslices == "lastv2x/sim"
    with pytest.raises(ValueError, match="LASTV2X_SEARCH_SIMULATOR_ENDPOINTSLICES"):
        SearchSettings.from_env({**peers, "LASTV2X_SEARCH_SIMULATOR_ENDPOINTSLICES": "sim"})
    with pytest.raises(ValueError, match="SIMULATOR_TARGETS"):
        SearchSettings(simulator_endpointslices="lastv2x/sim")


def _until(predicate: Callable[[], bool], timeout_s: float = 3.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_outside_a_cluster_discovery_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(RuntimeError, match="lastv2x/sim.*service account"):
        EndpointSliceWatcher.in_cluster("lastv2x", "sim", lambda added, removed: None)
