"""The witness catalogue key: application × fault family × penetration band × conflict geometry.

Two admitted failures with the same key are *equivalent* for a user: the same
application broken by the same kind of fault, at the same level of V2X deployment, in
the same interaction. The catalogue keeps one witness per key and counts the rest
(LAST-V2X §2.5: "to discourage repeated discovery of equivalent failures").

A key holds only what the failure can depend on: the penetration band only where there is
background traffic for it to equip (``map.busy``), else ``n/a``. Two witnesses with
different keys are still one failure when their minimized runs give the same
:func:`failure_signature` (the ego's decision sequence and how it failed, against whom).

:func:`admission_class` says what an admitted failure *is*: a ``fault`` (the spec injects
one), a ``declared_gap`` (no fault, but the intent's own words took communication away: no RSUs,
an unequipped vehicle, a changed channel or a lossy backhaul; a channel the campaign's observability
repair or the search changed is not declared) or a ``coverage_gap`` (the world's own radio did not
reach: no fault and nothing declared). Only the first two are communication-fault witnesses; a
coverage gap is reported apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lastv2x.core.spec import AgentRole, Channel, RsuPlacement, ScenarioSpec
from services.search.repairs import GIVEN

# Penetration bands: the verifier's 0.2 warning threshold, then halves of the rest.
PENETRATION_BANDS: tuple[tuple[float, float, str], ...] = (
    (0.0, 0.2, "[0.0,0.2)"), (0.2, 0.5, "[0.2,0.5)"), (0.5, 0.8, "[0.5,0.8)"), (0.8, 1.01, "[0.8,1.0]"))


@dataclass(frozen=True)
class CatalogKey:
    application: str
    fault_family: str  # sorted distinct "operator@STREAM" of the faults; "none" (e.g. an unequipped agent)
    penetration_band: str
    conflict_geometry: str  # ego manoeuvre, then the roles it interacts with ("!" = not equipped)

    @property
    def text(self) -> str:
        return "|".join((self.application, self.fault_family, self.penetration_band, self.conflict_geometry))

    def to_dict(self) -> dict[str, str]:
        return {"application": self.application, "fault_family": self.fault_family,
                "penetration_band": self.penetration_band, "conflict_geometry": self.conflict_geometry}


NO_BACKGROUND = "n/a"  # the penetration band of a scene with no background traffic: nothing to equip


def penetration_band(penetration: float) -> str:
    return next(name for lo, hi, name in PENETRATION_BANDS if lo <= penetration < hi)


def has_background_traffic(spec: ScenarioSpec) -> bool:
    """Does the scene hold background vehicles, the only ones ``v2x.penetration`` equips?"""
    count = spec.variation.background_vehicles if spec.variation is not None else None
    return spec.map.busy and (count is None or count.max > 0)


def catalog_key(spec: ScenarioSpec) -> CatalogKey:
    family = "+".join(sorted({f"{f.operator.value}@{f.stream.value}" for f in spec.faults})) or "none"
    roles = sorted(f"{a.role.value}{'' if a.equipped else '!'}" for a in spec.agents
                   if a.role is not AgentRole.BACKGROUND)
    geometry = "-".join([spec.ego.maneuver.value, *roles])
    band = penetration_band(spec.v2x.penetration) if has_background_traffic(spec) else NO_BACKGROUND
    return CatalogKey(spec.application.value, family, band, geometry)


def admission_class(spec: ScenarioSpec, stated: frozenset[str] | None = None) -> str:
    """``fault``, ``declared_gap`` or ``coverage_gap``: see the module docstring. ``stated``: the spec fields the
    intent's own words set (``services.search.pipeline.stated_fields``; ``repairs.GIVEN``: a given spec, all of them; None:
    all): a gap counts as declared only where the user said it, not where a repair or a mutation made it."""
    if spec.faults:
        return "fault"

    def said(path: str) -> bool:
        return stated is None or GIVEN in stated or any(p == path or p.startswith(path + ".") for p in stated)

    v2x = spec.v2x
    declared = ((v2x.rsu_placement is RsuPlacement.NONE and said("v2x.rsu_placement"))
                or (not spec.ego.equipped and said("ego.equipped"))
                or any(not a.equipped and said(f"agents[{k}].equipped") for k, a in enumerate(spec.agents))
                or (v2x.channel != Channel() and said("v2x.channel"))
                or (v2x.backhaul is not None and v2x.backhaul.loss > 0 and said("v2x.backhaul")))
    return "declared_gap" if declared else "coverage_gap"


def failure_signature(outcome: dict[str, Any]) -> str:
    """What a user sees of a failure: the application, the message-driven ego's decisions (runs of the
    same action collapsed), how it failed (contact, red or amber entry, near miss) and against whom."""
    md = outcome.get("md") or {}
    actions = [str(d.get("action", "")) for d in md.get("decisions") or ()]
    collapsed = [a for i, a in enumerate(actions) if i == 0 or a != actions[i - 1]]
    how = ("contact" if md.get("collision") else "red_entry" if md.get("red_entries")
           else "amber_entry" if md.get("amber_entries") else "near_miss")
    return "|".join((str(outcome.get("application", "")), ">".join(collapsed), how,
                     str(md.get("closest_vehicle_id") or "")))


__all__ = ["NO_BACKGROUND", "PENETRATION_BANDS", "CatalogKey", "admission_class", "catalog_key",
           "failure_signature", "has_background_traffic", "penetration_band"]
