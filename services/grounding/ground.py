"""Grounding (LAST-V2X Module II): spec -> retrieved junction -> validated roles -> ScenarioProgram.

``ground(spec, catalogue, planner=None)``:

1. **retrieve** candidate approaches (hybrid: hard filters from the spec, then
   similarity; :meth:`services.grounding.index.RetrievalIndex.candidates_for`);
2. **plan**: the scene-planner role maps semantic roles (ego, cross, opposing,
   lead, relay, background) onto *candidate ids*; the default is the LLM service's
   scene-planner role in-process (``LlmRoles().plan_scene``; its offline ``solve`` +
   ``validate_plan`` when no LLM backend can be built), then a deterministic
   built-in planner. Only candidate ids are accepted; a plan that fails validation is recorded and the
   built-in planner decides instead;
3. **validate** lane assignments against the catalogue: the ego's movement exists
   on its approach (under a signal group when the application needs one); cross
   traffic comes from a perpendicular approach and its movement has a conflict
   point with the ego's; opposing traffic comes from the opposite approach and
   conflicts with the ego's turn; leads and relays drive on the ego's lane, ahead;
4. **assemble**: route polylines from the RoadMap route API (upstream run-up,
   approach lane, junction movement, exit lanes), start positions so conflict
   agents reach the conflict point ``arrival_offset_s`` after the ego (constant
   speeds, as the verifier's closed form) and leads start ``gap_m`` ahead, RSUs (one
   at the junction, or a chain along the corridor; RSU_SELECTION substream),
   fixed-time plans for every signal group (the ego's axis follows ``spec.signal``,
   the crossing axis the cross-group definition of ``lastv2x.core.timeline``), driver
   profiles and fault references resolved to ids, and a GroundingRecord saying
   what was retrieved, the scores and why it was chosen.

Infeasible specs raise ``FailedPrecondition(constraint, alternative)``. Same spec +
seed + catalogue -> byte-identical program JSON.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
)
from lastv2x.core.rng import Substream, equipage, substream
from lastv2x.core.spec import (
    AgentRole,
    Maneuver,
    RsuPlacement,
    ScenarioSpec,
    SignalPlan,
)
from services.grounding.catalogue import (
    OPPOSITE_MIN_RAD,
    PERPENDICULAR,
    ApproachInfo,
    JunctionInfo,
    MapCatalogue,
    MovementInfo,
    heading_gap_rad,
    walk_back,
    walk_forward,
)
from services.grounding.index import CandidateSet, Hit, RetrievalIndex, requirements, spec_query
from services.llm.planner import ApproachCandidate, MovementOption, solve, validate_plan
from services.simulator.maps import RoadMap

EGO = "ego"
L = DEFAULT_VEHICLE_LENGTH_M
MAX_RETRIES = 8  # junctions tried after the planner's choice fails placement
Planner = Callable[[ScenarioSpec, Sequence[Any]], Any]


@dataclass(frozen=True)
class GroundOptions:
    k_junctions: int = 3  # junctions whose approaches the planner sees
    exit_m: float = 80.0  # exit road after the junction (plus the largest lead gap)
    corridor_route_max_m: float = 1500.0  # how far a corridor ego route continues
    background_spacing_m: float = 28.0
    background_speed_mps: float = 12.0
    background_back_m: float = 40.0  # a spec background agent's distance before its stop bar
    margin_m: float = 10.0  # extra road kept behind the farthest vehicle
    min_clearance_m: float = 6.0  # background vehicles closer than this to another vehicle at t = 0 are dropped
    dt_s: float = DEFAULT_DT_S


class PlanRejected(Exception):
    def __init__(self, reasons: Sequence[str]):
        self.reasons = tuple(reasons)
        super().__init__("; ".join(self.reasons))


# ── candidates for the planner role ─────────────────────────────────────────────
def _lane_preference(lanes: Sequence[str], turn: str) -> list[str]:
    """Lanes ordered left to right in the catalogue; prefer the left lane for left turns and U-turns,
    the kerb (right-most) lane otherwise."""
    return list(lanes) if turn in ("left", "uturn") else list(reversed(lanes))


def _movement_options(j: JunctionInfo, a: ApproachInfo) -> list[MovementInfo]:
    out = []
    for turn in ("straight", "left", "right", "uturn"):
        moves = {m.from_lane_id: m for m in j.movements_of(a.id, turn)}
        out += [moves[lane] for lane in _lane_preference(a.lane_ids, turn) if lane in moves]
    return out


def planner_candidates(cands: CandidateSet, catalogue: MapCatalogue) -> tuple[ApproachCandidate, ...]:
    """The retrieved approaches as the scene planner's ``ApproachCandidate`` objects (services.llm.planner)."""
    out: list[ApproachCandidate] = []
    for h in cands.hits:
        j = catalogue.entry(h.meta["map"]).junction(h.meta["junction_id"])
        a = j.approach(h.meta["approach_id"])
        # an approach that offers the ego's turn but cannot host the ego (run-up, roles) is down-weighted,
        # so a planner ranking by score does not take it for the ego's
        could_be_ego = bool(j.movements_of(a.id, cands.requirements.ego_turn))
        score = round(h.score * (0.5 if could_be_ego and not h.meta.get("ego_eligible") else 1.0), 6)
        moves = _movement_options(j, a)
        lanes = tuple(reversed(a.lane_ids))  # kerb lane first
        out.append(ApproachCandidate(
            candidate_id=h.id, map_name=j.map_name, junction_id=j.id, approach_id=a.id,
            heading_rad=a.heading_rad, score=score, lanes=lanes,
            movements=tuple(MovementOption(m.turn, m.signal_group_id, m.id) for m in moves)))
    return tuple(out)


def default_planner() -> tuple[Planner, str]:
    """The LLM service's scene planner in-process: (callable, backend name).

    ``services.llm.roles.LlmRoles().plan_scene`` (the role with its attempt budget and plan
    validation, offline backend by default); when the configured LLM backend cannot be
    built, the offline ``solve`` + ``validate_plan`` of ``services.llm.planner``."""
    from services.llm.roles import LlmRoles  # deferred: the roles load every LLM backend

    try:
        return LlmRoles().plan_scene, "llm.plan_scene"
    except Exception:  # noqa: BLE001 - a misconfigured LLM backend must not take grounding down
        pass

    def offline(spec: ScenarioSpec, candidates: Sequence[Any]) -> Any:
        return validate_plan(solve(spec, candidates), spec, candidates, "offline")
    return offline, "llm.offline"


def _rows(out: Any) -> list[Any]:
    if hasattr(out, "assignments"):
        return list(out.assignments)
    if isinstance(out, Mapping) and "assignments" in out:
        return list(out["assignments"])
    if isinstance(out, Mapping):
        return [{"agent_id": k, "candidate_id": v} for k, v in out.items()]
    raise PlanRejected([f"planner returned {type(out).__name__}, expected assignments"])


def _get(row: Any, key: str) -> Any:
    return row.get(key) if isinstance(row, Mapping) else getattr(row, key, None)


def parse_assignments(out: Any, spec: ScenarioSpec, candidate_ids: set[str]) -> dict[str, tuple[str, str | None]]:
    """Planner output -> {agent id: (candidate id, preferred lane or None)}. Keys may be agent ids or
    role names (a role name assigns every agent of that role). Unknown candidate ids are rejected."""
    agents = {EGO: EGO, **{a.id: a.role.value for a in spec.agents}}
    got: dict[str, tuple[str, str | None]] = {}
    by_role: dict[str, tuple[str, str | None]] = {}
    problems = []
    for row in _rows(out):
        key = _get(row, "agent_id") or _get(row, "role")
        cid = _get(row, "candidate_id")
        lane = _get(row, "lane_id")
        if isinstance(cid, Mapping | tuple | list):
            cid, lane = (cid.get("candidate_id"), cid.get("lane_id")) if isinstance(cid, Mapping) else tuple(cid)[:2]
        if cid not in candidate_ids:
            problems.append(f"{key!r}: {cid!r} is not a retrieved candidate id")
            continue
        if key in agents:
            got[key] = (cid, lane)
        elif key in {r.value for r in AgentRole}:
            by_role[key] = (cid, lane)
        else:
            problems.append(f"{key!r} is neither the ego, an agent id nor a role")
    for aid, role in agents.items():
        if aid not in got and role in by_role:
            got[aid] = by_role[role]
        if aid not in got:
            problems.append(f"{aid!r} has no assignment")
    if problems:
        raise PlanRejected(problems)
    return got


# ── validation ──────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Pick:
    agent_id: str
    role: str
    candidate_id: str
    approach: ApproachInfo
    movement: MovementInfo
    lane_id: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Selection:
    junction: JunctionInfo
    picks: dict[str, Pick]
    conflicts: dict[str, tuple[str, str, str, tuple[float, float]]]  # agent -> (ego move, agent move, kind, xy)
    score: float
    notes: tuple[str, ...] = ()


def _turn(spec: ScenarioSpec, agent_id: str) -> str:
    if agent_id == EGO:
        return spec.ego.maneuver.value
    return next(a for a in spec.agents if a.id == agent_id).maneuver.value


def _role(spec: ScenarioSpec, agent_id: str) -> str:
    return EGO if agent_id == EGO else next(a for a in spec.agents if a.id == agent_id).role.value


def validate_selection(spec: ScenarioSpec, assignment: Mapping[str, tuple[str, str | None]], cands: CandidateSet,
                       catalogue: MapCatalogue) -> Selection:
    """Check an assignment against the junction's real movements and conflicts; choose lanes."""
    hits = {h.id: h for h in cands.hits}
    req = cands.requirements
    problems: list[str] = []
    ego_cid, ego_lane = assignment[EGO]
    eh = hits[ego_cid]
    j = catalogue.entry(eh.meta["map"]).junction(eh.meta["junction_id"])
    if ego_cid not in cands.eligible.get(f"{j.map_name}/{j.id}", ()):
        problems.append(f"ego: {ego_cid} cannot host the ego (filters: manoeuvre, signal, run-up, roles)")
    ego_app = j.approach(eh.meta["approach_id"])
    turn = spec.ego.maneuver.value
    ego_moves = [m for m in j.movements_of(ego_app.id, turn) if m.signal_group_id or not req.signal_needed]
    if not ego_moves:
        problems.append(f"ego: {ego_cid} has no {'signalized ' if req.signal_needed else ''}{turn} movement")
        raise PlanRejected(problems)
    lane_rank = {lane: k for k, lane in enumerate(_lane_preference(ego_app.lane_ids, turn))}
    ego_moves.sort(key=lambda m: (m.from_lane_id != ego_lane, lane_rank.get(m.from_lane_id, 99), m.id))
    others = [a.id for a in spec.agents]  # spec order, whatever order the planner answered in
    for aid in others:
        h = hits[assignment[aid][0]]
        if (h.meta["map"], h.meta["junction_id"]) != (j.map_name, j.id):
            problems.append(f"{aid}: {h.id} is at another junction than the ego ({j.map_name} {j.id})")
    if problems:
        raise PlanRejected(problems)

    def agent_options(aid: str, ego_m: MovementInfo) -> tuple[list[MovementInfo], str | None]:
        role, aturn = _role(spec, aid), _turn(spec, aid)
        cid, lane = assignment[aid]
        a = j.approach(hits[cid].meta["approach_id"])
        gap = heading_gap_rad(a.heading_rad, ego_app.heading_rad)
        moves = list(j.movements_of(a.id, aturn))
        if not moves:
            return [], f"{aid}: {cid} offers no {aturn} movement"
        rank = {ln: k for k, ln in enumerate(_lane_preference(a.lane_ids, aturn))}
        moves = sorted(moves, key=lambda m: (m.from_lane_id != lane, rank.get(m.from_lane_id, 99), m.id))
        if role in ("lead", "relay"):
            if a.id != ego_app.id:
                return [], f"{aid}: a {role} vehicle must drive on the ego's approach, not {cid}"
            same = [m for m in moves if m.from_lane_id == ego_m.from_lane_id]
            return same, None if same else f"{aid}: no {aturn} movement from the ego's lane {ego_m.from_lane_id}"
        if role == "cross":
            if not PERPENDICULAR[0] <= gap <= PERPENDICULAR[1]:
                return [], f"{aid}: {cid} is not perpendicular to the ego approach ({math.degrees(gap):.0f} deg)"
        elif role == "opposing":
            if gap < OPPOSITE_MIN_RAD:
                return [], f"{aid}: {cid} is not the opposite approach ({math.degrees(gap):.0f} deg from the ego's)"
        else:
            return moves, None
        conflicting = [m for m in moves if j.conflict(ego_m.id, m.id) is not None]
        conflicting.sort(key=lambda m: j.conflict(ego_m.id, m.id).kind != "crossing")  # type: ignore[union-attr]
        if not conflicting:
            return [], f"{aid}: no {aturn} movement of {cid} has a conflict point with the ego's {ego_m.id}"
        return conflicting, None

    last: list[str] = []
    for ego_m in ego_moves:
        picks = {EGO: Pick(EGO, EGO, ego_cid, ego_app, ego_m, ego_m.from_lane_id,
                           () if ego_lane in (None, ego_m.from_lane_id)
                           else (f"ego lane {ego_lane} -> {ego_m.from_lane_id} (offers the {turn} movement)",))}
        conflicts = {}
        bad: list[str] = []
        for aid in others:
            opts, why = agent_options(aid, ego_m)
            if why:
                bad.append(why)
                continue
            m = opts[0]
            cid, lane = assignment[aid]
            note = () if lane in (None, m.from_lane_id) else (f"{aid} lane {lane} -> {m.from_lane_id}",)
            picks[aid] = Pick(aid, _role(spec, aid), cid, j.approach(m.approach_id), m, m.from_lane_id, note)
            c = j.conflict(ego_m.id, m.id)
            if c is not None and _role(spec, aid) in ("cross", "opposing"):
                conflicts[aid] = (ego_m.id, m.id, c.kind, c.xy)
        if not bad:
            score = sum(hits[p.candidate_id].score for p in picks.values() if p.agent_id == EGO or
                        p.candidate_id != ego_cid)
            notes = tuple(n for p in picks.values() for n in p.notes)
            return Selection(j, picks, conflicts, round(score, 6), notes)
        last = bad
    raise PlanRejected(last)


class BuiltinPlanner:
    """Deterministic planner: the best-scoring valid assignment over the retrieved candidates."""

    backend = "builtin"

    def __init__(self, cands: CandidateSet, catalogue: MapCatalogue):
        self.cands = cands
        self.catalogue = catalogue

    def __call__(self, spec: ScenarioSpec, candidates: Sequence[Any]) -> dict[str, Any]:
        hits = list(self.cands.hits)
        ids = [h.id for h in hits]
        rng = substream(spec.seed, Substream.TIE_BREAK, 21)
        tie = dict(zip(sorted(ids), rng.random(len(ids)).tolist(), strict=True))
        order = sorted(hits, key=lambda h: (-h.score, tie[h.id], h.id))
        best: tuple[tuple[float, float], dict[str, Any]] | None = None
        reasons: list[str] = []
        agents = [(a.id, a.role.value) for a in spec.agents]
        for ego in order:
            if not ego.meta.get("ego_eligible"):
                continue
            same_j = [h for h in order if (h.meta["map"], h.meta["junction_id"]) ==
                      (ego.meta["map"], ego.meta["junction_id"])]
            assignment: dict[str, tuple[str, str | None]] = {EGO: (ego.id, None)}
            ok = True
            for aid, role in agents:
                options = [ego] if role in ("lead", "relay") else [h for h in same_j if h.id != ego.id] + [ego]
                placed = False
                for h in options:
                    trial = {**assignment, aid: (h.id, None)}
                    try:
                        validate_selection(spec, trial, self.cands, self.catalogue)
                    except PlanRejected as exc:
                        reasons.extend(exc.reasons)
                        continue
                    assignment = trial
                    placed = True
                    break
                if not placed:
                    ok = False
                    break
            if not ok:
                continue
            total = sum(next(h.score for h in hits if h.id == cid) for cid in {c for c, _ in assignment.values()})
            key = (round(total, 6), -tie[ego.id])
            if best is None or key > best[0]:
                best = (key, {"assignments": [{"agent_id": k, "candidate_id": v[0]} for k, v in assignment.items()],
                              "rationale": f"built-in planner: best valid total score {total:.3f}"})
        if best is None:
            raise PlanRejected(sorted(set(reasons))[:5] or ["no valid role assignment among the candidates"])
        return best[1]


# ── route assembly ──────────────────────────────────────────────────────────────
@dataclass
class _Built:
    route: Route
    ids: tuple[str, ...]
    bar_s: float
    conflict_s: float | None
    move_s: float  # arc length where the junction movement starts


def _route(rm: RoadMap, back_ids: Sequence[str], movement: MovementInfo, fwd_need_m: float, *,
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
    return _Built(Route(points_xy_m=pts, segments=tuple(segs), crossings=(crossing,),
                        turn=crossing.turn), ids, bar_s, conflict_s, offsets[i_lane + 1])


def _conflict_on(rm: RoadMap, j: JunctionInfo, mine: str, other: str) -> tuple[str, float, tuple[float, float]] | None:
    """(kind, arc length along my movement, xy) of the conflict point between two movements."""
    for c in rm.junctions[j.id].conflicts:
        if c.movement_a == mine and c.movement_b == other:
            return c.kind, float(c.s_a_m), c.xy
        if c.movement_b == mine and c.movement_a == other:
            return c.kind, float(c.s_b_m), c.xy
    return None


# ── signal plans ────────────────────────────────────────────────────────────────
def ego_plan(gid: str, jid: str, p: SignalPlan) -> SignalGroupPlan:
    return SignalGroupPlan(id=gid, junction_id=jid, cycle_s=p.cycle_s, green_s=p.green_s, amber_s=p.amber_s,
                           all_red_s=p.all_red_s, offset_s=p.offset_s)


def cross_plan(gid: str, jid: str, p: SignalPlan) -> SignalGroupPlan:
    """lastv2x.core.timeline's cross group as a plan of its own (same as lastv2x.core.program)."""
    g, a, r, c = p.green_s, p.amber_s, p.all_red_s, p.cycle_s
    return SignalGroupPlan(id=gid, junction_id=jid, cycle_s=c, green_s=max(0.0, c - g - 2 * a - 2 * r), amber_s=a,
                           all_red_s=r, offset_s=(p.offset_s - (g + a + r)) % c)


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


# ── the grounder ────────────────────────────────────────────────────────────────
@dataclass
class _Placed:
    vehicle: ProgramVehicle
    approach_id: str
    back_m: float  # centre distance before its stop bar at t = 0 (negative = past it)


@dataclass
class Grounder:
    """Holds the catalogue, the retrieval index and the planner; ``ground(spec)`` is thread-safe."""

    catalogue: MapCatalogue
    index: RetrievalIndex | None = None
    planner: Planner | None = None
    options: GroundOptions = field(default_factory=GroundOptions)
    planner_backend: str = ""

    def __post_init__(self) -> None:
        if self.index is None:
            self.index = index_for(self.catalogue)
        if self.planner is None:
            self.planner, self.planner_backend = default_planner()
        elif not self.planner_backend:
            self.planner_backend = str(getattr(self.planner, "backend", None) or getattr(
                self.planner, "__name__", type(self.planner).__name__))

    # ---------------------------------------------------------------- retrieve + plan
    def retrieve(self, spec: ScenarioSpec) -> CandidateSet:
        assert self.index is not None
        return self.index.candidates_for(spec, spec_query(spec), k_junctions=self.options.k_junctions)

    def plan(self, spec: ScenarioSpec, cands: CandidateSet) -> tuple[Selection, str, list[str]]:
        notes: list[str] = []
        ids = {h.id for h in cands.hits}
        if self.planner is not None:
            pcands = planner_candidates(cands, self.catalogue)
            try:
                out = self.planner(spec, pcands)
                assignment = parse_assignments(out, spec, ids)
                said = _get(out, "backend") if not isinstance(out, Mapping) or "assignments" in out else None
                backend = f"{self.planner_backend}:{said}" if said else self.planner_backend
                return validate_selection(spec, assignment, cands, self.catalogue), backend, notes
            except PlanRejected as exc:
                notes.append(f"planner {self.planner_backend} rejected: {'; '.join(exc.reasons)[:500]}")
            except FailedPrecondition as exc:
                notes.append(f"planner {self.planner_backend} found no plan: {exc}"[:500])
            except Exception as exc:  # an LLM planner may fail in any way; the built-in one decides then
                notes.append(f"planner {self.planner_backend} failed: {type(exc).__name__}: {exc}"[:500])
        builtin = BuiltinPlanner(cands, self.catalogue)
        try:
            assignment = parse_assignments(builtin(spec, ()), spec, ids)
            return validate_selection(spec, assignment, cands, self.catalogue), "builtin", notes
        except PlanRejected as exc:
            top = cands.junctions[0]
            raise FailedPrecondition(f"roles: no valid role assignment at the retrieved junctions: "
                                     f"{'; '.join(exc.reasons)}", f"{top[0]} junction {top[1]} with other "
                                     "agent manoeuvres, or another junction_kind") from None

    # ---------------------------------------------------------------- ground
    def ground(self, spec: ScenarioSpec) -> ScenarioProgram:
        assert self.index is not None
        cands = self.retrieve(spec)
        sel, backend, plan_notes = self.plan(spec, cands)
        try:
            return self.assemble(spec, cands, sel, backend, plan_notes)
        except FailedPrecondition as first:  # a fault naming what the scene lacks is InvalidArgument: no retry
            # placement failed at this junction (run-up, timing): the next retrieved junctions may fit
            tried = {(sel.junction.map_name, sel.junction.id)}
            notes = [*plan_notes, f"{sel.junction.map_name} {sel.junction.id} failed: {first.constraint}"]
            more = self.index.candidates_for(spec, cands.query, k_junctions=self.options.k_junctions + MAX_RETRIES)
            for _ in range(MAX_RETRIES):
                sub = _without(more, tried)
                sub = _first_junctions(sub, self.options.k_junctions)
                if not sub.junctions:
                    break
                try:
                    sel, backend, extra = self.plan(spec, sub)
                except FailedPrecondition:
                    tried |= {(m, jid) for m, jid, _ in sub.junctions}
                    continue
                try:
                    return self.assemble(spec, sub, sel, backend, notes + extra)
                except FailedPrecondition as exc:
                    tried.add((sel.junction.map_name, sel.junction.id))
                    notes.append(f"{sel.junction.map_name} {sel.junction.id} failed: {exc.constraint}")
            raise first from None

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
                plan = ego_plan if axes[gid] == "ego" else cross_plan
                groups[gid] = plan(gid, jid, spec.signal)
                roles_of[gid] = axes[gid]
        ego_group = ego_move.signal_group_id if signalized else None
        if ego_group is not None:
            groups[ego_group] = ego_plan(ego_group, j.id, spec.signal)
            roles_of[ego_group] = "ego"

        def group_of(m: MovementInfo) -> str | None:
            return m.signal_group_id if signalized and m.signal_group_id in groups else None

        # the ego route: run-up for the ego (and traffic behind it), exit for leads
        gaps = [a.gap_m for a in spec.agents if a.role in (AgentRole.LEAD, AgentRole.RELAY)]
        behind = 2 * opt.background_spacing_m if spec.map.busy else 0.0
        ego_back = spec.ego.start_distance_m + L / 2
        fwd_need = opt.exit_m + max(gaps, default=0.0)
        corridor = bool(ego_pick.approach.chain_ahead) and (
            spec.v2x.rsu_placement is RsuPlacement.CHAIN or spec.v2x.spat_relay or "corridor" in j.kinds
            and spec.map.junction_kind.value == "corridor")
        if corridor:
            fwd_need = max(fwd_need, min(v_e * spec.duration_s, opt.corridor_route_max_m))
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
            if a.role in (AgentRole.LEAD, AgentRole.RELAY):
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

        # RSUs
        rsus = self._rsus(spec, rm, j, rsu_junctions, ego_pick.approach)
        # cross group for faults: the cross agent's group, else the first cross-axis group at the junction
        cross_group = None
        if signalized:
            for a in spec.agents:
                if a.role is AgentRole.CROSS:
                    g = group_of(sel.picks[a.id].movement)
                    if g is not None and g != ego_group:
                        cross_group = g
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
            moves = _movement_options(j, a)
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
        taken = [(p.vehicle.route, p.vehicle.start_s_m) for p in placed]
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
            xy = np.asarray(built.route.points_xy_m)
            pos = _position(xy, start)
            if any(np.hypot(*(pos - _position(np.asarray(r.points_xy_m), s))) < opt.min_clearance_m
                   for r, s in taken):
                notes.append(f"{vid}: too close to another vehicle at t = 0; dropped")
                continue
            speed = min(opt.background_speed_mps, lane.speed_limit_mps)
            v = ProgramVehicle(id=vid, role=VehicleRole.BACKGROUND, route=built.route, start_s_m=round(start, 9),
                               initial_speed_mps=speed, desired_speed_mps=speed, equipped=equipped[vid],
                               length_m=length)
            taken.append((built.route, start))
            out.append(v)
        return out

    def _rsus(self, spec: ScenarioSpec, rm: RoadMap, j: JunctionInfo, junctions: Sequence[str],
              ego_app: ApproachInfo) -> tuple[Rsu, ...]:
        if spec.v2x.rsu_placement is RsuPlacement.NONE:
            return ()
        entry = self.catalogue.entry(j.map_name)
        chosen = list(dict.fromkeys(junctions)) if spec.v2x.rsu_placement is RsuPlacement.CHAIN else [j.id]
        out = []
        for k, jid in enumerate(chosen):
            info = entry.junction(jid)
            sites = list(info.rsu_sites)
            if not sites:
                continue
            best = max(s.los_approaches for s in sites)
            pool = sorted((s for s in sites if s.los_approaches == best), key=lambda s: _natural(s.id))
            pick = pool[int(substream(spec.seed, Substream.RSU_SELECTION, k).integers(len(pool)))]
            out.append(Rsu(id=f"rsu{k}", xy_m=(float(pick.xy[0]), float(pick.xy[1])), height_m=pick.height_m,
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
                              "reaction_time_s": p.reaction_time_s}
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


def _first_junctions(cands: CandidateSet, k: int) -> CandidateSet:
    keep = cands.junctions[:k]
    keys = {(m, jid) for m, jid, _ in keep}
    hits = tuple(h for h in cands.hits if (h.meta["map"], h.meta["junction_id"]) in keys)
    return CandidateSet(cands.query, cands.requirements, hits, keep, cands.eligible, cands.considered, cands.rejected)


def _without(cands: CandidateSet, junctions: set[tuple[str, str]]) -> CandidateSet:
    """The candidate set less the approaches of these (map, junction id) pairs."""
    hits = tuple(h for h in cands.hits if (h.meta["map"], h.meta["junction_id"]) not in junctions)
    keep = tuple(jx for jx in cands.junctions if (jx[0], jx[1]) not in junctions)
    eligible = {k: v for k, v in cands.eligible.items() if tuple(k.split("/", 1)) not in junctions}
    return CandidateSet(cands.query, cands.requirements, hits, keep, eligible, cands.considered, cands.rejected)


def _position(xy: np.ndarray, s: float) -> np.ndarray:
    seg = np.hypot(*np.diff(xy, axis=0).T)
    cum = np.concatenate(([0.0], np.cumsum(seg)))
    return np.array([np.interp(s, cum, xy[:, 0]), np.interp(s, cum, xy[:, 1])])


def _chain_heading(rm: RoadMap, jid: str, heading: float) -> float:
    """Heading of the approach of ``jid`` closest to the ego's travel direction."""
    j = rm.junctions[jid]
    return min((a.heading_rad for a in j.approaches), key=lambda h: heading_gap_rad(h, heading))


def _natural(s: str) -> tuple:
    import re

    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))


_INDEXES: weakref.WeakKeyDictionary[MapCatalogue, RetrievalIndex] = weakref.WeakKeyDictionary()


def index_for(catalogue: MapCatalogue) -> RetrievalIndex:
    """The catalogue's default retrieval index, built once per catalogue (refreshed on change)."""
    ix = _INDEXES.get(catalogue)
    if ix is None:
        ix = RetrievalIndex(catalogue)
        _INDEXES[catalogue] = ix
    else:
        ix.refresh()
    return ix


def ground(spec: ScenarioSpec, catalogue: MapCatalogue, planner: Planner | None = None, *,
           index: RetrievalIndex | None = None, options: GroundOptions | None = None) -> ScenarioProgram:
    """Spec -> typed ScenarioProgram on a catalogued map (see the module docstring)."""
    g = Grounder(catalogue, index or index_for(catalogue), planner, options or GroundOptions())
    return g.ground(spec)


def hits_of(program: ScenarioProgram) -> list[Hit]:
    """The retrieval hits a program's GroundingRecord names (for the servicer's GroundingRecord message)."""
    return [Hit(h["kind"], h["id"], h["score"], h["reason"]) for h in program.grounding.details.get("hits", [])]


__all__ = ["BuiltinPlanner", "GroundOptions", "Grounder", "PlanRejected", "Planner", "Selection", "cross_plan",
           "default_planner", "ego_plan", "ground", "hits_of", "index_for", "parse_assignments", "planner_candidates",
           "requirements", "validate_selection"]
