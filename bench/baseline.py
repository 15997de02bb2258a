"""Run a benchmark script against an older revision of the code, for before/after tables.

``--baseline REF`` in ``bench_simulator.py`` / ``bench_v2x.py``: the tree of git ``REF`` (e.g.
``HEAD``, a tag, a commit) is exported with ``git archive`` to a temporary folder, the *current*
benchmark script runs in a subprocess with ``--code-root`` pointing there (so both sides measure
the same thing, with the same script) and hands its figures back as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def add_baseline_arguments(ap: argparse.ArgumentParser) -> None:
    """``--baseline REF``, and the two options :func:`run_baseline` passes the script's own process: the
    tree to import the code from (``--code-root``) and where to write its figures (``--json``)."""
    ap.add_argument("--baseline", metavar="REF",
                    help="also measure git REF (e.g. HEAD) with this script and print before/after")
    ap.add_argument("--code-root", help=argparse.SUPPRESS)  # import the code from this tree (baseline runs)
    ap.add_argument("--json", help=argparse.SUPPRESS)  # write the figures here (baseline runs)


def code_root_from_argv(argv: Sequence[str]) -> Path:
    """The tree to import the code from: ``--code-root PATH`` if given, else this checkout."""
    for i, a in enumerate(argv):
        if a == "--code-root" and i + 1 < len(argv):
            return Path(argv[i + 1]).resolve()
        if a.startswith("--code-root="):
            return Path(a.split("=", 1)[1]).resolve()
    return REPO


def export_tree(ref: str, dest: Path) -> Path:
    """``git archive ref`` unpacked into ``dest`` (the tracked files of that revision)."""
    proc = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", ref], check=True,
                          capture_output=True)
    tar_path = dest / "tree.tar"
    tar_path.write_bytes(proc.stdout)
    with tarfile.open(tar_path) as tf:
        tf.extractall(dest / "tree", filter="data")
    return dest / "tree"


def run_baseline(script: Path, ref: str, args: Sequence[str]) -> dict[str, Any]:
    """Figures of ``script`` (run with ``args``) on the code of ``ref``."""
    with tempfile.TemporaryDirectory(prefix="lastv2x-baseline-") as tmp:
        root = export_tree(ref, Path(tmp))
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, str(script), "--code-root", str(root), "--json", str(out), *args]
        print(f"   (baseline: {ref} exported to a temporary tree, measuring ...)", flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def ratio(before: float | None, after: float | None, higher_is_better: bool = False) -> str:
    """``x<speedup>`` (> 1 = faster now) of two figures, or ``n/a``."""
    if not before or not after:
        return "n/a"
    return f"x{(after / before) if higher_is_better else (before / after):.2f}"
