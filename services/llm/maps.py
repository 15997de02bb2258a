"""What the LLM roles may assume about the map catalogue.

The grounding service owns the real catalogue (OpenDRIVE maps, junctions, FAISS
retrieval). The parser only needs a coarse view to reject geometry that no map has
(a roundabout, a 7-way junction, an unknown town) before grounding, and to assign a
town when the intent leaves it open. ``MapView`` is that view; the default lists the
four built-in maps the project generates and the eight CARLA towns of the paper's
benchmark, and assigns open towns among the built-in maps (``LlmConfig.map_view()``
is how the service and in-process callers build it, from ``LASTV2X_LLM_ASSIGNABLE_MAPS``).

The static facts above are a guess for maps the parser has not seen. Given the grounding
catalogue's view (``MapView.from_hosting``: its junctions' kind tags, approach counts and
signalization, ``lastv2x.core.map_hosting``), a town is only assigned when one of its
junctions can host the request — a signal application needs a signalized junction, so a
CARLA town whose junctions have no traffic lights is never assigned to RLVW or GLOSA.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lastv2x.core.catalogue import APPLICATIONS, Application, canonical_map_name  # noqa: F401 - re-exported
from lastv2x.core.map_hosting import JunctionFacts, MapHosting
from lastv2x.core.spec import JunctionKind

CARLA_TOWNS = ("Town01", "Town02", "Town03", "Town04", "Town05", "Town06", "Town07", "Town10HD")
BUILTIN_MAPS = ("signalized_4way", "t_junction", "unsignalized_4way", "corridor", "urban_canyon")


@dataclass(frozen=True)
class MapFacts:
    """One map as the parser sees it: name, junction kinds it offers, largest junction."""

    name: str
    junction_kinds: frozenset[JunctionKind]
    max_approaches: int = 4
    signalized: bool = True
    hosting: MapHosting | None = None  # the grounding catalogue's junctions, when known

    def offers(self, kind: JunctionKind, min_approaches: int = 3, signalized: bool | None = None,
               junctions_ahead: int = 0) -> bool:
        """``junctions_ahead``: junctions needed ahead along the road (``map_hosting.junctions_ahead_needed``);
        judged only where the junctions are known (a map known by name alone: grounding decides)."""
        if self.hosting is not None:  # per junction, as grounding will search it
            return self.hosting.hosts(kind.value, min_approaches, signalized, junctions_ahead)
        kind_ok = kind is JunctionKind.ANY or kind in self.junction_kinds
        return kind_ok and min_approaches <= self.max_approaches and (signalized is not True or self.signalized)


def _facts(name: str, *kinds: JunctionKind, max_approaches: int = 4) -> MapFacts:
    return MapFacts(name, frozenset(kinds), max_approaches)


def _builtin(name: str, *junctions: tuple[tuple[str, ...], int, bool, int]) -> MapFacts:
    """A built-in map's junctions as grounding catalogues them (kind tags, approaches, signalized, junctions ahead
    along the road): known exactly, so hosting is judged per junction (tests/llm compares them with the catalogue)."""
    hosting = MapHosting(name, tuple(JunctionFacts(frozenset(kinds), n, signalized, ahead)
                                     for kinds, n, signalized, ahead in junctions))
    values = {k.value for k in JunctionKind}
    return MapFacts(name, frozenset(JunctionKind(k) for k in hosting.kinds if k in values), hosting.max_approaches,
                    hosting.signalized_junctions > 0, hosting)


_J = JunctionKind
_SIGNALIZED_4WAY = (("signalized_4way",), 4, True, 0)
_CORRIDOR = ("signalized_4way", "corridor")
_CANYON = ("signalized_4way", "urban_canyon", "corridor")
DEFAULT_MAPS: tuple[MapFacts, ...] = (
    _builtin("signalized_4way", _SIGNALIZED_4WAY),
    _builtin("t_junction", (("t_junction",), 3, False, 0)),
    _builtin("unsignalized_4way", (("unsignalized_4way", "urban_canyon"), 4, False, 0)),
    # five junctions in a row: from either end four lie ahead
    _builtin("corridor", *[(_CORRIDOR, 4, True, ahead) for ahead in (4, 3, 2, 3, 4)]),
    # a three-by-three grid: at most two ahead along any street
    _builtin("urban_canyon", *[(_CANYON, 4, True, 2)] * 4, (("signalized_4way", "urban_canyon"), 4, True, 1),
             *[(_CANYON, 4, True, 2)] * 4),
    *(_facts(town, _J.SIGNALIZED_4WAY, _J.T_JUNCTION) for town in CARLA_TOWNS),
)


def junction_kind_for(kind: JunctionKind, application: object) -> JunctionKind:
    """The junction kind a town must offer when the intent leaves the town open: the one asked for;
    else FCW / EEBL run on any approach, and every other application (or one not known yet) needs a
    signalized 4-way junction — signal applications need a signal, IMA a straight cross movement on a
    perpendicular approach and LTA an opposing straight, which a T-junction lacks."""
    if kind is not JunctionKind.ANY:
        return kind
    info = APPLICATIONS[Application(application)] if isinstance(application, str) and application in APPLICATIONS \
        else None
    return JunctionKind(info.junction_kind) if info is not None else JunctionKind.SIGNALIZED_4WAY


@dataclass(frozen=True)
class MapView:
    """The maps the parser may name, and the pool a town is assigned from."""

    maps: tuple[MapFacts, ...] = DEFAULT_MAPS
    assignable: tuple[str, ...] = BUILTIN_MAPS  # served by grounding out of the box (LlmConfig.assignable_maps)

    def __post_init__(self) -> None:
        names = [m.name for m in self.maps]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate map names {dupes}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.maps)

    def get(self, name: str) -> MapFacts | None:
        key = canonical_map_name(name)
        return next((m for m in self.maps if m.name.lower() == key.lower()), None)

    def candidates(self, kind: JunctionKind, min_approaches: int = 3, signalized: bool | None = None,
                   junctions_ahead: int = 0) -> tuple[str, ...]:
        """Maps able to host the request, assignable pool first (falls back to any map; a traversal no map
        hosts, to the maps that host the rest, where grounding says how many junctions the road does cross)."""
        able = [m.name for m in self.maps if m.offers(kind, min_approaches, signalized, junctions_ahead)]
        if not able and junctions_ahead:
            able = [m.name for m in self.maps if m.offers(kind, min_approaches, signalized)]
        pool = [n for n in self.assignable if n in able]
        return tuple(pool or able)

    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted({k.value for m in self.maps for k in m.junction_kinds}))

    @classmethod
    def from_hosting(cls, hostings: Iterable[MapHosting], assignable: tuple[str, ...] = BUILTIN_MAPS) -> MapView:
        """The grounding catalogue's view: the maps it serves, with their junction facts (a map it does not
        serve is unknown: grounding could not place a scene on it)."""
        values = {k.value for k in JunctionKind}
        facts: dict[str, MapFacts] = {}
        for h in hostings:
            kinds = frozenset(JunctionKind(k) for k in h.kinds if k in values)
            facts[h.name] = MapFacts(h.name, kinds, h.max_approaches, h.signalized_junctions > 0, h)
        return cls(tuple(facts.values()), assignable)

    @classmethod
    def from_names(cls, names: Iterable[str]) -> MapView:
        """A view of maps known only by name (e.g. user .xodr files): any 3/4-way kind."""
        maps = tuple(_facts(n, _J.SIGNALIZED_4WAY, _J.T_JUNCTION) for n in names)
        return cls(maps, tuple(m.name for m in maps))

