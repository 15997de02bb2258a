"""Generic MCAP backend (single files and split sets) on the ``mcap`` library.

Decoding is ours, chosen per channel from ``message_encoding`` + schema:

==============  =======================  ==========================================
message enc.    schema encoding          decoder
==============  =======================  ==========================================
``json``        any / none               ``json.loads`` → ``dict``
``protobuf``    ``protobuf``             embedded ``FileDescriptorSet`` →
                                         ``message_factory.GetMessageClass``
``cdr``         ``ros2msg``/``ros2idl``  rosbags typestore (ROS 2 in MCAP)
``ros1``        ``ros1msg``              rosbags typestore
==============  =======================  ==========================================

Anything else raises :class:`UnsupportedEncodingError` naming the channel, when
the first message of that channel is reached (so that callers who select other
channels are not blocked by one undecodable topic, e.g. ROS 2 service events).

Order and memory: indexed files whose chunks are disjoint in time (recorder
output) are read chunk by chunk, each chunk's messages stably sorted — one
chunk in memory, no per-message heap.  Files with overlapping chunks use
``iter_messages(log_time_order=True)``, which merges chunks by their index
(memory bounded by overlapping chunks).
Unindexed files (no summary, or no chunk index) are read in file order through a bounded reorder
heap of :data:`REORDER_WINDOW` messages; worse disorder is reported by the
ordering check in :class:`~services.strap.readers.base.Recording`.  Split sets
(rosbag2 ``*_0.mcap``, ``*_1.mcap`` ...) are merged with ``heapq.merge``.

Decompression limits (issue 16): chunks are inflated by :func:`_inflate`, never by the
library: a chunk whose declared size does not fit the pass's :class:`ReadBudget` is
refused before it is inflated, the inflation itself stops one byte past what fits (a
lying header gains nothing), and every message is counted while the chunk is parsed,
which keeps 16 bytes per message (time, offset) rather than a message object.

Integrity: a file must start and end with the MCAP magic (a missing tail means
the writer never finished: :class:`TruncatedRecordingError` at the file size);
CRCs are validated; library errors are re-raised as typed errors carrying the
file and the stream position at which they happened.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcap.exceptions import McapError, UnsupportedCompressionError
from mcap.reader import make_reader

from ..errors import (
    CorruptRecordingError,
    MessageDecodeError,
    RecordingError,
    RecordingLimitError,
    TruncatedRecordingError,
    UnsupportedEncodingError,
    UnsupportedRecordingError,
)
from .base import Batch, ChannelInfo, RawSchema, ReadBudget, RecordedMessage, Recording
from .decoders import (
    Decoder,
    RosTypeDecoders,
    SchemaDecodeError,
    json_decoder,
    protobuf_decoder_from_descriptor_set,
)
from .mcap_chunks import (
    check_declared,
    chunk_batches,
    chunk_payloads,
    disjoint_chunks,
    iter_indexed_chunks,
    iter_unindexed,
)

MAGIC = b"\x89MCAP0\r\n"
REORDER_WINDOW = 4096
#: MCAP header profile of the platform's own traces (written by
#: :func:`~services.strap.readers.platform_trace.write_trace`); a recording whose
#: files all carry it has ``format == "platform_trace"``
TRACE_PROFILE = "lastv2x-trace"


class McapRecording(Recording):
    """One MCAP file, or several files read as one time-merged recording."""

    format = "mcap"

    def __init__(self, paths: Path | Sequence[Path], channels=None) -> None:
        files = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
        if not files:
            raise ValueError("McapRecording needs at least one file")
        super().__init__(files[0] if len(files) == 1 else files[0].parent, channels)
        self.files = files
        self._summaries: list[Any] = []
        self._profiles: list[str] = []
        self._ros: RosTypeDecoders | None = None
        self._decoders: dict[tuple[int, int], Decoder] = {}
        for path in files:
            self._summaries.append(self._open_summary(path))
        self._channel_cache: dict[str, ChannelInfo] | None = None
        if self._profiles and all(p == TRACE_PROFILE for p in self._profiles):
            self.format = "platform_trace"

    def time_range_ns(self) -> tuple[int, int] | None:
        spans = [(s.statistics.message_start_time, s.statistics.message_end_time)
                 for s in self._summaries
                 if s is not None and s.statistics is not None and s.statistics.message_count]
        if not spans or len(spans) != len(self._summaries):
            return None
        return min(a for a, _ in spans), max(b for _, b in spans)

    # -- open-time checks -----------------------------------------------------------
    def _open_summary(self, path: Path):
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
            if head != MAGIC:
                raise CorruptRecordingError(path, 0, f"not an MCAP file (magic {head[:8]!r})")
            f.seek(max(size - len(MAGIC), 0))
            if size < 2 * len(MAGIC) or f.read(len(MAGIC)) != MAGIC:
                raise TruncatedRecordingError(
                    path, size, "file ends without the MCAP footer magic (writer did not finish)")
            f.seek(0)
            try:
                reader = make_reader(f)
                self._profiles.append(reader.get_header().profile)
                return reader.get_summary()
            except (McapError, ValueError, EOFError) as exc:
                raise CorruptRecordingError(path, f.tell(), f"unreadable MCAP summary: {exc}") from exc

    # -- metadata -------------------------------------------------------------------
    def channels(self) -> Mapping[str, ChannelInfo]:
        if self._channel_cache is None:
            infos: dict[str, ChannelInfo] = {}
            for idx, summary in enumerate(self._summaries):
                if summary is None:
                    tables = self._scan_unindexed(idx)
                    counts = None
                else:
                    tables = (summary.schemas, summary.channels)
                    stats = summary.statistics
                    counts = stats.channel_message_counts if stats is not None else None
                schemas, chans = tables
                for cid, ch in chans.items():
                    schema = schemas.get(ch.schema_id)
                    n = None if counts is None else int(counts.get(cid, 0))
                    prev = infos.get(ch.topic)
                    if prev is not None:
                        n = None if (n is None or prev.message_count is None) else n + prev.message_count
                    infos[ch.topic] = ChannelInfo(
                        ch.topic, schema.name if schema else "", ch.message_encoding, n)
            self._channel_cache = infos
        return dict(self._channel_cache)

    def _scan_unindexed(self, idx: int):
        schemas: dict[int, Any] = {}
        chans: dict[int, Any] = {}
        budget = self.new_budget()
        with open(self.files[idx], "rb") as f:
            for _s, _c, _m in self._guard(idx, f, iter_unindexed(f, self.files[idx], budget, None, schemas, chans)):
                pass
        return schemas, chans

    def _iter_channel_names(self) -> Iterator[str]:
        saved, self.selected = self.selected, None
        try:
            for idx, path in enumerate(self.files):
                with open(path, "rb") as f:
                    for _s, ch, _m in self._records(idx, f):
                        yield ch.topic
        finally:
            self.selected = saved

    # -- decoding -------------------------------------------------------------------
    def _decoder(self, idx: int, schema, channel, offset: int) -> Decoder:
        key = (idx, channel.id)
        dec = self._decoders.get(key)
        if dec is not None:
            return dec
        enc = channel.message_encoding
        s_enc = schema.encoding if schema is not None else ""
        path = self.files[idx]
        try:
            if enc == "json":
                dec = json_decoder
            elif enc == "protobuf" and s_enc == "protobuf":
                dec = protobuf_decoder_from_descriptor_set(schema.data, schema.name)
            elif (enc, s_enc) in {("cdr", "ros2msg"), ("cdr", "ros2idl"), ("ros1", "ros1msg")}:
                if self._ros is None:
                    self._ros = RosTypeDecoders()
                dec = self._ros.decoder(schema.name, s_enc, schema.data.decode("utf-8"), enc)
            else:
                raise UnsupportedEncodingError(
                    path, offset,
                    f"channel {channel.topic!r}: no decoder for message encoding {enc!r} "
                    f"with schema encoding {s_enc or 'none'!r} (select other channels to skip it)",
                    channel.topic,
                )
        except SchemaDecodeError as exc:
            raise UnsupportedEncodingError(
                path, offset, f"channel {channel.topic!r}: {exc} (select other channels to skip it)",
                channel.topic) from exc
        self._decoders[key] = dec
        return dec

    # -- streaming ------------------------------------------------------------------
    def _guard(self, idx: int, f, iterator):
        """Re-raise library errors from ``iterator`` as typed errors with the position."""
        try:
            yield from iterator
        except (RecordingError, RecordingLimitError):
            raise
        except UnsupportedCompressionError as exc:
            raise UnsupportedRecordingError(
                self.files[idx], f.tell(), f"{exc} (install the matching Python package)") from exc
        except EOFError as exc:
            raise TruncatedRecordingError(self.files[idx], f.tell(), f"unexpected end of data: {exc}") from exc
        except (McapError, ValueError, KeyError, OSError) as exc:
            raise CorruptRecordingError(self.files[idx], f.tell(), f"{type(exc).__name__}: {exc}") from exc

    def _records(self, idx: int, f):
        """(schema, channel, message) of the selected topics, time-ordered, guarded."""
        topics = None if self.selected is None else sorted(self.selected)
        summary = self._summaries[idx]
        path, budget = self.files[idx], self._budget
        if summary is not None and summary.chunk_indexes:
            check_declared(summary, budget)
            raw = iter_indexed_chunks(f, path, summary, topics, budget)
        elif summary is not None and summary.statistics is not None and not summary.statistics.message_count:
            raw = iter(())  # indexed, no messages
        else:
            raw = _reorder(iter_unindexed(f, path, budget, topics, {}, {}), budget)
        return self._guard(idx, f, raw)

    def _iter_disjoint(self, idx: int, f, chunks: list) -> Iterator[RecordedMessage]:
        """Fast path of an indexed file whose chunks do not overlap in time: chunk by chunk,
        payloads straight from the inflated bytes to the channel's decoder."""
        summary, path, budget = self._summaries[idx], self.files[idx], self._budget
        check_declared(summary, budget)
        wanted = self._wanted(summary)
        per_channel: dict[int, tuple[str, Decoder]] = {}
        for ci in chunks:
            for log_time, cid, data in chunk_payloads(f, path, ci, wanted, budget):
                entry = per_channel.get(cid)
                if entry is None:
                    channel = summary.channels.get(cid)
                    if channel is None:
                        raise CorruptRecordingError(path, ci.chunk_start_offset,
                                                    f"message on undeclared channel id {cid}")
                    schema = summary.schemas.get(channel.schema_id) if channel.schema_id else None
                    entry = per_channel[cid] = (channel.topic, self._decoder(idx, schema, channel,
                                                                             ci.chunk_start_offset))
                topic, decode = entry
                try:
                    payload = decode(data)
                except Exception as exc:
                    raise MessageDecodeError(
                        path, ci.chunk_start_offset, f"channel {topic!r} message at {log_time} ns "
                        f"does not decode: {type(exc).__name__}: {exc}", topic) from exc
                yield RecordedMessage(topic, log_time, payload)

    def iter_batches(self) -> Iterator[Batch]:
        """One MCAP chunk at a time through its message index (:func:`chunk_batches`) for a
        single indexed file whose chunks are disjoint in time; otherwise windows of the stream."""
        summary = self._summaries[0] if len(self.files) == 1 else None
        chunks = disjoint_chunks(summary, self._wanted(summary)) if summary is not None and \
            summary.chunk_indexes else None
        if chunks is None or not all(ci.message_index_offsets for ci in chunks):
            return super().iter_batches()
        return self._batches(summary, chunks)

    def _batches(self, summary, chunks: list) -> Iterator[Batch]:
        path, budget = self.files[0], self.new_budget()
        check_declared(summary, budget)
        wanted = self._wanted(summary)
        per_channel: dict[int, tuple[str, Decoder]] = {}
        with open(path, "rb") as f:
            def gen() -> Iterator[Batch]:
                for ci in chunks:
                    batch: Batch = []
                    for cid, times, payloads in chunk_batches(f, path, ci, wanted, budget) or ():
                        entry = per_channel.get(cid)
                        if entry is None:
                            channel = summary.channels.get(cid)
                            if channel is None:
                                raise CorruptRecordingError(path, ci.chunk_start_offset,
                                                            f"message on undeclared channel id {cid}")
                            schema = summary.schemas.get(channel.schema_id) if channel.schema_id else None
                            entry = per_channel[cid] = (channel.topic, self._decoder(0, schema, channel,
                                                                                     ci.chunk_start_offset))
                        topic, decode = entry
                        structs = self.struct_decoders.get(topic) if decode is json_decoder else None
                        got = structs.many(payloads) if structs is not None else None
                        if got is None:
                            batch.append((topic, times, self._decode_all(decode, payloads, times, topic, ci)))
                        else:  # decoded into structs, the channel's filter applied (json_structs)
                            batch.append((topic, times if got[1] is None else times[got[1]], got[0]))
                    if batch:
                        yield batch
            yield from self._guard(0, f, gen())

    def _decode_all(self, decode: Decoder, payloads: list, times, topic: str, ci) -> list:
        try:
            many = getattr(decode, "many", None)  # a whole-list form of the decoder (JSON)
            return many(payloads) if many is not None else list(map(decode, payloads))
        except Exception:
            for p, t in zip(payloads, times.tolist(), strict=True):
                try:
                    decode(p)
                except Exception as exc:
                    raise MessageDecodeError(
                        self.files[0], ci.chunk_start_offset, f"channel {topic!r} message at {t} ns "
                        f"does not decode: {type(exc).__name__}: {exc}", topic) from exc
            raise

    def _wanted(self, summary) -> set[int] | None:
        if self.selected is None:
            return None
        return {cid for cid, ch in summary.channels.items() if ch.topic in self.selected}

    def _iter_file(self, idx: int) -> Iterator[RecordedMessage]:
        path = self.files[idx]
        summary = self._summaries[idx]
        chunks = disjoint_chunks(summary, self._wanted(summary)) if summary is not None and \
            summary.chunk_indexes else None
        if chunks is not None:
            with open(path, "rb") as f:
                yield from self._guard(idx, f, self._iter_disjoint(idx, f, chunks))
            return
        with open(path, "rb") as f:
            for schema, channel, message in self._records(idx, f):
                decode = self._decoder(idx, schema, channel, f.tell())
                try:
                    payload = decode(message.data)
                except Exception as exc:
                    raise MessageDecodeError(
                        path, f.tell(), f"channel {channel.topic!r} message at {message.log_time} ns "
                        f"does not decode: {type(exc).__name__}: {exc}", channel.topic) from exc
                yield RecordedMessage(channel.topic, message.log_time, payload)

    def _iter_messages(self) -> Iterator[RecordedMessage]:
        if len(self.files) == 1:
            yield from self._iter_file(0)
        else:
            yield from heapq.merge(*(self._iter_file(i) for i in range(len(self.files))),
                                   key=lambda m: m.timestamp_ns)

    def _iter_raw_file(self, idx: int) -> Iterator[tuple[str, int, bytes]]:
        with open(self.files[idx], "rb") as f:
            for _schema, channel, message in self._records(idx, f):
                yield channel.topic, message.log_time, message.data

    def _iter_raw(self) -> Iterator[tuple[str, int, bytes]]:
        yield from heapq.merge(*(self._iter_raw_file(i) for i in range(len(self.files))),
                               key=lambda m: m[1])

    def raw_schema(self, channel: str) -> RawSchema:
        for idx, summary in enumerate(self._summaries):
            schemas, chans = (summary.schemas, summary.channels) if summary is not None \
                else self._scan_unindexed(idx)
            for ch in chans.values():
                if ch.topic == channel:
                    sc = schemas.get(ch.schema_id)
                    if sc is None:
                        return RawSchema(ch.message_encoding, "", "", b"")
                    return RawSchema(ch.message_encoding, sc.name, sc.encoding, sc.data)
        raise KeyError(channel)


def _chunks_disjoint(summary) -> bool:
    """True when chunks, sorted by start time, do not overlap in time (the common
    case for recorders); then chunks can be read one at a time in order."""
    idx = sorted(summary.chunk_indexes, key=lambda c: (c.message_start_time, c.chunk_start_offset))
    return bool(idx) and all(a.message_end_time <= b.message_start_time for a, b in zip(idx, idx[1:], strict=False))


def _reorder(items: Iterator[tuple[Any, Any, Any]], budget: ReadBudget) -> Iterator[tuple[Any, Any, Any]]:
    """Bounded-memory reordering of (schema, channel, message) by ``log_time``: at most
    :data:`REORDER_WINDOW` messages, whose payloads the budget holds while they wait."""
    heap: list[tuple[int, int, tuple[Any, Any, Any]]] = []
    try:
        for seq, item in enumerate(items):
            budget.hold(len(item[2].data))
            heapq.heappush(heap, (item[2].log_time, seq, item))
            if len(heap) > REORDER_WINDOW:
                out = heapq.heappop(heap)[2]
                budget.release(len(out[2].data))
                yield out
        while heap:
            out = heapq.heappop(heap)[2]
            budget.release(len(out[2].data))
            yield out
    finally:
        budget.release(sum(len(item[2].data) for _t, _s, item in heap))
