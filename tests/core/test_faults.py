"""The rules of a fault have one home (lastv2x.core.faults): the verifier and the simulator
refuse the same faults, and both grounders resolve names the same way."""

from __future__ import annotations

from typing import Any

import pytest

from lastv2x.core.errors import ErrorCollector, InvalidArgument
from lastv2x.core.faults import operator_field_problems, resolve_faults
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import (
    SYNTH_GROUP_EW,
    SYNTH_GROUP_NS,
    program_from_spec_on_straight_roads,
)
from lastv2x.core.verifier import verify
from services.simulator.execute import validate_faults

FREEZE = {"name": "f", "operator": "freeze", "stream": "SPAT",
          "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}

# (fault, the fields operator_field blames); the first two are the cases the simulator used to run
CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"name": "p", "operator": "spat_phase_corrupt", "stream": "SPAT", "magnitude": 3.0}, {"target_phase"}),
    ({"name": "s", "operator": "suppress_sender", "stream": "SPAT", "magnitude": 2.0}, {"sender"}),
    ({"name": "d", "operator": "delay", "stream": "SPAT"}, {"magnitude"}),
    ({"name": "d", "operator": "delay", "stream": "SPAT", "magnitude": 99.0}, {"magnitude"}),
    ({"name": "c", "operator": "spat_countdown_offset", "stream": "SPAT", "magnitude": float("nan")}, {"magnitude"}),
    ({"name": "m", "operator": "map_misassociation", "stream": "SPAT"}, {"operator", "stream"}),
    ({"name": "x", "operator": "drop", "stream": "SPAT", "probability": 0.5, "burst_count": 3},
     {"probability", "burst_count"}),
    ({"name": "x", "operator": "drop", "stream": "SPAT", "field": "no_such_field"}, {"field"}),
    (FREEZE, set()),
    ({"name": "p", "operator": "spat_phase_corrupt", "stream": "SPAT", "target_phase": "green"}, set()),
    ({"name": "s", "operator": "suppress_sender", "stream": "SPAT", "sender": "rsu"}, set()),
]


def _spec(fault: dict[str, Any]) -> Any:
    return parse_spec({"application": "RLVW", "signal": {"offset_s": 22.353}, "faults": [fault]})


@pytest.mark.parametrize("fault, fields", CASES)
def test_the_verifier_and_the_simulator_refuse_the_same_faults(fault: dict[str, Any], fields: set[str]) -> None:
    spec = _spec(fault)
    problems = operator_field_problems(spec.faults[0], spec)
    assert {f for p in problems for f in p.fields} == fields
    blamed = {f for finding in verify(spec).findings if finding.check == "operator_field" for f in finding.fields}
    assert blamed == {f"faults[0].{f}" for f in fields}
    errors = ErrorCollector()
    validate_faults(program_from_spec_on_straight_roads(spec), errors)
    refused = {v.field.removeprefix("program.faults[0].fault.") for v in errors.violations}
    assert refused == {p.fields[0] for p in problems}


def test_every_problem_carries_a_repair_that_clears_it() -> None:
    for fault, _fields in CASES:
        spec = _spec(fault)
        for p in operator_field_problems(spec.faults[0], spec):
            repaired = spec.faults[0].model_copy(update=dict(p.patch))
            assert not set(p.fields) & {f for q in operator_field_problems(repaired, spec) for f in q.fields}, p


@pytest.mark.parametrize("where, fault", [
    ("target_group", {"name": "m", "operator": "map_misassociation", "stream": "MAP", "target_group": "j7.sg9"}),
    ("anchor.group", {**FREEZE, "anchor": {**FREEZE["anchor"], "group": "j7.sg9"}}),
    ("sender", {"name": "s", "operator": "suppress_sender", "stream": "BSM", "sender": "ghost"}),
])
def test_the_synthetic_grounder_refuses_a_name_not_in_the_scene(where: str, fault: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument) as exc:
        program_from_spec_on_straight_roads(_spec(fault))
    (violation,) = exc.value.violations
    assert violation.field == f"faults[0].{where}" and violation.hint


def test_unsignalized_scene_has_no_groups_to_name() -> None:
    spec = parse_spec({"application": "IMA", "map": {"signalized": False},
                       "agents": [{"id": "c", "role": "cross"}],
                       "faults": [{"name": "p", "operator": "drop", "stream": "BSM", "target_group": "cross"}]})
    assert program_from_spec_on_straight_roads(spec).faults[0].target_group_id is None  # 'cross': there is none
    with pytest.raises(InvalidArgument, match="no signal groups"):
        resolve_faults(spec.model_copy(update={"faults": (spec.faults[0].model_copy(update={"target_group": "j0.sg0"}),)}),
                       groups=(), ego_group=None, cross_group=None, rsu_ids=(), vehicle_ids={"ego", "c"})


def test_aliases_resolve_to_the_scene_ids() -> None:
    spec = _spec({**FREEZE, "sender": "rsu", "anchor": {**FREEZE["anchor"], "group": "cross"}})
    (f,) = resolve_faults(spec, groups=("a", "b"), ego_group="a", cross_group="b", rsu_ids=("r1", "r2"),
                          vehicle_ids={"ego"})
    assert (f.sender_id, f.sender_ids, f.anchor_group_id, f.target_group_id) == ("r1", ("r1", "r2"), "b", "a")
    (m,) = program_from_spec_on_straight_roads(_spec({"name": "m", "operator": "map_misassociation",
                                                      "stream": "MAP"})).faults
    assert m.target_group_id == SYNTH_GROUP_EW and SYNTH_GROUP_NS != SYNTH_GROUP_EW
