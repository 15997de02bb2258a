"""The grounding service's pure core: what the servicer calls (no grpc here).

``GroundingCore(config)`` owns the map catalogue, the retrieval index and the
grounder; its three methods are the three RPCs:

* ``list_maps() -> list[dict]`` (ListMaps: one MapSummary per served map; broken
  maps are in ``map_errors()``),
* ``retrieve(kind, query, k=0, seed=0) -> list[Hit]`` (Retrieve; ``kind`` one of
  "approaches", "knowledge", "behaviours"; ``k = 0`` means 5),
* ``ground(spec) -> ScenarioProgram`` (Ground; FailedPrecondition names the failed
  constraint and the nearest feasible alternative).

``GroundingConfig.from_env()`` reads ``LASTV2X_GROUNDING_*`` variables once in
``main``: ``CACHE_DIR``, ``MAP_PATHS`` (``os.pathsep``-separated files or
directories of ``.xodr``; else the shared ``LASTV2X_MAP_PATHS``), ``BUILTINS`` (1/0),
``EMBEDDER`` (lexical, minilm, hybrid), ``K_JUNCTIONS``; the shared ``LASTV2X_MAP_*`` map settings
(``services.simulator.maps.settings``); and ``LASTV2X_LLM_TARGET``
(the servicer then plans scenes over gRPC; the core itself never dials).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import ScenarioSpec
from services.grounding.catalogue import CatalogueConfig, MapCatalogue, MapSettings
from services.grounding.embed import DEFAULT_EMBEDDER, make_embedder
from services.grounding.entries import MapErrorEntry
from services.grounding.ground import Grounder, GroundOptions, Planner
from services.grounding.index import KINDS, Hit, RetrievalIndex

MAX_K = 100
MAX_QUERY_CHARS = 4000


@dataclass(frozen=True)
class GroundingConfig:
    cache_dir: Path | None = None  # catalogue + embedding cache (default ~/.cache/lastv2x/catalogue)
    map_paths: tuple[Path, ...] = ()
    include_builtins: bool = True
    embedder: str = DEFAULT_EMBEDDER
    k_junctions: int = 3
    llm_target: str | None = None  # HOST:PORT of the LLM service's scene planner; None: in-process
    map_settings: MapSettings = MapSettings()  # LASTV2X_MAP_*: generated buildings, signalized 4-ways

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GroundingConfig:
        env = os.environ if env is None else env
        p = "LASTV2X_GROUNDING_"
        raw = env.get(p + "MAP_PATHS") or env.get("LASTV2X_MAP_PATHS", "")  # the latter is shared with the simulator
        paths = tuple(Path(x) for x in raw.split(os.pathsep) if x.strip())
        cache = env.get(p + "CACHE_DIR")
        return cls(cache_dir=Path(cache) if cache else None, map_paths=paths,
                   include_builtins=env.get(p + "BUILTINS", "1").strip().lower() not in ("0", "false", "no"),
                   embedder=env.get(p + "EMBEDDER", DEFAULT_EMBEDDER).strip() or DEFAULT_EMBEDDER,
                   k_junctions=int(env.get(p + "K_JUNCTIONS", "3")),
                   llm_target=env.get("LASTV2X_LLM_TARGET") or None,
                   map_settings=MapSettings.from_env(env))


class GroundingCore:
    def __init__(self, config: GroundingConfig | None = None, *, planner: Planner | None = None,
                 catalogue: MapCatalogue | None = None):
        self.config = config or GroundingConfig()
        self.catalogue = catalogue or MapCatalogue(CatalogueConfig(
            cache_dir=self.config.cache_dir, include_builtins=self.config.include_builtins,
            map_paths=self.config.map_paths, map_settings=self.config.map_settings))
        emb_cache = self.catalogue.cache_dir / "embeddings"
        self.index = RetrievalIndex(self.catalogue, embedder=make_embedder(self.config.embedder),
                                    embedding_cache=emb_cache)
        self.grounder = Grounder(self.catalogue, self.index, planner,
                                 GroundOptions(k_junctions=self.config.k_junctions))
        self._lock = threading.Lock()

    def refresh(self) -> None:
        """Rescan map sources (rebuilding only changed maps) and the index."""
        with self._lock:
            self.catalogue.refresh()
            self.index.refresh()

    def list_maps(self) -> list[dict[str, Any]]:
        return self.catalogue.list_maps()

    def map_errors(self) -> list[MapErrorEntry]:
        return [self.catalogue.errors[k] for k in sorted(self.catalogue.errors)]

    def retrieve(self, kind: str, query: str, k: int = 0, seed: int = 0) -> list[Hit]:
        bad = []
        if kind not in KINDS:
            bad.append(FieldViolation("kind", f"unknown kind {kind!r}", f"one of {list(KINDS)}"))
        if not query.strip():
            bad.append(FieldViolation("query", "empty query", "describe what to retrieve"))
        elif len(query) > MAX_QUERY_CHARS:
            bad.append(FieldViolation("query", f"longer than {MAX_QUERY_CHARS} characters"))
        if k < 0 or k > MAX_K:
            bad.append(FieldViolation("k", f"k = {k} out of range", f"0 (= 5) .. {MAX_K}"))
        if seed < 0:
            bad.append(FieldViolation("seed", "negative seed"))
        if bad:
            raise InvalidArgument(bad)
        return self.index.search(kind, query, k or 5, seed)

    def ground(self, spec: ScenarioSpec) -> ScenarioProgram:
        return self.grounder.ground(spec)


__all__ = ["GroundingConfig", "GroundingCore"]
