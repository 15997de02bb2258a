"""Segment export: the kept segments (with their pre-roll) as one MCAP file.

Whatever the source format, the export is an MCAP that any MCAP tool and our
own reader open: payloads are copied **undecoded** with their schema —

* MCAP sources keep their channel encodings and schemas;
* Apollo Cyber channels become ``protobuf`` channels whose schema is the
  ``FileDescriptorSet`` flattened from the record's embedded descriptors;
* ROS 1 bags become ``ros1``/``ros1msg`` channels, ROS 2 bags ``cdr``/``ros2msg``.

A message is exported when its timestamp falls in a segment's replay window
``[preroll_start_ns, clip_end_ns)`` — from the pre-roll start (warm-up) to the
end of the clip's last frame, which stands for ``[t_i, t_{i+1})`` after
alignment (the clip is what is compared).  Overlapping windows are merged so no message is
written twice.  The window list travels in an MCAP metadata record named
:data:`SEGMENTS_METADATA` (JSON under key ``"segments"``) so a replayer knows
where each clip and its warm-up begin.  One streaming pass over the source.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcap.writer import CompressionType, Writer

from .readers.base import Recording
from .readers.platform_trace import TRACE_PROFILE
from .reduce import Segment

SEGMENTS_METADATA = "lastv2x.strap.segments"


@dataclass(frozen=True)
class ExportSummary:
    path: Path
    messages: int
    windows_ns: tuple[tuple[int, int], ...]


def replay_windows(segments: Iterable[Segment]) -> list[tuple[int, int]]:
    """Merged, sorted, half-open ``[preroll_start_ns, clip_end_ns)`` windows."""
    spans = sorted((s.preroll_start_ns, s.clip_end_ns) for s in segments)
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def export_segments(
    recording: Recording,
    segments: Sequence[Segment],
    out_path: str | Path,
    *,
    channels: Iterable[str] | None = None,
    segment_ids: Sequence[str] | None = None,
    compression: str = "lz4",
) -> ExportSummary:
    """Write the messages of ``segments``' replay windows from ``recording`` to MCAP.

    ``channels`` limits the export (default: every channel of the recording).
    ``segment_ids`` names the segments in the metadata (default ``seg-<index>``).
    """
    out = Path(out_path)
    windows = replay_windows(segments)
    ids = list(segment_ids) if segment_ids is not None else [f"seg-{s.index}" for s in segments]
    saved = recording.selected
    if channels is not None:
        recording.selected = frozenset(channels)
    comp = {"none": CompressionType.NONE, "lz4": CompressionType.LZ4, "zstd": CompressionType.ZSTD}[compression]
    count = 0
    try:
        with open(out, "wb") as stream:
            writer = Writer(stream, compression=comp)
            writer.start(profile=TRACE_PROFILE if recording.format == "platform_trace" else "",
                         library="lastv2x-strap-export")
            writer.add_metadata(SEGMENTS_METADATA, {"segments": json.dumps([
                {"id": sid, "start_ns": s.start_ns, "end_ns": s.clip_last_ns, "clip_end_ns": s.clip_end_ns,
                 "preroll_start_ns": s.preroll_start_ns, "frame_count": s.clip_frames}
                for sid, s in zip(ids, segments, strict=True)])})
            channel_ids: dict[str, int] = {}
            w = 0
            if windows:
                for channel, ts, data in recording.iter_raw():
                    while w < len(windows) and ts >= windows[w][1]:
                        w += 1
                    if w == len(windows):
                        break
                    if ts < windows[w][0]:
                        continue
                    cid = channel_ids.get(channel)
                    if cid is None:
                        raw = recording.raw_schema(channel)
                        sid = writer.register_schema(raw.schema_name, raw.schema_encoding, raw.schema_data) \
                            if raw.schema_encoding else 0
                        cid = channel_ids[channel] = writer.register_channel(channel, raw.message_encoding, sid)
                    writer.add_message(cid, log_time=ts, data=data, publish_time=ts)
                    count += 1
            writer.finish()
    finally:
        recording.selected = saved
    return ExportSummary(out, count, tuple(windows))
