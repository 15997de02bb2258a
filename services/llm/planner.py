"""Scene planning (LLM role 2): semantic roles onto *retrieved* approaches.

Grounding retrieves approach candidates (an approach = the lanes entering one
junction from one direction, with the movements they allow). The planner maps the
spec's semantic roles onto them: the ego approach, cross traffic (perpendicular),
opposing traffic (oncoming), lead and relay vehicles (ahead of the ego on its
approach). It may only choose among the candidate ids it was given; it can never
invent geometry. Every plan, whichever backend proposed it, goes through
``validate_plan``, which rejects unknown ids, lanes outside the candidate, missing
movements and inconsistent geometry.

The offline planner is a small constraint solver: for each ego candidate (by
retrieval score) it picks the best candidate satisfying each role's constraint at
the same junction, scores the plan by the sum of retrieval scores, and breaks ties
with the scenario seed (TIE_BREAK substream), so replays choose the same plan.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from lastv2x.core.catalogue import APPLICATIONS, AppKind
from lastv2x.core.errors import ErrorCollector, FailedPrecondition, FieldViolation, InvalidArgument
from lastv2x.core.rng import Substream, substream
from lastv2x.core.spec import AgentRole, ScenarioSpec

TURNS = ("straight", "left", "right", "uturn")
CROSS_MIN_RAD = math.radians(45.0)  # |heading difference| of a perpendicular approach
CROSS_MAX_RAD = math.radians(135.0)
OPPOSING_MIN_RAD = math.radians(135.0)  # |heading difference| of an oncoming approach
EGO = "ego"


@dataclass(frozen=True)
class MovementOption:
    turn: str  # straight / left / right / uturn
    signal_group: str | None = None  # None: unsignalized movement
    movement_id: str | None = None

    @classmethod
    def parse(cls, text: str) -> MovementOption:
        """``"left:j1.sg2"`` or ``"straight"`` (the wire form of ``lastv2x.v1.ApproachCandidate.movements``)."""
        turn, _, group = text.partition(":")
        return cls(turn.strip().lower(), group.strip() or None)

    def __str__(self) -> str:
        return f"{self.turn}:{self.signal_group}" if self.signal_group else self.turn


@dataclass(frozen=True)
class ApproachCandidate:
    """One retrieved approach: where a vehicle can enter a junction, and how it can leave."""

    candidate_id: str
    map_name: str
    junction_id: str
    approach_id: str
    heading_rad: float  # direction of travel entering the junction, CCW from +x
    movements: tuple[MovementOption, ...]
    lanes: tuple[str, ...]
    score: float  # retrieval score, higher is better

    def movement(self, turn: str) -> MovementOption | None:
        return next((m for m in self.movements if m.turn == turn), None)

    @property
    def junction_key(self) -> tuple[str, str]:
        return self.map_name, self.junction_id

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["movements"] = [asdict(m) for m in self.movements]
        out["lanes"] = list(self.lanes)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ApproachCandidate:
        movements = tuple(MovementOption(**m) for m in data.get("movements", ()))
        return cls(**{**data, "movements": movements, "lanes": tuple(data.get("lanes", ()))})


@dataclass(frozen=True)
class RoleAssignment:
    agent_id: str  # "ego" or an agent id of the spec
    role: str  # "ego" or an AgentRole value
    candidate_id: str
    turn: str
    signal_group: str | None
    lane_id: str


@dataclass(frozen=True)
class ScenePlan:
    map_name: str
    junction_id: str
    assignments: tuple[RoleAssignment, ...]
    score: float
    backend: str
    rationale: str = ""

    def for_agent(self, agent_id: str) -> RoleAssignment:
        return next(a for a in self.assignments if a.agent_id == agent_id)

    def to_dict(self) -> dict[str, Any]:
        return {"map_name": self.map_name, "junction_id": self.junction_id, "score": self.score,
                "backend": self.backend, "rationale": self.rationale,
                "assignments": [asdict(a) for a in self.assignments]}


def check_candidates(candidates: Sequence[ApproachCandidate]) -> tuple[ApproachCandidate, ...]:
    errors = ErrorCollector()
    if not candidates:
        errors.add("candidates", "no retrieved approach candidates", "retrieve approaches for the spec's map query")
    seen: set[str] = set()
    for i, c in enumerate(candidates):
        path = f"candidates[{i}]"
        if not c.candidate_id:
            errors.add(f"{path}.candidate_id", "empty id")
        elif c.candidate_id in seen:
            errors.add(f"{path}.candidate_id", f"duplicate id {c.candidate_id!r}")
        seen.add(c.candidate_id)
        if not math.isfinite(c.heading_rad):
            errors.add(f"{path}.heading_rad", "not finite")
        if not math.isfinite(c.score):
            errors.add(f"{path}.score", "not finite")
        if not c.lanes:
            errors.add(f"{path}.lanes", "an approach needs at least one lane")
        if not c.movements:
            errors.add(f"{path}.movements", "an approach needs at least one movement")
        for j, m in enumerate(c.movements):
            if m.turn not in TURNS:
                errors.add(f"{path}.movements[{j}].turn", f"unknown turn {m.turn!r}", f"one of {TURNS}")
    errors.raise_if_any()
    return tuple(candidates)


def heading_gap_rad(a: float, b: float) -> float:
    """|a - b| wrapped into [0, pi]."""
    return abs(math.remainder(a - b, 2.0 * math.pi))


def _roles(spec: ScenarioSpec) -> list[tuple[str, str, str]]:
    """(agent id, role, turn) for the ego and every agent."""
    return [(EGO, EGO, spec.ego.maneuver.value)] + [(a.id, a.role.value, a.maneuver.value) for a in spec.agents]


def _needs_signal(spec: ScenarioSpec) -> bool:
    return APPLICATIONS[spec.application].kind is AppKind.SIGNAL and spec.map.signalized is not False


def _fits(role: str, cand: ApproachCandidate, ego: ApproachCandidate) -> str | None:
    """Why ``cand`` cannot host ``role`` given the ego's approach (None: it can)."""
    if cand.junction_key != ego.junction_key:
        return f"{cand.candidate_id} is at another junction than the ego"
    gap = heading_gap_rad(cand.heading_rad, ego.heading_rad)
    if role in (AgentRole.LEAD.value, AgentRole.RELAY.value):
        return None if cand.candidate_id == ego.candidate_id else f"a {role} vehicle drives on the ego approach"
    if role == AgentRole.CROSS.value and not CROSS_MIN_RAD <= gap <= CROSS_MAX_RAD:
        return f"{cand.candidate_id} is not perpendicular to the ego approach ({math.degrees(gap):.0f} deg)"
    if role == AgentRole.OPPOSING.value and gap < OPPOSING_MIN_RAD:
        return f"{cand.candidate_id} is not oncoming ({math.degrees(gap):.0f} deg from the ego approach)"
    return None


def validate_plan(data: dict[str, Any], spec: ScenarioSpec, candidates: Sequence[ApproachCandidate],
                  backend: str) -> ScenePlan:
    """Check a proposed plan against the spec and the candidates; InvalidArgument lists every problem."""
    errors = ErrorCollector()
    by_id = {c.candidate_id: c for c in candidates}
    rows = data.get("assignments") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InvalidArgument(FieldViolation("assignments", "expected a list of role assignments"))
    wanted = {agent_id: (role, turn) for agent_id, role, turn in _roles(spec)}
    chosen: dict[str, tuple[dict[str, Any], ApproachCandidate]] = {}
    named: set[Any] = set()
    for i, row in enumerate(rows):
        path = f"assignments[{i}]"
        if not isinstance(row, dict):
            errors.add(path, "expected an object")
            continue
        agent_id, cid = row.get("agent_id"), row.get("candidate_id")
        named.add(agent_id)
        if agent_id not in wanted:
            errors.add(f"{path}.agent_id", f"{agent_id!r} is not the ego or an agent of the spec",
                       f"one of {sorted(wanted)}")
            continue
        if agent_id in chosen:
            errors.add(f"{path}.agent_id", f"{agent_id!r} is assigned twice")
            continue
        if cid not in by_id:
            errors.add(f"{path}.candidate_id", f"{cid!r} is not a retrieved candidate",
                       f"choose one of {sorted(by_id)}")
            continue
        chosen[agent_id] = (row, by_id[cid])
    for agent_id in wanted:
        if agent_id not in named:
            errors.add("assignments", f"{agent_id!r} has no approach", "assign the ego and every agent")
    errors.raise_if_any()
    ego_row, ego_cand = chosen[EGO]
    out: list[RoleAssignment] = []
    for i, row in enumerate(rows):
        agent_id = row["agent_id"]
        role, turn = wanted[agent_id]
        cand = chosen[agent_id][1]
        path = f"assignments[{i}]"
        if agent_id != EGO:
            why = _fits(role, cand, ego_cand)
            if why:
                errors.add(f"{path}.candidate_id", why)
        movement = cand.movement(turn)
        if movement is None:
            errors.add(f"{path}.candidate_id", f"{cand.candidate_id} offers no {turn} movement for {agent_id}",
                       f"offered: {[m.turn for m in cand.movements]}")
            continue
        if agent_id == EGO and _needs_signal(spec) and movement.signal_group is None:
            errors.add(f"{path}.candidate_id", f"{spec.application} needs a signalized ego movement; "
                                               f"{cand.candidate_id} {turn} has no signal group")
        lane = row.get("lane_id") or (ego_row.get("lane_id") if role in ("lead", "relay") else None) or cand.lanes[0]
        if lane not in cand.lanes:
            errors.add(f"{path}.lane_id", f"lane {lane!r} is not on {cand.candidate_id}", f"lanes: {list(cand.lanes)}")
            continue
        out.append(RoleAssignment(agent_id, role, cand.candidate_id, turn, movement.signal_group, lane))
    errors.raise_if_any()
    score = sum(c.score for _r, c in chosen.values())
    rationale = str(data.get("rationale", ""))[:2000]
    return ScenePlan(ego_cand.map_name, ego_cand.junction_id, tuple(out), round(score, 6), backend, rationale)


def solve(spec: ScenarioSpec, candidates: Sequence[ApproachCandidate]) -> dict[str, Any]:
    """The offline planner: best-scoring feasible assignment, seeded tie-break. Returns plan JSON."""
    roles = _roles(spec)
    rng = substream(spec.seed, Substream.TIE_BREAK, 0)
    tie = {c.candidate_id: float(u) for c, u in zip(candidates, rng.random(len(candidates)), strict=True)}
    ordered = sorted(candidates, key=lambda c: (-c.score, tie[c.candidate_id], c.candidate_id))
    reasons: Counter[str] = Counter()
    best: tuple[tuple[float, float], dict[str, Any]] | None = None
    for ego in ordered:
        m = ego.movement(spec.ego.maneuver.value)
        if m is None:
            reasons[f"no candidate offers an ego {spec.ego.maneuver.value} movement"] += 1
            continue
        if _needs_signal(spec) and m.signal_group is None:
            reasons[f"no signalized ego {spec.ego.maneuver.value} movement"] += 1
            continue
        rows: list[dict[str, Any]] = [{"agent_id": EGO, "candidate_id": ego.candidate_id, "lane_id": ego.lanes[0]}]
        used = {ego.candidate_id}
        total = ego.score
        feasible = True
        for agent_id, role, turn in roles[1:]:
            options = [c for c in ordered if _fits(role, c, ego) is None and c.movement(turn) is not None]
            if role == AgentRole.BACKGROUND.value:
                options.sort(key=lambda c: c.candidate_id in used)  # stable: prefer an unused approach
            if not options:
                reasons[f"no approach for the {role} vehicle ({turn}) at {ego.junction_id}"] += 1
                feasible = False
                break
            pick = options[0]
            used.add(pick.candidate_id)
            if pick.candidate_id != ego.candidate_id:
                total += pick.score
            lane = ego.lanes[0] if pick.candidate_id == ego.candidate_id else pick.lanes[0]
            rows.append({"agent_id": agent_id, "candidate_id": pick.candidate_id, "lane_id": lane})
        if not feasible:
            continue
        key = (total, -tie[ego.candidate_id])
        if best is None or key > best[0]:
            roles_text = ", ".join(f"{r['agent_id']}->{r['candidate_id']}" for r in rows)
            best = (key, {"assignments": rows, "rationale": f"best retrieval score {total:.3f}: {roles_text}"})
    if best is None:
        common = reasons.most_common(1)[0][0] if reasons else "no candidates"
        turns = sorted({m.turn for c in candidates for m in c.movements})
        raise FailedPrecondition(f"no retrieved approach set satisfies the roles: {common}",
                                 f"retrieve junctions offering {sorted({t for _a, _r, t in roles})} "
                                 f"(retrieved turns: {turns})")
    return best[1]


__all__ = ["ApproachCandidate", "MovementOption", "RoleAssignment", "ScenePlan", "check_candidates",
           "heading_gap_rad", "solve", "validate_plan"]
