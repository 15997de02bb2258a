"""The traffic core vs SUMO (libsumo) on the same signalized grid: vehicle updates per second.

Both sides drive the grid of ``bench/race_grid.py`` (one OpenDRIVE file; SUMO's network is
``netconvert`` of it), the same seeded routes through ``JUNCTIONS_PER_ROUTE`` signalized
junctions, the same fixed-time signal plan, ``dt = 0.05 s``, with ``N`` vehicles kept on the
network (ours: a vehicle at its route's end re-enters at its start; SUMO: an arrived vehicle is
added again on its route). Our core runs as paired execution runs it: the compiled step
(``services/simulator/kernels``; above ``LANE_SEARCH_MIN_VEHICLES`` per row its leaders come from the
per-lane search). Every step both sides hand back every vehicle's position and speed
(ours: copies of the state arrays or lists; SUMO: a position + speed subscription of every vehicle,
``getAllSubscriptionResults``, the fastest libsumo read). A vehicle update is one vehicle
advanced one step; the figure is updates per CPU second of this process (libsumo runs in it,
single-threaded; CPU time, not wall: the machine is shared), best of ``--repeat``, the two sides
interleaved. Section 3 of ``bench_simulator.py`` prints the same race.

Run: ``.venv/bin/python bench/bench_traffic_race.py [--steps 400] [--sizes 20,200,2000]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import code_root_from_argv  # noqa: E402

sys.path.insert(0, str(code_root_from_argv(sys.argv)))

import race_grid  # noqa: E402

from services.simulator.traffic import EgoControl, Scene, initial_state, step  # noqa: E402

WARMUP = 20


def core_updates_per_s(n: int, steps: int, seed: int = 0) -> float:
    prog, _routes = race_grid.grid_program(n, seed)
    scene = Scene.from_programs([prog], [True], respawn=True)
    st = initial_state(scene)
    ctl = EgoControl.nominal(1)
    sig = scene.signals
    for _ in range(WARMUP):
        st = step(scene, st, ctl, sig.phase_at(st.t_s))
    updates = 0
    t0 = time.process_time()
    for _ in range(steps):
        st = step(scene, st, ctl, sig.phase_at(st.t_s))
        xy, v = st.xy.copy(), st.v.copy()  # the state read every step
        updates += int(np.count_nonzero(st.alive))
    dt = time.process_time() - t0
    assert xy.shape[1] == v.shape[1] == n
    return updates / dt


def sumo_updates_per_s(n: int, steps: int, seed: int = 0) -> tuple[float, float] | None:
    """(vehicle updates per CPU second, mean vehicles on the network: SUMO inserts a vehicle only
    where it fits, so a dense start leaves some waiting)."""
    try:
        import libsumo as traci
        from libsumo import constants as tc
    except ImportError:
        return None
    rm = race_grid.road_map()
    prog, routes = race_grid.grid_program(n, seed, rm=rm)
    with tempfile.TemporaryDirectory(prefix="lastv2x-race-") as tmp:
        xodr = race_grid.write_grid(Path(tmp) / "grid.xodr")
        net = race_grid.netconvert(xodr, Path(tmp) / "grid.net.xml")
        phases = race_grid.sumo_tls(net, 0.05)
        traci.start(["sumo", "-n", str(net), "--step-length", "0.05", "--no-step-log", "--no-warnings",
                     "--duration-log.disable", "--collision.action", "none", "--time-to-teleport", "-1"])
        try:
            for tl, ph in phases.items():  # our fixed-time plan on every SUMO traffic light
                logic = traci.trafficlight.Logic("race", 0, 0, [traci.trafficlight.Phase(d, s) for d, s in ph])
                traci.trafficlight.setProgramLogic(tl, logic)
                traci.trafficlight.setProgram(tl, "race")
            edges = []
            for i, ids in enumerate(routes):
                e = race_grid.sumo_edges(rm, ids)
                traci.route.add(f"r{i}", e)
                edges.append(e)
            starts = [v.start_s_m for v in prog.vehicles]
            count = [0]

            def add(i: int) -> None:
                vid = f"v{i}.{count[0]}"
                count[0] += 1
                traci.vehicle.add(vid, f"r{i}", departPos=f"{starts[i]:.2f}", departSpeed=f"{0.8 * race_grid.SPEED_MPS}")
                traci.vehicle.subscribe(vid, (tc.VAR_POSITION, tc.VAR_SPEED))

            for i in range(n):
                add(i)
            for _ in range(WARMUP):
                traci.simulationStep()
            updates = 0
            t0 = time.process_time()
            for _ in range(steps):
                traci.simulationStep()
                states = traci.vehicle.getAllSubscriptionResults()  # every vehicle's position and speed
                updates += len(states)
                for vid in traci.simulation.getArrivedIDList():  # keep N on the network, on the same routes
                    add(int(vid[1:].split(".")[0]))
            return updates / (time.process_time() - t0), updates / steps
        finally:
            traci.close()


def race(sizes: list[int], steps: int, repeat: int, sumo: bool = True) -> dict[str, dict[str, float | None]]:
    print(f"traffic core vs SUMO (libsumo) on the signalized {race_grid.GRID_N}x{race_grid.GRID_N} grid "
          f"(OpenDRIVE -> netconvert), routes through {race_grid.JUNCTIONS_PER_ROUTE} junctions, dt 0.05 s, "
          f"states read every step; best of {repeat}")
    print(f"   {'vehicles':>8s} {'core upd/s':>12s} {'SUMO upd/s':>12s} {'core/SUMO':>10s} {'SUMO on net':>12s}")
    out: dict[str, dict[str, float | None]] = {}
    for n in sizes:
        k = max(20, steps if n <= 200 else steps // 4)
        core, other, on_net = [], [], []
        for _ in range(repeat):  # interleaved
            core.append(core_updates_per_s(n, k))
            if sumo:
                try:
                    r = sumo_updates_per_s(n, k)
                except Exception as exc:  # noqa: BLE001
                    print(f"   SUMO failed: {exc}")
                    r = None
                if r is not None:
                    other.append(r[0])
                    on_net.append(r[1])
        c, s_ = max(core), (max(other) if other else None)
        ratio = f"{c / s_:10.2f}" if s_ else f"{'n/a':>10s}"
        sumo_s = f"{s_:12.0f}" if s_ else f"{'n/a':>12s}"
        net_s = f"{sum(on_net) / len(on_net):12.0f}" if on_net else ""
        print(f"   {n:8d} {c:12.0f} {sumo_s} {ratio} {net_s}")
        out[str(n)] = {"core": c, "sumo": s_}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--sizes", default="20,200,2000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--code-root", help=argparse.SUPPRESS)
    args = ap.parse_args()
    race([int(x) for x in args.sizes.split(",")], args.steps, args.repeat)


if __name__ == "__main__":
    main()
