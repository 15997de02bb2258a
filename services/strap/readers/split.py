"""Several files of one recording read as one: Apollo's split records
(``drive.record.00000``, ``drive.record.00001``, ... as ``cyber_recorder`` writes them when a
file reaches its size or time limit).

:class:`SplitRecording` merges its parts by timestamp (``heapq.merge``: each part is already
time-ordered, one message per part in memory), declares the union of their channels (counts
summed), and runs every pass under **one** read budget shared by all parts, so the
decompression limits bound the whole set, not each file. The channel selection is the
set's and is handed to each part.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from .base import ChannelInfo, RawSchema, RecordedMessage, Recording

_PART = re.compile(r"^(?P<stem>.+\.record)\.(?P<n>\d+)$")


def split_parts(path: Path) -> list[Path] | None:
    """The files of ``path``'s split set in part order when there are several
    (``path`` one part, or a directory of one set's parts), else None."""
    if path.is_dir():
        found = sorted((p for p in path.iterdir() if p.is_file() and _PART.match(p.name)), key=_part_key)
        stems = {_PART.match(p.name).group("stem") for p in found}  # type: ignore[union-attr]
        return found if found and len(stems) == 1 else None
    m = _PART.match(path.name)
    if m is None:
        return None
    parts = sorted((p for p in path.parent.iterdir()
                    if p.is_file() and (pm := _PART.match(p.name)) and pm.group("stem") == m.group("stem")),
                   key=_part_key)
    return parts if len(parts) > 1 else None


def _part_key(p: Path) -> tuple[str, int]:
    m = _PART.match(p.name)
    assert m is not None
    return m.group("stem"), int(m.group("n"))


class SplitRecording(Recording):
    """Parts of one recording, read as one (see module docstring)."""

    def __init__(self, path: Path, parts: Sequence[Recording], channels: Iterable[str] | None = None) -> None:
        self.parts = list(parts)
        super().__init__(path, channels)
        self.format = self.parts[0].format

    @property  # type: ignore[override]
    def selected(self) -> frozenset[str] | None:
        return self._selected

    @selected.setter
    def selected(self, value: frozenset[str] | None) -> None:
        self._selected = value
        for part in getattr(self, "parts", ()):
            part.selected = value

    def channels(self) -> Mapping[str, ChannelInfo]:
        out: dict[str, ChannelInfo] = {}
        for part in self.parts:
            for name, info in part.channels().items():
                prev = out.get(name)
                if prev is None:
                    out[name] = info
                else:
                    n = None if prev.message_count is None or info.message_count is None \
                        else prev.message_count + info.message_count
                    out[name] = ChannelInfo(name, prev.type_name, prev.encoding, n)
        return out

    def time_range_ns(self) -> tuple[int, int] | None:
        spans = [p.time_range_ns() for p in self.parts]
        if any(s is None for s in spans):
            return None
        return min(s[0] for s in spans if s), max(s[1] for s in spans if s)

    def _share_budget(self) -> None:
        for part in self.parts:
            part._budget = self._budget

    def _iter_messages(self) -> Iterator[RecordedMessage]:
        self._share_budget()
        yield from heapq.merge(*(p._iter_messages() for p in self.parts), key=lambda m: m.timestamp_ns)

    def _iter_channel_names(self) -> Iterator[str]:
        self._share_budget()
        for part in self.parts:
            yield from part._iter_channel_names()

    def _iter_raw(self) -> Iterator[tuple[str, int, bytes]]:
        self._share_budget()
        yield from heapq.merge(*(p._iter_raw() for p in self.parts), key=lambda m: m[1])

    def raw_schema(self, channel: str) -> RawSchema:
        for part in self.parts:
            if channel in part.channels():
                return part.raw_schema(channel)
        raise KeyError(channel)

    def close(self) -> None:
        for part in self.parts:
            part.close()
