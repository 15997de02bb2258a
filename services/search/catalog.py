"""The witness catalogue key: application × fault family × penetration band × conflict geometry.

Two admitted failures with the same key are *equivalent* for a user: the same
application broken by the same kind of fault, at the same level of V2X deployment, in
the same interaction. The catalogue keeps one witness per key and counts the rest
(LAST-V2X §2.5: "to discourage repeated discovery of equivalent failures").
"""

from __future__ import annotations

from dataclasses import dataclass

from lastv2x.core.spec import AgentRole, ScenarioSpec

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


def penetration_band(penetration: float) -> str:
    return next(name for lo, hi, name in PENETRATION_BANDS if lo <= penetration < hi)


def catalog_key(spec: ScenarioSpec) -> CatalogKey:
    family = "+".join(sorted({f"{f.operator.value}@{f.stream.value}" for f in spec.faults})) or "none"
    roles = sorted(f"{a.role.value}{'' if a.equipped else '!'}" for a in spec.agents
                   if a.role is not AgentRole.BACKGROUND)
    geometry = "-".join([spec.ego.maneuver.value, *roles])
    return CatalogKey(spec.application.value, family, penetration_band(spec.v2x.penetration), geometry)


__all__ = ["PENETRATION_BANDS", "CatalogKey", "catalog_key", "penetration_band"]
