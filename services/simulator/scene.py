"""``/viz/scene``: the trace as Foxglove's well-known ``foxglove.SceneUpdate`` (protobuf), so both
egos' runs render in Foxglove's 3D panel (the JSON channels only show as raw messages).

A :class:`SceneChannel` is a derived channel of :class:`services.simulator.trace.TraceWriter`
(and of the live view): it observes the trace's own messages as they are published and emits
one ``SceneUpdate`` per simulation step, stamped with that step's time, once the next step
begins (or at the end). Per step, frame ``map`` (the map's x east, y north, metres):

- ``vehicle/<id>``: each vehicle of the message-driven rollout's world as a box, V2X-equipped
  blue, unequipped grey; ``ego/md`` orange (the message-driven ego), ``ego/gt`` teal,
  translucent (its ground-truth twin, from its own rollout);
- ``signal/<group>``: a head at each stop bar of the group that a vehicle's route crosses: the
  box is the group's true phase, the sphere above it the phase the message-driven ego believes
  (grey: no belief);
- ``rsu/<id>``: each RSU as a mast (cylinder) with its id;
- ``links``: this step's V2X links to the message-driven ego as lines from the sender: green
  delivered (received this step), red lost (dropped by a fault, or not received within
  ``LOST_AFTER_S`` of being sent);
- ``faults``: the fault windows active now as text above the message-driven ego.

Entities live ``ENTITY_LIFETIME_STEPS`` steps, so a vehicle that is gone disappears. Needs the
``foxglove-schemas-protobuf`` package (the ``viz`` extra); :func:`scene_channels` returns no
channel without it, and the trace keeps its other channels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from lastv2x.core.program import ScenarioProgram

TOPIC = "/viz/scene"
FRAME = "map"
SCHEMA_NAME = "foxglove.SceneUpdate"
LOST_AFTER_S = 1.0  # a message not received this long after it was sent counts as lost
ENTITY_LIFETIME_STEPS = 3
VEHICLE_WIDTH_M, VEHICLE_HEIGHT_M = 1.9, 1.5
# RGBA, 0..1
EQUIPPED = (0.12, 0.47, 0.71, 1.0)
UNEQUIPPED = (0.6, 0.6, 0.6, 1.0)
EGO_MD = (0.89, 0.34, 0.18, 1.0)
EGO_GT = (0.09, 0.38, 0.49, 0.55)
PHASE_RGBA = {0: (0.18, 0.62, 0.27, 1.0), 1: (0.95, 0.72, 0.02, 1.0), 2: (0.84, 0.16, 0.16, 1.0)}
NO_BELIEF = (0.5, 0.5, 0.5, 0.6)
DELIVERED = (0.1, 0.75, 0.2, 0.9)
LOST = (0.9, 0.1, 0.1, 0.9)
RSU_RGBA = (0.2, 0.2, 0.2, 1.0)


def available() -> bool:
    try:
        import foxglove_schemas_protobuf.SceneUpdate_pb2  # noqa: F401
    except ImportError:
        return False
    return True


def file_descriptor_set() -> bytes:
    """The schema as published in the channel: a FileDescriptorSet of SceneUpdate and everything it imports."""
    from foxglove_schemas_protobuf.SceneUpdate_pb2 import SceneUpdate
    from google.protobuf.descriptor_pb2 import FileDescriptorSet

    fds = FileDescriptorSet()
    seen: set[str] = set()

    def add(fd: Any) -> None:
        if fd.name in seen:
            return
        seen.add(fd.name)
        for dep in fd.dependencies:
            add(dep)
        fd.CopyToProto(fds.file.add())

    add(SceneUpdate.DESCRIPTOR.file)
    return fds.SerializeToString()


class SceneChannel:
    """Derived channel: observes trace messages, emits ``(topic, t_s, protobuf bytes)`` per step."""

    topic = TOPIC

    def __init__(self, program: ScenarioProgram):
        from foxglove_schemas_protobuf.SceneUpdate_pb2 import SceneUpdate

        self._SceneUpdate = SceneUpdate
        self.program = program
        self.dt_s = program.dt_s
        self.ego_id = program.ego.id
        self.lengths = {v.id: v.length_m for v in [program.ego, *program.agents]}
        self.rsus = {r.id: (float(r.xy_m[0]), float(r.xy_m[1]), float(r.height_m)) for r in program.rsus}
        heads: dict[str, list[tuple[float, float]]] = {}
        for v in [program.ego, *program.agents]:
            for c in v.route.crossings:
                if c.signal_group_id and c.stop_bar_xy_m is not None:
                    xy = (float(c.stop_bar_xy_m[0]), float(c.stop_bar_xy_m[1]))
                    if xy not in heads.setdefault(c.signal_group_id, []):
                        heads[c.signal_group_id].append(xy)
        self.heads = heads
        self.t_s: float | None = None
        self.vehicles: dict[str, dict[str, Any]] = {}
        self.gt_ego: dict[str, Any] | None = None
        self.true_phase: dict[str, int] = {}
        self.believed: dict[str, int] = {}
        self.delivered: list[str] = []
        self.lost: list[str] = []
        self.pending: dict[tuple[str, str, int], float] = {}
        self.faults: list[dict[str, Any]] = []
        self.updates = 0

    def schema(self) -> tuple[str, str, bytes, str]:
        """(schema name, schema encoding, schema data, message encoding)."""
        return SCHEMA_NAME, "protobuf", file_descriptor_set(), "protobuf"

    # ── input ───────────────────────────────────────────────────────────────
    def observe(self, channel: str, t_s: float, message: Mapping[str, Any]) -> list[tuple[str, float, bytes]]:
        out: list[tuple[str, float, bytes]] = []
        if self.t_s is not None and t_s > self.t_s + 1e-9 and channel != "/monitor/events":
            out.append(self._emit())
        if channel != "/monitor/events":  # episodes are published at their start time, after the fact
            self.t_s = t_s if self.t_s is None else max(self.t_s, t_s)
        if channel == "/gt/vehicles":
            self.vehicles = {v["id"]: v for v in message.get("vehicles", []) if v.get("alive", True)}
        elif channel == "/app/input" and message.get("rollout") == "gt":
            self.gt_ego = dict(message)
        elif channel == "/signals/true":
            self.true_phase = {g["id"]: int(g["phase"]) for g in message.get("groups", [])}
        elif channel == "/recon/ego" and message.get("rollout") == "md":
            self.believed = {g: int(b["phase"]) for g, b in (message.get("signals") or {}).items()
                             if b and b.get("phase") is not None}
        elif channel == "/v2x/tx":
            for m in message.get("messages", []):
                if m.get("sender") == self.ego_id:
                    continue
                if m.get("kept", True):
                    self.pending[(m["stream"], m["sender"], int(m["msg_id"]))] = t_s
                else:
                    self.lost.append(m["sender"])
        elif channel == "/v2x/rx":
            for m in message.get("messages", []):
                self.pending.pop((m["stream"], m["sender"], int(m["msg_id"])), None)
                self.delivered.append(m["sender"])
        elif channel == "/v2x/fault_window":
            self.faults.append(dict(message))
        return out

    def flush(self) -> list[tuple[str, float, bytes]]:
        return [self._emit()] if self.t_s is not None else []

    # ── output ──────────────────────────────────────────────────────────────
    def _sender_xy(self, sender: str) -> tuple[float, float] | None:
        if sender in self.vehicles:
            return float(self.vehicles[sender]["x"]), float(self.vehicles[sender]["y"])
        if sender in self.rsus:
            return self.rsus[sender][0], self.rsus[sender][1]
        return None

    def _emit(self) -> tuple[str, float, bytes]:
        t = float(self.t_s or 0.0)
        for key, t_tx in list(self.pending.items()):
            if t - t_tx > LOST_AFTER_S:
                del self.pending[key]
                self.lost.append(key[1])
        upd = self._SceneUpdate()
        sec = int(math.floor(t))
        nanos = int(round((t - sec) * 1e9))
        life_ns = int(round(ENTITY_LIFETIME_STEPS * self.dt_s * 1e9))

        def entity(eid: str) -> Any:
            e = upd.entities.add()
            e.id, e.frame_id = eid, FRAME
            e.timestamp.seconds, e.timestamp.nanos = sec, nanos
            e.lifetime.seconds, e.lifetime.nanos = life_ns // 1_000_000_000, life_ns % 1_000_000_000
            return e

        def colour(msg: Any, rgba: tuple[float, float, float, float]) -> None:
            msg.r, msg.g, msg.b, msg.a = rgba

        def box(e: Any, x: float, y: float, z: float, yaw: float, size: tuple[float, float, float],
                rgba: tuple[float, float, float, float]) -> None:
            c = e.cubes.add()
            c.pose.position.x, c.pose.position.y, c.pose.position.z = x, y, z
            c.pose.orientation.z, c.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
            c.size.x, c.size.y, c.size.z = size
            colour(c.color, rgba)

        md_ego = self.vehicles.get(self.ego_id)
        for vid, v in self.vehicles.items():
            is_ego = vid == self.ego_id
            e = entity("ego/md" if is_ego else f"vehicle/{vid}")
            e.metadata.add(key="rollout", value="md")
            e.metadata.add(key="equipped", value=str(bool(v.get("equipped", True))).lower())
            e.metadata.add(key="speed_mps", value=f"{float(v.get('speed_mps', 0.0)):.2f}")
            rgba = EGO_MD if is_ego else EQUIPPED if v.get("equipped", True) else UNEQUIPPED
            box(e, float(v["x"]), float(v["y"]), VEHICLE_HEIGHT_M / 2, float(v.get("heading_rad", 0.0)),
                (self.lengths.get(vid, 4.5), VEHICLE_WIDTH_M, VEHICLE_HEIGHT_M), rgba)
        if self.gt_ego is not None:
            g = self.gt_ego
            e = entity("ego/gt")
            e.metadata.add(key="rollout", value="gt")
            box(e, float(g["x"]), float(g["y"]), VEHICLE_HEIGHT_M / 2 + 0.02, float(g.get("heading_rad", 0.0)),
                (self.lengths.get(self.ego_id, 4.5), VEHICLE_WIDTH_M, VEHICLE_HEIGHT_M), EGO_GT)
        for gid, spots in self.heads.items():
            true = self.true_phase.get(gid)
            if true is None:
                continue
            e = entity(f"signal/{gid}")
            e.metadata.add(key="true_phase", value=str(true))
            belief = self.believed.get(gid)
            e.metadata.add(key="believed_phase", value="none" if belief is None else str(belief))
            for x, y in spots:
                box(e, x, y, 1.5, 0.0, (0.8, 0.8, 3.0), PHASE_RGBA[true])
                s = e.spheres.add()
                s.pose.position.x, s.pose.position.y, s.pose.position.z = x, y, 3.6
                s.pose.orientation.w = 1.0
                s.size.x = s.size.y = s.size.z = 0.9
                colour(s.color, PHASE_RGBA.get(belief, NO_BELIEF) if belief is not None else NO_BELIEF)
        for rid, (x, y, h) in self.rsus.items():
            e = entity(f"rsu/{rid}")
            cyl = e.cylinders.add()
            cyl.pose.position.x, cyl.pose.position.y, cyl.pose.position.z = x, y, h / 2
            cyl.pose.orientation.w = 1.0
            cyl.size.x = cyl.size.y = 0.4
            cyl.size.z = h
            cyl.bottom_scale = cyl.top_scale = 1.0
            colour(cyl.color, RSU_RGBA)
            txt = e.texts.add()
            txt.pose.position.x, txt.pose.position.y, txt.pose.position.z = x, y, h + 1.0
            txt.pose.orientation.w = 1.0
            txt.billboard, txt.font_size, txt.scale_invariant, txt.text = True, 14.0, True, rid
            colour(txt.color, RSU_RGBA)
        e = entity("links")
        if md_ego is not None:
            ex, ey = float(md_ego["x"]), float(md_ego["y"])
            for senders, rgba in ((self.delivered, DELIVERED), (self.lost, LOST)):
                pts = [xy for xy in (self._sender_xy(s) for s in sorted(set(senders))) if xy is not None]
                if not pts:
                    continue
                line = e.lines.add()
                line.type = line.LINE_LIST
                line.pose.orientation.w = 1.0
                line.thickness, line.scale_invariant = 2.0, True
                colour(line.color, rgba)
                for x, y in pts:
                    for px, py in ((x, y), (ex, ey)):
                        p = line.points.add()
                        p.x, p.y, p.z = px, py, 2.0
        e = entity("faults")
        active = [f for f in self.faults if (f.get("start_s") or 0.0) <= t + 1e-9
                  and (f.get("end_s") is None or t < float(f["end_s"]) - 1e-9)]
        if active and md_ego is not None:
            txt = e.texts.add()
            txt.pose.position.x, txt.pose.position.y, txt.pose.position.z = float(md_ego["x"]), float(md_ego["y"]), 5.0
            txt.pose.orientation.w = 1.0
            txt.billboard, txt.font_size, txt.scale_invariant = True, 16.0, True
            txt.text = "\n".join(f"FAULT {f.get('operator')} on {f.get('stream')} ({f.get('name')}) "
                                 f"{float(f.get('start_s') or 0):.2f}-"
                                 f"{'end' if f.get('end_s') is None else format(float(f['end_s']), '.2f')} s"
                                 for f in active)
            colour(txt.color, (1.0, 0.55, 0.0, 1.0))
        self.delivered, self.lost = [], []
        self.updates += 1
        return TOPIC, t, upd.SerializeToString()


def scene_channels(program: ScenarioProgram) -> list[SceneChannel]:
    """The derived channels a trace of ``program`` gets: ``/viz/scene`` where the schema package is installed."""
    return [SceneChannel(program)] if available() else []


def replay_into(channel: SceneChannel, messages: Iterable[tuple[str, float, Mapping[str, Any]]]
                ) -> list[tuple[str, float, bytes]]:
    """Feed recorded ``(topic, t_s, message)`` in order; every scene update (tests, re-rendering a trace)."""
    out: list[tuple[str, float, bytes]] = []
    for topic, t, m in messages:
        out += channel.observe(topic, t, m)
    return out + channel.flush()


__all__ = ["SCHEMA_NAME", "TOPIC", "SceneChannel", "available", "file_descriptor_set", "replay_into", "scene_channels"]
