"""The search repository on PostgreSQL (psycopg 3): several search replicas, one archive.

The repository itself is ``store.SqlRepository``, the same code as on SQLite (the same test
module runs on both); this module is only PostgreSQL's dialect: ``?`` placeholders rewritten
to ``%s``; transactions on one autocommit connection (multi-statement writes in an explicit
transaction); migrations under an advisory lock (``pg_advisory_xact_lock``), so replicas
starting together migrate once; leases measured on the server's clock (``clock_timestamp()``),
so replicas' clocks never meet; a journal ``seq`` taken by a concurrent writer (a unique
violation) retried with the next number.

One connection per repository, guarded by a lock; a broken connection is reopened on the next
call. A server that does not answer is :class:`DatabaseUnavailable` naming the address, never
the password.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors

from lastv2x.core.errors import FieldViolation, InvalidArgument, Unavailable
from services.search.store import SqlRepository

MIGRATION_LOCK = 0x1A57_5E_A2C4  # pg_advisory_xact_lock key: one replica migrates at a time
NOW_S = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
CONNECT_TIMEOUT_S = 5


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


@lru_cache(maxsize=256)
def _pg(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (the repository's SQL has no other ``?`` and no ``%``)."""
    return sql.replace("?", "%s")


class _Cursor:
    """A psycopg cursor that takes the repository's ``?`` placeholders."""

    def __init__(self, cur: psycopg.Cursor[Any]):
        self._cur = cur

    def execute(self, sql: str, args: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self._cur.execute(_pg(sql), args)


class PostgresDialect:
    """One autocommit connection to ``url``, guarded by a lock; reopened when broken."""

    engine = "postgresql"
    now = NOW_S
    seq_taken: tuple[type[Exception], ...] = (pg_errors.UniqueViolation,)

    def __init__(self, url: str, connect_timeout_s: int = CONNECT_TIMEOUT_S):
        self._url = url
        self.where = redact(url)
        self._connect_timeout_s = connect_timeout_s
        self._lock = threading.RLock()
        self._db: psycopg.Connection[Any] | None = None
        self._conn()

    def _unavailable(self, exc: Exception) -> DatabaseUnavailable:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        for secret in _secrets(self._url):
            reason = reason.replace(secret, "***")
        return DatabaseUnavailable(self.where, reason)

    def _conn(self) -> psycopg.Connection[Any]:
        if self._db is not None and not self._db.closed and not self._db.broken:
            return self._db
        try:
            self._db = psycopg.connect(self._url, autocommit=True, connect_timeout=self._connect_timeout_s)
        except psycopg.ProgrammingError as e:  # a conninfo psycopg cannot read
            raise InvalidArgument(FieldViolation("LASTV2X_SEARCH_DB", f"{self.where}: {e}")) from None
        except psycopg.OperationalError as e:
            raise self._unavailable(e) from None
        return self._db

    @contextmanager
    def tx(self) -> Iterator[_Cursor]:
        """One transaction under the connection's lock; a lost server is DatabaseUnavailable."""
        with self._lock:
            conn = self._conn()
            try:
                with conn.transaction(), conn.cursor() as cur:
                    yield _Cursor(cur)
            except psycopg.OperationalError as e:
                raise self._unavailable(e) from None

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One statement in autocommit (a read, or a write that is one statement)."""
        with self._lock:
            try:
                return self._conn().execute(_pg(sql), args).fetchall()
            except psycopg.OperationalError as e:
                raise self._unavailable(e) from None

    def rowcount(self, sql: str, args: Sequence[Any] = ()) -> int:
        with self._lock:
            try:
                return self._conn().execute(_pg(sql), args).rowcount
            except psycopg.OperationalError as e:
                raise self._unavailable(e) from None

    def lock_schema(self, db: _Cursor) -> None:
        db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()


class PostgresStore(SqlRepository):
    """The PostgreSQL repository at ``url``; witness traces under ``data_dir/traces``. Thread-safe."""

    dialect: PostgresDialect

    def __init__(self, url: str, data_dir: Path, *, connect_timeout_s: int = CONNECT_TIMEOUT_S):
        super().__init__(data_dir, lambda _: PostgresDialect(url, connect_timeout_s))
        self.address = self.dialect.where


__all__ = ["DatabaseUnavailable", "PostgresDialect", "PostgresStore", "redact"]
