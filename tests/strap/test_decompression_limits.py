"""Issue 16, item 2: decompression limits in every reader. The bomb of the issue (an ~8.5 KB
MCAP, one zstd chunk of 3 M tiny messages) is refused quickly with bounded memory, as
RESOURCE_EXHAUSTED naming the limit and the file, and nothing is left in the store; each
limit (bytes, messages, chunk) trips for MCAP (zstd, lz4), platform traces, Cyber records
and ROS bags, while streaming."""

from __future__ import annotations

import struct
import time
import tracemalloc
from pathlib import Path

import grpc
import pytest
import zstandard
from mcap.data_stream import RecordBuilder
from mcap.records import Channel, Chunk, DataEnd, Footer, Header, Schema

from lastv2x.core.errors import ResourceExhausted
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import strap_pb2, strap_pb2_grpc
from services.strap.errors import RecordingLimitError
from services.strap.readers import ReadLimits, open_recording, write_trace
from services.strap.servicer import register
from services.strap.store import StrapConfig, StrapStore

MAGIC = b"\x89MCAP0\r\n"


def bomb(n: int = 3_000_000, declared: int | None = None) -> bytes:
    """One zstd chunk of ``n`` identical 2-byte JSON messages, no index (the issue's file)."""
    body = struct.pack("<HIQQ", 1, 0, 0, 0) + b"{}"
    raw = (b"\x05" + struct.pack("<Q", len(body)) + body) * n
    b = RecordBuilder()
    Header(profile="", library="bomb").write(b)
    Schema(id=1, name="s", encoding="jsonschema", data=b"{}").write(b)
    Channel(id=1, topic="/a", message_encoding="json", schema_id=1, metadata={}).write(b)
    Chunk(compression="zstd", data=zstandard.ZstdCompressor(level=19).compress(raw), message_start_time=0,
          message_end_time=0, uncompressed_crc=0,
          uncompressed_size=len(raw) if declared is None else declared).write(b)
    DataEnd(data_section_crc=0).write(b)
    Footer(summary_start=0, summary_offset_start=0, summary_crc=0).write(b)
    return MAGIC + b.end() + MAGIC


def _files(root: Path) -> list[Path]:
    """Recordings and staging files (not the store's index database)."""
    return [p for p in root.rglob("*") if p.is_file() and not p.name.startswith("strap.db")]


def test_the_issues_bomb_is_refused_quickly_with_bounded_memory(tmp_path) -> None:
    data = bomb()
    assert len(data) < 12_000  # the issue's ~8.5 KB file
    store = StrapStore(tmp_path / "store")
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(ResourceExhausted) as info:
            store.ingest_chunks("bomb.mcap", iter([data]))
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert "bomb.mcap" in message and "max_chunk_bytes" in message and "LASTV2X_STRAP_MAX_CHUNK_BYTES" in message
    assert str(tmp_path) not in message  # names the upload, not the server path
    assert elapsed < 2.0, elapsed  # was 29 s of CPU
    assert peak < 16 << 20, peak  # was 1,037 MB; nothing is inflated
    assert _files(tmp_path / "store") == []


def test_the_bomb_under_a_larger_chunk_limit_trips_the_message_count_while_streaming(tmp_path) -> None:
    store = StrapStore(tmp_path, limits=ReadLimits(max_decompressed_bytes=1 << 30, max_messages=100_000,
                                                   max_chunk_bytes=256 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(ResourceExhausted, match="max_messages = 100000"):
            store.ingest_chunks("bomb.mcap", iter([bomb()]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 << 20, peak  # the inflated chunk (99 MB) and 100 k offsets, no message objects
    assert _files(tmp_path) == []


def test_a_chunk_header_that_lies_low_is_corrupt_not_a_bigger_allocation(tmp_path) -> None:
    path = tmp_path / "liar.mcap"
    path.write_bytes(bomb(n=100_000, declared=1000))
    with open_recording(path, limits=ReadLimits()) as rec, pytest.raises(Exception, match="inflates to 1001"):
        list(rec)


def test_total_bytes_limit_trips_across_chunks(tmp_path) -> None:
    path = tmp_path / "trace.mcap"
    write_trace(path, [("/a", t * 1_000_000, {"pad": "x" * 500}) for t in range(4000)], compression="zstd")
    with open_recording(path) as rec:  # no limits: reads
        assert sum(1 for _ in rec) == 4000
    with open_recording(path, limits=ReadLimits(max_decompressed_bytes=1 << 20)) as rec:
        with pytest.raises(RecordingLimitError, match="max_decompressed_bytes = 1048576"):
            list(rec)


@pytest.mark.parametrize("compression", ["zstd", "lz4", "none"])
def test_message_limit_in_platform_traces_of_every_compression(tmp_path, compression) -> None:
    path = tmp_path / f"trace-{compression}.mcap"
    write_trace(path, [("/a", t * 1_000_000, {"i": t}) for t in range(500)], compression=compression)
    with open_recording(path, limits=ReadLimits(max_messages=500)) as rec:
        assert len(list(rec)) == 500
    with open_recording(path, limits=ReadLimits(max_messages=499)) as rec:
        with pytest.raises(RecordingLimitError) as info:
            list(rec)
    assert info.value.limit == "max_messages" and str(path) in str(info.value)


def test_cyber_record_limits(shared_data) -> None:
    path = shared_data / "recordings" / "apollo_cyber" / "example.record.00000"
    with open_recording(path) as rec:
        n = sum(1 for _ in rec)
    assert n > 1
    with open_recording(path, limits=ReadLimits(max_messages=n - 1)) as rec, pytest.raises(RecordingLimitError):
        list(rec)
    with open_recording(path, limits=ReadLimits(max_chunk_bytes=16)) as rec, \
            pytest.raises(RecordingLimitError, match="max_chunk_bytes"):
        list(rec)


@pytest.mark.parametrize("name", ["example.bag", "example-bz2.bag", "example-lz4.bag"])
def test_rosbag_limits(shared_data, name) -> None:
    path = shared_data / "recordings" / "ros1_bag" / name
    with open_recording(path) as rec:
        n = sum(1 for _ in rec)
    assert n > 1
    with open_recording(path, limits=ReadLimits(max_messages=n - 1)) as rec, \
            pytest.raises(RecordingLimitError, match="max_messages"):
        list(rec)
    with open_recording(path, limits=ReadLimits(max_decompressed_bytes=8)) as rec, \
            pytest.raises(RecordingLimitError, match="max_decompressed_bytes"):
        list(rec)


def test_settings_from_the_environment() -> None:
    cfg = StrapConfig.from_env({"LASTV2X_STRAP_MAX_MESSAGES": "7", "LASTV2X_STRAP_MAX_CHUNK_BYTES": "1024",
                                "LASTV2X_STRAP_MAX_DECOMPRESSED_BYTES": "4096"})
    assert cfg.limits == ReadLimits(4096, 7, 1024)
    assert StrapConfig().limits == ReadLimits(2 << 30, 4_000_000, 64 << 20)


def test_over_grpc_the_bomb_is_resource_exhausted_and_nothing_is_stored(tmp_path) -> None:
    store = StrapStore(tmp_path)
    server, port = create_server(ServerConfig("strap", log_json=False), lambda s: register(s, store=store))
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = strap_pb2_grpc.StrapServiceStub(channel)
            with pytest.raises(grpc.RpcError) as info:
                stub.Ingest(iter([strap_pb2.IngestRequest(name="bomb.mcap", chunk=bomb())]), timeout=30)
    finally:
        server.stop(0)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "bomb.mcap" in info.value.details() and "max_chunk_bytes" in info.value.details()
    assert _files(tmp_path) == []


def ros1_bomb(path: Path, fmt: str, payload_bytes: int) -> Path:
    """A ROS 1 bag with one message of ``payload_bytes`` repeated bytes in one ``fmt`` chunk (compresses small)."""
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    typestore = get_typestore(Stores.ROS1_NOETIC)
    String = typestore.types["std_msgs/msg/String"]
    writer = Writer(path)
    writer.set_compression(Writer.CompressionFormat[fmt])
    with writer:
        conn = writer.add_connection("/bomb", String.__msgtype__, typestore=typestore)
        writer.write(conn, 1, typestore.serialize_ros1(String(data="a" * payload_bytes), String.__msgtype__))
    return path


@pytest.mark.parametrize("fmt", ["BZ2", "LZ4"])
def test_a_ros1_bag_chunk_declared_too_big_is_refused_before_rosbags_inflates_it(tmp_path, fmt) -> None:
    from services.strap.readers.rosbags_reader import ros1_chunk_sizes

    payload = 16 << 20
    bag = ros1_bomb(tmp_path / "bomb.bag", fmt, payload)
    assert bag.stat().st_size < 128 << 10  # 16 MiB of one byte compresses small (lz4: 72 KiB)
    assert max(ros1_chunk_sizes(bag)) > payload  # the chunk header declares its uncompressed size
    store = StrapStore(tmp_path / "store", limits=ReadLimits(max_chunk_bytes=1 << 20))
    data = bag.read_bytes()
    tracemalloc.start()
    try:
        with pytest.raises(ResourceExhausted) as info:
            store.ingest_chunks("bomb.bag", iter([data]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert "bomb.bag" in message and "max_chunk_bytes" in message and str(tmp_path) not in message
    assert peak < 8 << 20, peak  # the 16 MiB chunk was never inflated (first imports of rosbags count too)
    assert _files(tmp_path / "store") == []
    # under the default limits the same bag is read as before
    with open_recording(bag, limits=ReadLimits()) as rec:
        assert [m.channel for m in rec] == ["/bomb"]
    with open_recording(bag, limits=ReadLimits(max_chunk_bytes=1 << 20)) as rec, \
            pytest.raises(RecordingLimitError, match="max_chunk_bytes"):
        list(rec.iter_raw())
