"""The LAST-V2X platform's own execution trace: an MCAP file, JSON encoding.

One channel per module, each message a JSON object.  The simulator writes it;
STRaP reads it back with the generic MCAP backend (``open_recording``), so a
trace is an ordinary recording that any MCAP tool (Foxglove, ``mcap cat``) opens.

Header profile :data:`TRACE_PROFILE`; each channel carries a small
``jsonschema`` schema named ``lastv2x.trace.<module>`` and metadata
``{"module": ...}``.  The payloads below are the contract the STRaP channel
map ``schemas/channels_platform.json`` reads (extra keys are ignored):

==================  ==========================================================
channel             payload
==================  ==========================================================
``/gt/vehicles``    ``{"ego": {"speed_mps", "at_intersection", "near_crosswalk",
                    "stop_sign_ahead"}, "vehicles": [{"id", "kind", "action",
                    "speed_mps"}]}`` — ground truth
``/signals/true``   ``{"group", "phase": red|amber|green|dark, "countdown_s"}``
``/v2x/tx``         ``{"messages": [{"kind": BSM|SPaT|MAP|EEBL, "sender"}]}``
``/v2x/rx``         ``{"messages": [{"kind", "sender", "latency_s"}], "lost"}``
``/recon/ego``      ``{"believed_phase", "countdown_s", "aoi_s", "tracks": [...]}``
``/app/decision``   ``{"app": RLVW|GLOSA|FCW|EEBL|IMA|LTA, "decision":
                    none|go|advise|warn|stop|brake}``
``/ctrl/ego``       ``{"action", "accel_mps2"}``
``/monitor/events`` ``{"events": [{"kind": phase_wrong|countdown_error|
                    track_displaced|ghost_track}]}``
==================  ==========================================================

Every module publishes its *state* on every tick (an empty list when nothing
happened), because STRaP alignment carries a channel's last message forward.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcap.writer import CompressionType, Writer

from .base import RecordedMessage
from .mcap_reader import McapRecording

TRACE_PROFILE = "lastv2x-trace"
TRACE_LIBRARY = "lastv2x-strap"

#: the platform's channels, in pipeline order (write_trace accepts others too)
PLATFORM_CHANNELS: tuple[str, ...] = (
    "/gt/vehicles",
    "/signals/true",
    "/v2x/tx",
    "/v2x/rx",
    "/recon/ego",
    "/app/decision",
    "/ctrl/ego",
    "/monitor/events",
)


def _compression(name: str) -> CompressionType:
    name = name.lower()
    if name == "none":
        return CompressionType.NONE
    if name == "lz4":
        return CompressionType.LZ4
    if name == "zstd":
        return CompressionType.ZSTD
    raise ValueError(f"unknown compression {name!r} (none, lz4, zstd)")


def write_trace(
    path: str | Path,
    messages: Iterable[tuple[str, int, Mapping[str, Any]] | RecordedMessage],
    *,
    compression: str = "lz4",
    chunk_size_bytes: int = 1 << 20,
) -> int:
    """Write ``(channel, timestamp_ns, payload_dict)`` items as a platform trace.

    Streams: channels are registered on first use and chunks are flushed as they
    fill, so ``messages`` may be a generator of any length.  Items need not be
    time-ordered (the MCAP index lets readers restore order).  Returns the
    number of messages written.
    """
    path = Path(path)
    count = 0
    with open(path, "wb") as stream:
        writer = Writer(stream, chunk_size=chunk_size_bytes, compression=_compression(compression))
        writer.start(profile=TRACE_PROFILE, library=TRACE_LIBRARY)
        channel_ids: dict[str, int] = {}
        encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
        for channel, timestamp_ns, payload in messages:
            cid = channel_ids.get(channel)
            if cid is None:
                module = channel.strip("/").replace("/", ".") or "root"
                schema = json.dumps({"type": "object", "title": f"lastv2x.trace.{module}"}).encode()
                sid = writer.register_schema(f"lastv2x.trace.{module}", "jsonschema", schema)
                cid = writer.register_channel(channel, "json", sid, {"module": module})
                channel_ids[channel] = cid
            ts = int(timestamp_ns)
            if ts < 0:
                raise ValueError(f"negative timestamp {ts} on {channel}")
            writer.add_message(cid, log_time=ts, data=encode(payload).encode(), publish_time=ts,
                               sequence=count & 0xFFFFFFFF)
            count += 1
        writer.finish()
    return count


def read_trace(path: str | Path, channels: Iterable[str] | None = None) -> McapRecording:
    """Open a platform trace (any MCAP works; this is ``open_recording`` for traces)."""
    return McapRecording(Path(path), channels)
