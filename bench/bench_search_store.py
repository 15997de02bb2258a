"""Search repository benchmark (issue 15): SQLite vs PostgreSQL behind the same interface.

    python bench/bench_search_store.py [--n 2000] [--journal 5000] [--replicas 4]

Starts a throwaway PostgreSQL server (``bench/postgres_local.py``, the server's default
durability: fsync on) and prints, side by side in one run:

- journal appends/s and ledger writes/s, one writer (each call its own transaction, as the
  campaign runner makes them);
- ledger writes/s with ``--replicas`` repositories writing at once (search replicas sharing one
  archive; SQLite serializes writers, PostgreSQL does not);
- resume read: the time to read back one campaign's journal of ``--journal`` entries (what a
  restarted service reads to resume a campaign).

Columns: SQLite (WAL, synchronous=NORMAL: a commit survives a crash of the process, not of the
machine), PostgreSQL with ``synchronous_commit=off`` (the same guarantee) and with
``synchronous_commit=on`` (each commit flushed to disk before it returns).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.postgres_local import PostgresUnavailable, throwaway_postgres  # noqa: E402
from services.search.store import LedgerRow, Repository, Store  # noqa: E402

RESULT = {"scenario": 0, "purpose": "search", "program_sha256": "ab" * 32, "seed": 123456789, "admitted": False,
          "failure_margin": 0.75, "refused": "", "replica": "10.0.0.7:50053", "rng_state": list(range(40)),
          "mutation": {"operator": "shift_window", "fault": "freeze_spat", "delta_s": 0.25}}
OUTCOME = b'{"rollouts": [' + b",".join([b'{"t_s": 1.0, "v_mps": 10.0, "x_m": 3.0}'] * 40) + b"]}"


def _ledger(i: int, campaign: str) -> LedgerRow:
    return LedgerRow(f"{campaign}-e{i}", campaign, 0, "search", "ab" * 32, i, False, 0.5, "", "r", OUTCOME)


def _rate(n: int, work: Callable[[int], object]) -> float:
    t = time.perf_counter()
    for i in range(n):
        work(i)
    return n / (time.perf_counter() - t)


def measure(open_repo: Callable[[], Repository], args: argparse.Namespace) -> dict[str, float]:
    repo = open_repo()
    out: dict[str, float] = {}
    repo.create_campaign("c-w", {})
    for i in range(max(1, args.n // 10)):  # warm-up: connection, caches, first pages after a checkpoint
        repo.append_journal("c-warm", "result", dict(RESULT, i=i))
        repo.record_execution(_ledger(i, "c-warm"))
    out["journal appends/s"] = _rate(args.n, lambda i: repo.append_journal("c-w", "result", dict(RESULT, i=i)))
    out["ledger writes/s"] = _rate(args.n, lambda i: repo.record_execution(_ledger(i, "c-w")))
    out["ledger re-writes/s (ignored)"] = _rate(args.n, lambda i: repo.record_execution(_ledger(i, "c-w")))

    replicas = [open_repo() for _ in range(args.replicas)]
    per = args.n // args.replicas
    threads = [threading.Thread(target=lambda r=r, k=k: [r.record_execution(_ledger(i, f"c-r{k}"))
                                                         for i in range(per)])
               for k, r in enumerate(replicas)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out[f"ledger writes/s, {args.replicas} replicas"] = per * args.replicas / (time.perf_counter() - t)

    repo.create_campaign("c-r", {})
    for i in range(args.journal):
        repo.append_journal("c-r", "result", dict(RESULT, i=i))
    repo.close()
    reader = open_repo()
    t = time.perf_counter()
    n = sum(1 for _ in reader.journal("c-r"))
    out[f"resume read of {n} entries, ms"] = (time.perf_counter() - t) * 1e3
    for r in (*replicas, reader):
        r.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=2000, help="writes per measure")
    p.add_argument("--journal", type=int, default=5000, help="entries in the journal read back")
    p.add_argument("--replicas", type=int, default=4, help="repositories writing at once")
    args = p.parse_args()
    from services.search.store_pg import PostgresStore

    columns: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        root = Path(tmp)
        columns["SQLite WAL"] = measure(lambda: Store(root / "sqlite"), args)
        try:
            with throwaway_postgres(fast=False) as pg:
                for label, sync in (("PG sync_commit=off", "off"), ("PG sync_commit=on", "on")):
                    url = pg.create_database(f"bench_{sync}")
                    url = f"{url}?options=-c%20synchronous_commit%3D{sync}"
                    columns[label] = measure(partial(PostgresStore, url, root / f"pg-{sync}"), args)
        except PostgresUnavailable as e:
            print(f"(PostgreSQL columns missing: {e})")
    names = list(columns)
    rows = list(next(iter(columns.values())))
    print(f"== search repository, {args.n} writes per measure (one process; PostgreSQL on loopback)")
    print(f"{'':<34}" + "".join(f"{n:>20}" for n in names) + (f"{'PG off / SQLite':>17}" if len(names) > 1 else ""))
    for row in rows:
        values = [columns[n][row] for n in names]
        ratio = f"{values[1] / values[0]:>16.2f}x" if len(values) > 1 else ""
        print(f"{row:<34}" + "".join(f"{v:>20.1f}" for v in values) + ratio)


if __name__ == "__main__":
    main()
