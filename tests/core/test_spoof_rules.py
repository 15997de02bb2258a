"""The verifier's spoofed_rsu rules: a forged id that is a real one, an application that never reads SPaT, a
window that misses the decision epoch, fields the operator does not take; and the shrinker's weakening."""

from __future__ import annotations

import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import parse_spec
from lastv2x.core.verifier import Severity, verify
from services.simulator.reference import reference_spec


def _spec(app: Application = Application.RLVW, **fault: object):
    d = reference_spec(app).model_dump(mode="json")
    d["faults"] = [{"name": "spoof", "operator": "spoofed_rsu", "stream": "SPAT",
                    "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -1.0}, **fault}]
    return parse_spec(d)


def _errors(spec):
    return [f for f in verify(spec).findings if f.severity is Severity.ERROR]


@pytest.mark.parametrize("app", [Application.RLVW, Application.GLOSA])
def test_a_spoofed_rsu_on_a_signal_application_is_clean(app: Application) -> None:
    whole_run = {"kind": "scenario_time", "offset_s": 0.0}  # covers the epoch whatever the signal plan
    assert verify(_spec(app, anchor=whole_run)).ok
    assert verify(_spec(app, anchor=whole_run, sender="mallory", target_phase="red")).ok


@pytest.mark.parametrize(("sender", "what"), [("rsu", "real RSU"), ("ego", "real vehicle")])
def test_a_forged_id_of_a_real_sender_names_the_sender_and_repairs_to_a_free_id(sender: str, what: str) -> None:
    spec = _spec(sender=sender)
    (f,) = _errors(spec)
    assert (f.check, f.fields) == ("operator_field", ("faults[0].sender",)) and what in f.message
    assert f.repair.patch == (("faults[0].sender", "rsu_spoof"),)
    assert verify(parse_spec(apply_patch(spec.model_dump(mode="json"), f.repair.patch))).ok


def test_the_repair_skips_an_id_another_forger_holds() -> None:
    d = _spec(sender="ego").model_dump(mode="json")
    d["faults"].append({**d["faults"][0], "name": "spoof2", "sender": None})
    f = next(f for f in _errors(parse_spec(d)) if f.fields == ("faults[0].sender",))
    assert f.repair.patch == (("faults[0].sender", "rsu_spoof1"),)


@pytest.mark.parametrize("app", [Application.FCW, Application.EEBL, Application.IMA, Application.LTA])
def test_an_application_that_never_reads_spat_is_refused(app: Application) -> None:
    d = reference_spec(app).model_dump(mode="json")
    d["faults"] = [{"name": "spoof", "operator": "spoofed_rsu", "stream": "SPAT",
                    "anchor": {"kind": "scenario_time", "offset_s": 2.0}, "duration_s": 5.0}]
    errs = _errors(parse_spec(d))
    assert [(f.check, f.fields) for f in errs] == [("stream_consumption", ("faults[0].stream",))]
    assert "never consumes SPAT" in errs[0].message


def test_a_window_that_misses_the_decision_epoch_is_the_usual_finding() -> None:
    (f,) = _errors(_spec(anchor={"kind": "scenario_time", "offset_s": 2.0}, duration_s=3.0))
    assert f.check == "decision_window" and "faults[0].anchor" in f.fields


@pytest.mark.parametrize(("fault", "field"), [({"magnitude": 3.0}, "magnitude"), ({"field": "phase"}, "field"),
                                              ({"stream": "BSM"}, "stream")])
def test_what_a_spoofed_rsu_does_not_take(fault: dict, field: str) -> None:
    errs = _errors(_spec(**fault))
    assert any(f.check == "operator_field" and f"faults[0].{field}" in f.fields for f in errs)


def test_the_shrinker_shortens_the_window() -> None:
    from services.search.shrink import fault_strength, single_weakenings, spec_order

    spec = _spec(duration_s=4.0)
    passes = {w.pass_name: w.spec for w in single_weakenings(spec)}
    assert "halve_magnitude" not in passes and "move_farther" not in passes  # no strength knob
    shorter = passes["shorten_window"]
    assert shorter.faults[0].duration_s == 2.0 and spec_order(shorter) < spec_order(spec)
    assert fault_strength(spec.faults[0]) == 1.0


def test_the_proto_carries_the_operator() -> None:
    from lastv2x.rpc.convert import spec_from_proto, spec_to_proto
    from lastv2x.v1 import common_pb2

    spec = _spec(sender="mallory", target_phase="red")
    msg = spec_to_proto(spec)
    assert msg.faults[0].operator == common_pb2.FAULT_OPERATOR_SPOOFED_RSU and spec_from_proto(msg) == spec


def test_a_forger_with_no_rsu_site_beside_it_is_refused_before_and_at_the_simulator() -> None:
    """rsu_placement none places no RSU, so there is no site for the forger to stand beside: the verifier says so
    with the repair that places one, and the simulator refuses the program as INVALID_ARGUMENT (never a crash)."""
    from lastv2x.core.errors import InvalidArgument
    from lastv2x.core.synthetic import program_from_spec_on_straight_roads
    from services.simulator.execute import SimulatorLimits, run_one

    d = _spec().model_dump(mode="json")
    d["v2x"]["rsu_placement"] = "none"
    spec = parse_spec(d)
    (err,) = [f for f in _errors(spec) if "forged roadside unit" in f.message]
    assert err.repair is not None and apply_patch(d, err.repair.patch)["v2x"]["rsu_placement"] == "junction"
    with pytest.raises(InvalidArgument) as info:
        run_one(program_from_spec_on_straight_roads(spec), None, SimulatorLimits())
    assert info.value.violations[0].field == "program.faults[0].fault.operator"
