"""Fresh-clone `make setup`, before and after the lock, cold caches, side by side in one run.

    .venv/bin/python bench/bench_setup.py [--baseline 41bcb63] [--rounds 1]

Each round clones the baseline commit (pip: `pip install -e '.[every extra]'` from ranges) and
HEAD (uv: `uv pip sync` of requirements.lock) into new folders and runs `make setup` in each with
an empty package cache of its own (PIP_CACHE_DIR, UV_CACHE_DIR in a new temp folder), so both
download and build everything. Wall time; the two alternate within a round. Commit first: HEAD
is what is measured. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def fresh_setup(commit: str, label: str) -> float:
    with tempfile.TemporaryDirectory(prefix=f"bench-setup-{label}-") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", commit], check=True)
        env = {**os.environ, "PIP_CACHE_DIR": f"{tmp}/pip-cache", "UV_CACHE_DIR": f"{tmp}/uv-cache"}
        env.pop("VIRTUAL_ENV", None)
        start = time.perf_counter()
        result = subprocess.run(["make", "setup"], cwd=clone, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            raise SystemExit(f"{label}: make setup failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="41bcb63", help="a commit before the lock (pip from ranges)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    if shutil.which("make") is None:
        raise SystemExit("make not found")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    before, after = [], []
    for r in range(args.rounds):
        before.append(fresh_setup(args.baseline, "before"))
        after.append(fresh_setup("HEAD", "after"))
        print(f"round {r + 1}: before ({args.baseline}, pip) {before[-1]:.1f} s   after ({head}, uv + lock) {after[-1]:.1f} s")
    b, a = min(before), min(after)
    print(f"fresh-clone make setup, cold caches, best of {args.rounds}: {b:.1f} s -> {a:.1f} s (x{b / a:.1f}); target <= 120 s")


if __name__ == "__main__":
    main()
