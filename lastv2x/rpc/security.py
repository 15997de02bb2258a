"""Transport security and the bearer token, opt-in, for servers and for the platform's own clients.

Server (``ServerConfig``): ``tls_cert_file`` + ``tls_key_file`` (mounted PEM files) serve TLS;
``tls_client_auth`` also requires a client certificate signed by ``tls_ca_file`` (mutual TLS);
``auth_token_file`` requires ``authorization: Bearer <token>`` metadata on every call but the
health checks (kubelet probes carry no token), else UNAUTHENTICATED (compared in constant time).

Clients (the search service's peers, grounding's remote planner, the CLI, a ``grpcs://`` application
under test) read the same settings: TLS when ``tls_ca_file`` or ``tls_cert_file`` is set, the server
verified against ``tls_ca_file`` (else the system roots), this process's certificate presented as its
client certificate when it has one (mutual TLS), and the token sent when ``auth_token_file`` is set.
A process configures its clients once, in ``main`` (``configure_clients``); ``open_channel`` uses that.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc


class ServerConfig(Protocol):
    """The fields of ``lastv2x.rpc.server.ServerConfig`` read here (no import: the server imports this)."""

    tls_cert_file: str
    tls_key_file: str
    tls_ca_file: str
    tls_client_auth: bool
    auth_token_file: str

OPEN_TO_ALL = ("/grpc.health.v1.Health/",)  # no token asked: kubelet probes and load balancers


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"{what} {path!r} cannot be read: {exc.strerror}") from None


def read_token(path: str) -> str:
    token = _read(path, "LASTV2X_AUTH_TOKEN_FILE").decode("utf-8", "replace").strip()
    if not token:
        raise ValueError(f"LASTV2X_AUTH_TOKEN_FILE {path!r} is empty")
    return token


def server_credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
    """TLS (and mutual TLS) from the mounted files; None: plaintext (no TLS settings)."""
    if not config.tls_cert_file and not config.tls_key_file:
        if config.tls_client_auth:
            raise ValueError("LASTV2X_TLS_CLIENT_AUTH needs LASTV2X_TLS_CERT_FILE and LASTV2X_TLS_KEY_FILE")
        return None
    if not (config.tls_cert_file and config.tls_key_file):
        raise ValueError("TLS needs both LASTV2X_TLS_CERT_FILE and LASTV2X_TLS_KEY_FILE")
    pair = (_read(config.tls_key_file, "LASTV2X_TLS_KEY_FILE"), _read(config.tls_cert_file, "LASTV2X_TLS_CERT_FILE"))
    if config.tls_client_auth and not config.tls_ca_file:
        raise ValueError("LASTV2X_TLS_CLIENT_AUTH needs LASTV2X_TLS_CA_FILE (the CA that signs client certificates)")
    ca = _read(config.tls_ca_file, "LASTV2X_TLS_CA_FILE") if config.tls_ca_file else None
    return grpc.ssl_server_credentials([pair], root_certificates=ca, require_client_auth=config.tls_client_auth)


class TokenCheck:
    """``authorization: Bearer <token>`` against the configured token (constant-time)."""

    def __init__(self, token: str):
        self._expected = f"Bearer {token}".encode()

    def allows(self, method: str, metadata: Sequence[tuple[str, Any]] | None) -> bool:
        if method.startswith(OPEN_TO_ALL):
            return True
        for key, value in metadata or ():
            if key == "authorization":
                given = value.encode() if isinstance(value, str) else bytes(value)
                if hmac.compare_digest(given, self._expected):
                    return True
        return False


@dataclass(frozen=True)
class ClientSecurity:
    """What this process's clients present: TLS roots, its own certificate, the bearer token."""

    tls: bool = False
    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None
    token: str | None = None

    @classmethod
    def from_config(cls, config: ServerConfig) -> ClientSecurity:
        tls = bool(config.tls_ca_file or config.tls_cert_file)
        own = bool(config.tls_cert_file and config.tls_key_file)
        return cls(tls=tls,
                   ca=_read(config.tls_ca_file, "LASTV2X_TLS_CA_FILE") if config.tls_ca_file else None,
                   cert=_read(config.tls_cert_file, "LASTV2X_TLS_CERT_FILE") if own else None,
                   key=_read(config.tls_key_file, "LASTV2X_TLS_KEY_FILE") if own else None,
                   token=read_token(config.auth_token_file) if config.auth_token_file else None)


_CLIENTS = ClientSecurity()


def configure_clients(security: ClientSecurity) -> None:
    """Set, once in a process's ``main``, what ``open_channel`` uses."""
    global _CLIENTS
    _CLIENTS = security


def client_security() -> ClientSecurity:
    return _CLIENTS


class _Bearer(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
              grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds ``authorization: Bearer <token>`` to every call (over TLS or, on a trusted network, plaintext)."""

    def __init__(self, token: str):
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, details: Any) -> Any:
        metadata = [*(details.metadata or ()), self._header]
        return _Details(details.method, details.timeout, metadata, details.credentials,
                        getattr(details, "wait_for_ready", None), getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Callable[..., Any], details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Callable[..., Any], details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


@dataclass(frozen=True)
class _Details(grpc.ClientCallDetails):  # type: ignore[misc]
    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: Any
    compression: Any


def open_channel(target: str, options: Sequence[tuple[str, Any]] = (), security: ClientSecurity | None = None,
                 *, send_token: bool = True) -> grpc.Channel:
    """A channel to ``target`` with this process's client security (``configure_clients``), or ``security``."""
    sec = _CLIENTS if security is None else security
    if sec.tls:
        creds = grpc.ssl_channel_credentials(root_certificates=sec.ca, private_key=sec.key,
                                             certificate_chain=sec.cert)
        channel = grpc.secure_channel(target, creds, options=list(options))
    else:
        channel = grpc.insecure_channel(target, options=list(options))
    if sec.token and send_token:
        return grpc.intercept_channel(channel, _Bearer(sec.token))
    return channel


__all__ = ["OPEN_TO_ALL", "ClientSecurity", "TokenCheck", "client_security", "configure_clients", "open_channel",
           "read_token", "server_credentials"]
