"""``python -m lastv2x_app.experiments [--quick] [--only ROW[,ROW]] [--out EXPERIMENTS.md]``: run the
papers' experiments and write the report (``make experiments [QUICK=1]``)."""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

from lastv2x_app.experiments import ROOT, ROWS, Row, command, table


def run_row(row_id: str, quick: bool, progress) -> Row:
    """One row; an exception becomes a failed row naming it (never a silent gap)."""
    t0 = time.perf_counter()
    module = None
    try:
        module = importlib.import_module(f"lastv2x_app.experiments.{ROWS[row_id]}")
        row = module.run(quick, progress)
    except Exception as e:  # reported in the table, with the traceback in the row's section
        row = Row(row_id, getattr(module, "SECTION", "?"), getattr(module, "TITLE", row_id),
                  getattr(module, "PAPER", "?"), f"FAILED: {type(e).__name__}: {e}"[:200], "-",
                  command(row_id, quick), status="failed", details="```text\n" + traceback.format_exc() + "```")
    row.seconds = time.perf_counter() - t0
    return row


def _commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(rows: list[Row], quick: bool, only: list[str] | None, elapsed_s: float) -> str:
    mode = "QUICK (`--quick`: fewer scenes and seeds; the figures of a full run need `make experiments`)" \
        if quick else "FULL"
    head = [
        "# Experiments: the papers' figures beside ours",
        "",
        f"Written by `{'make experiments QUICK=1' if quick else 'make experiments'}` "
        f"(`python -m lastv2x_app.experiments{' --quick' if quick else ''}"
        f"{' --only ' + ','.join(only) if only else ''}`). **Mode: {mode}.**",
        f"Commit {_commit()}, {time.strftime('%Y-%m-%d %H:%M %Z')}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPU(s), {elapsed_s:.0f} s in all. Every figure below was computed by this run; none is "
        "carried over. Nothing was tuned to the paper: each row runs the platform's defaults on the scenes its "
        "section names, and says why where ours differs. Papers: LAST-V2X and STRaP (`../shared/seeds/`).",
        "",
        table(("row", "paper", "figure (paper)", "ours", "n / seeds", "status", "s"),
              [(f"[{r.title}](#{r.id})", r.section, _cell(r.paper), _cell(r.ours), _cell(r.n), r.status,
                f"{r.seconds:.0f}") for r in rows]),
        "",
    ]
    body = []
    for r in rows:
        body += [f'<a id="{r.id}"></a>', f"## {r.section}: {r.title}", "",
                 f"- **paper:** {r.paper}", f"- **ours:** {r.ours}", f"- **n / seeds:** {r.n}",
                 f"- **command:** `{r.command}`", f"- **status:** {r.status} ({r.seconds:.0f} s)"]
        if r.why:
            body.append(f"- **why they differ:** {r.why}")
        body.append("")
        if r.details:
            body += [r.details, ""]
    return "\n".join(head + body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer scenes and seeds (minutes)")
    ap.add_argument("--only", default="", help=f"comma-separated rows of: {', '.join(ROWS)}")
    ap.add_argument("--out", type=Path, default=ROOT / "EXPERIMENTS.md")
    args = ap.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()] or None
    unknown = [x for x in only or () if x not in ROWS]
    if unknown:
        ap.error(f"unknown row(s) {', '.join(unknown)}; rows: {', '.join(ROWS)}")
    t0 = time.perf_counter()
    rows = []
    for row_id in only or list(ROWS):
        start = time.perf_counter()

        def progress(msg: str, _id: str = row_id, _t: float = start) -> None:
            print(f"[{time.perf_counter() - t0:6.0f}s] {_id}: {msg}", file=sys.stderr, flush=True)

        progress("start")
        row = run_row(row_id, args.quick, progress)
        progress(f"{row.status} in {row.seconds:.0f} s: {row.ours}")
        rows.append(row)
    args.out.write_text(render(rows, args.quick, only, time.perf_counter() - t0))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0 if all(r.status != "failed" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
