"""Issue 41: a many-chunk zstd MCAP bomb. Every chunk is under the per-chunk limit and the whole
file under the decompressed-bytes limit, but the chunks overlap in time, so a reader that merges
them holds all of them at once (the issue: 62 KB of 60 MiB chunks, 1.66 GB RSS before it was
refused). The read budget counts what is *held* (``max_held_bytes``, default half the pod's
memory limit): the peak RSS of an Ingest of the bomb, measured in a subprocess, stays under
that limit + 64 MiB, and the refusal is RESOURCE_EXHAUSTED naming the limit."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import zstandard
from mcap.data_stream import RecordBuilder
from mcap.records import Channel, Chunk, ChunkIndex, DataEnd, Footer, Header, Schema, Statistics

from services.strap.store import POD_MEMORY_BYTES, StrapConfig

MAGIC = b"\x89MCAP0\r\n"
MiB = 1 << 20
REPO = Path(__file__).resolve().parents[2]


def chunk_bomb(n_chunks: int, chunk_bytes: int, *, indexed: bool, messages_per_chunk: int = 4) -> bytes:
    """``n_chunks`` zstd chunks of ``chunk_bytes`` each once inflated (JSON strings of 'x'), every
    chunk spanning log times [0, 10] so that they all overlap; one compressed body, reused."""
    payload_bytes = chunk_bytes // messages_per_chunk - 9 - 22
    records = bytearray()
    for i in range(messages_per_chunk):
        body = struct.pack("<HIQQ", 1, i, 10 * (i % 2), 0) + b'"' + b"x" * (payload_bytes - 2) + b'"'
        records += b"\x05" + struct.pack("<Q", len(body)) + body
    compressed = zstandard.ZstdCompressor(level=3).compress(bytes(records))
    b = RecordBuilder()
    Header(profile="", library="bomb").write(b)
    schema = Schema(id=1, name="s", encoding="jsonschema", data=b"{}")
    channel = Channel(id=1, topic="/a", message_encoding="json", schema_id=1, metadata={})
    schema.write(b)
    channel.write(b)
    indexes = []
    for _ in range(n_chunks):
        start = len(MAGIC) + b.count
        Chunk(compression="zstd", data=compressed, message_start_time=0, message_end_time=10,
              uncompressed_crc=0, uncompressed_size=len(records)).write(b)
        indexes.append(ChunkIndex(message_start_time=0, message_end_time=10, chunk_start_offset=start,
                                  chunk_length=len(MAGIC) + b.count - start, message_index_offsets={},
                                  message_index_length=0, compression="zstd", compressed_size=len(compressed),
                                  uncompressed_size=len(records)))
    DataEnd(data_section_crc=0).write(b)
    summary_start = 0
    if indexed:
        summary_start = len(MAGIC) + b.count
        schema.write(b)
        channel.write(b)
        for ci in indexes:
            ci.write(b)
        Statistics(message_count=n_chunks * messages_per_chunk, schema_count=1, channel_count=1,
                   attachment_count=0, metadata_count=0, chunk_count=n_chunks, message_start_time=0,
                   message_end_time=10, channel_message_counts={1: n_chunks * messages_per_chunk}).write(b)
    Footer(summary_start=summary_start, summary_offset_start=0, summary_crc=0).write(b)
    return MAGIC + b.end() + MAGIC


_PROBE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from lastv2x.core.errors import ResourceExhausted
    from services.strap.store import StrapConfig, StrapStore

    bomb, root, env = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
    config = StrapConfig.from_env(env)
    store = StrapStore(root, config.max_bytes, config.limits, config.quota_bytes)
    data = bomb.read_bytes()

    def rss_kib(field):
        for line in open("/proc/self/status"):
            if line.startswith(field):
                return int(line.split()[1])

    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from here
    base = rss_kib("VmRSS:")
    try:
        store.ingest_chunks("bomb.mcap", iter([data]))
        outcome = "stored"
    except ResourceExhausted as exc:
        outcome = str(exc)
    print(json.dumps({"base_kib": base, "peak_kib": rss_kib("VmHWM:"), "outcome": outcome,
                      "held_limit": config.max_held_bytes, "left": sorted(p.name for p in root.rglob("*")
                                                                           if p.suffix == ".mcap")}))
""")


def ingest_peak(tmp_path: Path, data: bytes, env: dict[str, str]) -> dict:
    """Ingest ``data`` in a fresh process; its RSS growth (peak - before) in bytes, and the answer."""
    bomb = tmp_path / "bomb.mcap"
    bomb.write_bytes(data)
    out = subprocess.run([sys.executable, "-c", _PROBE, str(bomb), str(tmp_path / "store"), json.dumps(env)],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["growth_bytes"] = (result["peak_kib"] - result["base_kib"]) * 1024
    return result


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc (peak RSS)")
@pytest.mark.parametrize("indexed", [True, False], ids=["indexed-overlapping", "unindexed"])
def test_a_many_chunk_bomb_is_refused_within_the_held_limit(tmp_path, indexed) -> None:
    held = 64 * MiB
    env = {"LASTV2X_STRAP_MAX_HELD_BYTES": str(held), "LASTV2X_STRAP_MAX_CHUNK_BYTES": str(16 * MiB)}
    data = chunk_bomb(40, 15 * MiB, indexed=indexed)  # 600 MiB inflated, under the 2 GiB pass limit
    assert len(data) < 100_000
    r = ingest_peak(tmp_path, data, env)
    assert "max_held_bytes" in r["outcome"] and "LASTV2X_STRAP_MAX_HELD_BYTES" in r["outcome"], r
    assert r["growth_bytes"] <= held + 64 * MiB, r
    assert r["left"] == []


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc (peak RSS)")
def test_the_issues_bomb_of_60_mib_chunks_under_the_default_limits(tmp_path) -> None:
    config = StrapConfig()
    assert config.max_held_bytes <= POD_MEMORY_BYTES // 2 and config.max_chunk_bytes <= config.max_held_bytes
    r = ingest_peak(tmp_path, chunk_bomb(30, 60 * MiB, indexed=True), {})
    assert "max_held_bytes" in r["outcome"], r
    assert r["growth_bytes"] <= config.max_held_bytes + 64 * MiB, r


def test_a_legitimate_overlapping_recording_within_the_limit_is_stored(tmp_path) -> None:
    r = ingest_peak(tmp_path, chunk_bomb(3, 4 * MiB, indexed=True), {"LASTV2X_STRAP_MAX_HELD_BYTES": str(64 * MiB)})
    assert r["outcome"] == "stored" and len(r["left"]) == 1


def test_uploads_being_staged_count_against_the_quota(tmp_path) -> None:
    """Two uploads at once, together over what the store's disk holds (quota + one upload): the
    second is refused while streaming (staging files are on that disk too)."""
    from lastv2x.core.errors import ResourceExhausted
    from services.strap.store import StrapStore

    store = StrapStore(tmp_path / "store", max_bytes=2 * MiB, quota_bytes=MiB // 2)  # the disk: 2.5 MiB
    refused: list[str] = []

    def first() -> object:
        yield b"\x00" * MiB
        try:
            store.ingest_chunks("second.mcap", iter([b"\x00" * MiB] * 2))
        except ResourceExhausted as exc:
            refused.append(str(exc))
        yield b"\x00" * MiB

    with pytest.raises(Exception):  # noqa: B017 - the first upload is not a recording: refused after staging
        store.ingest_chunks("first.mcap", first())
    assert refused and "LASTV2X_STRAP_QUOTA_BYTES" in refused[0] and "1048576 being uploaded" in refused[0]
    assert not list((tmp_path / "store" / ".incoming").iterdir())
