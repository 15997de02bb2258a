"""The search service's storage: one small repository over SQLite and files under one directory.

What it keeps, and why each table exists:

- ``campaigns``: one row per campaign (request, state, reason, summary) — what
  GetCampaign / ListCampaigns read.
- ``journal``: every state change of a campaign in order (dispatches with the RNG
  state, results, elite snapshots, reflection rounds, admissions, witnesses), so a
  campaign can be inspected and resumed.
- ``ledger``: one row per paired execution, keyed by the execution id
  ``hash(canonical program, seed, campaign)``. A second write of the same id is
  ignored (``INSERT OR IGNORE``): a retried or replayed execution is recorded once.
- ``catalogue``: one row per witness key (application × fault family × penetration
  band × conflict geometry), so equivalent failures are counted, not stored twice;
  ``catalogue_hits`` names what was counted (the admitted execution's id), so an admission
  a resumed campaign retraces is not counted again.
- ``witnesses``: the archived 1-minimal witnesses (spec, program, grounding record,
  seed, outcome bytes with both rollouts and the monitor report, certificate) and
  ``flaky``: admissions that flipped when re-run.

- ``leases``: which search replica drives a campaign (holder, expiry); see
  :meth:`Repository.acquire_lease`.
- ``schema_version``: the applied migrations (``migrations.py``).

Durability: SQLite in WAL mode; a witness's trace is written to a temporary name and
renamed into ``traces/`` *before* the witness row is committed, so a crash leaves
either a whole witness or none (at worst an orphan trace file, never a row pointing
at a missing or half-written file).

Two engines implement :class:`Repository`: :class:`Store` here (SQLite, the default) and
``store_pg.PostgresStore`` (``LASTV2X_SEARCH_DB=postgresql://...``, several search
replicas sharing one archive); ``repository.open_store`` picks one from the settings. Traces are
files under ``data_dir/traces`` for both. Nothing outside these modules writes SQL.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from lastv2x.core.errors import NotFound
from lastv2x.core.files import private_dir, private_file
from services.search import migrations


@dataclass(frozen=True)
class CampaignRow:
    id: str
    state: str  # queued, running, done, failed, cancelled
    reason: str
    request: dict[str, Any]
    summary: dict[str, Any]
    created_unix_s: float
    updated_unix_s: float


@dataclass(frozen=True)
class LedgerRow:
    execution_id: str
    campaign_id: str
    scenario: int
    purpose: str  # initial, search, reflection, shrink, recheck, cross_check, replay
    program_sha256: str
    seed: int
    admitted: bool
    failure_margin: float
    refused: str
    replica: str
    outcome_json: bytes


@dataclass(frozen=True)
class WitnessRow:
    id: str
    campaign_id: str
    key: str
    application: str
    created_unix_s: float
    outcome_json: bytes  # the archived canonical outcome bytes
    record: dict[str, Any]  # spec, program, grounding, seed, certificate, ...
    trace_path: str


class Repository(Protocol):
    """What the search service keeps, whatever the engine. Every method is one transaction.

    Leases (one campaign driven by one search replica at a time): :meth:`acquire_lease` takes
    the campaign for ``holder`` for ``ttl_s`` seconds when nobody holds it, when its lease has
    expired (the holder stopped renewing: it crashed, hung or lost the network), or when
    ``holder`` already holds it (then it extends). :meth:`renew_lease` extends it while the row
    is still ``holder``'s, and is False once another replica took it over or it was released:
    the holder must then stop driving that campaign. Expiry is measured on the database's
    clock (PostgreSQL) or this host's (SQLite), never by comparing replicas' clocks.
    """

    data_dir: Path
    traces_dir: Path
    staging_dir: Path
    engine: str  # "sqlite" or "postgresql"
    schema_version: int

    def close(self) -> None: ...

    # campaigns
    def create_campaign(self, campaign_id: str, request: dict[str, Any], state: str = "queued") -> None: ...
    def update_campaign(self, campaign_id: str, *, state: str | None = None, reason: str | None = None,
                        summary: dict[str, Any] | None = None) -> None: ...
    def get_campaign(self, campaign_id: str) -> CampaignRow: ...
    def list_campaigns(self, limit: int = 100) -> list[CampaignRow]: ...

    # journal: seq 0, 1, 2, ... per campaign
    def append_journal(self, campaign_id: str, kind: str, payload: dict[str, Any]) -> int: ...
    def journal(self, campaign_id: str) -> Iterator[tuple[int, str, dict[str, Any]]]: ...

    # ledger: a second write of an execution id changes nothing and returns False
    def record_execution(self, row: LedgerRow) -> bool: ...
    def get_execution(self, execution_id: str) -> LedgerRow | None: ...
    def count_executions(self, campaign_id: str) -> dict[str, int]: ...

    # catalogue + witnesses
    def catalogue_entry(self, key: str) -> dict[str, Any] | None: ...
    def has_witness(self, witness_id: str, campaign_id: str) -> bool: ...
    def count_in_catalogue(self, key: str, hit: str = "") -> None: ...
    def catalogue(self, key: str | None = None) -> list[dict[str, Any]]: ...
    def archive_witness(self, witness: WitnessRow, key_fields: dict[str, str], staged_trace: Path | None,
                        hit: str = "") -> bool: ...
    def get_witness(self, witness_id: str) -> WitnessRow: ...  # trace_path: where the trace lies on this host
    def trace_file(self, trace_path: str) -> str: ...
    def list_witnesses(self, campaign_id: str = "", application: str = "") -> list[WitnessRow]: ...
    def record_flaky(self, program_sha256: str, seed: int, campaign_id: str, detail: dict[str, Any]) -> None: ...
    def list_flaky(self, campaign_id: str) -> list[dict[str, Any]]: ...

    # leases
    def acquire_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool: ...
    def renew_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool: ...
    def release_lease(self, campaign_id: str, holder: str) -> bool: ...
    def lease_holder(self, campaign_id: str) -> str | None: ...


class TraceFiles:
    """``data_dir`` with ``traces/`` (archived) and ``staging/`` (being written); shared by both engines."""

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.traces_dir = self.data_dir / "traces"
        self.staging_dir = self.data_dir / "staging"  # traces being written; renamed into traces/
        for d in (self.data_dir, self.traces_dir, self.staging_dir):
            private_dir(d)  # 0700: witnesses and traces are the platform team's

    def _place_trace(self, witness_id: str, staged_trace: Path | None) -> str:
        """Rename the staged trace into ``traces/`` under its content hash (atomic on one filesystem; the same
        bytes twice are stored once); its archive-relative id ``traces/<sha256>.mcap`` or ''."""
        if staged_trace is None or not staged_trace.is_file():
            return ""
        digest = hashlib.sha256()
        with open(staged_trace, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        final = self.traces_dir / f"{digest.hexdigest()}.mcap"
        os.chmod(staged_trace, 0o600)
        os.replace(staged_trace, final)
        return final.relative_to(self.data_dir).as_posix()

    def trace_file(self, trace_path: str) -> str:
        """Where an archived trace lies on this host: an archive-relative id resolved under ``data_dir``
        (rows written before content addressing hold absolute paths: kept as they are)."""
        if not trace_path or Path(trace_path).is_absolute():
            return trace_path
        return str(self.data_dir / trace_path)

    def _located(self, w: WitnessRow) -> WitnessRow:
        return replace(w, trace_path=self.trace_file(w.trace_path))


def check_ttl(ttl_s: float) -> float:
    if not ttl_s > 0:
        raise ValueError(f"lease ttl_s must be > 0, got {ttl_s}")
    return float(ttl_s)


class Store(TraceFiles):
    """SQLite repository under ``data_dir`` (``search.db`` + ``traces/``). Thread-safe."""

    engine = "sqlite"

    def __init__(self, data_dir: Path):
        super().__init__(data_dir)
        self.path = private_file(self.data_dir / "search.db")  # 0600; SQLite gives -wal / -shm the same mode
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.RLock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self.schema_version = self._migrate()

    def _migrate(self) -> int:
        """Apply the migrations above the database's version in one transaction; the version after."""
        with self._tx() as db:
            db.execute(migrations.VERSION_TABLE["sqlite"])
            (current,) = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
            for m in migrations.pending(migrations.SQLITE, int(current), str(self.path)):
                for statement in m.statements:
                    db.execute(statement)
                db.execute("INSERT INTO schema_version VALUES (?, ?, ?)", (m.version, m.name, time.time()))
        return max(int(current), migrations.SQLITE[-1].version)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _tx(self) -> _Tx:
        return _Tx(self)

    # campaigns ----------------------------------------------------------------
    def create_campaign(self, campaign_id: str, request: dict[str, Any], state: str = "queued") -> None:
        now = time.time()
        with self._tx() as db:
            db.execute("INSERT INTO campaigns VALUES (?, ?, ?, ?, '', ?, '{}')",
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
        with self._tx() as db:
            db.execute(f"UPDATE campaigns SET {', '.join(sets)} WHERE id = ?", (*args, campaign_id))

    def get_campaign(self, campaign_id: str) -> CampaignRow:
        with self._lock:
            row = self._db.execute("SELECT * FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
        if row is None:
            raise NotFound(f"no campaign {campaign_id!r}")
        return _campaign(row)

    def list_campaigns(self, limit: int = 100) -> list[CampaignRow]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM campaigns ORDER BY created_unix_s DESC, id LIMIT ?",
                                    (limit,)).fetchall()
        return [_campaign(r) for r in rows]

    # journal ------------------------------------------------------------------
    def append_journal(self, campaign_id: str, kind: str, payload: dict[str, Any]) -> int:
        with self._tx() as db:
            (seq,) = db.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM journal WHERE campaign_id = ?",
                                (campaign_id,)).fetchone()
            db.execute("INSERT INTO journal VALUES (?, ?, ?, ?, ?)",
                       (campaign_id, seq, kind, json.dumps(payload, sort_keys=True), time.time()))
        return int(seq)

    def journal(self, campaign_id: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
        with self._lock:
            rows = self._db.execute("SELECT seq, kind, payload_json FROM journal WHERE campaign_id = ? ORDER BY seq",
                                    (campaign_id,)).fetchall()
        for seq, kind, payload in rows:
            yield int(seq), kind, json.loads(payload)

    # ledger -------------------------------------------------------------------
    def record_execution(self, row: LedgerRow) -> bool:
        """Write one execution; False (and no change) when its id is already in the ledger."""
        with self._tx() as db:
            cur = db.execute("INSERT OR IGNORE INTO ledger VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (row.execution_id, row.campaign_id, row.scenario, row.purpose, row.program_sha256,
                              row.seed, int(row.admitted), row.failure_margin, row.refused, row.replica,
                              row.outcome_json.decode(), time.time()))
            return cur.rowcount == 1

    def get_execution(self, execution_id: str) -> LedgerRow | None:
        with self._lock:
            r = self._db.execute("SELECT execution_id, campaign_id, scenario, purpose, program_sha256, seed, admitted, "
                                 "failure_margin, refused, replica, outcome_json FROM ledger WHERE execution_id = ?",
                                 (execution_id,)).fetchone()
        if r is None:
            return None
        return LedgerRow(r[0], r[1], int(r[2]), r[3], r[4], int(r[5]), bool(r[6]), float(r[7]), r[8], r[9],
                         r[10].encode())

    def count_executions(self, campaign_id: str) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT purpose, COUNT(*) FROM ledger WHERE campaign_id = ? GROUP BY purpose",
                                    (campaign_id,)).fetchall()
        return {p: int(n) for p, n in rows}

    # catalogue + witnesses -----------------------------------------------------
    def catalogue_entry(self, key: str) -> dict[str, Any] | None:
        """The catalogue row of ``key`` (witness_id, count, first_campaign, ...), if any."""
        return next((e for e in self.catalogue(key) if e["key"] == key), None)

    def has_witness(self, witness_id: str, campaign_id: str) -> bool:
        with self._lock:
            r = self._db.execute("SELECT 1 FROM witnesses WHERE id = ? AND campaign_id = ?",
                                 (witness_id, campaign_id)).fetchone()
        return r is not None

    def count_in_catalogue(self, key: str, hit: str = "") -> None:
        """One more admission of ``key``; ``hit`` (the admitted execution's id) is counted once, however often
        it is reported (a resumed campaign retraces its admissions)."""
        with self._tx() as db:
            _count(db, key, hit)

    def catalogue(self, key: str | None = None) -> list[dict[str, Any]]:
        """Every catalogue row (or the one of ``key``), ordered by key."""
        sql = ("SELECT key, application, fault_family, penetration_band, conflict_geometry, witness_id, count, "
               "first_campaign FROM catalogue" + (" WHERE key = ?" if key is not None else "") + " ORDER BY key")
        with self._lock:
            rows = self._db.execute(sql, () if key is None else (key,)).fetchall()
        names = ("key", "application", "fault_family", "penetration_band", "conflict_geometry", "witness_id",
                 "count", "first_campaign")
        return [dict(zip(names, r, strict=True)) for r in rows]

    def archive_witness(self, witness: WitnessRow, key_fields: dict[str, str], staged_trace: Path | None,
                        hit: str = "") -> bool:
        """Move the staged trace into ``traces/`` (atomic rename), then commit the witness and its catalogue
        row in one transaction. False when the catalogue already holds this key (the count goes up, once per
        ``hit``)."""
        trace_path = self._place_trace(witness.id, staged_trace)
        with self._tx() as db:
            if db.execute("SELECT 1 FROM catalogue WHERE key = ?", (witness.key,)).fetchone():
                _count(db, witness.key, hit)
                return False
            if hit:
                db.execute("INSERT OR IGNORE INTO catalogue_hits VALUES (?, ?)", (witness.key, hit))
            record = dict(witness.record, trace_path=trace_path)
            db.execute("INSERT OR REPLACE INTO witnesses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (witness.id, witness.campaign_id, witness.key, witness.application, witness.created_unix_s,
                        witness.outcome_json.decode(), json.dumps(record, sort_keys=True), trace_path))
            db.execute("INSERT INTO catalogue VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
                       (witness.key, key_fields["application"], key_fields["fault_family"],
                        key_fields["penetration_band"], key_fields["conflict_geometry"], witness.id,
                        witness.campaign_id))
        return True

    def get_witness(self, witness_id: str) -> WitnessRow:
        with self._lock:
            r = self._db.execute("SELECT * FROM witnesses WHERE id = ?", (witness_id,)).fetchone()
        if r is None:
            raise NotFound(f"no witness {witness_id!r}")
        return self._located(_witness(r))

    def list_witnesses(self, campaign_id: str = "", application: str = "") -> list[WitnessRow]:
        sql, args = "SELECT * FROM witnesses WHERE 1=1", []
        if campaign_id:
            sql += " AND campaign_id = ?"
            args.append(campaign_id)
        if application:
            sql += " AND application = ?"
            args.append(application)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY created_unix_s, id", args).fetchall()
        return [self._located(_witness(r)) for r in rows]

    def record_flaky(self, program_sha256: str, seed: int, campaign_id: str, detail: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute("INSERT OR IGNORE INTO flaky VALUES (?, ?, ?, ?, ?)",
                       (program_sha256, seed, campaign_id, json.dumps(detail, sort_keys=True), time.time()))

    def list_flaky(self, campaign_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT detail_json FROM flaky WHERE campaign_id = ?", (campaign_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    # leases -------------------------------------------------------------------
    def acquire_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool:
        now = time.time()
        with self._tx() as db:
            cur = db.execute("INSERT INTO leases VALUES (?, ?, ?) ON CONFLICT (campaign_id) DO UPDATE "
                             "SET holder = excluded.holder, expires_at = excluded.expires_at "
                             "WHERE leases.holder = excluded.holder OR leases.expires_at <= ?",
                             (campaign_id, holder, now + check_ttl(ttl_s), now))
            return cur.rowcount == 1

    def renew_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool:
        with self._tx() as db:
            cur = db.execute("UPDATE leases SET expires_at = ? WHERE campaign_id = ? AND holder = ?",
                             (time.time() + check_ttl(ttl_s), campaign_id, holder))
            return cur.rowcount == 1

    def release_lease(self, campaign_id: str, holder: str) -> bool:
        with self._tx() as db:
            cur = db.execute("DELETE FROM leases WHERE campaign_id = ? AND holder = ?", (campaign_id, holder))
            return cur.rowcount == 1

    def lease_holder(self, campaign_id: str) -> str | None:
        """The replica holding an unexpired lease on the campaign, if any."""
        with self._lock:
            r = self._db.execute("SELECT holder FROM leases WHERE campaign_id = ? AND expires_at > ?",
                                 (campaign_id, time.time())).fetchone()
        return None if r is None else str(r[0])


class _Tx:
    """``with store._tx() as db``: one IMMEDIATE transaction under the store's lock."""

    def __init__(self, store: Store):
        self._store = store

    def __enter__(self) -> sqlite3.Connection:
        self._store._lock.acquire()
        self._store._db.execute("BEGIN IMMEDIATE")
        return self._store._db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self._store._db.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self._store._lock.release()


def _count(db: sqlite3.Connection, key: str, hit: str) -> None:
    if hit and db.execute("INSERT OR IGNORE INTO catalogue_hits VALUES (?, ?)", (key, hit)).rowcount == 0:
        return  # counted already
    db.execute("UPDATE catalogue SET count = count + 1 WHERE key = ?", (key,))


def _campaign(r: tuple[Any, ...]) -> CampaignRow:
    return CampaignRow(id=r[0], created_unix_s=r[1], updated_unix_s=r[2], state=r[3], reason=r[4],
                       request=json.loads(r[5]), summary=json.loads(r[6]))


def _witness(r: tuple[Any, ...]) -> WitnessRow:
    return WitnessRow(id=r[0], campaign_id=r[1], key=r[2], application=r[3], created_unix_s=r[4],
                      outcome_json=r[5].encode(), record=json.loads(r[6]), trace_path=r[7])


__all__ = ["CampaignRow", "LedgerRow", "Repository", "Store", "TraceFiles", "WitnessRow"]
