"""Issue 16: STRaP's hostile-client findings over real gRPC on loopback: a file that is the MCAP
magic twice, corrupt zstd / lz4 chunks -> INVALID_ARGUMENT naming the file, nothing left in the
store; Prioritize with a negative seed or vectors of unequal length -> INVALID_ARGUMENT."""

from __future__ import annotations

import grpc
import pytest

from lastv2x.rpc.errors import field_violations
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import common_pb2, strap_pb2, strap_pb2_grpc
from services.strap.readers import write_trace
from services.strap.servicer import register
from services.strap.store import StrapStore

MAGIC = b"\x89MCAP0\r\n"


@pytest.fixture(scope="module")
def strap(tmp_path_factory):
    root = tmp_path_factory.mktemp("strap")
    store = StrapStore(root, max_bytes=8 * 1024 * 1024)
    server, port = create_server(ServerConfig("strap", log_json=False), lambda s: register(s, store=store))
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield strap_pb2_grpc.StrapServiceStub(channel), root
    server.stop(0)


def _corrupt(tmp_path, compression: str) -> bytes:
    path = tmp_path / f"ok-{compression}.mcap"
    write_trace(path, [("/a", t * 1_000_000, {"text": f"hello-{t}", "pad": "x" * 64}) for t in range(400)],
                compression=compression)
    data = bytearray(path.read_bytes())
    tag = len(compression).to_bytes(4, "little") + compression.encode()
    start = data.index(tag) + len(tag) + 8 + 16  # past the records' length and the frame's header
    data[start: start + 200] = bytes(b ^ 0x5A for b in data[start: start + 200])
    return bytes(data)


def _files(root) -> list:
    return [p for p in root.rglob("*") if p.is_file() and not p.name.startswith("strap.db")]


@pytest.mark.parametrize("kind", ["magic-twice", "zstd", "lz4", "truncated-zstd"])
def test_corrupt_recording_is_invalid_argument_naming_the_file(strap, tmp_path, kind) -> None:
    stub, root = strap
    if kind == "magic-twice":
        data = MAGIC + MAGIC
    elif kind == "truncated-zstd":
        data = _corrupt(tmp_path, "zstd")[:-300]
    else:
        data = _corrupt(tmp_path, kind)
    name = f"drive-{kind}.mcap"
    with pytest.raises(grpc.RpcError) as info:
        stub.Ingest(iter([strap_pb2.IngestRequest(name=name, chunk=data)]), timeout=30)
    err = info.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    assert name in err.details()
    assert str(root) not in err.details() and ".incoming" not in err.details()
    assert field_violations(err)
    assert _files(root) == []


def test_prioritize_negative_seed_and_unequal_vectors(strap) -> None:
    stub, _ = strap
    rd = strap_pb2.PRIORITIZATION_METHOD_RD
    segs = [common_pb2.Segment(vector=[1, 2]), common_pb2.Segment(vector=[1, 3])]
    for request, field in ((strap_pb2.PrioritizeRequest(method=rd, seed=-1, segments=segs), "seed"),
                           (strap_pb2.PrioritizeRequest(method=rd, segments=[common_pb2.Segment(vector=[1, 2]),
                                                                            common_pb2.Segment(vector=[1])]),
                            "segments")):
        with pytest.raises(grpc.RpcError) as info:
            stub.Prioritize(request, timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert [f for f, _ in field_violations(info.value)] == [field]
