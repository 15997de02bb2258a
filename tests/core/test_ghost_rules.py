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
    (f,) = _errors(_spec(Application.IMA))
    assert f.fields == ("faults[0].ghost_speed_mps",) and f.repair.patch[0][1] > 0.0


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
