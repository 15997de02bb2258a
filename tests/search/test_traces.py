"""Issue 41: campaigns run by the search service over gRPC archive their witnesses' traces themselves,
content-addressed in the archive; replies name them by archive-relative id, never a server path; the
report works on such a campaign."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import grpc

from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import search_pb2, search_pb2_grpc
from services.grounding.core import GroundingConfig
from services.grounding.servicer import register as register_grounding
from services.search.core import SearchCore, validate_request
from services.search.remote import GrpcPipeline
from services.search.servicer import register as register_search
from services.search.settings import SearchSettings
from services.simulator.servicer import register as register_simulator
from tests.search.conftest import rlvw_failing_spec


def _dead() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_a_remote_campaign_archives_content_addressed_traces_and_replies_name_no_server_path(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LASTV2X_SIMULATOR_TRACE_DIR", str(tmp_path / "simulator-own-folder"))
    g, gport = create_server(ServerConfig("grounding", log_json=False),
                             lambda s: register_grounding(s, GroundingConfig(cache_dir=tmp_path / "cat")))
    sim, sport = create_server(ServerConfig("simulator", log_json=False), lambda s: register_simulator(s))
    g.start()
    sim.start()
    data = tmp_path / "archive"
    core = SearchCore(GrpcPipeline(_dead(), f"127.0.0.1:{gport}", f"127.0.0.1:{sport}", timeout_s=30),
                      SearchSettings(data_dir=data))
    search, port = create_server(ServerConfig("search", log_json=False), lambda s: register_search(s, core=core))
    search.start()
    try:
        req = validate_request(settings=core.settings, specs=[rlvw_failing_spec(0)], seed=3, budget_per_scenario=2,
                               reflection_rounds=0)
        view = core.wait(core.start(req).id, timeout_s=300)
        assert view.state == "done", view.reason
        (w,) = core.witnesses(view.id)
        trace = Path(w.trace_path)
        assert trace.is_file() and trace.parent == data / "traces"
        assert trace.name == hashlib.sha256(trace.read_bytes()).hexdigest() + ".mcap"  # content-addressed
        stored = core.store.dialect.rows("SELECT trace_path FROM witnesses")[0][0]  # type: ignore[attr-defined]
        assert stored == f"traces/{trace.name}"  # archive-relative in the database
        stub = search_pb2_grpc.SearchServiceStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        reply = stub.GetWitness(search_pb2.GetWitnessRequest(witness_id=w.id), timeout=30).witness
        assert reply.trace_uri == f"traces/{trace.name}" and reply.outcome.trace_uri == reply.trace_uri
        assert str(tmp_path) not in str(reply)  # no server path anywhere in the reply

        from lastv2x_app.report import write_report

        result = write_report(core, view.id, tmp_path / "report", archive=str(data))
        assert result.to_dict()
        report_text = "".join(p.read_text(errors="replace") for p in (tmp_path / "report").rglob("*.json"))
        assert f'"trace_path": "traces/{trace.name}"' in report_text  # the report's JSON names no server path
    finally:
        search.stop(0)
        core.close()
        sim.stop(0)
        g.stop(0)
