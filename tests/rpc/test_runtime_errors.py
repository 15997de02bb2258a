"""Issue 16, item 4: errors that say what and never leak, and metrics that record the real code.

A toy service on loopback (port 0) whose handlers fail in each way a real one can.
"""

from __future__ import annotations

import json
import logging
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.rpc.errors import MAX_MESSAGE_CHARS, field_violations
from lastv2x.rpc.server import ServerConfig, create_server

SERVICE = "test.Faulty"
REQ = health_pb2.HealthCheckRequest
REPLY = health_pb2.HealthCheckResponse


def _boom(request, context):
    raise KeyError("/work/secret/config.yaml")  # an unexpected bug whose text names a server path


def _bounded(request, context):
    raise InvalidArgument([FieldViolation("kind" * 1000, "bad value " + "k" * 10_000 + " at /home/svc/app/x.py")
                           for _ in range(20_000)])


def _aborts(request, context):
    context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")


def _slow(request, context):
    time.sleep(0.6)
    return REPLY()


def _echo_stream(requests, context):
    n = sum(1 for _ in requests)
    return REPLY(status=n)


def _register(server: grpc.Server) -> list[str]:
    unary = {name: grpc.unary_unary_rpc_method_handler(fn, request_deserializer=REQ.FromString,
                                                       response_serializer=REPLY.SerializeToString)
             for name, fn in (("Boom", _boom), ("Bounded", _bounded), ("Aborts", _aborts), ("Slow", _slow))}
    unary["Count"] = grpc.stream_unary_rpc_method_handler(_echo_stream, request_deserializer=REQ.FromString,
                                                          response_serializer=REPLY.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, unary),))
    return []


@pytest.fixture(scope="module")
def served():
    server, port = create_server(ServerConfig("faulty", log_json=True), _register)
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield server, channel
    server.stop(0)


def _call(channel, method: str, request: bytes = b"", timeout: float = 5.0):
    return channel.unary_unary(f"/{SERVICE}/{method}")(request, timeout=timeout)


def _count(server, method: str, code: str) -> float:
    registry = server.metrics.registry
    value = registry.get_sample_value("lastv2x_rpc_calls_total",
                                      {"service": "faulty", "method": f"/{SERVICE}/{method}", "code": code})
    return value or 0.0


def _lines(caplog) -> list[dict]:
    out = []
    for r in caplog.records:
        try:
            out.append(json.loads(r.getMessage()))
        except ValueError:
            out.append({"raw": r.getMessage()})
    return out


def test_unexpected_exception_is_internal_with_an_error_id_in_the_log(served, caplog) -> None:
    server, channel = served
    caplog.set_level(logging.INFO, logger="lastv2x.rpc")
    ids = []
    for _ in range(3):
        with pytest.raises(grpc.RpcError) as info:
            _call(channel, "Boom")
        assert info.value.code() == grpc.StatusCode.INTERNAL
        details = info.value.details()
        assert "/work" not in details and "secret" not in details and "KeyError" not in details
        ids.append(details.split()[2])
    assert len(set(ids)) == 3
    lines = _lines(caplog)
    tracebacks = [x for x in lines if x.get("event") == "internal_error"]
    assert len(tracebacks) == 1, "one traceback line per distinct cause (rate limited)"
    assert tracebacks[0]["error_id"] == ids[0] and "KeyError" in tracebacks[0]["traceback"]
    access = [x for x in lines if x.get("method", "").endswith("/Boom") and "code" in x]
    assert [x["error_id"] for x in access] == ids
    assert {x["cause"] for x in access} == {tracebacks[0]["cause"]}
    assert all(x["code"] == "INTERNAL" for x in access)
    assert _count(server, "Boom", "INTERNAL") == 3


def test_invalid_argument_is_bounded_and_never_leaks_a_path(served) -> None:
    _, channel = served
    with pytest.raises(grpc.RpcError) as info:
        _call(channel, "Bounded")
    err = info.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # not RESOURCE_EXHAUSTED (trailer over 16 KiB)
    assert len(err.details()) <= MAX_MESSAGE_CHARS
    violations = field_violations(err)
    assert 1 < len(violations) <= 10 and violations[-1][1].endswith("more violations not shown")
    trailer = sum(len(k) + len(v) for k, v in err.trailing_metadata())
    assert trailer < 12 * 1024
    assert all("/home" not in d for _, d in violations)
    assert violations[0][0].startswith("kindkind")


def test_an_abort_is_counted_with_its_code(served) -> None:
    server, channel = served
    with pytest.raises(grpc.RpcError) as info:
        _call(channel, "Aborts")
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert _count(server, "Aborts", "NOT_FOUND") == 1 and _count(server, "Aborts", "OK") == 0


def test_an_expired_deadline_is_counted_as_deadline_exceeded(served) -> None:
    server, channel = served
    with pytest.raises(grpc.RpcError) as info:
        _call(channel, "Slow", timeout=0.1)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    time.sleep(0.9)  # the handler finishes after the client gave up
    assert _count(server, "Slow", "DEADLINE_EXCEEDED") == 1 and _count(server, "Slow", "OK") == 0


def test_undecodable_bytes_are_invalid_argument_without_a_traceback(served, caplog) -> None:
    server, channel = served
    caplog.set_level(logging.DEBUG)
    garbage = b"\xff\xff\xff\xff\x0f"
    for _ in range(3):
        with pytest.raises(grpc.RpcError) as info:
            _call(channel, "Boom", garbage)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "grpc.health.v1.HealthCheckRequest" in info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        channel.stream_unary(f"/{SERVICE}/Count")(iter([REQ().SerializeToString(), garbage]), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert _count(server, "Boom", "INVALID_ARGUMENT") == 3


def test_scrub_removes_paths_and_pydantic_dumps_but_keeps_channel_names() -> None:
    from lastv2x.rpc.errors import scrub

    text = ("cannot open /work/main/.lastv2x/traces/a.mcap or file:///tmp/x/b.mcap; channel /vehicle/pose; "
            "Input should be a valid number [type=float_parsing, input_value='xxxxxxxx', input_type=str]\n"
            "    For further information visit https://errors.pydantic.dev/2.9/v/float_parsing")
    out = scrub(text)
    assert "/work" not in out and "/tmp" not in out and "input_value" not in out and "pydantic.dev" not in out
    assert ".../a.mcap" in out and ".../b.mcap" in out and "/vehicle/pose" in out
    assert len(scrub("x" * 100_000)) <= MAX_MESSAGE_CHARS
