"""Agents that run applications (issue 17, item 4): an equipped agent with an ``application`` runs
that reference application on its own information (its own V2X source in the message-driven
rollout, ground truth in the twin); admission still judges the ego's pair."""

from __future__ import annotations

import json

import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.program import program_sha256
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import (
    Agent,
    Behaviour,
    BehaviourKind,
    Bounds,
    MapQuery,
    ScenarioSpec,
    Variation,
    parse_spec,
    spec_to_dict,
)
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.core.verifier import verify
from services.simulator.paired import agent_view, execute_batch, execute_paired
from services.simulator.v2x.stack import v2x_source_factory


def _ima(seed: int, **agent: object) -> ScenarioSpec:
    return ScenarioSpec(application=Application.IMA, seed=seed, duration_s=25.0, map=MapQuery(signalized=False),
                        variation=Variation(arrival_jitter_s=Bounds(min=-1.0, max=1.0)),
                        agents=(Agent(id="cross", role="cross", arrival_offset_s=0.0, **agent),))


def test_two_ima_applications_both_yield() -> None:
    """Mutual yield: the cross agent runs IMA on its own V2X information, the ego runs IMA: both decide
    to yield to the other, and they pass without contact."""
    prog = program_from_spec_on_straight_roads(_ima(0, application=Application.IMA))
    assert prog.agents[0].application is Application.IMA
    out = execute_paired(prog, md_source_factory=v2x_source_factory())
    for ro in (out.md, out.gt):
        agent = dict(ro.agent_decisions)["cross"]
        assert "yield" in [d.action for d in ro.decisions] and "yield" in [d.action for d in agent]
        assert all(d.app == "IMA" for d in agent)
        assert ro.collision is None and ro.min_agent_distance_m > 5.0
    assert '"agent_decisions"' in out.to_json_bytes().decode()


def test_an_agent_that_does_not_hear_the_ego_does_not_yield() -> None:
    """The same agent application with the ego's BSMs suppressed in its world (the ego unequipped):
    its own V2X source hears nothing, it never yields; its ground-truth twin does."""
    spec = _ima(2, application=Application.IMA).model_copy(
        update={"ego": _ima(2).ego.model_copy(update={"equipped": False})})
    out = execute_paired(program_from_spec_on_straight_roads(spec), md_source_factory=v2x_source_factory())
    assert "yield" not in [d.action for d in dict(out.md.agent_decisions)["cross"]]
    assert "yield" in [d.action for d in dict(out.gt.agent_decisions)["cross"]]


def test_without_agent_applications_programs_and_outcomes_keep_their_bytes() -> None:
    spec = _ima(1, behaviour=Behaviour(kind=BehaviourKind.YIELD))
    assert "application" not in json.dumps(spec_to_dict(spec)["agents"])
    prog = program_from_spec_on_straight_roads(spec)
    assert all("application" not in v.model_dump_json() for v in prog.vehicles)
    assert program_sha256(prog) == program_sha256(program_from_spec_on_straight_roads(parse_spec(
        spec_to_dict(spec))))
    assert '"agent_decisions"' not in execute_paired(prog).to_json_bytes().decode()


def test_the_agent_view_makes_the_agent_the_receiver() -> None:
    prog = program_from_spec_on_straight_roads(_ima(0, application=Application.IMA))
    view = agent_view(prog, "cross")
    assert view.ego.id == "cross" and view.application is Application.IMA and view.faults == ()
    assert [a.id for a in view.agents] == ["ego"] and view.agents[0].role.value == "cross"


def test_batches_with_agent_applications_run_on_the_numpy_engine() -> None:
    progs = [program_from_spec_on_straight_roads(_ima(s, application=Application.IMA)) for s in (0, 1)]
    batch = execute_batch(progs)
    assert [o.to_json_bytes() for o in batch] == [execute_paired(p).to_json_bytes() for p in progs]


@pytest.mark.parametrize("agent", [{"application": Application.IMA, "equipped": False}])
def test_an_unequipped_agent_asked_to_run_an_application_is_a_verifier_error(agent: dict) -> None:
    spec = _ima(0, **agent)
    bad = [f for f in verify(spec).findings if "agents[0].application" in f.fields]
    assert len(bad) == 1 and bad[0].severity.value == "error"
    assert bad[0].repair is not None and bad[0].repair.patch == (("agents[0].equipped", True),)
    fixed = parse_spec(apply_patch(spec_to_dict(spec), bad[0].repair.patch))
    assert not [f for f in verify(fixed).findings if "agents[0].application" in f.fields]
    assert program_from_spec_on_straight_roads(spec).agents[0].application is None  # the builder runs none
