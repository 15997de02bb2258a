"""Specification-space mutations (LAST-V2X §2.5, Appendix E).

A mutant keeps what the test is *about* — the application, the ego manoeuvre, the
agent roster (ids and roles) and the map query — and moves how hard and when it
pushes: fault magnitude, window anchor / offset / duration, vehicle conditions
(speeds, start distance, gaps, arrival times, brake onset) and V2X penetration.

Each operator is a pure function ``(spec as a JSON dict, rng) -> changed dict or None``
(None = does not apply to this spec). Operators live in one registry with a family;
the weights of the families depend on the application kind: conflict applications
favour *interaction timing* (who arrives when), signal applications favour *fault*
operators (Appendix E). Every mutant is re-validated by the ScenarioSpec schema, so an
operator can never produce an invalid spec; ``mutate`` redraws when one does.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from lastv2x.core.catalogue import APPLICATIONS, FAULT_OPERATORS, AppKind, Registry
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import ScenarioSpec, SignalPlan, parse_spec, spec_to_dict
from lastv2x.core.timeline import offset_for_amber_at

SpecDict = dict[str, Any]


class Family(StrEnum):
    TIMING = "timing"  # interaction timing: arrival offsets, gaps, brake onset, signal offset
    FAULT = "fault"  # fault magnitude, window anchor / offset / duration
    VEHICLE = "vehicle"  # speeds and start distance
    PENETRATION = "penetration"  # share of equipped background vehicles


FAMILY_WEIGHTS: dict[AppKind, dict[Family, float]] = {
    # Appendix E: "for conflict applications, operator weights favor interaction timing;
    # for signal applications, they favor fault operators". The 3:1 ratio is our choice.
    AppKind.CONFLICT: {Family.TIMING: 3.0, Family.FAULT: 1.0, Family.VEHICLE: 1.0, Family.PENETRATION: 0.5},
    AppKind.SIGNAL: {Family.TIMING: 1.0, Family.FAULT: 3.0, Family.VEHICLE: 1.0, Family.PENETRATION: 0.5},
}


@dataclass(frozen=True)
class MutationOperator:
    name: str
    family: Family
    apply: Callable[[SpecDict, np.random.Generator], SpecDict | None]


OPERATORS: Registry[str, MutationOperator] = Registry("mutation operator")


def _op(name: str, family: Family) -> Callable[[Callable[[SpecDict, np.random.Generator], SpecDict | None]],
                                               Callable[[SpecDict, np.random.Generator], SpecDict | None]]:
    def deco(fn: Callable[[SpecDict, np.random.Generator], SpecDict | None]
             ) -> Callable[[SpecDict, np.random.Generator], SpecDict | None]:
        OPERATORS.register(name, MutationOperator(name, family, fn))
        return fn
    return deco


def _r(x: float, digits: int = 3) -> float:
    return float(round(x, digits))


def _clip(x: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, x))


def _scale(x: float, rng: np.random.Generator, sigma: float) -> float:
    return x * math.exp(float(rng.normal(0.0, sigma)))


def _pick(items: list[Any], rng: np.random.Generator) -> Any:
    return items[int(rng.integers(len(items)))]


# ── fault family ───────────────────────────────────────────────────────────
@_op("fault_magnitude", Family.FAULT)
def _fault_magnitude(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    """Scale a fault's strength: magnitude within the operator's range, else the probability or burst length
    its catalogue strength knobs name (drop's)."""
    options = []
    for i, f in enumerate(d["faults"]):
        info = FAULT_OPERATORS[f["operator"]]
        if info.magnitude_range is not None:
            options.append((i, "magnitude"))
        # a knob other than the magnitude (drop's probability / burst_count): the first one the fault sets
        # (the catalogue's order, as the fault's strength reads it), else the last
        knobs = [k.field for k in info.strength if k.field in ("probability", "burst_count")]
        if knobs:
            options.append((i, next((k for k in knobs if f.get(k) is not None), knobs[-1])))
    if not options:
        return None
    i, key = _pick(options, rng)
    f = d["faults"][i]
    if key == "magnitude":
        lo, hi = FAULT_OPERATORS[f["operator"]].magnitude_range  # type: ignore[misc]
        cur = f.get("magnitude")
        if cur is None or cur == 0:
            cur = hi / 10 if lo >= 0 else (hi / 10) * (1 if rng.random() < 0.5 else -1)
        new = _scale(cur, rng, 0.6)
        f["magnitude"] = _r(_clip(new, lo, hi) if lo >= 0 else math.copysign(_clip(abs(new), 0.05, hi), new))
    elif key == "probability":
        f["probability"] = _r(_clip(f["probability"] + float(rng.normal(0.0, 0.2)), 0.05, 1.0))
    else:
        cur = f.get("burst_count") or 10
        f["burst_count"] = int(_clip(round(_scale(cur, rng, 0.6)), 1, 10000))
    return d


@_op("fault_offset", Family.FAULT)
def _fault_offset(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    """Move a fault's window open time relative to its anchor."""
    if not d["faults"]:
        return None
    f = _pick(d["faults"], rng)
    f["anchor"]["offset_s"] = _r(_clip(f["anchor"]["offset_s"] + float(rng.normal(0.0, 1.5)), -120.0, 600.0))
    return d


@_op("fault_duration", Family.FAULT)
def _fault_duration(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    """Set, scale or clear (active to the end) a fault's duration."""
    if not d["faults"]:
        return None
    f = _pick(d["faults"], rng)
    cur = f.get("duration_s")
    if cur is None:
        f["duration_s"] = _r(float(rng.uniform(0.5, 8.0)))
    elif rng.random() < 0.15:
        f["duration_s"] = None
    else:
        f["duration_s"] = _r(_clip(_scale(cur, rng, 0.5), 0.1, 600.0))
    return d


_SIGNAL_ANCHORS = (("signal_event", "amber_onset"), ("signal_event", "red_onset"), ("signal_event", "green_onset"),
                   ("ego_event", "decision_epoch"), ("scenario_time", "none"))
_CONFLICT_ANCHORS = (("ego_event", "decision_epoch"), ("scenario_time", "none"))


@_op("fault_anchor", Family.FAULT)
def _fault_anchor(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    """Re-anchor a fault's window to another event (signal phase onset, decision epoch, scenario time)."""
    if not d["faults"]:
        return None
    signal = APPLICATIONS[d["application"]].kind is AppKind.SIGNAL
    f = _pick(d["faults"], rng)
    kind, event = _pick(list(_SIGNAL_ANCHORS if signal else _CONFLICT_ANCHORS), rng)
    offset = float(rng.uniform(0.0, 10.0)) if kind == "scenario_time" else float(rng.uniform(-3.0, 1.0))
    f["anchor"] = {"kind": kind, "event": event, "group": None, "distance_m": None, "offset_s": _r(offset)}
    return d


# ── interaction timing ─────────────────────────────────────────────────────
@_op("arrival_offset", Family.TIMING)
def _arrival_offset(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    """Shift when a cross / opposing agent reaches the conflict point relative to the ego."""
    agents = [a for a in d["agents"] if a["role"] in ("cross", "opposing")]
    if not agents:
        return None
    a = _pick(agents, rng)
    # collisions need arrivals within ~0.5 s of each other: steps of that order keep children near a conflict
    a["arrival_offset_s"] = _r(_clip(a["arrival_offset_s"] + float(rng.normal(0.0, 0.75)), -30.0, 30.0))
    return d


@_op("lead_gap", Family.TIMING)
def _lead_gap(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    """Scale the initial gap of a lead or relay vehicle."""
    agents = [a for a in d["agents"] if a["role"] in ("lead", "relay")]
    if not agents:
        return None
    a = _pick(agents, rng)
    a["gap_m"] = _r(_clip(_scale(a["gap_m"], rng, 0.3), 5.0, 300.0))
    return d


@_op("brake_onset", Family.TIMING)
def _brake_onset(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    """Move a hard-brake onset, or change its deceleration."""
    agents = [a for a in d["agents"] if a["behaviour"]["kind"] == "hard_brake"]
    if not agents:
        return None
    b = _pick(agents, rng)["behaviour"]
    if rng.random() < 0.7:
        b["at_time_s"] = _r(_clip((b.get("at_time_s") or 3.0) + float(rng.normal(0.0, 1.5)), 0.0, 600.0))
    else:
        b["decel_mps2"] = _r(_clip(_scale(b["decel_mps2"], rng, 0.2), 1.0, 10.0))
    return d


AMBER_JUMP_SHARE = 1.0 / 3.0  # of signal_offset's moves: the jump to amber at the ego's arrival


@_op("signal_offset", Family.TIMING)
def _signal_offset(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    """Shift the ego group's signal plan against the ego's arrival (signal applications): a small step, or
    (``AMBER_JUMP_SHARE`` of the moves) a jump that puts amber onset shortly before the ego's nominal arrival
    at its stop bar (start distance / speed), where a signal application decides. Small steps alone rarely
    get there from a plan that starts far from it, and nothing guides them (no episode, no margin)."""
    if APPLICATIONS[d["application"]].kind is not AppKind.SIGNAL:
        return None
    s, ego = d["signal"], d["ego"]
    if rng.random() < AMBER_JUMP_SHARE:
        arrival_s = ego["start_distance_m"] / max(ego["speed_mps"], 0.5)
        amber_onset_s = arrival_s - float(rng.uniform(0.0, s["amber_s"] + 1.5))  # arrives in amber or just after
        s["offset_s"] = _r(offset_for_amber_at(SignalPlan.model_validate(s), amber_onset_s))
    else:
        s["offset_s"] = _r((s["offset_s"] + float(rng.normal(0.0, 2.0))) % s["cycle_s"])
    return d


# ── vehicle conditions ─────────────────────────────────────────────────────
@_op("ego_speed", Family.VEHICLE)
def _ego_speed(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    d["ego"]["speed_mps"] = _r(_clip(_scale(d["ego"]["speed_mps"], rng, 0.15), 3.0, 40.0))
    return d


@_op("ego_start", Family.VEHICLE)
def _ego_start(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    d["ego"]["start_distance_m"] = _r(_clip(_scale(d["ego"]["start_distance_m"], rng, 0.2), 10.0, 1000.0))
    return d


@_op("agent_speed", Family.VEHICLE)
def _agent_speed(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    if not d["agents"]:
        return None
    a = _pick(d["agents"], rng)
    a["speed_mps"] = _r(_clip(_scale(a["speed_mps"], rng, 0.15), 3.0, 40.0))
    return d


# ── penetration ────────────────────────────────────────────────────────────
@_op("penetration", Family.PENETRATION)
def _penetration(d: SpecDict, rng: np.random.Generator) -> SpecDict | None:
    v = d["v2x"]
    v["penetration"] = _r(_clip(v["penetration"] + float(rng.normal(0.0, 0.3)), 0.0, 1.0), 2)
    return d


def invariant(spec: ScenarioSpec) -> tuple[Any, ...]:
    """What no mutation may change: application, ego manoeuvre, agent roster, map query."""
    return (spec.application, spec.ego.maneuver, tuple((a.id, a.role) for a in spec.agents), spec.map)


def _apply_one(d: SpecDict, rng: np.random.Generator, weights: dict[Family, float]) -> tuple[SpecDict, str] | None:
    """Draw a family by weight among those with an operator that applies to ``d``, then one of its
    applicable operators uniformly (so a family's weight does not depend on how many operators it has)."""
    families = [f for f in Family if weights.get(f, 0.0) > 0]
    while families:
        w = np.array([weights[f] for f in families])
        family = families[int(rng.choice(len(families), p=w / w.sum()))]
        ops = [op for op in OPERATORS.values() if op.family is family]
        for k in rng.permutation(len(ops)):
            out = ops[int(k)].apply(copy.deepcopy(d), rng)
            if out is not None:
                return out, ops[int(k)].name
        families.remove(family)
    return None


def mutate(spec: ScenarioSpec, rng: np.random.Generator, max_operators: int = 2,
           max_redraws: int = 16) -> tuple[ScenarioSpec, tuple[str, ...]] | None:
    """One child of ``spec``: 1..max_operators operators drawn by family weight; None when no operator
    produced a valid, different spec within ``max_redraws`` draws."""
    weights = FAMILY_WEIGHTS[APPLICATIONS[spec.application].kind]
    base = spec_to_dict(spec)
    for _ in range(max_redraws):
        d = spec_to_dict(spec)
        used = []
        for _k in range(int(rng.integers(1, max_operators + 1))):
            step = _apply_one(d, rng, weights)
            if step is not None:
                d = step[0]
                used.append(step[1])
        if not used or d == base:
            continue
        try:
            child = parse_spec(d)
        except InvalidArgument:
            continue
        if invariant(child) == invariant(spec):
            return child, tuple(used)
    return None


__all__ = ["FAMILY_WEIGHTS", "OPERATORS", "Family", "MutationOperator", "invariant", "mutate"]
