"""Issue 41: what a hostile application server could take from the simulator, reproduced over real
gRPC (and real TLS) on loopback.

* the platform's bearer token is never sent to an application server: a ``grpcs://`` app gets
  the credentials the simulator's settings give *it* (a per-app token, an mTLS identity);
* an application address is checked against ``LASTV2X_SIMULATOR_APP_ALLOW`` before any
  connection, so a refused address answers the same, as fast, whether something listens there.
"""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from lastv2x.core.errors import InvalidArgument
from lastv2x.rpc.errors import field_violations
from lastv2x.rpc.security import ClientSecurity, configure_clients, open_channel
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import application_pb2_grpc, common_pb2, simulator_pb2, simulator_pb2_grpc
from lastv2x_app.example_app import ContractServicer, serve
from services.simulator.apps.access import AppAccess
from services.simulator.apps.contract import ReferenceApp
from services.simulator.execute import SimulatorLimits
from services.simulator.servicer import register

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

from tests.rpc.test_security import _cert, _pem_key  # noqa: E402

PLATFORM_TOKEN = "platform-token-never-leaves"
APP_TOKEN = "the-apps-own-token"
SPEC = common_pb2.ScenarioSpec(application=common_pb2.APPLICATION_RLVW)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    files = {"ca.pem": _cert("test ca", "test ca", ca_key, ca_key, ca=True)}
    for who, server in (("server", True), ("client", False), ("app-client", False)):
        key = ec.generate_private_key(ec.SECP256R1())
        files[f"{who}.pem"] = _cert(f"lastv2x {who}", "test ca", ca_key, key, ca=False, server=server)
        files[f"{who}.key"] = _pem_key(key)
    files["token"] = (PLATFORM_TOKEN + "\n").encode()
    files["app-token"] = (APP_TOKEN + "\n").encode()
    for name, data in files.items():
        (d / name).write_bytes(data)
    return {name: d / name for name in files}


class Recording(ContractServicer):
    """The reference apps, remembering the metadata and client certificate of every call."""

    def __init__(self) -> None:
        super().__init__(ReferenceApp())
        self.metadata: list[dict[str, str]] = []
        self.peer_names: list[str] = []

    def Describe(self, request, context):  # type: ignore[no-untyped-def, override]
        self.metadata.append(dict(context.invocation_metadata()))
        auth = context.auth_context()
        self.peer_names.extend(v.decode() for v in auth.get("x509_common_name", []))
        return super().Describe(request, context)


def _tls_app(pki: dict[str, Path], servicer: Recording, *, client_auth: bool = False) -> tuple[grpc.Server, int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    application_pb2_grpc.add_ApplicationUnderTestServiceServicer_to_server(servicer, server)
    creds = grpc.ssl_server_credentials([(pki["server.key"].read_bytes(), pki["server.pem"].read_bytes())],
                                        root_certificates=pki["ca.pem"].read_bytes() if client_auth else None,
                                        require_client_auth=client_auth)
    port = server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    return server, port


def _platform(pki: dict[str, Path]) -> ClientSecurity:
    return ClientSecurity(tls=True, ca=pki["ca.pem"].read_bytes(), cert=pki["client.pem"].read_bytes(),
                          key=pki["client.key"].read_bytes(), token=PLATFORM_TOKEN)


def _simulator(pki: dict[str, Path], limits: SimulatorLimits) -> Iterator[simulator_pb2_grpc.SimulatorServiceStub]:
    """A token-protected TLS simulator whose own clients carry the platform's credentials (as ``main`` sets)."""
    config = ServerConfig("simulator", log_json=False, tls_cert_file=str(pki["server.pem"]),
                          tls_key_file=str(pki["server.key"]), auth_token_file=str(pki["token"]))
    server, port = create_server(config, lambda s: register(s, limits))
    server.start()
    configure_clients(_platform(pki))
    try:
        with open_channel(f"127.0.0.1:{port}", security=_platform(pki)) as channel:
            yield simulator_pb2_grpc.SimulatorServiceStub(channel)
    finally:
        configure_clients(ClientSecurity())
        server.stop(0)


def _app_settings(pki: dict[str, Path], port: int, **extra: str) -> SimulatorLimits:
    env = {"LASTV2X_SIMULATOR_APP_ALLOW": f"127.0.0.1:{port}",
           "LASTV2X_SIMULATOR_APP_TLS_CA_FILE": str(pki["ca.pem"]), **extra}
    return SimulatorLimits.from_env(env)


def test_the_platform_token_is_never_sent_to_a_grpcs_application(pki) -> None:
    app = Recording()
    server, port = _tls_app(pki, app)
    try:
        for sim in _simulator(pki, _app_settings(pki, port)):
            reply = sim.Execute(simulator_pb2.ExecuteRequest(spec=SPEC, app=f"grpcs://127.0.0.1:{port}"), timeout=60)
            assert not reply.outcome.app_error
    finally:
        server.stop(0)
    assert app.metadata, "the app was never called"
    assert all(PLATFORM_TOKEN not in " ".join(md.values()) for md in app.metadata)
    assert all("authorization" not in md for md in app.metadata)  # no per-app token configured: none sent
    assert "lastv2x client" not in app.peer_names  # nor the platform's client certificate


def test_a_grpcs_application_gets_its_own_token_and_mtls_identity(pki) -> None:
    app = Recording()
    server, port = _tls_app(pki, app, client_auth=True)
    limits = _app_settings(pki, port, LASTV2X_SIMULATOR_APP_TOKEN_FILES=f"127.0.0.1:{port}={pki['app-token']}",
                           LASTV2X_SIMULATOR_APP_TLS_CERT_FILE=str(pki["app-client.pem"]),
                           LASTV2X_SIMULATOR_APP_TLS_KEY_FILE=str(pki["app-client.key"]))
    try:
        for sim in _simulator(pki, limits):
            reply = sim.Execute(simulator_pb2.ExecuteRequest(spec=SPEC, app=f"grpcs://127.0.0.1:{port}"), timeout=60)
            assert not reply.outcome.app_error
    finally:
        server.stop(0)
    assert {md.get("authorization") for md in app.metadata} == {f"Bearer {APP_TOKEN}"}
    assert set(app.peer_names) == {"lastv2x app-client"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket closes


def _refusal_s(sim: simulator_pb2_grpc.SimulatorServiceStub, app: str) -> tuple[float, grpc.StatusCode, str]:
    start = time.perf_counter()
    with pytest.raises(grpc.RpcError) as info:
        sim.Execute(simulator_pb2.ExecuteRequest(spec=SPEC, app=app), timeout=30)
    err = info.value
    assert [f for f, _ in field_violations(err)] == ["app"]
    return time.perf_counter() - start, err.code(), err.details().replace(app, "APP")


def test_an_address_outside_the_allow_list_is_refused_before_any_connection(pki, served) -> None:
    open_target = served(Recording())  # a real, answering gRPC app, on loopback but not allowed here
    limits = SimulatorLimits.from_env({"LASTV2X_SIMULATOR_APP_ALLOW": "127.0.0.1:1"})
    for sim in _simulator(pki, limits):
        closed_target = f"grpc://127.0.0.1:{_closed_port()}"
        runs = {t: [_refusal_s(sim, t) for _ in range(5)] for t in (open_target, closed_target)}
    answers = {(code, details) for rs in runs.values() for _, code, details in rs}
    assert len(answers) == 1, answers  # the same answer whether something listens there or not
    code, details = answers.pop()
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "LASTV2X_SIMULATOR_APP_ALLOW" in details
    medians = [statistics.median(s for s, _, _ in rs) for rs in runs.values()]
    assert max(medians) < 0.5 and abs(medians[0] - medians[1]) < 0.1, medians


def test_the_default_allow_list_is_loopback_only() -> None:
    access = SimulatorLimits.from_env({}).app_access
    for ok in ("grpc://127.0.0.1:50070", "grpc://localhost:50070", "grpcs://[::1]:6000"):
        access.check(ok)
    for bad in ("grpc://10.0.0.7:50070", "grpcs://example.com:443", "grpc://127.0.0.2:50070",
                "grpc://169.254.169.254:80"):
        with pytest.raises(InvalidArgument, match="LASTV2X_SIMULATOR_APP_ALLOW"):
            access.check(bad)
    assert AppAccess.parse("none").allow == ()
    with pytest.raises(InvalidArgument, match="LASTV2X_SIMULATOR_APP_ALLOW"):
        AppAccess.parse("none").check("grpc://127.0.0.1:50070")
    wide = AppAccess.parse("*")
    wide.check("grpc://10.0.0.7:50070")
    with pytest.raises(ValueError, match="host:port"):
        AppAccess.parse("10.0.0.7")


def test_an_in_process_entry_point_needs_no_address_check() -> None:
    SimulatorLimits.from_env({"LASTV2X_SIMULATOR_APP_ALLOW": "none"}).app_access.check("reference")


def test_serve_helper_still_binds_loopback() -> None:  # the example app's default is inside the default list
    server, port = serve(Recording())
    try:
        SimulatorLimits().app_access.check(f"grpc://127.0.0.1:{port}")
    finally:
        server.stop(0)


# ── a hostile application server's answers are bounded in the outcome ──────
BIG = "x" * (3 * 1024 * 1024)  # 3 MB per decision


class Verbose(ContractServicer):
    """The reference apps with a 3 MB reason on every decision (and a 3 MB build name)."""

    def __init__(self, field: str = "reason") -> None:
        super().__init__(ReferenceApp())
        self.field = field

    def Describe(self, request, context):  # type: ignore[no-untyped-def, override]
        reply = super().Describe(request, context)
        reply.build.name = BIG if self.field == "build" else reply.build.name
        return reply

    def Step(self, request, context):  # type: ignore[no-untyped-def, override]
        reply = super().Step(request, context)
        for d in reply.decisions:
            if self.field == "error" and request.step == 5:
                d.error = BIG
            elif self.field == "reason":
                d.reason = BIG + str(request.step)  # every step a new decision: recorded each time
        return reply


@pytest.mark.parametrize("field", ["reason", "error", "build"])
def test_a_huge_text_from_the_app_is_truncated_in_the_outcome_not_a_resource_error(served, field) -> None:
    from tests.simulator.conftest import served_simulator

    target = served(Verbose(field))
    with served_simulator(SimulatorLimits()) as sim:
        reply = sim.Execute(simulator_pb2.ExecuteRequest(spec=SPEC, app=target), timeout=120)
    assert reply.ByteSize() < 1024 * 1024
    texts = [d.reason for ds in (reply.outcome.md_decisions, reply.outcome.gt_decisions) for d in ds]
    if field == "reason":
        assert texts and all(len(t) <= 1100 and t.endswith("…(truncated)") for t in texts)
        assert not reply.outcome.app_error
    if field == "error":
        assert "the app reported: xxx" in reply.outcome.app_error and "…(truncated)" in reply.outcome.app_error
        assert len(reply.outcome.app_error) <= 4096  # one bounded error per rollout, with its place
    if field == "build":
        assert len(reply.app_build.name) <= 1100 and reply.app_build.name.endswith("…(truncated)")
