"""The embedded default backend: deterministic, explainable, no network.

* parse   - the grammar/lexicon parser (``services.llm.grammar``);
* repair  - applies the verifier's minimal repair patches verbatim (schema
            violations reset the offending field to its default), and records
            where a repaired magnitude came from (``provenance``);
* plan    - the constraint-satisfying planner (``services.llm.planner.solve``);
* reflect - the rule-based reflector over the knowledge base.

Every answer is labelled ``backend: "offline"`` by the role layer and goes through
the same validation as an LLM's.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from lastv2x.core.errors import InvalidArgument
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import parse_spec
from lastv2x.core.verifier import CHECKS, Severity, verify
from services.llm.assignment import Assigner
from services.llm.backends.base import (
    ParseRequest,
    PlanRequest,
    ReflectRequest,
    RepairRequest,
    RoleReply,
)
from services.llm.grammar import parse_text
from services.llm.planner import solve
from services.llm.reflector import reflect_offline

_FAULT_FIELD = re.compile(r"^faults\[(\d+)\]\.(magnitude|burst_count|probability|duration_s)$")
_TOKEN = re.compile(r"([a-z_][a-z0-9_]*)|\[(\d+)\]")


def reset_field(data: dict[str, Any], path: str) -> dict[str, Any]:
    """Delete the value at a dotted path (list elements are removed); missing paths are ignored."""
    out = copy.deepcopy(data)
    tokens: list[str | int] = [name or int(idx) for name, idx in _TOKEN.findall(path)]
    node: Any = out
    for tok in tokens[:-1]:
        try:
            node = node[tok]
        except (KeyError, IndexError, TypeError):
            return out
    last = tokens[-1] if tokens else None
    if isinstance(last, int) and isinstance(node, list) and last < len(node):
        node.pop(last)
    elif isinstance(last, str) and isinstance(node, dict):
        node.pop(last, None)
    return out


# Structural repairs first: extending the scenario or moving the ego changes every window,
# so window-level findings are re-evaluated after them (see ``_refresh``).
FIRST = {"consistency": 0, "roster": 1, "map_catalogue": 2, "timing": 3, "anchor_reachability": 4}


def _key(problem: dict[str, Any]) -> tuple[Any, ...]:
    return problem.get("check"), tuple(problem.get("fields", ())), problem.get("field")


def _apply(data: dict[str, Any], problem: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    repair = problem.get("repair")
    if repair and repair.get("patch"):
        patch = [(p["field"], p["value"]) for p in repair["patch"]]
        data = apply_patch(data, patch)
        for path, _value in patch:
            m = _FAULT_FIELD.match(path)
            if m and int(m.group(1)) < len(data.get("faults", ())):
                data["faults"][int(m.group(1))]["provenance"] = f"verifier repair: {problem.get('check')}"
        notes.append(f"repair {problem.get('check')}: {repair.get('description')} {patch}")
    elif problem.get("field") and problem["field"] != "<root>" and "check" not in problem:
        data = reset_field(data, problem["field"])
        notes.append(f"reset {problem['field']} to its default ({problem.get('description')})")
    else:
        notes.append(f"no offline repair for {problem.get('check') or problem.get('field')}: "
                     f"{problem.get('message') or problem.get('description')}")
    return data


def _refresh(data: dict[str, Any], pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Re-verify after a patch: drop verifier findings it fixed, take fresh patches for the rest.

    Patches computed against the old spec can contradict the one just applied (a
    phase-corruption repair computed before the signal was re-timed), so each
    remaining verifier finding is replaced by its current version, or dropped.
    """
    if not any(p.get("check") in CHECKS for p in pending):
        return pending
    try:
        report = verify(parse_spec(data))
    except InvalidArgument:
        return pending
    current = {_key(f.to_dict()): f.to_dict() for f in report.findings if f.severity is Severity.ERROR}
    out = []
    for p in pending:
        if p.get("check") not in CHECKS:
            out.append(p)
        elif _key(p) in current:
            out.append(current[_key(p)])
    return out


class OfflineBackend:
    name = "offline"
    deterministic = True  # the same text gives the same answer: the role layer never re-asks it for a missed fault

    def parse(self, request: ParseRequest) -> RoleReply:
        result = parse_text(request.text, Assigner(request.seed), request.maps)
        return RoleReply(result.spec, tuple(result.notes), tuple(result.findings))

    def repair(self, request: RepairRequest) -> RoleReply:
        if request.previous is None:
            return self.parse(ParseRequest(request.text, request.seed, request.assignment, request.maps,
                                           request.campaign))
        data = request.previous
        notes: list[str] = []
        pending = sorted(request.problems, key=lambda p: FIRST.get(p.get("check", ""), len(FIRST)))
        done: set[tuple[Any, ...]] = set()
        while pending:
            problem = pending.pop(0)
            if _key(problem) in done:
                continue
            done.add(_key(problem))
            data = _apply(data, problem, notes)
            pending = _refresh(data, pending)
        return RoleReply(data, tuple(notes))

    def plan(self, request: PlanRequest) -> RoleReply:
        return RoleReply(solve(request.spec, request.candidates), ("constraint-satisfying planner",))

    def reflect(self, request: ReflectRequest) -> RoleReply:
        return RoleReply(reflect_offline(request.prompt, request.digest, request.notes, request.spec),
                         ("rule-based reflector",))
