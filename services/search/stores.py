"""Which repository a search service opens: one function, above both engines (no import cycle)."""

from __future__ import annotations

from services.search.repository import Repository
from services.search.settings import SearchSettings


def open_store(settings: SearchSettings) -> Repository:
    """The repository the settings name: PostgreSQL when ``settings.db`` is a URL (psycopg is imported only
    then), else SQLite under ``settings.data_dir``."""
    if settings.db:
        from services.search.store_pg import PostgresStore

        return PostgresStore(settings.db, settings.data_dir)
    from services.search.store import Store

    return Store(settings.data_dir)


__all__ = ["open_store"]
