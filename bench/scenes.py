"""Scenes shared by the benchmarks and the golden tests (plain module: no sys.path edits).

``canyon_scene`` is the 50-vehicle synthetic urban canyon of ``bench_v2x.py``;
``tests/simulator/test_golden_outcomes.py`` pins the V2X stack's beliefs in it.
"""

from __future__ import annotations

import numpy as np

from lastv2x.core.catalogue import Application
from lastv2x.core.program import (
    ProgramVehicle,
    Route,
    RouteSegment,
    Rsu,
    ScenarioProgram,
    SignalGroupPlan,
    VehicleRole,
)
from lastv2x.core.spec import V2X
from services.simulator.info import WorldSnapshot
from services.simulator.signals import SignalTable
from services.simulator.v2x.geometry import synthetic_urban_canyon


def canyon_scene(n_vehicles: int = 50) -> tuple[ScenarioProgram, object]:
    """50 vehicles on the canyon's east-west and north-south streets, 4 RSUs at intersections."""
    city = synthetic_urban_canyon()
    lo, hi = city.extent_min, city.extent_max
    rng = np.random.default_rng(1)
    vehicles = []
    for k in range(n_vehicles):
        street = int(rng.integers(0, 5)) * city.pitch_m
        if k % 2 == 0:
            pts = ((float(lo[0]), street - 1.75), (float(hi[0]), street - 1.75))
        else:
            pts = ((street + 1.75, float(lo[1])), (street + 1.75, float(hi[1])))
        length = float(np.hypot(pts[1][0] - pts[0][0], pts[1][1] - pts[0][1]))
        route = Route(points_xy_m=pts, segments=(RouteSegment(id=f"st{k}", start_s_m=0.0, length_m=length),))
        vehicles.append(ProgramVehicle(
            id="ego" if k == 0 else f"v{k}", role=VehicleRole.EGO if k == 0 else VehicleRole.BACKGROUND,
            route=route, start_s_m=float(rng.uniform(0, length * 0.5)), initial_speed_mps=10.0,
            desired_speed_mps=10.0))
    rsus = tuple(Rsu(id=f"rsu{i}", xy_m=(float(x) + 11.0, float(y) + 11.0), junction_id=f"j{i}")
                 for i, (x, y) in enumerate(city.intersections[[6, 8, 16, 18]]))
    groups = tuple(SignalGroupPlan(id=f"j{i}.sg{g}", junction_id=f"j{i}", cycle_s=60.0, green_s=27.0, amber_s=3.0,
                                   offset_s=30.0 * g + 7.0 * i) for i in range(4) for g in range(2))
    prog = ScenarioProgram(application=Application.EEBL, duration_s=10.0, map_name="synthetic_canyon",
                           ego=vehicles[0], agents=tuple(vehicles[1:]), rsus=rsus, signal_groups=groups,
                           v2x=V2X(spat_relay=True, eebl_rebroadcast=True))
    return prog, city.buildings


def canyon_snapshots(prog: ScenarioProgram, steps: int) -> list[WorldSnapshot]:
    """``steps`` world snapshots of :func:`canyon_scene`: everyone at 10 m/s along its street,
    every seventh vehicle braking hard after 2 s (EEBL traffic)."""
    vs = prog.vehicles
    p0 = np.array([v.route.points_xy_m[0] for v in vs])
    p1 = np.array([v.route.points_xy_m[1] for v in vs])
    u = (p1 - p0) / np.linalg.norm(p1 - p0, axis=1)[:, None]
    s0 = np.array([v.start_s_m for v in vs])
    n = len(vs)
    ids = tuple(v.id for v in vs)
    table = SignalTable.from_plans(prog.signal_groups)
    gids = tuple(g.id for g in prog.signal_groups)
    out = []
    for k in range(steps):
        t = k * prog.dt_s
        phase, ttc, ttg = table.state(t)
        s = s0 + 10.0 * t
        accel = np.where((np.arange(n) % 7 == 3) & (t > 2.0), -6.0, 0.0)  # some hard brakers: EEBL traffic
        out.append(WorldSnapshot(
            t_s=t, step=k, vehicle_ids=ids, xy_m=p0 + s[:, None] * u, speed_mps=np.full(n, 10.0),
            heading_rad=np.arctan2(u[:, 1], u[:, 0]), accel_mps2=accel, brake_flag=accel < -0.5,
            hard_brake_event=accel < -3.9, equipped=np.ones(n, bool), alive=np.ones(n, bool), route_s_m=s,
            stop_bar_distance_m=np.full(n, np.inf), next_group_index=np.full(n, -1), length_m=np.full(n, 4.5),
            ego_index=0, signal_group_ids=gids, true_phase=np.asarray(phase, np.int64), time_to_change_s=ttc,
            time_to_green_s=ttg))
    return out
