"""Versioned schema of the search repository: numbered migrations, one list per engine.

Each engine's database has a ``schema_version`` table with one row per applied migration
(version, name, when). Opening a repository applies the migrations above the database's
highest version, in order, each with its row, in one transaction (PostgreSQL also holds an
advisory lock, so replicas starting together migrate once). A database whose version is
higher than the last migration this code knows was written by newer code: it is refused
with :class:`SchemaTooNew` naming both versions, never written to.

Rules for a new migration: append it to *both* lists with the next number (the two lists
stay the same length, a test checks it), never edit one that has shipped. SQLite's first
migration uses ``IF NOT EXISTS`` so that databases made before versioning (search part 1)
adopt version 1 as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from lastv2x.core.errors import FailedPrecondition


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


class SchemaTooNew(FailedPrecondition):
    """The database was migrated by newer code than this; maps to FAILED_PRECONDITION."""

    def __init__(self, where: str, database_version: int, code_version: int):
        self.database_version = database_version
        self.code_version = code_version
        super().__init__(
            f"search database {where} has schema version {database_version}, newer than this code's "
            f"version {code_version}",
            f"run a search service that knows schema version {database_version}, or point "
            "LASTV2X_SEARCH_DB / LASTV2X_SEARCH_DATA_DIR at another database")


SQLITE: tuple[Migration, ...] = (
    Migration(1, "campaigns, journal, ledger, catalogue, witnesses, flaky", (
        """CREATE TABLE IF NOT EXISTS campaigns (
          id TEXT PRIMARY KEY, created_unix_s REAL NOT NULL, updated_unix_s REAL NOT NULL,
          state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', request_json TEXT NOT NULL,
          summary_json TEXT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS journal (
          campaign_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, payload_json TEXT NOT NULL,
          t_unix_s REAL NOT NULL, PRIMARY KEY (campaign_id, seq))""",
        """CREATE TABLE IF NOT EXISTS ledger (
          execution_id TEXT PRIMARY KEY, campaign_id TEXT NOT NULL, scenario INTEGER NOT NULL,
          purpose TEXT NOT NULL, program_sha256 TEXT NOT NULL, seed INTEGER NOT NULL, admitted INTEGER NOT NULL,
          failure_margin REAL NOT NULL, refused TEXT NOT NULL, replica TEXT NOT NULL, outcome_json TEXT NOT NULL,
          created_unix_s REAL NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS ledger_campaign ON ledger (campaign_id)",
        """CREATE TABLE IF NOT EXISTS catalogue (
          key TEXT PRIMARY KEY, application TEXT NOT NULL, fault_family TEXT NOT NULL,
          penetration_band TEXT NOT NULL, conflict_geometry TEXT NOT NULL, witness_id TEXT NOT NULL,
          count INTEGER NOT NULL, first_campaign TEXT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS witnesses (
          id TEXT PRIMARY KEY, campaign_id TEXT NOT NULL, key TEXT NOT NULL, application TEXT NOT NULL,
          created_unix_s REAL NOT NULL, outcome_json TEXT NOT NULL, record_json TEXT NOT NULL,
          trace_path TEXT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS witnesses_campaign ON witnesses (campaign_id)",
        """CREATE TABLE IF NOT EXISTS flaky (
          program_sha256 TEXT NOT NULL, seed INTEGER NOT NULL, campaign_id TEXT NOT NULL, detail_json TEXT NOT NULL,
          created_unix_s REAL NOT NULL, PRIMARY KEY (program_sha256, seed, campaign_id))""",
    )),
    Migration(2, "campaign leases", (
        """CREATE TABLE leases (
          campaign_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at REAL NOT NULL)""",
    )),
    Migration(3, "catalogue hits: each admission counted once, also when a resumed campaign retraces it", (
        "CREATE TABLE catalogue_hits (key TEXT NOT NULL, hit TEXT NOT NULL, PRIMARY KEY (key, hit))",
    )),
)

POSTGRES: tuple[Migration, ...] = (
    Migration(1, "campaigns, journal, ledger, catalogue, witnesses, flaky", (
        """CREATE TABLE campaigns (
          id TEXT PRIMARY KEY, created_unix_s DOUBLE PRECISION NOT NULL, updated_unix_s DOUBLE PRECISION NOT NULL,
          state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', request_json TEXT NOT NULL,
          summary_json TEXT NOT NULL)""",
        """CREATE TABLE journal (
          campaign_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, payload_json TEXT NOT NULL,
          t_unix_s DOUBLE PRECISION NOT NULL, PRIMARY KEY (campaign_id, seq))""",
        """CREATE TABLE ledger (
          execution_id TEXT PRIMARY KEY, campaign_id TEXT NOT NULL, scenario INTEGER NOT NULL,
          purpose TEXT NOT NULL, program_sha256 TEXT NOT NULL, seed BIGINT NOT NULL, admitted BOOLEAN NOT NULL,
          failure_margin DOUBLE PRECISION NOT NULL, refused TEXT NOT NULL, replica TEXT NOT NULL,
          outcome_json TEXT NOT NULL, created_unix_s DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX ledger_campaign ON ledger (campaign_id)",
        """CREATE TABLE catalogue (
          key TEXT PRIMARY KEY, application TEXT NOT NULL, fault_family TEXT NOT NULL,
          penetration_band TEXT NOT NULL, conflict_geometry TEXT NOT NULL, witness_id TEXT NOT NULL,
          count BIGINT NOT NULL, first_campaign TEXT NOT NULL)""",
        """CREATE TABLE witnesses (
          id TEXT PRIMARY KEY, campaign_id TEXT NOT NULL, key TEXT NOT NULL, application TEXT NOT NULL,
          created_unix_s DOUBLE PRECISION NOT NULL, outcome_json TEXT NOT NULL, record_json TEXT NOT NULL,
          trace_path TEXT NOT NULL)""",
        "CREATE INDEX witnesses_campaign ON witnesses (campaign_id)",
        """CREATE TABLE flaky (
          program_sha256 TEXT NOT NULL, seed BIGINT NOT NULL, campaign_id TEXT NOT NULL, detail_json TEXT NOT NULL,
          created_unix_s DOUBLE PRECISION NOT NULL, PRIMARY KEY (program_sha256, seed, campaign_id))""",
    )),
    Migration(2, "campaign leases", (
        """CREATE TABLE leases (
          campaign_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL)""",
    )),
    Migration(3, "catalogue hits: each admission counted once, also when a resumed campaign retraces it", (
        "CREATE TABLE catalogue_hits (key TEXT NOT NULL, hit TEXT NOT NULL, PRIMARY KEY (key, hit))",
    )),
)

SCHEMA_VERSION = len(SQLITE)  # what this code writes; both engines have the same numbered list

VERSION_TABLE = {
    "sqlite": "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
              "applied_unix_s REAL NOT NULL)",
    "postgresql": "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                  "applied_unix_s DOUBLE PRECISION NOT NULL)",
}


def pending(migrations: tuple[Migration, ...], database_version: int, where: str) -> list[Migration]:
    """The migrations above ``database_version``; SchemaTooNew when the database is ahead of the code."""
    code_version = migrations[-1].version
    if database_version > code_version:
        raise SchemaTooNew(where, database_version, code_version)
    return [m for m in migrations if m.version > database_version]


def _check(migrations: tuple[Migration, ...]) -> None:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(migrations) + 1)):
        raise AssertionError(f"migrations must be numbered 1..n without gaps, got {versions}")


for _engine in (SQLITE, POSTGRES):
    _check(_engine)
if len(SQLITE) != len(POSTGRES):
    raise AssertionError("SQLite and PostgreSQL migrations must have the same versions")

__all__ = ["POSTGRES", "SCHEMA_VERSION", "SQLITE", "VERSION_TABLE", "Migration", "SchemaTooNew", "pending"]
