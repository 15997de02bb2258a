"""The typed ScenarioProgram: what grounding produces and the simulator executes.

A program is *data*, never generated source code: every vehicle's route as a
polyline (approach lane + junction connector + exit lane, metres in the map
frame) with the lane/movement ids it is made of, where it meets stop bars and
conflict points, its start, speeds, driver profile, equipage and scripted
behaviour; the fixed-time plan of every signal group; RSU sites; the V2X settings;
the spec's faults with their senders and groups resolved to ids; the source spec;
and a free-form grounding record (retrieval notes, tie-breaks).

Conventions as in :mod:`lastv2x.core.spec`: units in field names; a route's arc
length ``s`` starts at 0 at its first point; a vehicle's ``start_s_m`` is the arc
length of its *centre*; stop-bar distances are measured from the front bumper.

``program_from_spec_on_straight_roads`` lays a synthetic signalized 4-way
crossing of straight roads (junction centred on the origin, right-hand traffic)
so tests and ``make run`` can execute a spec without the grounding service.
"""

from __future__ import annotations

import hashlib
import json
import math
from enum import StrEnum
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application, Stream
from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.rng import Substream, substream
from lastv2x.core.spec import (
    V2X,
    AgentRole,
    AnchorKind,
    Behaviour,
    DriverProfile,
    Fault,
    FaultOperator,
    JunctionKind,
    Maneuver,
    RsuPlacement,
    ScenarioSpec,
)
from lastv2x.core.timeline import CROSS_GROUP, EGO_GROUP_ALIASES, fault_window_s

PROGRAM_VERSION = "1"
DEFAULT_DT_S = 0.05
DEFAULT_VEHICLE_LENGTH_M = 4.5

XY = tuple[float, float]


class VehicleRole(StrEnum):
    EGO = "ego"
    LEAD = "lead"
    CROSS = "cross"
    OPPOSING = "opposing"
    RELAY = "relay"
    BACKGROUND = "background"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)


class RouteSegment(_Model):
    """One lane or junction movement of a route; vehicles on the same segment id share geometry."""

    id: str = Field(..., min_length=1, max_length=96)
    start_s_m: float = Field(..., ge=0.0)
    length_m: float = Field(..., gt=0.0)


class Crossing(_Model):
    """Where a route passes a junction: its stop bar, controlling group and conflict point."""

    junction_id: str
    approach_lane_id: str = Field("", description="MAP lane id of the approach lane")
    stop_bar_s_m: float = Field(..., ge=0.0, description="arc length of the stop bar on the route")
    stop_bar_xy_m: XY
    signal_group_id: str | None = Field(None, description="null = unsignalized")
    conflict_s_m: float | None = Field(None, ge=0.0, description="arc length of the scenario's conflict point")
    conflict_xy_m: XY | None = None
    turn: Maneuver = Maneuver.STRAIGHT


class Route(_Model):
    points_xy_m: tuple[XY, ...] = Field(..., min_length=2)
    segments: tuple[RouteSegment, ...] = Field(..., min_length=1)
    crossings: tuple[Crossing, ...] = ()
    turn: Maneuver = Maneuver.STRAIGHT

    @property
    def length_m(self) -> float:
        p = np.asarray(self.points_xy_m, dtype=np.float64)
        return float(np.hypot(*np.diff(p, axis=0).T).sum())

    @property
    def primary(self) -> Crossing | None:
        return self.crossings[0] if self.crossings else None

    @property
    def stop_bar_s_m(self) -> float | None:
        return self.crossings[0].stop_bar_s_m if self.crossings else None

    @property
    def conflict_s_m(self) -> float | None:
        return self.crossings[0].conflict_s_m if self.crossings else None

    @property
    def signal_group_id(self) -> str | None:
        return self.crossings[0].signal_group_id if self.crossings else None

    @model_validator(mode="after")
    def _ordered(self) -> Route:
        bars = [c.stop_bar_s_m for c in self.crossings]
        if bars != sorted(bars):
            raise ValueError("crossings must be ordered by stop_bar_s_m")
        length = self.length_m
        if any(b > length + 1e-6 for b in bars):
            raise ValueError("a stop bar lies beyond the end of the route")
        return self


class ProgramVehicle(_Model):
    id: str = Field(..., min_length=1, max_length=32)
    role: VehicleRole
    route: Route
    start_s_m: float = Field(..., ge=0.0, description="arc length of the vehicle centre at t = 0")
    initial_speed_mps: float = Field(..., ge=0.0, le=40.0)
    desired_speed_mps: float = Field(..., gt=0.0, le=40.0)
    profile: DriverProfile = DriverProfile.NORMAL
    equipped: bool = True
    behaviour: Behaviour = Behaviour()
    arrive_conflict_at_s: float | None = Field(
        None, gt=0.0, description="plan a constant speed that puts the centre on the conflict point at this time")
    length_m: float = Field(DEFAULT_VEHICLE_LENGTH_M, gt=1.0, le=20.0)
    reaction_time_s: float | None = Field(
        None, ge=0.0, le=5.0, description="leader-perception delay; null = the driver profile's")

    @model_validator(mode="after")
    def _on_route(self) -> ProgramVehicle:
        if self.start_s_m > self.route.length_m + 1e-6:
            raise ValueError(f"{self.id}: start_s_m beyond the end of its route")
        if self.arrive_conflict_at_s is not None and self.route.conflict_s_m is None:
            raise ValueError(f"{self.id}: arrive_conflict_at_s needs a route conflict point")
        return self


class SignalGroupPlan(_Model):
    """Fixed-time plan: with u = (t + offset_s) mod cycle_s, green on [0, G), amber on [G, G+A),
    red on [G+A, C). ``all_red_s`` is the clearance the plan leaves after its amber."""

    id: str
    junction_id: str
    cycle_s: float = Field(..., ge=1.0, le=300.0)
    green_s: float = Field(..., ge=0.0)
    amber_s: float = Field(..., ge=0.0)
    all_red_s: float = Field(0.0, ge=0.0)
    offset_s: float = 0.0

    @model_validator(mode="after")
    def _fits(self) -> SignalGroupPlan:
        if self.green_s + self.amber_s > self.cycle_s + 1e-9:
            raise ValueError("green_s + amber_s exceeds cycle_s")
        return self


class Rsu(_Model):
    id: str
    xy_m: XY
    height_m: float = Field(5.5, gt=0.0, le=50.0)
    junction_id: str | None = None


class ResolvedFault(_Model):
    """A spec fault with its references resolved to program ids."""

    fault: Fault
    sender_id: str | None = Field(None, description="vehicle or RSU id; null = every sender")
    sender_ids: tuple[str, ...] = Field((), description="every sender the restriction covers (all RSUs for 'rsu')")
    target_group_id: str | None = None
    anchor_group_id: str | None = None
    nominal_window_s: tuple[float, float] | None = Field(
        None, description="closed-form activation window (constant-speed ego); the runtime re-anchors ego events")


class GroundingRecord(_Model):
    builder: str = "grounding"
    notes: tuple[str, ...] = ()
    details: dict[str, Any] = Field(default_factory=dict)


class ScenarioProgram(_Model):
    program_version: str = PROGRAM_VERSION
    application: Application
    seed: int = Field(0, ge=0, le=2**63 - 1)
    duration_s: float = Field(..., gt=0.0, le=600.0)
    dt_s: float = Field(DEFAULT_DT_S, gt=0.0, le=0.5)
    map_name: str
    map_sha256: str = ""
    ego: ProgramVehicle
    agents: tuple[ProgramVehicle, ...] = ()
    signal_groups: tuple[SignalGroupPlan, ...] = ()
    rsus: tuple[Rsu, ...] = ()
    v2x: V2X = V2X()
    faults: tuple[ResolvedFault, ...] = ()
    spec: ScenarioSpec | None = None
    grounding: GroundingRecord = GroundingRecord()

    @property
    def vehicles(self) -> tuple[ProgramVehicle, ...]:
        return (self.ego, *self.agents)

    @property
    def ego_group_id(self) -> str | None:
        return self.ego.route.signal_group_id

    def group(self, group_id: str) -> SignalGroupPlan:
        for g in self.signal_groups:
            if g.id == group_id:
                return g
        raise KeyError(group_id)

    @model_validator(mode="after")
    def _references(self) -> ScenarioProgram:
        if self.ego.role is not VehicleRole.EGO:
            raise ValueError("ego.role must be 'ego'")
        ids = [v.id for v in self.vehicles]
        if len(set(ids)) != len(ids):
            raise ValueError("vehicle ids must be unique")
        if any(a.role is VehicleRole.EGO for a in self.agents):
            raise ValueError("only the ego has role 'ego'")
        groups = {g.id for g in self.signal_groups}
        if len(groups) != len(self.signal_groups):
            raise ValueError("signal group ids must be unique")
        for v in self.vehicles:
            for c in v.route.crossings:
                if c.signal_group_id is not None and c.signal_group_id not in groups:
                    raise ValueError(f"{v.id}: unknown signal group {c.signal_group_id!r}")
        senders = set(ids) | {r.id for r in self.rsus}
        for i, f in enumerate(self.faults):
            for s in (f.sender_id, *f.sender_ids):
                if s is not None and s not in senders:
                    raise ValueError(f"faults[{i}]: unknown sender {s!r}")
            for g in (f.target_group_id, f.anchor_group_id):
                if g is not None and g not in groups:
                    raise ValueError(f"faults[{i}]: unknown signal group {g!r}")
        return self


def program_to_json(program: ScenarioProgram) -> str:
    return program.model_dump_json()


def program_from_json(text: str | bytes) -> ScenarioProgram:
    return ScenarioProgram.model_validate_json(text)


def program_json_schema() -> dict[str, Any]:
    return ScenarioProgram.model_json_schema()


# ── synthetic straight-road 4-way crossing ──────────────────────────────────────
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
# FCW/EEBL egos are tested as the driver those warnings exist for: an inattentive one, who
# notices brake lights ahead 2 s late (an attentive driver's ~1 s reaction avoids every
# hard brake from the IDM following distance, leaving nothing for the warning to do).
INATTENTIVE_REACTION_S = 2.0

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


def _signalized(spec: ScenarioSpec) -> bool:
    if spec.map.signalized is not None:
        return spec.map.signalized
    if spec.map.junction_kind in (JunctionKind.SIGNALIZED_4WAY, JunctionKind.CORRIDOR):
        return True
    if APPLICATIONS[spec.application].kind is AppKind.SIGNAL:
        return True
    return spec.application is Application.LTA  # permissive left on a shared green


def _cross_plan(spec: ScenarioSpec) -> SignalGroupPlan:
    """The cross group of lastv2x.core.timeline as a plan of its own: green on
    [G+A+R, C-A-R), amber on [C-A-R, C-R), red otherwise (ego-group u coordinates)."""
    p = spec.signal
    g, a, r, c = p.green_s, p.amber_s, p.all_red_s, p.cycle_s
    green = max(0.0, c - g - 2 * a - 2 * r)
    return SignalGroupPlan(id=SYNTH_GROUP_EW, junction_id=SYNTH_JUNCTION_ID, cycle_s=c, green_s=green,
                           amber_s=a, all_red_s=r, offset_s=(p.offset_s - (g + a + r)) % c)


_ROLE_ARM = {AgentRole.LEAD: "S", AgentRole.RELAY: "S", AgentRole.CROSS: "W", AgentRole.OPPOSING: "N"}


def program_from_spec_on_straight_roads(spec: ScenarioSpec) -> ScenarioProgram:
    """Deterministic program for ``spec`` on the synthetic crossing (no grounding service).

    Honoured: the ego's start distance (front bumper to stop bar), manoeuvre, speed and
    profile; lead/relay ``gap_m`` ahead of the ego (centre to centre); cross/opposing
    ``arrival_offset_s`` at the conflict point relative to the ego's constant-speed
    arrival; agents' speeds, profiles, equipage, behaviours; the spec's signal plan for
    the ego group and the timeline's cross group for the crossing approaches;
    ``map.busy`` adds background traffic (equipage drawn with ``v2x.penetration`` from
    the seed's EQUIPAGE substream, lengths from BLUEPRINT). Raises FailedPrecondition
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
    gaps = [a.gap_m for a in agents if a.role in (AgentRole.LEAD, AgentRole.RELAY)]
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
        if a.role in (AgentRole.LEAD, AgentRole.RELAY):
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

    ego_kw: dict[str, Any] = {}
    if spec.application in (Application.FCW, Application.EEBL):
        ego_kw["reaction_time_s"] = INATTENTIVE_REACTION_S
    ego = make("ego", VehicleRole.EGO, "S", ego_turn, ego_back_m, v_e, profile=spec.ego.profile, equipped=True,
               **ego_kw)
    out = []
    for a in agents:
        p = plans[a.id]
        kw: dict[str, Any] = {"profile": a.profile, "equipped": a.equipped, "behaviour": a.behaviour}
        if p.get("t") is not None:
            kw["arrive_conflict_at_s"] = p["t"]
        out.append(make(a.id, VehicleRole(a.role.value), p["arm"], a.maneuver, p["back"], a.speed_mps, **kw))
    for k, b in enumerate(background):
        # keyed per vehicle: adding a background vehicle never shifts another's draws
        equipped = bool(substream(spec.seed, Substream.EQUIPAGE, k).random() < spec.v2x.penetration)
        length = float(np.round(substream(spec.seed, Substream.BLUEPRINT, k).uniform(4.2, 4.9), 3))
        out.append(make(f"bg{k}", VehicleRole.BACKGROUND, b["arm"], Maneuver.STRAIGHT, b["back"],
                        BACKGROUND_SPEED_MPS, equipped=equipped, length_m=length))

    groups: tuple[SignalGroupPlan, ...] = ()
    if signalized:
        sp = spec.signal
        groups = (SignalGroupPlan(id=SYNTH_GROUP_NS, junction_id=SYNTH_JUNCTION_ID, cycle_s=sp.cycle_s,
                                  green_s=sp.green_s, amber_s=sp.amber_s, all_red_s=sp.all_red_s,
                                  offset_s=sp.offset_s), _cross_plan(spec))
    rsus: tuple[Rsu, ...] = ()
    if spec.v2x.rsu_placement is not RsuPlacement.NONE:
        rsus = (Rsu(id="rsu0", xy_m=SYNTH_RSU_XY_M, height_m=SYNTH_RSU_HEIGHT_M, junction_id=SYNTH_JUNCTION_ID),)
    faults = tuple(_resolve_fault(spec, f, signalized, rsus) for f in spec.faults)
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


def _resolve_fault(spec: ScenarioSpec, fault: Fault, signalized: bool, rsus: tuple[Rsu, ...]) -> ResolvedFault:
    def group(name: str | None) -> str | None:
        if not signalized:
            return None
        if name == CROSS_GROUP:
            return SYNTH_GROUP_EW
        if name in EGO_GROUP_ALIASES:
            return SYNTH_GROUP_NS
        return name if name in (SYNTH_GROUP_NS, SYNTH_GROUP_EW) else None

    sender_ids: tuple[str, ...] = ()
    sender_id = fault.sender
    if fault.sender == "rsu":
        sender_ids = tuple(r.id for r in rsus)
        sender_id = sender_ids[0] if sender_ids else None
    elif fault.sender is not None:
        sender_ids = (fault.sender,)
    target = group(fault.target_group)
    if fault.operator is FaultOperator.MAP_MISASSOCIATION and fault.target_group is None and signalized:
        target = SYNTH_GROUP_EW
    anchor_group = group(fault.anchor.group) if fault.anchor.kind is AnchorKind.SIGNAL_EVENT else None
    start, end = fault_window_s(spec, fault)
    window = (start, end) if math.isfinite(start) else None
    if fault.stream in (Stream.SPAT, Stream.MAP) and sender_id is not None and sender_id not in {r.id for r in rsus}:
        sender_id, sender_ids = None, ()
    return ResolvedFault(fault=fault, sender_id=sender_id, sender_ids=sender_ids, target_group_id=target,
                         anchor_group_id=anchor_group, nominal_window_s=window)


__all__ = [
    "PROGRAM_VERSION", "DEFAULT_DT_S", "Crossing", "GroundingRecord", "ProgramVehicle", "ResolvedFault", "Route",
    "RouteSegment", "Rsu", "ScenarioProgram", "SignalGroupPlan", "VehicleRole", "program_from_json",
    "program_from_spec_on_straight_roads", "program_json_schema", "program_to_json",
]
