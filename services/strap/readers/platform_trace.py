"""The LAST-V2X platform's own execution trace: an MCAP file, JSON encoding.

The simulator writes it (``services.simulator.trace.TraceWriter``, log times =
scenario time in ns); STRaP reads it back with the generic MCAP backend
(``open_recording``), so a trace is an ordinary recording that any MCAP tool
(Foxglove, ``mcap cat``) opens.  :func:`write_trace` here writes the same
payloads under the header profile :data:`TRACE_PROFILE` (synthetic traces,
tests).  The payloads the STRaP channel map ``schemas/channels_platform.json``
reads (extra keys are ignored) are the simulator's, as published in
``services/simulator/paired.py`` and ``services/simulator/v2x/stack.py``:

=====================  ======================================================
channel                payload (phase codes: 0 green, 1 amber, 2 red, -1 unknown)
=====================  ======================================================
``/gt/vehicles``       ``{"vehicles": [{"id", "x", "y", "speed_mps", "heading_rad",
                       "accel_mps2", "alive", "equipped"}]}`` — the md world,
                       ``vehicles[0]`` is the ego
``/signals/true``      ``{"groups": [{"id", "phase", "time_to_change_s"}]}``
``/v2x/belief``        ``{"ego_group_id", "phase", "countdown_s", "spat_aoi_s",
                       "map_aoi_s", "tracks": n, "events": n, "active_faults": [...]}``
                       — md only, every 0.5 s
``/recon/ego``         ``{"rollout": md|gt, "ego_group_id", "signal": {"phase",
                       "time_to_change_s", "aoi_s", "valid"} | null, "tracks":
                       [{"id", "x", "y", "speed_mps", "aoi_s"}], "eebl_events": n}``
``/app/decision``      ``{"rollout", "app": RLVW|GLOSA|FCW|EEBL|IMA|LTA, "action":
                       proceed|stop|brake|yield|advise, "reason", "epoch",
                       "committed", "info_valid", "target_speed_mps", "brake_mps2",
                       "aoi_s"}`` — on change only
``/ctrl/ego``          ``{"rollout", "stop_at_bar", "v_target_mps", "brake_mps2",
                       "speed_mps"}``
``/monitor/events``    ``{"kind": signal_phase|countdown|track_displaced|ghost_track|
                       signal_missing|track_missing, "subject", "start_s", "end_s",
                       "max_error", "detail"}`` — one per episode, stamped at its start
``/v2x/fault_window``  ``{"name", "operator", "stream", "start_s", "end_s"}``
=====================  ======================================================

``/recon/ego``, ``/app/decision`` and ``/ctrl/ego`` carry **both rollouts** of a
paired execution on one channel (the ``rollout`` field); the channel map keeps
``md`` with channel-level ``where`` filters.  ``/gt/vehicles``,
``/signals/true``, ``/v2x/*`` and ``/monitor/events`` describe the md rollout
only.  The simulator does not publish ``/v2x/tx`` or ``/v2x/rx``; what STRaP
would need beyond the above is listed in ``services/strap/TRACE_REQUESTS.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcap.writer import CompressionType, Writer

from .base import RecordedMessage
from .mcap_reader import TRACE_PROFILE, McapRecording

TRACE_LIBRARY = "lastv2x-strap"

#: the channels the simulator publishes and the channel map reads, in pipeline
#: order (write_trace accepts others too)
PLATFORM_CHANNELS: tuple[str, ...] = (
    "/gt/vehicles",
    "/signals/true",
    "/v2x/belief",
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
