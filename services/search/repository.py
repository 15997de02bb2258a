"""Which repository the search service opens: the one place that chooses the engine.

``open_store(settings)``: PostgreSQL (``store_pg.PostgresStore``) when ``LASTV2X_SEARCH_DB``
is a ``postgresql://`` URL, else SQLite (``store.Store``) under ``LASTV2X_SEARCH_DATA_DIR``.
Both implement :class:`~services.search.store.Repository`; witness traces live under
``data_dir/traces`` either way.
"""

from __future__ import annotations

from services.search.settings import SearchSettings
from services.search.store import Repository, Store


def open_store(settings: SearchSettings) -> Repository:
    """The repository the settings name (psycopg is imported only when PostgreSQL is asked for)."""
    if settings.db:
        from services.search.store_pg import PostgresStore

        return PostgresStore(settings.db, settings.data_dir)
    return Store(settings.data_dir)


__all__ = ["Repository", "open_store"]
