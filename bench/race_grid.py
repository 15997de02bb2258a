"""The signalized grid both sides of the traffic race drive on (bench/bench_traffic_race.py).

Built once as OpenDRIVE (``services.simulator.maps.xodr_writer``: a ``GRID_N`` x ``GRID_N`` grid
of signalized 4-way junctions ``BLOCK_M`` apart, one lane per direction, a traffic light per
approach, stubs on the border) and read by both simulators: our traffic core takes the
``RoadMap`` the native builder makes of the same layout (what ``load_map`` does for the built-in
maps when carla is absent: the same ids, movements and signal groups as parsing the text), SUMO
the network ``netconvert --opendrive-files`` makes of the text. The same seeded routes (chains of
lanes and junction movements, through ``JUNCTIONS_PER_ROUTE`` junctions) are given to both;
signals are fixed-time on both: east-west approaches green for ``GREEN_S`` then amber, then
north-south (SUMO: the same plan written into its ``tlLogic`` phases by ``sumo_tls``).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from lastv2x.core.catalogue import Application
from lastv2x.core.program import (
    Crossing,
    ProgramVehicle,
    Route,
    RouteSegment,
    ScenarioProgram,
    SignalGroupPlan,
    VehicleRole,
)
from services.simulator.maps.assemble import assemble, content_hash
from services.simulator.maps.model import Movement, RoadMap
from services.simulator.maps.native import layout_network
from services.simulator.maps.xodr_writer import Arm, Layout, write_xodr

GRID_N = 8  # junctions per side
BLOCK_M = 200.0  # junction spacing, m
STUB_M = 150.0  # border arms, m
CYCLE_S, GREEN_S, AMBER_S = 60.0, 27.0, 3.0  # per direction: green, amber, then red while the other goes
JUNCTIONS_PER_ROUTE = 4
SPEED_MPS = 13.9  # 50 km/h, the layout's speed limit


def layout() -> Layout:
    nodes = {f"g{i}{j}": (i * BLOCK_M, j * BLOCK_M) for i in range(GRID_N) for j in range(GRID_N)}
    arms = [Arm(f"g{i}{j}", "E", 1, f"g{i + 1}{j}") for i in range(GRID_N - 1) for j in range(GRID_N)]
    arms += [Arm(f"g{i}{j}", "N", 1, f"g{i}{j + 1}") for i in range(GRID_N) for j in range(GRID_N - 1)]
    for k in range(GRID_N):
        arms += [Arm(f"g0{k}", "W", 1, None, STUB_M), Arm(f"g{GRID_N - 1}{k}", "E", 1, None, STUB_M),
                 Arm(f"g{k}0", "S", 1, None, STUB_M), Arm(f"g{k}{GRID_N - 1}", "N", 1, None, STUB_M)]
    return Layout("race_grid", nodes, tuple(arms), frozenset(nodes), 3.5)


def write_grid(path: Path) -> Path:
    path.write_text(write_xodr(layout()))
    return path


def road_map() -> RoadMap:
    lay = layout()
    return assemble(layout_network(lay), lay.name, content_hash(write_xodr(lay).encode()))


def _east_west(rm: RoadMap, group_id: str) -> bool:
    g = rm.signal_groups[group_id]
    cx, cy = rm.junctions[g.junction_id].centre
    x, y = g.stop_bars[0].xy
    return abs(x - cx) > abs(y - cy)


def signal_plans(rm: RoadMap) -> tuple[SignalGroupPlan, ...]:
    """East-west approaches green from t = 0, north-south from t = CYCLE_S / 2, every junction alike."""
    return tuple(SignalGroupPlan(id=gid, junction_id=g.junction_id, cycle_s=CYCLE_S, green_s=GREEN_S, amber_s=AMBER_S,
                                 offset_s=0.0 if _east_west(rm, gid) else CYCLE_S / 2)
                 for gid, g in sorted(rm.signal_groups.items()))


def random_routes(rm: RoadMap, n: int, seed: int = 0, max_turns: int | None = None) -> list[list[str]]:
    """``n`` chains lane, movement, lane, ... through JUNCTIONS_PER_ROUTE junctions (fewer where the
    grid ends), straight ahead twice as often as a turn; ``max_turns`` caps the turns of a route."""
    rng = np.random.default_rng(seed)
    lanes = sorted(lid for lid in rm.lanes if rm.movements_from(lid))
    out = []
    while len(out) < n:
        ids = [lanes[int(rng.integers(len(lanes)))]]
        turns = 0
        for _ in range(JUNCTIONS_PER_ROUTE):
            moves = list(rm.movements_from(ids[-1]))
            if max_turns is not None and turns >= max_turns:
                moves = [m for m in moves if str(m.turn) == "straight"]
            if not moves:
                break
            weights = np.array([2.0 if str(m.turn) == "straight" else 1.0 for m in moves])
            m = moves[int(rng.choice(len(moves), p=weights / weights.sum()))]
            turns += str(m.turn) != "straight"
            ids += [m.id, m.to_lane_id]
        if len(ids) >= 3:
            out.append(ids)
    return out


def program_route(rm: RoadMap, ids: list[str]) -> Route:
    pts: list[tuple[float, float]] = []
    starts: list[float] = []
    s = 0.0
    for eid in ids:
        poly = np.asarray(rm.element(eid).polyline, dtype=np.float64)
        first = True
        for x, y in poly.tolist():
            if pts:
                d = math.hypot(x - pts[-1][0], y - pts[-1][1])
                if d <= 1e-9:
                    if first:
                        starts.append(s)
                        first = False
                    continue
                s += d
            if first:
                starts.append(s)
                first = False
            pts.append((x, y))
    ends = starts[1:] + [s]
    segs = tuple(RouteSegment(id=eid, start_s_m=a, length_m=max(b - a, 1e-6)) for eid, a, b in
                 zip(ids, starts, ends, strict=True))
    crossings = []
    for k, eid in enumerate(ids):
        el = rm.element(eid)
        if isinstance(el, Movement):
            crossings.append(Crossing(junction_id=el.junction_id, approach_lane_id=el.from_lane_id,
                                      stop_bar_s_m=starts[k], stop_bar_xy_m=pts[0] if k == 0 else
                                      tuple(rm.element(ids[k - 1]).polyline[-1].tolist()),
                                      signal_group_id=el.signal_group_id))
    return Route(points_xy_m=tuple(pts), segments=segs, crossings=tuple(crossings))


def grid_program(n: int, seed: int = 0, max_turns: int | None = None, rm: RoadMap | None = None
                 ) -> tuple[ScenarioProgram, list[list[str]]]:
    """``n`` vehicles on seeded routes, spread along them (the first is the program's ego), and the routes."""
    rm = rm or road_map()
    routes = random_routes(rm, n, seed, max_turns)
    rng = np.random.default_rng(seed + 1)
    vehicles = []
    for i, ids in enumerate(routes):
        route = program_route(rm, ids)
        first = route.segments[0]
        s0 = float(rng.uniform(0.0, 0.8)) * first.length_m
        vehicles.append(ProgramVehicle(id=f"v{i}", role=VehicleRole.EGO if i == 0 else VehicleRole.BACKGROUND,
                                       route=route, start_s_m=s0, initial_speed_mps=SPEED_MPS * 0.8,
                                       desired_speed_mps=SPEED_MPS))
    prog = ScenarioProgram(application=Application.FCW, duration_s=600.0, map_name="race_grid", ego=vehicles[0],
                           agents=tuple(vehicles[1:]), signal_groups=signal_plans(rm))
    return prog, routes


# ── SUMO side ────────────────────────────────────────────────────────────────
def _sumo_bin(name: str) -> str:
    import sumo

    return shutil.which(name) or str(Path(sumo.__file__).parent / "bin" / name)


def netconvert(xodr: Path, out: Path) -> Path:
    """The SUMO network of the OpenDRIVE grid (its traffic lights become SUMO traffic lights)."""
    subprocess.run([_sumo_bin("netconvert"), "--opendrive-files", str(xodr), "-o", str(out),
                    "--no-warnings", "--tls.discard-simple", "false"], check=True, capture_output=True)
    return out


def sumo_edge(lane_id: str) -> str:
    """The SUMO edge of one of our lanes: ``r<road>.s<section>.l<lane>`` -> ``-<road>`` for the right
    side (lane < 0, driving along the road), ``<road>`` for the left (netconvert's OpenDRIVE names)."""
    road, _sec, lane = lane_id.split(".")
    return f"{'-' if int(lane[1:]) < 0 else ''}{road[1:]}"


def sumo_edges(rm: RoadMap, ids: list[str]) -> list[str]:
    return [sumo_edge(eid) for eid in ids if eid in rm.lanes]


def sumo_tls(net: Path, dt_s: float) -> dict[str, list[tuple[float, str]]]:
    """Per traffic light of the SUMO network, the fixed-time phases of our plan: (duration, state)
    with the east-west links green/amber first, then north-south (link direction from the net)."""
    root = ET.parse(net).getroot()
    lanes: dict[str, list[float]] = {}
    for e in root.iter("edge"):
        for ln in e.iter("lane"):
            shape = [tuple(map(float, p.split(","))) for p in ln.get("shape", "").split()]
            if len(shape) >= 2:
                lanes[ln.get("id", "")] = [shape[-2][0], shape[-2][1], shape[-1][0], shape[-1][1]]
    links: dict[str, dict[int, bool]] = {}
    for c in root.iter("connection"):
        tl = c.get("tl")
        if tl is None:
            continue
        lane = f"{c.get('from')}_{c.get('fromLane')}"
        x0, y0, x1, y1 = lanes.get(lane, [0.0, 0.0, 1.0, 0.0])
        links.setdefault(tl, {})[int(c.get("linkIndex", "0"))] = abs(x1 - x0) >= abs(y1 - y0)
    red = CYCLE_S / 2 - GREEN_S - AMBER_S
    out = {}
    for tl, idx in links.items():
        n = max(idx) + 1
        ew = [idx.get(i, False) for i in range(n)]

        def state(go: bool, ch: str) -> str:
            return "".join(ch if (e == go) else "r" for e in ew)  # noqa: B023

        phases = [(GREEN_S, state(True, "G")), (AMBER_S, state(True, "y"))]
        if red > 0:
            phases.append((red, "r" * n))
        phases += [(GREEN_S, state(False, "G")), (AMBER_S, state(False, "y"))]
        if red > 0:
            phases.append((red, "r" * n))
        out[tl] = phases
    return out
