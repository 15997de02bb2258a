"""``lastv2x execute --live``: a foxglove-sdk WebSocket server on loopback streams the run; a
WebSocket client speaking the Foxglove protocol subscribes and receives scene updates that decode
with the schema the server advertised, and the run's JSON channels."""

from __future__ import annotations

import base64
import json
import queue
import struct
import threading

import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.errors import FailedPrecondition
from services.simulator.execute import SimulatorLimits, app_under_test
from services.simulator.reference import reference_program

live = pytest.importorskip("lastv2x_app.viz.live")
pytest.importorskip("foxglove", reason="foxglove-sdk is not installed (viz extra)")
ws_client = pytest.importorskip("websockets.sync.client", reason="websockets is not installed (dev extra)")


def _decoder(schema_b64: str, name: str):
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(schema_b64))
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def test_a_websocket_client_on_loopback_receives_the_run() -> None:
    program = reference_program(Application.RLVW)
    limits = SimulatorLimits()
    ports: queue.Queue[int] = queue.Queue()
    result: dict = {}

    def run() -> None:
        result["out"] = live.run_live(program, None, limits, app_under_test(None, limits), port=0, rate=0.0,
                                      wait_for_client_s=30.0, linger_s=1.0, on_ready=ports.put)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    port = ports.get(timeout=60)
    scenes, decisions = [], []
    with ws_client.connect(f"ws://127.0.0.1:{port}", subprotocols=["foxglove.sdk.v1", "foxglove.websocket.v1"],
                           open_timeout=10, max_size=None) as ws:
        channels = {}
        while "/viz/scene" not in channels or "/app/decision" not in channels:
            msg = json.loads(ws.recv(timeout=10))
            if msg["op"] == "advertise":
                channels.update({c["topic"]: c for c in msg["channels"]})
        scene_ch = channels["/viz/scene"]
        assert scene_ch["encoding"] == "protobuf" and scene_ch["schemaName"] == "foxglove.SceneUpdate"
        assert channels["/app/decision"]["encoding"] == "json"
        cls = _decoder(scene_ch["schema"], scene_ch["schemaName"])
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": 1, "channelId": scene_ch["id"]}, {"id": 2, "channelId": channels["/app/decision"]["id"]}]}))
        while True:
            try:
                frame = ws.recv(timeout=10)
            except TimeoutError:
                break
            if isinstance(frame, str):
                continue
            assert frame[0] == 0x01  # MessageData: opcode, subscription id, log time, payload
            sub, log_ns = struct.unpack_from("<IQ", frame, 1)
            payload = frame[13:]
            if sub == 1:
                scenes.append((log_ns, cls.FromString(payload)))
            else:
                decisions.append(json.loads(payload))
            if len(scenes) >= 590:  # the whole 30 s run (one update per 0.05 s step)
                break
    t.join(timeout=120)
    outcome, sent, bound = result["out"]
    assert bound == port and sent > len(scenes)
    assert len(scenes) >= 500, len(scenes)
    times = [ns for ns, _ in scenes]
    assert times == sorted(times) and times[0] == 0
    ids = {e.id for _, s in scenes for e in s.entities}
    assert {"ego/md", "ego/gt", "links", "faults"} <= ids and any(i.startswith("signal/") for i in ids)
    assert {d["rollout"] for d in decisions} == {"md", "gt"}
    assert outcome.md.decisions  # the run itself completed


def test_live_refuses_what_it_cannot_do(tmp_path, capsys) -> None:
    from lastv2x_app.cli import main

    spec = tmp_path / "p.json"
    spec.write_text(reference_program(Application.RLVW).model_dump_json())
    assert main(["execute", str(spec), "--live", "--trace"]) == 2
    assert "--live" in capsys.readouterr().out
    assert main(["execute", str(spec), "--live", "--live-rate", "-1"]) == 2
    assert "--live-rate" in capsys.readouterr().out
    with live.LiveServer(port=0) as first:  # a port already taken: a clear error, not a crash
        with pytest.raises(FailedPrecondition, match="cannot start the live view"):
            live.LiveServer(port=first.port).__enter__()
