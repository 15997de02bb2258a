"""The search repository, on SQLite and on PostgreSQL (the same tests, the same code: ``store.SqlRepository``):
idempotent ledger, ordered journal, catalogue dedup, atomic witness archive, campaign leases, versioned
migrations. Databases written before issue 39: ``test_store_compat.py``.

The PostgreSQL runs start one real server for the session (``bench/postgres_local.py``: initdb in
a temp directory, as ``nobody`` when root, on a free loopback port) and give each test its own
database; where PostgreSQL is absent or cannot start they skip with the reason.
"""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench.postgres_local import LocalPostgres, PostgresUnavailable, throwaway_postgres
from lastv2x.core.errors import NotFound
from services.search import migrations
from services.search.migrations import SchemaTooNew
from services.search.settings import SearchSettings
from services.search.store import LedgerRow, Repository, Store, WitnessRow
from services.search.stores import open_store

KEY = {"application": "RLVW", "fault_family": "freeze@SPAT", "penetration_band": "[0.8,1.0]",
       "conflict_geometry": "straight"}


def _row(eid: str, admitted: bool = True, campaign: str = "c-1") -> LedgerRow:
    return LedgerRow(eid, campaign, 0, "search", "sha", 7, admitted, 0.5, "", "in-process", b'{"a":1}')


def _witness(wid: str, key: str = "k1") -> WitnessRow:
    return WitnessRow(wid, "c-1", key, "RLVW", 1.0, b'{"admitted":true}', {"spec": {}, "seed": 7}, "")


@pytest.fixture(scope="session")
def postgres() -> Iterator[LocalPostgres]:
    with ExitStack() as stack:
        try:
            pg = stack.enter_context(throwaway_postgres())
        except PostgresUnavailable as e:
            pytest.skip(f"PostgreSQL engine not tested: {e}")
        yield pg


@dataclass
class Engine:
    """One database of one engine: ``open()`` another repository on it (a reopen, or another replica)."""

    name: str
    data_dir: Path
    open_repo: Callable[[], Repository]
    execute: Callable[[str], None]  # one SQL statement on the database, behind the repository's back
    begin: Callable[[], Any]  # another connection in a transaction: .execute(sql), .commit()
    url: str = ""
    opened: list[Repository] = field(default_factory=list)

    def open(self) -> Repository:
        repo = self.open_repo()
        self.opened.append(repo)
        return repo


def _sqlite_execute(path: Path) -> Callable[[str], None]:
    def execute(sql: str) -> None:
        with sqlite3.connect(path) as db:
            db.execute(sql)
    return execute


def _sqlite_begin(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    return db


def _postgres_execute(url: str) -> Callable[[str], None]:
    def execute(sql: str) -> None:
        import psycopg

        with psycopg.connect(url, autocommit=True) as db:
            db.execute(sql)
    return execute


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    data_dir = tmp_path / "search"
    if request.param == "sqlite":
        path = data_dir / "search.db"
        e = Engine("sqlite", data_dir, lambda: Store(data_dir), _sqlite_execute(path), lambda: _sqlite_begin(path))
    else:
        import psycopg

        from services.search.store_pg import PostgresStore

        pg: LocalPostgres = request.getfixturevalue("postgres")
        url = pg.create_database(f"t_{uuid.uuid4().hex[:16]}")
        e = Engine("postgresql", data_dir, lambda: PostgresStore(url, data_dir), _postgres_execute(url),
                   lambda: psycopg.connect(url), url)
    yield e
    for repo in e.opened:
        repo.close()


@pytest.fixture
def store(engine: Engine) -> Repository:
    return engine.open()


# campaigns, journal, ledger ---------------------------------------------------------------
def test_ledger_ignores_a_second_write_of_the_same_id(store: Repository) -> None:
    assert store.record_execution(_row("e1", admitted=True))
    assert not store.record_execution(_row("e1", admitted=False))
    got = store.get_execution("e1")
    assert got is not None and got.admitted and got.outcome_json == b'{"a":1}'
    assert store.count_executions("c-1") == {"search": 1}
    assert store.get_execution("e-nope") is None


def test_journal_keeps_order_and_survives_reopen(engine: Engine) -> None:
    store = engine.open()
    store.create_campaign("c-1", {"seed": 1})
    for i in range(5):
        assert store.append_journal("c-1", "result", {"i": i}) == i
    assert store.append_journal("c-2", "result", {"i": 0}) == 0  # seq is per campaign
    store.close()
    again = engine.open()
    assert [(seq, p["i"]) for seq, _, p in again.journal("c-1")] == [(i, i) for i in range(5)]
    assert again.get_campaign("c-1").request == {"seed": 1}


def test_campaigns_update_and_list_newest_first(store: Repository) -> None:
    store.create_campaign("c-1", {"seed": 1})
    time.sleep(0.01)
    store.create_campaign("c-2", {"seed": 2})
    store.update_campaign("c-1", state="done", reason="finished", summary={"witnesses": 3})
    c1 = store.get_campaign("c-1")
    assert (c1.state, c1.reason, c1.summary) == ("done", "finished", {"witnesses": 3})
    assert c1.updated_unix_s >= c1.created_unix_s
    assert [c.id for c in store.list_campaigns()] == ["c-2", "c-1"]
    assert [c.id for c in store.list_campaigns(limit=1)] == ["c-2"]


def test_flaky_admissions_are_recorded_once(store: Repository) -> None:
    store.record_flaky("sha", 7, "c-1", {"first": True, "recheck": False})
    store.record_flaky("sha", 7, "c-1", {"first": True, "recheck": True})  # same (program, seed, campaign)
    assert store.list_flaky("c-1") == [{"first": True, "recheck": False}]
    assert store.list_flaky("c-2") == []


# catalogue + witnesses ---------------------------------------------------------------------
def test_catalogue_counts_equivalent_failures_once(store: Repository) -> None:
    assert store.archive_witness(_witness("w-1"), KEY, None)
    assert not store.archive_witness(_witness("w-2"), KEY, None)  # same key: counted, not stored
    store.count_in_catalogue("k1")
    assert [w.id for w in store.list_witnesses()] == ["w-1"]
    entry = store.catalogue_entry("k1")
    assert entry is not None and entry["witness_id"] == "w-1" and store.catalogue_entry("k2") is None
    assert store.has_witness("w-1", "c-1") and not store.has_witness("w-1", "c-other")
    (entry,) = store.catalogue()
    assert entry["count"] == 3 and entry["witness_id"] == "w-1" and entry["first_campaign"] == "c-1"


def test_catalogue_entry_is_the_row_of_exactly_that_key(store: Repository) -> None:
    """Difference 1 of issue 39, resolved as SQLite had it: the row whose key equals ``key``, else None. PostgreSQL
    returned the first row ``catalogue(key)`` gave, and ``catalogue(None)`` is the whole catalogue: a key that was
    not a string got another key's witness (SQLite re-filtered on the key in Python). Now the query itself is on
    the key, on both engines, and a non-string names no row."""
    assert store.archive_witness(_witness("w-1", key="k1"), KEY, None)
    assert store.archive_witness(_witness("w-2", key="k2"), dict(KEY, conflict_geometry="left_turn"), None)
    entry = store.catalogue_entry("k2")
    assert entry is not None and (entry["witness_id"], entry["conflict_geometry"], entry["count"]) == \
        ("w-2", "left_turn", 1)
    assert store.catalogue_entry(None) is None  # type: ignore[arg-type]  # PostgreSQL gave k1's row
    for other in ("", "k", "K1", "k1 ", "k3"):
        assert store.catalogue_entry(other) is None, other


def test_the_same_failure_is_found_under_any_key_by_its_signature(store: Repository) -> None:
    """Issue 31: a witness's failure signature goes with its catalogue row, so a later campaign that finds the
    same failure under another key (another penetration band, say) counts it there instead of archiving it again."""
    assert store.archive_witness(_witness("w-1", key="k1"), KEY, None, signature="RLVW|proceed|red_entry|")
    assert store.archive_witness(_witness("w-2", key="k2"), dict(KEY, penetration_band="[0.2,0.5)"), None,
                                 signature="RLVW|stop|near_miss|")
    assert store.archive_witness(_witness("w-3", key="k0"), KEY, None, signature="RLVW|proceed|red_entry|")
    entry = store.catalogue_entry_for_failure("RLVW|proceed|red_entry|")
    assert entry is not None and (entry["key"], entry["witness_id"]) == ("k0", "w-3")  # the first by key
    assert store.catalogue_entry_for_failure("RLVW|stop|near_miss|")["key"] == "k2"  # type: ignore[index]
    assert store.catalogue_entry_for_failure("RLVW|proceed|contact|") is None
    assert store.catalogue_entry_for_failure("") is None  # no signature names no row
    assert store.archive_witness(_witness("w-4", key="k4"), KEY, None)  # archived without one
    assert store.catalogue_entry_for_failure("") is None


def test_a_witness_claims_its_key_and_waits_for_a_concurrent_claim(engine: Engine) -> None:
    """Difference 2 of issue 39, resolved as PostgreSQL had it: ``archive_witness`` claims the catalogue key with
    ``INSERT ... ON CONFLICT DO NOTHING`` first, instead of SQLite's SELECT-then-INSERT, which was only right
    because SQLite serializes writers: on PostgreSQL another replica's uncommitted claim is invisible to a
    SELECT, so the INSERT would follow, wait for it and fail on the key. The claim waits and counts."""
    store = engine.open()
    other = engine.begin()  # another replica, between claiming k1 and committing
    other.execute("INSERT INTO catalogue VALUES ('k1', 'RLVW', 'f', 'b', 'g', 'w-other', 1, 'c-0', '')")
    done: list[bool] = []
    archiving = threading.Thread(target=lambda: done.append(store.archive_witness(_witness("w-1"), KEY, None,
                                                                                   hit="e-1")))
    archiving.start()
    time.sleep(0.3)
    assert archiving.is_alive() and not done  # waiting for the other claim
    other.commit()
    other.close()
    archiving.join(timeout=10)
    assert done == [False]  # counted under the other replica's witness, not archived
    entry = store.catalogue_entry("k1")
    assert entry is not None and (entry["witness_id"], entry["count"]) == ("w-other", 2)
    assert store.list_witnesses() == []
    store.count_in_catalogue("k1", hit="e-1")  # the hit was recorded with the count: not counted twice
    assert store.catalogue()[0]["count"] == 2


def test_witnesses_filter_by_campaign_and_application(store: Repository) -> None:
    store.archive_witness(_witness("w-1", key="k1"), KEY, None)
    store.archive_witness(WitnessRow("w-2", "c-2", "k2", "FCW", 2.0, b"{}", {}, ""), dict(KEY, application="FCW"),
                          None)
    assert [w.id for w in store.list_witnesses(campaign_id="c-2")] == ["w-2"]
    assert [w.id for w in store.list_witnesses(application="RLVW")] == ["w-1"]
    assert [w.id for w in store.list_witnesses()] == ["w-1", "w-2"]
    w = store.get_witness("w-1")
    assert w.outcome_json == b'{"admitted":true}' and w.record == {"spec": {}, "seed": 7, "trace_path": ""}


def test_witness_trace_is_moved_into_place_before_the_row_commits(store: Repository) -> None:
    staged = store.staging_dir / "x.mcap"
    staged.write_bytes(b"mcap")
    store.archive_witness(_witness("w-1"), KEY, staged)
    w = store.get_witness("w-1")
    assert not staged.exists() and Path(w.trace_path).read_bytes() == b"mcap"
    assert Path(w.trace_path).parent == store.traces_dir


def test_a_failed_archive_leaves_no_row(store: Repository) -> None:
    """A failure after the first INSERT of the transaction (the record on PostgreSQL, the catalogue row
    on SQLite, whose orders differ) rolls back the other: neither a witness nor a catalogue entry."""
    bad = WitnessRow("w-1", "c-1", "k1", "RLVW", 1.0, b"{}", {"unserializable": object()}, "")
    with pytest.raises(TypeError):
        store.archive_witness(bad, KEY, None)
    incomplete = {k: v for k, v in KEY.items() if k != "conflict_geometry"}
    with pytest.raises(KeyError):
        store.archive_witness(_witness("w-2"), incomplete, None)
    assert store.list_witnesses() == [] and store.catalogue() == []
    assert store.archive_witness(_witness("w-3"), KEY, None)  # and the repository is still usable


def test_unknown_ids_are_not_found(store: Repository) -> None:
    with pytest.raises(NotFound):
        store.get_campaign("c-nope")
    with pytest.raises(NotFound):
        store.get_witness("w-nope")


# several replicas on one database ---------------------------------------------------------
def _together(n: int, work: Callable[[int], object]) -> list[object]:
    """Run ``work(i)`` for i < n on n threads released at once."""
    barrier = threading.Barrier(n)
    out: list[object] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        out[i] = work(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_replicas_writing_at_once_keep_every_invariant(engine: Engine) -> None:
    replicas = [engine.open() for _ in range(3)]
    replicas[0].create_campaign("c-1", {})
    seqs = _together(3, lambda i: [replicas[i].append_journal("c-1", "result", {"r": i, "k": k}) for k in range(10)])
    assert sorted(s for per in seqs for s in per) == list(range(30))  # type: ignore[attr-defined]
    assert [s for s, _, _ in replicas[1].journal("c-1")] == list(range(30))
    fresh = _together(3, lambda i: replicas[i].record_execution(_row("e-same")))
    assert sorted(fresh) == [False, False, True]  # type: ignore[type-var]
    won = _together(3, lambda i: replicas[i].archive_witness(_witness(f"w-{i}"), KEY, None))
    assert sorted(won) == [False, False, True]  # type: ignore[type-var]
    assert len(replicas[2].list_witnesses()) == 1 and replicas[2].catalogue()[0]["count"] == 3
    leased = _together(3, lambda i: replicas[i].acquire_lease("c-1", f"replica-{i}", 30))
    assert sorted(leased) == [False, False, True]  # type: ignore[type-var]


# leases ----------------------------------------------------------------------------------
def test_a_lease_is_exclusive_until_its_holder_stops_renewing(engine: Engine) -> None:
    a, b = engine.open(), engine.open()
    assert a.acquire_lease("c-1", "a", ttl_s=0.4)
    assert not b.acquire_lease("c-1", "b", ttl_s=0.4)
    assert a.acquire_lease("c-1", "a", ttl_s=0.4)  # the holder may re-acquire (extends)
    assert b.lease_holder("c-1") == "a"
    assert b.acquire_lease("c-2", "b", ttl_s=30)  # leases are per campaign
    time.sleep(0.25)
    assert a.renew_lease("c-1", "a", ttl_s=0.4)
    time.sleep(0.25)  # 0.5 s after the first acquire, still held thanks to the renewal
    assert not b.acquire_lease("c-1", "b", ttl_s=30) and b.lease_holder("c-1") == "a"
    time.sleep(0.3)  # a stopped renewing: expired
    assert b.lease_holder("c-1") is None
    assert b.acquire_lease("c-1", "b", ttl_s=30)  # taken over
    assert not a.renew_lease("c-1", "a", ttl_s=30)  # a learns it lost the campaign
    assert not a.release_lease("c-1", "a")  # and cannot release b's lease
    assert a.lease_holder("c-1") == "b"
    assert b.release_lease("c-1", "b") and a.lease_holder("c-1") is None
    assert a.acquire_lease("c-1", "a", ttl_s=30)  # released: free at once
    with pytest.raises(ValueError, match="ttl_s"):
        a.acquire_lease("c-3", "a", ttl_s=0)


# migrations --------------------------------------------------------------------------------
def test_a_new_database_is_migrated_once_to_the_code_version(engine: Engine) -> None:
    first = engine.open()
    assert first.schema_version == migrations.SCHEMA_VERSION
    first.create_campaign("c-1", {})
    first.close()
    again = engine.open()  # nothing to apply; the data is kept
    assert again.schema_version == migrations.SCHEMA_VERSION and again.get_campaign("c-1").id == "c-1"


def test_a_schema_newer_than_the_code_is_refused_naming_both_versions(engine: Engine) -> None:
    engine.open().close()
    newer = migrations.SCHEMA_VERSION + 7
    engine.execute(f"INSERT INTO schema_version VALUES ({newer}, 'from the future', 0)")
    with pytest.raises(SchemaTooNew) as err:
        engine.open()
    assert f"schema version {newer}" in str(err.value)
    assert f"this code's version {migrations.SCHEMA_VERSION}" in str(err.value)
    assert err.value.database_version == newer and err.value.code_version == migrations.SCHEMA_VERSION


# choosing and reaching the engine ----------------------------------------------------------
def test_the_settings_choose_the_engine(engine: Engine) -> None:
    settings = SearchSettings(data_dir=engine.data_dir, db=engine.url)
    repo = open_store(settings)
    engine.opened.append(repo)
    assert repo.engine == engine.name and repo.traces_dir == engine.data_dir / "traces"
    assert "password" not in repr(SearchSettings(db="postgresql://u:hunter2@h/db"))
    assert "hunter2" not in repr(SearchSettings(db="postgresql://u:hunter2@h/db"))


def test_a_database_url_that_is_not_postgresql_is_refused() -> None:
    with pytest.raises(ValueError, match="LASTV2X_SEARCH_DB must be a postgresql:// URL"):
        SearchSettings.from_env({"LASTV2X_SEARCH_DB": "mysql://u:p@h/db"})


def test_a_database_that_does_not_answer_is_named_without_its_password(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    from services.search.store_pg import DatabaseUnavailable, PostgresStore, redact

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    url = f"postgresql://search:s3cret-pw@127.0.0.1:{port}/archive?sslmode=disable"
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailable) as err:
        PostgresStore(url, tmp_path, connect_timeout_s=2)
    message = str(err.value)
    assert f"127.0.0.1:{port}" in message and "does not answer" in message
    assert "s3cret" not in message and err.value.address == f"postgresql://search@127.0.0.1:{port}/archive" \
        "?sslmode=disable"
    assert time.monotonic() - started < 10
    assert redact("postgresql://u@h/db?password=x&sslmode=require") == "postgresql://u@h/db?sslmode=require"

