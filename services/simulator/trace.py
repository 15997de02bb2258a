"""Execution traces as MCAP files (JSON messages with JSON Schemas; Foxglove opens them).

Channels (topic -> what):

``/gt/vehicles``     ground truth of every vehicle of the message-driven rollout
``/signals/true``    true phase and countdown of every signal group
``/v2x/tx``          messages sent (published by the V2X stack)
``/v2x/rx``          messages received by the ego (V2X stack)
``/recon/ego``       the ego's reconstructed belief (both rollouts, ``rollout`` field)
``/app/decision``    application decisions, on change (both rollouts)
``/ctrl/ego``        the ego controller's commands (both rollouts)
``/monitor/events``  divergence-monitor episodes (V2X stack)

Derived channels (``derived=``): objects that watch every published message and write their own
binary messages with their own schema, e.g. ``/viz/scene`` (``services.simulator.scene``:
Foxglove ``SceneUpdate`` protobuf). They add channels; the ones above stay as they are.

Any other topic a publisher uses gets a permissive schema (``{"type": "object"}``). Log
times are scenario time in nanoseconds; messages on one channel must be published in
time order (they are, by construction of the step loop).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from mcap.writer import Writer

_NUM = {"type": "number"}
_NULLNUM = {"type": ["number", "null"]}
_STR = {"type": "string"}
_BOOL = {"type": "boolean"}
_INT = {"type": "integer"}


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required)}


SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "/gt/vehicles": ("lastv2x.GroundTruthVehicles", _obj({"vehicles": {"type": "array", "items": _obj({
        "id": _STR, "x": _NUM, "y": _NUM, "speed_mps": _NUM, "heading_rad": _NUM, "accel_mps2": _NUM,
        "alive": _BOOL, "equipped": _BOOL}, ("id", "x", "y"))}}, ("vehicles",))),
    "/signals/true": ("lastv2x.SignalStates", _obj({
        "ego_group_id": {"type": ["string", "null"]},  # the group truly controlling the MD ego's next bar
        "groups": {"type": "array", "items": _obj({
            "id": _STR, "phase": _INT, "time_to_change_s": _NUM, "time_to_green_s": _NUM}, ("id", "phase"))}},
        ("groups",))),
    # what left the senders this step (after the fault operators; kept = false: a fault dropped it)
    "/v2x/tx": ("lastv2x.V2XTransmitted", _obj({"messages": {"type": "array", "items": _obj({
        "stream": _STR, "sender": _STR, "msg_id": _INT, "timestamp_s": _NUM, "hops": _INT, "origin": _STR,
        "kept": _BOOL}, ("stream", "sender", "msg_id"))}}, ("messages",))),
    # what the MD ego's receiver took in this step (rx_s: arrival time, scenario seconds)
    "/v2x/rx": ("lastv2x.V2XReceived", _obj({"messages": {"type": "array", "items": _obj({
        "stream": _STR, "sender": _STR, "msg_id": _INT, "timestamp_s": _NUM, "hops": _INT, "origin": _STR,
        "rx_s": _NUM}, ("stream", "sender", "msg_id", "rx_s"))}}, ("messages",))),
    "/recon/ego": ("lastv2x.EgoBelief", _obj({
        "rollout": _STR, "ego_group_id": {"type": ["string", "null"]},
        "signal": {"type": ["object", "null"]}, "tracks": {"type": "array", "items": {"type": "object"}},
        "eebl_events": _INT, "eebl": {"type": "array", "items": {"type": "object"}},
        "signals": {"type": "object"}, "map_aoi_s": _NUM}, ("rollout",))),
    # the applications' own-sensor input (EgoState), per rollout and step
    "/app/input": ("lastv2x.AppInput", _obj({
        "rollout": _STR, "s_m": _NUM, "speed_mps": _NUM, "accel_mps2": _NUM, "x": _NUM, "y": _NUM,
        "heading_rad": _NUM, "stop_bar_distance_m": _NULLNUM, "conflict_distance_m": _NULLNUM}, ("rollout",))),
    "/app/decision": ("lastv2x.Decision", _obj({
        "rollout": _STR, "app": _STR, "action": _STR, "reason": _STR, "epoch": _BOOL, "committed": _BOOL,
        "info_valid": _BOOL, "target_speed_mps": _NULLNUM, "brake_mps2": _NUM, "aoi_s": _NULLNUM},
        ("rollout", "app", "action"))),
    "/ctrl/ego": ("lastv2x.EgoControl", _obj({
        "rollout": _STR, "stop_at_bar": _BOOL, "v_target_mps": _NULLNUM, "brake_mps2": _NUM,
        "speed_mps": _NUM}, ("rollout",))),
    "/monitor/events": ("lastv2x.MonitorEvent", {"type": "object"}),
}
CHANNELS = tuple(SCHEMAS)


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item):  # numpy scalars
        return _jsonable(x.item())
    return x


def trace_id(uri: str | Path, trace_dir: Path) -> str:
    """What a reply names a written trace by: its path relative to the simulator's trace folder
    (``LASTV2X_SIMULATOR_TRACE_DIR``), never a server path (issue 41). ``uri``: the ``file://`` URI or
    path ``run_one`` returned; "" stays ""."""
    if not uri:
        return ""
    from urllib.parse import unquote, urlparse

    text = str(uri)
    path = Path(unquote(urlparse(text).path)) if text.startswith("file://") else Path(text)
    return path.resolve().relative_to(Path(trace_dir).resolve()).as_posix()


def trace_file(trace: str, trace_dir: Path) -> Path:
    """The file a trace id (``trace_id``) names under ``trace_dir``; ValueError for an id that is
    absolute or leaves the folder."""
    rel = Path(trace)
    folder = Path(trace_dir).resolve()
    path = (folder / rel).resolve()
    if not trace or rel.is_absolute() or not path.is_relative_to(folder):
        raise ValueError(f"{trace!r} is not a trace id (a path relative to the simulator's trace folder)")
    return path


class TraceWriter:
    """An MCAP writer implementing :class:`services.simulator.info.TraceSink`.

    Use as a context manager, or call :meth:`close`. ``channels`` limits what is recorded
    (default: everything published)."""

    def __init__(self, output: str | Path | IO[bytes], *, channels: tuple[str, ...] | None = None,
                 metadata: Mapping[str, str] | None = None, derived: Sequence[Any] = ()):
        self._own = isinstance(output, str | Path)
        self._fh: IO[bytes] = open(output, "wb") if self._own else output  # noqa: SIM115
        self._writer = Writer(self._fh)
        self._writer.start(profile="", library="lastv2x")
        self._channels: dict[str, int] = {}
        self._schemas: dict[str, int] = {}
        self._allowed = None if channels is None else set(channels)
        self._seq: dict[str, int] = {}
        self.messages = 0
        if metadata:
            self._writer.add_metadata("lastv2x", dict(metadata))
        self._closed = False
        # derived channels: .topic, .schema() -> (name, encoding, data, message encoding),
        # .observe(channel, t_s, message) and .flush() -> [(topic, t_s, bytes)]
        self._derived = [d for d in derived if self._allowed is None or d.topic in self._allowed]

    def _write_derived(self, d: Any, items: Sequence[tuple[str, float, bytes]]) -> None:
        for topic, t_s, data in items:
            cid = self._channels.get(topic)
            if cid is None:
                name, encoding, schema, message_encoding = d.schema()
                sid = self._writer.register_schema(name=name, encoding=encoding, data=schema)
                cid = self._writer.register_channel(topic=topic, message_encoding=message_encoding, schema_id=sid)
                self._channels[topic] = cid
            ns = int(round(t_s * 1e9))
            seq = self._seq.get(topic, 0)
            self._seq[topic] = seq + 1
            self._writer.add_message(channel_id=cid, log_time=ns, data=data, publish_time=ns, sequence=seq)
            self.messages += 1

    def _channel(self, topic: str) -> int:
        cid = self._channels.get(topic)
        if cid is None:
            name, schema = SCHEMAS.get(topic, ("lastv2x.Message", {"type": "object"}))
            sid = self._schemas.get(name)
            if sid is None:
                sid = self._writer.register_schema(name=name, encoding="jsonschema",
                                                   data=json.dumps(schema).encode())
                self._schemas[name] = sid
            cid = self._writer.register_channel(topic=topic, message_encoding="json", schema_id=sid)
            self._channels[topic] = cid
        return cid

    def register(self, channel: str) -> None:
        """Declare ``channel`` now (a reader then sees it even if nothing is ever published on it)."""
        if not self._closed and (self._allowed is None or channel in self._allowed):
            self._channel(channel)

    def publish(self, channel: str, t_s: float, message: Mapping[str, Any]) -> None:
        if self._closed or (self._allowed is not None and channel not in self._allowed):
            return
        cid = self._channel(channel)
        ns = int(round(t_s * 1e9))
        seq = self._seq.get(channel, 0)
        self._seq[channel] = seq + 1
        data = json.dumps(_jsonable(message), separators=(",", ":"), allow_nan=False).encode()
        self._writer.add_message(channel_id=cid, log_time=ns, data=data, publish_time=ns, sequence=seq)
        self.messages += 1
        for d in self._derived:
            self._write_derived(d, d.observe(channel, t_s, message))

    def close(self) -> None:
        if self._closed:
            return
        for d in self._derived:
            self._write_derived(d, d.flush())
        self._writer.finish()
        self._closed = True
        if self._own:
            self._fh.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


__all__ = ["CHANNELS", "SCHEMAS", "TraceWriter"]
