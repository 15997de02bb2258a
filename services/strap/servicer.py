"""gRPC servicer of the STRaP service: parse request -> call core -> build reply.

Every RPC is a method of ``services.strap.core.StrapCore``: Ingest streams a
recording into the store; Reduce runs align -> vectorize -> smooth -> segment -> clip
-> de-duplicate; Prioritize orders segments (RSC uses the recording's frame vectors,
kept from Reduce); Evaluate scores an order against a fault matrix; ExportSegments
streams the kept segments (with their 1 s pre-roll) as MCAP.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.rpc.server import call_ended, check_call
from lastv2x.v1 import common_pb2, strap_pb2, strap_pb2_grpc

from .core import StrapCore
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
    def __init__(self, core: StrapCore):
        self._core = core

    def Ingest(self, request_iterator: Iterator[strap_pb2.IngestRequest], context: grpc.ServicerContext
               ) -> strap_pb2.IngestResponse:
        first = next(request_iterator, None)
        if first is None:
            raise InvalidArgument(FieldViolation("chunk", "empty stream", "send the file name and its bytes"))

        def chunks() -> Iterator[bytes]:  # a call whose deadline passed stops between chunks
            yield first.chunk
            for req in request_iterator:
                check_call(context)
                yield req.chunk

        info = self._core.ingest(first.name, chunks(), first.channel_map)
        return strap_pb2.IngestResponse(recording=_recording(info), channel_map=info.map_name,
                                        warnings=list(info.warnings))

    def Reduce(self, request: strap_pb2.ReduceRequest, context: grpc.ServicerContext) -> strap_pb2.ReduceResponse:
        try:
            params = ReduceParams(window=request.smoothing_window or 3,
                                  clip_frames=request.clip_frames or 45,
                                  clip_duration_s=None,
                                  min_segment_duration_s=request.min_segment_s or None)
        except ValueError as exc:
            raise InvalidArgument(FieldViolation("smoothing_window", str(exc), "use positive values")) from None
        table, reduction = self._core.reduce(request.recording_id, request.module, params,
                                             stop=lambda: call_ended(context), channel_map=request.channel_map,
                                             strict=request.strict)
        kept = reduction.kept_frames
        return strap_pb2.ReduceResponse(segments=_segments(request.recording_id, reduction),
                                        input_frames=table.n_frames, kept_frames=kept,
                                        reduction_ratio=1.0 - kept / max(1, table.n_frames),
                                        channel_map=table.channel_map, missing_channels=list(table.missing_channels),
                                        zeroed_features=list(table.zeroed_features), warnings=list(table.warnings))

    def Prioritize(self, request: strap_pb2.PrioritizeRequest, context: grpc.ServicerContext
                   ) -> strap_pb2.PrioritizeResponse:
        if not request.segments:
            return strap_pb2.PrioritizeResponse()
        method = _METHODS.get(request.method)
        if method is None:
            raise InvalidArgument(FieldViolation("method", f"unknown method {request.method}", "RSC, SC, CH, RD, CC"))
        order = self._core.prioritize(method, [list(s.vector) for s in request.segments],
                                      [s.recording_id for s in request.segments], list(request.call_counts),
                                      request.seed)
        reply = strap_pb2.PrioritizeResponse()
        for rank, i in enumerate(order, start=1):
            seg = reply.segments.add()
            seg.CopyFrom(request.segments[i])
            seg.rank = rank
            seg.score = float(len(request.segments) - rank + 1)
        return reply

    def Evaluate(self, request: strap_pb2.EvaluateRequest, context: grpc.ServicerContext
                 ) -> strap_pb2.EvaluateResponse:
        scores = self._core.evaluate([list(c.revealed) for c in request.faults])
        if scores is None:
            return strap_pb2.EvaluateResponse()
        return strap_pb2.EvaluateResponse(apfd=scores.apfd, top_k=float(scores.top_k),
                                          faults_detected=scores.faults_detected)

    def ExportSegments(self, request: strap_pb2.ExportSegmentsRequest, context: grpc.ServicerContext
                       ) -> Iterator[strap_pb2.ExportSegmentsResponse]:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "segments.mcap"
            self._core.export(request.recording_id, list(request.segment_ids), out)
            with open(out, "rb") as fh:
                while block := fh.read(CHUNK_BYTES):
                    yield strap_pb2.ExportSegmentsResponse(chunk=block)


def register(server: grpc.Server, config: StrapConfig | None = None, store: StrapStore | None = None
             ) -> list[str]:
    """Add the STRaP service; ``config`` is read once in ``main`` (None: the defaults),
    ``store`` a ready one (tests)."""
    strap_pb2_grpc.add_StrapServiceServicer_to_server(StrapServicer(StrapCore(config, store=store)), server)
    return [strap_pb2.DESCRIPTOR.services_by_name["StrapService"].full_name]
