"""The search repository on PostgreSQL (psycopg 3): several search replicas, one archive.

Same tables, same contract as the SQLite :class:`~services.search.store.Store` (the same
test module runs on both); what differs is how each write stays correct when replicas
write at once:

- ledger: ``INSERT ... ON CONFLICT (execution_id) DO NOTHING`` — a retried or replayed
  execution, from any replica, is recorded once;
- journal: the next ``seq`` is computed in the INSERT itself; two writers racing on one
  campaign (only possible when a lease was lost) collide on the primary key and the loser
  retries with the next number, so a journal never has a gap or a duplicate;
- witnesses: the catalogue row is claimed first (``ON CONFLICT DO NOTHING`` waits for a
  concurrent claim of the same key to commit), so one key gets one witness across replicas;
  the claim, the witness row and nothing else commit together;
- leases: expiry is measured on the server's clock (``clock_timestamp()``), so replicas'
  clocks never meet.

One connection per repository (autocommit; multi-statement writes in an explicit
transaction), guarded by a lock like the SQLite store; a broken connection is reopened on
the next call. A server that does not answer is :class:`DatabaseUnavailable` naming the
address, never the password.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors

from lastv2x.core.errors import FieldViolation, InvalidArgument, NotFound, Unavailable
from services.search import migrations
from services.search.store import CampaignRow, LedgerRow, TraceFiles, WitnessRow, check_ttl

MIGRATION_LOCK = 0x1A57_5E_A2C4  # pg_advisory_xact_lock key: one replica migrates at a time
NOW_S = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
CONNECT_TIMEOUT_S = 5
JOURNAL_RETRIES = 20


class DatabaseUnavailable(Unavailable):
    """The PostgreSQL server does not answer; maps to UNAVAILABLE. ``address`` has no password."""

    def __init__(self, address: str, reason: str):
        self.address = address
        self.reason = reason
        super().__init__(f"search database {address} does not answer: {reason}")


def redact(url: str) -> str:
    """``url`` without its password (in the authority or as a ``password=`` query parameter)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k.lower() != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _secrets(url: str) -> list[str]:
    parts = urlsplit(url)
    found = [v for k, v in parse_qsl(parts.query) if k.lower() == "password"]
    if parts.password:
        found.append(parts.password)
    return [s for s in found if s]


class PostgresStore(TraceFiles):
    """PostgreSQL repository at ``url``; witness traces under ``data_dir/traces``. Thread-safe."""

    engine = "postgresql"

    def __init__(self, url: str, data_dir: Path, *, connect_timeout_s: int = CONNECT_TIMEOUT_S):
        super().__init__(data_dir)
        self._url = url
        self.address = redact(url)
        self._connect_timeout_s = connect_timeout_s
        self._lock = threading.RLock()
        self._db: psycopg.Connection[Any] | None = None
        self._conn()
        self.schema_version = self._migrate()

    # connection ------------------------------------------------------------------
    def _unavailable(self, exc: Exception) -> DatabaseUnavailable:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        for secret in _secrets(self._url):
            reason = reason.replace(secret, "***")
        return DatabaseUnavailable(self.address, reason)

    def _conn(self) -> psycopg.Connection[Any]:
        if self._db is not None and not self._db.closed and not self._db.broken:
            return self._db
        try:
            self._db = psycopg.connect(self._url, autocommit=True, connect_timeout=self._connect_timeout_s)
        except psycopg.ProgrammingError as e:  # a conninfo psycopg cannot read
            raise InvalidArgument(FieldViolation("LASTV2X_SEARCH_DB", f"{self.address}: {e}")) from None
        except psycopg.OperationalError as e:
            raise self._unavailable(e) from None
        return self._db

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Cursor[Any]]:
        """One transaction under the store's lock; a lost server is DatabaseUnavailable."""
        with self._lock:
            conn = self._conn()
            try:
                with conn.transaction(), conn.cursor() as cur:
                    yield cur
            except psycopg.OperationalError as e:
                raise self._unavailable(e) from None

    def _rows(self, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        """One statement in autocommit (a read, or a write that is one statement)."""
        with self._lock:
            try:
                return self._conn().execute(sql, args).fetchall()
            except psycopg.OperationalError as e:
                raise self._unavailable(e) from None

    def _rowcount(self, sql: str, args: tuple[Any, ...]) -> int:
        with self._lock:
            try:
                return self._conn().execute(sql, args).rowcount
            except psycopg.OperationalError as e:
                raise self._unavailable(e) from None

    def _migrate(self) -> int:
        with self._tx() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            cur.execute(migrations.VERSION_TABLE["postgresql"])
            cur.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version")
            row = cur.fetchone()
            current = int(row[0]) if row else 0
            for m in migrations.pending(migrations.POSTGRES, current, self.address):
                for statement in m.statements:
                    cur.execute(statement)
                cur.execute("INSERT INTO schema_version VALUES (%s, %s, %s)", (m.version, m.name, time.time()))
        return max(current, migrations.POSTGRES[-1].version)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()

    # campaigns -------------------------------------------------------------------
    def create_campaign(self, campaign_id: str, request: dict[str, Any], state: str = "queued") -> None:
        now = time.time()
        self._rowcount("INSERT INTO campaigns (id, created_unix_s, updated_unix_s, state, reason, request_json, "
                       "summary_json) VALUES (%s, %s, %s, %s, '', %s, '{}')",
                       (campaign_id, now, now, state, json.dumps(request, sort_keys=True)))

    def update_campaign(self, campaign_id: str, *, state: str | None = None, reason: str | None = None,
                        summary: dict[str, Any] | None = None) -> None:
        sets: list[str] = ["updated_unix_s = %s"]
        args: list[Any] = [time.time()]
        for name, value in (("state", state), ("reason", reason)):
            if value is not None:
                sets.append(f"{name} = %s")
                args.append(value)
        if summary is not None:
            sets.append("summary_json = %s")
            args.append(json.dumps(summary, sort_keys=True))
        self._rowcount(f"UPDATE campaigns SET {', '.join(sets)} WHERE id = %s", (*args, campaign_id))

    def get_campaign(self, campaign_id: str) -> CampaignRow:
        rows = self._rows(f"SELECT {CAMPAIGN_COLUMNS} FROM campaigns WHERE id = %s", (campaign_id,))
        if not rows:
            raise NotFound(f"no campaign {campaign_id!r}")
        return _campaign(rows[0])

    def list_campaigns(self, limit: int = 100) -> list[CampaignRow]:
        rows = self._rows(f"SELECT {CAMPAIGN_COLUMNS} FROM campaigns ORDER BY created_unix_s DESC, id LIMIT %s",
                          (limit,))
        return [_campaign(r) for r in rows]

    # journal ---------------------------------------------------------------------
    def append_journal(self, campaign_id: str, kind: str, payload: dict[str, Any]) -> int:
        text = json.dumps(payload, sort_keys=True)
        for _ in range(JOURNAL_RETRIES):
            try:
                rows = self._rows(
                    "INSERT INTO journal (campaign_id, seq, kind, payload_json, t_unix_s) "
                    "SELECT %s, COALESCE(MAX(seq), -1) + 1, %s, %s, %s FROM journal WHERE campaign_id = %s "
                    "RETURNING seq", (campaign_id, kind, text, time.time(), campaign_id))
                return int(rows[0][0])
            except pg_errors.UniqueViolation:
                continue  # another writer took this seq; the next attempt reads the new maximum
        raise Unavailable(f"journal of {campaign_id!r}: {JOURNAL_RETRIES} concurrent writers took every seq")

    def journal(self, campaign_id: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
        rows = self._rows("SELECT seq, kind, payload_json FROM journal WHERE campaign_id = %s ORDER BY seq",
                          (campaign_id,))
        for seq, kind, payload in rows:
            yield int(seq), kind, json.loads(payload)

    # ledger ----------------------------------------------------------------------
    def record_execution(self, row: LedgerRow) -> bool:
        """Write one execution; False (and no change) when its id is already in the ledger."""
        return self._rowcount(
            "INSERT INTO ledger (execution_id, campaign_id, scenario, purpose, program_sha256, seed, admitted, "
            "failure_margin, refused, replica, outcome_json, created_unix_s) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (execution_id) DO NOTHING",
            (row.execution_id, row.campaign_id, row.scenario, row.purpose, row.program_sha256, row.seed,
             bool(row.admitted), row.failure_margin, row.refused, row.replica, row.outcome_json.decode(),
             time.time())) == 1

    def get_execution(self, execution_id: str) -> LedgerRow | None:
        rows = self._rows("SELECT execution_id, campaign_id, scenario, purpose, program_sha256, seed, admitted, "
                          "failure_margin, refused, replica, outcome_json FROM ledger WHERE execution_id = %s",
                          (execution_id,))
        if not rows:
            return None
        r = rows[0]
        return LedgerRow(r[0], r[1], int(r[2]), r[3], r[4], int(r[5]), bool(r[6]), float(r[7]), r[8], r[9],
                         r[10].encode())

    def count_executions(self, campaign_id: str) -> dict[str, int]:
        rows = self._rows("SELECT purpose, COUNT(*) FROM ledger WHERE campaign_id = %s GROUP BY purpose",
                          (campaign_id,))
        return {p: int(n) for p, n in rows}

    # catalogue + witnesses -------------------------------------------------------
    def catalogue_entry(self, key: str) -> dict[str, Any] | None:
        """The catalogue row of ``key`` (witness_id, count, first_campaign, ...), if any."""
        return next(iter(self.catalogue(key)), None)

    def has_witness(self, witness_id: str, campaign_id: str) -> bool:
        return bool(self._rows("SELECT 1 FROM witnesses WHERE id = %s AND campaign_id = %s", (witness_id, campaign_id)))

    def count_in_catalogue(self, key: str, hit: str = "") -> None:
        """One more admission of ``key``, ``hit`` (the admitted execution's id) counted once."""
        with self._tx() as cur:
            _count(cur, key, hit)

    def catalogue(self, key: str | None = None) -> list[dict[str, Any]]:
        """Every catalogue row (or the one of ``key``), ordered by key."""
        rows = self._rows("SELECT key, application, fault_family, penetration_band, conflict_geometry, witness_id, "
                          "count, first_campaign FROM catalogue" + (" WHERE key = %s" if key is not None else "")
                          + " ORDER BY key", () if key is None else (key,))
        names = ("key", "application", "fault_family", "penetration_band", "conflict_geometry", "witness_id",
                 "count", "first_campaign")
        return [dict(zip(names, (*r[:6], int(r[6]), r[7]), strict=True)) for r in rows]

    def archive_witness(self, witness: WitnessRow, key_fields: dict[str, str], staged_trace: Path | None,
                        hit: str = "") -> bool:
        """Move the staged trace into ``traces/`` (atomic rename), then claim the catalogue key and write the
        witness in one transaction. False when the catalogue already holds this key (the count goes up)."""
        trace_path = self._place_trace(witness.id, staged_trace)
        with self._tx() as cur:
            cur.execute("INSERT INTO catalogue (key, application, fault_family, penetration_band, conflict_geometry, "
                        "witness_id, count, first_campaign) VALUES (%s, %s, %s, %s, %s, %s, 1, %s) "
                        "ON CONFLICT (key) DO NOTHING",
                        (witness.key, key_fields["application"], key_fields["fault_family"],
                         key_fields["penetration_band"], key_fields["conflict_geometry"], witness.id,
                         witness.campaign_id))
            if cur.rowcount == 0:
                _count(cur, witness.key, hit)
                return False
            if hit:
                cur.execute("INSERT INTO catalogue_hits VALUES (%s, %s) ON CONFLICT DO NOTHING", (witness.key, hit))
            record = dict(witness.record, trace_path=trace_path)
            cur.execute(f"INSERT INTO witnesses ({WITNESS_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                        "ON CONFLICT (id) DO UPDATE SET campaign_id = EXCLUDED.campaign_id, key = EXCLUDED.key, "
                        "application = EXCLUDED.application, created_unix_s = EXCLUDED.created_unix_s, "
                        "outcome_json = EXCLUDED.outcome_json, record_json = EXCLUDED.record_json, "
                        "trace_path = EXCLUDED.trace_path",
                        (witness.id, witness.campaign_id, witness.key, witness.application, witness.created_unix_s,
                         witness.outcome_json.decode(), json.dumps(record, sort_keys=True), trace_path))
        return True

    def get_witness(self, witness_id: str) -> WitnessRow:
        rows = self._rows(f"SELECT {WITNESS_COLUMNS} FROM witnesses WHERE id = %s", (witness_id,))
        if not rows:
            raise NotFound(f"no witness {witness_id!r}")
        return self._located(_witness(rows[0]))

    def list_witnesses(self, campaign_id: str = "", application: str = "") -> list[WitnessRow]:
        sql, args = f"SELECT {WITNESS_COLUMNS} FROM witnesses WHERE true", []
        if campaign_id:
            sql += " AND campaign_id = %s"
            args.append(campaign_id)
        if application:
            sql += " AND application = %s"
            args.append(application)
        return [self._located(_witness(r)) for r in self._rows(sql + " ORDER BY created_unix_s, id", args)]

    def record_flaky(self, program_sha256: str, seed: int, campaign_id: str, detail: dict[str, Any]) -> None:
        self._rowcount("INSERT INTO flaky (program_sha256, seed, campaign_id, detail_json, created_unix_s) "
                       "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                       (program_sha256, seed, campaign_id, json.dumps(detail, sort_keys=True), time.time()))

    def list_flaky(self, campaign_id: str) -> list[dict[str, Any]]:
        rows = self._rows("SELECT detail_json FROM flaky WHERE campaign_id = %s", (campaign_id,))
        return [json.loads(r[0]) for r in rows]

    # leases ----------------------------------------------------------------------
    def acquire_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool:
        return self._rowcount(
            f"INSERT INTO leases AS l (campaign_id, holder, expires_at) VALUES (%s, %s, {NOW_S} + %s) "
            "ON CONFLICT (campaign_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at "
            f"WHERE l.holder = EXCLUDED.holder OR l.expires_at <= {NOW_S}",
            (campaign_id, holder, check_ttl(ttl_s))) == 1

    def renew_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool:
        return self._rowcount(f"UPDATE leases SET expires_at = {NOW_S} + %s WHERE campaign_id = %s AND holder = %s",
                              (check_ttl(ttl_s), campaign_id, holder)) == 1

    def release_lease(self, campaign_id: str, holder: str) -> bool:
        return self._rowcount("DELETE FROM leases WHERE campaign_id = %s AND holder = %s",
                              (campaign_id, holder)) == 1

    def lease_holder(self, campaign_id: str) -> str | None:
        rows = self._rows(f"SELECT holder FROM leases WHERE campaign_id = %s AND expires_at > {NOW_S}",
                          (campaign_id,))
        return str(rows[0][0]) if rows else None


CAMPAIGN_COLUMNS = "id, created_unix_s, updated_unix_s, state, reason, request_json, summary_json"
WITNESS_COLUMNS = "id, campaign_id, key, application, created_unix_s, outcome_json, record_json, trace_path"


def _count(cur: psycopg.Cursor[Any], key: str, hit: str) -> None:
    if hit:
        cur.execute("INSERT INTO catalogue_hits VALUES (%s, %s) ON CONFLICT DO NOTHING", (key, hit))
        if cur.rowcount == 0:
            return  # counted already
    cur.execute("UPDATE catalogue SET count = count + 1 WHERE key = %s", (key,))


def _campaign(r: tuple[Any, ...]) -> CampaignRow:
    return CampaignRow(id=r[0], created_unix_s=float(r[1]), updated_unix_s=float(r[2]), state=r[3], reason=r[4],
                       request=json.loads(r[5]), summary=json.loads(r[6]))


def _witness(r: tuple[Any, ...]) -> WitnessRow:
    return WitnessRow(id=r[0], campaign_id=r[1], key=r[2], application=r[3], created_unix_s=float(r[4]),
                      outcome_json=r[5].encode(), record=json.loads(r[6]), trace_path=r[7])


__all__ = ["DatabaseUnavailable", "PostgresStore", "redact"]
