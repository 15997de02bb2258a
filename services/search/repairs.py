"""The verifier's repairs as a campaign applies them: pure functions of a spec, each repair recorded.

* :func:`observability_repairs`: after the parse, the repairs that only make a fault's mechanism observable
  (``OBSERVABILITY_CHECKS``: the radio baseline, a phantom's tailgater; fields: range, RSU placement, where the
  vehicles are, an added follower) are
  applied; one that would change what the user asked for (the fault, a field the intent states, a given spec)
  is reported with its reason, never applied.
* :func:`verifier_repaired`: when a fault as the intent states it does not meet the verifier, the nearest
  version that does (its ERROR findings' repairs, one at a time): the campaign's first search step, run after
  the spec as stated. A repair that reverses a fault's direction (a magnitude's sign) is another fault and is
  never taken.
* :func:`run_up_repaired`: a scene whose conflicting car needs more road than the map has before the junction (the
  grounding's ``run_up``), with the ego started nearer, when the intent states no start distance.
* :func:`town_repaired`: a scene that does not fit the town the parser assigned from the seed (the intent names none),
  on the first other town of the parser's pool it grounds on, every number of the scene kept. Tried before
  ``run_up_repaired``: the town was the platform's choice, the start distance is part of the scene.
* :func:`repair_text`: one line for a record (the results table, the report, the CLI).

A record is ``{check, message, description, patch: [{field, from, value}], applied, reason, origin}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lastv2x.core.errors import InvalidArgument
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import ScenarioSpec, parse_spec, spec_to_dict
from lastv2x.core.verifier import PHANTOM_FOLLOWER, Finding, Severity, verify

# The verifier's checks whose repairs make the mechanism of a fault observable (issue 31, item 2): the radio
# baseline (a relay chain whose lead the ego hears directly, an agent or RSU out of range) and a phantom's needless
# brake with nobody behind to strike it (``phantom_follower``: a tailgater is added). A campaign applies them to the
# parsed spec when they set only the fields below: range, RSU placement, where the vehicles are, an added vehicle.
# Never the fault, the stream or the application: a repair that touches them is reported.
OBSERVABILITY_CHECKS = frozenset({"channel_baseline", PHANTOM_FOLLOWER})
_OBSERVABILITY_FIELD = re.compile(r"v2x\.channel\.range_m|v2x\.rsu_placement|agents\[\d+\]\.gap_m"
                                  r"|ego\.start_distance_m|agents\[\+\]")
_ASKED_FIELD = re.compile(r"faults\b.*|application|.*\.stream")  # what the user asked to test
MAX_REPAIRS = 3  # repairs applied to one spec (each one re-verified)
GIVEN = "*"  # stated fields of a given spec: all of them


def value_at(data: Any, path: str) -> Any:
    """The value of a verifier path (``agents[1].gap_m``) in spec JSON data; None where it is unset (and for an
    appended item, ``agents[+]``)."""
    if path.endswith("[+]"):
        return None
    for name, index in re.findall(r"([a-z_][a-z0-9_]*)|\[(\d+)\]", path):
        try:
            data = data[name] if name else data[int(index)]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def observability_repairs(spec: ScenarioSpec, stated: frozenset[str] = frozenset()
                          ) -> tuple[ScenarioSpec, list[dict[str, Any]]]:
    """The spec with the verifier's observability repairs applied (``OBSERVABILITY_CHECKS``, fields
    ``_OBSERVABILITY_FIELD`` only), and a record of every repair considered: applied, or why not
    (it would change the fault asked for, a field in ``stated`` — the intent's own words; ``GIVEN``:
    every field — or it leaves a verifier error). Each applied repair is re-verified before the next;
    a pure function of the spec: the same spec gives the same repairs."""
    records: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for _ in range(MAX_REPAIRS):
        report = verify(spec)
        data = spec_to_dict(spec)
        applied = False
        for f in report.findings:
            r = f.repair
            if r is None or not r.patch or f.severity is Severity.ERROR or (f.check, f.message) in seen:
                continue
            paths = [path for path, _ in r.patch]
            asked = [path for path in paths if _ASKED_FIELD.fullmatch(path)]
            if not asked and f.check not in OBSERVABILITY_CHECKS:
                continue  # neither observability nor the fault: the finding stays a finding
            seen.add((f.check, f.message))
            record = _repair_record(f, data)
            given = [path for path in paths if GIVEN in stated or path in stated]
            if asked:
                record["reason"] = (f"it would change the fault asked for ({', '.join(asked)}): the fault stays as "
                                    "written")
            elif not all(_OBSERVABILITY_FIELD.fullmatch(path) for path in paths):
                record["reason"] = "it sets more than range and geometry"
            elif given:
                record["reason"] = (f"the given spec sets {', '.join(given)}" if GIVEN in stated else
                                    f"the intent states {', '.join(given)}")
            else:
                try:
                    patched = parse_spec(apply_patch(data, r.patch))
                except InvalidArgument as exc:
                    record["reason"] = f"the repaired spec is invalid: {exc}"[:300]
                else:
                    if _errors(verify(patched)) <= _errors(report):
                        spec, applied = patched, True
                        record["applied"] = True
                    else:
                        record["reason"] = "the repaired spec fails verification"
            records.append(record)
            if applied:
                break  # re-verify the repaired spec
        if not applied:
            break
    return spec, records


def _errors(report: Any) -> set[tuple[str, tuple[str, ...]]]:
    return {(f.check, f.fields) for f in report.findings if f.severity is Severity.ERROR}


def verifier_repaired(spec: ScenarioSpec) -> tuple[ScenarioSpec | None, list[dict[str, Any]]]:
    """The nearest version of ``spec`` the verifier passes: its ERROR findings' repairs applied one at a time, each
    re-verified (at most ``MAX_REPAIRS``), and a record of each (applied). None when none is left that verifies.
    A campaign runs this as a search step after the spec as stated (the parser keeps what an intent states, so an
    ineffective 0.2 s delay runs as 0.2 s first): a pure function of the spec."""
    records: list[dict[str, Any]] = []
    for _ in range(MAX_REPAIRS):
        report = verify(spec)
        errors = [f for f in report.findings if f.severity is Severity.ERROR]
        if not errors:
            return (spec, records) if records else (None, [])
        data = spec_to_dict(spec)
        f = next((e for e in errors if e.repair is not None and e.repair.patch and not _turns_a_fault(e, data)), None)
        if f is None:
            return None, []
        record = _repair_record(f, data)
        try:
            spec = parse_spec(apply_patch(data, f.repair.patch))  # type: ignore[union-attr]
        except (InvalidArgument, IndexError, KeyError, TypeError):
            return None, []
        record["applied"] = True
        record["reason"] = "a search step: the spec as stated ran first and does not meet the verifier"
        records.append(record)
    return (spec, records) if not _errors(verify(spec)) else (None, [])


# the ego's start distances a scene that does not fit its map is tried at, nearest first, when the intent states none
# (the parser's 120 m default): a crossing or oncoming car that must reach the conflict point with the ego needs road
# in proportion to the ego's approach time, and a built-in map's side approaches are 150-170 m long
FIT_START_DISTANCES_M = (100.0, 80.0, 60.0, 45.0)
START_DISTANCE = "ego.start_distance_m"
_RUN_UP = re.compile(r"\brun[-_ ]up\b", re.IGNORECASE)


def run_up_repaired(spec: ScenarioSpec, why: str, stated: frozenset[str],
                    grounds: Callable[[ScenarioSpec], bool]) -> tuple[ScenarioSpec | None, dict[str, Any]]:
    """When a spec does not ground for want of road before the junction (``why``: the grounding's reason) and the
    intent states no start distance, the spec at the nearest shorter start (``FIT_START_DISTANCES_M``) that grounds
    (``grounds``) and meets the verifier no worse; with its record (applied, or why not). A pure function of its
    arguments: the same spec gives the same repair."""
    record: dict[str, Any] = {"check": "grounding.run_up", "message": why[:300],
                              "description": "start the ego nearer the junction, so that the conflicting car's approach "
                                             "fits the map's road",
                              "patch": [], "applied": False, "reason": ""}
    if not _RUN_UP.search(why):
        return None, record
    if GIVEN in stated or START_DISTANCE in stated:
        record["reason"] = "the intent states the ego's start distance"
        return None, record
    before = _errors(verify(spec))
    for distance in FIT_START_DISTANCES_M:
        if distance >= spec.ego.start_distance_m:
            continue
        fitted = spec.model_copy(update={"ego": spec.ego.model_copy(update={"start_distance_m": distance})})
        if _errors(verify(fitted)) <= before and grounds(fitted):
            record["patch"] = [{"field": START_DISTANCE, "from": spec.ego.start_distance_m, "value": distance}]
            record["applied"] = True
            return fitted, record
    record["reason"] = f"no start distance down to {FIT_START_DISTANCES_M[-1]:g} m fits the map"
    return None, record


TOWN = "map.town"


def town_repaired(spec: ScenarioSpec, why: str, stated: frozenset[str], towns: tuple[str, ...],
                  grounds: Callable[[ScenarioSpec], bool]) -> tuple[ScenarioSpec | None, dict[str, Any]]:
    """When a spec does not ground (``why``: the grounding's reason) on the town the parser assigned from the seed,
    the spec on the first other town of ``towns`` (the parser's pool: the maps it judged able to host the request,
    in its order) that it grounds on (``grounds``), nothing else changed; with its record (applied, or why not).
    No record (no patch, no reason) when the intent states the town or the parser chose among one. A pure function of
    its arguments: the same spec gives the same repair."""
    record: dict[str, Any] = {"check": "grounding.town", "message": why[:300],
                              "description": "place the scene on another town the intent leaves open, where it fits",
                              "patch": [], "applied": False, "reason": ""}
    others = [t for t in towns if t != spec.map.town]
    if GIVEN in stated or TOWN in stated or not others:
        return None, record
    for town in others:
        moved = spec.model_copy(update={"map": spec.map.model_copy(update={"town": town})})
        if grounds(moved):
            record["patch"] = [{"field": TOWN, "from": spec.map.town, "value": town}]
            record["applied"] = True
            return moved, record
    record["reason"] = f"it fits none of the other towns the intent leaves open ({', '.join(others)})"
    return None, record


def _turns_a_fault(f: Finding, data: dict[str, Any]) -> bool:
    """Does the repair reverse a fault's direction (a signed magnitude to the other sign: "reported behind" to
    "reported ahead", "slower" to "faster")? That is another fault, not a stronger or weaker one: a search step
    never takes it (the finding stays in the report, for the user to read)."""
    assert f.repair is not None
    for path, value in f.repair.patch:
        if re.fullmatch(r"faults\[\d+\]\.magnitude", path) and isinstance(value, int | float):
            was = value_at(data, path)
            if isinstance(was, int | float) and was * value < 0:
                return True
    return False


def _repair_record(f: Finding, data: dict[str, Any]) -> dict[str, Any]:
    assert f.repair is not None
    return {"check": f.check, "message": f.message, "description": f.repair.description,
            "patch": [{"field": path, "from": value_at(data, path), "value": value} for path, value in f.repair.patch],
            "applied": False, "reason": ""}


def repair_text(r: dict[str, Any]) -> str:
    """One line for a repair record: what was applied (field old -> new), or what was not and why."""
    change = ", ".join(f"{p['field']} {p.get('from')} -> {p['value']}" for p in r["patch"])
    if r["applied"] and r.get("origin") == "search":
        return (f"searched on from the verifier's repair ({r['check']}): {r['description']}: {change} (the intent's "
                "own value ran first)")
    if r["applied"]:
        return f"repaired ({r['check']}): {r['description']}: {change}"
    return f"repair not applied ({r['check']}): {r['description']} ({change}): {r['reason']}"


__all__ = ["FIT_START_DISTANCES_M", "GIVEN", "MAX_REPAIRS", "OBSERVABILITY_CHECKS", "observability_repairs",
           "repair_text", "run_up_repaired", "value_at", "verifier_repaired"]
