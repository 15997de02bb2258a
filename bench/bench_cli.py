"""Fixed cost of the CLI: ``lastv2x execute SPEC`` wall time and its import time, before / after.

Each side runs the same command in fresh interpreters: wall time of the whole process (best of
``--repeat``) and the import time ``-X importtime`` reports (the sum of the top-level imports'
cumulative times). The baseline is the code of git ``--baseline REF`` (default ``c21697a``, main before the lazy imports; exported
to a temporary tree and put first on ``PYTHONPATH``), measured interleaved with the working tree.

Run: ``.venv/bin/python bench/bench_cli.py [--baseline REF] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import REPO, export_tree, ratio  # noqa: E402

SPEC = {"application": "RLVW", "seed": 7, "signal": {"offset_s": 22.353}}
RUN = "import sys; sys.argv = ['lastv2x', 'execute', sys.argv[1]]; from lastv2x_app.cli import main; main()"


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root)}


def wall_s(root: Path, spec: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", RUN, str(spec)], check=True, env=_env(root), cwd=root,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def import_s(root: Path, spec: Path) -> float:
    """Sum of the top-level imports' cumulative times (-X importtime), s."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", RUN, str(spec)], check=True, env=_env(root),
                          cwd=root, capture_output=True, text=True)
    total = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cum, name = line[len("import time:"):].split("|")
        if name.startswith(" ") and not name.startswith("  "):  # top level: one space before the name
            total += int(cum)
    return total / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="c21697a", help="git ref measured as before (default: main before issue 14)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lastv2x-cli-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps(SPEC))
        base = export_tree(args.baseline, Path(tmp))
        sides = {args.baseline: base, "now": REPO}
        walls: dict[str, list[float]] = {k: [] for k in sides}
        imps: dict[str, list[float]] = {k: [] for k in sides}
        for _ in range(args.repeat):  # interleaved: both sides see the same machine load
            for name, root in sides.items():
                walls[name].append(wall_s(root, spec))
                imps[name].append(import_s(root, spec))
    print(f"lastv2x execute (in-process, RLVW spec), best of {args.repeat}, fresh interpreters")
    print(f"   {'code':10s} {'wall s':>8s} {'imports s':>10s}")
    for name in sides:
        print(f"   {name:10s} {min(walls[name]):8.3f} {min(imps[name]):10.3f}")
    b, n = args.baseline, "now"
    print(f"   wall {min(walls[b]):.3f} -> {min(walls[n]):.3f} s ({ratio(min(walls[b]), min(walls[n]))}), "
          f"imports {min(imps[b]):.3f} -> {min(imps[n]):.3f} s ({ratio(min(imps[b]), min(imps[n]))})")


if __name__ == "__main__":
    main()
