"""The service runtime over real gRPC on loopback (port 0)."""

from __future__ import annotations

import json

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lastv2x.rpc.convert import message_to_dict, spec_from_proto, spec_to_proto
from lastv2x.rpc.errors import field_violations
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.rpc.services import SERVICES
from lastv2x.v1 import common_pb2, llm_pb2, llm_pb2_grpc

MAX_BYTES = 64 * 1024


@pytest.fixture(scope="module")
def llm_address():
    server, port = create_server(ServerConfig("llm", max_message_bytes=MAX_BYTES, log_json=False),
                                 SERVICES["llm"].register())
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(0)


@pytest.fixture()
def llm(llm_address):
    with grpc.insecure_channel(llm_address) as channel:
        yield llm_pb2_grpc.LlmServiceStub(channel)


def test_health_is_serving(llm_address) -> None:
    with grpc.insecure_channel(llm_address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for name in ("", "lastv2x.v1.LlmService"):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_verify_typed_and_json_agree(llm) -> None:
    spec = {"application": "IMA", "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 12.0}]}
    typed = llm.Verify(llm_pb2.VerifyRequest(spec=spec_to_proto(spec_from_json(spec))), timeout=5)
    text = llm.Verify(llm_pb2.VerifyRequest(spec_json=json.dumps(spec)), timeout=5)
    assert typed == text
    checks = [f.check for f in typed.report.findings]
    assert "timing" in checks
    assert not typed.report.ok


def spec_from_json(data):
    from lastv2x.core.spec import parse_spec

    return parse_spec(data)


def test_out_of_range_value_names_the_field(llm) -> None:
    spec = common_pb2.ScenarioSpec(application=common_pb2.APPLICATION_RLVW)
    spec.ego.speed_mps = -4.0
    with pytest.raises(grpc.RpcError) as info:
        llm.Verify(llm_pb2.VerifyRequest(spec=spec), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    fields = [f for f, _ in field_violations(info.value)]
    assert fields == ["spec.ego.speed_mps"]


def test_unknown_enum_number_is_invalid_argument(llm) -> None:
    spec = common_pb2.ScenarioSpec(application=99)  # type: ignore[arg-type]
    with pytest.raises(grpc.RpcError) as info:
        llm.Verify(llm_pb2.VerifyRequest(spec=spec), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field_violations(info.value)[0][0] == "spec.application"


def test_malformed_json_is_invalid_argument(llm) -> None:
    with pytest.raises(grpc.RpcError) as info:
        llm.Verify(llm_pb2.VerifyRequest(spec_json='{"application": "RLVW",'), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not JSON" in info.value.details()
    assert field_violations(info.value)[0][0] == "spec_json"


def test_unknown_field_in_json_is_rejected_with_hint(llm) -> None:
    with pytest.raises(grpc.RpcError) as info:
        llm.Verify(llm_pb2.VerifyRequest(spec_json='{"application": "RLVW", "warp": 9}'), timeout=5)
    (field, description), = field_violations(info.value)
    assert field == "spec_json.warp" and "hint" in description


def test_oversized_message_is_resource_exhausted(llm) -> None:
    with pytest.raises(grpc.RpcError) as info:
        llm.Verify(llm_pb2.VerifyRequest(spec_json="x" * (MAX_BYTES + 10)), timeout=5)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_server_keeps_serving_after_bad_input(llm) -> None:
    for _ in range(3):
        with pytest.raises(grpc.RpcError):
            llm.Verify(llm_pb2.VerifyRequest(spec_json="[]"), timeout=5)
    ok = llm.Verify(llm_pb2.VerifyRequest(spec_json='{"application": "GLOSA"}'), timeout=5)
    assert ok.report.ok


def test_metrics_count_calls_by_code(llm_address) -> None:
    server, port = create_server(ServerConfig("llm", log_json=False), SERVICES["llm"].register())
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = llm_pb2_grpc.LlmServiceStub(channel)
            stub.Verify(llm_pb2.VerifyRequest(spec_json='{"application": "GLOSA"}'), timeout=5)
            with pytest.raises(grpc.RpcError):
                stub.Verify(llm_pb2.VerifyRequest(spec_json="nope"), timeout=5)
        registry = server.metrics.registry  # type: ignore[attr-defined]
        method = "/lastv2x.v1.LlmService/Verify"
        ok = registry.get_sample_value("lastv2x_rpc_calls_total", {"service": "llm", "method": method, "code": "OK"})
        bad = registry.get_sample_value("lastv2x_rpc_calls_total",
                                        {"service": "llm", "method": method, "code": "INVALID_ARGUMENT"})
        assert (ok, bad) == (1.0, 1.0)
    finally:
        server.stop(0)


def test_config_reads_environment_once() -> None:
    cfg = ServerConfig.from_env("llm", {"LASTV2X_PORT": "6000", "LASTV2X_MAX_MESSAGE_BYTES": "1024",
                                        "LASTV2X_LOG_JSON": "false", "LASTV2X_LLM_BASE_URL": "http://x"})
    assert (cfg.port, cfg.max_message_bytes, cfg.log_json) == (6000, 1024, False)


def test_service_settings_are_typed_and_reach_the_servicer() -> None:
    settings = SERVICES["llm"].settings_from_env({"LASTV2X_LLM_MAX_TEXT_CHARS": "12",
                                                  "LASTV2X_LLM_ASSIGNABLE_MAPS": "corridor, t_junction"})
    assert settings.max_text_chars == 12 and settings.assignable_maps == ("corridor", "t_junction")
    server, port = create_server(ServerConfig("llm", log_json=False), SERVICES["llm"].register(settings))
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.RpcError) as info:
                llm_pb2_grpc.LlmServiceStub(channel).ParseIntent(
                    llm_pb2.ParseIntentRequest(text="RLVW at a busy junction", seed=1), timeout=10)
    finally:
        server.stop(0)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "12-character" in info.value.details()


def test_spec_round_trips_through_proto() -> None:
    from lastv2x.core.spec import parse_spec

    spec = parse_spec({"application": "LTA", "ego": {"maneuver": "left"}, "v2x": {"penetration": 0.0},
                       "agents": [{"id": "opp", "role": "opposing", "equipped": False}],
                       "faults": [{"name": "d", "operator": "delay", "stream": "BSM", "magnitude": 0.8}]})
    assert spec_from_proto(spec_to_proto(spec)) == spec
    assert message_to_dict(spec_to_proto(spec))["v2x"]["penetration"] == 0.0


def test_a_channel_model_round_trips_and_the_default_keeps_spec_bytes() -> None:
    from lastv2x.core.errors import InvalidArgument
    from lastv2x.core.spec import ChannelModel, parse_spec

    plain = parse_spec({"application": "FCW"})
    assert "model" not in plain.model_dump_json()  # specs written before the field keep their bytes
    spec = parse_spec({"application": "FCW", "v2x": {"channel": {"model": "tr37885_highway"}}})
    assert spec.v2x.channel.model is ChannelModel.TR37885_HIGHWAY
    assert spec_from_proto(spec_to_proto(spec)) == spec
    assert spec_to_proto(spec).v2x.channel.model == common_pb2.CHANNEL_MODEL_TR37885_HIGHWAY
    checked = parse_spec({"application": "FCW", "v2x": {"channel": {"model": "winner_b1_80211p"}}})
    assert spec_to_proto(checked).v2x.channel.model == common_pb2.CHANNEL_MODEL_WINNER_B1_80211P
    assert spec_from_proto(spec_to_proto(checked)) == checked
    with pytest.raises(InvalidArgument) as info:
        parse_spec({"application": "FCW", "v2x": {"channel": {"model": "free_space"}}})
    assert info.value.violations[0].field == "v2x.channel.model"
