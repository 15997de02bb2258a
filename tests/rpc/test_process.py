"""A service process: serves health, then drains and exits 0 on SIGTERM; the CLI verifies specs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

from lastv2x_app.stack import health_status


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigterm_drains_and_exits_zero() -> None:
    port = _free_port()
    env = dict(os.environ, LASTV2X_PORT=str(port), LASTV2X_GRACE_S="1")
    proc = subprocess.Popen([sys.executable, "-m", "services.llm"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while health_status(f"127.0.0.1:{port}") != "SERVING":
            assert proc.poll() is None and time.monotonic() < deadline, "service did not start"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        log = [json.loads(line) for line in proc.stderr.read().splitlines() if line.startswith("{")]
        assert {"service": "llm", "event": "shutdown", "signal": signal.SIGTERM} in log
    finally:
        if proc.poll() is None:
            proc.kill()


def test_cli_verify_json_and_exit_codes(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"application": "IMA"}))
    out = subprocess.run([sys.executable, "-m", "lastv2x_app.cli", "verify", str(bad), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert not report["ok"] and report["findings"][0]["check"] == "roster"
    broken = tmp_path / "broken.json"
    broken.write_text('{"application": ')
    out = subprocess.run([sys.executable, "-m", "lastv2x_app.cli", "verify", str(broken), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and json.loads(out.stdout)["error"] == "INVALID_ARGUMENT"
    assert "Traceback" not in out.stderr


def test_cli_execute_spec_json(tmp_path) -> None:
    spec = {"application": "RLVW", "seed": 7, "signal": {"offset_s": 22.353},
            "faults": [{"name": "f", "operator": "freeze", "stream": "SPAT",
                        "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}]}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    out = subprocess.run([sys.executable, "-m", "lastv2x_app.cli", "execute", str(path), "--json"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["admitted"] and outcome["md"]["failed"] and not outcome["gt"]["failed"]


def test_cli_ground_then_execute_the_program(tmp_path) -> None:
    spec = {"application": "IMA", "seed": 2, "map": {"town": "signalized_4way"},
            "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 0.5}]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ, LASTV2X_GROUNDING_CACHE_DIR=str(tmp_path / "catalogue"))
    out = subprocess.run([sys.executable, "-m", "lastv2x_app.cli", "ground", "spec.json", "--out", "program.json",
                          "--json"], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["map_name"] == "signalized_4way"
    run = subprocess.run([sys.executable, "-m", "lastv2x_app.cli", "execute", "program.json", "--json"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    outcome = json.loads(run.stdout)
    assert not outcome["admitted"] and not outcome["gt"]["failed"]  # no fault: nothing to admit
