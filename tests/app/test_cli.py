"""The ``lastv2x`` command in-process agrees with the services it stands in for."""

from __future__ import annotations

import json

import grpc
import pytest

from lastv2x.core.spec import parse_spec
from lastv2x.rpc.convert import spec_from_proto
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.rpc.services import SERVICES
from lastv2x.v1 import llm_pb2, llm_pb2_grpc
from lastv2x_app import cli
from services.llm.maps import BUILTIN_MAPS, CARLA_TOWNS

INTENTS = ("A car approaches an intersection.",
           "IMA with cross traffic.",
           "Check that red-light violation warning stays safe when the SPaT feed freezes just before amber.")


def _parse_in_process(text: str, seed: int, capsys: pytest.CaptureFixture[str]) -> dict:
    assert cli.main(["parse", text, "--seed", str(seed), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["spec"]


def _parse_over_grpc(texts_seeds: list[tuple[str, int]]) -> list[dict]:
    entry = SERVICES["llm"]
    server, port = create_server(ServerConfig("llm", log_json=False), entry.register(entry.settings_from_env()))
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = llm_pb2_grpc.LlmServiceStub(channel)
            replies = [stub.ParseIntent(llm_pb2.ParseIntentRequest(text=t, seed=s), timeout=30) for t, s in texts_seeds]
    finally:
        server.stop(0)
    return [spec_from_proto(r.spec, "spec").model_dump(mode="json") for r in replies]


def _canonical(data: dict) -> dict:
    """The CLI's JSON spec through the same model and dump as the RPC's converted spec."""
    return parse_spec(data).model_dump(mode="json")


@pytest.mark.parametrize("assignable", [None, ",".join(CARLA_TOWNS)])
def test_parse_in_process_equals_parse_intent_rpc(assignable: str | None, monkeypatch, capsys) -> None:
    if assignable is None:
        monkeypatch.delenv("LASTV2X_LLM_ASSIGNABLE_MAPS", raising=False)
    else:
        monkeypatch.setenv("LASTV2X_LLM_ASSIGNABLE_MAPS", assignable)
    cases = [(text, seed) for text in INTENTS for seed in (0, 3, 7, 11)]
    local = [_canonical(_parse_in_process(t, s, capsys)) for t, s in cases]
    assert local == _parse_over_grpc(cases)
    towns = {spec["map"]["town"] for spec in local if spec["map"].get("town")}
    assert towns and towns <= set(BUILTIN_MAPS if assignable is None else CARLA_TOWNS)
