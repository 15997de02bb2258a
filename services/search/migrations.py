"""Versioned schema of the search repository: one numbered list of migrations for both engines.

Each database has a ``schema_version`` table with one row per applied migration (version, name,
when). Opening a repository applies the migrations above the database's highest version, in
order, each with its row, in one transaction (PostgreSQL also holds an advisory lock, so replicas
starting together migrate once). A database whose version is higher than the last migration this
code knows was written by newer code: it is refused with :class:`SchemaTooNew` naming both
versions, never written to.

The statements are written once, with the few words the engines spell differently as fields that
:func:`statements` fills in per engine (:data:`TYPES`): ``{REAL}`` (REAL / DOUBLE PRECISION),
``{BIGINT}`` (INTEGER / BIGINT), ``{BOOL}`` (INTEGER / BOOLEAN) and ``{ADOPT}``: SQLite's first
migration says ``IF NOT EXISTS`` so that databases made before versioning (search part 1) adopt
version 1 as they are. What each renders to is what the two per-engine lists of issue 15 said,
statement for statement (``tests/search/test_store.py`` pins it): databases written by that code
open with this one. Rules for a new migration: append it with the next number, never edit one that
has shipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from lastv2x.core.errors import FailedPrecondition


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]  # with {REAL}, {BIGINT}, {BOOL}, {ADOPT}: see :func:`statements`


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


TYPES: dict[str, dict[str, str]] = {
    "sqlite": {"REAL": "REAL", "BIGINT": "INTEGER", "BOOL": "INTEGER", "ADOPT": "IF NOT EXISTS "},
    "postgresql": {"REAL": "DOUBLE PRECISION", "BIGINT": "BIGINT", "BOOL": "BOOLEAN", "ADOPT": ""},
}

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "campaigns, journal, ledger, catalogue, witnesses, flaky", (
        """CREATE TABLE {ADOPT}campaigns (
          id TEXT PRIMARY KEY, created_unix_s {REAL} NOT NULL, updated_unix_s {REAL} NOT NULL,
          state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', request_json TEXT NOT NULL,
          summary_json TEXT NOT NULL)""",
        """CREATE TABLE {ADOPT}journal (
          campaign_id TEXT NOT NULL, seq {BIGINT} NOT NULL, kind TEXT NOT NULL, payload_json TEXT NOT NULL,
          t_unix_s {REAL} NOT NULL, PRIMARY KEY (campaign_id, seq))""",
        """CREATE TABLE {ADOPT}ledger (
          execution_id TEXT PRIMARY KEY, campaign_id TEXT NOT NULL, scenario INTEGER NOT NULL,
          purpose TEXT NOT NULL, program_sha256 TEXT NOT NULL, seed {BIGINT} NOT NULL, admitted {BOOL} NOT NULL,
          failure_margin {REAL} NOT NULL, refused TEXT NOT NULL, replica TEXT NOT NULL,
          outcome_json TEXT NOT NULL, created_unix_s {REAL} NOT NULL)""",
        "CREATE INDEX {ADOPT}ledger_campaign ON ledger (campaign_id)",
        """CREATE TABLE {ADOPT}catalogue (
          key TEXT PRIMARY KEY, application TEXT NOT NULL, fault_family TEXT NOT NULL,
          penetration_band TEXT NOT NULL, conflict_geometry TEXT NOT NULL, witness_id TEXT NOT NULL,
          count {BIGINT} NOT NULL, first_campaign TEXT NOT NULL)""",
        """CREATE TABLE {ADOPT}witnesses (
          id TEXT PRIMARY KEY, campaign_id TEXT NOT NULL, key TEXT NOT NULL, application TEXT NOT NULL,
          created_unix_s {REAL} NOT NULL, outcome_json TEXT NOT NULL, record_json TEXT NOT NULL,
          trace_path TEXT NOT NULL)""",
        "CREATE INDEX {ADOPT}witnesses_campaign ON witnesses (campaign_id)",
        """CREATE TABLE {ADOPT}flaky (
          program_sha256 TEXT NOT NULL, seed {BIGINT} NOT NULL, campaign_id TEXT NOT NULL, detail_json TEXT NOT NULL,
          created_unix_s {REAL} NOT NULL, PRIMARY KEY (program_sha256, seed, campaign_id))""",
    )),
    Migration(2, "campaign leases", (
        """CREATE TABLE leases (
          campaign_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at {REAL} NOT NULL)""",
    )),
    Migration(3, "catalogue hits: each admission counted once, also when a resumed campaign retraces it", (
        "CREATE TABLE catalogue_hits (key TEXT NOT NULL, hit TEXT NOT NULL, PRIMARY KEY (key, hit))",
    )),
    Migration(4, "catalogue failure signatures: one entry per failure across campaigns, whatever its key", (
        "ALTER TABLE catalogue ADD COLUMN failure_signature TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX catalogue_signature ON catalogue (failure_signature)",
    )),
)

SCHEMA_VERSION = len(MIGRATIONS)  # what this code writes

VERSION_TABLE = ("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_unix_s {REAL} NOT NULL)")


def statements(migration: Migration, engine: str) -> tuple[str, ...]:
    """``migration``'s statements as ``engine`` ("sqlite" or "postgresql") spells them."""
    return tuple(s.format(**TYPES[engine]) for s in migration.statements)


def version_table(engine: str) -> str:
    return VERSION_TABLE.format(**TYPES[engine])


def pending(database_version: int, where: str) -> list[Migration]:
    """The migrations above ``database_version``; SchemaTooNew when the database is ahead of the code."""
    if database_version > SCHEMA_VERSION:
        raise SchemaTooNew(where, database_version, SCHEMA_VERSION)
    return [m for m in MIGRATIONS if m.version > database_version]


if [m.version for m in MIGRATIONS] != list(range(1, len(MIGRATIONS) + 1)):
    raise AssertionError(f"migrations must be numbered 1..n without gaps, got {[m.version for m in MIGRATIONS]}")

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "TYPES", "Migration", "SchemaTooNew", "pending", "statements",
           "version_table"]
