"""The simulator service over real gRPC on loopback: paired execution, batches, coverage, bad input."""

from __future__ import annotations

import json

import grpc
import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import parse_spec
from lastv2x.rpc.convert import program_to_proto, spec_to_proto
from lastv2x.rpc.errors import field_violations
from lastv2x.v1 import common_pb2, simulator_pb2
from services.simulator.execute import SimulatorLimits
from services.simulator.reference import reference_program
from tests.simulator.conftest import served_simulator

FREEZE_BEFORE_AMBER = {
    "application": "RLVW", "seed": 7, "signal": {"offset_s": 22.353},
    "faults": [{"name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
                "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}],
}


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("traces")


@pytest.fixture(scope="module")
def sim(trace_dir):
    with served_simulator(SimulatorLimits(max_duration_s=60.0, trace_dir=trace_dir)) as stub:
        yield stub


def _spec(data: dict) -> common_pb2.ScenarioSpec:
    return spec_to_proto(parse_spec(data))


def test_freeze_before_amber_is_admitted_and_replays_bit_for_bit(sim, trace_dir) -> None:
    from services.simulator.trace import trace_file

    req = simulator_pb2.ExecuteRequest(spec=_spec(FREEZE_BEFORE_AMBER), write_trace=True)
    a = sim.Execute(req, timeout=60).outcome
    assert a.admitted and a.md.failed and not a.gt.failed
    assert [v.kind for v in a.md.violations] == ["red_entry"]
    assert a.failure_class == common_pb2.FAILURE_CLASS_FRESH_BUT_WRONG
    # issue 41: a trace id relative to the simulator's trace folder, never a server path
    assert a.trace_uri.endswith(".mcap") and "/" not in a.trace_uri and str(trace_dir) not in a.trace_uri
    assert trace_file(a.trace_uri, trace_dir).is_file()
    b = sim.Execute(simulator_pb2.ExecuteRequest(spec=_spec(FREEZE_BEFORE_AMBER)), timeout=60).outcome
    assert a.outcome_json == b.outcome_json and a.outcome_sha256 == b.outcome_sha256


def test_freeze_at_red_onset_is_not_admitted(sim) -> None:
    late = dict(FREEZE_BEFORE_AMBER, faults=[dict(FREEZE_BEFORE_AMBER["faults"][0],
                                                  anchor={"kind": "signal_event", "event": "red_onset"})])
    out = sim.Execute(simulator_pb2.ExecuteRequest(spec=_spec(late)), timeout=60).outcome
    assert not out.admitted and not out.gt.failed


def test_batch_streams_one_result_per_program_with_its_index(sim) -> None:
    """In completion order (the proto's contract): a batch of 3 on 2 workers runs as 2 + 1."""
    apps = [Application.RLVW, Application.IMA, Application.FCW]
    req = simulator_pb2.ExecuteBatchRequest(requests=[
        simulator_pb2.ExecuteRequest(program=program_to_proto(reference_program(a))) for a in apps])
    replies = list(sim.ExecuteBatch(req, timeout=120))
    assert sorted(r.index for r in replies) == [0, 1, 2]
    assert [json.loads(r.outcome.outcome_json)["application"] for r in sorted(replies, key=lambda r: r.index)] == [
        a.value for a in apps]
    assert not any(r.outcome.admitted for r in replies)  # healthy channel, no faults


@pytest.mark.parametrize("mutate, field", [
    (lambda p: p.model_copy(update={"duration_s": 90.0}), "program.duration_s"),
    (lambda p: p.model_copy(update={"map_name": "signalized_4way"}), "program.ego.route.segments[0].id"),
    (lambda p: p.model_copy(update={"map_name": "no_such_town"}), "program.map_name"),
])
def test_bad_programs_name_the_field(sim, mutate, field: str) -> None:
    program = mutate(reference_program(Application.RLVW))
    with pytest.raises(grpc.RpcError) as info:
        sim.Execute(simulator_pb2.ExecuteRequest(program=program_to_proto(program)), timeout=60)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in [f for f, _ in field_violations(info.value)]


def test_bad_specs_name_the_field_and_service_keeps_serving(sim) -> None:
    spec = _spec({"application": "GLOSA"})
    spec.ego.speed_mps = -1.0
    with pytest.raises(grpc.RpcError) as info:
        sim.Execute(simulator_pb2.ExecuteRequest(spec=spec), timeout=60)
    assert field_violations(info.value)[0][0] == "spec.ego.speed_mps"
    unknown = common_pb2.ScenarioSpec(application=42)  # type: ignore[arg-type]
    with pytest.raises(grpc.RpcError) as info:
        sim.Execute(simulator_pb2.ExecuteRequest(spec=unknown), timeout=60)
    assert field_violations(info.value)[0][0] == "spec.application"
    ok = sim.Execute(simulator_pb2.ExecuteRequest(spec=_spec({"application": "GLOSA"})), timeout=60)
    assert not ok.outcome.admitted


def test_coverage_blockage_ablation_and_bad_map(sim) -> None:
    rsu = common_pb2.Rsu(id="centre", xy_m=[8.0, 8.0], height_m=5.0)
    strong = sim.CoverageMap(simulator_pb2.CoverageMapRequest(map_name="urban_canyon", rsus=[rsu], cell_m=10,
                                                              range_m=250.0, blockage_db_per_m=5.0), timeout=60)
    weak = sim.CoverageMap(simulator_pb2.CoverageMapRequest(map_name="urban_canyon", rsus=[rsu], cell_m=10,
                                                            range_m=250.0, blockage_db_per_m=1.0), timeout=60)
    # blockage only removes coverage: 1 dB/m covers at least what 5 dB/m covers, and NLOS streets stay dark
    assert 0.0 < strong.in_range_fraction <= weak.in_range_fraction < 1.0
    assert len(strong.best_rssi_dbm) == strong.width * strong.height
    with pytest.raises(grpc.RpcError) as info:
        sim.CoverageMap(simulator_pb2.CoverageMapRequest(map_name="atlantis"), timeout=60)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field_violations(info.value)[0][0] == "map_name"


@pytest.mark.parametrize("fault, field", [
    ({"name": "f", "operator": "drop", "stream": "BSM", "burst_count": 20}, "program.faults[0].fault.stream"),
    ({"name": "f", "operator": "delay", "stream": "SPAT", "magnitude": 99.0}, "program.faults[0].fault.magnitude"),
    ({"name": "f", "operator": "freeze", "stream": "SPAT",
      "anchor": {"kind": "ego_event", "event": "stop_bar_distance", "distance_m": 900.0}},
     "program.faults[0].fault.anchor.distance_m"),
])
def test_faults_the_verifier_blocks_are_refused_if_called_directly(sim, fault: dict, field: str) -> None:
    spec = _spec({"application": "RLVW", "faults": [fault]})
    with pytest.raises(grpc.RpcError) as info:
        sim.Execute(simulator_pb2.ExecuteRequest(spec=spec), timeout=60)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in [f for f, _ in field_violations(info.value)]


def test_concurrent_executes_coalesce_into_one_batch_with_identical_bytes() -> None:
    """K calls in flight on one replica run as one vectorized batch; each gets its single-run bytes."""
    import threading

    from lastv2x.core.catalogue import Application
    from services.simulator.core import SimulatorCore
    from services.simulator.execute import SimulatorLimits, run_one
    from services.simulator.reference import reference_program

    programs = [reference_program(app, seed=3) for app in Application]
    expected = [run_one(p, None, SimulatorLimits())[0].to_json_bytes() for p in programs]
    core = SimulatorCore()
    got: dict[int, bytes] = {}

    def call(i: int) -> None:
        got[i] = core.execute(programs[i])[0].to_json_bytes()
    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(programs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[i] for i in range(len(programs))] == expected


def test_a_bad_call_in_a_coalesced_batch_fails_alone() -> None:
    import threading

    import pytest

    from lastv2x.core.catalogue import Application
    from lastv2x.core.errors import InvalidArgument
    from services.simulator.core import SimulatorCore
    from services.simulator.reference import reference_program

    good = reference_program(Application.RLVW)
    bad = good.model_copy(update={"duration_s": 10_000.0})
    core = SimulatorCore()
    results: dict[str, object] = {}

    def call(name: str, program) -> None:  # type: ignore[no-untyped-def]
        try:
            results[name] = core.execute(program)[0].admitted
        except InvalidArgument as exc:
            results[name] = exc
    threads = [threading.Thread(target=call, args=(f"g{i}", good)) for i in range(3)]
    threads.append(threading.Thread(target=call, args=("bad", bad)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert isinstance(results["bad"], InvalidArgument) and "program.duration_s" in str(results["bad"])
    assert all(results[f"g{i}"] is False for i in range(3))
    with pytest.raises(InvalidArgument):
        core.execute(bad)


def test_cli_execute_over_grpc_finds_the_trace_by_its_id(trace_dir, tmp_path, monkeypatch, capsys) -> None:
    """Issue 41: `lastv2x execute --target --trace` gets a trace id, not a server path, and finds the
    file under the simulator's trace folder (LASTV2X_SIMULATOR_TRACE_DIR) when it is on this machine."""
    import json

    from lastv2x.rpc.server import ServerConfig, create_server
    from lastv2x_app import cli
    from services.simulator.servicer import register

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(FREEZE_BEFORE_AMBER))
    server, port = create_server(ServerConfig("simulator", log_json=False),
                                 lambda s: register(s, SimulatorLimits(max_duration_s=60.0, trace_dir=trace_dir)))
    server.start()
    try:
        monkeypatch.setenv("LASTV2X_SIMULATOR_TRACE_DIR", str(trace_dir))
        assert cli.main(["execute", str(spec), "--target", f"127.0.0.1:{port}", "--trace", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["trace_uri"].endswith(".mcap") and "/" not in out["trace_uri"]
        assert out["trace_path"] == str(trace_dir.resolve() / out["trace_uri"])
        monkeypatch.setenv("LASTV2X_SIMULATOR_TRACE_DIR", str(tmp_path / "elsewhere"))  # another machine's folder
        assert cli.main(["execute", str(spec), "--target", f"127.0.0.1:{port}", "--trace"]) == 0
        text = capsys.readouterr().out
        assert f"trace: {out['trace_uri']} (in the simulator's trace folder" in text
    finally:
        server.stop(0)
