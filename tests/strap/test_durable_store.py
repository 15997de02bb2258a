"""Issue 16, item 3: a durable STRaP store. The recording index (SQLite in the store
directory) survives a restart, a killed upload's staging file and an unindexed recording
file are swept at start, and a quota on total stored bytes refuses an upload while keeping
the store unchanged."""

from __future__ import annotations

import sqlite3

import pytest

from lastv2x.core.errors import ResourceExhausted
from services.strap.core import StrapCore
from services.strap.readers import write_trace
from services.strap.reduce import ReduceParams
from services.strap.store import StrapConfig, StrapStore
from services.strap.synthetic import synthetic_platform_messages


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "drive.mcap"
    write_trace(path, synthetic_platform_messages(duration_s=20.0), compression="zstd")
    return path


def _snapshot(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith("strap.db")}


def test_recordings_survive_a_restart_and_reduce_finds_them(tmp_path, trace) -> None:
    config = StrapConfig(store_dir=tmp_path / "store")
    core = StrapCore(config)
    info = core.ingest("drive.mcap", [trace.read_bytes()])
    table, reduction = core.reduce(info.id, "", ReduceParams())
    core.store.close()

    again = StrapCore(config)  # a restarted service on the same directory
    assert again.store.get(info.id) == info
    table2, reduction2 = again.reduce(info.id, "", ReduceParams())
    assert table2.n_frames == table.n_frames and len(reduction2.segments) == len(reduction.segments)
    with sqlite3.connect(config.store_dir / "strap.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_staging_leftovers_and_unindexed_files_are_swept_at_start(tmp_path, trace) -> None:
    root = tmp_path / "store"
    store = StrapStore(root)
    info = store.add_file(trace)
    store.close()
    (root / ".incoming").mkdir(exist_ok=True)
    half = root / ".incoming" / "0123abcd.mcap"
    half.write_bytes(trace.read_bytes()[:1000])  # an Ingest killed mid-stream
    orphan = root / "feedfacefeedface.mcap"  # renamed, then killed before the index write
    orphan.write_bytes(trace.read_bytes())
    restarted = StrapStore(root)
    assert not half.exists() and not orphan.exists()
    assert restarted.get(info.id).path.is_file()


def test_a_row_whose_file_is_gone_is_dropped(tmp_path, trace) -> None:
    root = tmp_path / "store"
    store = StrapStore(root)
    info = store.add_file(trace)
    store.close()
    info.path.unlink()
    with pytest.raises(Exception, match="no recording"):
        StrapStore(root).get(info.id)


def test_the_quota_refuses_an_upload_and_keeps_the_store_unchanged(tmp_path, trace) -> None:
    root = tmp_path / "store"
    size = trace.stat().st_size
    store = StrapStore(root, quota_bytes=int(size * 1.5))
    first = store.add_file(trace)
    before = _snapshot(root)
    other = tmp_path / "other.mcap"
    write_trace(other, [("/a", t * 1_000_000, {"i": t, "pad": "y" * 200}) for t in range(2000)],
                compression="none")
    assert other.stat().st_size > size * 0.5
    with pytest.raises(ResourceExhausted) as info:
        store.add_file(other)
    assert "quota_bytes" in str(info.value) and "LASTV2X_STRAP_QUOTA_BYTES" in str(info.value)
    assert "other.mcap" in str(info.value) and str(tmp_path) not in str(info.value)
    assert _snapshot(root) == before
    assert store.stored_bytes == size
    assert store.add_file(trace).id == first.id  # the same bytes again add nothing: not refused
    restarted = StrapStore(root, quota_bytes=int(size * 1.5))
    assert restarted.stored_bytes == size


def test_quota_setting_from_the_environment() -> None:
    assert StrapConfig.from_env({"LASTV2X_STRAP_QUOTA_BYTES": "1000"}).quota_bytes == 1000
