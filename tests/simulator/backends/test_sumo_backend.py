"""Paired execution on SUMO (execute_paired(backend="sumo")): the reference failures are admitted on
both simulators, a healthy scene on neither, and a SUMO outcome repeats bit for bit."""

from __future__ import annotations

import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.paired import execute_paired
from services.simulator.reference import reference_program, reference_spec
from services.simulator.v2x.stack import v2x_source_factory

pytest.importorskip("libsumo", reason="the SUMO backend needs the 'sumo' extra")

FREEZE_BEFORE_AMBER = {  # tests/simulator/test_servicer.py
    "application": "RLVW", "seed": 7, "signal": {"offset_s": 22.353},
    "faults": [{"name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
                "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}]}


def _lead_drop() -> dict:
    spec = reference_spec(Application.FCW, 1).model_dump(mode="json")  # the lead brakes hard at 3 s
    spec["faults"] = [{"name": "drop_lead", "operator": "drop", "stream": "BSM", "sender": "lead",
                       "anchor": {"kind": "scenario_time", "offset_s": 2.0}, "duration_s": 10.0}]
    return spec


def _run(program, backend: str):  # type: ignore[no-untyped-def]
    return execute_paired(program, md_source_factory=v2x_source_factory(), backend=backend)


@pytest.mark.parametrize("spec", [FREEZE_BEFORE_AMBER, _lead_drop()], ids=["rlvw-freeze", "fcw-lead-drop"])
def test_the_reference_failures_are_admitted_on_builtin_and_on_sumo(spec: dict) -> None:
    program = program_from_spec_on_straight_roads(parse_spec(spec))
    for backend in ("builtin", "sumo"):
        out = _run(program, backend)
        assert out.admitted and out.md.failed and not out.gt.failed, backend


@pytest.mark.parametrize("app", [Application.RLVW, Application.FCW])
def test_a_healthy_scene_is_admitted_on_neither(app: Application) -> None:
    program = reference_program(app, seed=1)
    for backend in ("builtin", "sumo"):
        out = _run(program, backend)
        assert not out.admitted and not out.md.failed and not out.gt.failed, backend


def test_a_sumo_outcome_repeats_bit_for_bit() -> None:
    program = program_from_spec_on_straight_roads(parse_spec(_lead_drop()))
    assert _run(program, "sumo").to_json_bytes() == _run(program, "sumo").to_json_bytes()


def test_an_unknown_backend_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(InvalidArgument, match="gazebo.*builtin.*sumo"):
        _run(reference_program(Application.FCW, seed=1), "gazebo")


# ----------------------------------------------------------------------------- over gRPC
@pytest.fixture(scope="module")
def sim(tmp_path_factory):  # type: ignore[no-untyped-def]
    from services.simulator.execute import SimulatorLimits
    from tests.simulator.conftest import served_simulator

    with served_simulator(SimulatorLimits(max_duration_s=60.0, trace_dir=tmp_path_factory.mktemp("traces"))) as stub:
        yield stub


def test_execute_names_its_backend_and_a_batch_runs_on_one(sim) -> None:  # type: ignore[no-untyped-def]
    import grpc

    from lastv2x.rpc.convert import spec_to_proto
    from lastv2x.rpc.errors import field_violations
    from lastv2x.v1 import simulator_pb2

    spec = spec_to_proto(parse_spec(FREEZE_BEFORE_AMBER))
    on_sumo = sim.Execute(simulator_pb2.ExecuteRequest(spec=spec, backend="sumo"), timeout=120).outcome
    assert on_sumo.admitted and on_sumo.md.failed and not on_sumo.gt.failed
    with pytest.raises(grpc.RpcError) as err:
        sim.Execute(simulator_pb2.ExecuteRequest(spec=spec, backend="gazebo"), timeout=30)
    assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert [v[0] for v in field_violations(err.value)] == ["backend"] and "sumo" in err.value.details()
    mixed = simulator_pb2.ExecuteBatchRequest(requests=[simulator_pb2.ExecuteRequest(spec=spec, backend="sumo"),
                                                        simulator_pb2.ExecuteRequest(spec=spec)])
    with pytest.raises(grpc.RpcError) as err:
        list(sim.ExecuteBatch(mixed, timeout=30))
    assert [v[0] for v in field_violations(err.value)] == ["requests[1].backend"]
    both = simulator_pb2.ExecuteBatchRequest(requests=[simulator_pb2.ExecuteRequest(spec=spec, backend="sumo")] * 2)
    got = list(sim.ExecuteBatch(both, timeout=120))
    assert [r.index for r in got] == [0, 1] and all(r.outcome.admitted for r in got)
    assert got[0].outcome.outcome_json == on_sumo.outcome_json
