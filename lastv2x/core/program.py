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

``lastv2x.core.synthetic.program_from_spec_on_straight_roads`` lays a spec on a
synthetic crossing of straight roads, so tests and ``make run`` can execute a spec
without the grounding service.
"""

from __future__ import annotations

import functools
import hashlib
from enum import StrEnum
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import (
    V2X,
    Behaviour,
    DriverProfile,
    Fault,
    FaultOperator,
    Maneuver,
    ScenarioSpec,
    SignalPlan,
)

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
    FOLLOWER = "follower"
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

    @functools.cached_property
    def length_m(self) -> float:
        """The polyline's length, m (computed once: a route is frozen, and validating every vehicle on it, the
        grounding's placement and the simulator's scene all ask for it)."""
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
    alerted_reaction_s: float | None = Field(
        None, ge=0.0, le=3.0, exclude_if=lambda v: v is None,
        description="the driver's reaction to an in-vehicle warning (STOP, BRAKE, YIELD), s; 0 = the application "
                    "acts directly; null = the catalogue's REACTION_TIME_S (1 s)")
    # drivers without V2X (lastv2x.core.perception); left out of the JSON when unset (programs keep their bytes)
    sight_distance_m: float | None = Field(
        None, gt=0.0, le=1000.0, exclude_if=lambda v: v is None,
        description="signals acted on only within this distance of the stop bar; null = unlimited (an equipped "
                    "ego of a signal application given one watches the signal face besides its application)")
    perception_range_m: float | None = Field(
        None, gt=0.0, le=2000.0, exclude_if=lambda v: v is None,
        description="leaders perceived only within this bumper gap; null = unlimited")
    application: Application | None = Field(
        None, exclude_if=lambda v: v is None,
        description="an agent runs this reference application on its own information; null = none (the ego: "
                    "the program's application)")

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


def ego_group_plan(group_id: str, junction_id: str, plan: SignalPlan) -> SignalGroupPlan:
    """The spec's signal plan as the plan of a group on the ego's axis."""
    return SignalGroupPlan(id=group_id, junction_id=junction_id, cycle_s=plan.cycle_s, green_s=plan.green_s,
                           amber_s=plan.amber_s, all_red_s=plan.all_red_s, offset_s=plan.offset_s)


def cross_group_plan(group_id: str, junction_id: str, plan: SignalPlan) -> SignalGroupPlan:
    """The cross group of ``lastv2x.core.timeline`` as a plan of its own: green on
    [G+A+R, C-A-R), amber on [C-A-R, C-R), red otherwise (ego-group u coordinates)."""
    g, a, r, c = plan.green_s, plan.amber_s, plan.all_red_s, plan.cycle_s
    return SignalGroupPlan(id=group_id, junction_id=junction_id, cycle_s=c, green_s=max(0.0, c - g - 2 * a - 2 * r),
                           amber_s=a, all_red_s=r, offset_s=(plan.offset_s - (g + a + r)) % c)


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


def backhaul_problems(v2x: V2X, rsu_ids: list[str]) -> list[str]:
    """Backhaul links naming an RSU the program does not place (one rule: the program's validator and
    the builders' FAILED_PRECONDITION)."""
    bh = v2x.backhaul
    if bh is None:
        return []
    have = set(rsu_ids)
    out = [f"v2x.backhaul.links[{i}]: RSU {r!r} is not placed (placed: {sorted(have) or 'none'})"
           for i, link in enumerate(bh.links) for r in (link.rsu_a, link.rsu_b) if r not in have]
    if not bh.links and len(have) < 2:
        out.append(f"v2x.backhaul: joins every RSU pair, but {len(have)} RSU is placed")
    return out


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
        if self.ego.application is not None:
            raise ValueError("ego.application: the ego runs the program's application; leave it unset")
        for a in self.agents:
            if a.application is not None and not a.equipped:
                raise ValueError(f"{a.id}: an unequipped agent runs no application")
        groups = {g.id for g in self.signal_groups}
        if len(groups) != len(self.signal_groups):
            raise ValueError("signal group ids must be unique")
        for v in self.vehicles:
            for c in v.route.crossings:
                if c.signal_group_id is not None and c.signal_group_id not in groups:
                    raise ValueError(f"{v.id}: unknown signal group {c.signal_group_id!r}")
        senders = set(ids) | {r.id for r in self.rsus}
        for i, f in enumerate(self.faults):
            if f.fault.operator in (FaultOperator.GHOST_SENDER, FaultOperator.SPOOFED_RSU):
                # a forged vehicle or roadside unit: an id nobody of the scene has
                for s in (f.sender_id, *f.sender_ids):
                    if s is not None and s in senders:
                        raise ValueError(f"faults[{i}]: the forged sender {s!r} is a real vehicle or RSU")
                continue
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


__all__ = [
    "PROGRAM_VERSION", "DEFAULT_DT_S", "Crossing", "GroundingRecord", "ProgramVehicle", "ResolvedFault", "Route",
    "RouteSegment", "Rsu", "ScenarioProgram", "SignalGroupPlan", "VehicleRole", "cross_group_plan",
    "ego_group_plan", "program_from_json",
    "program_json_schema", "program_to_json",
]


def program_sha256(program: ScenarioProgram) -> str:
    """SHA-256 of the program's JSON text: the identity of what the simulator runs (outcomes carry it;
    search keys its ledger and witnesses on it)."""
    return hashlib.sha256(program.model_dump_json().encode()).hexdigest()

