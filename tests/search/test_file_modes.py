"""Issue 41: archive files are the owner's only: search.db with its -wal / -shm, traces, strap.db and
recordings 0600, their folders 0700 (they were 0644 / 0755)."""

from __future__ import annotations

import stat
from pathlib import Path

from lastv2x.core.catalogue import Application
from services.search.store import Store, WitnessRow
from services.simulator.execute import SimulatorLimits, run_one
from services.simulator.reference import reference_program
from services.strap.store import StrapStore


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_the_search_archive_is_private(tmp_path: Path) -> None:
    store = Store(tmp_path / "search")
    try:
        store.create_campaign("c-1", {})  # a write: the WAL and its index exist now
        staged = store.staging_dir / "x.mcap"
        staged.write_bytes(b"mcap")
        store.archive_witness(WitnessRow("w-1", "c-1", "k", "RLVW", 0.0, b"{}", {}, ""),
                              {"application": "RLVW", "fault_family": "f", "penetration_band": "b",
                               "conflict_geometry": "g"}, staged)
        files = [store.path, store.path.with_name("search.db-wal"), store.path.with_name("search.db-shm"),
                 Path(store.get_witness("w-1").trace_path)]
        assert {f.name: oct(_mode(f)) for f in files} == {f.name: "0o600" for f in files}
        dirs = [store.data_dir, store.traces_dir, store.staging_dir]
        assert {d.name: oct(_mode(d)) for d in dirs} == {d.name: "0o700" for d in dirs}
    finally:
        store.close()


def test_the_strap_store_is_private(tmp_path: Path) -> None:
    _, uri = run_one(reference_program(Application.RLVW), None, SimulatorLimits(trace_dir=tmp_path / "t"),
                     write_trace=True)
    data = Path(uri.removeprefix("file://")).read_bytes()
    store = StrapStore(tmp_path / "strap")
    info = store.ingest_chunks("r.mcap", iter([data]))
    files = [tmp_path / "strap" / "strap.db", Path(info.path)]
    files += [f for f in (tmp_path / "strap").glob("strap.db-*")]
    assert {f.name: oct(_mode(f)) for f in files} == {f.name: "0o600" for f in files}
    assert oct(_mode(tmp_path / "strap")) == "0o700"
