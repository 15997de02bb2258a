"""The verifier's and the simulator's rules for a replay fault (issue 37 item 3)."""

from __future__ import annotations

import pytest

from lastv2x.core.errors import InvalidArgument
from lastv2x.core.faults import operator_field_problems
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import Fault, parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.core.verifier import Severity, verify
from services.simulator.execute import SimulatorLimits, run_one


def _fcw(**fault: object) -> dict:
    f = {"name": "rp", "operator": "replay", "stream": "BSM", "sender": "lead", "magnitude": 1.0, **fault}
    return {"application": "FCW", "duration_s": 8.0, "ego": {"speed_mps": 13.9},
            "agents": [{"id": "lead", "role": "lead", "gap_m": 30.0}], "faults": [f]}


def _errors(d: dict, check: str) -> list:
    return [f for f in verify(parse_spec(d)).findings if f.check == check and f.severity is Severity.ERROR]


@pytest.mark.parametrize(("magnitude", "message"), [(45.0, "outside [0.1, 30.0]"), (0.0, "outside [0.1, 30.0]")])
def test_a_lag_out_of_range_names_the_field_with_a_repair(magnitude: float, message: str) -> None:
    (err,) = [e for e in _errors(_fcw(magnitude=magnitude), "operator_field") if message in e.message]
    assert message in err.message and err.fields == ("faults[0].magnitude",)
    assert err.repair is not None and err.repair.patch == (("faults[0].magnitude", min(max(magnitude, 0.1), 30.0)),)


def test_a_lag_shorter_than_the_streams_period_resends_the_previous_message() -> None:
    f = Fault(name="rp", operator="replay", stream="MAP", magnitude=0.5)
    (p,) = operator_field_problems(f)
    assert "shorter than the MAP period (1 s)" in p.message and p.patch == (("magnitude", 1.0),)
    assert not operator_field_problems(Fault(name="rp", operator="replay", stream="BSM", magnitude=0.1))


def test_replay_takes_whole_messages() -> None:
    (err,) = _errors(_fcw(field="speed"), "operator_field")
    assert "whole messages" in err.message and err.repair.patch == (("faults[0].field", None),)


def test_the_simulator_refuses_what_the_verifier_blocks() -> None:
    good = parse_spec(_fcw())
    program = program_from_spec_on_straight_roads(good)
    rf = program.faults[0]
    bad = program.model_copy(update={"faults": (rf.model_copy(update={"fault": rf.fault.model_copy(
        update={"magnitude": 0.05})}),)})
    with pytest.raises(InvalidArgument) as e:
        run_one(bad, None, SimulatorLimits())
    fields = [v.field for v in e.value.violations]
    assert "program.faults[0].fault.magnitude" in fields


def test_a_window_shorter_than_the_lag_within_the_budget_changes_nothing() -> None:
    """FCW's BSM budget is 0.5 s: a 0.3 s window replaying 2 s back only withholds 0.3 s of BSMs."""
    d = _fcw(magnitude=2.0, duration_s=0.3, anchor={"kind": "scenario_time", "offset_s": 2.0})
    (err,) = _errors(d, "freshness_budget")
    assert "shorter than its 2.0 s lag" in err.message and "faults[0].duration_s" in err.fields
    repaired = parse_spec(apply_patch(d, err.repair.patch))
    assert not _errors(repaired.model_dump(mode="json"), "freshness_budget")


def test_a_lag_within_the_budget_is_a_warning_not_a_block() -> None:
    report = verify(parse_spec(_fcw(magnitude=0.3, anchor={"kind": "scenario_time", "offset_s": 1.0})))
    warn = [f for f in report.findings if f.check == "freshness_budget"]
    assert warn and warn[0].severity is Severity.WARNING and "plausibility" in warn[0].message
    assert not [f for f in report.findings if f.check == "freshness_budget" and f.severity is Severity.ERROR]


def test_a_lag_past_the_budget_passes() -> None:
    assert not [f for f in verify(parse_spec(_fcw(magnitude=1.0))).findings if f.check == "freshness_budget"]
