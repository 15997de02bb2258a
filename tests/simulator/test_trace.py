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
