"""Benchmark of the V2X stack (prints; not a test).

    .venv/bin/python bench/bench_v2x.py [--repeat 30] [--seeds 12] [--baseline REF]

``--baseline HEAD`` also measures the code of git ``HEAD`` (exported to a temporary tree, this
script, one process after the other) and prints before/after with the speedup.

1. Channel evaluation rate: 50 vehicles + 4 RSUs in a synthetic urban canyon
   (4 x 4 blocks, 48 buildings), every ordered V2V pair plus V2I up- and downlinks
   (2,850 links) per call, Bernoulli draw included -> links/s.
2. The stack in a 50-vehicle canyon scene: ``V2XInformationSource.observe`` per step
   (messages, one channel call for every link of the step, faults, reconstruction,
   monitor) with SPaT relay and EEBL rebroadcast on -> ms/step, links/step.
3. What the stack adds to paired execution: the same programs executed with the
   ground-truth source as the message-driven ego and with the V2X source -> ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import add_baseline_arguments, code_root_from_argv, ratio, run_baseline  # noqa: E402

sys.path.insert(0, str(code_root_from_argv(sys.argv)))

from scenes import canyon_scene, canyon_snapshots  # noqa: E402  (bench/ is on sys.path, above)

from lastv2x.core.program import ScenarioProgram  # noqa: E402
from lastv2x.core.spec import parse_spec  # noqa: E402
from lastv2x.core.synthetic import program_from_spec_on_straight_roads  # noqa: E402
from services.simulator.v2x.channel import ChannelParams, evaluate_links, sample_delivery  # noqa: E402
from services.simulator.v2x.geometry import all_pairs, synthetic_urban_canyon  # noqa: E402
from services.simulator.v2x.stack import V2XInformationSource  # noqa: E402


def channel_rate(repeat: int) -> float:
    params = ChannelParams()
    city = synthetic_urban_canyon()
    rng = np.random.default_rng(0)
    veh = city.road_points[rng.choice(len(city.road_points), 50, replace=False)]
    rsu = city.intersections[[6, 8, 16, 18]]
    xy = np.vstack([veh, rsu])
    h = np.r_[np.full(50, params.vehicle_antenna_height_m), np.full(4, params.rsu_antenna_height_m)]
    vi, vj = all_pairs(50)
    ui, uj = all_pairs(50, 4, exclude_self=False)
    tx = np.r_[vi, ui, 50 + uj]
    rx = np.r_[vj, 50 + uj, ui]
    evaluate_links(xy[tx], h[tx], xy[rx], h[rx], city.buildings, params)  # warm-up
    t0 = time.perf_counter()
    for _ in range(repeat):
        lb = evaluate_links(xy[tx], h[tx], xy[rx], h[rx], city.buildings, params)
        sample_delivery(lb, rng)
    dt = (time.perf_counter() - t0) / repeat
    rate = tx.size / dt
    print(f"[1] channel: {tx.size} links per call, {1e3 * dt:.2f} ms/call, {rate:,.0f} links/s "
          f"({len(city.buildings)} buildings)")
    return rate


def stack_step_cost() -> dict:
    prog, buildings = canyon_scene()
    snaps = canyon_snapshots(prog, 200)
    src = V2XInformationSource(buildings)
    src.reset(prog, 0)
    t0 = time.perf_counter()
    for snap in snaps:
        src.observe(snap)
    dt = time.perf_counter() - t0
    st = src.stats
    res = {"ms_per_step": 1e3 * dt / len(snaps), "links_per_step": st.links / len(snaps)}
    print(f"[2] stack, 50 vehicles + 4 RSUs in the canyon (SPaT relay, EEBL rebroadcast): "
          f"{1e3 * dt / len(snaps):.2f} ms/step, {st.links / len(snaps):.0f} links/step "
          f"({st.links / dt:,.0f} links/s through the whole stack; channel itself {1e3 * st.channel_s / len(snaps):.2f}"
          f" ms/step); tx {st.tx}, delivered {st.delivered}")
    return res


def _programs(n: int) -> list[ScenarioProgram]:
    out = []
    for s in range(n):
        rng = np.random.default_rng(s)
        app = ("RLVW", "GLOSA", "FCW", "EEBL")[s % 4]
        spec: dict = {"application": app, "seed": s, "duration_s": 20.0, "map": {"busy": True},
                      "ego": {"speed_mps": float(rng.uniform(10, 15)), "start_distance_m": 150.0}}
        if app in ("FCW", "EEBL"):
            spec["agents"] = [{"id": "lead", "role": "lead", "gap_m": 30.0,
                               "behaviour": {"kind": "hard_brake", "at_time_s": 5.0}}]
        out.append(program_from_spec_on_straight_roads(parse_spec(spec)))
    return out


def paired_ratio(n: int) -> dict:
    from services.simulator.paired import execute_batch, execute_paired
    from services.simulator.v2x.stack import v2x_source_factory

    progs = _programs(n)
    execute_paired(progs[0])  # warm-up
    t0 = time.perf_counter()
    for p in progs:
        execute_paired(p)
    gt = time.perf_counter() - t0
    t0 = time.perf_counter()
    for p in progs:
        execute_paired(p, None, v2x_source_factory())
    v2x = time.perf_counter() - t0
    steps = sum(round(p.duration_s / p.dt_s) for p in progs)
    print(f"[3] paired execution, {n} programs one by one ({steps} steps per rollout in all): "
          f"ground truth {gt:.2f} s, V2X {v2x:.2f} s -> x{v2x / gt:.2f} "
          f"(V2X adds {1e3 * (v2x - gt) / steps:.2f} ms per step)")
    t0 = time.perf_counter()
    execute_batch(progs)
    gt_b = time.perf_counter() - t0
    t0 = time.perf_counter()
    execute_batch(progs, None, v2x_source_factory())
    v2x_b = time.perf_counter() - t0
    print(f"    batched ({n} programs in one traffic batch): ground truth {gt_b:.2f} s, V2X {v2x_b:.2f} s "
          f"-> x{v2x_b / gt_b:.2f}")
    return {"gt_s": gt, "v2x_s": v2x, "gt_batch_s": gt_b, "v2x_batch_s": v2x_b}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=12)
    add_baseline_arguments(ap)
    args = ap.parse_args()
    base = None
    if args.baseline:
        base = run_baseline(Path(__file__).resolve(), args.baseline,
                            ["--repeat", str(args.repeat), "--seeds", str(args.seeds)])
    res = {"channel_links_per_s": channel_rate(args.repeat)}
    if base:
        print(f"    vs {args.baseline}: {base['channel_links_per_s']:,.0f} -> {res['channel_links_per_s']:,.0f} links/s "
              f"({ratio(base['channel_links_per_s'], res['channel_links_per_s'], True)})")
    res["stack"] = stack_step_cost()
    if base:
        b, n = base["stack"]["ms_per_step"], res["stack"]["ms_per_step"]
        print(f"    vs {args.baseline}: {b:.2f} -> {n:.2f} ms/step ({ratio(b, n)})")
    res["paired"] = paired_ratio(args.seeds)
    if base:
        bp, np_ = base["paired"], res["paired"]
        print(f"    vs {args.baseline}: one by one GT {bp['gt_s']:.2f} -> {np_['gt_s']:.2f} s ({ratio(bp['gt_s'], np_['gt_s'])}),"
              f" V2X {bp['v2x_s']:.2f} -> {np_['v2x_s']:.2f} s ({ratio(bp['v2x_s'], np_['v2x_s'])}); batched GT "
              f"{bp['gt_batch_s']:.2f} -> {np_['gt_batch_s']:.2f} s ({ratio(bp['gt_batch_s'], np_['gt_batch_s'])}), "
              f"V2X {bp['v2x_batch_s']:.2f} -> {np_['v2x_batch_s']:.2f} s "
              f"({ratio(bp['v2x_batch_s'], np_['v2x_batch_s'])})")
    if args.json:
        Path(args.json).write_text(json.dumps(res))


if __name__ == "__main__":
    main()
