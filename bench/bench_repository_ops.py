"""Search repository operations per second, before and after a change, on both engines (issue 39).

    python bench/bench_repository_ops.py [--before HEAD] [--n 500] [--rounds 11]

One operation is one repository call; a step is what the campaign runner does per execution:
``record_execution`` (a new ledger row) and ``append_journal`` (the result entry), each its own
transaction. The repository modules as of ``--before`` (a git revision) are loaded from git into a
temporary package beside the working tree's, so both run in one process on one machine, in chunks
taking turns (the figure is each column's median chunk, its best in brackets). Engines: SQLite (WAL, synchronous=NORMAL)
and a throwaway PostgreSQL 15 (``bench/postgres_local.py``, default durability, the sessions
with ``synchronous_commit=off``: the same guarantee as SQLite's). Prints ops/s side by side.
"""

from __future__ import annotations

import argparse
import importlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.postgres_local import PostgresUnavailable, throwaway_postgres  # noqa: E402
from services.search.store import LedgerRow  # noqa: E402

MODULES = ("store", "store_pg", "migrations", "repository", "dialect", "sql_repository")
PACKAGE = "bench_before_search"
RESULT = {"scenario": 0, "purpose": "search", "program_sha256": "ab" * 32, "seed": 123456789, "admitted": False,
          "failure_margin": 0.75, "refused": "", "replica": "10.0.0.7:50053", "rng_state": list(range(40)),
          "mutation": {"operator": "shift_window", "fault": "freeze_spat", "delta_s": 0.25}}
OUTCOME = b'{"rollouts": [' + b",".join([b'{"t_s": 1.0, "v_mps": 10.0, "x_m": 3.0}'] * 40) + b"]}"


def load_revision(rev: str, into: Path) -> tuple[ModuleType, ModuleType]:
    """``services.search.store`` and ``store_pg`` as of ``rev``, importable as ``bench_before_search.*``."""
    package = into / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    present = []
    for name in MODULES:
        shown = subprocess.run(["git", "show", f"{rev}:services/search/{name}.py"], cwd=ROOT, capture_output=True,
                               text=True)
        if shown.returncode == 0:
            present.append((name, shown.stdout))
    names = "|".join(n for n, _ in present)
    for name, text in present:
        text = re.sub(rf"\bservices\.search\.({names})\b", rf"{PACKAGE}.\1", text)
        text = re.sub(rf"from services\.search import ({names})\b", rf"from {PACKAGE} import \1", text)
        (package / f"{name}.py").write_text(text)
    sys.path.insert(0, str(into))
    return importlib.import_module(f"{PACKAGE}.store"), importlib.import_module(f"{PACKAGE}.store_pg")


def step(repo: Any, row: type, campaign: str, i: int) -> None:
    repo.record_execution(row(f"{campaign}-e{i}", campaign, 0, "search", "ab" * 32, i, False, 0.5, "", "r", OUTCOME))
    repo.append_journal(campaign, "result", dict(RESULT, i=i))


def run_rounds(opens: dict[tuple[str, str], Callable[[], Any]], rows: dict[str, type], args: argparse.Namespace,
               rates: dict[tuple[str, str], list[float]]) -> None:
    """Each column's repository opened once and warmed up; then ``--rounds`` chunks of ``--n`` steps, the columns
    taking turns chunk by chunk (a noisy neighbour slows all alike); ops/s of every chunk."""
    repos = {col: open_repo() for col, open_repo in opens.items()}
    try:
        for (_, v), repo in repos.items():
            repo.create_campaign("c", {})
            for i in range(max(1, args.n // 5)):  # warm-up: connection, caches, statement preparation
                step(repo, rows[v], "warm", i)
        for r in range(args.rounds):
            for (engine, v), repo in repos.items():
                t = time.perf_counter()
                for i in range(r * args.n, (r + 1) * args.n):
                    step(repo, rows[v], "c", i)
                rates.setdefault((engine, v), []).append(2 * args.n / (time.perf_counter() - t))
    finally:
        for repo in repos.values():
            repo.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", default="HEAD", help="git revision of the 'before' repository (default HEAD)")
    p.add_argument("--n", type=int, default=500, help="steps (record_execution + append_journal) per chunk")
    p.add_argument("--rounds", type=int, default=11, help="chunks per column, the columns taking turns")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-repo-ops-") as tmp:
        root = Path(tmp)
        old_store, old_pg = load_revision(args.before, root / "before")
        from services.search import store as new_store
        from services.search import store_pg as new_pg

        versions = {"before": (old_store, old_pg), "after": (new_store, new_pg)}
        rows = {"before": old_store.LedgerRow, "after": LedgerRow}
        rates: dict[tuple[str, str], list[float]] = {}
        run_rounds({("SQLite WAL", v): partial(st.Store, root / f"sqlite-{v}") for v, (st, _) in versions.items()},
                   rows, args, rates)
        try:
            with throwaway_postgres(fast=False) as pg:
                opens: dict[tuple[str, str], Callable[[], Any]] = {}
                for v, (_, pgm) in versions.items():
                    url = pg.create_database(f"bench_{v}") + "?options=-c%20synchronous_commit%3Doff"
                    opens[("PostgreSQL", v)] = partial(pgm.PostgresStore, url, root / f"pg-{v}")
                run_rounds(opens, rows, args, rates)
        except PostgresUnavailable as e:
            print(f"(PostgreSQL rows missing: {e})")
    print(f"== search repository ops/s: record_execution + append_journal, median of {args.rounds} chunks of "
          f"{args.n} steps (max in brackets); before = {args.before}, after = working tree")
    print(f"{'engine':<14}{'before ops/s':>22}{'after ops/s':>22}{'after/before':>14}")
    for engine in dict.fromkeys(e for e, _ in rates):
        (b, bmax), (a, amax) = (_summary(rates[(engine, v)]) for v in ("before", "after"))
        print(f"{engine:<14}{f'{b:.0f} [{bmax:.0f}]':>22}{f'{a:.0f} [{amax:.0f}]':>22}{a / b:>13.2f}x")


def _summary(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), max(values)


if __name__ == "__main__":
    main()
