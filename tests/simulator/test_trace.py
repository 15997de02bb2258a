"""MCAP traces: every channel has a JSON Schema, messages decode, log times are scenario time."""

from __future__ import annotations

import json

from mcap.reader import make_reader

from lastv2x.core.catalogue import Application
from services.simulator.paired import execute_paired
from services.simulator.reference import reference_program
from services.simulator.trace import CHANNELS, TraceWriter
from tests.simulator.doubles import FrozenSignalSource


def test_paired_trace_is_a_readable_mcap(tmp_path):
    path = tmp_path / "rlvw.mcap"
    with TraceWriter(path, metadata={"application": "RLVW"}) as tw:
        out = execute_paired(reference_program(Application.RLVW), md_source_factory=lambda: FrozenSignalSource(4.5),
                             trace=tw)
        tw.publish("/monitor/events", 9.0, {"kind": "signal_phase", "t_s": 9.0})
    assert out.admitted
    with open(path, "rb") as fh:
        reader = make_reader(fh)
        summary = reader.get_summary()
        topics = {c.topic for c in summary.channels.values()}
        assert {"/gt/vehicles", "/signals/true", "/recon/ego", "/app/decision", "/ctrl/ego",
                "/monitor/events"} <= topics <= set(CHANNELS)
        for schema in summary.schemas.values():
            assert schema.encoding == "jsonschema" and json.loads(schema.data)["type"] == "object"
        decisions = []
        last = {}
        for _schema, channel, msg in reader.iter_messages():
            body = json.loads(msg.data)
            assert channel.message_encoding == "json"
            assert msg.log_time >= last.get(channel.topic, 0)
            last[channel.topic] = msg.log_time
            if channel.topic == "/app/decision":
                decisions.append((body["rollout"], body["action"], msg.log_time / 1e9))
    assert ("md", "proceed", 5.65) in [(r, a, round(t, 2)) for r, a, t in decisions]
    assert ("gt", "stop", 5.65) in [(r, a, round(t, 2)) for r, a, t in decisions]


def test_served_trace_carries_program_seed_messages_and_both_egos_inputs(tmp_path):
    """What STRaP asked for (services/strap/TRACE_REQUESTS.md): program + seed as metadata, the V2X
    stack's sent and received messages, each rollout's application input, /monitor/events declared."""
    from lastv2x.core.program import ScenarioProgram
    from services.simulator.execute import SimulatorLimits, run_one

    prog = reference_program(Application.EEBL)
    _outcome, uri = run_one(prog, 3, SimulatorLimits(trace_dir=tmp_path), write_trace=True)
    path = uri.removeprefix("file://")
    with open(path, "rb") as f:
        reader = make_reader(f)
        meta = {m.name: m.metadata for m in reader.iter_metadata()}["lastv2x"]
        summary = reader.get_summary()
        topics = {c.topic for c in summary.channels.values()}
        msgs: dict[str, list] = {}
        for _s, ch, m in reader.iter_messages():
            if ch.message_encoding == "json":  # /viz/scene is protobuf (tests/simulator/test_scene.py)
                msgs.setdefault(ch.topic, []).append(json.loads(m.data))
    assert ScenarioProgram.model_validate_json(meta["program"]) == prog and meta["seed"] == "3"
    assert {"/v2x/tx", "/v2x/rx", "/app/input", "/monitor/events"} <= topics
    assert {m["rollout"] for m in msgs["/app/input"]} == {"md", "gt"}
    sent = {(r["stream"], r["sender"], r["msg_id"]) for m in msgs["/v2x/tx"] for r in m["messages"]}
    got = {(r["stream"], r["sender"], r["msg_id"]) for m in msgs["/v2x/rx"] for r in m["messages"]}
    assert got and got <= sent and "BSM" in {s for s, _, _ in got}
    truth = msgs["/signals/true"][0]
    assert "ego_group_id" in truth and all("time_to_green_s" in g for g in truth["groups"])
