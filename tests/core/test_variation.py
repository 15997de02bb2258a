"""Seeds that vary the world (issue 17, item 5): draws within the bounds a spec declares."""

from __future__ import annotations

import json

import pytest

from lastv2x.core.errors import InvalidArgument
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import _on_straight_roads, program_from_spec_on_straight_roads
from lastv2x.core.verifier import Severity, verify

IMA = {"application": "IMA", "map": {"signalized": False, "busy": True},
       "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 0.5}]}
BOUNDS = {"desired_speed_mps": {"min": 10.0, "max": 16.0}, "arrival_jitter_s": {"min": -1.0, "max": 1.0},
          "reaction_time_s": {"min": 0.8, "max": 1.6}, "background_vehicles": {"min": 1, "max": 4}}


def _spec(seed: int = 0, variation: dict | None = BOUNDS, **over) -> object:
    d = {**IMA, "seed": seed, **over}
    if variation is not None:
        d["variation"] = variation
    return parse_spec(d)


def _world(p) -> tuple:
    bg = [v for v in p.agents if v.role.value == "background"]
    cross = next(v for v in p.agents if v.id == "cross")
    return (p.ego.desired_speed_mps, cross.desired_speed_mps, cross.arrive_conflict_at_s,
            p.ego.reaction_time_s, len(bg), tuple(v.desired_speed_mps for v in bg))


def test_without_variation_nothing_changes():
    spec = _spec(variation=None)
    assert "variation" not in spec.model_dump_json()  # spec, program and outcome ids keep their bytes
    program = program_from_spec_on_straight_roads(spec)
    assert program.model_dump_json() == _on_straight_roads(spec).model_dump_json()
    assert all(v.reaction_time_s is None for v in program.vehicles)


def test_ten_seeds_are_ten_worlds_within_the_bounds():
    worlds = [_world(program_from_spec_on_straight_roads(_spec(seed))) for seed in range(10)]
    assert len(set(worlds)) == 10
    assert len({w[4] for w in worlds}) > 1  # background traffic varies too
    again = program_from_spec_on_straight_roads(_spec(3))
    assert _world(again) == worlds[3]  # one seed, one world
    for seed in range(10):
        p = program_from_spec_on_straight_roads(_spec(seed))
        assert p.spec == _spec(seed)  # the program keeps the spec as written
        drawn = p.grounding.details["variation"]
        for v in p.vehicles:
            assert 10.0 <= v.desired_speed_mps <= 16.0 and v.initial_speed_mps == v.desired_speed_mps
            assert 0.8 <= v.reaction_time_s <= 1.6
        assert -1.0 <= drawn["arrival_jitter_s"]["cross"] <= 1.0
        assert 1 <= drawn["background_vehicles"]["placed"] <= 4
        assert p.agents[0].arrive_conflict_at_s is not None


def test_a_vehicle_draw_does_not_depend_on_the_others():
    two = program_from_spec_on_straight_roads(_spec(5))
    solo = program_from_spec_on_straight_roads(_spec(5, map={"signalized": False}))  # no background at all
    assert two.ego.desired_speed_mps == solo.ego.desired_speed_mps
    assert two.ego.reaction_time_s == solo.ego.reaction_time_s


def test_pinned_and_unset_quantities():
    pinned = {**BOUNDS, "desired_speed_mps": {"min": 12.5, "max": 12.5}}
    p = program_from_spec_on_straight_roads(_spec(4, pinned))
    assert {v.desired_speed_mps for v in p.vehicles} == {12.5}
    only_rt = program_from_spec_on_straight_roads(_spec(4, {"reaction_time_s": {"min": 1.0, "max": 2.0}}))
    base = program_from_spec_on_straight_roads(_spec(4, None))
    assert [v.desired_speed_mps for v in only_rt.vehicles] == [v.desired_speed_mps for v in base.vehicles]
    assert [v.start_s_m for v in only_rt.vehicles] == [v.start_s_m for v in base.vehicles]
    assert only_rt.ego.reaction_time_s != base.ego.reaction_time_s


def test_seeds_change_the_outcome():
    from services.simulator.paired import execute_paired

    outs = {execute_paired(program_from_spec_on_straight_roads(_spec(s)), s).md.closest_approach_m
            for s in range(3)}
    assert len(outs) == 3


@pytest.mark.parametrize("bounds, fields, fixed", [
    ({"reaction_time_s": {"min": 2.0, "max": 1.0}}, ("variation.reaction_time_s.min", "variation.reaction_time_s.max"),
     {"min": 1.0, "max": 2.0}),
    ({"reaction_time_s": {"min": -0.5, "max": 1.0}}, ("variation.reaction_time_s.min",), {"min": 0.0, "max": 1.0}),
    ({"desired_speed_mps": {"min": -3.0, "max": 12.0}}, ("variation.desired_speed_mps.min",), None),
    ({"background_vehicles": {"min": 0, "max": 40}}, ("variation.background_vehicles.max",), {"min": 0, "max": 16}),
])
def test_bad_bounds_are_verifier_errors_with_a_repair(bounds, fields, fixed):
    data = {**IMA, "variation": bounds}
    report = verify(parse_spec(data))
    errors = [f for f in report.findings if f.severity is Severity.ERROR and f.fields[0].startswith("variation")]
    assert errors and errors[0].fields == fields and errors[0].repair.patch, report.findings
    repaired = data
    for _ in range(3):  # the repair loop: apply the first variation error's patch until none is left
        found = [f for f in verify(parse_spec(repaired)).findings
                 if f.severity is Severity.ERROR and f.fields[0].startswith("variation")]
        if not found:
            break
        repaired = apply_patch(json.loads(json.dumps(repaired)), found[0].repair.patch)
    assert not found
    name = next(iter(bounds))
    if fixed is not None:
        assert repaired["variation"][name] == fixed
    with pytest.raises(InvalidArgument) as exc:  # a builder never draws from them
        program_from_spec_on_straight_roads(parse_spec(data))
    assert exc.value.violations[0].field == fields[0] and exc.value.violations[0].hint


def test_bounds_that_cannot_act_are_warnings():
    quiet = parse_spec({"application": "RLVW", "variation": {"background_vehicles": {"min": 1, "max": 2},
                                                             "arrival_jitter_s": {"min": 0.0, "max": 1.0}}})
    warns = {f.fields[0]: f for f in verify(quiet).findings if f.severity is Severity.WARNING}
    assert warns["variation.background_vehicles"].repair.patch == (("map.busy", True),)
    assert "variation.arrival_jitter_s" in warns


def test_schema_and_proto_carry_variation():
    from lastv2x.core.spec import spec_json_schema
    from lastv2x.rpc.convert import spec_from_proto, spec_to_proto

    assert "variation" in json.dumps(spec_json_schema())
    spec = _spec(2)
    assert spec_from_proto(spec_to_proto(spec)) == spec
