"""``lastv2x execute --live``: a paired execution streamed to Foxglove as it runs.

A :class:`LiveSink` is a trace sink (``services.simulator.info.TraceSink``) that forwards what
the simulator publishes to a ``foxglove-sdk`` WebSocket server on loopback: every JSON trace
channel as JSON with its JSON Schema (``services.simulator.trace.SCHEMAS``) and ``/viz/scene``
as protobuf ``foxglove.SceneUpdate`` (``services.simulator.scene``, the same builder the MCAP
trace uses), paced so scenario time runs at ``rate`` x real time (0: as fast as it computes).
Open Foxglove, "Open connection", ``ws://127.0.0.1:PORT``, and a 3D panel shows both egos.

``wait_for_client_s`` holds the run until a client subscribes to a channel (or the time
passes), so the first steps are not sent to nobody; ``linger_s`` keeps the server up after the
run for a late look. The server binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lastv2x.core.errors import FailedPrecondition

DEFAULT_PORT = 8765


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item):
        return _jsonable(x.item())
    return x


class _Listener:
    def __init__(self) -> None:
        self.subscribed = threading.Event()

    def on_subscribe(self, client: Any, channel: Any) -> None:
        self.subscribed.set()


class LiveSink:
    """Forwards trace messages to a foxglove-sdk context (channels created on first use)."""

    def __init__(self, foxglove: Any, context: Any, program: Any, *, rate: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        from services.simulator.scene import scene_channels
        from services.simulator.trace import SCHEMAS

        self._fox, self._ctx, self._schemas = foxglove, context, SCHEMAS
        self._channels: dict[str, Any] = {}
        self._scenes = scene_channels(program)
        self.rate = rate
        self._clock, self._sleep = clock, sleep
        self._t0: float | None = None
        self.messages = 0
        for topic in self._schemas:  # advertised before the run: a client can subscribe, then watch from t = 0
            self._channel(topic)
        for d in self._scenes:
            self._channel(d.topic, raw=d.schema())

    def _channel(self, topic: str, *, raw: tuple[str, str, bytes, str] | None = None) -> Any:
        ch = self._channels.get(topic)
        if ch is None:
            if raw is not None:
                name, encoding, data, msg_encoding = raw
                schema = self._fox.Schema(name=name, encoding=encoding, data=data)
            else:
                name, js = self._schemas.get(topic, ("lastv2x.Message", {"type": "object"}))
                schema, msg_encoding = self._fox.Schema(name=name, encoding="jsonschema",
                                                        data=json.dumps(js).encode()), "json"
            ch = self._fox.Channel(topic, schema=schema, message_encoding=msg_encoding, context=self._ctx)
            self._channels[topic] = ch
        return ch

    def _pace(self, t_s: float) -> None:
        if self.rate <= 0:
            return
        now = self._clock()
        if self._t0 is None:
            self._t0 = now - t_s / self.rate
        wait = self._t0 + t_s / self.rate - now
        if wait > 0:
            self._sleep(wait)

    def _log_scene(self, items: list[tuple[str, float, bytes]]) -> None:
        for d in self._scenes:
            for topic, t, data in items:
                self._channel(topic, raw=d.schema()).log(data, log_time=int(round(t * 1e9)))
                self.messages += 1

    def publish(self, channel: str, t_s: float, message: Mapping[str, Any]) -> None:
        if channel != "/monitor/events":  # episodes are published after the fact, at their start time
            self._pace(t_s)
        self._channel(channel).log(json.dumps(_jsonable(message), allow_nan=False).encode(),
                                   log_time=int(round(t_s * 1e9)))
        self.messages += 1
        for d in self._scenes:
            self._log_scene(d.observe(channel, t_s, message))

    def close(self) -> None:
        for d in self._scenes:
            self._log_scene(d.flush())


@dataclass
class LiveServer:
    """A foxglove-sdk WebSocket server of its own context; ``port`` is the bound one (0 = any free)."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT

    def __enter__(self) -> LiveServer:
        try:
            import foxglove
        except ImportError:
            raise FailedPrecondition("the live view needs the foxglove-sdk package",
                                     "pip install 'lastv2x[viz]'") from None
        self.foxglove = foxglove
        self.context = foxglove.Context()
        self.listener = _Listener()
        try:
            self.server = foxglove.start_server(name="lastv2x", host=self.host, port=self.port, context=self.context,
                                                server_listener=self.listener)
        except Exception as exc:  # the port is taken, say
            raise FailedPrecondition(f"cannot start the live view on {self.host}:{self.port}: {exc}",
                                     "pass --live-port 0 for any free port") from None
        self.port = self.server.port
        return self

    def wait_for_client(self, timeout_s: float) -> bool:
        return self.listener.subscribed.wait(timeout_s) if timeout_s > 0 else self.listener.subscribed.is_set()

    def sink(self, program: Any, rate: float = 1.0) -> LiveSink:
        return LiveSink(self.foxglove, self.context, program, rate=rate)

    def __exit__(self, *exc: Any) -> None:
        self.server.stop()


def run_live(program: Any, seed: int | None, limits: Any, app: Any, *, host: str = "127.0.0.1",
             port: int = DEFAULT_PORT, rate: float = 1.0, wait_for_client_s: float = 0.0, linger_s: float = 0.0,
             on_ready: Callable[[int], None] | None = None) -> tuple[Any, int, int]:
    """Execute ``program`` paired while streaming it; (outcome, messages sent, port)."""
    from services.simulator.execute import v2x_source_factory, validate_program, validate_seed
    from services.simulator.paired import execute_paired

    validate_seed(seed)
    road_map = validate_program(program, limits)
    with LiveServer(host, port) as server:
        sink = server.sink(program, rate)  # advertises every channel
        if on_ready is not None:
            on_ready(server.port)
        server.wait_for_client(wait_for_client_s)
        outcome = execute_paired(program, seed, md_source_factory=v2x_source_factory(road_map=road_map),
                                 trace=sink, app=app)
        sink.close()
        if linger_s > 0:
            time.sleep(linger_s)
        return outcome, sink.messages, server.port


__all__ = ["DEFAULT_PORT", "LiveServer", "LiveSink", "run_live"]
