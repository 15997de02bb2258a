"""Paired execution of grounded programs: what campaigns and ``make run`` actually execute.

The reference programs of ``bench_v2x_profile.py`` run on straight synthetic roads without buildings
and with routes of a handful of points. A grounded program (an intent parsed, then placed on a
built-in map by the grounding service) brings the map's building footprints into the channel
(blockage on every radio link) and a route of hundreds of points into the adjudicator (every nearby
vehicle projected on it). This benchmark grounds the four intents of ``make run`` (offline parser,
built-in maps), then times one paired execution of each (V2X stack as the message-driven source, the
map's buildings in the channel: what ``Execute`` and a campaign run) and the same programs with
ground-truth sources (the floor), CPU time, best of ``--rounds``. It checks the outcome bytes of every
run against the first.

With ``--baseline REF`` the same script runs on the exported tree of git ``REF`` too, the two trees
alternating in their own processes (round by round, so a change in the machine's load falls on both),
and prints both side by side with the ratio and whether the outcome bytes are the same.

Run: ``.venv/bin/python bench/bench_grounded.py [--rounds 3] [--baseline fd260f5]``
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

sys.path.insert(0, str(code_root_from_argv(sys.argv)))


def measure(rounds: int) -> dict:
    """CPU ms per paired run of each grounded demo program (V2X source with the map's buildings; ground truth),
    best of ``rounds``, and a hash of the V2X runs' outcome bytes."""
    from lastv2x_app.demo import CAMPAIGN_INTENTS, INTENT
    from services.grounding.core import GroundingConfig, GroundingCore
    from services.llm.roles import LlmRoles
    from services.simulator.execute import SimulatorLimits, validate_program
    from services.simulator.paired import execute_paired
    from services.simulator.v2x.stack import v2x_source_factory

    with tempfile.TemporaryDirectory(prefix="lastv2x-bench-grounded-") as cache:
        grounding = GroundingCore(GroundingConfig(cache_dir=Path(cache)))
        programs = [grounding.ground(LlmRoles().parse_intent(text, seed=7).spec) for text in (INTENT, *CAMPAIGN_INTENTS)]
    sources = [v2x_source_factory(road_map=validate_program(p, SimulatorLimits())) for p in programs]
    first = [execute_paired(p, 1, md_source_factory=s).to_json_bytes() for p, s in zip(programs, sources, strict=True)]
    v2x = [float("inf")] * len(programs)
    gt = [float("inf")] * len(programs)
    same = True
    for _ in range(rounds):
        for i, (p, s) in enumerate(zip(programs, sources, strict=True)):
            c0 = time.process_time()
            out = execute_paired(p, 1, md_source_factory=s).to_json_bytes()
            v2x[i] = min(v2x[i], (time.process_time() - c0) * 1e3)
            same &= out == first[i]
            c0 = time.process_time()
            execute_paired(p, 1)
            gt[i] = min(gt[i], (time.process_time() - c0) * 1e3)
    return {"programs": [f"{p.application.value} on {p.map_name} "
                         f"({len(p.vehicles)} vehicles, {len(p.ego.route.points_xy_m)} route points)"
                         for p in programs],
            "v2x_ms": v2x, "gt_ms": gt, "repeatable": same,
            "outcome_sha256": hashlib.sha256(b"".join(first)).hexdigest()[:16]}


def _child(root: Path | None, rounds: int) -> dict:
    """``measure`` in a process of its own, on the code of ``root`` (None: this checkout)."""
    with tempfile.TemporaryDirectory(prefix="lastv2x-bench-grounded-out-") as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--rounds", str(rounds), "--json", str(out)]
        if root is not None:
            cmd += ["--code-root", str(root)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def _best(runs: list[dict]) -> dict:
    best = dict(runs[0])
    for key in ("v2x_ms", "gt_ms"):
        best[key] = [min(vals) for vals in zip(*(r[key] for r in runs), strict=True)]
    best["repeatable"] = all(r["repeatable"] for r in runs)
    return best


def show(label: str, r: dict) -> None:
    mean_v2x, mean_gt = sum(r["v2x_ms"]) / len(r["v2x_ms"]), sum(r["gt_ms"]) / len(r["gt_ms"])
    print(f"   [{label}] V2X source {mean_v2x:.1f} ms, ground truth {mean_gt:.1f} ms per paired run (mean of "
          f"{len(r['v2x_ms'])}); outcome bytes {r['outcome_sha256']}, repeatable {r['repeatable']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    add_baseline_arguments(ap)
    args = ap.parse_args()
    if args.json:
        Path(args.json).write_text(json.dumps(measure(args.rounds)))
        return
    print("Paired execution of the demo's grounded programs (CPU ms per run, best of rounds)")
    if not args.baseline:
        now = measure(args.rounds)
        for name, v, g in zip(now["programs"], now["v2x_ms"], now["gt_ms"], strict=True):
            print(f"   {name}: V2X {v:.1f} ms, ground truth {g:.1f} ms")
        show("now", now)
        return
    with tempfile.TemporaryDirectory(prefix="lastv2x-baseline-") as tmp:
        root = export_tree(args.baseline, Path(tmp))
        print(f"   ({args.baseline} exported; the two trees alternate, {args.rounds} rounds, one process each)")
        base_runs, now_runs = [], []
        for _ in range(args.rounds):
            base_runs.append(_child(root, 1))
            now_runs.append(_child(None, 1))
    base, now = _best(base_runs), _best(now_runs)
    for name, bv, v, bg, g in zip(now["programs"], base["v2x_ms"], now["v2x_ms"], base["gt_ms"], now["gt_ms"],
                                  strict=True):
        print(f"   {name}: V2X {bv:.1f} -> {v:.1f} ms ({ratio(bv, v)}), ground truth {bg:.1f} -> {g:.1f} ms "
              f"({ratio(bg, g)})")
    show(args.baseline, base)
    show("now", now)
    print(f"   V2X-sourced paired run {ratio(sum(base['v2x_ms']), sum(now['v2x_ms']))}, ground truth "
          f"{ratio(sum(base['gt_ms']), sum(now['gt_ms']))}; outcome bytes "
          f"{'the same' if base['outcome_sha256'] == now['outcome_sha256'] else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
