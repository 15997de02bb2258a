"""Issue 16: Verify with deeply nested or huge-number ``spec_json`` is INVALID_ARGUMENT naming
``spec_json`` (it was UNKNOWN: a RecursionError and Python's 4,300-digit limit escaped)."""

from __future__ import annotations

import grpc
import pytest

from lastv2x.rpc.errors import field_violations
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.rpc.services import SERVICES
from lastv2x.v1 import llm_pb2, llm_pb2_grpc


@pytest.fixture(scope="module")
def llm():
    server, port = create_server(ServerConfig("llm", log_json=False), SERVICES["llm"].register())
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield llm_pb2_grpc.LlmServiceStub(channel)
    server.stop(0)


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    '{"application": "RLVW", "ego": ' + '{"a": ' * 3000 + "1" + "}" * 3001,
    '{"application": "RLVW", "ego": ' + '{"a": ' * 40 + "1" + "}" * 41,
    '{"application": "RLVW", "ego": {"speed_mps": ' + "9" * 4300 + "}}",
    '{"application": "RLVW", "seed": ' + "9" * 5000 + "}",
], ids=["deep-array", "deep-object", "nested-40", "4300-digits", "5000-digits"])
def test_hostile_spec_json_is_invalid_argument(llm, text) -> None:
    with pytest.raises(grpc.RpcError) as info:
        llm.Verify(llm_pb2.VerifyRequest(spec_json=text), timeout=30)
    err = info.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    assert field_violations(err)[0][0].startswith("spec_json")
    assert len(err.details()) < 1100 and "9999999999" * 20 not in err.details()
