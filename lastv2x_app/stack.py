"""The local stack: all five services as processes on loopback ports.

``lastv2x up`` starts them (state in ``$LASTV2X_STATE_DIR`` or ``./.lastv2x``),
``status`` health-checks them, ``down`` sends SIGTERM and waits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lastv2x.rpc.security import ClientSecurity, open_channel
from lastv2x.rpc.server import ServerConfig
from lastv2x.rpc.services import SERVICES


def state_dir() -> Path:
    return Path(os.environ.get("LASTV2X_STATE_DIR", ".lastv2x")).resolve()


@dataclass(frozen=True)
class ServiceProcess:
    name: str
    pid: int
    address: str


def health_status(address: str, timeout_s: float = 1.0) -> str:
    """SERVING / NOT_SERVING / UNREACHABLE for the server's overall health."""
    try:
        with open_channel(address, security=ClientSecurity.from_config(ServerConfig.from_env("cli"))) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout_s)
            return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    except grpc.RpcError:
        return "UNREACHABLE"


def up(base_port: int | None = None, wait_s: float = 30.0) -> list[ServiceProcess]:
    """Start every service that is not already running; return the running set."""
    root = state_dir()
    (root / "logs").mkdir(parents=True, exist_ok=True)
    running = {p.name: p for p in read_state() if _alive(p.pid)}
    procs = dict(running)
    ports = {name: entry.default_port if base_port is None else base_port + i
             for i, (name, entry) in enumerate(SERVICES.items())}
    for name in SERVICES:
        if name in running:
            continue
        port = ports[name]
        env = dict(os.environ, LASTV2X_PORT=str(port), LASTV2X_HOST="127.0.0.1")
        if name == "search":  # the search service composes the others over gRPC, as in Kubernetes
            env.setdefault("LASTV2X_SEARCH_LLM_TARGET", f"127.0.0.1:{ports['llm']}")
            env.setdefault("LASTV2X_SEARCH_GROUNDING_TARGET", f"127.0.0.1:{ports['grounding']}")
            env.setdefault("LASTV2X_SEARCH_SIMULATOR_TARGETS", f"127.0.0.1:{ports['simulator']}")
            env.setdefault("LASTV2X_SEARCH_DATA_DIR", str(root / "search"))
        log = open(root / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        child = subprocess.Popen([sys.executable, "-m", f"services.{name}"], env=env, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        procs[name] = ServiceProcess(name, child.pid, f"127.0.0.1:{port}")
    _write_state(list(procs.values()))
    deadline = time.monotonic() + wait_s
    for p in procs.values():
        while health_status(p.address) != "SERVING":
            if time.monotonic() > deadline or not _alive(p.pid):
                raise RuntimeError(f"{p.name} did not become healthy on {p.address}; "
                                   f"see {root / 'logs' / (p.name + '.log')}")
            time.sleep(0.1)
    return list(procs.values())


def down(timeout_s: float = 10.0) -> list[str]:
    """SIGTERM every service at once, wait for all to drain, SIGKILL stragglers."""
    procs = [p for p in read_state() if _alive(p.pid)]
    for p in procs:
        os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while any(_alive(p.pid) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    for p in procs:
        if _alive(p.pid):
            os.kill(p.pid, signal.SIGKILL)
    path = state_dir() / "stack.json"
    if path.exists():
        path.unlink()
    return [p.name for p in procs]


def read_state() -> list[ServiceProcess]:
    path = state_dir() / "stack.json"
    if not path.exists():
        return []
    return [ServiceProcess(**row) for row in json.loads(path.read_text())]


def address_of(name: str) -> str | None:
    return next((p.address for p in read_state() if p.name == name), None)


def _write_state(procs: list[ServiceProcess]) -> None:
    path = state_dir() / "stack.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([p.__dict__ for p in procs], indent=1))
    tmp.replace(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie child of ours is not alive
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True
