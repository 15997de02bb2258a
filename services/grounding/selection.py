"""Role validation (grounding step 3): does a planner's assignment fit the junction's real lanes?

:func:`validate_selection` checks an assignment of agents to retrieved approaches
against the catalogue: the ego's movement exists on its approach (under a signal
group when the application needs one); cross traffic comes from a perpendicular
approach and its movement has a conflict point with the ego's; opposing traffic
comes from the opposite approach and conflicts with the ego's turn; leads and
relays drive on the ego's lane, ahead. It chooses the lanes (left lane for left
turns and U-turns, the kerb lane otherwise) and returns the :class:`Selection`
that program assembly places; a misfit raises :class:`PlanRejected` with reasons.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lastv2x.core.spec import EGO_LANE_ROLES, ScenarioSpec, agent_maneuver
from services.grounding.catalogue import MapCatalogue
from services.grounding.entries import (
    OPPOSITE_MIN_RAD,
    PERPENDICULAR,
    ApproachInfo,
    JunctionInfo,
    MovementInfo,
    heading_gap_rad,
)
from services.grounding.index import CandidateSet

EGO = "ego"


class PlanRejected(Exception):
    """A planner's assignment does not fit the junction; ``reasons`` say why."""

    def __init__(self, reasons: Sequence[str]):
        self.reasons = tuple(reasons)
        super().__init__("; ".join(self.reasons))


def lane_preference(lanes: Sequence[str], turn: str) -> list[str]:
    """Lanes ordered left to right in the catalogue; prefer the left lane for left turns and U-turns,
    the kerb (right-most) lane otherwise."""
    return list(lanes) if turn in ("left", "uturn") else list(reversed(lanes))


def movement_options(j: JunctionInfo, a: ApproachInfo) -> list[MovementInfo]:
    out = []
    for turn in ("straight", "left", "right", "uturn"):
        moves = {m.from_lane_id: m for m in j.movements_of(a.id, turn)}
        out += [moves[lane] for lane in lane_preference(a.lane_ids, turn) if lane in moves]
    return out


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
    return agent_maneuver(spec, next(a for a in spec.agents if a.id == agent_id)).value


def _role(spec: ScenarioSpec, agent_id: str) -> str:
    return EGO if agent_id == EGO else next(a for a in spec.agents if a.id == agent_id).role.value


def validate_selection(spec: ScenarioSpec, assignment: Mapping[str, tuple[str, str | None]], cands: CandidateSet,
                       catalogue: MapCatalogue, *, partial: bool = False) -> Selection:
    """Check an assignment against the junction's real movements and conflicts; choose lanes.

    Every agent of the spec needs an assignment, unless ``partial`` (the built-in planner places
    agents one at a time: only the ego and the agents placed so far are checked). Whatever is
    wrong raises PlanRejected naming the role: an agent without an assignment, a candidate id
    that was not retrieved."""
    hits = {h.id: h for h in cands.hits}
    req = cands.requirements
    problems: list[str] = []
    if EGO not in assignment:
        raise PlanRejected(["ego: no assignment"])
    unplaced = [a.id for a in spec.agents if a.id not in assignment]
    if unplaced and not partial:
        raise PlanRejected([f"{aid} ({_role(spec, aid)}): no assignment" for aid in unplaced])
    unknown = [f"{aid}: {cid!r} is not a retrieved candidate" for aid, (cid, _) in assignment.items() if cid not in hits]
    if unknown:
        raise PlanRejected(unknown)
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
    lane_rank = {lane: k for k, lane in enumerate(lane_preference(ego_app.lane_ids, turn))}
    ego_moves.sort(key=lambda m: (m.from_lane_id != ego_lane, lane_rank.get(m.from_lane_id, 99), m.id))
    others = [a.id for a in spec.agents if a.id in assignment]  # spec order, whatever order the planner answered in
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
        rank = {ln: k for k, ln in enumerate(lane_preference(a.lane_ids, aturn))}
        moves = sorted(moves, key=lambda m: (m.from_lane_id != lane, rank.get(m.from_lane_id, 99), m.id))
        if role in EGO_LANE_ROLES:
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


__all__ = ["EGO", "Pick", "PlanRejected", "Selection", "lane_preference", "movement_options", "validate_selection"]
