"""What StartCampaign admits (issue 41): an application that is unknown, not allowed or not answering is
refused at ``options.app`` before anything is stored or run; a campaign's total budget and a caller's
campaigns together are capped, the limit named; a campaign whose executions were all refused is FAILED."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import grpc
import pytest

from lastv2x.core.errors import InvalidArgument, ResourceExhausted
from lastv2x.rpc.errors import field_violations
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import search_pb2, search_pb2_grpc
from services.grounding.core import GroundingConfig
from services.grounding.servicer import register as register_grounding
from services.search.core import SearchCore, validate_request
from services.search.pipeline import Execution, ExecutionRequest, InProcessPipeline
from services.search.remote import GrpcPipeline
from services.search.servicer import register as register_search
from services.search.settings import SearchSettings
from services.simulator.servicer import register as register_simulator
from tests.search.conftest import rlvw_failing_spec


def _dead() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[search_pb2_grpc.SearchServiceStub, SearchCore]]:
    """grounding + simulator + search over loopback gRPC (the search service on a GrpcPipeline)."""
    servers = []
    cache = tmp_path_factory.mktemp("catalogue")
    g, gport = create_server(ServerConfig("grounding", log_json=False),
                             lambda s: register_grounding(s, GroundingConfig(cache_dir=cache)))
    sim, sport = create_server(ServerConfig("simulator", log_json=False), lambda s: register_simulator(s))
    for s in (g, sim):
        s.start()
        servers.append(s)
    core = SearchCore(GrpcPipeline(_dead(), f"127.0.0.1:{gport}", f"127.0.0.1:{sport}", timeout_s=20),
                      SearchSettings(data_dir=tmp_path_factory.mktemp("search")))
    search, port = create_server(ServerConfig("search", log_json=False), lambda s: register_search(s, core=core))
    search.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield search_pb2_grpc.SearchServiceStub(channel), core
    channel.close()
    search.stop(0)
    core.close()
    for s in servers:
        s.stop(0)


@pytest.mark.parametrize("app", ["nosuchapp", "file:///etc/passwd", "grpc://10.11.12.13:50070",
                                 "grpc://127.0.0.1:1"])
def test_start_campaign_refuses_an_application_it_cannot_use_before_running_anything(stack: Any, app: str) -> None:
    stub, core = stack
    before = len(core.list_campaigns())
    request = search_pb2.StartCampaignRequest(intents=["RLVW when the SPaT freezes before amber"], seed=1,
                                              budget_per_scenario=2, options=search_pb2.CampaignOptions(app=app))
    with pytest.raises(grpc.RpcError) as err:
        stub.StartCampaign(request, timeout=30)
    assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    fields = field_violations(err.value)
    assert fields and all(f == "options.app" for f, _ in fields), fields
    assert len(core.list_campaigns()) == before  # nothing stored, nothing run
    assert core.stats()["executions"] == 0


def test_the_reference_app_and_an_allowed_answering_server_are_admitted(stack: Any, served: Any) -> None:
    from lastv2x_app.example_app import MinimalRlvw

    _, core = stack
    core.check_app(served(MinimalRlvw()))  # loopback is on the default allow-list
    core.check_app("reference")


def test_a_campaign_of_too_many_executions_is_refused_naming_the_cap() -> None:
    settings = SearchSettings()
    with pytest.raises(InvalidArgument) as err:
        validate_request(settings=settings, intents=["FCW test"] * 64, budget_per_scenario=120)
    (v,) = err.value.violations
    assert v.field == "budget_per_scenario" and "7680" in v.description
    assert "LASTV2X_SEARCH_MAX_CAMPAIGN_CANDIDATES" in v.description and "4000" in v.description
    validate_request(settings=settings, intents=["FCW test"] * 33, budget_per_scenario=120)  # 3960: fits
    # a budget in executions may draw GATED_ALLOWANCE x its budget in candidates: that is what the cap weighs
    with pytest.raises(InvalidArgument) as err:
        validate_request(settings=settings, intents=["FCW test"] * 33, budget_per_scenario=120, budget_in_executions=True)
    (v,) = err.value.violations
    assert v.field == "budget_per_scenario" and "x 4 (budget_in_executions) = 15840" in v.description


class _Held:
    """An in-process pipeline whose executions wait for ``release`` (a campaign that stays running)."""

    def __init__(self, inner: InProcessPipeline, refuse: bool = False):
        self.inner, self.release, self.refuse = inner, threading.Event(), refuse
        self.replicas = inner.replicas

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def submit(self, request: ExecutionRequest) -> Future[Execution]:
        if self.refuse:
            f: Future[Execution] = Future()
            f.set_result(Execution("x", request.seed, False, 1e6, refused="program: refused by this simulator"))
            return f
        self.release.wait(60)
        return self.inner.submit(request)

    def submit_batch(self, requests: list[ExecutionRequest]) -> list[Future[Execution]]:
        return [self.submit(r) for r in requests]


def test_a_caller_s_running_campaigns_are_capped_naming_the_limit(tmp_path: Path) -> None:
    pipeline = _Held(InProcessPipeline(synthetic_grounding=True, trace_dir=tmp_path / "t"))
    core = SearchCore(pipeline, SearchSettings(data_dir=tmp_path / "s", max_caller_candidates=10))  # type: ignore[arg-type]
    try:
        req = validate_request(settings=core.settings, specs=[rlvw_failing_spec(0)], seed=1, budget_per_scenario=6,
                               reflection_rounds=0)
        first = core.start(req, caller="ipv4:10.0.0.1").id
        with pytest.raises(ResourceExhausted, match="LASTV2X_SEARCH_MAX_CALLER_CANDIDATES = 10"):
            core.start(req, caller="ipv4:10.0.0.1")
        other = core.start(req, caller="ipv4:10.0.0.2").id  # another caller has its own share
        pipeline.release.set()
        assert core.wait(first, 300).state == "done" and core.wait(other, 300).state == "done"
        core.wait(core.start(req, caller="ipv4:10.0.0.1").id, 300)  # its first one ended: room again
    finally:
        pipeline.release.set()
        core.close()


def test_a_campaign_whose_executions_were_all_refused_is_failed_not_done(tmp_path: Path) -> None:
    pipeline = _Held(InProcessPipeline(synthetic_grounding=True, trace_dir=tmp_path / "t"), refuse=True)
    core = SearchCore(pipeline, SearchSettings(data_dir=tmp_path / "s"))  # type: ignore[arg-type]
    try:
        req = validate_request(settings=core.settings, specs=[rlvw_failing_spec(0)], seed=1, budget_per_scenario=4,
                               reflection_rounds=0)
        view = core.wait(core.start(req).id, 300)
        assert view.state == "failed" and "refused all" in view.reason, view.reason
        assert view.summary["executions"] >= 1
    finally:
        core.close()


def test_a_campaign_passes_its_intents_as_written_for_the_parser_to_read_their_form() -> None:
    """A YAML block's indentation is its nesting, a keyword's cells are apart by runs of spaces: a campaign's intent
    reaches the parser as written (but for trailing white space and blank lines), and reads as the parser reads it."""
    from services.llm.roles import LlmRoles

    text = "app: EEBL\nrelay:\n  gap: 30m   \n\nlead:\n  gap: 70m\n    Set Ego Speed    kmh=80"
    req = validate_request(settings=SearchSettings(), intents=[text], budget_per_scenario=10)
    (intent,) = req.intents
    assert intent == "app: EEBL\nrelay:\n  gap: 30m\nlead:\n  gap: 70m\n    Set Ego Speed    kmh=80"
    spec = LlmRoles().parse_intent(intent, 1).spec
    assert ({a.role.value: a.gap_m for a in spec.agents}, spec.ego.speed_mps) == ({"lead": 70.0, "relay": 30.0}, 22.222)
