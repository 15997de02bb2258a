"""The STRaP service over real gRPC on loopback, on a real simulator trace and on real third-party files."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from lastv2x.core.spec import parse_spec
from lastv2x.rpc.errors import field_violations
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import strap_pb2, strap_pb2_grpc
from services.strap.servicer import register
from services.strap.store import StrapStore

SPEC = {"application": "RLVW", "seed": 7, "signal": {"offset_s": 22.353},
        "faults": [{"name": "f", "operator": "freeze", "stream": "SPAT",
                    "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}]}


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    from services.simulator.execute import SimulatorLimits, program_for, run_one

    out = tmp_path_factory.mktemp("traces")
    _outcome, uri = run_one(program_for(parse_spec(SPEC)), None, SimulatorLimits(trace_dir=out), write_trace=True)
    return Path(uri.removeprefix("file://"))


@pytest.fixture(scope="module")
def strap(tmp_path_factory):
    store = StrapStore(tmp_path_factory.mktemp("strap"), max_bytes=8 * 1024 * 1024)
    server, port = create_server(ServerConfig("strap", log_json=False), lambda s: register(s, store=store))
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield strap_pb2_grpc.StrapServiceStub(channel), store
    server.stop(0)


def upload(stub, path: Path, name: str | None = None, chunk: int = 64 * 1024):
    data = path.read_bytes()
    reqs = [strap_pb2.IngestRequest(name=name or path.name, chunk=data[:chunk])]
    reqs += [strap_pb2.IngestRequest(chunk=data[i:i + chunk]) for i in range(chunk, len(data), chunk)]
    return stub.Ingest(iter(reqs), timeout=60)


def test_ingest_reduce_prioritize_evaluate_export(strap, trace: Path, tmp_path: Path) -> None:
    stub, _store = strap
    rec = upload(stub, trace).recording
    assert rec.format in ("mcap", "platform_trace") and rec.size_bytes == trace.stat().st_size
    assert "/recon/ego" in {c.name for c in rec.channels}
    red = stub.Reduce(strap_pb2.ReduceRequest(recording_id=rec.id, module="application"), timeout=60)
    assert red.segments and 0.0 < red.reduction_ratio < 1.0
    assert all(s.preroll_start_ns <= s.start_ns for s in red.segments)
    order = stub.Prioritize(strap_pb2.PrioritizeRequest(segments=red.segments), timeout=60).segments
    assert sorted(s.id for s in order) == sorted(s.id for s in red.segments)
    assert [s.rank for s in order] == list(range(1, len(order) + 1))
    n = len(order)
    column = strap_pb2.FaultColumn(revealed=[i == n - 1 for i in range(n)])
    ev = stub.Evaluate(strap_pb2.EvaluateRequest(faults=[column]), timeout=30)
    assert ev.faults_detected == 1 and ev.top_k == n
    assert ev.apfd == pytest.approx(1 - n / n + 1 / (2 * n))
    out = tmp_path / "segments.mcap"
    out.write_bytes(b"".join(r.chunk for r in stub.ExportSegments(
        strap_pb2.ExportSegmentsRequest(recording_id=rec.id), timeout=60)))
    from mcap.reader import make_reader

    with open(out, "rb") as fh:
        assert sum(1 for _ in make_reader(fh).iter_messages()) > 0


def test_truncated_upload_never_becomes_a_recording(strap, trace: Path, tmp_path: Path) -> None:
    stub, store = strap
    broken = tmp_path / "broken.mcap"
    broken.write_bytes(trace.read_bytes()[: trace.stat().st_size // 2])
    before = set(p.name for p in store.root.iterdir())
    with pytest.raises(grpc.RpcError) as info:
        upload(stub, broken)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "broken.mcap" in info.value.details()
    assert set(p.name for p in store.root.iterdir()) == before
    assert not list((store.root / ".incoming").iterdir())


def test_oversized_upload_is_resource_exhausted(strap, tmp_path: Path) -> None:
    stub, store = strap
    big = tmp_path / "big.mcap"
    big.write_bytes(b"\0" * (store.max_bytes + 1))
    with pytest.raises(grpc.RpcError) as info:
        upload(stub, big, chunk=1 << 20)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert not list((store.root / ".incoming").iterdir())


def test_unknown_module_and_type_name_the_field(strap, trace: Path) -> None:
    stub, _ = strap
    rec = upload(stub, trace).recording
    with pytest.raises(grpc.RpcError) as info:
        stub.Reduce(strap_pb2.ReduceRequest(recording_id=rec.id, module="warp_drive"), timeout=30)
    assert field_violations(info.value)[0][0] == "module"
    with pytest.raises(grpc.RpcError) as info:
        stub.Ingest(iter([strap_pb2.IngestRequest(name="notes.txt", chunk=b"hello")]), timeout=30)
    assert field_violations(info.value)[0][0] == "name"
    with pytest.raises(grpc.RpcError) as info:
        stub.Reduce(strap_pb2.ReduceRequest(recording_id="nope"), timeout=30)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_ingests_a_real_ros1_bag(strap, shared_data: Path) -> None:
    stub, _ = strap
    bag = shared_data / "recordings" / "ros1_bag" / "example.bag"
    if not bag.exists():
        pytest.skip(f"{bag} absent")
    rec = upload(stub, bag).recording
    assert rec.format == "ros1" and sum(c.message_count for c in rec.channels) > 0
