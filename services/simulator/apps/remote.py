"""A team's application behind ``grpc://host:port``: the ``lastv2x.v1.ApplicationUnderTestService``
client, and the message conversions both sides of the contract use.

:class:`RemoteApp` is an :class:`~services.simulator.apps.contract.ApplicationUnderTest`: ``open``
/ ``step`` / ``close`` are one RPC each (a batch's rows travel in one ``Step``). Construction
calls ``Describe`` within the connect timeout: an address that does not answer is
:class:`~lastv2x.core.errors.Unavailable`, a contract version other than ours
:class:`~lastv2x.core.errors.FailedPrecondition`, both naming the app. During a run every
``Step`` has its own deadline; a missed deadline or a failed call raises here and paired
execution turns it into the rollout's application error. Decisions are converted back with
:func:`decision_from_proto`, which answers an :class:`AppFault` for anything outside the
contract (an unknown action number, the app's own ``error`` text).

The conversions (``*_to_proto`` / ``*_from_proto``) are exact: doubles carry the simulator's
floats bit for bit, so an app that computes what a reference app computes gives the same
outcome bytes through the wire (``lastv2x_app.example_app`` serves the reference apps so).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import grpc
import numpy as np

from lastv2x.core.catalogue import Application
from lastv2x.core.errors import FailedPrecondition, Unavailable
from lastv2x.rpc.security import ClientSecurity, open_channel
from lastv2x.v1 import application_pb2 as pb
from lastv2x.v1 import application_pb2_grpc as pb_grpc
from lastv2x.v1 import common_pb2
from services.simulator.apps.base import Action, AppContext, Decision, EgoState
from services.simulator.apps.contract import (
    CONTRACT_VERSION,
    INPUT_BELIEF,
    INPUT_RAW,
    AppBuild,
    AppFault,
    RawMessage,
    StepRow,
    bounded_text,
)
from services.simulator.info import BelievedSignal, EEBLEvent, EgoInformation, Track

_PHASE_TO = {-1: common_pb2.PHASE_UNSPECIFIED, 0: common_pb2.PHASE_GREEN, 1: common_pb2.PHASE_AMBER,
             2: common_pb2.PHASE_RED}
_PHASE_FROM = {v: k for k, v in _PHASE_TO.items()}
_ACTION_TO = {Action.PROCEED: pb.APP_ACTION_PROCEED, Action.STOP: pb.APP_ACTION_STOP, Action.BRAKE: pb.APP_ACTION_BRAKE,
              Action.YIELD: pb.APP_ACTION_YIELD, Action.ADVISE: pb.APP_ACTION_ADVISE, Action.WARN: pb.APP_ACTION_WARN}
_ACTION_FROM = {v: k for k, v in _ACTION_TO.items()}
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # a Step of a large batch (256 programs x 2 rows x 50 tracks) fits


def application_to_proto(app: Application) -> int:
    return common_pb2.Application.Value(f"APPLICATION_{app.value}")


def application_from_proto(value: int) -> Application:
    return Application(common_pb2.Application.Name(value).removeprefix("APPLICATION_"))


def context_to_proto(ctx: AppContext) -> pb.EgoContext:
    msg = pb.EgoContext(application=application_to_proto(ctx.application), desired_speed_mps=ctx.desired_speed_mps,
                        ego_length_m=ctx.ego_length_m, amber_s=dict(ctx.amber_s))
    msg.route.extend(pb.Point2(x_m=float(x), y_m=float(y)) for x, y in ctx.route_points.tolist())
    if ctx.conflict_xy_m is not None:
        msg.conflict_point.x_m, msg.conflict_point.y_m = ctx.conflict_xy_m
    return msg


def context_from_proto(msg: pb.EgoContext) -> AppContext:
    route = np.array([(p.x_m, p.y_m) for p in msg.route], dtype=np.float64).reshape(-1, 2)
    conflict = (msg.conflict_point.x_m, msg.conflict_point.y_m) if msg.HasField("conflict_point") else None
    return AppContext(application=application_from_proto(msg.application), route_points=route,
                      conflict_xy_m=conflict, amber_s=dict(msg.amber_s), desired_speed_mps=msg.desired_speed_mps,
                      ego_length_m=msg.ego_length_m)


def ego_to_proto(ego: EgoState, out: pb.EgoState) -> None:
    out.t_s, out.s_m, out.speed_mps, out.accel_mps2, out.heading_rad = (ego.t_s, ego.s_m, ego.speed_mps,
                                                                          ego.accel_mps2, ego.heading_rad)
    out.position.x_m, out.position.y_m = ego.xy_m
    if not math.isinf(ego.stop_bar_distance_m):
        out.stop_bar_distance_m = ego.stop_bar_distance_m
    if ego.conflict_distance_m is not None:
        out.conflict_distance_m = ego.conflict_distance_m


def ego_from_proto(msg: pb.EgoState) -> EgoState:
    return EgoState(msg.t_s, msg.s_m, msg.speed_mps, msg.accel_mps2, (msg.position.x_m, msg.position.y_m),
                    msg.heading_rad, msg.stop_bar_distance_m if msg.HasField("stop_bar_distance_m") else math.inf,
                    msg.conflict_distance_m if msg.HasField("conflict_distance_m") else None)


def belief_to_proto(info: EgoInformation, out: pb.Belief) -> None:
    for gid, s in info.signals.items():
        m = out.signals.add(group_id=gid, phase=_PHASE_TO.get(s.phase, common_pb2.PHASE_UNSPECIFIED),
                            time_to_change_s=s.time_to_change_s, aoi_s=s.aoi_s, valid=s.valid)
        if s.time_to_green_s is not None:
            m.time_to_green_s = s.time_to_green_s
    out.ego_group_id = info.ego_group_id or ""
    out.map_aoi_s = info.map_aoi_s
    for vid, t in info.tracks.items():
        out.tracks.add(vehicle_id=vid, position=pb.Point2(x_m=t.xy_m[0], y_m=t.xy_m[1]), speed_mps=t.speed_mps,
                       heading_rad=t.heading_rad, accel_mps2=t.accel_mps2, aoi_s=t.aoi_s,
                       hard_brake_event=t.hard_brake_event, relayed=t.relayed, valid=t.valid)
    for e in info.eebl_events:
        out.braking_events.add(origin_id=e.origin_id, position=pb.Point2(x_m=e.xy_m[0], y_m=e.xy_m[1]),
                               decel_mps2=e.decel_mps2, aoi_s=e.aoi_s, relayed=e.relayed, hops=e.hops, valid=e.valid)


def belief_from_proto(msg: pb.Belief, t_s: float) -> EgoInformation:
    signals = {s.group_id: BelievedSignal(_PHASE_FROM.get(s.phase, -1), s.time_to_change_s, s.aoi_s, s.valid,
                                          s.time_to_green_s if s.HasField("time_to_green_s") else None)
               for s in msg.signals}
    tracks = {t.vehicle_id: Track(t.vehicle_id, (t.position.x_m, t.position.y_m), t.speed_mps, t.heading_rad,
                                  t.accel_mps2, t.aoi_s, t.hard_brake_event, t.relayed, t.valid) for t in msg.tracks}
    events = tuple(EEBLEvent(e.origin_id, (e.position.x_m, e.position.y_m), e.decel_mps2, e.aoi_s, e.relayed,
                             e.hops, e.valid) for e in msg.braking_events)
    return EgoInformation(t_s, signals, msg.ego_group_id or None, tracks, events, msg.map_aoi_s)


def decision_to_proto(dec: Decision, session_id: str, out: pb.AppDecision) -> None:
    out.session_id, out.action, out.reason = session_id, _ACTION_TO[dec.action], dec.reason
    out.brake_mps2, out.epoch, out.after_epoch, out.committed = dec.brake_mps2, dec.epoch, dec.after_epoch, dec.committed
    out.info_invalid = not dec.info_valid
    if dec.target_speed_mps is not None:
        out.target_speed_mps = dec.target_speed_mps
    if dec.aoi_s is not None:
        out.aoi_s = dec.aoi_s


def decision_from_proto(msg: pb.AppDecision, app: Application, t_s: float) -> Decision | AppFault:
    """The app's answer for one row; its ``error`` or an unknown action is an :class:`AppFault`
    (the remaining contract checks are ``contract.decision_problem``'s, as for in-process apps)."""
    if msg.error:
        return AppFault(f"the app reported: {bounded_text(msg.error)}")
    action = _ACTION_FROM.get(msg.action)
    if action is None:
        return AppFault(f"decision outside the contract: unknown action {msg.action}")
    return Decision(app, action, t_s, bounded_text(msg.reason),
                    target_speed_mps=msg.target_speed_mps if msg.HasField("target_speed_mps") else None,
                    brake_mps2=msg.brake_mps2, epoch=msg.epoch, after_epoch=msg.after_epoch, committed=msg.committed,
                    aoi_s=msg.aoi_s if msg.HasField("aoi_s") else None, info_valid=not msg.info_invalid)


def messages_from_proto(msgs: Sequence[pb.RawMessage]) -> tuple[RawMessage, ...]:
    return tuple(RawMessage(m.kind, m.encoding, m.payload, m.rx_s, m.sender_id, m.hops) for m in msgs)


def input_mode_from_proto(value: int) -> str:
    return INPUT_RAW if value == pb.INPUT_MODE_RAW else INPUT_BELIEF


def step_request(k: int, t_s: float, rows: Sequence[StepRow], raw: bool = False) -> pb.StepRequest:
    """One Step; ``raw``: each row carries its messages and an empty belief (raw-message mode)."""
    req = pb.StepRequest(step=k, t_s=t_s)
    for r in rows:
        m = req.rows.add(session_id=r.session_id)
        ego_to_proto(r.ego, m.ego)
        if raw:
            for msg in r.messages:
                m.messages.add(kind=msg.kind, encoding=msg.encoding, payload=msg.payload, rx_s=msg.rx_s,
                               sender_id=msg.sender_id, hops=msg.hops)
        else:
            belief_to_proto(r.info, m.belief)
    return req


def _code(exc: grpc.RpcError) -> str:
    code = exc.code() if hasattr(exc, "code") else None
    return code.name if code is not None else "UNKNOWN"


class RemoteApp:
    """The contract over gRPC (see the module docstring). Thread-safe: sessions are per run."""

    def __init__(self, target: str, *, step_timeout_s: float = 1.0, connect_timeout_s: float = 5.0,
                 channel: grpc.Channel | None = None, security: ClientSecurity | None = None):
        self.target = target  # "grpc://host:port" (plaintext, no token) or "grpcs://host:port" (TLS)
        self.step_timeout_s, self.connect_timeout_s = step_timeout_s, connect_timeout_s
        address = "dns:///" + target.split("://", 1)[-1]  # a host and port, never a unix: / vsock: target
        options = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
        if channel is None and target.startswith("grpcs://"):
            # the app's own credentials (services.simulator.apps.access), never the platform's token or identity
            channel = open_channel(address, options, ClientSecurity(**{**(security or ClientSecurity()).__dict__,
                                                                       "tls": True}))
        self._channel = channel or grpc.insecure_channel(address, options=options)
        self._stub = pb_grpc.ApplicationUnderTestServiceStub(self._channel)
        self._apps: dict[str, Application] = {}
        self._lock = threading.Lock()
        try:
            reply = self._stub.Describe(pb.DescribeRequest(), timeout=connect_timeout_s, wait_for_ready=True)
        except grpc.RpcError as exc:
            raise Unavailable(f"application under test {target} does not answer Describe within "
                              f"{connect_timeout_s:g} s ({_code(exc)}); is it running?") from None
        b = reply.build
        self._build = AppBuild(bounded_text(b.name or target), bounded_text(b.version), bounded_text(b.digest), target)
        self.applications = frozenset(application_from_proto(a) for a in reply.applications)
        self.input_mode = input_mode_from_proto(reply.input_mode)  # raw-message mode when it asks
        if reply.contract_version != CONTRACT_VERSION:
            raise FailedPrecondition(f"application under test {self._build.label()} speaks contract version "
                                     f"{reply.contract_version!r}, the platform {CONTRACT_VERSION!r}",
                                     "rebuild the app against lastv2x/v1/application.proto")

    @property
    def build(self) -> AppBuild:
        return self._build

    def open(self, sessions: Sequence[tuple[str, AppContext]]) -> None:
        wrong = sorted({c.application.value for _, c in sessions if self.applications
                        and c.application not in self.applications})
        if wrong:
            raise FailedPrecondition(f"{self._build.label()} does not implement {', '.join(wrong)}",
                                     f"it implements {', '.join(sorted(a.value for a in self.applications))}")
        req = pb.OpenRequest()
        for sid, ctx in sessions:
            req.sessions.add(session_id=sid, context=context_to_proto(ctx))
        with self._lock:
            self._apps.update((sid, ctx.application) for sid, ctx in sessions)
        self._call(self._stub.Open, req, self.connect_timeout_s, "Open")

    def step(self, k: int, t_s: float, rows: Sequence[StepRow]) -> list[Decision | AppFault]:
        reply = self._call(self._stub.Step, step_request(k, t_s, rows, self.input_mode == INPUT_RAW),
                           self.step_timeout_s, "Step")
        if len(reply.decisions) != len(rows):
            return [AppFault(f"Step answered {len(reply.decisions)} decisions for {len(rows)} rows")] * len(rows)
        apps = self._apps
        return [decision_from_proto(d, apps[r.session_id], t_s) if d.session_id in ("", r.session_id)
                else AppFault(f"decision for session {bounded_text(d.session_id, 64)!r} in the place of "
                              f"{r.session_id!r}")
                for d, r in zip(reply.decisions, rows, strict=True)]

    def close(self, session_ids: Sequence[str]) -> None:
        with self._lock:
            for sid in session_ids:
                self._apps.pop(sid, None)
        self._call(self._stub.Close, pb.CloseRequest(session_ids=list(session_ids)), self.connect_timeout_s, "Close")

    def _call(self, method: Any, request: Any, timeout_s: float, name: str) -> Any:
        try:
            return method(request, timeout=timeout_s)
        except grpc.RpcError as exc:
            code = _code(exc)
            if code == "DEADLINE_EXCEEDED":
                raise TimeoutError(f"{name} did not answer within {timeout_s:g} s (DEADLINE_EXCEEDED)") from None
            details = exc.details() if hasattr(exc, "details") else str(exc)
            raise RuntimeError(f"{name} failed: {code}: {details}") from None

    def shutdown(self) -> None:
        self._channel.close()


__all__ = ["RemoteApp", "application_from_proto", "application_to_proto", "belief_from_proto", "belief_to_proto",
           "context_from_proto", "context_to_proto", "decision_from_proto", "decision_to_proto", "ego_from_proto",
           "ego_to_proto", "input_mode_from_proto", "messages_from_proto", "step_request"]
