"""Benchmarks of the builtin simulator backend (prints; no assertions).

1. Median wall time of one paired execution per application on the 30 s reference
   scenarios (target <= 50 ms), with the ground-truth source as the message-driven one
   and, when the V2X stack imports, with the V2X source.
2. ExecuteBatch at batch 64: per-scenario time and paired executions per second, best of three
   runs (target >= 100 paired/s), the peak traced memory of the batch, and the same batch with
   the V2X stack as the message source (what the ExecuteBatch RPC runs).
3. The traffic core alone vs SUMO (libsumo, when installed) on the same signalized grid
   (bench/bench_traffic_race.py): vehicle updates per second at 20, 200 and 2,000 vehicles,
   side by side as a ratio.

Run: ``.venv/bin/python bench/bench_simulator.py [--quick] [--baseline REF]``; ``--baseline HEAD``
also measures the code of git ``HEAD`` (exported to a temporary tree, same script, one process
after the other) and prints before/after side by side with the speedup.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import add_baseline_arguments, code_root_from_argv, ratio, run_baseline  # noqa: E402

sys.path.insert(0, str(code_root_from_argv(sys.argv)))

from lastv2x.core.catalogue import Application  # noqa: E402
from services.simulator.paired import execute_batch, execute_paired  # noqa: E402
from services.simulator.reference import reference_program  # noqa: E402


def _median_ms(fn, repeat: int) -> tuple[float, float]:  # noqa: ANN001
    """Median (wall, CPU) milliseconds; CPU time is the robust figure on a shared machine."""
    fn()  # warm-up
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def bench_paired(repeat: int) -> dict:
    print("1. paired execution, 30 s reference scenarios (dt 0.05 s, 600 steps max; ego leaves its route early)")
    factories = {"gt": None}
    try:
        from services.simulator.v2x.stack import v2x_source_factory
        factories["v2x"] = v2x_source_factory()
    except Exception as exc:  # noqa: BLE001
        print(f"   (V2X source unavailable: {exc})")
    header = f"   {'app':6s} {'steps':>5s} " + " ".join(f"{k + ' wall/cpu ms':>18s}" for k in factories)
    print(header)
    meds = {k: [] for k in factories}
    out: dict = {"apps": {}, "median": {}}
    for app in Application:
        prog = reference_program(app)
        row = []
        steps = int(round(execute_paired(prog).gt.end_t_s / prog.dt_s))
        out["apps"][app.value] = {"steps": steps}
        for name, fac in factories.items():
            kw = {} if fac is None else {"md_source_factory": fac}
            wall, cpu = _median_ms(lambda p=prog, kw=kw: execute_paired(p, **kw), repeat)
            meds[name].append((wall, cpu))
            out["apps"][app.value][name] = [wall, cpu]
            row.append(f"{wall:9.1f}/{cpu:8.1f}")
        print(f"   {app.value:6s} {steps:5d} " + " ".join(row))
    for name, v in meds.items():
        w = statistics.median(x[0] for x in v)
        c = statistics.median(x[1] for x in v)
        out["median"][name] = [w, c]
        print(f"   median over applications ({name} source): {w:.1f} ms wall, {c:.1f} ms CPU (target <= 50 ms)")
    return out


def compare_paired(now: dict, base: dict, ref: str) -> None:
    print(f"   vs {ref} (CPU ms, before -> after, speedup):")
    names = list(now["median"])
    print(f"   {'app':6s} " + " ".join(f"{n + ' before -> after':>28s}" for n in names))
    for app, row in now["apps"].items():
        b = base["apps"].get(app, {})
        cells = []
        for n in names:
            before = b.get(n, [None, None])[1]
            after = row[n][1]
            cells.append(f"{before or float('nan'):9.1f} -> {after:7.1f} {ratio(before, after):>7s}")
        print(f"   {app:6s} " + " ".join(f"{c:>28s}" for c in cells))
    for n in names:
        bw, bc = base["median"].get(n, [None, None])
        w, c = now["median"][n]
        print(f"   median ({n}): wall {bw or float('nan'):.1f} -> {w:.1f} ms ({ratio(bw, w)}), "
              f"CPU {bc or float('nan'):.1f} -> {c:.1f} ms ({ratio(bc, c)})")


def bench_batch(batch: int, repeat: int = 3) -> dict:
    """Best of ``repeat`` runs (the least disturbed one on a shared machine; the spread is printed)."""
    programs = [reference_program(list(Application)[i % 6], seed=i) for i in range(batch)]
    execute_batch(programs[:6])  # warm-up
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        execute_batch(programs)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    dt, cpu = min(walls), min(cpus)
    tracemalloc.start()
    execute_batch(programs)
    _cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"2. ExecuteBatch of {batch} paired executions ({2 * batch} rollouts stepped together, GT sources), "
          f"best of {repeat}")
    print(f"   {dt * 1e3:.0f} ms wall ({cpu * 1e3:.0f} ms CPU; slowest run {max(cpus) * 1e3:.0f} ms CPU), "
          f"{dt / batch * 1e3:.1f} ms per paired execution, {batch / dt:.0f} paired/s wall, "
          f"{batch / cpu:.0f} paired/s CPU (target >= 100/s)")
    print(f"   peak traced memory of the batch: {peak / 2**20:.1f} MiB")
    out = {"batch": batch, "wall_s": dt, "cpu_s": cpu, "peak_mib": peak / 2**20}
    try:  # the RPC's own path: the V2X stack as the message-driven source (one run: ~10 s)
        from services.simulator.v2x.stack import v2x_source_factory
        fac = v2x_source_factory()
        execute_batch(programs[:6], md_source_factory=fac)
        c0 = time.process_time()
        execute_batch(programs, md_source_factory=fac)
        out["v2x_cpu_s"] = time.process_time() - c0
        print(f"   with the V2X stack as message source (what the ExecuteBatch RPC runs): "
              f"{out['v2x_cpu_s'] * 1e3:.0f} ms CPU, {batch / out['v2x_cpu_s']:.1f} paired/s")
        tracemalloc.start()
        execute_batch(programs, md_source_factory=fac)
        out["v2x_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"   peak traced memory of the V2X batch: {out['v2x_peak_mib']:.1f} MiB (target < 100 MiB)")
    except ImportError as exc:
        print(f"   (V2X source unavailable: {exc})")
    return out


_PEAK_RSS = """
import resource, sys, time
from lastv2x.core.catalogue import Application
from services.simulator.paired import execute_batch
from services.simulator.reference import reference_program
from services.simulator.v2x.stack import v2x_source_factory
n = int(sys.argv[1])
programs = [reference_program(list(Application)[i % 6], seed=i) for i in range(n)]
fac = v2x_source_factory()
execute_batch(programs[:6], md_source_factory=fac)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.process_time()
execute_batch(programs, md_source_factory=fac)
cpu = time.process_time() - t0
print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, cpu)
"""


def bench_peak_rss(batch: int) -> dict:
    """Peak resident memory of one V2X-sourced ``execute_batch`` of ``batch`` programs, in a fresh process
    (``ru_maxrss``: everything the process held, numpy buffers and Python objects alike; issue 32: a
    1,024-batch under 1 GiB), against the same process before the batch (imports, programs, a warm-up)."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", _PEAK_RSS, str(batch)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent, check=True).stdout.split()
    before_kib, peak_kib, cpu = int(out[0]), int(out[1]), float(out[2])
    print(f"2c. peak RSS of one V2X-sourced ExecuteBatch of {batch} (fresh process, one core): "
          f"{peak_kib / 2**20:.2f} GiB ({before_kib / 2**10:.0f} MiB before the batch; target < 1 GiB); "
          f"{cpu:.1f} s CPU, {batch / cpu:.1f} paired/s")
    return {"batch": batch, "peak_gib": peak_kib / 2**20, "before_mib": before_kib / 2**10, "cpu_s": cpu}


_FIRST_BATCH = """
import sys, time
from lastv2x.core.catalogue import Application
from services.simulator.core import SimulatorCore
from services.simulator.reference import reference_program
core = SimulatorCore()
warm = core.warm_up()["wall_s"] if sys.argv[1] == "warm" else 0.0
programs = [reference_program(list(Application)[i % 6], seed=100 + i) for i in range(int(sys.argv[2]))]
t0 = time.perf_counter()
for _ in core.execute_batch(programs, [None] * len(programs), core.app("")):
    pass
print(warm, time.perf_counter() - t0)
"""


def bench_warm_up(batch: int, rounds: int) -> dict:
    """The first ExecuteBatch of a fresh simulator process (what a new pod's first request waits for), without
    and after ``SimulatorCore.warm_up`` (what the service runs at start, NOT_SERVING until done), alternating
    in fresh processes; best of ``rounds`` each (issue 32, item 4: warm-up paid once, at service start)."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    cold, warm, warm_up = [], [], []
    for _ in range(rounds):
        for kind, out in (("cold", cold), ("warm", warm)):
            w, first = map(float, subprocess.run([sys.executable, "-c", _FIRST_BATCH, kind, str(batch)],
                                                 capture_output=True, text=True, cwd=root, check=True
                                                 ).stdout.split())
            out.append(first)
            if kind == "warm":
                warm_up.append(w)
    print(f"2d. first ExecuteBatch of {batch} in a fresh simulator process, best of {rounds}: cold {min(cold):.2f} s, "
          f"after warm-up {min(warm):.2f} s (x{min(cold) / min(warm):.2f}); the warm-up itself {min(warm_up):.2f} s, "
          "paid at service start")
    return {"batch": batch, "cold_s": min(cold), "warm_s": min(warm), "warm_up_s": min(warm_up)}


def bench_workers(batch: int, repeat: int = 3) -> dict:
    """What the ExecuteBatch RPC runs (SimulatorCore.execute_batch: V2X sources, chunks of 8) with
    one worker (in-process, as before the pool) and with the pool sized to the CPU limit, best of
    ``repeat`` wall times each, interleaved."""
    from lastv2x.core.workers import cpu_limit
    from services.simulator.core import SimulatorCore
    from services.simulator.execute import SimulatorLimits

    programs = [reference_program(list(Application)[i % 6], seed=i) for i in range(batch)]
    seeds = [p.seed for p in programs]
    n = cpu_limit()
    cores = {1: SimulatorCore(SimulatorLimits(workers=1)), n: SimulatorCore(SimulatorLimits(workers=n))}
    for core in cores.values():  # warm-up (the pool's workers start and import once)
        list(core.execute_batch(programs[:16], seeds[:16]))
    walls: dict[int, list[float]] = {w: [] for w in cores}
    for _ in range(repeat):
        for w, core in cores.items():
            t0 = time.perf_counter()
            got = sum(len(o) for _, o in core.execute_batch(programs, seeds))
            walls[w].append(time.perf_counter() - t0)
            assert got == batch
    best = {w: min(v) for w, v in walls.items()}
    print(f"2b. ExecuteBatch of {batch} as the RPC runs it (V2X sources), worker pool sized to the CPU limit "
          f"({n}), best of {repeat} wall")
    for w, t in best.items():
        print(f"   {w} worker{'s' if w > 1 else ''}: {t * 1e3:.0f} ms, {batch / t:.1f} paired/s")
    if n > 1:
        print(f"   {n} workers vs 1: x{best[1] / best[n]:.2f} (target >= 1.7 with 2 workers on 2 cores)")
    return {"workers": n, "wall_s": {str(w): t for w, t in best.items()}}


def compare_batch(now: dict, base: dict, ref: str) -> None:
    b, n = base, now
    print(f"   vs {ref}: {b['batch'] / b['wall_s']:.0f} -> {n['batch'] / n['wall_s']:.0f} paired/s wall "
          f"({ratio(b['wall_s'], n['wall_s'])}), {b['batch'] / b['cpu_s']:.0f} -> {n['batch'] / n['cpu_s']:.0f} "
          f"paired/s CPU ({ratio(b['cpu_s'], n['cpu_s'])}); peak memory {b['peak_mib']:.1f} -> "
          f"{n['peak_mib']:.1f} MiB")
    if "v2x_cpu_s" in b and "v2x_cpu_s" in n:
        print(f"   V2X source: {b['batch'] / b['v2x_cpu_s']:.1f} -> {n['batch'] / n['v2x_cpu_s']:.1f} paired/s CPU "
              f"({ratio(b['v2x_cpu_s'], n['v2x_cpu_s'])})")


# ── traffic core vs SUMO ─────────────────────────────────────────────────────
def bench_core(steps: int, sumo: bool = True, sizes: tuple[int, ...] = (20, 200, 2000)) -> dict:
    """The fair race of bench/bench_traffic_race.py: the same signalized OpenDRIVE grid, routes,
    signal plan and vehicle count on both sides, states read every step."""
    print("3. ", end="")
    from bench_traffic_race import race

    res = race(list(sizes), steps, 1 if not sumo else 3, sumo=sumo)
    return {n: r["core"] for n, r in res.items()}


def compare_core(now: dict, base: dict, ref: str) -> None:
    cells = [f"{n} vehicles {base.get(n, float('nan')):.0f} -> {v:.0f} upd/s ({ratio(base.get(n), v, True)})"
             for n, v in now.items()]
    print(f"   vs {ref}: " + "; ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    add_baseline_arguments(ap)
    args = ap.parse_args()
    base = None
    if args.baseline:
        base = run_baseline(Path(__file__).resolve(), args.baseline, ["--quick"] if args.quick else [])
    res = {"paired": bench_paired(3 if args.quick else 7)}
    if base:
        compare_paired(res["paired"], base["paired"], args.baseline)
    res["batch"] = bench_batch(16 if args.quick else 64)
    if base:
        compare_batch(res["batch"], base["batch"], args.baseline)
    if not args.json:  # the pool is new: the baseline is its 1-worker figure
        res["workers"] = bench_workers(16 if args.quick else 64, 1 if args.quick else 3)
        res["peak_rss"] = bench_peak_rss(64 if args.quick else 1024)
        res["warm_up"] = bench_warm_up(16, 1 if args.quick else 3)
    res["core"] = bench_core(100 if args.quick else 400, sumo=not args.json,
                             sizes=(20, 200) if args.quick or args.json else (20, 200, 2000))
    if base:
        compare_core(res["core"], base["core"], args.baseline)
    if args.json:
        Path(args.json).write_text(json.dumps(res))


if __name__ == "__main__":
    main()
