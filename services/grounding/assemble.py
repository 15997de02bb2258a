"""Program assembly (grounding step 4): a validated selection laid on the map as a ScenarioProgram.

Route polylines from the RoadMap route API (upstream run-up, approach lane,
junction movement, exit lanes); start positions so conflict agents reach the
conflict point ``arrival_offset_s`` after the ego (constant speeds, as the
verifier's closed form) and leads start ``gap_m`` ahead; background traffic when
the map is busy (equipage by ``lastv2x.core.rng.equipage``); RSUs (one at the
junction, or a chain along the corridor; RSU_SELECTION substream); fixed-time
plans for every signal group (the ego's axis follows ``spec.signal``, the crossing
axis the cross group of ``lastv2x.core.timeline``); fault references resolved to
ids (``lastv2x.core.faults``); and a GroundingRecord saying what was retrieved,
the scores and why it was chosen. A placement that does not fit raises
``FailedPrecondition(constraint, alternative)``.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lastv2x.core.catalogue import APPLICATIONS, CONFLICT_WINDOW_S, AppKind
from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.faults import resolve_faults
from lastv2x.core.program import (
    DEFAULT_DT_S,
    DEFAULT_VEHICLE_LENGTH_M,
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
from lastv2x.core.rng import Substream, counter_uniform, equipage, stable_hash64, substream
from lastv2x.core.spec import (
    AHEAD_ROLES,
    AgentRole,
    Coordination,
    Maneuver,
    RsuPlacement,
    RsuSite,
    ScenarioSpec,
)
from services.grounding.catalogue import MapCatalogue
from services.grounding.entries import (
    OPPOSITE_MIN_RAD,
    PERPENDICULAR,
    ApproachInfo,
    JunctionInfo,
    MovementInfo,
    RsuSiteInfo,
    heading_gap_rad,
)
from services.grounding.extract import walk_back, walk_forward
from services.grounding.index import CandidateSet, RetrievalIndex
from services.grounding.selection import EGO, Selection, movement_options
from services.simulator.maps import RoadMap

L = DEFAULT_VEHICLE_LENGTH_M


@dataclass(frozen=True)
class GroundOptions:
    """How grounding retrieves and places (distances in m, speeds in m/s, the step in s)."""

    k_junctions: int = 3  # junctions whose approaches the planner sees
    exit_m: float = 80.0  # exit road after the junction (plus the largest lead gap)
    corridor_route_max_m: float = 1500.0  # how far a corridor ego route continues
    background_spacing_m: float = 28.0
    background_speed_mps: float = 12.0
    background_back_m: float = 40.0  # a spec background agent's distance before its stop bar
    margin_m: float = 10.0  # extra road kept behind the farthest vehicle
    min_clearance_m: float = 6.0  # background vehicles closer than this to another vehicle at t = 0 are dropped
    dt_s: float = DEFAULT_DT_S


@dataclass(frozen=True)
class _Built:
    route: Route
    ids: tuple[str, ...]
    bar_s: float
    conflict_s: float | None
    move_s: float  # arc length where the junction movement starts


# laid routes remembered (an LRU over every map): a campaign's candidates differ in their faults and a few numbers,
# and lay the same routes again (the ego's, its agents', eight background vehicles'); a route is a pure function of
# the map and its arguments, and immutable
_ROUTES: OrderedDict[tuple[Any, ...], _Built] = OrderedDict()
_ROUTES_KEPT = 2048
_ROUTES_LOCK = threading.Lock()


def _route(rm: RoadMap, back_ids: Sequence[str], movement: MovementInfo, fwd_need_m: float, *,
           junction_id: str, signal_group: str | None, conflict: tuple[str, float, tuple[float, float]] | None,
           turn: str, avoid: Sequence[str] = ()) -> _Built:
    """The route from ``back_ids`` through ``movement`` and on for ``fwd_need_m`` (see :func:`_lay_route`),
    remembered."""
    key = (rm, tuple(back_ids), movement, float(fwd_need_m), junction_id, signal_group,
           None if conflict is None else (conflict[0], float(conflict[1]), tuple(float(v) for v in conflict[2])),
           turn, tuple(avoid))
    with _ROUTES_LOCK:
        built = _ROUTES.get(key)
        if built is not None:
            _ROUTES.move_to_end(key)
            return built
    built = _lay_route(rm, back_ids, movement, fwd_need_m, junction_id=junction_id, signal_group=signal_group,
                       conflict=conflict, turn=turn, avoid=avoid)
    with _ROUTES_LOCK:
        _ROUTES[key] = built
        if len(_ROUTES) > _ROUTES_KEPT:
            _ROUTES.popitem(last=False)
    return built


def _lay_route(rm: RoadMap, back_ids: Sequence[str], movement: MovementInfo, fwd_need_m: float, *,
               junction_id: str, signal_group: str | None, conflict: tuple[str, float, tuple[float, float]] | None,
               turn: str, avoid: Sequence[str] = ()) -> _Built:
    lane = rm.lanes[movement.from_lane_id]
    exit_lane = rm.lanes[movement.to_lane_id]
    fwd, _ = walk_forward(rm, exit_lane.id, max(fwd_need_m - exit_lane.length_m, 0.0),
                          avoid=(*back_ids, lane.id, movement.id, *avoid))
    ids = (*back_ids, lane.id, movement.id, exit_lane.id, *fwd)
    r = rm.route(ids)
    offsets = list(r.offsets_m)
    i_lane = len(back_ids)
    bar_s = offsets[i_lane] + lane.length_m
    conflict_s = None
    conflict_xy = None
    if conflict is not None:
        conflict_s = offsets[i_lane + 1] + conflict[1]
        conflict_xy = (float(conflict[2][0]), float(conflict[2][1]))
    total = float(r.length_m)
    segs = []
    for k, eid in enumerate(ids):
        end = offsets[k + 1] if k + 1 < len(ids) else total
        segs.append(RouteSegment(id=eid, start_s_m=round(offsets[k], 9), length_m=max(round(end - offsets[k], 9), 1e-6)))
    bar = lane.polyline[-1]
    crossing = Crossing(junction_id=junction_id, approach_lane_id=lane.id, stop_bar_s_m=round(bar_s, 9),
                        stop_bar_xy_m=(float(bar[0]), float(bar[1])), signal_group_id=signal_group,
                        conflict_s_m=None if conflict_s is None else round(conflict_s, 9), conflict_xy_m=conflict_xy,
                        turn=Maneuver(turn) if turn in ("straight", "left", "right") else Maneuver.STRAIGHT)
    pts = tuple((float(x), float(y)) for x, y in r.polyline)
    later = _downstream_crossings(rm, ids, offsets, i_lane + 3, junction_id)
    return _Built(Route(points_xy_m=pts, segments=tuple(segs), crossings=(crossing, *later),
                        turn=crossing.turn), ids, bar_s, conflict_s, offsets[i_lane + 1])


def _downstream_crossings(rm: RoadMap, ids: Sequence[str], offsets: Sequence[float], first: int,
                          scenario_junction: str) -> list[Crossing]:
    """Every signalized junction the route crosses after the scenario junction (a whole corridor):
    its crossing (approach lane, stop bar, the map's signal group of the movement taken; the
    assembler adds that junction's plans). Unsignalized junctions further on are not listed (the
    route's vehicles keep their car-following there, as before)."""
    out: list[Crossing] = []
    for k in range(max(first, 1), len(ids)):
        m = rm.movements.get(ids[k])
        if m is None or m.junction_id == scenario_junction or not rm.junctions[m.junction_id].signalized:
            continue
        if m.signal_group_id is None or ids[k - 1] not in rm.lanes:
            continue
        lane = rm.lanes[ids[k - 1]]
        bar = lane.polyline[-1]
        turn = m.turn.value if m.turn.value in ("straight", "left", "right") else "straight"
        out.append(Crossing(junction_id=m.junction_id, approach_lane_id=lane.id,
                            stop_bar_s_m=round(offsets[k - 1] + lane.length_m, 9),
                            stop_bar_xy_m=(float(bar[0]), float(bar[1])), signal_group_id=m.signal_group_id,
                            turn=Maneuver(turn)))
    return out


def _conflict_on(rm: RoadMap, j: JunctionInfo, mine: str, other: str) -> tuple[str, float, tuple[float, float]] | None:
    """(kind, arc length along my movement, xy) of the conflict point between two movements."""
    for c in rm.junctions[j.id].conflicts:
        if c.movement_a == mine and c.movement_b == other:
            return c.kind, float(c.s_a_m), c.xy
        if c.movement_b == mine and c.movement_a == other:
            return c.kind, float(c.s_b_m), c.xy
    return None


# ── signal groups ───────────────────────────────────────────────────────────────
def _group_axes(rm: RoadMap, jid: str, heading: float, ego_group: str | None) -> dict[str, str]:
    """group id -> 'ego' (the ego's axis: its approach and the opposite one) or 'cross'."""
    j = rm.junctions[jid]
    approach_heading = {a.id: a.heading_rad for a in j.approaches}
    out = {}
    for gid in j.signal_group_ids:
        g = rm.signal_groups[gid]
        votes = [0, 0]
        for mid in g.movement_ids:
            gap = heading_gap_rad(approach_heading[rm.movements[mid].approach_id], heading)
            votes[0 if (gap < PERPENDICULAR[0] or gap > PERPENDICULAR[1]) else 1] += 1
        out[gid] = "ego" if gid == ego_group or votes[0] >= votes[1] else "cross"
    return out


# ── corridor coordination ─────────────────────────────────────────────────────────────
def coordinate_plans(groups: dict[str, SignalGroupPlan], roles_of: dict[str, str], spec: ScenarioSpec,
                     scenario_junction: str, crossings: Sequence[Crossing], bar_s_m: float, ego_speed_mps: float,
                     notes: list[str]) -> None:
    """Re-time the plans of the junctions the ego route crosses after the scenario junction, in place, by
    ``spec.signal.coordination``: ``same`` leaves the scenario junction's plan everywhere; ``green_wave``
    starts each junction's green ``d / v`` later, ``d`` its stop bar's route distance past the scenario
    junction's and ``v`` ``signal.progression_speed_mps`` (the ego's speed when unset); ``random`` draws each
    junction's offset uniformly over the cycle, keyed by the junction id under the seed's SIGNAL_OFFSETS
    substream (one junction's draw never depends on which others exist). Cross groups follow their
    junction's plan (``cross_group_plan``)."""
    plan = spec.signal
    if plan.coordination is Coordination.SAME:
        return
    v = plan.progression_speed_mps or ego_speed_mps
    base = int(substream(spec.seed, Substream.SIGNAL_OFFSETS).integers(0, 2**63 - 1))
    done = []
    for c in crossings:
        if c.junction_id == scenario_junction or c.junction_id in done:
            continue
        if plan.coordination is Coordination.GREEN_WAVE:
            offset = (plan.offset_s - (c.stop_bar_s_m - bar_s_m) / v) % plan.cycle_s
        else:
            u = float(counter_uniform(base, np.array([stable_hash64(c.junction_id)], np.uint64))[0])
            offset = u * plan.cycle_s
        local = plan.model_copy(update={"offset_s": round(offset, 6)})
        for gid, g in list(groups.items()):
            if g.junction_id == c.junction_id:
                groups[gid] = (ego_group_plan if roles_of[gid] == "ego" else cross_group_plan)(gid, c.junction_id,
                                                                                                local)
        done.append(c.junction_id)
    if done:
        what = (f"a green wave at {v:g} m/s" if plan.coordination is Coordination.GREEN_WAVE
                else "random offsets (seeded)")
        notes.append(f"signals of {', '.join(done)} coordinated as {what}")


# ── the assembler ─────────────────────────────────────────────────────────────
@dataclass
class _Placed:
    vehicle: ProgramVehicle
    approach_id: str
    back_m: float  # centre distance before its stop bar at t = 0 (negative = past it)


@dataclass
class ProgramAssembler:
    """Lays validated selections on the catalogue's maps (the retrieval index supplies the
    knowledge base and its version for the GroundingRecord)."""

    catalogue: MapCatalogue
    index: RetrievalIndex
    options: GroundOptions

    def assemble(self, spec: ScenarioSpec, cands: CandidateSet, sel: Selection, backend: str,
                 plan_notes: list[str]) -> ScenarioProgram:
        opt = self.options
        j = sel.junction
        rm = self.catalogue.road_map(j.map_name)
        entry = self.catalogue.entry(j.map_name)
        app = APPLICATIONS[spec.application]
        ego_pick = sel.picks[EGO]
        ego_move = ego_pick.movement
        v_e = spec.ego.speed_mps
        conflict_agent = next((a.id for a in spec.agents if a.id in sel.conflicts), None)
        notes: list[str] = list(plan_notes) + list(sel.notes)

        # groups and their plans
        heading = ego_pick.approach.heading_rad
        signalized = j.signalized
        groups: dict[str, SignalGroupPlan] = {}
        roles_of: dict[str, str] = {}
        rsu_junctions = [j.id]
        if spec.v2x.rsu_placement is RsuPlacement.CHAIN or (spec.v2x.spat_relay and ego_pick.approach.chain_ahead):
            rsu_junctions += list(ego_pick.approach.chain_ahead)
        plan_junctions = [x for x in dict.fromkeys(rsu_junctions) if rm.junctions[x].signalized]
        for jid in plan_junctions:
            h = heading
            if jid != j.id:  # the ego route's heading where it meets that junction: its approach of the chain
                h = _chain_heading(rm, jid, heading)
            axes = _group_axes(rm, jid, h, ego_move.signal_group_id if jid == j.id else None)
            for gid in sorted(axes, key=_natural):
                plan = ego_group_plan if axes[gid] == "ego" else cross_group_plan
                groups[gid] = plan(gid, jid, spec.signal)
                roles_of[gid] = axes[gid]
        ego_group = ego_move.signal_group_id if signalized else None
        if ego_group is not None:
            groups[ego_group] = ego_group_plan(ego_group, j.id, spec.signal)
            roles_of[ego_group] = "ego"

        def group_of(m: MovementInfo) -> str | None:
            return m.signal_group_id if signalized and m.signal_group_id in groups else None

        # the ego route: run-up for the ego (and traffic behind it), exit for leads
        gaps = [a.gap_m for a in spec.agents if a.role in AHEAD_ROLES]
        followers = [a.gap_m for a in spec.agents if a.role is AgentRole.FOLLOWER]
        behind = max(followers, default=0.0) + (2 * opt.background_spacing_m if spec.map.busy else 0.0)
        ego_back = spec.ego.start_distance_m + L / 2
        fwd_need = opt.exit_m + max(gaps, default=0.0)
        traversal = spec.map.junctions_ahead > 0 or spec.map.whole_corridor
        corridor = bool(ego_pick.approach.chain_ahead) and (
            spec.v2x.rsu_placement is RsuPlacement.CHAIN or spec.v2x.spat_relay or "corridor" in j.kinds
            and spec.map.junction_kind.value == "corridor" or traversal)
        if corridor:
            # a traversal asked for crosses its junctions whatever the duration; else as far as the ego drives
            fwd_need = max(fwd_need, opt.corridor_route_max_m if traversal
                           else min(v_e * spec.duration_s, opt.corridor_route_max_m))
        lane = rm.lanes[ego_move.from_lane_id]
        back_need = ego_back + L / 2 + behind + opt.margin_m - lane.length_m
        ego_back_ids, got = walk_back(rm, lane.id, max(back_need, 0.0))
        if lane.length_m + got + 1e-6 < ego_back + L / 2:
            avail = lane.length_m + got - L
            raise FailedPrecondition(
                f"run_up: the ego lane {lane.id} of {j.map_name} {j.id} offers {lane.length_m + got:.0f} m before "
                f"its stop bar; ego.start_distance_m = {spec.ego.start_distance_m:g} needs more",
                f"ego.start_distance_m <= {max(math.floor(avail), 10)}")
        ego_conflict = None
        if conflict_agent is not None:
            ego_conflict = _conflict_on(rm, j, ego_move.id, sel.picks[conflict_agent].movement.id)
        ego_built = _route(rm, ego_back_ids, ego_move, fwd_need, junction_id=j.id, signal_group=group_of(ego_move),
                           conflict=ego_conflict, turn=ego_move.turn)
        ego_start = ego_built.bar_s - ego_back
        ego = ProgramVehicle(id=EGO, role=VehicleRole.EGO, route=ego_built.route, start_s_m=round(ego_start, 9),
                             initial_speed_mps=v_e, desired_speed_mps=v_e, profile=spec.ego.profile, equipped=True)
        placed: list[_Placed] = [_Placed(ego, ego_pick.approach.id, ego_back)]
        arrivals: dict[str, dict[str, float]] = {}

        for a in spec.agents:
            pick = sel.picks[a.id]
            m = pick.movement
            kw: dict[str, Any] = {"profile": a.profile, "equipped": a.equipped, "behaviour": a.behaviour}
            if a.role is AgentRole.FOLLOWER:  # behind the ego on the ego's own route
                built = ego_built
                start = ego_start - a.gap_m
                if start < L / 2:
                    raise FailedPrecondition(f"roles: {a.id} at gap_m = {a.gap_m:g} behind the ego lies before the "
                                             "mapped road", f"gap_m <= {max(math.floor(ego_start - L / 2), 5)}")
                back = built.bar_s - start
            elif a.role in AHEAD_ROLES:
                built = _route(rm, ego_back_ids, m, fwd_need, junction_id=j.id, signal_group=group_of(m),
                               conflict=None, turn=m.turn)
                start = ego_start + a.gap_m
                if start > built.route.length_m - L:
                    raise FailedPrecondition(f"roles: {a.id} at gap_m = {a.gap_m:g} lies beyond the mapped road",
                                             f"gap_m <= {math.floor(built.route.length_m - L - ego_start)}")
                back = built.bar_s - start
            elif a.role in (AgentRole.CROSS, AgentRole.OPPOSING) and a.id in sel.conflicts:
                conflict = _conflict_on(rm, j, m.id, ego_move.id)
                if conflict is None:
                    raise FailedPrecondition(f"roles: {a.id} has no conflict point with the ego", "another approach")
                own = _conflict_on(rm, j, ego_move.id, m.id)
                assert own is not None
                t_e_i = (ego_built.move_s + own[1] - ego_start) / v_e
                t_a = t_e_i + a.arrival_offset_s
                if t_a <= 0.0:
                    raise FailedPrecondition(
                        f"timing: agent {a.id} would have to reach the conflict point {-t_a:.2f} s before t = 0",
                        f"arrival_offset_s >= {-t_e_i + 1.0:.2f}")
                lane_a = rm.lanes[m.from_lane_id]
                dist = a.speed_mps * t_a  # centre distance to cover until the conflict point
                need_before_bar = dist - conflict[1] + L / 2 + opt.margin_m
                back_ids, got = walk_back(rm, lane_a.id, max(need_before_bar - lane_a.length_m, 0.0),
                                          avoid=ego_built.ids)
                built = _route(rm, back_ids, m, opt.exit_m, junction_id=j.id, signal_group=group_of(m),
                               conflict=conflict, turn=m.turn)
                assert built.conflict_s is not None
                start = built.conflict_s - dist
                if start < L / 2:
                    most = (built.conflict_s - L / 2) / a.speed_mps - t_e_i
                    raise FailedPrecondition(
                        f"run_up: agent {a.id} needs {dist:.0f} m before the conflict point on {pick.candidate_id}; "
                        f"the road offers {built.conflict_s:.0f} m",
                        f"arrival_offset_s <= {math.floor(most * 100) / 100:.2f} or speed_mps <= "
                        f"{max(math.floor((built.conflict_s - L / 2) / t_a * 10) / 10, 0.1):.1f}")
                kw["arrive_conflict_at_s"] = round(t_a, 9)
                arrivals[a.id] = {"ego_s": round(t_e_i, 6), "agent_s": round(t_a, 6),
                                  "offset_s": a.arrival_offset_s}
                if abs(a.arrival_offset_s) > CONFLICT_WINDOW_S:
                    notes.append(f"{a.id}: arrival offset {a.arrival_offset_s:g} s lies outside the "
                                 f"{CONFLICT_WINDOW_S:g} s arrival-overlap window (no interaction expected)")
                back = built.bar_s - start
            else:  # background agents of the spec (and cross/opposing without a conflict point)
                back_ids, got = walk_back(rm, rm.lanes[m.from_lane_id].id,
                                          max(opt.background_back_m + L - rm.lanes[m.from_lane_id].length_m, 0.0),
                                          avoid=ego_built.ids)
                built = _route(rm, back_ids, m, opt.exit_m, junction_id=j.id, signal_group=group_of(m),
                               conflict=None, turn=m.turn)
                back = min(opt.background_back_m, built.bar_s - L / 2)
                start = built.bar_s - back
            vehicle = ProgramVehicle(id=a.id, role=VehicleRole(a.role.value), route=built.route,
                                     start_s_m=round(start, 9), initial_speed_mps=a.speed_mps,
                                     desired_speed_mps=a.speed_mps, **kw)
            placed.append(_Placed(vehicle, pick.approach.id, back))

        background = self._background(spec, rm, j, sel, placed, ego_built, ego_back_ids, group_of, notes)

        # whole routes: every signalized junction a route crosses after the scenario junction gets its
        # plans (the crossing vehicle's group on the ego axis of that approach); with a chain of RSUs,
        # its RSU too
        for c in (c for v in [p.vehicle for p in placed] + background for c in v.route.crossings[1:]):
            if any(g.junction_id == c.junction_id for g in groups.values()):
                continue
            lane = rm.lanes[c.approach_lane_id]
            jid = c.junction_id
            axes = _group_axes(rm, jid, float(lane.heading_at(lane.length_m)), c.signal_group_id)
            for g in sorted(axes, key=_natural):
                groups[g] = (ego_group_plan if axes[g] == "ego" else cross_group_plan)(g, jid, spec.signal)
                roles_of[g] = axes[g]
        coordinate_plans(groups, roles_of, spec, j.id, ego_built.route.crossings, ego_built.bar_s, v_e, notes)
        if spec.v2x.rsu_placement is RsuPlacement.CHAIN:
            rsu_junctions += [c.junction_id for c in ego_built.route.crossings[1:]]
        crossed = [c.junction_id for c in ego_built.route.crossings]
        if len(crossed) > 1:
            notes.append(f"the ego route crosses {len(crossed)} signalized junctions: {', '.join(crossed)}")
        if traversal:
            want = (len(ego_pick.approach.chain_ahead) if spec.map.whole_corridor else spec.map.junctions_ahead) + 1
            if len(crossed) < want:
                raise FailedPrecondition(
                    f"map.junctions_ahead: the ego route from {j.map_name} {j.id} crosses {len(crossed)} signalized "
                    f"junctions, {want} asked for", f"map.junctions_ahead <= {max(len(crossed) - 1, 0)}")
            last = ego_built.route.crossings[want - 1].stop_bar_s_m - ego_start
            if last > v_e * spec.duration_s:
                notes.append(f"at {v_e:g} m/s the ego reaches the stop bar of junction {want} of the traversal "
                             f"({last:.0f} m) after duration_s = {spec.duration_s:g} s: lengthen duration_s to "
                             f">= {math.ceil(last / v_e)} s to cross them all")

        # RSUs
        placement = spec.v2x.rsu_placement
        rsus = self._rsus(spec, rm, j, rsu_junctions if placement is RsuPlacement.CHAIN else
                          [j.id] if placement is RsuPlacement.SINGLE else [j.id, *crossed], ego_pick.approach)
        # cross group for faults: the cross agent's group, else the first cross-axis group at the junction
        cross_group = None
        if signalized:
            for a in spec.agents:
                if a.role is AgentRole.CROSS:
                    agent_group = group_of(sel.picks[a.id].movement)
                    if agent_group is not None and agent_group != ego_group:
                        cross_group = agent_group
                        break
            if cross_group is None:
                cross_group = next((g for g in sorted(groups, key=_natural)
                                    if groups[g].junction_id == j.id and roles_of[g] == "cross"), None)
        vehicles = [p.vehicle for p in placed] + background
        faults = resolve_faults(spec, groups=list(groups), ego_group=ego_group, cross_group=cross_group,
                                rsu_ids=[r.id for r in rsus], vehicle_ids={v.id for v in vehicles})
        group_list = tuple(groups[g] for g in sorted(groups, key=lambda g: (groups[g].junction_id != j.id,
                                                                               _natural(g))))
        record = self._record(spec, cands, sel, backend, notes, arrivals, roles_of, rsus, vehicles, entry,
                              cross_group, app.kind)
        rsu_of = {r.junction_id: r.id for r in rsus}
        record = record.model_copy(update={"details": {**record.details, "ego_crossings": [  # the whole route
            {"junction_id": c.junction_id, "signal_group_id": c.signal_group_id, "stop_bar_s_m": c.stop_bar_s_m,
             "stop_bar_xy_m": list(c.stop_bar_xy_m), "rsu_id": rsu_of.get(c.junction_id)}
            for c in ego_built.route.crossings]}})
        return ScenarioProgram(
            application=spec.application, seed=spec.seed, duration_s=spec.duration_s, dt_s=opt.dt_s,
            map_name=j.map_name, map_sha256=entry.content_sha256, ego=ego, agents=tuple(vehicles[1:]),
            signal_groups=group_list, rsus=rsus, v2x=spec.v2x, faults=faults, spec=spec, grounding=record)

    def _background(self, spec: ScenarioSpec, rm: RoadMap, j: JunctionInfo, sel: Selection, placed: list[_Placed],
                    ego_built: _Built, ego_back_ids: Sequence[str], group_of: Callable[[MovementInfo], str | None],
                    notes: list[str]) -> list[ProgramVehicle]:
        if not spec.map.busy:
            return []
        opt = self.options
        ego_app = sel.picks[EGO].approach
        approaches = [ego_app]
        for a in j.approaches:
            if a.id == ego_app.id:
                continue
            gap = heading_gap_rad(a.heading_rad, ego_app.heading_rad)
            if gap >= OPPOSITE_MIN_RAD or j.signalized:  # crossing traffic only where signals separate it
                approaches.append(a)
        plans = []
        for a in approaches:
            moves = movement_options(j, a)
            m: MovementInfo | None
            if a.id == ego_app.id:
                ego_lane_id = sel.picks[EGO].lane_id
                straight = [x for x in moves if x.from_lane_id == ego_lane_id and x.turn == "straight"]
                m = straight[0] if straight else sel.picks[EGO].movement
            else:
                straight = [x for x in moves if x.turn == "straight"]
                m = straight[0] if straight else (moves[0] if moves else None)
            if m is None:
                continue
            backs = [p.back_m for p in placed if p.approach_id == a.id]
            base = max(backs, default=0.0) + opt.background_spacing_m
            for k in range(2):
                plans.append((a, m, base + k * opt.background_spacing_m))
        ids = [f"bg{k}" for k in range(len(plans))]
        equipped = equipage(spec.seed, ids, spec.v2x.penetration)
        rng_bp = substream(spec.seed, Substream.BLUEPRINT)
        out: list[ProgramVehicle] = []
        # where every vehicle placed so far stands at t = 0 (each computed once)
        taken = [_route_position(p.vehicle.route, p.vehicle.start_s_m) for p in placed]
        for vid, (a, m, back) in zip(ids, plans, strict=True):
            length = float(np.round(rng_bp.uniform(4.2, 4.9), 3))
            lane = rm.lanes[m.from_lane_id]
            if a.id == ego_app.id:
                back_ids = list(ego_back_ids)
            else:
                back_ids, _ = walk_back(rm, lane.id, max(back + length + opt.margin_m - lane.length_m, 0.0),
                                        avoid=ego_built.ids)
            built = _route(rm, back_ids, m, opt.exit_m, junction_id=j.id, signal_group=group_of(m), conflict=None,
                           turn=m.turn)
            start = built.bar_s - back
            if start < length / 2:
                notes.append(f"{vid}: no room {back:.0f} m before the stop bar of {a.id}; dropped")
                continue
            pos = _route_position(built.route, start)
            if any(np.hypot(*(pos - other)) < opt.min_clearance_m for other in taken):
                notes.append(f"{vid}: too close to another vehicle at t = 0; dropped")
                continue
            speed = min(opt.background_speed_mps, lane.speed_limit_mps)
            v = ProgramVehicle(id=vid, role=VehicleRole.BACKGROUND, route=built.route, start_s_m=round(start, 9),
                               initial_speed_mps=speed, desired_speed_mps=speed, equipped=equipped[vid],
                               length_m=length)
            taken.append(pos)
            out.append(v)
        return out

    def _rsus(self, spec: ScenarioSpec, rm: RoadMap, j: JunctionInfo, junctions: Sequence[str],
              ego_app: ApproachInfo) -> tuple[Rsu, ...]:
        if spec.v2x.rsu_placement is RsuPlacement.NONE:
            return ()
        entry = self.catalogue.entry(j.map_name)
        chosen = list(dict.fromkeys(junctions))
        out = []
        for k, jid in enumerate(chosen):
            info = entry.junction(jid)
            sites = list(info.rsu_sites)
            if not sites:
                continue
            heading = ego_app.heading_rad if jid == j.id else _chain_heading(rm, jid, ego_app.heading_rad)
            sites = _sites_on(spec.v2x.rsu_site, sites, info.centre, heading, f"{j.map_name} {jid}")
            best = max(s.los_approaches for s in sites)
            pool = sorted((s for s in sites if s.los_approaches == best), key=lambda s: _natural(s.id))
            pick = pool[int(substream(spec.seed, Substream.RSU_SELECTION, k).integers(len(pool)))]
            height = pick.height_m if spec.v2x.rsu_height_m is None else spec.v2x.rsu_height_m
            out.append(Rsu(id=f"rsu{k}", xy_m=(float(pick.xy[0]), float(pick.xy[1])), height_m=height,
                           junction_id=jid))
        return tuple(out)

    def _record(self, spec: ScenarioSpec, cands: CandidateSet, sel: Selection, backend: str, notes: list[str],
                arrivals: dict[str, dict[str, float]], roles_of: dict[str, str], rsus: Sequence[Rsu],
                vehicles: Sequence[ProgramVehicle], entry: Any, cross_group: str | None,
                kind: AppKind) -> GroundingRecord:
        assert self.index is not None
        j = sel.junction
        kb = self.index.knowledge
        knowledge = [f"app:{spec.application.value}"] + sorted({f"fault:{f.operator.value}" for f in spec.faults})
        profiles = {}
        for v in vehicles:
            p = kb.profiles[v.profile.value]
            profiles[v.id] = {"profile": p.id, "time_gap_s": p.time_gap_s, "min_gap_m": p.min_gap_m,
                              "accel_max_mps2": p.accel_max_mps2, "decel_comfort_mps2": p.decel_comfort_mps2,
                              "decel_emergency_mps2": p.decel_emergency_mps2, "reaction_time_s": p.reaction_time_s}
        plan = {aid: {"role": p.role, "candidate_id": p.candidate_id, "approach_id": p.approach.id,
                      "compass": p.approach.compass, "lane_id": p.lane_id, "movement_id": p.movement.id,
                      "turn": p.movement.turn, "signal_group_id": p.movement.signal_group_id}
                for aid, p in sel.picks.items()}
        conflicts = {aid: {"ego_movement": c[0], "agent_movement": c[1], "kind": c[2], "xy": list(c[3])}
                     for aid, c in sorted(sel.conflicts.items())}
        req = cands.requirements
        why = (f"{j.map_name} {j.id} ({', '.join(j.kinds) or 'junction'}, {j.approach_count} approaches, "
               f"{'signalized' if j.signalized else 'unsignalized'}) scored "
               f"{next((s for m, jid, s in cands.junctions if (m, jid) == (j.map_name, j.id)), 0.0):.3f} "
               f"(rank {[(m, jid) for m, jid, _ in cands.junctions].index((j.map_name, j.id)) + 1}); "
               f"ego on {sel.picks[EGO].approach.id} from the {sel.picks[EGO].approach.compass} "
               f"({sel.picks[EGO].movement.turn}, {sel.picks[EGO].movement.signal_group_id or 'no signal group'})")
        lines = [f"retrieved {len(cands.hits)} approaches at {len(cands.junctions)} junction(s) of "
                 f"{cands.considered} that passed the filters", f"chose {why}", f"planner: {backend}"]
        lines += [f"{aid} reaches the conflict point at {a['agent_s']:.2f} s, the ego at {a['ego_s']:.2f} s"
                  for aid, a in sorted(arrivals.items())]
        lines += notes
        details = {
            "catalogue_version": self.catalogue.version, "index_version": self.index.version,
            "chosen_junction_id": j.id, "map": j.map_name, "map_sha256": entry.content_sha256,
            "planner_backend": backend, "query": cands.query[:2000],
            "filters": {"town": req.town, "junction_kind": req.junction_kind.value, "signalized": req.signalized,
                        "signal_needed": req.signal_needed, "min_approaches": req.min_approaches,
                        "ego_turn": req.ego_turn, "corridor": req.corridor, "ego_run_up_m": round(req.ego_run_up_m, 3),
                        "rejected": dict(sorted(cands.rejected.items())), "passed_junctions": cands.considered},
            "hits": [h.to_dict() for h in cands.hits],
            "junctions": [{"map": m, "junction_id": jid, "score": s} for m, jid, s in cands.junctions],
            "plan": plan, "plan_score": sel.score, "conflicts": conflicts, "arrivals": dict(sorted(arrivals.items())),
            "signal_plans": dict(sorted(roles_of.items(), key=lambda kv: _natural(kv[0]))),
            "cross_group_id": cross_group, "app_kind": kind.value,
            "rsus": [{"id": r.id, "junction_id": r.junction_id, "xy_m": list(r.xy_m)} for r in rsus],
            "profiles": profiles, "knowledge": knowledge,
        }
        return GroundingRecord(builder="grounding", notes=tuple(lines), details=details)


def _route_position(route: Route, s: float) -> np.ndarray:
    """:func:`_position` on a route's points."""
    return _position(np.asarray(route.points_xy_m), s)


def _position(xy: np.ndarray, s: float) -> np.ndarray:
    seg = np.hypot(*np.diff(xy, axis=0).T)
    cum = np.concatenate(([0.0], np.cumsum(seg)))
    return np.array([np.interp(s, cum, xy[:, 0]), np.interp(s, cum, xy[:, 1])])


def _sites_on(side: RsuSite, sites: Sequence[RsuSiteInfo], centre: tuple[float, float], heading_rad: float,
              where: str) -> list[RsuSiteInfo]:
    """The RSU sites of a junction on ``side`` seen from an ego heading ``heading_rad`` (near: behind the junction
    centre along the heading, before the stop line; far: beyond it); every site for ``best_view``. None on that
    side is FAILED_PRECONDITION naming the side and the junction."""
    if side is RsuSite.BEST_VIEW:
        return list(sites)
    hx, hy = math.cos(heading_rad), math.sin(heading_rad)
    sign = -1.0 if side is RsuSite.NEAR_SIDE else 1.0
    kept = [s for s in sites if sign * ((s.xy[0] - centre[0]) * hx + (s.xy[1] - centre[1]) * hy) > 0.0]
    if not kept:
        raise FailedPrecondition(f"v2x.rsu_site: {where} has no RSU site on the {side.value.replace('_', ' ')}",
                                 "v2x.rsu_site best_view")
    return kept


def _chain_heading(rm: RoadMap, jid: str, heading: float) -> float:
    """Heading of the approach of ``jid`` closest to the ego's travel direction."""
    j = rm.junctions[jid]
    return min((a.heading_rad for a in j.approaches), key=lambda h: heading_gap_rad(h, heading))


def _natural(s: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))


__all__ = ["GroundOptions", "ProgramAssembler"]
