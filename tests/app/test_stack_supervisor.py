"""``lastv2x up`` supervises its services (issue 16, item 7): one killed with SIGKILL is started again
on its port, healthy, and ``lastv2x status`` shows restart count 1."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from lastv2x_app import cli, stack


def _free_base(count: int = 5) -> int:
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + count >= 65535:
            continue
        try:
            held = []
            for port in range(base, base + count):
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise RuntimeError("no run of free ports")


def test_a_killed_service_is_restarted_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LASTV2X_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LASTV2X_STRAP_STORE_DIR", str(tmp_path / "strap"))
    monkeypatch.setenv("LASTV2X_GROUNDING_CACHE_DIR", str(tmp_path / "catalogue"))
    monkeypatch.setenv("LASTV2X_SIMULATOR_TRACE_DIR", str(tmp_path / "traces"))
    stack.up(_free_base(), wait_s=60)
    try:
        assert stack.supervisor_pid() is not None
        victim = next(p for p in stack.read_state() if p.name == "llm")
        assert victim.restarts == 0
        os.kill(victim.pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:
            now = next(p for p in stack.read_state() if p.name == "llm")
            if now.restarts == 1 and stack.health_status(now.address) == "SERVING":
                break
            assert time.monotonic() < deadline, f"llm not restarted: {now}"
            time.sleep(0.2)
        assert now.pid != victim.pid and now.address == victim.address
        capsys.readouterr()
        assert cli.main(["status", "--json"]) == 0
        rows = {r["service"]: r for r in json.loads(capsys.readouterr().out)}
        assert rows["llm"]["restarts"] == 1 and rows["llm"]["health"] == "SERVING"
        assert {r["restarts"] for name, r in rows.items() if name != "llm"} == {0}
    finally:
        stopped = stack.down()
    assert len(stopped) == 5
    assert stack.supervisor_pid() is None  # down stopped the supervisor: nothing is started again
    time.sleep(1.0)
    assert stack.read_state() == []
