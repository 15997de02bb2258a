"""The search repository, once for both engines: :class:`SqlRepository` over a small :class:`Dialect`.

Every method writes its SQL once, in the subset SQLite and PostgreSQL share (``?`` placeholders,
``INSERT ... ON CONFLICT``, ``RETURNING``, named columns); the dialect supplies only what the
engines do differently:

- placeholders: SQLite takes ``?`` as written, PostgreSQL's dialect rewrites them to ``%s``;
- transactions: SQLite's ``BEGIN IMMEDIATE`` (writers serialized on the file) or a PostgreSQL
  transaction; the schema is migrated under PostgreSQL's advisory lock (SQLite's write lock is
  already held);
- the clock leases are measured on: this host's (SQLite) or the server's (PostgreSQL);
- column types in the migrations (``migrations.TYPES``);
- which error means "a concurrent writer took this journal seq" (none on SQLite, whose writers
  are serialized; a unique violation on PostgreSQL, retried with the next number).

How each write stays correct when several repositories (search replicas) write at once, on
either engine: the ledger insert ``ON CONFLICT DO NOTHING`` records a replayed execution once;
the journal's next ``seq`` is computed in its INSERT; a witness first claims its catalogue key
(``ON CONFLICT DO NOTHING`` waits for a concurrent claim of the same key to commit), so one key
gets one witness, and the claim, the hit and the witness row commit together. A witness's trace
is renamed into ``traces/`` *before* its row commits, so a crash leaves a whole witness or none.

:class:`Store` is the SQLite repository (``search.db`` under ``data_dir``, WAL, synchronous=NORMAL);
``store_pg.PostgresStore`` the PostgreSQL one. The rows and the contract are in ``repository.py``
(re-exported here).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from lastv2x.core.errors import NotFound, Unavailable
from lastv2x.core.files import private_file
from services.search import migrations
from services.search.repository import (
    CampaignRow,
    LedgerRow,
    Repository,
    TraceFiles,
    WitnessRow,
    check_ttl,
)

JOURNAL_RETRIES = 20
CAMPAIGN_COLUMNS = "id, created_unix_s, updated_unix_s, state, reason, request_json, summary_json"
LEDGER_COLUMNS = ("execution_id, campaign_id, scenario, purpose, program_sha256, seed, admitted, failure_margin, "
                  "refused, replica, outcome_json")
CATALOGUE_NAMES = ("key", "application", "fault_family", "penetration_band", "conflict_geometry", "witness_id",
                   "count", "first_campaign")
CATALOGUE_COLUMNS = ", ".join(CATALOGUE_NAMES)
WITNESS_COLUMNS = "id, campaign_id, key, application, created_unix_s, outcome_json, record_json, trace_path"
Args = Sequence[Any]


class Dialect(Protocol):
    """What one engine does its own way; :class:`SqlRepository` asks it for nothing else."""

    engine: str  # "sqlite" or "postgresql" (``migrations.TYPES``)
    where: str  # the database as errors name it (a path, or a URL without its password)
    now: str  # SQL: seconds since the epoch on the clock leases are measured on
    seq_taken: tuple[type[Exception], ...]  # a concurrent journal append took this seq: retry

    def tx(self) -> AbstractContextManager[Any]: ...  # one transaction; ``.execute(sql, args)`` -> cursor
    def rows(self, sql: str, args: Args = ()) -> list[tuple[Any, ...]]: ...  # one statement, its own transaction
    def rowcount(self, sql: str, args: Args = ()) -> int: ...
    def lock_schema(self, db: Any) -> None: ...  # inside tx(): one repository migrates at a time
    def close(self) -> None: ...


class SqlRepository(TraceFiles):
    """The :class:`~services.search.repository.Repository` over ``dialect``; traces under ``data_dir``."""

    def __init__(self, data_dir: Path, dialect: Callable[[Path], Dialect]):
        super().__init__(data_dir)
        self.dialect = dialect(self.data_dir)
        self.engine = self.dialect.engine
        self.schema_version = self._migrate()

    def _migrate(self) -> int:
        """Apply the migrations above the database's version in one transaction; the version after."""
        d = self.dialect
        with d.tx() as db:
            d.lock_schema(db)
            db.execute(migrations.version_table(d.engine))
            (current,) = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
            for m in migrations.pending(int(current), d.where):
                for statement in migrations.statements(m, d.engine):
                    db.execute(statement)
                db.execute("INSERT INTO schema_version VALUES (?, ?, ?)", (m.version, m.name, time.time()))
        return max(int(current), migrations.SCHEMA_VERSION)

    def close(self) -> None:
        self.dialect.close()

    # campaigns ----------------------------------------------------------------
    def create_campaign(self, campaign_id: str, request: dict[str, Any], state: str = "queued") -> None:
        now = time.time()
        self.dialect.rowcount(f"INSERT INTO campaigns ({CAMPAIGN_COLUMNS}) VALUES (?, ?, ?, ?, '', ?, '{{}}')",
                              (campaign_id, now, now, state, json.dumps(request, sort_keys=True)))

    def update_campaign(self, campaign_id: str, *, state: str | None = None, reason: str | None = None,
                        summary: dict[str, Any] | None = None) -> None:
        sets: list[str] = ["updated_unix_s = ?"]
        args: list[Any] = [time.time()]
        for name, value in (("state", state), ("reason", reason)):
            if value is not None:
                sets.append(f"{name} = ?")
                args.append(value)
        if summary is not None:
            sets.append("summary_json = ?")
            args.append(json.dumps(summary, sort_keys=True))
        self.dialect.rowcount(f"UPDATE campaigns SET {', '.join(sets)} WHERE id = ?", (*args, campaign_id))

    def get_campaign(self, campaign_id: str) -> CampaignRow:
        rows = self.dialect.rows(f"SELECT {CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?", (campaign_id,))
        if not rows:
            raise NotFound(f"no campaign {campaign_id!r}")
        return _campaign(rows[0])

    def list_campaigns(self, limit: int = 100) -> list[CampaignRow]:
        rows = self.dialect.rows(f"SELECT {CAMPAIGN_COLUMNS} FROM campaigns ORDER BY created_unix_s DESC, id LIMIT ?",
                                 (limit,))
        return [_campaign(r) for r in rows]

    # journal ------------------------------------------------------------------
    def append_journal(self, campaign_id: str, kind: str, payload: dict[str, Any]) -> int:
        text = json.dumps(payload, sort_keys=True)
        for _ in range(JOURNAL_RETRIES):
            try:
                rows = self.dialect.rows(
                    "INSERT INTO journal (campaign_id, seq, kind, payload_json, t_unix_s) "
                    "SELECT ?, COALESCE(MAX(seq), -1) + 1, ?, ?, ? FROM journal WHERE campaign_id = ? RETURNING seq",
                    (campaign_id, kind, text, time.time(), campaign_id))
                return int(rows[0][0])
            except self.dialect.seq_taken:
                continue  # another writer took this seq; the next attempt reads the new maximum
        raise Unavailable(f"journal of {campaign_id!r}: {JOURNAL_RETRIES} concurrent writers took every seq")

    def journal(self, campaign_id: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
        rows = self.dialect.rows("SELECT seq, kind, payload_json FROM journal WHERE campaign_id = ? ORDER BY seq",
                                 (campaign_id,))
        for seq, kind, payload in rows:
            yield int(seq), kind, json.loads(payload)

    # ledger -------------------------------------------------------------------
    def record_execution(self, row: LedgerRow) -> bool:
        """Write one execution; False (and no change) when its id is already in the ledger."""
        return self.dialect.rowcount(
            f"INSERT INTO ledger ({LEDGER_COLUMNS}, created_unix_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (execution_id) DO NOTHING",
            (row.execution_id, row.campaign_id, row.scenario, row.purpose, row.program_sha256, row.seed,
             bool(row.admitted), row.failure_margin, row.refused, row.replica, row.outcome_json.decode(),
             time.time())) == 1

    def get_execution(self, execution_id: str) -> LedgerRow | None:
        rows = self.dialect.rows(f"SELECT {LEDGER_COLUMNS} FROM ledger WHERE execution_id = ?", (execution_id,))
        if not rows:
            return None
        r = rows[0]
        return LedgerRow(r[0], r[1], int(r[2]), r[3], r[4], int(r[5]), bool(r[6]), float(r[7]), r[8], r[9],
                         r[10].encode())

    def count_executions(self, campaign_id: str) -> dict[str, int]:
        rows = self.dialect.rows("SELECT purpose, COUNT(*) FROM ledger WHERE campaign_id = ? GROUP BY purpose",
                                 (campaign_id,))
        return {p: int(n) for p, n in rows}

    # catalogue + witnesses -----------------------------------------------------
    def catalogue_entry(self, key: str) -> dict[str, Any] | None:
        """The catalogue row whose key is exactly ``key`` (witness_id, count, first_campaign, ...), if any; a key
        that is not a string names no row."""
        if not isinstance(key, str):
            return None
        rows = self.dialect.rows(f"SELECT {CATALOGUE_COLUMNS} FROM catalogue WHERE key = ?", (key,))
        return _catalogue(rows[0]) if rows else None

    def catalogue_entry_for_failure(self, signature: str) -> dict[str, Any] | None:
        """The first catalogued entry (by key) whose witness's minimized run gave the failure ``signature``
        (``catalog.failure_signature``), if any; an empty signature names no entry (rows archived before
        signatures were kept have none)."""
        if not signature:
            return None
        rows = self.dialect.rows(f"SELECT {CATALOGUE_COLUMNS} FROM catalogue WHERE failure_signature = ? "
                                 "ORDER BY key LIMIT 1", (signature,))
        return _catalogue(rows[0]) if rows else None

    def has_witness(self, witness_id: str, campaign_id: str) -> bool:
        return bool(self.dialect.rows("SELECT 1 FROM witnesses WHERE id = ? AND campaign_id = ?",
                                      (witness_id, campaign_id)))

    def count_in_catalogue(self, key: str, hit: str = "") -> None:
        """One more admission of ``key``; ``hit`` (the admitted execution's id) is counted once, however often
        it is reported (a resumed campaign retraces its admissions)."""
        with self.dialect.tx() as db:
            _count(db, key, hit)

    def catalogue(self, key: str | None = None) -> list[dict[str, Any]]:
        """Every catalogue row (or the one of ``key``), ordered by key."""
        rows = self.dialect.rows(f"SELECT {CATALOGUE_COLUMNS} FROM catalogue"
                                 + (" WHERE key = ?" if key is not None else "") + " ORDER BY key",
                                 () if key is None else (key,))
        return [_catalogue(r) for r in rows]

    def archive_witness(self, witness: WitnessRow, key_fields: dict[str, str], staged_trace: Path | None,
                        hit: str = "", signature: str = "") -> bool:
        """Move the staged trace into ``traces/`` (atomic rename), then claim the catalogue key and write the
        witness in one transaction. False when the catalogue already holds this key (the count goes up, once per
        ``hit``). ``signature`` is the failure signature of the witness's run (see
        :meth:`catalogue_entry_for_failure`)."""
        trace_path = self._place_trace(witness.id, staged_trace)
        with self.dialect.tx() as db:
            claimed = db.execute(
                f"INSERT INTO catalogue ({CATALOGUE_COLUMNS}, failure_signature) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) "
                "ON CONFLICT (key) DO NOTHING",
                (witness.key, key_fields["application"], key_fields["fault_family"], key_fields["penetration_band"],
                 key_fields["conflict_geometry"], witness.id, witness.campaign_id, signature)).rowcount
            if claimed == 0:
                _count(db, witness.key, hit)
                return False
            if hit:
                db.execute("INSERT INTO catalogue_hits (key, hit) VALUES (?, ?) ON CONFLICT DO NOTHING",
                           (witness.key, hit))
            record = dict(witness.record, trace_path=trace_path)
            db.execute(f"INSERT INTO witnesses ({WITNESS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (id) DO UPDATE SET campaign_id = excluded.campaign_id, key = excluded.key, "
                       "application = excluded.application, created_unix_s = excluded.created_unix_s, "
                       "outcome_json = excluded.outcome_json, record_json = excluded.record_json, "
                       "trace_path = excluded.trace_path",
                       (witness.id, witness.campaign_id, witness.key, witness.application, witness.created_unix_s,
                        witness.outcome_json.decode(), json.dumps(record, sort_keys=True), trace_path))
        return True

    def get_witness(self, witness_id: str) -> WitnessRow:
        rows = self.dialect.rows(f"SELECT {WITNESS_COLUMNS} FROM witnesses WHERE id = ?", (witness_id,))
        if not rows:
            raise NotFound(f"no witness {witness_id!r}")
        return self._located(_witness(rows[0]))

    def list_witnesses(self, campaign_id: str = "", application: str = "") -> list[WitnessRow]:
        sql, args = f"SELECT {WITNESS_COLUMNS} FROM witnesses WHERE 1 = 1", []
        if campaign_id:
            sql += " AND campaign_id = ?"
            args.append(campaign_id)
        if application:
            sql += " AND application = ?"
            args.append(application)
        return [self._located(_witness(r)) for r in self.dialect.rows(sql + " ORDER BY created_unix_s, id", args)]

    def record_flaky(self, program_sha256: str, seed: int, campaign_id: str, detail: dict[str, Any]) -> None:
        self.dialect.rowcount("INSERT INTO flaky (program_sha256, seed, campaign_id, detail_json, created_unix_s) "
                              "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                              (program_sha256, seed, campaign_id, json.dumps(detail, sort_keys=True), time.time()))

    def list_flaky(self, campaign_id: str) -> list[dict[str, Any]]:
        rows = self.dialect.rows("SELECT detail_json FROM flaky WHERE campaign_id = ?", (campaign_id,))
        return [json.loads(r[0]) for r in rows]

    # leases -------------------------------------------------------------------
    def acquire_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool:
        now = self.dialect.now
        return self.dialect.rowcount(
            f"INSERT INTO leases AS l (campaign_id, holder, expires_at) VALUES (?, ?, {now} + ?) "
            "ON CONFLICT (campaign_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at "
            f"WHERE l.holder = excluded.holder OR l.expires_at <= {now}",
            (campaign_id, holder, check_ttl(ttl_s))) == 1

    def renew_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool:
        return self.dialect.rowcount(
            f"UPDATE leases SET expires_at = {self.dialect.now} + ? WHERE campaign_id = ? AND holder = ?",
            (check_ttl(ttl_s), campaign_id, holder)) == 1

    def release_lease(self, campaign_id: str, holder: str) -> bool:
        return self.dialect.rowcount("DELETE FROM leases WHERE campaign_id = ? AND holder = ?",
                                     (campaign_id, holder)) == 1

    def lease_holder(self, campaign_id: str) -> str | None:
        """The replica holding an unexpired lease on the campaign, if any."""
        rows = self.dialect.rows(f"SELECT holder FROM leases WHERE campaign_id = ? AND expires_at > {self.dialect.now}",
                                 (campaign_id,))
        return str(rows[0][0]) if rows else None


class SqliteDialect:
    """``data_dir/search.db`` (0600), WAL, synchronous=NORMAL: a commit survives a crash of the process, not of
    the machine. One connection, guarded by a lock (thread-safe)."""

    engine = "sqlite"
    now = "((julianday('now') - 2440587.5) * 86400.0)"  # this host's clock, in seconds since the epoch
    seq_taken: tuple[type[Exception], ...] = ()  # writers are serialized: a seq is never taken under one

    def __init__(self, data_dir: Path):
        self.path = private_file(data_dir / "search.db")  # SQLite gives -wal / -shm the same mode
        self.where = str(self.path)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.RLock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction (the file's write lock from the start) under the connection's lock."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def rows(self, sql: str, args: Args = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def rowcount(self, sql: str, args: Args = ()) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    def lock_schema(self, db: Any) -> None:
        """Nothing to add: BEGIN IMMEDIATE already holds the write lock."""

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Store(SqlRepository):
    """The SQLite repository under ``data_dir`` (``search.db`` + ``traces/``). Thread-safe."""

    dialect: SqliteDialect

    def __init__(self, data_dir: Path):
        super().__init__(data_dir, SqliteDialect)
        self.path = self.dialect.path


def _count(db: Any, key: str, hit: str) -> None:
    if hit and db.execute("INSERT INTO catalogue_hits (key, hit) VALUES (?, ?) ON CONFLICT DO NOTHING",
                          (key, hit)).rowcount == 0:
        return  # counted already
    db.execute("UPDATE catalogue SET count = count + 1 WHERE key = ?", (key,))


def _campaign(r: tuple[Any, ...]) -> CampaignRow:
    return CampaignRow(id=r[0], created_unix_s=float(r[1]), updated_unix_s=float(r[2]), state=r[3], reason=r[4],
                       request=json.loads(r[5]), summary=json.loads(r[6]))


def _catalogue(r: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(CATALOGUE_NAMES, (*r[:6], int(r[6]), r[7]), strict=True))


def _witness(r: tuple[Any, ...]) -> WitnessRow:
    return WitnessRow(id=r[0], campaign_id=r[1], key=r[2], application=r[3], created_unix_s=float(r[4]),
                      outcome_json=r[5].encode(), record=json.loads(r[6]), trace_path=r[7])


__all__ = ["CampaignRow", "Dialect", "LedgerRow", "Repository", "SqlRepository", "SqliteDialect", "Store",
           "TraceFiles", "WitnessRow"]
