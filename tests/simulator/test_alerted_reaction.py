"""Warnings act through the driver (issue 37 item 1): a STOP, BRAKE or YIELD is acted on after the driver's
alerted reaction (``ProgramVehicle.alerted_reaction_s``, default ``REACTION_TIME_S``), and FCW times its warning
for a driver who reacts."""

from __future__ import annotations

import math

import pytest

from lastv2x.core.catalogue import REACTION_TIME_S, Application
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.apps.base import Action, Decision
from services.simulator.apps.conflict import fcw_required_decel_mps2
from services.simulator.controller import EgoController
from services.simulator.paired import execute_paired
from services.simulator.v2x.stack import v2x_source_factory


def _dec(action: Action, t_s: float, brake: float = 6.0) -> Decision:
    return Decision(Application.FCW, action, t_s, "test", brake_mps2=brake if action is Action.BRAKE else 0.0)


def test_a_brake_warning_is_acted_on_after_the_reaction_and_while_it_stands():
    c = EgoController()
    assert c.reaction_s == REACTION_TIME_S
    assert c.command(_dec(Action.BRAKE, 2.0), 2.0) == (False, pytest.approx(math.nan, nan_ok=True), 0.0)
    assert c.waiting
    assert c.command(_dec(Action.BRAKE, 2.5), 2.5)[2] == 0.0  # the warning stands since 2.0: not yet
    assert c.command(_dec(Action.BRAKE, 3.0), 3.0)[2] == 6.0  # 2.0 + 1 s: the driver brakes
    assert not c.waiting
    assert c.command(_dec(Action.PROCEED, 3.1), 3.1)[2] == 0.0
    assert c.command(_dec(Action.BRAKE, 3.2), 3.2)[2] == 0.0  # a new warning: a new reaction


def test_a_warning_withdrawn_before_the_reaction_is_never_acted_on():
    c = EgoController(0.8)
    for t in (1.0, 1.3, 1.6):
        assert c.command(_dec(Action.YIELD, t), t)[0] is False
    assert c.command(_dec(Action.PROCEED, 1.7), 1.7)[0] is False
    assert c.command(_dec(Action.YIELD, 2.0), 2.0)[0] is False  # since 2.0, not 1.0
    assert c.command(_dec(Action.YIELD, 2.8), 2.8)[0] is True


def test_zero_reaction_is_the_application_acting_directly():
    c = EgoController(0.0)
    assert c.command(_dec(Action.BRAKE, 4.0), 4.0)[2] == 6.0
    assert c.command(_dec(Action.STOP, 4.1), 4.1)[0] is True
    assert not c.waiting


def test_the_deceleration_fcw_asks_after_the_reaction():
    # a lead braking to a stop: room = gap - 2 m + its stopping distance, less what the ego drives while reacting
    assert fcw_required_decel_mps2(25.0, 15.0, 15.0, -6.0, 1.0) == pytest.approx(15 ** 2 / (2 * (23 + 18.75 - 15)))
    # a lead that keeps its speed: the ego sheds the closing speed
    assert fcw_required_decel_mps2(20.0, 15.0, 10.0, 0.0, 1.0) == pytest.approx(25 / (2 * (18 - 5)))
    assert fcw_required_decel_mps2(20.0, 10.0, 15.0, 0.0, 1.0) == 0.0  # opening
    assert fcw_required_decel_mps2(5.0, 15.0, 0.0, 0.0, 1.0) == math.inf  # no braking can
    # the reaction is what makes it urgent
    assert fcw_required_decel_mps2(25.0, 15.0, 15.0, -6.0, 0.0) < fcw_required_decel_mps2(25.0, 15.0, 15.0, -6.0, 1.0)


def _fcw(alerted_reaction_s: float | None, *faults: dict):
    p = program_from_spec_on_straight_roads(parse_spec({
        "application": "FCW", "duration_s": 12.0, "ego": {"speed_mps": 15.0},
        "agents": [{"id": "lead", "role": "lead", "gap_m": 25.0, "speed_mps": 15.0,
                    "behaviour": {"kind": "hard_brake", "at_time_s": 3.0, "decel_mps2": 8.0}}],
        "faults": list(faults)}))
    if alerted_reaction_s is None:
        return p
    return p.model_copy(update={"ego": p.ego.model_copy(update={"alerted_reaction_s": alerted_reaction_s})})


LATE_BSM = {"name": "late", "operator": "delay", "stream": "BSM", "magnitude": 0.3, "anchor": {"offset_s": 1.0}}


def test_a_late_warning_is_a_rear_end_for_a_driver_who_reacts_and_not_for_an_automatic_brake():
    slow = execute_paired(_fcw(1.5, LATE_BSM), 0, v2x_source_factory())
    assert slow.admitted and slow.md.collision is not None and not slow.gt.failed  # the twin, warned on time, stops
    automatic = execute_paired(_fcw(0.0, LATE_BSM), 0, v2x_source_factory())
    assert not automatic.md.failed and not automatic.admitted  # 0.3 s is absorbed when nobody has to react
    for rt in (None, 0.0, 1.5):
        healthy = execute_paired(_fcw(rt), 0, v2x_source_factory())
        assert not healthy.md.failed and not healthy.gt.failed and not healthy.admitted


def test_the_first_brake_waits_the_reaction_in_the_trace_of_decisions():
    out = execute_paired(_fcw(None), 0, v2x_source_factory())
    brake = next(r for r in out.md.decisions if r.action == "brake")
    assert 3.0 < brake.t_s < 3.5  # warned right after the lead's hard brake at 3 s


def test_variation_draws_the_alerted_reaction_per_vehicle_and_bad_bounds_name_the_field():
    spec = {"application": "FCW", "agents": [{"id": "lead", "role": "lead", "gap_m": 25.0}],
            "variation": {"alerted_reaction_s": {"min": 0.7, "max": 1.5}}}
    drawn = {program_from_spec_on_straight_roads(parse_spec({**spec, "seed": s})).ego.alerted_reaction_s
             for s in range(6)}
    assert len(drawn) == 6 and all(0.7 <= r <= 1.5 for r in drawn)
    plain = program_from_spec_on_straight_roads(parse_spec({k: v for k, v in spec.items() if k != "variation"}))
    assert plain.ego.alerted_reaction_s is None and "alerted_reaction_s" not in plain.model_dump_json()
    with pytest.raises(InvalidArgument) as exc:
        program_from_spec_on_straight_roads(parse_spec({**spec, "variation": {"alerted_reaction_s": {"min": 0.5,
                                                                                                      "max": 4.0}}}))
    v = exc.value.violations[0]
    assert v.field == "variation.alerted_reaction_s.max" and "[0, 3]" in v.description and v.hint


@pytest.mark.parametrize("seed", [2, 9])
def test_a_mutual_yield_is_broken_by_priority_to_the_right(seed):
    """Both equipped with IMA, arriving together: both yield and slow at their bars. Without a tie-break each
    sees the other held, both go, and the renewed warning comes too late for a driver to react (a contact on
    these seeds); with priority to the right the ego goes first (the cross vehicle comes from its left)."""
    from lastv2x_app.experiments.ima_yield import spec_for

    out = execute_paired(program_from_spec_on_straight_roads(spec_for("both equipped", seed)), seed,
                         v2x_source_factory())
    assert out.md.collision is None and out.md.min_agent_distance_m > 10.0
    ego_go = [r.t_s for r in out.md.decisions if r.action == "proceed" and r.t_s > 0.0]
    (_cross, cross_records), = out.md.agent_decisions
    cross_go = [r.t_s for r in cross_records if r.action == "proceed" and r.t_s > 0.0]
    assert cross_go and ego_go and ego_go[0] < cross_go[0]
    assert [r.action for r in cross_records if 0.0 < r.t_s < cross_go[0]] == ["yield"]  # it waits throughout
