"""/viz/scene: a served trace carries Foxglove SceneUpdate messages that decode with the schema
published in the file (a FileDescriptorSet, read back through a fresh descriptor pool, not the
installed classes) and that show what the JSON channels say: both egos where they were, signal
heads in their true and believed phases, links, fault windows."""

from __future__ import annotations

import json
import math

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from mcap.reader import make_reader

from lastv2x.core.catalogue import Application
from services.simulator.execute import SimulatorLimits, run_one
from services.simulator.reference import reference_program
from services.simulator.scene import PHASE_RGBA, TOPIC, SceneChannel, available, replay_into
from services.simulator.trace import CHANNELS, TraceWriter
from tests.simulator.doubles import FrozenSignalSource

pytestmark = pytest.mark.skipif(not available(), reason="foxglove-schemas-protobuf is not installed (viz extra)")


def _decode_trace(path):
    """(scene updates as decoded messages with their times, JSON messages per topic, schema record)."""
    with open(path, "rb") as fh:
        reader = make_reader(fh)
        summary = reader.get_summary()
        chans = {c.topic: c for c in summary.channels.values()}
        schema = summary.schemas[chans[TOPIC].schema_id]
        fds = descriptor_pb2.FileDescriptorSet.FromString(schema.data)
        pool = descriptor_pool.DescriptorPool()
        for f in fds.file:
            pool.Add(f)
        cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(schema.name))
        scenes, js = [], {}
        for _s, ch, m in reader.iter_messages():
            if ch.topic == TOPIC:
                scenes.append((m.log_time / 1e9, cls.FromString(m.data)))
            else:
                js.setdefault(ch.topic, []).append((m.log_time / 1e9, json.loads(m.data)))
    return scenes, js, chans[TOPIC], schema


def _rgba(c):
    return (round(c.r, 3), round(c.g, 3), round(c.b, 3), round(c.a, 3))


def test_a_served_trace_has_scene_updates_that_decode_with_the_published_schema(tmp_path):
    from foxglove_schemas_protobuf.SceneUpdate_pb2 import SceneUpdate

    prog = reference_program(Application.RLVW)
    _outcome, uri = run_one(prog, 3, SimulatorLimits(trace_dir=tmp_path), write_trace=True)
    scenes, js, channel, schema = _decode_trace(uri.removeprefix("file://"))
    assert channel.message_encoding == "protobuf" and schema.encoding == "protobuf"
    assert schema.name == "foxglove.SceneUpdate" == SceneUpdate.DESCRIPTOR.full_name
    assert set(js) <= set(CHANNELS) | {"/v2x/belief", "/v2x/fault_window"}  # the JSON channels are as before
    # one update per simulation step, in time order
    times = [t for t, _ in scenes]
    assert times == sorted(times) and len(times) >= len(js["/gt/vehicles"])
    steps = {round(t, 3) for t, _ in js["/app/input"]}
    assert {round(t, 3) for t in times} == steps
    # the published schema is Foxglove's: the same fields as the package's SceneUpdate
    assert [f.name for f in scenes[0][1].DESCRIPTOR.fields] == [f.name for f in SceneUpdate.DESCRIPTOR.fields]
    by_t = {round(t, 3): s for t, s in scenes}
    gt_inputs = {round(t, 3): m for t, m in js["/app/input"] if m["rollout"] == "gt"}
    for t, msg in js["/gt/vehicles"]:
        scene = by_t[round(t, 3)]
        ents = {e.id: e for e in scene.entities}
        ego = next(v for v in msg["vehicles"] if v["id"] == prog.ego.id)
        cube = ents["ego/md"].cubes[0]
        assert (cube.pose.position.x, cube.pose.position.y) == pytest.approx((ego["x"], ego["y"]))
        assert abs(2 * math.atan2(cube.pose.orientation.z, cube.pose.orientation.w)
                   - ego["heading_rad"]) % (2 * math.pi) == pytest.approx(0, abs=1e-6)
        gt = gt_inputs[round(t, 3)]
        gcube = ents["ego/gt"].cubes[0]
        assert (gcube.pose.position.x, gcube.pose.position.y) == pytest.approx((gt["x"], gt["y"]))
        assert all(e.frame_id == "map" for e in scene.entities)
        assert sum(1 for k in ents if k.startswith("vehicle/")) == len(msg["vehicles"]) - 1
    # signal heads: the box is the true phase, the sphere the MD ego's belief
    truth = {round(t, 3): {g["id"]: g["phase"] for g in m["groups"]} for t, m in js["/signals/true"]}
    belief = {round(t, 3): m["signals"] for t, m in js["/recon/ego"] if m["rollout"] == "md"}
    group = prog.ego.route.crossings[0].signal_group_id
    seen_phases = set()
    for t, phases in truth.items():
        head = next(e for e in by_t[t].entities if e.id == f"signal/{group}")
        assert _rgba(head.cubes[0].color) == tuple(round(v, 3) for v in PHASE_RGBA[phases[group]])
        b = (belief.get(t) or {}).get(group)
        if b is not None:
            assert _rgba(head.spheres[0].color) == tuple(round(v, 3) for v in PHASE_RGBA[b["phase"]])
        seen_phases.add(phases[group])
    assert seen_phases == {0, 1, 2}
    # links: a delivered line for each step in which the ego received something
    rx_steps = {round(t, 3) for t, m in js["/v2x/rx"] if m["messages"]}
    with_green = {t for t, s in by_t.items()
                  if any(_rgba(ln.color) == (0.1, 0.75, 0.2, 0.9) for e in s.entities for ln in e.lines)}
    assert rx_steps and rx_steps <= with_green | {max(by_t)}


def test_fault_windows_show_as_text_only_while_active():
    prog = reference_program(Application.RLVW)
    chan = SceneChannel(prog)
    msgs = [("/v2x/fault_window", 0.0, {"name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
                                        "start_s": 1.0, "end_s": 2.0})]
    for k in range(60):
        t = k * 0.05
        msgs.append(("/gt/vehicles", t, {"vehicles": [{"id": prog.ego.id, "x": 10.0 * t, "y": 0.0, "heading_rad": 0.0,
                                                       "speed_mps": 10.0, "alive": True, "equipped": True}]}))
    from foxglove_schemas_protobuf.SceneUpdate_pb2 import SceneUpdate

    out = [(t, SceneUpdate.FromString(b)) for _topic, t, b in replay_into(chan, msgs)]
    assert len(out) == 60
    for t, s in out:
        texts = [x.text for e in s.entities if e.id == "faults" for x in e.texts]
        assert bool(texts) == (1.0 <= t < 2.0 - 1e-9), t
        if texts:
            assert "freeze on SPAT" in texts[0]


def test_a_writer_without_derived_channels_is_unchanged(tmp_path):
    path = tmp_path / "plain.mcap"
    with TraceWriter(path) as tw:
        from services.simulator.paired import execute_paired

        execute_paired(reference_program(Application.RLVW), md_source_factory=lambda: FrozenSignalSource(4.5),
                       trace=tw)
    with open(path, "rb") as fh:
        topics = {c.topic for c in make_reader(fh).get_summary().channels.values()}
    assert TOPIC not in topics and topics <= set(CHANNELS) | {"/v2x/belief", "/v2x/fault_window"}
