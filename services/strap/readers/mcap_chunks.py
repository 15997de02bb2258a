"""MCAP chunks inflated and parsed under a :class:`~.base.ReadBudget` (issue 16).

The ``mcap`` library inflates a whole chunk before looking at it and turns every record
into an object, so an 8.5 KB chunk of 3 M empty messages costs 29 s and a gigabyte. Here
a chunk whose declared size does not fit the budget (``max_chunk_bytes``, what is left of
``max_decompressed_bytes``) is refused before inflating; inflation stops one byte past the
declared size (a header that lies is a corrupt file, not a bigger allocation); messages
are counted against ``max_messages`` while the chunk is scanned, which keeps only each
message's time and offset (16 bytes) and builds message objects one at a time.
"""

from __future__ import annotations

import heapq
import io
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcap.data_stream import ReadDataStream
from mcap.records import Channel, Chunk, Message, Schema
from mcap.stream_reader import StreamReader

from ..errors import CorruptRecordingError, UnsupportedRecordingError
from .base import ReadBudget

_OP_SCHEMA, _OP_CHANNEL, _OP_MESSAGE = 0x03, 0x04, 0x05
_MESSAGE_HEAD = struct.Struct("<HIQQ")  # channel id, sequence, log time, publish time
_RECORD_HEAD = struct.Struct("<BQ")  # opcode, content length


def check_declared(summary, budget: ReadBudget) -> None:
    """Refuse at once what the summary itself says is over the limits (it may lie low, never
    high: the streaming checks still apply)."""
    declared = sum(ci.uncompressed_size for ci in summary.chunk_indexes)
    if declared > budget.limits.max_decompressed_bytes - budget.bytes:
        budget.charge_bytes(declared)
    stats = summary.statistics
    if stats is not None and stats.message_count > budget.limits.max_messages - budget.messages:
        budget.charge_messages(stats.message_count)


def _inflate(chunk: Chunk, budget: ReadBudget, path: Path, offset: int) -> bytes:
    """The chunk's records, inflated under the budget (see the module docstring)."""
    budget.chunk_room(chunk.uncompressed_size)  # refuses before inflating what cannot fit
    room = chunk.uncompressed_size  # inflate one byte more at most: a lying header is corrupt
    if chunk.compression == "zstd":
        import zstandard

        try:
            parts, got = [], 0
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(chunk.data)) as reader:
                while got <= room and (part := reader.read(room + 1 - got)):
                    parts.append(part)
                    got += len(part)
            data = b"".join(parts)
        except zstandard.ZstdError as exc:
            raise CorruptRecordingError(path, offset, f"zstd chunk does not decompress: {exc}") from exc
    elif chunk.compression == "lz4":
        import lz4.frame

        try:
            data = lz4.frame.LZ4FrameDecompressor().decompress(chunk.data, max_length=room + 1)
        except RuntimeError as exc:
            raise CorruptRecordingError(path, offset, f"lz4 chunk does not decompress: {exc}") from exc
    elif chunk.compression == "":
        data = chunk.data
    else:
        raise UnsupportedRecordingError(path, offset, f"unsupported chunk compression {chunk.compression!r}")
    budget.charge_bytes(len(data))
    if len(data) != chunk.uncompressed_size:
        raise CorruptRecordingError(path, offset, f"chunk inflates to {len(data)} bytes, its header says "
                                    f"{chunk.uncompressed_size}")
    if chunk.uncompressed_crc and zlib.crc32(data) != chunk.uncompressed_crc:
        raise CorruptRecordingError(path, offset, "chunk CRC mismatch")
    return data


def _scan_chunk(data: bytes, wanted: set[int] | None, budget: ReadBudget, path: Path, offset: int,
                schemas: dict[int, Any] | None = None, chans: dict[int, Any] | None = None):
    """(log times, record offsets) of the wanted messages of an inflated chunk, counting every
    message; schema and channel records go to ``schemas`` / ``chans`` when given."""
    import numpy as np

    times: list[int] = []
    starts: list[int] = []
    pos, end = 0, len(data)
    while pos < end:
        if pos + _RECORD_HEAD.size > end:
            raise CorruptRecordingError(path, offset, "chunk ends inside a record header")
        op, length = _RECORD_HEAD.unpack_from(data, pos)
        body = pos + _RECORD_HEAD.size
        if length > end - body:
            raise CorruptRecordingError(path, offset, f"chunk record of {length} bytes overruns the chunk")
        if op == _OP_MESSAGE:
            if length < _MESSAGE_HEAD.size:
                raise CorruptRecordingError(path, offset, "message record too short")
            budget.charge_messages()
            cid, _seq, log_time, _pub = _MESSAGE_HEAD.unpack_from(data, body)
            if wanted is None or cid in wanted:
                times.append(log_time)
                starts.append(pos)
        elif op in (_OP_SCHEMA, _OP_CHANNEL) and schemas is not None and chans is not None:
            stream = ReadDataStream(io.BytesIO(data[body:body + length]))
            if op == _OP_SCHEMA:
                rec = Schema.read(stream)
                schemas[rec.id] = rec
            else:
                ch = Channel.read(stream)
                chans[ch.id] = ch
        pos = body + length
    return np.asarray(times, dtype=np.uint64), np.asarray(starts, dtype=np.int64)


def _message_at(data: bytes, pos: int) -> Message:
    _op, length = _RECORD_HEAD.unpack_from(data, pos)
    body = pos + _RECORD_HEAD.size
    cid, seq, log_time, pub = _MESSAGE_HEAD.unpack_from(data, body)
    return Message(channel_id=cid, sequence=seq, log_time=log_time, publish_time=pub,
                   data=data[body + _MESSAGE_HEAD.size: body + length])


def _sorted_chunk(f, path: Path, ci, wanted, budget: ReadBudget):
    """Messages (time-sorted, stable) of the chunk indexed by ``ci``; the chunk is held (budget) until
    its last message is out: a merge of chunks overlapping in time holds several."""
    import numpy as np

    f.seek(ci.chunk_start_offset + 1 + 8)
    data = _inflate(Chunk.read(ReadDataStream(f)), budget, path, ci.chunk_start_offset)
    budget.hold(len(data))
    try:
        times, starts = _scan_chunk(data, wanted, budget, path, ci.chunk_start_offset)
        order = np.argsort(times, kind="stable") if len(times) > 1 and \
            (np.diff(times.astype(np.int64)) < 0).any() else range(len(times))
        for i in order:
            yield int(times[i]), _message_at(data, int(starts[i]))
    finally:
        budget.release(len(data))


def disjoint_chunks(summary, wanted: set[int] | None) -> list | None:
    """The chunk indexes holding ``wanted`` channels in time order when no two overlap in
    time (recorder output), else None (then :func:`iter_indexed_chunks` merges them)."""
    chunks = sorted(summary.chunk_indexes, key=lambda c: (c.message_start_time, c.chunk_start_offset))
    if any(a.message_end_time > b.message_start_time for a, b in zip(chunks, chunks[1:], strict=False)):
        return None
    return [c for c in chunks if wanted is None or set(c.message_index_offsets) & wanted
            or not c.message_index_offsets]


def chunk_payloads(f, path: Path, ci, wanted: set[int] | None, budget: ReadBudget) -> list[tuple[int, int, bytes]]:
    """(log time, channel id, payload) of the wanted messages of one chunk, time-sorted
    (stable): the fast path of a disjoint file, no record objects."""
    f.seek(ci.chunk_start_offset + 1 + 8)
    data = _inflate(Chunk.read(ReadDataStream(f)), budget, path, ci.chunk_start_offset)
    times, starts = _scan_chunk(data, wanted, budget, path, ci.chunk_start_offset)
    if len(times) > 1 and (times[1:] < times[:-1]).any():
        import numpy as np

        order = np.argsort(times, kind="stable")
        starts = starts[order]
    head, msg_head = _RECORD_HEAD.unpack_from, _MESSAGE_HEAD.unpack_from
    hsize, msize = _RECORD_HEAD.size, _MESSAGE_HEAD.size
    out = []
    for pos in starts.tolist():
        _op, length = head(data, pos)
        body = pos + hsize
        cid, _seq, log_time, _pub = msg_head(data, body)
        out.append((log_time, cid, data[body + msize: body + length]))
    return out


_OP_MESSAGE_INDEX = 0x07
_INDEX_HEAD = struct.Struct("<HI")  # channel id, byte length of the (log time, offset) pairs


def _gather(buf, offsets, width: int, dtype: str):
    """Little-endian integers of ``width`` bytes at each of ``offsets`` in ``buf`` (uint8)."""
    import numpy as np

    return buf[offsets[:, None] + np.arange(width)].copy().view(dtype).ravel()


def chunk_batches(f, path: Path, ci, wanted: set[int] | None, budget: ReadBudget):
    """(channel id, log times, payloads) of each wanted channel of one chunk, time-sorted (stable),
    located through the chunk's message index records and checked against the records
    themselves, all with numpy (no per-message parsing); every indexed message of the chunk is
    charged to the budget. Returns None when the chunk has no message index (then scan it)."""
    import numpy as np

    if not ci.message_index_offsets or not ci.message_index_length:
        return None
    f.seek(ci.chunk_start_offset + 1 + 8)
    data = _inflate(Chunk.read(ReadDataStream(f)), budget, path, ci.chunk_start_offset)
    base = ci.chunk_start_offset + ci.chunk_length
    f.seek(base)
    region = f.read(ci.message_index_length)
    buf = np.frombuffer(data, np.uint8)
    total, out = 0, []
    for cid, off in sorted(ci.message_index_offsets.items()):
        p = off - base
        if p < 0 or p + _RECORD_HEAD.size + _INDEX_HEAD.size > len(region):
            raise CorruptRecordingError(path, off, f"message index of channel {cid} outside its region")
        op, length = _RECORD_HEAD.unpack_from(region, p)
        ch_id, nbytes = _INDEX_HEAD.unpack_from(region, p + _RECORD_HEAD.size)
        start = p + _RECORD_HEAD.size + _INDEX_HEAD.size
        if op != _OP_MESSAGE_INDEX or ch_id != cid or nbytes % 16 or nbytes + _INDEX_HEAD.size > length \
                or start + nbytes > len(region):
            raise CorruptRecordingError(path, off, f"malformed message index of channel {cid}")
        n = nbytes // 16
        total += n
        if not n or (wanted is not None and cid not in wanted):
            continue
        pairs = np.frombuffer(region, "<u8", count=2 * n, offset=start).reshape(n, 2)
        offs = pairs[:, 1].astype(np.int64)
        head = _RECORD_HEAD.size + _MESSAGE_HEAD.size
        if (offs < 0).any() or (offs + head > len(data)).any():
            raise CorruptRecordingError(path, ci.chunk_start_offset, f"message index of channel {cid} points "
                                        "outside its chunk")
        lens = _gather(buf, offs + 1, 8, "<u8").astype(np.int64)
        ends = offs + _RECORD_HEAD.size + lens
        if (buf[offs] != _OP_MESSAGE).any() or (lens < _MESSAGE_HEAD.size).any() or (ends > len(data)).any() \
                or (_gather(buf, offs + _RECORD_HEAD.size, 2, "<u2") != cid).any():
            raise CorruptRecordingError(path, ci.chunk_start_offset, f"message index of channel {cid} does not "
                                        "match the chunk's records")
        times = _gather(buf, offs + _RECORD_HEAD.size + 6, 8, "<u8").astype(np.int64)
        order = np.lexsort((offs, times))
        starts = (offs + head)[order].tolist()
        out.append((cid, times[order], [data[a:b] for a, b in zip(starts, ends[order].tolist(), strict=True)]))
    budget.charge_messages(total)
    return out


def iter_indexed_chunks(f, path: Path, summary, topics: list[str] | None, budget: ReadBudget):
    """Messages of an indexed file in log-time order, one chunk in memory when chunks are
    disjoint in time, else only the chunks that overlap the next message (a merge)."""
    wanted = None
    if topics is not None:
        wanted = {cid for cid, ch in summary.channels.items() if ch.topic in topics}
    chunks = sorted(summary.chunk_indexes, key=lambda c: (c.message_start_time, c.chunk_start_offset))
    chunks = [c for c in chunks if wanted is None or set(c.message_index_offsets) & wanted
              or not c.message_index_offsets]
    heap: list[tuple[int, int, Message, Iterator]] = []
    seq, k = 0, 0

    def push(it: Iterator) -> None:
        nonlocal seq
        nxt = next(it, None)
        if nxt is not None:
            heapq.heappush(heap, (nxt[0], seq, nxt[1], it))
            seq += 1

    while k < len(chunks) or heap:
        while k < len(chunks) and (not heap or chunks[k].message_start_time <= heap[0][0]):
            push(_sorted_chunk(f, path, chunks[k], wanted, budget))
            k += 1
        if not heap:
            continue
        _t, _s, message, it = heapq.heappop(heap)
        channel = summary.channels.get(message.channel_id)
        if channel is None:
            raise CorruptRecordingError(path, None, f"message on undeclared channel id {message.channel_id}")
        yield summary.schemas.get(channel.schema_id) if channel.schema_id else None, channel, message
        push(it)


def iter_unindexed(f, path: Path, budget: ReadBudget, topics: list[str] | None,
                    schemas: dict[int, Any], chans: dict[int, Any]):
    """(schema, channel, message) in file order, chunks inflated under the budget."""
    f.seek(0)
    for record in StreamReader(f, skip_magic=False, emit_chunks=True, validate_crcs=True).records:
        if isinstance(record, Schema):
            schemas[record.id] = record
        elif isinstance(record, Channel):
            chans[record.id] = record
        elif isinstance(record, Message):
            budget.charge_messages()
            budget.charge_bytes(len(record.data))
            yield from _resolve(record, schemas, chans, topics, path)
        elif isinstance(record, Chunk):
            data = _inflate(record, budget, path, f.tell())
            budget.hold(len(data))
            try:
                _times, starts = _scan_chunk(data, None, budget, path, f.tell(), schemas, chans)
                for pos in starts:
                    yield from _resolve(_message_at(data, int(pos)), schemas, chans, topics, path)
            finally:
                budget.release(len(data))


def _resolve(message: Message, schemas, chans, topics, path: Path):
    channel = chans.get(message.channel_id)
    if channel is None:
        raise CorruptRecordingError(path, None, f"message on undeclared channel id {message.channel_id}")
    if topics is None or channel.topic in topics:
        yield schemas.get(channel.schema_id) if channel.schema_id else None, channel, message
