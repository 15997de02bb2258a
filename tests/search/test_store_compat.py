"""Databases written before issue 39 open with the one repository: the migrations render to what the two
per-engine lists said, and a SQLite archive written by the old ``Store`` reads and writes as it did.

``data/search_v3`` was written through the public API of ``services.search.store.Store`` at acc2971 (the
last commit with a SQLite-only store class; schema version 3): one finished campaign with three journal
entries, two ledger rows, one witness with its trace (content-addressed), its catalogue row counted twice
with two hits, one flaky admission and a lease; then checkpointed and vacuumed to 512-byte pages (small).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from services.search import migrations
from services.search.store import LedgerRow, Store, WitnessRow

OLD_ARCHIVE = Path(__file__).parent / "data" / "search_v3"
TRACE = "traces/7108ffc287255a28f9d54655e811d281fed9cfbaff19ec98eeab16005671780b.mcap"
KEY = {"application": "RLVW", "fault_family": "freeze@SPAT", "penetration_band": "[0.8,1.0]",
       "conflict_geometry": "straight"}
# sha256 over "version name" and each statement with its whitespace collapsed, of migrations.SQLITE and
# migrations.POSTGRES as they were at acc2971 (two lists kept by hand)
SHIPPED = {"sqlite": "d0e9edcc97696f37dc575fd53697b8aec6f8e2eaf9300e2a09b9540f4c720609",
           "postgresql": "3c0359c950acfbcefb8a3df658651ae417e22083c444eef5cc184810df593533"}


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_the_one_migration_list_renders_what_each_engine_shipped(engine: str) -> None:
    digest = hashlib.sha256()
    for m in migrations.MIGRATIONS[:3]:  # the three shipped then; later ones are appended, never edited
        digest.update(f"{m.version} {m.name}\n".encode())
        for statement in migrations.statements(m, engine):
            digest.update(" ".join(statement.split()).encode() + b"\n")
    assert digest.hexdigest() == SHIPPED[engine]
    assert [m.version for m in migrations.MIGRATIONS] == list(range(1, migrations.SCHEMA_VERSION + 1))


@pytest.fixture
def old_archive(tmp_path: Path) -> Path:
    shutil.copytree(OLD_ARCHIVE, tmp_path / "search")
    return tmp_path / "search"


def test_a_sqlite_archive_written_by_the_old_store_reads_as_it_did(old_archive: Path) -> None:
    with sqlite3.connect(old_archive / "search.db") as db:
        applied = db.execute("SELECT version, applied_unix_s FROM schema_version ORDER BY version").fetchall()
    store = Store(old_archive)
    assert store.schema_version == migrations.SCHEMA_VERSION  # 3 as written, the later migrations applied on open
    c = store.get_campaign("c-old")
    assert (c.state, c.reason, c.request, c.summary) == ("done", "budget spent", {"application": "RLVW", "seed": 7},
                                                         {"executions": 2, "witnesses": 1})
    assert c.updated_unix_s > c.created_unix_s > 1.7e9 and [x.id for x in store.list_campaigns()] == ["c-old"]
    assert list(store.journal("c-old")) == [(0, "started", {"i": 0}), (1, "result", {"i": 1}),
                                            (2, "witness", {"i": 2})]
    assert store.get_execution("e-1") == LedgerRow("e-1", "c-old", 0, "search", "ab" * 32, 7, True, -0.25, "",
                                                   "in-process", b'{"admitted":true}')
    e2 = store.get_execution("e-2")
    assert e2 is not None and (e2.purpose, e2.admitted, e2.failure_margin, e2.replica) == \
        ("recheck", False, 0.5, "10.0.0.7:50053")
    assert store.count_executions("c-old") == {"recheck": 1, "search": 1}
    entry = dict(KEY, key="k-old", witness_id="w-old", count=2, first_campaign="c-old")
    assert store.catalogue() == [entry] and store.catalogue_entry("k-old") == entry
    w = store.get_witness("w-old")
    assert w == WitnessRow("w-old", "c-old", "k-old", "RLVW", 1700000000.5, b'{"admitted":true}',
                           {"seed": 7, "spec": {"seed": 7}, "trace_path": TRACE}, str(old_archive / TRACE))
    assert Path(w.trace_path).read_bytes() == b"old trace bytes" and store.has_witness("w-old", "c-old")
    assert store.list_flaky("c-old") == [{"first": True, "recheck": False}]
    with sqlite3.connect(old_archive / "search.db") as db:  # the three old migrations kept, none applied twice
        now = db.execute("SELECT version, applied_unix_s FROM schema_version ORDER BY version").fetchall()
        assert now[:3] == applied and [v for v, _ in now] == list(range(1, migrations.SCHEMA_VERSION + 1))
    assert store.catalogue_entry_for_failure("") is None  # an old row has no failure signature


def test_a_sqlite_archive_written_by_the_old_store_takes_new_writes(old_archive: Path) -> None:
    store = Store(old_archive)
    assert store.append_journal("c-old", "resumed", {}) == 3
    assert not store.record_execution(LedgerRow("e-1", "c-old", 0, "search", "cd", 1, False, 0.0, "", "x", b"{}"))
    assert store.record_execution(LedgerRow("e-3", "c-old", 2, "search", "cd", 1, False, 0.0, "", "x", b"{}"))
    store.count_in_catalogue("k-old", hit="e-2")  # counted already by the old store
    assert not store.archive_witness(WitnessRow("w-new", "c-new", "k-old", "RLVW", 2.0, b"{}", {}, ""), KEY, None,
                                     hit="e-3")
    assert store.catalogue_entry("k-old")["count"] == 3  # type: ignore[index]
    assert store.release_lease("c-old", "replica-a")  # the old store's lease row
    assert store.acquire_lease("c-old", "replica-b", 30) and store.lease_holder("c-old") == "replica-b"
    store.record_flaky("ab" * 32, 9, "c-old", {"again": True})
    assert store.list_flaky("c-old") == [{"first": True, "recheck": False}]
    store.close()
    assert Store(old_archive).count_executions("c-old") == {"recheck": 1, "search": 2}


def test_a_database_from_before_versioning_adopts_version_one(tmp_path: Path) -> None:
    """A search part-1 SQLite database (its tables, no schema_version) keeps its rows."""
    with sqlite3.connect(tmp_path / "search.db") as db:
        for statement in migrations.statements(migrations.MIGRATIONS[0], "sqlite"):
            db.execute(statement)
        db.execute("INSERT INTO journal VALUES ('c-1', 0, 'started', '{}', 0)")
    store = Store(tmp_path)
    assert store.schema_version == migrations.SCHEMA_VERSION
    assert [s for s, _, _ in store.journal("c-1")] == [0] and store.append_journal("c-1", "x", {}) == 1
    assert store.acquire_lease("c-1", "a", 30)
