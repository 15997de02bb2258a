"""The search service over real gRPC on loopback: start, watch, get, list, witnesses, replay, errors."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from lastv2x.rpc.convert import spec_to_proto
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import common_pb2, search_pb2, search_pb2_grpc
from services.search.core import SearchCore
from services.search.servicer import register
from tests.search.conftest import rlvw_failing_spec


@pytest.fixture
def stub(search_core: SearchCore) -> Iterator[search_pb2_grpc.SearchServiceStub]:
    server, port = create_server(ServerConfig("search", log_json=False), lambda s: register(s, core=search_core))
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield search_pb2_grpc.SearchServiceStub(channel)
    finally:
        server.stop(0)


def _fields(err: grpc.RpcError) -> list[str]:
    status = rpc_status.from_call(err)
    assert status is not None
    bad = error_details_pb2.BadRequest()
    status.details[0].Unpack(bad)
    return [v.field for v in bad.field_violations]


def test_campaign_over_grpc_from_start_to_replay(stub: search_pb2_grpc.SearchServiceStub) -> None:
    started = stub.StartCampaign(search_pb2.StartCampaignRequest(
        specs=[spec_to_proto(rlvw_failing_spec())], seed=3, budget_per_scenario=2), timeout=10)
    cid = started.campaign.id
    events = list(stub.WatchCampaign(search_pb2.WatchCampaignRequest(campaign_id=cid), timeout=300))
    assert events[-1].progress.kind == "done"
    assert events[-1].campaign.state == common_pb2.CAMPAIGN_STATE_DONE
    assert [e.progress.candidates_done for e in events] == sorted(e.progress.candidates_done for e in events)
    got = stub.GetCampaign(search_pb2.GetCampaignRequest(campaign_id=cid), timeout=10).campaign
    (sc,) = got.scenarios
    assert sc.application == common_pb2.APPLICATION_RLVW and sc.admitted_initially and sc.faults_left == [1]
    assert cid in [c.id for c in stub.ListCampaigns(search_pb2.ListCampaignsRequest(), timeout=10).campaigns]
    (w,) = stub.ListWitnesses(search_pb2.ListWitnessesRequest(campaign_id=cid), timeout=10).witnesses
    assert w.certificate_complete and w.certificate and w.outcome.admitted
    assert w.catalog_key.fault_family == "freeze@SPAT" and len(w.spec.faults) == 1
    assert stub.GetWitness(search_pb2.GetWitnessRequest(witness_id=w.id), timeout=10).witness.id == w.id
    replay = stub.ReplayWitness(search_pb2.ReplayWitnessRequest(witness_id=w.id), timeout=60)
    assert replay.identical and replay.admitted
    assert replay.outcome.outcome_json == w.outcome.outcome_json
    assert replay.archived.outcome_json == w.outcome.outcome_json and replay.backend == ""
    if importlib.util.find_spec("libsumo") is not None:  # re-verified on a second simulator (issue 20)
        on_sumo = stub.ReplayWitness(search_pb2.ReplayWitnessRequest(witness_id=w.id, backend="sumo"), timeout=120)
        assert on_sumo.admitted and on_sumo.backend == "sumo"
        assert on_sumo.archived.outcome_json == w.outcome.outcome_json
    with pytest.raises(grpc.RpcError) as err:
        stub.ReplayWitness(search_pb2.ReplayWitnessRequest(witness_id=w.id, backend="gazebo"), timeout=60)
    assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "sumo" in (err.value.details() or "")
    none = stub.ListWitnesses(search_pb2.ListWitnessesRequest(application=common_pb2.APPLICATION_FCW), timeout=10)
    assert not none.witnesses


def test_bad_start_requests_are_invalid_argument_naming_the_field(stub: search_pb2_grpc.SearchServiceStub) -> None:
    cases = [(search_pb2.StartCampaignRequest(), "intents"),
             (search_pb2.StartCampaignRequest(intents=["rlvw", ""]), "intents[1]"),
             (search_pb2.StartCampaignRequest(intents=["rlvw"], budget_per_scenario=10**6), "budget_per_scenario"),
             (search_pb2.StartCampaignRequest(intents=["rlvw"], budget_per_scenario=-1), "budget_per_scenario")]
    for request, field in cases:
        with pytest.raises(grpc.RpcError) as info:
            stub.StartCampaign(request, timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert field in _fields(info.value)
    assert not stub.ListCampaigns(search_pb2.ListCampaignsRequest(), timeout=10).campaigns  # nothing stored


def test_unknown_ids_are_not_found(stub: search_pb2_grpc.SearchServiceStub) -> None:
    for call in (lambda: stub.GetCampaign(search_pb2.GetCampaignRequest(campaign_id="c-nope"), timeout=5),
                 lambda: stub.CancelCampaign(search_pb2.CancelCampaignRequest(campaign_id="c-nope"), timeout=5),
                 lambda: list(stub.WatchCampaign(search_pb2.WatchCampaignRequest(campaign_id="c-nope"), timeout=5)),
                 lambda: stub.ReplayWitness(search_pb2.ReplayWitnessRequest(witness_id="w-nope"), timeout=5),
                 lambda: stub.ListWitnesses(search_pb2.ListWitnessesRequest(campaign_id="c-nope"), timeout=5)):
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as info:
        stub.GetWitness(search_pb2.GetWitnessRequest(witness_id=" "), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and _fields(info.value) == ["witness_id"]


def test_metrics_export_pending_in_flight_executions_admitted(search_core: SearchCore) -> None:
    from prometheus_client import generate_latest

    server, port = create_server(ServerConfig("search", log_json=False), lambda s: register(s, core=search_core))
    server.start()
    try:
        def scrape() -> dict[str, float]:
            text = generate_latest(server.metrics.registry).decode()  # type: ignore[attr-defined]
            return {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
                    if line.startswith("lastv2x_search_")}

        before = scrape()
        assert before["lastv2x_search_pending_executions"] == 0 and before["lastv2x_search_executions_total"] == 0
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = search_pb2_grpc.SearchServiceStub(channel)
            cid = stub.StartCampaign(search_pb2.StartCampaignRequest(
                specs=[spec_to_proto(rlvw_failing_spec(0))], seed=3, budget_per_scenario=4), timeout=10).campaign.id
            pending = []
            for _reply in stub.WatchCampaign(search_pb2.WatchCampaignRequest(campaign_id=cid), timeout=300):
                pending.append(scrape()["lastv2x_search_pending_executions"])
        after = scrape()
        assert max(pending) > 0 and after["lastv2x_search_pending_executions"] == 0
        assert after["lastv2x_search_executions_total"] >= 4 and after["lastv2x_search_admitted_total"] >= 1
        assert after["lastv2x_search_in_flight_executions"] == 0
    finally:
        server.stop(0)


def test_repair_records_round_trip_through_their_message() -> None:
    """A scenario's repair records (``campaign.observability_repairs``) travel as SpecRepair, values as JSON (an
    unset field's old value too): the CLI's remote table reads back what the local one shows."""
    from services.search.repairs import repair_text
    from services.search.servicer import repair_from_proto, repair_to_proto

    records = [{"check": "channel_baseline", "message": "the relay is not needed", "description": "shorten the range",
                "patch": [{"field": "v2x.channel.range_m", "from": 150.0, "value": 45.0},
                          {"field": "v2x.rsu_placement", "from": None, "value": {"x_m": 1.5}}],
                "applied": False, "reason": "the intent states v2x.channel.range_m", "origin": "reflection 2"}]
    back = [repair_from_proto(common_pb2.SpecRepair.FromString(repair_to_proto(r).SerializeToString()))
            for r in records]
    assert back == records and [repair_text(r) for r in back] == [repair_text(r) for r in records]
