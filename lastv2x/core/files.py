"""Archive files only their owner may read: folders 0700, files 0600 (issue 41).

Archives hold witnesses, recordings and ledgers a platform team may not want every local user
or sidecar to read. The process umask is left alone (it is process-wide and other code relies
on it); each archive path is created with its mode and chmod-ed, so a folder made before this
rule is tightened too. SQLite creates ``-wal`` and ``-shm`` with its database file's mode, so a
database created 0600 first keeps its companions 0600.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path | str) -> Path:
    """``path`` (and missing parents) created; ``path`` itself 0700."""
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    os.chmod(p, DIR_MODE)
    return p


def private_file(path: Path | str) -> Path:
    """``path`` created empty if missing, 0600 (with its SQLite ``-wal`` / ``-shm`` / ``-journal`` when present)."""
    p = Path(path)
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY, FILE_MODE))
    for q in (p, *(p.with_name(p.name + s) for s in ("-wal", "-shm", "-journal"))):
        if q.exists():
            os.chmod(q, FILE_MODE)
    return p


def open_private(path: Path | str, mode: str = "wb"):  # type: ignore[no-untyped-def]  # noqa: ANN201
    """``open(path, mode)`` for writing, the file created 0600 (never readable by others, not even briefly)."""
    flags = os.O_CREAT | os.O_WRONLY | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    return os.fdopen(os.open(path, flags, FILE_MODE), mode)


__all__ = ["DIR_MODE", "FILE_MODE", "open_private", "private_dir", "private_file"]
