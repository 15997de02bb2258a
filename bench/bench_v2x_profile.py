"""Where a V2X-sourced ExecuteBatch and a single V2X paired run spend their time (cProfile).

Prints, for an ExecuteBatch of ``--batch`` reference programs and for one paired run of each
reference program (the V2X stack as the message-driven source, what the RPCs run): CPU time,
paired executions per CPU second, and the share of the profiled time in the V2X source's
``observe`` and its parts (transmit, links, delivery, belief, monitor) and in the traffic core.
With ``--baseline REF`` the same script measures git ``REF`` first (exported tree, own process)
and prints both side by side. Last, without the profiler: ExecuteBatch with its V2X rows observed
together (``V2XInformationSource.observe_batch``: one channel evaluation per step for all rows)
against the same rows observed one by one, interleaved in one process, at 8 (a worker's chunk) and
``--batch`` programs. Then the floor under issue 14's targets: the same batch and single runs with
ground-truth sources (no V2X stack at all), interleaved with the V2X-sourced ones, and what the
targets leave the V2X stack (target minus that floor) against what it costs now.

Run: ``.venv/bin/python bench/bench_v2x_profile.py [--batch 64] [--baseline c21697a]``
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import add_baseline_arguments, code_root_from_argv, run_baseline  # noqa: E402

sys.path.insert(0, str(code_root_from_argv(sys.argv)))

from lastv2x.core.catalogue import Application  # noqa: E402
from services.simulator.paired import execute_batch, execute_paired  # noqa: E402
from services.simulator.reference import reference_program  # noqa: E402
from services.simulator.v2x.stack import v2x_source_factory  # noqa: E402

PARTS = {  # label -> the profiled functions (file suffix, function name) whose cumulative times add up to it
    "V2X observe": (("v2x/stack.py", "observe"), ("v2x/stack.py", "observe_batch")),
    "  transmit": (("v2x/transmit.py", "_transmit"),),
    "  links + channel": (("v2x/links.py", "_collect_links"), ("v2x/links.py", "evaluate_pending"),
                          ("v2x/links.py", "_finish_links")),
    "  deliver to ego": (("v2x/queues.py", "_deliver_ego"),),
    "  belief": (("v2x/stack.py", "_information"),),
    "  monitor": (("v2x/monitor.py", "observe"),),
    "traffic core (numpy step)": (("simulator/traffic.py", "step"),),
}
# A batch observes its V2X rows together (observe_batch; its channel call is evaluate_pending). "transmit" holds
# the collection of the step's links, which "links + channel" counts too. A baseline from before the split
# (one ``_links`` inside ``_transmit``, which then held the channel as well) is read with OLD_PARTS.
OLD_PARTS = {"  links + channel": (("v2x/links.py", "_links"),)}


def _shares(prof: cProfile.Profile) -> dict[str, float]:
    st = pstats.Stats(prof)
    stats = st.stats  # type: ignore[attr-defined]
    total = st.total_tt  # type: ignore[attr-defined]
    split = any(fn == "_collect_links" for _f, _line, fn in stats)
    out = {}
    for label, funcs in PARTS.items():
        funcs = funcs if split else OLD_PARTS.get(label, funcs)
        cum = sum(v[3] for (f, _line, fn), v in stats.items()
                  if any(f.endswith(suffix) and fn == name for suffix, name in funcs))
        out[label] = cum / total if total else 0.0
    return out


def measure(batch: int) -> dict:
    fac = v2x_source_factory()
    programs = [reference_program(list(Application)[i % 6], seed=i) for i in range(batch)]
    execute_batch(programs[:6], md_source_factory=fac)  # warm-up
    c0 = time.process_time()
    execute_batch(programs, md_source_factory=fac)
    batch_cpu = time.process_time() - c0
    prof = cProfile.Profile()
    prof.enable()
    execute_batch(programs, md_source_factory=fac)
    prof.disable()
    batch_shares = _shares(prof)
    singles = [reference_program(a) for a in Application]
    for p in singles:
        execute_paired(p, md_source_factory=fac)
    c0 = time.process_time()
    for p in singles:
        execute_paired(p, md_source_factory=fac)
    single_ms = (time.process_time() - c0) / len(singles) * 1e3
    prof = cProfile.Profile()
    prof.enable()
    for p in singles:
        execute_paired(p, md_source_factory=fac)
    prof.disable()
    return {"batch": batch, "batch_cpu_s": batch_cpu, "batch_shares": batch_shares, "single_ms": single_ms,
            "single_shares": _shares(prof)}


def observe_batch_ratio(batch: int, rounds: int = 3) -> tuple[float, float]:
    """Best-of-``rounds`` CPU ms per paired run of an ExecuteBatch of ``batch`` programs: (V2X rows observed
    together, one by one), the two interleaved."""
    from services.simulator.v2x.stack import V2XInformationSource

    fac = v2x_source_factory()
    programs = [reference_program(list(Application)[i % 6], seed=i) for i in range(batch)]
    together = vars(V2XInformationSource)["observe_batch"]  # the staticmethod itself, put back as it was
    best = {True: float("inf"), False: float("inf")}
    execute_batch(programs, md_source_factory=fac)  # warm-up
    try:
        for _ in range(rounds):
            for batched in (True, False):
                V2XInformationSource.observe_batch = together if batched else None
                c0 = time.process_time()
                execute_batch(programs, md_source_factory=fac)
                best[batched] = min(best[batched], time.process_time() - c0)
    finally:
        V2XInformationSource.observe_batch = together
    return best[True] * 1e3 / batch, best[False] * 1e3 / batch


# issue 14's targets: ExecuteBatch at 64 with V2X sources >= 100 paired/s per core; one V2X paired run <= 30 ms
TARGET_BATCH_MS = 10.0  # per paired run (100 paired/s per core)
TARGET_SINGLE_MS = 30.0


def floor_and_budget(batch: int, rounds: int = 3) -> dict[str, float]:
    """Best-of-``rounds`` CPU ms per paired run of an ExecuteBatch of ``batch`` programs and of one paired run
    of each reference program, with ground-truth sources (the floor: traffic, applications, adjudication,
    both rollouts, no V2X stack) and with V2X sources, the four interleaved."""
    fac = v2x_source_factory()
    programs = [reference_program(list(Application)[i % 6], seed=i) for i in range(batch)]
    singles = [reference_program(a) for a in Application]
    runs = {
        "batch_gt": (lambda: execute_batch(programs), batch),
        "batch_v2x": (lambda: execute_batch(programs, md_source_factory=fac), batch),
        "single_gt": (lambda: [execute_paired(p) for p in singles], len(singles)),
        "single_v2x": (lambda: [execute_paired(p, md_source_factory=fac) for p in singles], len(singles)),
    }
    for fn, _n in runs.values():  # warm-up
        fn()
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for name, (fn, n) in runs.items():
            c0 = time.process_time()
            fn()
            best[name] = min(best[name], (time.process_time() - c0) * 1e3 / n)
    return best


def show_budget(batch: int, best: dict[str, float]) -> None:
    print("Issue 14's targets against the ground-truth floor (CPU ms per paired run, best of 3, interleaved)")
    for kind, label, target in (("batch", f"ExecuteBatch {batch}", TARGET_BATCH_MS),
                                ("single", "single paired run", TARGET_SINGLE_MS)):
        gt, v2x = best[f"{kind}_gt"], best[f"{kind}_v2x"]
        stack, budget = v2x - gt, target - gt
        need = f"x{stack / budget:.1f} cheaper" if budget > 0 else "cheaper than free: the floor is over the target"
        print(f"   {label:20s} floor (ground truth) {gt:6.1f}  V2X {v2x:6.1f}  -> the V2X stack costs {stack:6.1f} "
              f"(x{stack / gt:.1f} the floor); target {target:.0f} leaves it {budget:6.1f}: {need}")


def show(name: str, r: dict) -> None:
    print(f"   [{name}] ExecuteBatch {r['batch']} (V2X source): {r['batch_cpu_s'] * 1e3:.0f} ms CPU, "
          f"{r['batch'] / r['batch_cpu_s']:.1f} paired/s per core; single V2X paired run: "
          f"{r['single_ms']:.1f} ms CPU per 30 s scenario (mean over the six reference programs)")
    print(f"   {'share of profiled time':28s} {'batch':>8s} {'single':>8s}")
    for label in PARTS:
        print(f"   {label:28s} {100 * r['batch_shares'].get(label, 0):7.1f}% {100 * r['single_shares'].get(label, 0):7.1f}%")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    add_baseline_arguments(ap)
    args = ap.parse_args()
    print("V2X-sourced paired execution, profiled (cProfile; shares are of the profiled time)")
    if args.baseline:
        base = run_baseline(Path(__file__).resolve(), args.baseline, ["--batch", str(args.batch)])
        show(args.baseline, base)
    now = measure(args.batch)
    if args.json:
        Path(args.json).write_text(json.dumps(now))
        return
    show("now", now)
    if args.baseline:
        print(f"   per core: {base['batch'] / base['batch_cpu_s']:.1f} -> {now['batch'] / now['batch_cpu_s']:.1f} "
              f"paired/s; single run {base['single_ms']:.1f} -> {now['single_ms']:.1f} ms")
    print("ExecuteBatch, V2X rows observed together vs one by one (no profiler, interleaved, best of 3, CPU)")
    for b in sorted({8, args.batch}):
        together, alone = observe_batch_ratio(b)
        print(f"   {b:3d} programs: {alone:.1f} -> {together:.1f} ms per paired run (x{alone / together:.2f})")
    show_budget(args.batch, floor_and_budget(args.batch))


if __name__ == "__main__":
    main()
