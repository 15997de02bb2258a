"""Retrieval quality on a labelled query set: recall@k per embedder.

A query names its kind and either ``relevant`` document ids (knowledge,
behaviours) or a ``where`` predicate over approach metadata (every key must hold:
``map``, ``kinds_any``, ``signalized``, ``min_approaches``, ``compass``,
``turns_all``, ``lanes``). recall@k = |top-k ∩ relevant| / min(|relevant|, k),
averaged over queries; retrieval here is pure similarity (no spec filters), so
it measures the embedder.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.grounding.index import Doc, RetrievalIndex


@dataclass(frozen=True)
class Query:
    kind: str
    query: str
    relevant: tuple[str, ...] = ()
    where: dict[str, Any] | None = None


def load_queries(path: str | Path) -> list[Query]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return [Query(q["kind"], q["query"], tuple(q.get("relevant", ())), q.get("where")) for q in data["queries"]]


def matches(doc: Doc, where: dict[str, Any]) -> bool:
    m = doc.meta
    for key, want in where.items():
        if key == "map" and m.get("map") != want:
            return False
        if key == "kinds_any" and not set(want) & set(m.get("kinds", ())):
            return False
        if key == "signalized" and bool(m.get("signalized")) != bool(want):
            return False
        if key == "min_approaches" and m.get("approach_count", 0) < want:
            return False
        if key == "compass" and m.get("compass") != want:
            return False
        if key == "turns_all" and not set(want) <= set(m.get("turns", ())):
            return False
        if key == "lanes" and m.get("lanes") != want:
            return False
    return True


def relevant_ids(index: RetrievalIndex, q: Query) -> set[str]:
    if q.where is None:
        return set(q.relevant)
    return {d.id for d in index.indexes[q.kind].docs if matches(d, q.where)}


@dataclass(frozen=True)
class RecallReport:
    embedder: str
    k: int
    recall: float
    by_kind: dict[str, float]
    misses: tuple[str, ...]  # queries with recall 0
    queries: int


def recall_at_k(index: RetrievalIndex, queries: Sequence[Query], k: int = 5) -> RecallReport:
    per_kind: dict[str, list[float]] = {}
    misses = []
    for q in queries:
        rel = relevant_ids(index, q)
        if not rel:
            raise ValueError(f"query {q.query!r} has no relevant document in this catalogue")
        top = [h.id for h in index.search(q.kind, q.query, k)]
        r = len(set(top) & rel) / min(len(rel), k)
        per_kind.setdefault(q.kind, []).append(r)
        if r == 0:
            misses.append(q.query)
    allr = [r for rs in per_kind.values() for r in rs]
    return RecallReport(index.embedder.name, k, round(sum(allr) / len(allr), 4),
                        {kd: round(sum(rs) / len(rs), 4) for kd, rs in sorted(per_kind.items())}, tuple(misses),
                        len(allr))


__all__ = ["Query", "RecallReport", "load_queries", "matches", "recall_at_k", "relevant_ids"]
