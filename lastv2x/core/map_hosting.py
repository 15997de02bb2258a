"""Which maps can host a request: the grounding catalogue's junction facts, as plain data.

The grounding service owns the map catalogue (``services.grounding``: junctions with their
kind tags, approaches and signalization, extracted from each map's OpenDRIVE). The parser
assigns a town when an intent leaves it open and must only assign one that grounding can
then place the scene on. This module is the shared, dependency-free reading of a catalogue
entry (the JSON grounding writes to its cache directory, ``entry_to_dict``) and the junction
rule the parser applies to it:

* a junction hosts a request when it carries the requested kind tag (any kind: every
  junction; a 4-way asked for without signals: ``unsignalized_4way``), has at least ``min_approaches`` approaches, and is signalized when the request
  needs a signal; a map hosts it when one of its junctions does;
* a request needs a signal (``signal_required``) when it asks for one, asks for a
  signalized 4-way or a corridor, or its application decides from SPaT/MAP (RLVW, GLOSA),
  unless it asks for an unsignalized junction — the rule of grounding's
  ``services.grounding.index.requirements``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application

SIGNAL_KINDS = ("signalized_4way", "corridor")  # junction kinds that imply a signal


@dataclass(frozen=True)
class JunctionFacts:
    kinds: frozenset[str]  # grounding's kind tags: signalized_4way, t_junction, corridor, urban_canyon, ...
    approaches: int
    signalized: bool
    chain_ahead: int = 0  # the most junctions ahead of it along straight movements, from any approach


def junctions_ahead_needed(junctions_ahead: int = 0, whole_corridor: bool = False) -> int:
    """The junctions a request needs ahead of its own along the road (``map.junctions_ahead``; a whole corridor:
    at least one), as grounding's index asks its approaches' chains."""
    return max(int(junctions_ahead), 1 if whole_corridor else 0)


@dataclass(frozen=True)
class MapHosting:
    """One catalogued map, as far as hosting a request goes."""

    name: str
    junctions: tuple[JunctionFacts, ...]

    def hosts(self, junction_kind: str = "any", min_approaches: int = 3, signalized: bool | None = None,
              junctions_ahead: int = 0) -> bool:
        """Whether a junction of this map hosts the request (``junctions_ahead``: :func:`junctions_ahead_needed`)."""
        if junction_kind == "signalized_4way" and signalized is False:  # a 4-way asked for without signals
            junction_kind = "unsignalized_4way"
        return any((junction_kind == "any" or junction_kind in j.kinds) and j.approaches >= min_approaches
                   and (signalized is None or j.signalized == signalized) and j.chain_ahead >= junctions_ahead
                   for j in self.junctions)

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(k for j in self.junctions for k in j.kinds)

    @property
    def max_approaches(self) -> int:
        return max((j.approaches for j in self.junctions), default=0)

    @property
    def signalized_junctions(self) -> int:
        return sum(j.signalized for j in self.junctions)

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> MapHosting:
        """From a grounding catalogue entry as plain data (``services.grounding.entries.entry_to_dict``)."""
        junctions = tuple(JunctionFacts(frozenset(str(k) for k in j.get("kinds") or ()), len(j.get("approaches") or ()),
                                        bool(j.get("signalized")),
                                        max((len(a.get("chain_ahead") or ()) for a in j.get("approaches") or ()),
                                            default=0))
                          for j in entry["junctions"])
        return cls(str(entry["name"]), junctions)


def signal_required(application: Application | str | None, junction_kind: str = "any",
                    signalized: bool | None = None) -> bool | None:
    """True: the request needs a signalized junction; False: an unsignalized one; None: either."""
    if signalized is not None:
        return signalized
    if junction_kind in SIGNAL_KINDS:
        return True
    try:
        app = APPLICATIONS[Application(application)] if application is not None else None
    except (ValueError, KeyError):
        app = None
    return True if app is not None and app.kind is AppKind.SIGNAL else None


def load_catalogue_dir(path: str | Path) -> tuple[MapHosting, ...]:
    """Every map entry grounding cached under ``path`` (its LASTV2X_GROUNDING_CACHE_DIR): the newest
    entry per map name (a map rebuilt under other settings leaves its older entry behind); files of
    another schema or unreadable ones are skipped."""
    newest: dict[str, tuple[float, MapHosting]] = {}
    for f in sorted(Path(path).glob("*.json")):
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            hosting = MapHosting.from_entry(data)
            mtime = f.stat().st_mtime
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if hosting.name not in newest or mtime >= newest[hosting.name][0]:
            newest[hosting.name] = (mtime, hosting)
    return tuple(h for _t, h in (newest[n] for n in sorted(newest)))


def by_name(hostings: Iterable[MapHosting]) -> dict[str, MapHosting]:
    return {h.name: h for h in hostings}


__all__ = ["JunctionFacts", "MapHosting", "SIGNAL_KINDS", "by_name", "load_catalogue_dir", "signal_required"]
