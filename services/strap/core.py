"""The STRaP service's pure core: what the servicer calls (no grpc here).

``StrapCore(config)`` (or ``StrapCore(store=...)``) owns the recording store
(``services.strap.store``); its methods are the five RPCs:

* ``ingest(name, chunks) -> RecordingInfo`` (Ingest: a complete, readable recording
  under the size cap, or InvalidArgument naming the file);
* ``reduce(recording_id, module, params) -> (FrameTable, Reduction)`` (Reduce: align ->
  vectorize -> smooth -> segment -> clip -> de-duplicate, cached per request);
* ``prioritize(method, vectors, recording_ids, call_counts, seed) -> order`` (Prioritize;
  RSC reads the frame vectors of the recording's last reduction);
* ``evaluate(matrix) -> Evaluation | None`` (Evaluate: APFD and Top-K of the given order
  against a segments x faults matrix; None when no fault is detected);
* ``export(recording_id, segment_ids, out) -> None`` (ExportSegments: the kept segments
  with their pre-roll, as MCAP).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lastv2x.core.errors import FieldViolation, InvalidArgument

from .evaluate import apfd, top_k
from .pipeline import export_reduction
from .prioritize import METHODS, prioritize
from .reduce import ReduceParams, Reduction
from .store import RecordingInfo, StrapConfig, StrapStore
from .vectorize import FrameTable


@dataclass(frozen=True)
class Evaluation:
    apfd: float
    top_k: int
    faults_detected: int


class StrapCore:
    """Recordings in, reduced and prioritized segments out."""

    def __init__(self, config: StrapConfig | None = None, *, store: StrapStore | None = None):
        if store is None:
            config = config or StrapConfig()
            store = StrapStore(config.store_dir, config.max_bytes, config.limits, config.quota_bytes)
        self.store = store

    def ingest(self, name: str, chunks: Iterable[bytes], channel_map: str = "") -> RecordingInfo:
        return self.store.ingest_chunks(name, chunks, channel_map)

    def reduce(self, recording_id: str, module: str, params: ReduceParams,
               stop: Callable[[], bool] | None = None, channel_map: str = "", strict: bool = False
               ) -> tuple[FrameTable, Reduction]:
        return self.store.reduce(recording_id, module, params, stop, channel_map, strict)

    def prioritize(self, method: str, vectors: Sequence[Sequence[int]], recording_ids: Sequence[str],
                   call_counts: Sequence[int] = (), seed: int = 0) -> list[int]:
        """Segment indices, highest priority first (one order: ``n_shuffles = 1``)."""
        if method not in METHODS:
            raise InvalidArgument(FieldViolation("method", f"unknown method {method}", ", ".join(METHODS)))
        if not 0 <= seed <= 2**63 - 1:
            raise InvalidArgument(FieldViolation("seed", f"{seed} is outside [0, 2**63 - 1]", "use a non-negative seed"))
        if not vectors:
            return []
        if len({len(v) for v in vectors}) != 1:
            raise InvalidArgument(FieldViolation("segments", "vectors differ in length", "send one reduction"))
        frames = None
        if method == "RSC":
            ids = set(recording_ids)
            if len(ids) != 1:
                raise InvalidArgument(FieldViolation("segments", "RSC needs segments of one recording",
                                                     "prioritize each recording's reduction"))
            frames = self.store.last_reduction(ids.pop())[0].vectors
        if method == "CC" and len(call_counts) != len(vectors):
            raise InvalidArgument(FieldViolation("call_counts", "need one call count per segment",
                                                 f"send {len(vectors)} counts"))
        order = prioritize(method, np.asarray(vectors, dtype=np.int64), frame_vectors=frames,
                           call_counts=list(call_counts) or None, seed=seed, n_shuffles=1)
        return np.asarray(order).reshape(-1, len(vectors))[0].tolist()

    def evaluate(self, columns: Sequence[Sequence[bool]]) -> Evaluation | None:
        """Score the segments' own order against ``columns`` (one per fault: revealed by segment i)."""
        if not columns:
            raise InvalidArgument(FieldViolation("faults", "empty fault matrix", "one column per fault"))
        lengths = {len(c) for c in columns}
        if len(lengths) != 1 or 0 in lengths:
            raise InvalidArgument(FieldViolation("faults", "columns differ in length or are empty",
                                                 "one entry per segment in every column"))
        matrix = np.asarray([list(c) for c in columns], dtype=bool).T  # segments x faults
        order = np.arange(matrix.shape[0])
        detected = matrix.any(axis=0)
        if not detected.any():
            return None
        first = top_k(order, matrix)
        return Evaluation(apfd(order, matrix[:, detected]), int(first or 0), int(detected.sum()))

    def export(self, recording_id: str, segment_ids: Sequence[str], out: Path) -> None:
        """Write the kept segments ``segment_ids`` (ids of the Reduce reply; all when empty) to ``out``."""
        info = self.store.get(recording_id)
        _table, reduction = self.store.last_reduction(recording_id)
        by_id = {f"{recording_id}:{s.index}": k for k, s in enumerate(reduction.segments)}
        unknown = [s for s in segment_ids if s not in by_id]
        if unknown:
            raise InvalidArgument(FieldViolation("segment_ids", f"not kept segments: {unknown[:5]}",
                                                 "use ids from the Reduce reply"))
        indices = [by_id[s] for s in segment_ids] or None
        export_reduction(info.path, reduction, out, segment_indices=indices)


__all__ = ["Evaluation", "StrapCore"]
