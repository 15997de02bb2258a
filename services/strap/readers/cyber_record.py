"""Our own reader of Apollo Cyber RT ``.record`` files (format v1.x).

Why our own: the ``cyber-record`` package ships ``_pb2`` modules that protobuf
≥ 4 rejects and calls APIs removed in protobuf 5, while this project runs
protobuf 7.  The format is small, so we read it directly.

File layout (little-endian)::

    section := { int32 type; 4 bytes padding; int64 size }  + `size` bytes of protobuf
    type    := 0 HEADER | 1 CHUNK_HEADER | 2 CHUNK_BODY | 3 INDEX | 4 CHANNEL

* The HEADER section is first; its body is zero-padded to 2048 bytes, so the
  next section starts at 16 + 2048.  Header says version, compression,
  counts, time span, ``index_position`` and ``is_complete``.
* CHANNEL sections (name, message type, ``proto_desc``) may appear anywhere
  before the channel's first message.  ``proto_desc`` is a recursive
  ``ProtoDesc{desc: FileDescriptorProto bytes, dependencies: [ProtoDesc]}``;
  we load it into a per-file ``DescriptorPool`` and decode payloads with
  ``message_factory.GetMessageClass``.
* Each chunk is a CHUNK_HEADER (begin/end time, message count) followed by a
  CHUNK_BODY holding ``SingleMessage{channel_name, time, content}`` entries.
* The INDEX section (at ``index_position``) caches per-channel message counts.

The record-structure messages are declared below with ``descriptor_pb2`` (no
generated code, no dependency on Apollo's ``.proto`` files).

Reading strategy: :meth:`CyberRecording.__init__` walks all *section headers*
(one 16-byte read + seek each), validating sizes against the file length
(truncation → :class:`TruncatedRecordingError` with the offset), and parses the
small sections (header, channels, chunk headers, index).  Iteration then loads
chunk bodies in ``begin_time`` order and merges them through a heap, so memory
is bounded by the chunks overlapping in time (one, for recorder output).
"""

from __future__ import annotations

import heapq
import os
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ..errors import (
    CorruptRecordingError,
    MessageDecodeError,
    RecordingError,
    TruncatedRecordingError,
    UnsupportedRecordingError,
)
from .base import ChannelInfo, RawSchema, RecordedMessage, Recording
from .decoders import Decoder, SchemaDecodeError, add_files_in_dependency_order, protobuf_decoder

SECTION = struct.Struct("<i4xq")
HEADER_BODY_BYTES = 2048
SECTION_HEADER, SECTION_CHUNK_HEADER, SECTION_CHUNK_BODY, SECTION_INDEX, SECTION_CHANNEL = range(5)
_MAX_SECTION_BYTES = 1 << 34  # 16 GiB: anything larger is a corrupt size field

_T = descriptor_pb2.FieldDescriptorProto


def _record_structure_classes() -> dict[str, Any]:
    """Build the record-structure message classes (field numbers from Cyber's record.proto)."""
    fdp = descriptor_pb2.FileDescriptorProto(
        name="lastv2x_strap/cyber_record_structure.proto",
        package="lastv2x.strap.cyber",
        syntax="proto2",
    )
    u64, u32, i32, b, s, msg = (_T.TYPE_UINT64, _T.TYPE_UINT32, _T.TYPE_INT32, _T.TYPE_BOOL,
                                _T.TYPE_STRING, _T.TYPE_MESSAGE)
    by = _T.TYPE_BYTES
    opt, rep = _T.LABEL_OPTIONAL, _T.LABEL_REPEATED
    layouts: dict[str, list[tuple[str, int, int, int, str]]] = {
        "Header": [("major_version", 1, u32, opt, ""), ("minor_version", 2, u32, opt, ""),
                   ("compress", 3, i32, opt, ""), ("chunk_interval", 4, u64, opt, ""),
                   ("segment_interval", 5, u64, opt, ""), ("index_position", 6, u64, opt, ""),
                   ("chunk_number", 7, u64, opt, ""), ("channel_number", 8, u64, opt, ""),
                   ("begin_time", 9, u64, opt, ""), ("end_time", 10, u64, opt, ""),
                   ("message_number", 11, u64, opt, ""), ("size", 12, u64, opt, ""),
                   ("is_complete", 13, b, opt, ""), ("chunk_raw_size", 14, u64, opt, ""),
                   ("segment_raw_size", 15, u64, opt, "")],
        "Channel": [("name", 1, s, opt, ""), ("message_type", 2, s, opt, ""),
                    ("proto_desc", 3, by, opt, "")],
        "ChunkHeader": [("begin_time", 1, u64, opt, ""), ("end_time", 2, u64, opt, ""),
                        ("message_number", 3, u64, opt, ""), ("raw_size", 4, u64, opt, "")],
        "SingleMessage": [("channel_name", 1, s, opt, ""), ("time", 2, u64, opt, ""),
                          ("content", 3, by, opt, "")],
        "ChunkBody": [("messages", 1, msg, rep, "SingleMessage")],
        "ChannelCache": [("message_number", 1, u64, opt, ""), ("name", 2, s, opt, ""),
                         ("message_type", 3, s, opt, ""), ("proto_desc", 4, by, opt, "")],
        "SingleIndex": [("type", 1, i32, opt, ""), ("position", 2, u64, opt, ""),
                        ("channel_cache", 101, msg, opt, "ChannelCache")],
        "Index": [("indexes", 1, msg, rep, "SingleIndex")],
        "ProtoDesc": [("desc", 1, by, opt, ""), ("dependencies", 2, msg, rep, "ProtoDesc")],
    }
    for name, fields in layouts.items():
        mdp = fdp.message_type.add(name=name)
        for fname, number, ftype, label, ref in fields:
            field = mdp.field.add(name=fname, number=number, type=ftype, label=label)
            if ref:
                field.type_name = f".lastv2x.strap.cyber.{ref}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"lastv2x.strap.cyber.{name}"))
        for name in layouts
    }


_PB = _record_structure_classes()


@dataclass(frozen=True)
class _Chunk:
    header_offset: int
    body_offset: int
    body_size: int
    begin_time_ns: int
    end_time_ns: int
    message_count: int


class CyberRecording(Recording):
    """Apollo Cyber ``.record`` file (see module docstring)."""

    format = "cyber"

    def __init__(self, path: str | Path, channels=None) -> None:
        super().__init__(path, channels)
        self._size = os.path.getsize(self.path)
        self._channels: dict[str, ChannelInfo] = {}
        self._proto_descs: dict[str, bytes] = {}
        self._chunks: list[_Chunk] = []
        self._indexed_counts: dict[str, int] = {}
        self._decoders: dict[str, Decoder] = {}
        self._pool: descriptor_pool.DescriptorPool | None = None
        self._pool_files: set[str] = set()
        with open(self.path, "rb") as f:
            self._scan(f)

    # -- open-time scan -------------------------------------------------------------
    def _read_section(self, f, offset: int) -> tuple[int, int]:
        f.seek(offset)
        raw = f.read(SECTION.size)
        if len(raw) < SECTION.size:
            raise TruncatedRecordingError(self.path, offset, f"section header cut after {len(raw)} of 16 bytes")
        kind, size = SECTION.unpack(raw)
        if kind not in range(5) or size < 0 or size > _MAX_SECTION_BYTES:
            raise CorruptRecordingError(self.path, offset, f"invalid section header (type={kind}, size={size})")
        if offset + SECTION.size + size > self._size:
            raise TruncatedRecordingError(
                self.path, offset,
                f"section type {kind} declares {size} bytes but the file ends at byte {self._size}",
            )
        return kind, size

    def _parse(self, f, cls: str, offset: int, size: int):
        f.seek(offset + SECTION.size)
        body = f.read(size)
        try:
            return _PB[cls].FromString(body)
        except Exception as exc:
            raise CorruptRecordingError(self.path, offset, f"{cls} section does not parse: {exc}") from exc

    def _scan(self, f) -> None:
        if self._size < SECTION.size:
            raise TruncatedRecordingError(self.path, 0, f"file has {self._size} bytes, no record header")
        kind, size = self._read_section(f, 0)
        if kind != SECTION_HEADER or size > HEADER_BODY_BYTES:
            raise CorruptRecordingError(self.path, 0, "not a Cyber record (first section is not a header)")
        self.header = self._parse(f, "Header", 0, size)
        if self.header.major_version != 1:
            raise UnsupportedRecordingError(
                self.path, 0, f"record format v{self.header.major_version} (only v1.x is read)")
        if self.header.compress:
            raise UnsupportedRecordingError(
                self.path, 0, f"compressed record (compress={self.header.compress}) is not supported")
        offset = SECTION.size + HEADER_BODY_BYTES
        pending_header: tuple[int, Any] | None = None
        while offset < self._size:
            kind, size = self._read_section(f, offset)
            if kind == SECTION_CHANNEL:
                ch = self._parse(f, "Channel", offset, size)
                self._proto_descs[ch.name] = ch.proto_desc
                self._channels[ch.name] = ChannelInfo(ch.name, ch.message_type, "protobuf", None)
            elif kind == SECTION_CHUNK_HEADER:
                pending_header = (offset, self._parse(f, "ChunkHeader", offset, size))
            elif kind == SECTION_CHUNK_BODY:
                if pending_header is None:
                    raise CorruptRecordingError(self.path, offset, "chunk body without a chunk header")
                h_off, h = pending_header
                self._chunks.append(_Chunk(h_off, offset, size, h.begin_time, h.end_time, h.message_number))
                pending_header = None
            elif kind == SECTION_INDEX:
                for entry in self._parse(f, "Index", offset, size).indexes:
                    if entry.type == SECTION_CHANNEL and entry.HasField("channel_cache"):
                        cache = entry.channel_cache
                        self._indexed_counts[cache.name] = cache.message_number
            elif kind == SECTION_HEADER:
                raise CorruptRecordingError(self.path, offset, "second header section")
            offset += SECTION.size + size
        if pending_header is not None:
            raise TruncatedRecordingError(self.path, pending_header[0], "chunk header without its body")
        if self._indexed_counts and set(self._indexed_counts) >= set(self._channels):
            self._channels = {
                n: ChannelInfo(n, c.type_name, c.encoding, self._indexed_counts[n])
                for n, c in self._channels.items()
            }

    # -- metadata -------------------------------------------------------------------
    def channels(self) -> Mapping[str, ChannelInfo]:
        return dict(self._channels)

    def time_range_ns(self) -> tuple[int, int] | None:
        if not self.header.message_number:
            return None
        return int(self.header.begin_time), int(self.header.end_time)

    def _iter_channel_names(self) -> Iterator[str]:
        with open(self.path, "rb") as f:
            for chunk in self._chunks:
                for m in self._load_body(f, chunk).messages:
                    self._budget.charge_messages()
                    yield m.channel_name

    # -- decoding -------------------------------------------------------------------
    def _descriptor_files(self, raw: bytes, out: list) -> None:
        desc = _PB["ProtoDesc"].FromString(raw)
        for dep in desc.dependencies:
            self._descriptor_files(dep.SerializeToString(), out)
        out.append(descriptor_pb2.FileDescriptorProto.FromString(desc.desc))

    def _decoder(self, channel: str, offset: int) -> Decoder:
        dec = self._decoders.get(channel)
        if dec is not None:
            return dec
        info = self._channels.get(channel)
        if info is None:
            raise CorruptRecordingError(self.path, offset, f"message on undeclared channel {channel!r}")
        if self._pool is None:
            self._pool = descriptor_pool.DescriptorPool()
        files: list = []
        try:
            self._descriptor_files(self._proto_descs[channel], files)
            add_files_in_dependency_order(self._pool, files, self._pool_files)
            dec = protobuf_decoder(self._pool, info.type_name)
        except SchemaDecodeError as exc:
            raise MessageDecodeError(self.path, offset, f"channel {channel!r}: {exc}", channel) from exc
        except Exception as exc:
            raise CorruptRecordingError(
                self.path, offset, f"channel {channel!r}: embedded descriptors do not parse: {exc}") from exc
        self._decoders[channel] = dec
        return dec

    def _load_body(self, f, chunk: _Chunk):
        """The parsed chunk body, charged to the pass's budget (its size and declared message
        count are checked before it is read; every message is counted as it is used)."""
        budget = self._budget
        budget.chunk_room(chunk.body_size)
        budget.charge_bytes(chunk.body_size)
        if chunk.message_count > budget.limits.max_messages - budget.messages:
            budget.charge_messages(chunk.message_count)
        f.seek(chunk.body_offset + SECTION.size)
        try:
            return _PB["ChunkBody"].FromString(f.read(chunk.body_size))
        except Exception as exc:
            raise CorruptRecordingError(self.path, chunk.body_offset, f"chunk body does not parse: {exc}") from exc

    def _iter_entries(self) -> Iterator[tuple[int, int, str, bytes]]:
        """(time, chunk body offset, channel, content) of selected messages, merged."""
        chunks = sorted(self._chunks, key=lambda c: (c.begin_time_ns, c.body_offset))
        heap: list[tuple[int, int, int, str, bytes]] = []
        seq = 0
        k = 0
        with open(self.path, "rb") as f:
            while k < len(chunks) or heap:
                # load every chunk that may hold a message earlier than the heap's head
                while k < len(chunks) and (not heap or chunks[k].begin_time_ns <= heap[0][0]):
                    chunk = chunks[k]
                    for m in self._load_body(f, chunk).messages:
                        self._budget.charge_messages()
                        if self.wants(m.channel_name):
                            heapq.heappush(heap, (m.time, seq, chunk.body_offset, m.channel_name, m.content))
                            seq += 1
                    k += 1
                if not heap:
                    continue
                time_ns, _, offset, channel, content = heapq.heappop(heap)
                yield time_ns, offset, channel, content

    def _iter_messages(self) -> Iterator[RecordedMessage]:
        for time_ns, offset, channel, content in self._iter_entries():
            decode = self._decoder(channel, offset)
            try:
                payload = decode(content)
            except Exception as exc:
                raise MessageDecodeError(
                    self.path, offset, f"{channel!r} payload does not parse as "
                    f"{self._channels[channel].type_name}: {exc}", channel) from exc
            yield RecordedMessage(channel, int(time_ns), payload)

    def _iter_raw(self) -> Iterator[tuple[str, int, bytes]]:
        for time_ns, _offset, channel, content in self._iter_entries():
            yield channel, int(time_ns), content

    def raw_schema(self, channel: str) -> RawSchema:
        """protobuf + a ``FileDescriptorSet`` flattened from the channel's ProtoDesc tree."""
        files: list = []
        self._descriptor_files(self._proto_descs[channel], files)
        seen: set[str] = set()
        fds = descriptor_pb2.FileDescriptorSet()
        for fdp in files:  # dependencies come first
            if fdp.name not in seen:
                seen.add(fdp.name)
                fds.file.append(fdp)
        return RawSchema("protobuf", self._channels[channel].type_name, "protobuf", fds.SerializeToString())


def is_cyber_record(path: Path) -> bool:
    """Sniff: a file whose first section is a small header section of type 0."""
    try:
        with open(path, "rb") as f:
            raw = f.read(SECTION.size + 2)
    except OSError:
        return False
    if len(raw) < SECTION.size + 2:
        return False
    kind, size = SECTION.unpack(raw[: SECTION.size])
    return kind == SECTION_HEADER and 0 < size <= HEADER_BODY_BYTES and raw[SECTION.size] == 0x08


__all__ = ["CyberRecording", "is_cyber_record", "RecordingError"]
