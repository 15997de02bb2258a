"""The local stack: all five services as processes on loopback ports.

``lastv2x up`` starts them (state in ``$LASTV2X_STATE_DIR`` or ``./.lastv2x``),
``status`` health-checks them, ``down`` sends SIGTERM and waits.

``up`` also starts a supervisor (a detached ``python -m lastv2x_app.stack --supervise``; off
with ``lastv2x up --no-supervise``): a service process that exits while the stack is up is
started again on its port, after a back-off that doubles while it keeps dying within
``RESTART_WINDOW_S`` of its last start; each restart is counted in the state file and shown
by ``lastv2x status``. ``down`` stops the supervisor first, then the services.
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


SUPERVISE_POLL_S = 0.5  # the supervisor looks at its services this often
RESTART_WINDOW_S = 10.0  # a service dying again within this of its start waits longer before the next
MAX_BACKOFF_S = 30.0


@dataclass(frozen=True)
class ServiceProcess:
    name: str
    pid: int
    address: str
    restarts: int = 0  # times the supervisor started it again after it died


def health_status(address: str, timeout_s: float = 1.0) -> str:
    """SERVING / NOT_SERVING / UNREACHABLE for the server's overall health."""
    try:
        with open_channel(address, security=ClientSecurity.from_config(ServerConfig.from_env("cli"))) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout_s)
            return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    except grpc.RpcError:
        return "UNREACHABLE"


def up(base_port: int | None = None, wait_s: float = 30.0, supervise: bool = True) -> list[ServiceProcess]:
    """Start every service that is not already running (and the supervisor); return the running set."""
    root = state_dir()
    (root / "logs").mkdir(parents=True, exist_ok=True)
    running = {p.name: p for p in read_state() if _alive(p.pid)}
    procs = dict(running)
    ports = {name: entry.default_port if base_port is None else base_port + i
             for i, (name, entry) in enumerate(SERVICES.items())}
    for name in SERVICES:
        if name in running:
            continue
        restarts = next((p.restarts for p in read_state() if p.name == name), 0)
        procs[name] = ServiceProcess(name, _spawn(name, ports), f"127.0.0.1:{ports[name]}", restarts)
    _write_state([procs[name] for name in SERVICES])
    deadline = time.monotonic() + wait_s
    for p in procs.values():
        while health_status(p.address) != "SERVING":
            if time.monotonic() > deadline or not _alive(p.pid):
                raise RuntimeError(f"{p.name} did not become healthy on {p.address}; "
                                   f"see {root / 'logs' / (p.name + '.log')}")
            time.sleep(0.1)
    if supervise and supervisor_pid() is None:
        log = open(root / "logs" / "supervisor.log", "ab")  # noqa: SIM115 - owned by the child
        child = subprocess.Popen([sys.executable, "-m", "lastv2x_app.stack", "--supervise"], stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True,
                                 env=dict(os.environ, LASTV2X_STATE_DIR=str(root)))
        (root / "supervisor.pid").write_text(str(child.pid))
    return list(procs.values())


def _ports(procs: list[ServiceProcess]) -> dict[str, int]:
    return {p.name: int(p.address.rsplit(":", 1)[1]) for p in procs}


def _spawn(name: str, ports: dict[str, int]) -> int:
    """Start one service process on its port (detached: it outlives ``lastv2x up``); its pid."""
    root = state_dir()
    env = dict(os.environ, LASTV2X_PORT=str(ports[name]), LASTV2X_HOST="127.0.0.1")
    env.setdefault("LASTV2X_SIMULATOR_WARM_UP", "1")  # as the image: SERVING once warm (``up`` waits for it)
    if name == "search":  # the search service composes the others over gRPC, as in Kubernetes
        env.setdefault("LASTV2X_SEARCH_LLM_TARGET", f"127.0.0.1:{ports['llm']}")
        env.setdefault("LASTV2X_SEARCH_GROUNDING_TARGET", f"127.0.0.1:{ports['grounding']}")
        env.setdefault("LASTV2X_SEARCH_SIMULATOR_TARGETS", f"127.0.0.1:{ports['simulator']}")
        env.setdefault("LASTV2X_SEARCH_DATA_DIR", str(root / "search"))
    with open(root / "logs" / f"{name}.log", "ab") as log:  # the child has its own descriptor
        child = subprocess.Popen([sys.executable, "-m", f"services.{name}"], env=env, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    return child.pid


def supervisor_pid() -> int | None:
    """The running supervisor's pid (None: none runs)."""
    path = state_dir() / "supervisor.pid"
    try:
        pid = int(path.read_text())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def supervise(poll_s: float = SUPERVISE_POLL_S) -> None:
    """Restart services that exit, until SIGTERM / SIGINT (``down``) or the state file goes away."""
    stop = False

    def _stop(_signum: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    started: dict[str, float] = {}  # last start by this supervisor (monotonic)
    backoff: dict[str, float] = {}
    due: dict[str, float] = {}  # when a dead service may be started again
    while not stop:
        procs = read_state()
        if not procs:
            return
        changed = False
        for i, p in enumerate(procs):
            if _alive(p.pid):
                continue
            now = time.monotonic()
            if p.name not in due:  # just found dead: back off longer if it died soon after a restart
                quick = now - started.get(p.name, -1e18) < RESTART_WINDOW_S
                backoff[p.name] = min(MAX_BACKOFF_S, 2 * backoff.get(p.name, 0.25)) if quick else 0.0
                due[p.name] = now + backoff[p.name]
                print(json.dumps({"event": "service_exited", "service": p.name, "pid": p.pid,
                                  "restart_in_s": backoff[p.name]}), flush=True)
            if now < due[p.name] or stop:
                continue
            pid = _spawn(p.name, _ports(procs))
            procs[i] = ServiceProcess(p.name, pid, p.address, p.restarts + 1)
            started[p.name] = now
            del due[p.name]
            changed = True
            print(json.dumps({"event": "service_restarted", "service": p.name, "pid": pid,
                              "restarts": p.restarts + 1}), flush=True)
        if changed:
            _write_state(procs)
        time.sleep(poll_s)


def down(timeout_s: float = 10.0) -> list[str]:
    """Stop the supervisor, then SIGTERM every service at once, wait for all to drain, SIGKILL stragglers."""
    sup = supervisor_pid()
    if sup is not None:
        os.kill(sup, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _alive(sup) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(sup):
            os.kill(sup, signal.SIGKILL)
    (state_dir() / "supervisor.pid").unlink(missing_ok=True)
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
    except ChildProcessError:  # not ours: a zombie another process has not reaped is not alive either
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return True  # no procfs (macOS): the signal probe is all there is
        return stat.rsplit(")", 1)[-1].split()[0] != "Z"


if __name__ == "__main__":
    if sys.argv[1:] != ["--supervise"]:
        raise SystemExit("usage: python -m lastv2x_app.stack --supervise   (started by lastv2x up)")
    supervise()
