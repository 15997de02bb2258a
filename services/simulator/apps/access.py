"""Which application servers the simulator may call, and with which credentials (issue 41).

An application under test is outside the platform: whoever runs one sees every call the
simulator makes to it. So

* its address is checked against an **allow-list** before any connection
  (``LASTV2X_SIMULATOR_APP_ALLOW``: comma-separated ``host:port``, ``host:*`` for any port of
  a host, ``*`` for any address, ``none`` for no application server at all; default: loopback,
  where the example app runs). A refused address answers at once, with the same words whether
  something listens there or not: the simulator is no port scanner. Hosts match as written
  (case-insensitive), never resolved: allow the name the requests use.
* a ``grpcs://`` application gets **its own** credentials, never the platform's: the CA that
  verifies it (``LASTV2X_SIMULATOR_APP_TLS_CA_FILE``, else the system roots), the identity the
  simulator presents to it for mutual TLS (``_APP_TLS_CERT_FILE`` + ``_APP_TLS_KEY_FILE``) and a
  bearer token per address (``LASTV2X_SIMULATOR_APP_TOKEN_FILES``: ``host:port=/path/to/token``,
  comma-separated, read at each connection so a rotated secret is picked up). A ``grpc://``
  (plaintext) application never gets a token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.rpc.security import ClientSecurity

ANY = "*"
NONE = "none"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
DEFAULT_ALLOW = tuple((host, ANY) for host in LOOPBACK_HOSTS)  # the example app, on loopback, any port
_ADDRESS = re.compile(r"^grpcs?://(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})$")
_PATTERN = re.compile(r"^(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5}|\*)$")


def app_address(spec: str) -> tuple[str, str] | None:
    """``(host, port)`` of a ``grpc://`` / ``grpcs://`` application (host lower-cased); None otherwise."""
    m = _ADDRESS.match(spec)
    return (m["host"].lower(), m["port"]) if m else None


def _parse_allow(text: str) -> tuple[tuple[str, str], ...]:
    entries = [e.strip() for e in text.split(",") if e.strip()]
    if entries == [NONE]:
        return ()
    if ANY in entries:
        return ((ANY, ANY),)
    out = []
    for entry in entries:
        m = _PATTERN.match(entry)
        if not m:
            raise ValueError(f"LASTV2X_SIMULATOR_APP_ALLOW entry {entry!r} is not host:port, host:*, * or none")
        out.append((m["host"].lower(), m["port"]))
    return tuple(out)


def _parse_token_files(text: str) -> tuple[tuple[str, str], ...]:
    out = []
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        address, sep, path = entry.partition("=")
        m = _PATTERN.match(address.strip())
        if not sep or not path.strip() or not m or m["port"] == ANY:
            raise ValueError(f"LASTV2X_SIMULATOR_APP_TOKEN_FILES entry {entry!r} is not host:port=/path/to/token")
        out.append((f"{m['host'].lower()}:{m['port']}", path.strip()))
    return tuple(out)


def _read_token(path: str) -> str:
    token = _read_file(path, "LASTV2X_SIMULATOR_APP_TOKEN_FILES file").decode("utf-8", "replace").strip()
    if not token:
        raise ValueError(f"LASTV2X_SIMULATOR_APP_TOKEN_FILES file {path!r} is empty")
    return token


def _read_file(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"{what} {path!r} cannot be read: {exc.strerror}") from None


@dataclass(frozen=True)
class AppAccess:
    """The allow-list and the application servers' own credentials (see the module docstring)."""

    allow: tuple[tuple[str, str], ...] = DEFAULT_ALLOW  # (host, port or "*"); (("*", "*"),) = any address
    token_files: tuple[tuple[str, str], ...] = ()  # ("host:port", token file) per application server
    tls_ca_file: str = ""  # verifies grpcs:// applications ("" = the system roots)
    tls_cert_file: str = ""  # the simulator's identity towards grpcs:// applications (mutual TLS)
    tls_key_file: str = ""

    @classmethod
    def parse(cls, allow: str | None = None, token_files: str = "", tls_ca_file: str = "",
              tls_cert_file: str = "", tls_key_file: str = "") -> AppAccess:
        """From the settings' text (``allow`` None = the default, loopback); ValueError naming a bad entry."""
        if bool(tls_cert_file) != bool(tls_key_file):
            raise ValueError("LASTV2X_SIMULATOR_APP_TLS_CERT_FILE and _APP_TLS_KEY_FILE go together")
        return cls(allow=DEFAULT_ALLOW if allow is None else _parse_allow(allow),
                   token_files=_parse_token_files(token_files), tls_ca_file=tls_ca_file,
                   tls_cert_file=tls_cert_file, tls_key_file=tls_key_file)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AppAccess:
        p = "LASTV2X_SIMULATOR_APP_"
        return cls.parse(env.get(p + "ALLOW"), env.get(p + "TOKEN_FILES", ""), env.get(p + "TLS_CA_FILE", ""),
                         env.get(p + "TLS_CERT_FILE", ""), env.get(p + "TLS_KEY_FILE", ""))

    def allows(self, host: str, port: str) -> bool:
        return any(h in (ANY, host) and p in (ANY, port) for h, p in self.allow)

    def check(self, spec: str, field: str = "app") -> None:
        """Refuse a ``grpc(s)://`` address outside the allow-list (InvalidArgument at ``field``); no I/O,
        so the answer cannot tell an open port from a closed one. Other specs (reference, entry points)
        are not addresses and pass."""
        address = app_address(spec.strip())
        if address is None or self.allows(*address):
            return
        shown = spec if len(spec) <= 80 else spec[:80] + "..."
        raise InvalidArgument(FieldViolation(
            field, f"{shown!r} is not an application address this simulator may call",
            "the simulator calls only the addresses of LASTV2X_SIMULATOR_APP_ALLOW (default: loopback); "
            "ask its operator to allow host:port, or use the reference apps"))

    def security_for(self, spec: str) -> ClientSecurity:
        """TLS credentials for a ``grpcs://`` application: its CA, the simulator's app identity, its token."""
        address = app_address(spec.strip())
        key = f"{address[0]}:{address[1]}" if address else ""
        token_file = dict(self.token_files).get(key)
        own = bool(self.tls_cert_file and self.tls_key_file)
        return ClientSecurity(
            tls=True,
            ca=_read_file(self.tls_ca_file, "LASTV2X_SIMULATOR_APP_TLS_CA_FILE") if self.tls_ca_file else None,
            cert=_read_file(self.tls_cert_file, "LASTV2X_SIMULATOR_APP_TLS_CERT_FILE") if own else None,
            key=_read_file(self.tls_key_file, "LASTV2X_SIMULATOR_APP_TLS_KEY_FILE") if own else None,
            token=_read_token(token_file) if token_file else None)


__all__ = ["DEFAULT_ALLOW", "LOOPBACK_HOSTS", "AppAccess", "app_address"]
