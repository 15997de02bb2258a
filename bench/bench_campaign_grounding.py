"""What a campaign's own thread spends grounding its candidates, before it can send a generation to the simulators.

A campaign grounds every candidate it runs on a built-in map (``services.grounding``: retrieval, selection, routes for
the ego, its agents and a busy junction's background traffic), in its own thread, while the simulator workers wait for
the generation. The candidates of a campaign differ in their faults and a few numbers; their roads do not. This
benchmark parses the fault intents of a campaign set (offline parser, seed 1), draws ``--children`` mutants of each with
the search's own ``mutate`` (seeded: the same candidates every run), a busy junction for half of them (background
traffic, what a "busy" intent and the search's world mutations ask for), and grounds them all, ``--rounds`` times: CPU
ms per candidate (best round) and a hash of every program's bytes (grounding must not change what it grounds).

With ``--baseline REF`` the same script runs on the exported tree of git ``REF`` too, the two trees alternating in
their own processes, and prints both side by side with the ratio and whether the program bytes are the same.

Run: ``.venv/bin/python bench/bench_campaign_grounding.py [--rounds 3] [--children 6] [--baseline HEAD]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import add_baseline_arguments, code_root_from_argv, export_tree, ratio  # noqa: E402

CODE = code_root_from_argv(sys.argv)
sys.path.insert(0, str(CODE))
DATA = Path(__file__).resolve().parent / "data" / "parse_campaign_heldout.jsonl"  # (this checkout's: the same set)


def candidates(children: int) -> list:
    """The campaign set's parsed fault specs and ``children`` seeded mutants of each, half of them on a busy junction."""
    import numpy as np

    from services.llm.roles import LlmRoles
    from services.search.mutate import mutate

    roles = LlmRoles()
    out = []
    for k, line in enumerate(DATA.read_text().splitlines()):
        row = json.loads(line)
        if row["kind"] != "fault":
            continue
        try:
            spec = roles.parse_intent(row["text"], 1).spec
        except Exception:  # a refused intent has no candidates
            continue
        rng = np.random.default_rng(k)
        for c in range(children + 1):
            child = spec if c == 0 else (mutate(spec, rng) or (spec, ()))[0]
            if c % 2:
                child = child.model_copy(update={"map": child.map.model_copy(update={"busy": True})})
            out.append(child)
    return out


def measure(rounds: int, children: int) -> dict:
    from services.grounding.core import GroundingConfig, GroundingCore

    specs = candidates(children)
    with tempfile.TemporaryDirectory(prefix="lastv2x-bench-campaign-grounding-") as cache:
        grounding = GroundingCore(GroundingConfig(cache_dir=Path(cache)))
        for spec in specs[:8]:  # (the catalogue's maps loaded first: not a candidate's cost)
            try:
                grounding.ground(spec)
            except Exception:  # noqa: BLE001 - an ungroundable candidate
                pass
        best, digest = float("inf"), ""
        for _ in range(rounds):
            h = hashlib.sha256()
            c0 = time.process_time()
            for spec in specs:
                try:
                    h.update(grounding.ground(spec).model_dump_json().encode())
                except Exception as exc:  # an ungroundable candidate says why, in its bytes too
                    h.update(f"{type(exc).__name__}: {exc}".encode())
            best = min(best, (time.process_time() - c0) * 1e3 / max(1, len(specs)))
            digest = h.hexdigest()[:16]
    return {"candidates": len(specs), "ms": best, "programs_sha256": digest}


def _child(root: Path | None, rounds: int, children: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="lastv2x-bench-campaign-grounding-out-") as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--rounds", str(rounds), "--children", str(children),
               "--json", str(out)]
        if root is not None:
            cmd += ["--code-root", str(root)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--children", type=int, default=6, help="mutants per parsed intent")
    add_baseline_arguments(ap)
    args = ap.parse_args()
    if args.json:
        Path(args.json).write_text(json.dumps(measure(args.rounds, args.children)))
        return
    print(f"Grounding a campaign's candidates ({DATA.name}: parsed fault intents and {args.children} mutants each; "
          "CPU ms per candidate, best round)")
    if not args.baseline:
        now = measure(args.rounds, args.children)
        print(f"   {now['candidates']} candidates: {now['ms']:.2f} ms each; programs {now['programs_sha256']}")
        return
    with tempfile.TemporaryDirectory(prefix="lastv2x-baseline-") as tmp:
        root = export_tree(args.baseline, Path(tmp))
        print(f"   ({args.baseline} exported; the two trees alternate, {args.rounds} rounds, one process each)")
        base: list[dict] = []
        now_runs: list[dict] = []
        for _ in range(args.rounds):
            base.append(_child(root, 1, args.children))
            now_runs.append(_child(None, 1, args.children))
    b = min(r["ms"] for r in base)
    n = min(r["ms"] for r in now_runs)
    same = len({r["programs_sha256"] for r in base + now_runs}) == 1
    print(f"   {now_runs[0]['candidates']} candidates: {args.baseline} {b:.2f} ms -> now {n:.2f} ms per candidate "
          f"({ratio(b, n)}); program bytes {'the same' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
