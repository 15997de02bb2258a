"""Seeds that vary the world: draws within the bounds a spec declares (``ScenarioSpec.variation``).

A spec may declare bounds for each vehicle's desired speed, the cross/opposing agents' arrival
jitter, each vehicle's reaction time and the number of background vehicles; a program builder
(grounding, the synthetic crossing) calls :func:`draw` before it lays the spec out and
:func:`apply` to the program it built. Every draw comes from the scenario seed (substream
``variation``, one generator per quantity and vehicle id: adding a vehicle never shifts another's
draw), so "ten seeds" are ten different worlds and one seed is always the same world. A quantity
without bounds keeps the spec's values; ``min == max`` pins it; a spec without ``variation`` is
built exactly as before (``draw`` returns None).

One rule for valid bounds (:func:`problems`): the verifier reports each problem as an error
finding with the field path and a repair, and :func:`draw` refuses a spec that has any
(INVALID_ARGUMENT), so a builder never draws from bounds the verifier would block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.rng import Substream, stable_hash64, substream
from lastv2x.core.spec import AgentRole, ScenarioSpec

# quantity -> (lowest, highest) value a bound may take, unit, what it is
RANGES: dict[str, tuple[float, float, str]] = {
    "desired_speed_mps": (1.0, 40.0, "m/s"),
    "arrival_jitter_s": (-30.0, 30.0, "s"),
    "reaction_time_s": (0.0, 5.0, "s"),
    "background_vehicles": (0, 16, "vehicles"),
    "alerted_reaction_s": (0.0, 3.0, "s"),
}
_INDEX = {name: k for k, name in enumerate(RANGES)}  # sub-substream of each quantity
DECIMALS = 3  # drawn values are rounded to mm/s, ms


@dataclass(frozen=True)
class Problem:
    """One invalid bound: the field paths, what is wrong, the repair and its patch."""

    fields: tuple[str, ...]
    message: str
    repair: str
    patch: tuple[tuple[str, Any], ...]


def problems(spec: ScenarioSpec) -> list[Problem]:
    """Every invalid bound of ``spec.variation`` (negative where the quantity cannot be, inverted, or
    outside the quantity's range), each with a repair that makes it valid."""
    var = spec.variation
    if var is None:
        return []
    out: list[Problem] = []
    for name, (lowest, highest, unit) in RANGES.items():
        b = getattr(var, name)
        if b is None:
            continue
        path = f"variation.{name}"
        lo, hi = b.min, b.max
        if lo > hi:
            out.append(Problem((f"{path}.min", f"{path}.max"), f"{path} is inverted: min {lo:g} > max {hi:g} {unit}",
                               "swap min and max", ((f"{path}.min", hi), (f"{path}.max", lo))))
            lo, hi = hi, lo
        for end, v in (("min", lo), ("max", hi)):
            if lowest >= 0 and v < 0:
                out.append(Problem((f"{path}.{end}",), f"{path}.{end} = {v:g} {unit} is negative",
                                   f"use at least {lowest:g} {unit}", ((f"{path}.{end}", lowest),)))
            elif not lowest <= v <= highest:
                fix = min(max(v, lowest), highest)
                out.append(Problem((f"{path}.{end}",), f"{path}.{end} = {v:g} {unit} is outside "
                                   f"[{lowest:g}, {highest:g}]", f"use {fix:g} {unit}", ((f"{path}.{end}", fix),)))
    return out


@dataclass(frozen=True)
class Drawn:
    """What a seed drew for one spec: the spec to lay out, and what :func:`apply` sets on the program."""

    spec: ScenarioSpec  # the spec with the drawn speeds and arrival offsets
    source: ScenarioSpec  # the spec as written (the program keeps it)
    record: dict[str, Any] = field(default_factory=dict)  # what was drawn, for the GroundingRecord


def _uniform(seed: int, name: str, vehicle_id: str, lo: float, hi: float) -> float:
    if lo == hi:
        return float(lo)
    g = substream(seed, Substream.VARIATION, _INDEX[name], stable_hash64(vehicle_id))
    return round(float(g.uniform(lo, hi)), DECIMALS)


def draw(spec: ScenarioSpec) -> Drawn | None:
    """The seed's draws for ``spec`` (None without ``variation``); InvalidArgument on invalid bounds."""
    var = spec.variation
    if var is None:
        return None
    bad = problems(spec)
    if bad:
        raise InvalidArgument([FieldViolation(p.fields[0], p.message, p.repair) for p in bad])
    seed = spec.seed
    record: dict[str, Any] = {}
    ego, agents = spec.ego, list(spec.agents)
    if var.desired_speed_mps is not None:
        b = var.desired_speed_mps
        speeds = {"ego": _uniform(seed, "desired_speed_mps", "ego", b.min, b.max)}
        speeds |= {a.id: _uniform(seed, "desired_speed_mps", a.id, b.min, b.max) for a in agents}
        ego = ego.model_copy(update={"speed_mps": speeds["ego"]})
        agents = [a.model_copy(update={"speed_mps": speeds[a.id]}) for a in agents]
        record["desired_speed_mps"] = speeds
    if var.arrival_jitter_s is not None:
        b = var.arrival_jitter_s
        jitter = {a.id: _uniform(seed, "arrival_jitter_s", a.id, b.min, b.max) for a in agents
                  if a.role in (AgentRole.CROSS, AgentRole.OPPOSING)}
        lo, hi = RANGES["arrival_jitter_s"][:2]
        agents = [a.model_copy(update={"arrival_offset_s": round(min(max(a.arrival_offset_s + jitter[a.id], lo), hi),
                                                                  DECIMALS)}) if a.id in jitter else a
                  for a in agents]
        record["arrival_jitter_s"] = jitter
    varied = spec.model_copy(update={"ego": ego, "agents": tuple(agents)})
    if var.background_vehicles is not None:
        count = var.background_vehicles
        n = count.min if count.min == count.max else int(substream(
            seed, Substream.VARIATION, _INDEX["background_vehicles"]).integers(count.min, count.max + 1))
        record["background_vehicles"] = n
    return Drawn(varied, spec, record)


def apply(program: Any, drawn: Drawn | None) -> Any:
    """The program ``drawn.spec`` was built into, with the per-vehicle draws set (reaction times,
    background speeds), background traffic cut to the drawn count, the spec as written and a
    record of the draws in its grounding details. Without draws: ``program`` itself."""
    if drawn is None:
        return program
    var = drawn.source.variation
    assert var is not None
    seed = drawn.source.seed
    record = dict(drawn.record)
    agents = list(program.agents)
    if "background_vehicles" in record:
        n = record["background_vehicles"]
        kept, bg = [], 0
        for v in agents:
            if v.role.value == "background":
                bg += 1
                if bg > n:
                    continue
            kept.append(v)
        record["background_vehicles"] = {"drawn": n, "placed": min(n, bg)}
        agents = kept
    vehicles = [program.ego, *agents]
    if var.desired_speed_mps is not None:
        b = var.desired_speed_mps
        speeds = record["desired_speed_mps"] = dict(record["desired_speed_mps"])
        for k, v in enumerate(vehicles):
            if v.role.value == "background":
                s = _uniform(seed, "desired_speed_mps", v.id, b.min, b.max)
                speeds[v.id] = s
                vehicles[k] = v.model_copy(update={"desired_speed_mps": s, "initial_speed_mps": s})
    if var.reaction_time_s is not None:
        b = var.reaction_time_s
        times = {v.id: _uniform(seed, "reaction_time_s", v.id, b.min, b.max) for v in vehicles}
        vehicles = [v.model_copy(update={"reaction_time_s": times[v.id]}) for v in vehicles]
        record["reaction_time_s"] = times
    if var.alerted_reaction_s is not None:
        b = var.alerted_reaction_s
        times = {v.id: _uniform(seed, "alerted_reaction_s", v.id, b.min, b.max) for v in vehicles}
        vehicles = [v.model_copy(update={"alerted_reaction_s": times[v.id]}) for v in vehicles]
        record["alerted_reaction_s"] = times
    details = {**program.grounding.details, "variation": record}
    return program.model_copy(update={
        "ego": vehicles[0], "agents": tuple(vehicles[1:]), "spec": drawn.source,
        "grounding": program.grounding.model_copy(update={"details": details})})


__all__ = ["DECIMALS", "Drawn", "Problem", "RANGES", "apply", "draw", "problems"]
