"""Benchmarks of the builtin simulator backend (prints; no assertions).

1. Median wall time of one paired execution per application on the 30 s reference
   scenarios (target <= 50 ms), with the ground-truth source as the message-driven one
   and, when the V2X stack imports, with the V2X source.
2. ExecuteBatch at batch 64: per-scenario time and paired executions per second, best of three
   runs (target >= 100 paired/s), the peak traced memory of the batch, and the same batch with
   the V2X stack as the message source (what the ExecuteBatch RPC runs).
3. The traffic core alone vs SUMO (libsumo, when installed): vehicle updates per
   second with 20 and 200 vehicles kept alive on a grid, side by side as a ratio.

Run: ``.venv/bin/python bench/bench_simulator.py [--quick] [--baseline REF]``; ``--baseline HEAD``
also measures the code of git ``HEAD`` (exported to a temporary tree, same script, one process
after the other) and prints before/after side by side with the speedup.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import code_root_from_argv, ratio, run_baseline  # noqa: E402

sys.path.insert(0, str(code_root_from_argv(sys.argv)))

from lastv2x.core.catalogue import Application  # noqa: E402
from lastv2x.core.program import (  # noqa: E402
    ProgramVehicle,
    Route,
    RouteSegment,
    ScenarioProgram,
    VehicleRole,
)
from services.simulator.paired import execute_batch, execute_paired  # noqa: E402
from services.simulator.reference import reference_program  # noqa: E402
from services.simulator.traffic import EgoControl, Scene, initial_state, step  # noqa: E402


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
    except ImportError as exc:
        print(f"   (V2X source unavailable: {exc})")
    return out


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
GRID_N = 5  # junctions per side
GRID_LEN_M = 200.0
SPEED_MPS = 13.9


def _grid_program(n_vehicles: int) -> ScenarioProgram:
    """``n_vehicles`` on the 2 x GRID_N straight lanes of a grid (one per row and column, both ways)."""
    span = GRID_LEN_M * (GRID_N - 1)
    lanes = []
    for k in range(GRID_N):
        c = k * GRID_LEN_M
        lanes += [((0.0, c), (span, c)), ((span, c + 3.5), (0.0, c + 3.5)),
                  ((c, 0.0), (c, span)), ((c + 3.5, span), (c + 3.5, 0.0))]
    per = math.ceil(n_vehicles / len(lanes))
    vehicles = []
    for i in range(n_vehicles):
        lane = i % len(lanes)
        k = i // len(lanes)
        a, b = lanes[lane]
        route = Route(points_xy_m=(a, b), segments=(RouteSegment(id=f"lane{lane}", start_s_m=0.0, length_m=span),))
        s0 = (k + 0.5) * span / per
        vehicles.append(ProgramVehicle(id=f"v{i}", role=VehicleRole.EGO if i == 0 else VehicleRole.BACKGROUND,
                                       route=route, start_s_m=s0, initial_speed_mps=SPEED_MPS,
                                       desired_speed_mps=SPEED_MPS))
    return ScenarioProgram(application=Application.FCW, duration_s=60.0, map_name="grid", ego=vehicles[0],
                           agents=tuple(vehicles[1:]))


def core_updates_per_s(n_vehicles: int, steps: int) -> float:
    scene = Scene.from_programs([_grid_program(n_vehicles)], [True], respawn=True)
    st = initial_state(scene)
    ctl = EgoControl.nominal(1)
    for _ in range(20):
        st = step(scene, st, ctl)
    t0 = time.perf_counter()
    for _ in range(steps):
        st = step(scene, st, ctl)
    dt = time.perf_counter() - t0
    return n_vehicles * steps / dt


def sumo_updates_per_s(n_vehicles: int, steps: int) -> float | None:
    try:
        import libsumo as traci
        import sumo
    except ImportError:
        return None
    home = Path(sumo.__file__).parent
    netgen = shutil.which("netgenerate") or str(home / "bin" / "netgenerate")
    with tempfile.TemporaryDirectory() as tmp:
        net = os.path.join(tmp, "grid.net.xml")
        subprocess.run([netgen, "--grid", f"--grid.number={GRID_N}", f"--grid.length={GRID_LEN_M}",
                        "--default.speed", str(SPEED_MPS), "-o", net], check=True, capture_output=True)
        traci.start(["sumo", "-n", net, "--step-length", "0.05", "--no-step-log", "--no-warnings",
                     "--duration-log.disable", "--collision.action", "none"])
        try:
            edges = [e for e in traci.edge.getIDList() if not e.startswith(":")]
            rng = np.random.default_rng(0)
            routes = []
            while len(routes) < 40:
                a, b = rng.choice(edges, 2, replace=False)
                r = traci.simulation.findRoute(a, b)
                if len(r.edges) >= 4:
                    traci.route.add(f"r{len(routes)}", list(r.edges))
                    routes.append(f"r{len(routes)}")
            counter = [0]

            def add() -> None:
                vid = f"v{counter[0]}"
                traci.vehicle.add(vid, routes[counter[0] % len(routes)], departPos="random", departSpeed="max")
                counter[0] += 1

            for _ in range(n_vehicles):
                add()
            for _ in range(40):
                traci.simulationStep()
                for _ in range(n_vehicles - traci.vehicle.getIDCount()):
                    add()
            updates = 0
            t0 = time.perf_counter()
            for _ in range(steps):
                traci.simulationStep()
                alive = traci.vehicle.getIDCount()
                updates += alive
                for _ in range(n_vehicles - alive):
                    add()
            return updates / (time.perf_counter() - t0)
        finally:
            traci.close()


def bench_core(steps: int, sumo: bool = True) -> dict:
    print("3. traffic core alone vs SUMO (libsumo), grid, vehicles kept alive, dt 0.05 s")
    print(f"   {'vehicles':>8s} {'core upd/s':>12s} {'SUMO upd/s':>12s} {'core/SUMO':>10s}")
    out = {}
    for n in (20, 200):
        core = core_updates_per_s(n, steps)
        try:
            sumo_rate = sumo_updates_per_s(n, steps) if sumo else None
        except Exception as exc:  # noqa: BLE001
            print(f"   SUMO failed: {exc}")
            sumo_rate = None
        ratio_s = f"{core / sumo_rate:10.2f}" if sumo_rate else f"{'n/a':>10s}"
        sumo_s = f"{sumo_rate:12.0f}" if sumo_rate else f"{'not installed':>12s}"
        print(f"   {n:8d} {core:12.0f} {sumo_s} {ratio_s}")
        out[str(n)] = core
    return out


def compare_core(now: dict, base: dict, ref: str) -> None:
    cells = [f"{n} vehicles {base.get(n, float('nan')):.0f} -> {v:.0f} upd/s ({ratio(base.get(n), v, True)})"
             for n, v in now.items()]
    print(f"   vs {ref}: " + "; ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline", metavar="REF",
                    help="also measure git REF (e.g. HEAD) with this script and print before/after")
    ap.add_argument("--code-root", help=argparse.SUPPRESS)  # import the code from this tree (baseline runs)
    ap.add_argument("--json", help=argparse.SUPPRESS)  # write the figures here (baseline runs)
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
    res["core"] = bench_core(300 if args.quick else 2000, sumo=not args.json)
    if base:
        compare_core(res["core"], base["core"], args.baseline)
    if args.json:
        Path(args.json).write_text(json.dumps(res))


if __name__ == "__main__":
    main()
