"""Signal-semantic map catalogue: junctions and approaches of every map, cached on disk.

For every map (the built-in maps and any ``.xodr`` a user adds by path or
directory) the catalogue extracts what grounding needs to *retrieve* and
*validate* a scene, from the one OpenDRIVE parser (``services.simulator.maps``):

* junctions: centre, approach count, signalization, kind tags (``signalized_4way``,
  ``t_junction``, ``corridor``, ``urban_canyon``, ``merge``), speed limit,
  building exposure (count, built-up fraction and heights of the buildings around
  it: the channel's blockage exposure), candidate RSU sites (junction corners, with
  the number of approaches each sees without a building in the way);
* approaches: heading, lanes (ordered left to right), stop bars, movements
  (straight / left / right / U-turn and the signal group of each), speed limit,
  the run-up available upstream of the stop bar (through upstream junctions if
  need be), and, along the straight movement, the distance to the next junction
  and the chain of junctions ahead (corridors);
* conflict points between movements (crossing or merging).

Entries are plain data (JSON) versioned by the map's content hash
(``RoadMap.content_sha256``) and cached under a directory (default
``~/.cache/lastv2x/catalogue``), keyed by a fingerprint of the map's source bytes,
so a map is parsed and extracted again only when its bytes change. A map that
fails to load (``MapError``: hostile, broken, too large) is reported in
``MapCatalogue.errors`` and skipped; every other map keeps serving.

The entries are ``services.grounding.entries``, their extraction
``services.grounding.extract``; this module serves them and keeps the cache.
Geometry for programs (route polylines) never comes from this JSON: grounding asks
``MapCatalogue.road_map(name)`` for the parsed ``RoadMap`` and uses its route API.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lastv2x.core.catalogue import canonical_map_name
from services.grounding.entries import (
    CATALOGUE_VERSION,
    JunctionInfo,
    MapEntry,
    MapErrorEntry,
    entry_from_dict,
    entry_to_dict,
)
from services.grounding.extract import extract
from services.simulator.maps import (
    MapError,
    MapSettings,
    RoadMap,
    builtin_map_names,
    builtin_sources,
    fingerprint_variant,
    load_map,
)
from services.simulator.maps.assemble import content_hash
from services.simulator.maps.buildings import MAX_JSON_BYTES
from services.simulator.maps.xodr_facts import Limits


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "lastv2x" / "catalogue"


@dataclass(frozen=True)
class MapSource:
    name: str
    origin: str  # "builtin" or "file"
    path: Path | None = None

    @property
    def label(self) -> str:
        return "builtin" if self.origin == "builtin" else str(self.path)


@dataclass(frozen=True)
class CatalogueConfig:
    """Where maps come from and where the catalogue caches its entries."""

    cache_dir: Path | None = None  # None = default_cache_dir()
    include_builtins: bool = True
    map_paths: tuple[Path, ...] = ()  # .xodr files or directories of them (not recursive)
    map_cache_dir: Path | None = None  # where built-in maps' generated files go (maps layer default)
    use_cache: bool = True
    road_map_cache_size: int = 16  # parsed RoadMaps kept in memory (the 8 CARLA towns + built-ins fit)
    limits: Limits = field(default_factory=Limits)
    map_settings: MapSettings = MapSettings()  # how user maps load (generated buildings, signalized 4-ways)


@dataclass
class CatalogueStats:
    builds: int = 0  # maps parsed and extracted
    cache_hits: int = 0  # entries read from the disk cache
    errors: int = 0
    road_map_loads: int = 0
    refreshes: int = 0
    build_s: float = 0.0


class MapCatalogue:
    """Every map's entry, loaded from the disk cache or built; the maps' RoadMaps on demand."""

    def __init__(self, config: CatalogueConfig | None = None, *, autoload: bool = True):
        self.config = config or CatalogueConfig()
        self.cache_dir = Path(self.config.cache_dir) if self.config.cache_dir is not None else default_cache_dir()
        self.stats = CatalogueStats()
        self._lock = threading.RLock()
        self._maps: dict[str, MapEntry] = {}
        self._sources: dict[str, MapSource] = {}
        self._errors: dict[str, MapErrorEntry] = {}
        self._road_maps: OrderedDict[str, RoadMap] = OrderedDict()
        if autoload:
            self.refresh()

    # ---------------------------------------------------------------- sources
    def sources(self) -> list[MapSource]:
        out: list[MapSource] = []
        if self.config.include_builtins:
            out += [MapSource(n, "builtin") for n in builtin_map_names()]
        for p in self.config.map_paths:
            p = Path(p)
            if p.is_dir():
                out += [MapSource(f.stem, "file", f) for f in sorted(p.glob("*.xodr")) if f.is_file()]
            else:
                out.append(MapSource(p.stem, "file", p))
        return out

    def _fingerprint(self, src: MapSource) -> str:
        if src.origin == "builtin":
            xodr, generated = builtin_sources(src.name)
            return content_hash(xodr.encode("utf-8"), generated)
        assert src.path is not None
        try:
            size = src.path.stat().st_size
        except OSError as exc:
            raise MapError(src.name, f"cannot read {src.path}: {exc.strerror or exc}") from None
        if size > self.config.limits.max_bytes:
            raise MapError(src.name, f"file is {size} bytes, over the cap of {self.config.limits.max_bytes}")
        data = src.path.read_bytes()
        side = src.path.with_name(src.path.stem + ".buildings.json")
        bjson: bytes | None = None
        if side.is_file():
            if side.stat().st_size > MAX_JSON_BYTES:
                raise MapError(str(side), f"buildings JSON over the cap of {MAX_JSON_BYTES} bytes")
            bjson = side.read_bytes()
        options = self.config.map_settings.load_options(src.name)
        return content_hash(data, bjson, fingerprint_variant(options, bjson is not None))

    def _cache_path(self, name: str, fingerprint: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]
        return self.cache_dir / f"{safe}.{fingerprint[:24]}.c{CATALOGUE_VERSION}.json"

    def _read_cache(self, path: Path, fingerprint: str) -> MapEntry | None:
        if not self.config.use_cache or not path.is_file():
            return None
        try:
            entry = entry_from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # corrupt or foreign: rebuild
        return entry if entry.fingerprint == fingerprint else None

    def _write_cache(self, path: Path, entry: MapEntry) -> None:
        if not self.config.use_cache:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            data = json.dumps(entry_to_dict(entry), sort_keys=True, separators=(",", ":")).encode("utf-8")
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            stem = path.name.split(".")[0]
            for old in path.parent.glob(f"{stem}.*.c{CATALOGUE_VERSION}.json"):
                if old != path and old.name.split(".")[0] == stem:
                    old.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only cache only costs rebuilds

    def _load(self, src: MapSource) -> RoadMap:
        self.stats.road_map_loads += 1
        if src.origin == "builtin":
            return load_map(src.name, cache_dir=self.config.map_cache_dir)
        assert src.path is not None
        return load_map(src.path, options=self.config.map_settings.load_options(src.name))

    # ---------------------------------------------------------------- refresh
    def refresh(self) -> None:
        """Rescan the sources; rebuild only entries whose source bytes changed."""
        with self._lock:
            self.stats.refreshes += 1
            maps: dict[str, MapEntry] = {}
            sources: dict[str, MapSource] = {}
            errors: dict[str, MapErrorEntry] = {}
            for src in self.sources():
                if src.name in sources:
                    errors[f"{src.name}@{src.label}"] = MapErrorEntry(
                        src.name, src.label, f"duplicate map name (already served from {sources[src.name].label})")
                    continue
                try:
                    fp = self._fingerprint(src)
                    path = self._cache_path(src.name, fp)
                    old = self._maps.get(src.name)
                    entry: MapEntry | None
                    if old is not None and old.fingerprint == fp:
                        entry = old
                    else:
                        entry = self._read_cache(path, fp)
                        if entry is not None:
                            self.stats.cache_hits += 1
                        else:
                            t0 = time.perf_counter()
                            rm = self._load(src)
                            built = extract(rm, fingerprint=fp, source=src.label)
                            # round-trip so a fresh build and a cache hit are the same data
                            entry = entry_from_dict(json.loads(json.dumps(entry_to_dict(built))))
                            self.stats.builds += 1
                            self.stats.build_s += time.perf_counter() - t0
                            self._write_cache(path, entry)
                            self._remember(src.name, rm)
                        if old is not None and old.fingerprint != fp:
                            self._road_maps.pop(src.name, None)
                    maps[src.name] = entry
                    sources[src.name] = src
                except MapError as exc:
                    self.stats.errors += 1
                    errors[src.name] = MapErrorEntry(src.name, src.label, exc.reason)
                    self._road_maps.pop(src.name, None)
                except OSError as exc:
                    self.stats.errors += 1
                    errors[src.name] = MapErrorEntry(src.name, src.label, f"cannot read: {exc}")
            for name in list(self._road_maps):
                if name not in maps:
                    self._road_maps.pop(name)
            self._maps, self._sources, self._errors = maps, sources, errors

    def add_path(self, path: str | os.PathLike[str]) -> None:
        """Serve another .xodr file or directory (then refresh)."""
        self.config = CatalogueConfig(**{**self.config.__dict__,
                                         "map_paths": (*self.config.map_paths, Path(path))})
        self.refresh()

    # ---------------------------------------------------------------- access
    @property
    def maps(self) -> dict[str, MapEntry]:
        return dict(self._maps)

    @property
    def errors(self) -> dict[str, MapErrorEntry]:
        return dict(self._errors)

    def names(self) -> tuple[str, ...]:
        return tuple(self._maps)

    def entry(self, name: str) -> MapEntry:
        try:
            return self._maps[name]
        except KeyError:
            raise KeyError(f"unknown map {name!r}; known: {sorted(self._maps)}") from None

    def resolve_name(self, name: str) -> str | None:
        """Catalogue name for a user-given one ('town 3' -> 'Town03', case-insensitive)."""
        key = canonical_map_name(name).lower()
        for n in self._maps:
            if n.lower() == key:
                return n
        return None

    @property
    def version(self) -> str:
        """Changes whenever any served map changes (index keys, program provenance)."""
        h = hashlib.sha256(f"c{CATALOGUE_VERSION}".encode())
        for name in sorted(self._maps):
            h.update(f"{name}\0{self._maps[name].content_sha256}\0".encode())
        return h.hexdigest()[:16]

    def junctions(self) -> list[JunctionInfo]:
        return [j for name in sorted(self._maps) for j in self._maps[name].junctions]

    def _remember(self, name: str, rm: RoadMap) -> None:
        self._road_maps[name] = rm
        self._road_maps.move_to_end(name)
        while len(self._road_maps) > max(1, self.config.road_map_cache_size):
            self._road_maps.popitem(last=False)

    def road_map(self, name: str) -> RoadMap:
        """The parsed RoadMap of a served map (kept in a small LRU)."""
        with self._lock:
            rm = self._road_maps.get(name)
            if rm is not None:
                self._road_maps.move_to_end(name)
                return rm
            entry = self.entry(name)
            rm = self._load(self._sources[name])
            if rm.content_sha256 != entry.content_sha256:
                raise MapError(name, "map changed since it was catalogued; refresh the catalogue")
            self._remember(name, rm)
            return rm

    def list_maps(self) -> list[dict[str, Any]]:
        """ListMaps: one summary per served map (fields of the MapSummary message)."""
        return [{"name": e.name, "content_sha256": e.content_sha256, "junction_count": len(e.junctions),
                 "signalized_junction_count": e.signalized_junction_count,
                 "building_count": int(e.summary.get("buildings", 0)), "source": e.source}
                for e in (self._maps[n] for n in sorted(self._maps))]


__all__ = ["CatalogueConfig", "CatalogueStats", "MapCatalogue", "MapSettings", "MapSource", "default_cache_dir"]
