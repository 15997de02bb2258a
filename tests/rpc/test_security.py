"""TLS, mutual TLS, the bearer token and reflection off (issue 16, item 6), over real TLS on loopback.

Throwaway certificates are made here with ``cryptography``: a CA, a server certificate for
127.0.0.1 / localhost, a client certificate, and a second CA nobody trusts.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lastv2x.rpc.security import ClientSecurity, configure_clients, open_channel
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.rpc.services import SERVICES
from lastv2x.v1 import llm_pb2, llm_pb2_grpc

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

TOKEN = "s3cret-token-for-tests"
SPEC = '{"application": "IMA", "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 12.0}]}'


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert(subject: str, issuer_name: str, issuer_key, key, *, ca: bool, server: bool = False,  # type: ignore[no-untyped-def]
          names: tuple[str, ...] = ()):
    now = dt.datetime.now(dt.UTC)
    b = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer_name))
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                          x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                            critical=False)
    if names:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
    return b.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pki")
    files: dict[str, bytes] = {}
    ca_key, other_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    files["ca.pem"] = _cert("test ca", "test ca", ca_key, ca_key, ca=True)
    files["other-ca.pem"] = _cert("other ca", "other ca", other_key, other_key, ca=True)
    for who, server in (("server", True), ("client", False)):
        key = ec.generate_private_key(ec.SECP256R1())
        files[f"{who}.pem"] = _cert(f"lastv2x {who}", "test ca", ca_key, key, ca=False, server=server)
        files[f"{who}.key"] = _pem_key(key)
    key = ec.generate_private_key(ec.SECP256R1())  # a Service's certificate: its name, no address
    files["pods.pem"] = _cert("pods", "test ca", ca_key, key, ca=False, names=("lastv2x-simulator-pods",))
    files["pods.key"] = _pem_key(key)
    files["token"] = (TOKEN + "\n").encode()
    for name, data in files.items():
        (d / name).write_bytes(data)
    return {name: d / name for name in files}


def _serve(pki: dict[str, Path], **settings):  # type: ignore[no-untyped-def]
    config = ServerConfig("llm", log_json=False, tls_cert_file=str(pki["server.pem"]),
                          tls_key_file=str(pki["server.key"]), **settings)
    server, port = create_server(config, SERVICES["llm"].register())
    server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def tls_server(pki):  # type: ignore[no-untyped-def]
    server, address = _serve(pki, auth_token_file=str(pki["token"]), reflection=False)
    yield address
    server.stop(0)


@pytest.fixture(scope="module")
def mtls_server(pki):  # type: ignore[no-untyped-def]
    server, address = _serve(pki, tls_ca_file=str(pki["ca.pem"]), tls_client_auth=True,
                             auth_token_file=str(pki["token"]))
    yield address
    server.stop(0)


def _security(pki, *, ca: str = "ca.pem", client_cert: bool = False, token: str | None = TOKEN):  # type: ignore[no-untyped-def]
    return ClientSecurity(tls=True, ca=pki[ca].read_bytes(),
                          cert=pki["client.pem"].read_bytes() if client_cert else None,
                          key=pki["client.key"].read_bytes() if client_cert else None, token=token)


def _verify(channel: grpc.Channel) -> llm_pb2.VerifyResponse:
    return llm_pb2_grpc.LlmServiceStub(channel).Verify(llm_pb2.VerifyRequest(spec_json=SPEC), timeout=5)


def _code(call) -> grpc.StatusCode:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()


def test_right_ca_and_token_is_served(pki, tls_server) -> None:
    with open_channel(tls_server, security=_security(pki)) as channel:
        assert _verify(channel).report.findings


def test_plaintext_is_refused(tls_server) -> None:
    with grpc.insecure_channel(tls_server) as channel:
        assert _code(lambda: _verify(channel)) == grpc.StatusCode.UNAVAILABLE


def test_a_server_signed_by_another_ca_is_refused(pki, tls_server) -> None:
    with open_channel(tls_server, security=_security(pki, ca="other-ca.pem")) as channel:
        assert _code(lambda: _verify(channel)) == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("token", [None, "wrong-token", TOKEN + "x"])
def test_missing_or_wrong_token_is_unauthenticated(pki, tls_server, token) -> None:
    with open_channel(tls_server, security=_security(pki, token=token)) as channel:
        assert _code(lambda: _verify(channel)) == grpc.StatusCode.UNAUTHENTICATED


def test_health_check_needs_no_token(pki, tls_server, mtls_server) -> None:
    for address, client_cert in ((tls_server, False), (mtls_server, True)):
        with open_channel(address, security=_security(pki, token=None, client_cert=client_cert)) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_mtls_without_a_client_certificate_is_refused(pki, mtls_server) -> None:
    with open_channel(mtls_server, security=_security(pki)) as channel:
        assert _code(lambda: _verify(channel)) == grpc.StatusCode.UNAVAILABLE


def test_mtls_with_a_client_certificate_and_token_is_served(pki, mtls_server) -> None:
    with open_channel(mtls_server, security=_security(pki, client_cert=True)) as channel:
        assert _verify(channel).report.findings
    with open_channel(mtls_server, security=_security(pki, client_cert=True, token=None)) as channel:
        assert _code(lambda: _verify(channel)) == grpc.StatusCode.UNAUTHENTICATED


def test_reflection_can_be_switched_off(pki, tls_server) -> None:
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    with open_channel(tls_server, security=_security(pki)) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                            timeout=5)
        assert _code(lambda: list(replies)) == grpc.StatusCode.UNIMPLEMENTED


def test_settings_come_from_the_environment(pki) -> None:
    env = {"LASTV2X_TLS_CERT_FILE": str(pki["client.pem"]), "LASTV2X_TLS_KEY_FILE": str(pki["client.key"]),
           "LASTV2X_TLS_CA_FILE": str(pki["ca.pem"]), "LASTV2X_TLS_CLIENT_AUTH": "1",
           "LASTV2X_AUTH_TOKEN_FILE": str(pki["token"]), "LASTV2X_REFLECTION": "0"}
    config = ServerConfig.from_env("x", env)
    assert config.tls_client_auth and not config.reflection
    security = ClientSecurity.from_config(config)
    assert security.tls and security.token == TOKEN and security.cert == pki["client.pem"].read_bytes()
    assert not ClientSecurity.from_config(ServerConfig.from_env("x", {})).tls


def test_half_configured_tls_fails_at_start(pki) -> None:
    with pytest.raises(ValueError, match="LASTV2X_TLS_KEY_FILE"):
        create_server(ServerConfig("llm", tls_cert_file=str(pki["server.pem"])), SERVICES["llm"].register())
    with pytest.raises(ValueError, match="LASTV2X_TLS_CA_FILE"):
        create_server(ServerConfig("llm", tls_cert_file=str(pki["server.pem"]), tls_key_file=str(pki["server.key"]),
                                   tls_client_auth=True), SERVICES["llm"].register())


def test_the_platforms_own_clients_use_the_configured_security(pki, mtls_server) -> None:
    """Grounding's remote planner (as the search pipeline's channels) opens its channel through
    ``open_channel``: over mutual TLS with the token it gets past authentication."""
    from services.grounding.remote_planner import RemotePlanner
    from services.search.remote import GrpcPipeline

    configure_clients(_security(pki, client_cert=True))
    try:
        planner = RemotePlanner(mtls_server, timeout_s=5)
        code = _code(lambda: planner(_spec(), []))
        assert code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED)
        replica = GrpcPipeline._open(mtls_server)
        health = health_pb2_grpc.HealthStub(replica.channel)
        assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == \
            health_pb2.HealthCheckResponse.SERVING
    finally:
        configure_clients(ClientSecurity())
    planner = RemotePlanner(mtls_server, timeout_s=5)  # plaintext again: refused
    assert _code(lambda: planner(_spec(), [])) == grpc.StatusCode.UNAVAILABLE


def _spec():  # type: ignore[no-untyped-def]
    import json

    from lastv2x.core.spec import parse_spec

    return parse_spec(json.loads(SPEC))


def test_the_plaintext_health_port_answers_health_checks_and_nothing_else(pki) -> None:
    """Kubelet's gRPC probes are plaintext: with LASTV2X_HEALTH_PORT a TLS service answers grpc.health.v1
    there without TLS, while every service RPC (and reflection) on that port is UNIMPLEMENTED and the
    service port still refuses plaintext."""
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    assert ServerConfig.from_env("x", {"LASTV2X_HEALTH_PORT": "8086"}).health_port == 8086
    assert ServerConfig().health_port == -1  # off unless asked for
    server, address = _serve(pki, auth_token_file=str(pki["token"]), health_port=0)
    health_address = f"127.0.0.1:{server.health_port}"
    try:
        with grpc.insecure_channel(health_address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
            named = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="lastv2x.v1.LlmService"), timeout=5)
            assert named.status == health_pb2.HealthCheckResponse.SERVING
            assert _code(lambda: _verify(channel)) == grpc.StatusCode.UNIMPLEMENTED
            replies = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
            assert _code(lambda: list(replies)) == grpc.StatusCode.UNIMPLEMENTED
        with grpc.insecure_channel(health_address) as channel:  # the token does not help either
            stub = llm_pb2_grpc.LlmServiceStub(channel)
            assert _code(lambda: stub.Verify(llm_pb2.VerifyRequest(spec_json=SPEC), timeout=5,
                                             metadata=[("authorization", f"Bearer {TOKEN}")])) == \
                grpc.StatusCode.UNIMPLEMENTED
        with grpc.insecure_channel(address) as channel:
            assert _code(lambda: _verify(channel)) == grpc.StatusCode.UNAVAILABLE
        with open_channel(address, security=_security(pki)) as channel:
            assert _verify(channel).report.findings
        server.health_servicer.enter_graceful_shutdown()  # the probes follow the service's status
        with grpc.insecure_channel(health_address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        server.stop(0).wait(5)
    with grpc.insecure_channel(health_address) as channel:  # stopped with the service
        assert _code(lambda: health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                                        timeout=2)) == grpc.StatusCode.UNAVAILABLE


def test_a_discovered_pod_address_is_verified_as_its_services_name(pki) -> None:
    """EndpointSlice discovery hands the search pipeline pod IPs; their certificate names the Service."""
    from services.search.remote import GrpcPipeline

    config = ServerConfig("llm", log_json=False, tls_cert_file=str(pki["pods.pem"]), tls_key_file=str(pki["pods.key"]))
    server, port = create_server(config, SERVICES["llm"].register())
    server.start()
    configure_clients(_security(pki, token=None))
    try:
        def check(server_name):  # type: ignore[no-untyped-def]
            replica = GrpcPipeline._open(f"127.0.0.1:{port}", server_name)
            try:
                return health_pb2_grpc.HealthStub(replica.channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            finally:
                replica.channel.close()

        assert check("lastv2x-simulator-pods").status == health_pb2.HealthCheckResponse.SERVING
        assert _code(lambda: check(None)) == grpc.StatusCode.UNAVAILABLE  # 127.0.0.1 is not in the certificate
        assert _code(lambda: check("another-service")) == grpc.StatusCode.UNAVAILABLE
    finally:
        configure_clients(ClientSecurity())
        server.stop(0)
