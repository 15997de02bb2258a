"""How user maps are loaded, shared by every service that loads one (``LASTV2X_MAP_*``).

``MapSettings`` is read with the settings of the service that holds it (grounding's
``GroundingConfig``; the CLI reads it for its in-process commands) and turned into the
``LoadOptions`` of one map by name. Built-in maps ship their own buildings and signals and are
never altered by these settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from lastv2x.core.settings import fields_from_env
from services.simulator.maps.derived import GENERATOR_VERSION
from services.simulator.maps.opendrive import LoadOptions

ENV_PREFIX = "LASTV2X_MAP_"


@dataclass(frozen=True)
class MapSettings:
    # a user map without a <stem>.buildings.json gets footprints derived from its roads
    # (services.simulator.maps.derived; an assumption): 0 = open space, as before
    generated_buildings: bool = True
    # user maps (file stems, or "*" for all) whose unsignalized 4-approach junctions are
    # signalized, one group per approach (older CARLA towns: Town03, Town05)
    signalize_4way: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> MapSettings:
        """``LASTV2X_MAP_GENERATED_BUILDINGS`` (1/0), ``LASTV2X_MAP_SIGNALIZE_4WAY`` (comma list)."""
        return cls(**fields_from_env(cls, env, ENV_PREFIX))

    def signalizes(self, name: str) -> bool:
        return "*" in self.signalize_4way or name in self.signalize_4way

    def load_options(self, name: str, base: LoadOptions | None = None) -> LoadOptions:
        """The loader options of the user map ``name`` (its file stem)."""
        return dataclasses.replace(base or LoadOptions(), generated_buildings=self.generated_buildings,
                                   signalize_4way=self.signalizes(name))


def fingerprint_variant(options: LoadOptions, has_sidecar: bool) -> bytes:
    """What a map's cache key must add to its source bytes' hash for these options."""
    out = options.variant()
    if options.generated_buildings and not has_sidecar:
        out += b"|generated_buildings/%d" % GENERATOR_VERSION
    return out


__all__ = ["ENV_PREFIX", "MapSettings", "fingerprint_variant"]
