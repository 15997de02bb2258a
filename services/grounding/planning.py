"""Planning (grounding step 2): the scene-planner role maps semantic roles onto candidate ids.

The planner sees the retrieved approaches as ``services.llm.planner.ApproachCandidate``
objects (:func:`planner_candidates`) and answers an assignment of agents (or role
names) to *candidate ids*; :func:`parse_assignments` accepts only those ids. The
default planner is the LLM service's role in-process (:func:`default_planner`);
:class:`BuiltinPlanner` is the deterministic fallback the grounder uses when a
planner's answer fails validation (``services.grounding.selection``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lastv2x.core.rng import Substream, substream
from lastv2x.core.spec import EGO_LANE_ROLES, AgentRole, ScenarioSpec
from services.grounding.catalogue import MapCatalogue
from services.grounding.index import CandidateSet
from services.grounding.selection import EGO, PlanRejected, movement_options, validate_selection
from services.llm.planner import ApproachCandidate, MovementOption, solve, validate_plan

Planner = Callable[[ScenarioSpec, Sequence[Any]], Any]


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
        moves = movement_options(j, a)
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


def backend_said(out: Any) -> str | None:
    """The backend a planner's answer names for itself (an LLM role says which model answered)."""
    return _get(out, "backend") if not isinstance(out, Mapping) or "assignments" in out else None


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
                options = [ego] if role in EGO_LANE_ROLES else [h for h in same_j if h.id != ego.id] + [ego]
                placed = False
                for h in options:
                    trial = {**assignment, aid: (h.id, None)}
                    try:
                        validate_selection(spec, trial, self.cands, self.catalogue, partial=True)
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


__all__ = ["BuiltinPlanner", "Planner", "backend_said", "default_planner", "parse_assignments", "planner_candidates"]
