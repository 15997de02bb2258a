"""A spec laid on a synthetic crossing of straight roads, without the grounding service.

``program_from_spec_on_straight_roads`` lays a signalized (or not) 4-way crossing of
straight roads — junction centred on the origin, right-hand traffic, the ego
northbound on arm ``S`` — sized to the spec, so tests, benchmarks, ``make run`` and
the simulator's ``Execute`` of a bare spec can run a :class:`ScenarioProgram` with no
map and no retrieval. The real grounder (``services/grounding``) places the same
spec on a map; both resolve faults, equipage and signal plans by the same core rules.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from typing import Any

import numpy as np

from lastv2x.core import perception, variation
from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application
from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.faults import resolve_faults
from lastv2x.core.program import (
    DEFAULT_VEHICLE_LENGTH_M,
    XY,
    Crossing,
    GroundingRecord,
    ProgramVehicle,
    Route,
    RouteSegment,
    Rsu,
    ScenarioProgram,
    SignalGroupPlan,
    VehicleRole,
    cross_group_plan,
    ego_group_plan,
)
from lastv2x.core.rng import Substream, equipage, substream
from lastv2x.core.spec import (
    AHEAD_ROLES,
    AgentRole,
    JunctionKind,
    Maneuver,
    RsuPlacement,
    ScenarioSpec,
    agent_maneuver,
)

SYNTH_MAP_NAME = "synthetic_straight_4way"
SYNTH_JUNCTION_ID = "j0"
SYNTH_HALF_WIDTH_M = 10.0  # stop bars 10 m from the centre
SYNTH_LANE_OFFSET_M = 1.75  # half of a 3.5 m lane, right-hand traffic
SYNTH_EXIT_M = 80.0  # exit lane length beyond the junction box
SYNTH_RSU_XY_M = (6.0, 0.0)  # RSU mast on the ego's far-right corner, ~12 m beyond its stop bar
SYNTH_RSU_HEIGHT_M = 5.5
SYNTH_GROUP_NS = "j0.sg0"  # ego (northbound) and opposing (southbound) approaches
SYNTH_GROUP_EW = "j0.sg1"  # cross approaches
BACKGROUND_SPACING_M = 28.0
BACKGROUND_SPEED_MPS = 12.0

# Unit travel direction of each inbound arm (name = where traffic comes from).
_ARM_DIR = {"S": (0.0, 1.0), "N": (0.0, -1.0), "W": (1.0, 0.0), "E": (-1.0, 0.0)}
_EXIT_OF = {  # (from arm, turn) -> arm the vehicle leaves through
    ("S", Maneuver.STRAIGHT): "N", ("S", Maneuver.LEFT): "W", ("S", Maneuver.RIGHT): "E",
    ("N", Maneuver.STRAIGHT): "S", ("N", Maneuver.LEFT): "E", ("N", Maneuver.RIGHT): "W",
    ("W", Maneuver.STRAIGHT): "E", ("W", Maneuver.LEFT): "N", ("W", Maneuver.RIGHT): "S",
    ("E", Maneuver.STRAIGHT): "W", ("E", Maneuver.LEFT): "S", ("E", Maneuver.RIGHT): "N",
}


def _right_normal(d: XY) -> np.ndarray:
    return np.array([d[1], -d[0]])


def _inbound(arm: str, length_m: float) -> np.ndarray:
    """Inbound lane of ``arm``: from ``length_m`` before its stop bar to the stop bar."""
    d = np.array(_ARM_DIR[arm])
    off = _right_normal(_ARM_DIR[arm]) * SYNTH_LANE_OFFSET_M
    bar = -d * SYNTH_HALF_WIDTH_M + off
    return np.array([bar - d * length_m, bar])


def _outbound(arm: str, length_m: float) -> np.ndarray:
    """Outbound lane towards ``arm``: from the junction edge outwards."""
    d = -np.array(_ARM_DIR[arm])  # leaving towards the arm
    off = _right_normal(tuple(d)) * SYNTH_LANE_OFFSET_M
    start = d * SYNTH_HALF_WIDTH_M + off
    return np.array([start, start + d * length_m])


def _connector(arm: str, turn: Maneuver, n: int = 24) -> np.ndarray:
    a = _inbound(arm, 1.0)[1]
    exit_arm = _EXIT_OF[(arm, turn)]
    b = _outbound(exit_arm, 1.0)[0]
    if turn is Maneuver.STRAIGHT:
        return np.array([a, b])
    d_in = np.array(_ARM_DIR[arm])
    # quarter circle: centre where the entry and exit normals meet
    # the centre lies on the entry normal (through a) and the exit normal (through b)
    centre = np.array([b[0], a[1]]) if d_in[0] == 0 else np.array([a[0], b[1]])
    r = float(np.hypot(*(a - centre)))
    th0 = math.atan2(a[1] - centre[1], a[0] - centre[0])
    th1 = math.atan2(b[1] - centre[1], b[0] - centre[0])
    dth = (th1 - th0 + math.pi) % (2 * math.pi) - math.pi
    th = th0 + dth * np.linspace(0.0, 1.0, n)
    return centre + r * np.stack([np.cos(th), np.sin(th)], axis=1)


def _first_intersection(p: np.ndarray, q: np.ndarray) -> tuple[float, float, XY] | None:
    """First crossing of polylines p and q: (s along p, s along q, xy), or None."""
    sp = np.concatenate(([0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T))))
    sq = np.concatenate(([0.0], np.cumsum(np.hypot(*np.diff(q, axis=0).T))))
    best = None
    for i in range(len(p) - 1):
        a, b = p[i], p[i + 1]
        for j in range(len(q) - 1):
            c, d = q[j], q[j + 1]
            r, s = b - a, d - c
            den = r[0] * s[1] - r[1] * s[0]
            if abs(den) < 1e-12:
                continue
            t = ((c - a)[0] * s[1] - (c - a)[1] * s[0]) / den
            u = ((c - a)[0] * r[1] - (c - a)[1] * r[0]) / den
            if 0.0 <= t <= 1.0 and 0.0 <= u <= 1.0:
                s_p = sp[i] + t * (sp[i + 1] - sp[i])
                if best is None or s_p < best[0]:
                    xy = a + t * r
                    best = (float(s_p), float(sq[j] + u * (sq[j + 1] - sq[j])), (float(xy[0]), float(xy[1])))
    return best


class _Synth:
    """Builds routes on the synthetic crossing; inbound lanes are as long as the farthest vehicle needs."""

    def __init__(self, inbound_m: dict[str, float], exit_m: float, signalized: bool):
        self.inbound_m = inbound_m
        self.exit_m = exit_m
        self.signalized = signalized

    def polyline(self, arm: str, turn: Maneuver) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
        parts = [(f"{arm}.in", _inbound(arm, self.inbound_m[arm])),
                 (f"{SYNTH_JUNCTION_ID}.{arm}.{turn.value}", _connector(arm, turn)),
                 (f"{_EXIT_OF[(arm, turn)]}.out", _outbound(_EXIT_OF[(arm, turn)], self.exit_m))]
        pts = np.vstack([parts[0][1], parts[1][1][1:], parts[2][1][1:]])
        return pts, parts

    def route(self, arm: str, turn: Maneuver, other: tuple[str, Maneuver] | None) -> Route:
        """The route from ``arm`` through the crossing (``turn``), with its conflict point against ``other``'s route
        (arm, turn) when given; remembered (``_laid_route``: a campaign's candidates differ in their faults and a few
        numbers, and lay the same routes again)."""
        return _laid_route(tuple(sorted(self.inbound_m.items())), self.exit_m, self.signalized, arm, turn, other)

    def lay(self, arm: str, turn: Maneuver, other: tuple[str, Maneuver] | None) -> Route:
        """:meth:`route`, computed."""
        pts, parts = self.polyline(arm, turn)
        segs, s0 = [], 0.0
        for sid, p in parts:
            length = float(np.hypot(*np.diff(p, axis=0).T).sum())
            segs.append(RouteSegment(id=sid, start_s_m=s0, length_m=length))
            s0 += length
        bar_s = segs[0].length_m
        conflict_s, conflict_xy = None, None
        if other is not None:
            hit = _first_intersection(pts, self.polyline(*other)[0])
            if hit is not None:
                conflict_s, conflict_xy = hit[0], hit[2]
        group = None
        if self.signalized:
            group = SYNTH_GROUP_NS if arm in ("S", "N") else SYNTH_GROUP_EW
        bar = pts[len(parts[0][1]) - 1]
        crossing = Crossing(junction_id=SYNTH_JUNCTION_ID, approach_lane_id=f"{arm}.in", stop_bar_s_m=bar_s,
                            stop_bar_xy_m=(float(bar[0]), float(bar[1])), signal_group_id=group,
                            conflict_s_m=conflict_s, conflict_xy_m=conflict_xy, turn=turn)
        return Route(points_xy_m=tuple((float(x), float(y)) for x, y in pts), segments=tuple(segs),
                     crossings=(crossing,), turn=turn)


@functools.lru_cache(maxsize=4096)
def _laid_route(inbound_m: tuple[tuple[str, float], ...], exit_m: float, signalized: bool, arm: str, turn: Maneuver,
                other: tuple[str, Maneuver] | None) -> Route:
    """``_Synth(dict(inbound_m), exit_m, signalized).lay(arm, turn, other)``, remembered by every argument (routes are
    frozen)."""
    return _Synth(dict(inbound_m), exit_m, signalized).lay(arm, turn, other)


def _signalized(spec: ScenarioSpec) -> bool:
    if spec.map.signalized is not None:
        return spec.map.signalized
    if spec.map.junction_kind in (JunctionKind.SIGNALIZED_4WAY, JunctionKind.CORRIDOR):
        return True
    if APPLICATIONS[spec.application].kind is AppKind.SIGNAL:
        return True
    return spec.application is Application.LTA  # permissive left on a shared green


_ROLE_ARM = {AgentRole.LEAD: "S", AgentRole.RELAY: "S", AgentRole.FOLLOWER: "S", AgentRole.CROSS: "W",
             AgentRole.OPPOSING: "N"}


def program_from_spec_on_straight_roads(spec: ScenarioSpec) -> ScenarioProgram:
    """Deterministic program for ``spec`` on the synthetic crossing (no grounding service); the
    spec's ``variation`` is drawn from its seed first (``lastv2x.core.variation``)."""
    drawn = variation.draw(spec)
    if drawn is None:
        return perception.finish(_on_straight_roads(spec), spec)
    return perception.finish(variation.apply(_on_straight_roads(drawn.spec), drawn), spec)


def _on_straight_roads(spec: ScenarioSpec) -> ScenarioProgram:
    """Deterministic program for ``spec`` on the synthetic crossing (no grounding service).

    Honoured: the ego's start distance (front bumper to stop bar), manoeuvre, speed and
    profile; lead/relay ``gap_m`` ahead of the ego (centre to centre), a follower ``gap_m`` behind it on the
    ego's route; cross/opposing
    ``arrival_offset_s`` at the conflict point relative to the ego's constant-speed
    arrival; agents' speeds, profiles, equipage, behaviours; the spec's signal plan for
    the ego group and the timeline's cross group for the crossing approaches;
    ``map.busy`` adds background traffic (equipage from ``v2x.penetration`` by
    ``lastv2x.core.rng.equipage``, lengths from the BLUEPRINT substream). Raises FailedPrecondition
    when an agent would have to reach the conflict point before t = 0.
    """
    signalized = _signalized(spec)
    L = DEFAULT_VEHICLE_LENGTH_M
    ego_turn = spec.ego.maneuver
    v_e = spec.ego.speed_mps
    agents = spec.agents
    conflict_agent = next((a for a in agents if a.role in (AgentRole.CROSS, AgentRole.OPPOSING)), None)

    def arm_of(a: Any) -> str:
        return _ROLE_ARM.get(a.role, "E")

    # Geometry first with generous inbound lengths, to find conflict arcs; then size lanes.
    gaps = [a.gap_m for a in agents if a.role in AHEAD_ROLES]
    exit_m = SYNTH_EXIT_M + max(gaps, default=0.0)
    probe = _Synth({k: 100.0 for k in _ARM_DIR}, exit_m, signalized)
    ego_other = (arm_of(conflict_agent), conflict_agent.maneuver) if conflict_agent else None
    ego_probe = probe.route("S", ego_turn, ego_other)
    # centre of the ego at t = 0 is start_distance + L/2 before the stop bar
    ego_back_m = spec.ego.start_distance_m + L / 2
    c_e = ego_probe.conflict_s_m
    t_e_conflict = None if c_e is None else (ego_back_m + (c_e - ego_probe.crossings[0].stop_bar_s_m)) / v_e

    needs: dict[str, list[float]] = {k: [20.0] for k in _ARM_DIR}
    needs["S"].append(ego_back_m + 10.0)
    plans: dict[str, dict[str, Any]] = {}
    for a in agents:
        arm = arm_of(a)
        if a.role is AgentRole.FOLLOWER:  # behind the ego on its route, whatever its own manoeuvre says
            plans[a.id] = {"arm": arm, "back": ego_back_m + a.gap_m}
            needs[arm].append(ego_back_m + a.gap_m + 10.0)
        elif a.role in AHEAD_ROLES:
            back = ego_back_m - a.gap_m  # distance of its centre before the stop bar (may be < 0)
            plans[a.id] = {"arm": arm, "back": back}
            needs[arm].append(max(back, 0.0) + 10.0)
        elif a.role in (AgentRole.CROSS, AgentRole.OPPOSING):
            r = probe.route(arm, a.maneuver, ("S", ego_turn))
            if t_e_conflict is None or r.conflict_s_m is None:
                back = 60.0
                plans[a.id] = {"arm": arm, "back": back, "t": None}
            else:
                t_a = t_e_conflict + a.arrival_offset_s
                if t_a <= 0.0:
                    raise FailedPrecondition(
                        f"agent {a.id} would have to reach the conflict point {-t_a:.2f} s before t = 0",
                        f"arrival_offset_s >= {-t_e_conflict + 1.0:.2f}")
                back = a.speed_mps * t_a - (r.conflict_s_m - r.crossings[0].stop_bar_s_m)
                plans[a.id] = {"arm": arm, "back": back, "t": t_a}
            needs[arm].append(max(back, 0.0) + 10.0)
        else:
            plans[a.id] = {"arm": arm, "back": 40.0}
            needs[arm].append(50.0)

    background: list[dict[str, Any]] = []
    if spec.map.busy:
        arms = ["S", "N"] + (["W", "E"] if signalized else [])
        backs: dict[str, list[float]] = {k: [] for k in _ARM_DIR}
        for a in agents:
            backs[plans[a.id]["arm"]].append(plans[a.id]["back"])
        backs["S"].append(ego_back_m)
        for arm in arms:
            base = max(backs[arm], default=0.0) + BACKGROUND_SPACING_M
            for k in range(2):
                background.append({"arm": arm, "back": base + k * BACKGROUND_SPACING_M})
        for b in background:
            needs[b["arm"]].append(b["back"] + 10.0)
    synth = _Synth({k: math.ceil(max(v)) for k, v in needs.items()}, exit_m, signalized)

    def make(vid: str, role: VehicleRole, arm: str, turn: Maneuver, back: float, speed: float, **kw: Any) -> ProgramVehicle:
        other = None
        if role is VehicleRole.EGO and conflict_agent is not None:
            other = (arm_of(conflict_agent), conflict_agent.maneuver)
        elif role in (VehicleRole.CROSS, VehicleRole.OPPOSING):
            other = ("S", ego_turn)
        route = synth.route(arm, turn, other)
        start = route.crossings[0].stop_bar_s_m - back  # synthetic routes cross their junction
        return ProgramVehicle(id=vid, role=role, route=route, start_s_m=round(start, 9), initial_speed_mps=speed,
                              desired_speed_mps=speed, **kw)

    ego = make("ego", VehicleRole.EGO, "S", ego_turn, ego_back_m, v_e, profile=spec.ego.profile, equipped=True)
    out = []
    for a in agents:
        p = plans[a.id]
        kw: dict[str, Any] = {"profile": a.profile, "equipped": a.equipped, "behaviour": a.behaviour}
        if p.get("t") is not None:
            kw["arrive_conflict_at_s"] = p["t"]
        out.append(make(a.id, VehicleRole(a.role.value), p["arm"], agent_maneuver(spec, a), p["back"], a.speed_mps,
                        **kw))
    bg_ids = [f"bg{k}" for k in range(len(background))]
    bg_equipped = equipage(spec.seed, bg_ids, spec.v2x.penetration)  # keyed per vehicle id
    for k, b in enumerate(background):
        equipped = bg_equipped[bg_ids[k]]
        length = float(np.round(substream(spec.seed, Substream.BLUEPRINT, k).uniform(4.2, 4.9), 3))
        out.append(make(f"bg{k}", VehicleRole.BACKGROUND, b["arm"], Maneuver.STRAIGHT, b["back"],
                        BACKGROUND_SPEED_MPS, equipped=equipped, length_m=length))

    groups: tuple[SignalGroupPlan, ...] = ()
    if signalized:
        groups = (ego_group_plan(SYNTH_GROUP_NS, SYNTH_JUNCTION_ID, spec.signal),
                  cross_group_plan(SYNTH_GROUP_EW, SYNTH_JUNCTION_ID, spec.signal))
    rsus: tuple[Rsu, ...] = ()
    if spec.v2x.rsu_placement is not RsuPlacement.NONE:
        rsus = (Rsu(id="rsu0", xy_m=SYNTH_RSU_XY_M, height_m=SYNTH_RSU_HEIGHT_M, junction_id=SYNTH_JUNCTION_ID),)
    faults = resolve_faults(spec, groups=[g.id for g in groups], ego_group=SYNTH_GROUP_NS if signalized else None,
                            cross_group=SYNTH_GROUP_EW if signalized else None, rsu_ids=[r.id for r in rsus],
                            vehicle_ids=[ego.id, *(v.id for v in out)])
    geometry = {k: synth.inbound_m[k] for k in sorted(synth.inbound_m)} | {"exit_m": exit_m,
                                                                          "signalized": signalized}
    sha = hashlib.sha256(json.dumps(geometry, sort_keys=True).encode()).hexdigest()
    return ScenarioProgram(
        application=spec.application, seed=spec.seed, duration_s=spec.duration_s, map_name=SYNTH_MAP_NAME,
        map_sha256=sha, ego=ego, agents=tuple(out), signal_groups=groups, rsus=rsus, v2x=spec.v2x,
        faults=faults, spec=spec,
        grounding=GroundingRecord(builder="program_from_spec_on_straight_roads",
                                  notes=("synthetic 4-way crossing of straight roads, junction at the origin",),
                                  details={"geometry": geometry}))


__all__ = [
    "BACKGROUND_SPACING_M", "BACKGROUND_SPEED_MPS", "SYNTH_EXIT_M", "SYNTH_GROUP_EW",
    "SYNTH_GROUP_NS", "SYNTH_HALF_WIDTH_M", "SYNTH_JUNCTION_ID", "SYNTH_LANE_OFFSET_M", "SYNTH_MAP_NAME",
    "SYNTH_RSU_HEIGHT_M", "SYNTH_RSU_XY_M", "program_from_spec_on_straight_roads",
]
