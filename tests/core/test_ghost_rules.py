"""The verifier's ghost_sender rules: a real id, an invisible ghost, out-of-range kinematics."""

from __future__ import annotations

import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import parse_spec
from lastv2x.core.verifier import Severity, verify
from services.simulator.reference import reference_spec


def _spec(app: Application = Application.FCW, **fault: object):
    d = reference_spec(app).model_dump(mode="json")
    d["faults"] = [{"name": "ghost", "operator": "ghost_sender", "stream": "BSM", "magnitude": 40.0,
                    "anchor": {"kind": "scenario_time", "offset_s": 2.0}, "duration_s": 5.0, **fault}]
    return parse_spec(d)


def _errors(spec):
    return [f for f in verify(spec).findings if f.severity is Severity.ERROR]


def test_a_ghost_ahead_of_an_fcw_ego_is_clean() -> None:
    assert verify(_spec()).ok


def test_a_ghost_with_an_agents_id_names_the_sender_and_repairs_to_a_free_id() -> None:
    (f,) = _errors(_spec(sender="lead"))
    assert (f.check, f.fields) == ("operator_field", ("faults[0].sender",)) and "real vehicle" in f.message
    assert verify(parse_spec(apply_patch(_spec(sender="lead").model_dump(mode="json"), f.repair.patch))).ok


def test_a_ghost_behind_an_fcw_ego_is_an_error_repaired_ahead() -> None:
    (f,) = _errors(_spec(magnitude=-40.0))
    assert f.check == "semantic_corruption" and f.repair.patch == (("faults[0].magnitude", 40.0),)


def test_a_ghost_inside_the_ego_is_an_error() -> None:
    (f,) = _errors(_spec(magnitude=2.0))
    assert f.fields == ("faults[0].magnitude",)


def test_a_ghost_faster_than_the_fcw_ego_is_never_closed_on() -> None:
    (f,) = _errors(_spec(ghost_speed_mps=30.0))
    assert f.fields == ("faults[0].ghost_speed_mps",)


def test_a_stopped_ghost_is_invisible_to_ima() -> None:
    (f,) = _errors(_spec(Application.IMA, ghost_route="cross"))
    assert f.fields == ("faults[0].ghost_speed_mps",) and f.repair.patch[0][1] > 0.0


def test_a_ghost_on_the_ima_ego_s_own_route_is_repaired_onto_the_crossing_route() -> None:
    """IMA / LTA yield only to crossing traffic, never to the ego's own stream (issue 37 item 3)."""
    (f,) = _errors(_spec(Application.IMA, ghost_speed_mps=12.0))
    assert f.check == "semantic_corruption" and f.fields == ("faults[0].ghost_route",)
    assert dict(f.repair.patch) == {"faults[0].ghost_route": "cross", "faults[0].magnitude": 40.0,
                                    "faults[0].ghost_speed_mps": 12.0}
    fixed = parse_spec(apply_patch(_spec(Application.IMA, ghost_speed_mps=12.0).model_dump(mode="json"),
                                   f.repair.patch))
    assert not _errors(fixed) and fixed.faults[0].ghost_route.value == "cross"


def test_a_crossing_ghost_needs_a_crossing_route_and_a_place_before_the_conflict_point() -> None:
    (f,) = _errors(_spec(ghost_route="cross"))  # FCW watches no crossing traffic
    assert f.fields == ("faults[0].ghost_route",) and f.repair.patch == (("faults[0].ghost_route", None),)
    (g,) = _errors(_spec(Application.IMA, ghost_route="cross", magnitude=-50.0, ghost_speed_mps=12.0))
    assert g.fields == ("faults[0].magnitude",) and g.repair.patch == (("faults[0].magnitude", 50.0),)
    d = _spec().model_dump(mode="json")
    d["faults"][0].update(operator="drop", ghost_route="cross", magnitude=None)
    assert [e.fields for e in _errors(parse_spec(d))] == [("faults[0].ghost_route",)]


def test_a_crossing_phantom_is_the_conflict_so_the_real_cross_car_may_stay_away() -> None:
    d = _spec(Application.IMA, ghost_route="cross", ghost_speed_mps=12.0).model_dump(mode="json")
    d["agents"] = [{**a, "arrival_offset_s": 14.0} if a["role"] == "cross" else a for a in d["agents"]]
    assert not _errors(parse_spec(d))
    d["faults"] = []
    assert [e.check for e in _errors(parse_spec(d))] == ["timing"]


def test_out_of_range_kinematics() -> None:
    (f,) = _errors(_spec(magnitude=400.0))
    assert f.fields == ("faults[0].magnitude",) and "[-300.0, 300.0]" in f.message
    with pytest.raises(InvalidArgument) as e:
        _spec(ghost_speed_mps=45.0)
    assert e.value.violations[0].field == "faults[0].ghost_speed_mps" and "40" in e.value.violations[0].hint


def test_ghost_speed_on_another_operator_is_an_error() -> None:
    d = reference_spec(Application.FCW).model_dump(mode="json")
    d["faults"] = [{"name": "d", "operator": "delay", "stream": "BSM", "magnitude": 0.3, "ghost_speed_mps": 3.0}]
    assert any(f.fields == ("faults[0].ghost_speed_mps",) for f in _errors(parse_spec(d)))


def test_the_shrinker_moves_a_ghost_farther() -> None:
    from services.search.shrink import fault_strength, single_weakenings, spec_order

    spec = _spec()
    passes = {w.pass_name: w.spec for w in single_weakenings(spec)}
    assert "halve_magnitude" not in passes  # a closer ghost is stronger, never weaker
    farther = passes["move_farther"]
    assert farther.faults[0].magnitude == 80.0 and spec_order(farther) < spec_order(spec)
    assert fault_strength(farther.faults[0]) < fault_strength(spec.faults[0])
