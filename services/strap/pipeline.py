"""The calls a STRaP servicer makes, end to end, as plain functions.

``Ingest → Reduce → Prioritize → Evaluate → ExportSegments`` map one-to-one
onto :func:`ingest`, :func:`reduce_table`, :func:`prioritize_reduction`,
:func:`evaluate_orders` and :func:`export_reduction`; each takes and returns
plain data (numpy arrays and frozen dataclasses), so the servicer only converts
messages.  No grpc here.

Servicer notes: RSC needs the recording's *frame* vectors (feature rarity over
all frames), so keep the :class:`FrameTable` of an ingested recording next to
its :class:`Reduction` (the Prioritize request carries only segments).  The
proto's ``clip_frames = 0`` means "paper default": pass
``ReduceParams(clip_frames=45)`` for the literal paper value, or keep the
default ``clip_duration_s = 3.0`` (45 frames at 15 Hz, 60 at 20 Hz).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from .evaluate import Scores, evaluate_order, random_baseline
from .export import ExportSummary, export_segments
from .prioritize import METHODS, prioritize
from .readers import open_recording
from .reduce import ReduceParams, Reduction, reduce_frames
from .scene_schema import ChannelMap, select_channel_map
from .vectorize import FrameTable, vectorize_recording


def ingest(
    path: str | Path,
    channel_map: ChannelMap | Mapping | str | None = "platform",
    *,
    modules: Iterable[str] | None = None,
    reference_channel: str | None = None,
    missing: str = "error",
    backend: str = "auto",
) -> FrameTable:
    """Open, align and vectorize one recording (any supported format).

    ``channel_map``: a map, a built-in name, a file, inline JSON; None: chosen by the one
    rule, :func:`~services.strap.scene_schema.select_channel_map`. ``missing="none"`` reduces a
    partial recording (the table lists missing channels, zeroed features and ``warnings``)."""
    with open_recording(path, backend=backend) as rec:
        cmap = select_channel_map(channel_map, rec.format, rec.channels())
        return vectorize_recording(rec, cmap, modules=modules,
                                   reference_channel=reference_channel, missing=missing)


def reduce_table(table: FrameTable, params: ReduceParams | None = None) -> Reduction:
    """Smooth, segment, de-duplicate and clip an ingested recording."""
    return reduce_frames(table.timestamps_ns, table.vectors, params)


def prioritize_reduction(
    reduction: Reduction,
    table: FrameTable,
    method: str = "RSC",
    *,
    call_counts: Sequence[int] | None = None,
    seed: int = 0,
    n_shuffles: int = 100,
) -> np.ndarray:
    """Execution order of ``reduction.segments`` (RD: one order per shuffle)."""
    return prioritize(method, reduction.segment_vectors, frame_vectors=table.vectors,
                      call_counts=call_counts, seed=seed, n_shuffles=n_shuffles)


def evaluate_orders(
    reduction: Reduction,
    table: FrameTable,
    fault_matrix: np.ndarray,
    *,
    methods: Sequence[str] = METHODS,
    call_counts: Sequence[int] | None = None,
    seed: int = 0,
    n_shuffles: int = 100,
) -> Mapping[str, Scores]:
    """APFD and Top-K of each method on a (segments × faults) matrix."""
    out: dict[str, Scores] = {}
    for method in methods:
        name = method.upper()
        if name == "CC" and call_counts is None:
            continue
        if name == "RD":
            out[name] = random_baseline(fault_matrix, n_shuffles, seed)
        else:
            order = prioritize_reduction(reduction, table, name, call_counts=call_counts)
            out[name] = evaluate_order(order, fault_matrix)
    return out


def export_reduction(
    path: str | Path,
    reduction: Reduction,
    out_path: str | Path,
    *,
    segment_indices: Sequence[int] | None = None,
    channels: Iterable[str] | None = None,
    backend: str = "auto",
) -> ExportSummary:
    """Kept segments (all, or ``segment_indices`` of ``reduction.segments``) with
    their pre-roll, from the original recording at ``path``, as one MCAP file."""
    chosen = reduction.segments if segment_indices is None else [reduction.segments[i] for i in segment_indices]
    with open_recording(path, backend=backend) as rec:
        return export_segments(rec, chosen, out_path, channels=channels)
