"""A throwaway PostgreSQL server for the tests and the repository benchmark.

``throwaway_postgres()`` runs ``initdb`` in a temporary directory and starts ``postgres``
on a free loopback port (its unix socket in that directory too), as the current user, or
as ``nobody`` when running as root (``initdb`` refuses root), and stops it and removes the
directory on exit. Where the binaries are missing or the server does not start it raises
:class:`PostgresUnavailable` with the reason, which the tests turn into a skip.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 30
FAST = ("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


@dataclass(frozen=True)
class LocalPostgres:
    host: str
    port: int
    user: str
    data_dir: Path

    def url(self, dbname: str = "postgres", options: str = "") -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{dbname}" + (f"?options={options}" if options else "")

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def throwaway_postgres(fast: bool = True) -> Iterator[LocalPostgres]:
    """``fast``: fsync, synchronous commit and full-page writes off (tests); else the server's defaults."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not (initdb and pg_ctl):
        raise PostgresUnavailable("PostgreSQL is not installed (no initdb / pg_ctl on PATH or under "
                                  "/usr/lib/postgresql/*/bin)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise PostgresUnavailable("psycopg is not installed (pip install -e '.[postgres]')") from None
    as_user: int | None = None
    if os.geteuid() == 0:
        try:
            as_user = pwd.getpwnam("nobody").pw_uid
        except KeyError:
            raise PostgresUnavailable("running as root and there is no 'nobody' user to run initdb as") from None
    root = Path(tempfile.mkdtemp(prefix="lastv2x-pg-"))
    if as_user is not None:
        os.chown(root, as_user, -1)
    data, log = root / "data", root / "server.log"
    port = _free_port()
    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "HOME": str(root)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, env=env, cwd=root, user=as_user,
                              timeout=START_TIMEOUT_S + 30)

    try:
        made = run(initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C",
                   "--no-sync", "--no-instructions")
        if made.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {(made.stderr or made.stdout).strip()[-300:]}")
        opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 " + (" ".join(FAST) if fast else "")
        started = run(pg_ctl, "-D", str(data), "-o", opts, "-l", str(log), "-w", "-t", str(START_TIMEOUT_S),
                      "start")
        if started.returncode != 0:
            tail = log.read_text()[-300:] if log.exists() else started.stderr
            raise PostgresUnavailable(f"postgres did not start: {tail.strip()}")
    except (OSError, subprocess.SubprocessError, PostgresUnavailable) as e:
        shutil.rmtree(root, ignore_errors=True)
        if isinstance(e, PostgresUnavailable):
            raise
        raise PostgresUnavailable(f"cannot run PostgreSQL here: {e}") from None
    try:
        yield LocalPostgres("127.0.0.1", port, "postgres", data)
    finally:
        run(pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


__all__ = ["LocalPostgres", "PostgresUnavailable", "throwaway_postgres"]
