"""Recording readers: one interface, ``open_recording(path) -> Recording``.

Backends and how a path is routed (``backend="auto"``):

==============================  ===========================================
path                            backend
==============================  ===========================================
``*.mcap`` / MCAP magic          :class:`McapRecording` (``mcap`` library)
rosbag2 dir, storage ``mcap``    :class:`McapRecording` over the split files
rosbag2 dir, storage sqlite3     :class:`RosbagsRecording` (rosbags AnyReader)
``*.bag`` / ``*.db3``            :class:`RosbagsRecording`
``*.record`` / ``*.record.N``    :class:`CyberRecording` (our own reader)
``x.record.N`` with siblings,    :class:`SplitRecording` of one
or a directory of them           :class:`CyberRecording` per part (read as one)
==============================  ===========================================

rosbag2 MCAP directories go to the MCAP backend because it decodes from the
definitions embedded in each file and reads every topic the files contain
(rosbags drops topics whose QoS in ``metadata.yaml`` disagrees with the file,
and refuses a whole bag over one unparseable service definition).  Pass
``backend="rosbags"`` to force rosbags; ``"mcap"`` / ``"cyber"`` likewise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ..errors import RecordingError, UnsupportedRecordingError
from .base import ChannelInfo, ReadLimits, RecordedMessage, Recording
from .cyber_record import CyberRecording, is_cyber_record
from .mcap_reader import MAGIC as MCAP_MAGIC
from .mcap_reader import McapRecording
from .platform_trace import PLATFORM_CHANNELS, TRACE_PROFILE, read_trace, write_trace
from .rosbags_reader import RosbagsRecording, rosbag2_storage_files
from .split import SplitRecording, split_parts

_CYBER_NAME = re.compile(r"\.record(\.\d+)?$")
_ROSBAG1_MAGIC = b"#ROSBAG V2.0"


def _rosbag2_storage(directory: Path) -> str | None:
    from ruamel.yaml import YAML

    try:
        meta = YAML(typ="safe").load((directory / "metadata.yaml").read_text())
        return str(meta["rosbag2_bagfile_information"]["storage_identifier"])
    except Exception:
        return None


def _sniff(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    if head.startswith(MCAP_MAGIC):
        return "mcap"
    if head.startswith(_ROSBAG1_MAGIC) or head.startswith(b"SQLite format 3"):
        return "rosbags"
    if is_cyber_record(path):
        return "cyber"
    return None


def open_recording(
    path: str | Path,
    *,
    channels: Iterable[str] | None = None,
    backend: str = "auto",
    limits: ReadLimits | None = None,
) -> Recording:
    """Open a recording for streaming ``(channel, timestamp_ns, message)`` in time order.

    ``channels`` limits decoding to those channels (``None`` = all).
    Raises :class:`RecordingError` subclasses naming the file (and byte offset
    where known) for missing, truncated, corrupt or unsupported inputs, and
    :class:`~services.strap.errors.RecordingLimitError` when a pass would inflate more
    than ``limits`` allow (none by default).
    """
    rec = _open(path, channels, backend)
    if limits is not None:
        rec.limits = limits
    return rec


def _open(path: str | Path, channels: Iterable[str] | None, backend: str) -> Recording:
    p = Path(path)
    if not p.exists():
        raise RecordingError(p, None, "no such file or directory")
    if backend in ("auto", "cyber"):
        parts = split_parts(p)
        if parts is not None:  # Apollo's split record: every part, read as one recording
            return SplitRecording(p, [CyberRecording(f, channels) for f in parts], channels)
    chosen = backend
    if backend == "auto":
        if p.is_dir():
            if not (p / "metadata.yaml").is_file():
                raise UnsupportedRecordingError(p, None, "directory is not a rosbag2 bag (no metadata.yaml)")
            chosen = "mcap" if _rosbag2_storage(p) == "mcap" else "rosbags"
        elif p.suffix == ".mcap":
            chosen = "mcap"
        elif p.suffix in (".bag", ".db3"):
            chosen = "rosbags"
        elif _CYBER_NAME.search(p.name):
            chosen = "cyber"
        else:
            sniffed = _sniff(p)
            if sniffed is None:
                raise UnsupportedRecordingError(p, 0, "unrecognised recording format")
            chosen = sniffed
    if chosen == "mcap":
        if p.is_dir():
            files = rosbag2_storage_files(p)
            if files is None:
                raise UnsupportedRecordingError(p, None, "rosbag2 directory lists no readable MCAP files")
            return McapRecording(files, channels)
        return McapRecording(p, channels)
    if chosen == "rosbags":
        return RosbagsRecording(p, channels)
    if chosen == "cyber":
        return CyberRecording(p, channels)
    raise ValueError(f"unknown backend {backend!r} (auto, mcap, rosbags, cyber)")


__all__ = [
    "PLATFORM_CHANNELS",
    "TRACE_PROFILE",
    "ChannelInfo",
    "CyberRecording",
    "McapRecording",
    "ReadLimits",
    "RecordedMessage",
    "Recording",
    "RosbagsRecording",
    "SplitRecording",
    "open_recording",
    "read_trace",
    "write_trace",
]
