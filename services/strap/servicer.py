"""gRPC servicer of the STRaP service: parse request -> call core -> build reply.

Ingest streams a recording into the store (``services.strap.store``); Reduce runs
align -> vectorize -> smooth -> segment -> clip -> de-duplicate; Prioritize orders
segments (RSC uses the recording's frame vectors, kept from Reduce); Evaluate scores
an order against a fault matrix; ExportSegments streams the kept segments (with their
1 s pre-roll) as MCAP.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.v1 import common_pb2, strap_pb2, strap_pb2_grpc

from .evaluate import apfd, top_k
from .pipeline import export_reduction
from .prioritize import prioritize
from .reduce import ReduceParams, Reduction
from .store import RecordingInfo, StrapConfig, StrapStore

CHUNK_BYTES = 1 << 20
_METHODS = {strap_pb2.PRIORITIZATION_METHOD_UNSPECIFIED: "RSC", strap_pb2.PRIORITIZATION_METHOD_RSC: "RSC",
            strap_pb2.PRIORITIZATION_METHOD_SC: "SC", strap_pb2.PRIORITIZATION_METHOD_CH: "CH",
            strap_pb2.PRIORITIZATION_METHOD_RD: "RD", strap_pb2.PRIORITIZATION_METHOD_CC: "CC"}


def _recording(info: RecordingInfo) -> common_pb2.Recording:
    msg = common_pb2.Recording(id=info.id, name=info.name, format=info.format, start_ns=info.start_ns,
                               end_ns=info.end_ns, size_bytes=info.size_bytes)
    for name, (encoding, count) in sorted(info.channels.items()):
        msg.channels.add(name=name, encoding=encoding or "", message_count=count)
    return msg


def _segments(recording_id: str, reduction: Reduction) -> list[common_pb2.Segment]:
    return [common_pb2.Segment(id=f"{recording_id}:{s.index}", recording_id=recording_id, start_ns=s.start_ns,
                               end_ns=s.clip_last_ns, preroll_start_ns=s.preroll_start_ns,
                               frame_count=s.clip_frames, vector=list(s.vector)) for s in reduction.segments]


class StrapServicer(strap_pb2_grpc.StrapServiceServicer):
    def __init__(self, store: StrapStore):
        self._store = store

    def Ingest(self, request_iterator: Iterator[strap_pb2.IngestRequest], context: grpc.ServicerContext
               ) -> strap_pb2.IngestResponse:
        first = next(request_iterator, None)
        if first is None:
            raise InvalidArgument(FieldViolation("chunk", "empty stream", "send the file name and its bytes"))

        def chunks() -> Iterator[bytes]:
            yield first.chunk
            for req in request_iterator:
                yield req.chunk

        return strap_pb2.IngestResponse(recording=_recording(self._store.ingest_chunks(first.name, chunks())))

    def Reduce(self, request: strap_pb2.ReduceRequest, context: grpc.ServicerContext) -> strap_pb2.ReduceResponse:
        try:
            params = ReduceParams(window=request.smoothing_window or 3,
                                  clip_frames=request.clip_frames or 45,
                                  clip_duration_s=None,
                                  min_segment_duration_s=request.min_segment_s or None)
        except ValueError as exc:
            raise InvalidArgument(FieldViolation("smoothing_window", str(exc), "use positive values")) from None
        table, reduction = self._store.reduce(request.recording_id, request.module, params)
        kept = reduction.kept_frames
        return strap_pb2.ReduceResponse(segments=_segments(request.recording_id, reduction),
                                        input_frames=table.n_frames, kept_frames=kept,
                                        reduction_ratio=1.0 - kept / max(1, table.n_frames))

    def Prioritize(self, request: strap_pb2.PrioritizeRequest, context: grpc.ServicerContext
                   ) -> strap_pb2.PrioritizeResponse:
        if not request.segments:
            return strap_pb2.PrioritizeResponse()
        method = _METHODS.get(request.method)
        if method is None:
            raise InvalidArgument(FieldViolation("method", f"unknown method {request.method}", "RSC, SC, CH, RD, CC"))
        vectors = np.asarray([list(s.vector) for s in request.segments], dtype=np.int64)
        if len({len(s.vector) for s in request.segments}) != 1:
            raise InvalidArgument(FieldViolation("segments", "vectors differ in length", "send one reduction"))
        frames = None
        if method == "RSC":
            ids = {s.recording_id for s in request.segments}
            if len(ids) != 1:
                raise InvalidArgument(FieldViolation("segments", "RSC needs segments of one recording",
                                                     "prioritize each recording's reduction"))
            frames = self._store.last_reduction(ids.pop())[0].vectors
        if method == "CC" and len(request.call_counts) != len(request.segments):
            raise InvalidArgument(FieldViolation("call_counts", "need one call count per segment",
                                                 f"send {len(request.segments)} counts"))
        order = prioritize(method, vectors, frame_vectors=frames, call_counts=list(request.call_counts) or None,
                           seed=request.seed, n_shuffles=1)
        order = np.asarray(order).reshape(-1, len(request.segments))[0]
        reply = strap_pb2.PrioritizeResponse()
        for rank, i in enumerate(order.tolist(), start=1):
            seg = reply.segments.add()
            seg.CopyFrom(request.segments[i])
            seg.rank = rank
            seg.score = float(len(request.segments) - rank + 1)
        return reply

    def Evaluate(self, request: strap_pb2.EvaluateRequest, context: grpc.ServicerContext
                 ) -> strap_pb2.EvaluateResponse:
        if not request.faults:
            raise InvalidArgument(FieldViolation("faults", "empty fault matrix", "one column per fault"))
        lengths = {len(c.revealed) for c in request.faults}
        if len(lengths) != 1 or 0 in lengths:
            raise InvalidArgument(FieldViolation("faults", "columns differ in length or are empty",
                                                 "one entry per segment in every column"))
        matrix = np.asarray([list(c.revealed) for c in request.faults], dtype=bool).T  # segments x faults
        order = np.arange(matrix.shape[0])
        detected = matrix.any(axis=0)
        if not detected.any():
            return strap_pb2.EvaluateResponse()
        first = top_k(order, matrix)
        return strap_pb2.EvaluateResponse(apfd=apfd(order, matrix[:, detected]), top_k=float(first or 0),
                                          faults_detected=int(detected.sum()))

    def ExportSegments(self, request: strap_pb2.ExportSegmentsRequest, context: grpc.ServicerContext
                       ) -> Iterator[strap_pb2.ExportSegmentsResponse]:
        info = self._store.get(request.recording_id)
        _table, reduction = self._store.last_reduction(request.recording_id)
        by_id = {f"{request.recording_id}:{s.index}": k for k, s in enumerate(reduction.segments)}
        unknown = [s for s in request.segment_ids if s not in by_id]
        if unknown:
            raise InvalidArgument(FieldViolation("segment_ids", f"not kept segments: {unknown[:5]}",
                                                 "use ids from the Reduce reply"))
        indices = [by_id[s] for s in request.segment_ids] or None
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "segments.mcap"
            export_reduction(info.path, reduction, out, segment_indices=indices)
            with open(out, "rb") as fh:
                while block := fh.read(CHUNK_BYTES):
                    yield strap_pb2.ExportSegmentsResponse(chunk=block)


def register(server: grpc.Server, config: StrapConfig | None = None, store: StrapStore | None = None
             ) -> list[str]:
    """Add the STRaP service; ``config`` is read once in ``main`` (None: the defaults),
    ``store`` a ready one (tests)."""
    if store is None:
        config = config or StrapConfig()
        store = StrapStore(config.store_dir, config.max_bytes)
    strap_pb2_grpc.add_StrapServiceServicer_to_server(StrapServicer(store), server)
    return [strap_pb2.DESCRIPTOR.services_by_name["StrapService"].full_name]
