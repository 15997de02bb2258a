"""A short derandomized fuzz run over every public RPC (issue 16, item 7); ``make fuzz`` is the long one.

Strategies derived from the proto descriptors, raw bytes and mutated valid requests against the five
services in-process on loopback: zero crashes (INTERNAL / UNKNOWN), hangs, leaks and unexpected codes.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from hypothesis import given, settings

from lastv2x.v1 import common_pb2, search_pb2, search_pb2_grpc
from lastv2x_app import fuzz

EXAMPLES_PER_RPC = 25


def test_every_rpc_is_enumerated_from_the_descriptors() -> None:
    labels = {r.label for r in fuzz.rpcs()}
    assert len(labels) == 24
    assert {"llm.Verify", "grounding.Ground", "simulator.ExecuteBatch", "search.WatchCampaign",
            "strap.Ingest"} <= labels
    assert set(fuzz.seed_requests()) == labels  # every RPC has a valid request to mutate


@settings(max_examples=60)
@given(fuzz.message_strategy(common_pb2.ScenarioSpec.DESCRIPTOR))
def test_descriptor_strategy_builds_messages_that_round_trip(msg: common_pb2.ScenarioSpec) -> None:
    assert isinstance(msg, common_pb2.ScenarioSpec)
    again = common_pb2.ScenarioSpec.FromString(msg.SerializeToString())
    assert again.SerializeToString() == msg.SerializeToString()


def test_classification() -> None:
    rpc = next(r for r in fuzz.rpcs() if r.name == "Verify")
    execute = next(r for r in fuzz.rpcs() if r.name == "Execute")
    assert fuzz.classify(rpc, grpc.StatusCode.INVALID_ARGUMENT, "spec_json: not JSON") == "expected"
    assert fuzz.classify(rpc, grpc.StatusCode.UNKNOWN, "boom") == "crash"
    assert fuzz.classify(rpc, grpc.StatusCode.INVALID_ARGUMENT, "cannot open /tmp/x/strap.db") == "leak"
    assert fuzz.classify(rpc, grpc.StatusCode.INVALID_ARGUMENT, "input_value={'a': 1}") == "leak"
    assert fuzz.classify(rpc, grpc.StatusCode.DEADLINE_EXCEEDED, "") == "hang"
    assert fuzz.classify(execute, grpc.StatusCode.DEADLINE_EXCEEDED, "") == "slow"


def test_short_fuzz_run_finds_no_crash_hang_or_leak(tmp_path: Path) -> None:
    results = fuzz.fuzz_all(EXAMPLES_PER_RPC, root=tmp_path)
    assert len(results) == 24
    failures = {label: t.samples for label, t in results.items() if t.failures}
    assert not failures, fuzz.table(results)
    for label, tally in results.items():
        assert tally.counts["inputs"] >= 10, label  # hypothesis may stop early only on a tiny input space


@pytest.fixture
def search_target(tmp_path: Path):  # type: ignore[no-untyped-def]
    with fuzz.serving(tmp_path) as targets, grpc.insecure_channel(targets["search"]) as channel:
        yield search_pb2_grpc.SearchServiceStub(channel)


@pytest.mark.parametrize("application", [7, 1000, -1, 2**31 - 1])
def test_list_witnesses_with_an_unknown_application_is_invalid_argument(search_target, application: int) -> None:
    """Found by the fuzzer: an unknown enum number crashed ListWitnesses (INTERNAL, ValueError)."""
    with pytest.raises(grpc.RpcError) as err:
        search_target.ListWitnesses(search_pb2.ListWitnessesRequest(application=application), timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "application" in (err.value.details() or "")
    assert search_target.ListWitnesses(search_pb2.ListWitnessesRequest(application=1), timeout=5).witnesses == []
