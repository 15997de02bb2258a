"""The one interface every recording backend implements.

Design:

* A :class:`Recording` is opened cheaply (headers, summaries, channel tables) and
  iterated lazily: ``for channel, timestamp_ns, message in rec`` yields
  :class:`RecordedMessage` tuples **in non-decreasing timestamp order**, decoding
  one message at a time, so memory stays flat in the recording's length.
  Ties keep the backend's order (stable).
* Iterating twice re-reads the file; a recording is not a list.
* ``channels`` restricts decoding to the named channels (unknown names are simply
  absent; the caller checks coverage — see ``vectorize``).  Skipped channels
  cost no decoding.
* Order is *checked* while streaming (:meth:`Recording.__iter__`): a backend that
  cannot honour it raises :class:`~services.strap.errors.OutOfOrderError`
  rather than silently handing a misordered stream to the aligner.
* ``message_counts()`` answers from indexes/metadata when the format has them and
  falls back to a counting pass; the aligner uses it to choose the reference
  channel before streaming.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import OutOfOrderError, RecordingLimitError

#: every selected message of one time window, by channel: (channel, int64 timestamps ascending,
#: payloads); windows follow each other in time (one may start where the previous ended)
Batch = list[tuple[str, Any, list[Any]]]
STREAM_BATCH_MESSAGES = 4096


def stream_batches(messages: Iterable[tuple[str, int, Any]], size: int = STREAM_BATCH_MESSAGES
                   ) -> Iterator[Batch]:
    """Windows of ``size`` messages of a time-ordered stream, grouped by channel."""
    import numpy as np

    by: dict[str, tuple[list[int], list[Any]]] = {}
    n = 0
    for channel, ts, msg in messages:
        entry = by.get(channel)
        if entry is None:
            entry = by[channel] = ([], [])
        entry[0].append(int(ts))
        entry[1].append(msg)
        n += 1
        if n >= size:
            yield [(c, np.asarray(t, np.int64), m) for c, (t, m) in by.items()]
            by, n = {}, 0
    if n:
        yield [(c, np.asarray(t, np.int64), m) for c, (t, m) in by.items()]


class RecordedMessage(NamedTuple):
    """One decoded message: the channel (topic) it was published on, its
    timestamp in nanoseconds (log/record time), and the decoded payload
    (a ``dict`` for JSON, a protobuf message, or a rosbags dataclass)."""

    channel: str
    timestamp_ns: int
    message: Any


@dataclass(frozen=True)
class ChannelInfo:
    """What a recording declares about one channel.

    ``message_count`` is ``None`` when the format does not record it.
    ``encoding`` is the payload encoding: ``json``, ``protobuf``, ``cdr``, ``ros1``.
    """

    name: str
    type_name: str
    encoding: str
    message_count: int | None = None


@dataclass(frozen=True)
class RawSchema:
    """How one channel's raw payloads are encoded, in MCAP terms (for export):
    ``message_encoding`` (json/protobuf/cdr/ros1), schema name, schema encoding
    (jsonschema/protobuf/ros2msg/ros1msg or ``""``) and schema bytes."""

    message_encoding: str
    schema_name: str
    schema_encoding: str
    schema_data: bytes


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on what one pass over a recording may inflate (issue 16: decompression bombs).

    ``max_decompressed_bytes``: chunk/message bytes after decompression, whole recording;
    ``max_messages``: messages, whole recording (all channels, selected or not, where the
    container mixes them); ``max_chunk_bytes``: one chunk inflated in memory at once;
    ``max_held_bytes``: inflated bytes held at once, across chunks (a reader that merges chunks
    overlapping in time, or reorders messages, holds several: issue 41's many-chunk bomb).
    """

    max_decompressed_bytes: int = 2 << 30
    max_messages: int = 4_000_000
    max_chunk_bytes: int = 64 << 20
    max_held_bytes: int = 512 << 20


UNLIMITED = ReadLimits(1 << 62, 1 << 62, 1 << 62, 1 << 62)


class ReadBudget:
    """What one pass has inflated so far; raises :class:`RecordingLimitError` past a limit.

    Backends charge as they stream: a chunk's declared size before inflating it
    (:meth:`chunk_room`), its real size after, and every message as it is parsed. What they
    keep after a step (an inflated chunk a merge still reads, messages in a reorder window) they
    :meth:`hold` until they :meth:`release` it: ``held_bytes`` is what the pass holds now.
    """

    def __init__(self, limits: ReadLimits, path: Path) -> None:
        self.limits = limits
        self.path = path
        self.bytes = 0
        self.messages = 0
        self.held_bytes = 0

    def chunk_room(self, declared: int) -> int:
        """Bytes a chunk that declares ``declared`` may inflate to (raises when it cannot fit)."""
        if declared > self.limits.max_chunk_bytes:
            raise RecordingLimitError(self.path, "max_chunk_bytes", self.limits.max_chunk_bytes,
                                      f"a chunk of {declared} decompressed bytes")
        self._check_bytes(self.bytes + declared, f"{self.bytes + declared} decompressed bytes")
        self._check_held(2 * declared)  # while it inflates, its pieces and the joined bytes are both alive
        return min(self.limits.max_chunk_bytes, self.limits.max_decompressed_bytes - self.bytes)

    def hold(self, n: int) -> None:
        """``n`` more inflated bytes kept in memory (refused past ``max_held_bytes``)."""
        self._check_held(n)
        self.held_bytes += n

    def release(self, n: int) -> None:
        self.held_bytes = max(0, self.held_bytes - n)

    def _check_held(self, more: int) -> None:
        if self.held_bytes + more > self.limits.max_held_bytes:
            raise RecordingLimitError(self.path, "max_held_bytes", self.limits.max_held_bytes,
                                      f"{self.held_bytes + more} decompressed bytes held at once "
                                      f"({self.held_bytes} already held)")

    def charge_bytes(self, n: int) -> None:
        self.bytes += n
        self._check_bytes(self.bytes, f"{self.bytes} decompressed bytes (or more)")

    def charge_messages(self, n: int = 1) -> None:
        self.messages += n
        if self.messages > self.limits.max_messages:
            raise RecordingLimitError(self.path, "max_messages", self.limits.max_messages,
                                      f"{self.messages} messages (or more)")

    def _check_bytes(self, total: int, what: str) -> None:
        if total > self.limits.max_decompressed_bytes:
            raise RecordingLimitError(self.path, "max_decompressed_bytes", self.limits.max_decompressed_bytes, what)


class Recording(ABC):
    """A driving recording opened for streaming (see module docstring)."""

    #: format name as in the gRPC ``Recording.format``: ``mcap``, ``platform_trace``,
    #: ``ros1``, ``ros2``, ``cyber``
    format: str = "?"

    def __init__(self, path: str | Path, channels: Iterable[str] | None = None) -> None:
        self.path = Path(path)
        self.selected: frozenset[str] | None = None if channels is None else frozenset(channels)
        #: per channel, a whole-batch JSON decoder into the fields a channel map reads, which also
        #: applies the channel's filter (:class:`~services.strap.json_structs.StructDecoder`; its
        #: ``many`` answers None to decline); backends that decode JSON in batches use it, the
        #: vectorizer sets it for one pass
        self.struct_decoders: Mapping[str, Any] = {}
        #: bounds of every pass (set by ``open_recording(..., limits=)``); the current pass's budget
        self.limits: ReadLimits = UNLIMITED
        self._budget = ReadBudget(UNLIMITED, self.path)

    def new_budget(self) -> ReadBudget:
        """Start a pass: a fresh budget under :attr:`limits` (backends charge ``self._budget``)."""
        self._budget = ReadBudget(self.limits, self.path)
        return self._budget

    # -- metadata -------------------------------------------------------------------
    @abstractmethod
    def channels(self) -> Mapping[str, ChannelInfo]:
        """All channels the recording declares (selected or not), by name."""

    def message_counts(self) -> dict[str, int]:
        """Messages per channel, for every declared channel (0 if none).

        Uses declared counts when all are known, else one pass without decoding.
        """
        infos = self.channels()
        if infos and all(info.message_count is not None for info in infos.values()):
            return {name: int(info.message_count or 0) for name, info in infos.items()}
        counts = dict.fromkeys(infos, 0)
        self.new_budget()
        for channel in self._iter_channel_names():
            counts[channel] = counts.get(channel, 0) + 1
        return counts

    def _iter_channel_names(self) -> Iterator[str]:
        """Channel of every message (all channels), cheapest available way.
        Backends override this to skip payload decoding."""
        saved, self.selected = self.selected, None
        try:
            for msg in self._iter_messages():
                yield msg.channel
        finally:
            self.selected = saved

    def time_range_ns(self) -> tuple[int, int] | None:
        """(first, last) message timestamp when the format records it, else ``None``."""
        return None

    def wants(self, channel: str) -> bool:
        return self.selected is None or channel in self.selected

    # -- streaming ------------------------------------------------------------------
    @abstractmethod
    def _iter_messages(self) -> Iterator[RecordedMessage]:
        """Backend stream of selected messages, supposed to be timestamp-ordered."""

    def __iter__(self) -> Iterator[RecordedMessage]:
        last_ns: int | None = None
        self.new_budget()
        for msg in self._iter_messages():
            if last_ns is not None and msg.timestamp_ns < last_ns:
                raise OutOfOrderError(
                    self.path,
                    None,
                    f"message on {msg.channel!r} at {msg.timestamp_ns} ns follows one at "
                    f"{last_ns} ns; this backend cannot restore timestamp order",
                )
            last_ns = msg.timestamp_ns
            yield msg

    def iter_batches(self) -> Iterator[Batch]:
        """Selected messages in time windows grouped by channel (:data:`Batch`), order checked
        as :meth:`__iter__` does; backends with a cheaper way (MCAP chunks) override it."""
        return stream_batches(iter(self))

    # -- raw access (export) -----------------------------------------------------------
    @abstractmethod
    def _iter_raw(self) -> Iterator[tuple[str, int, bytes]]:
        """Selected messages as (channel, timestamp_ns, payload bytes), in storage order."""

    def iter_raw(self) -> Iterator[tuple[str, int, bytes]]:
        """Selected messages as undecoded payload bytes, time-ordered (checked)."""
        last_ns: int | None = None
        self.new_budget()
        for channel, ts, data in self._iter_raw():
            if last_ns is not None and ts < last_ns:
                raise OutOfOrderError(self.path, None, f"raw message on {channel!r} out of order")
            last_ns = ts
            yield channel, ts, data

    @abstractmethod
    def raw_schema(self, channel: str) -> RawSchema:
        """Encoding and schema of ``channel``'s raw payloads."""

    # -- lifecycle ------------------------------------------------------------------
    def close(self) -> None:  # noqa: B027 - optional hook
        """Release file handles (backends that keep them open override this)."""

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.format} {self.path}>"
