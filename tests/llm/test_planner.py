"""Scene planner: roles onto retrieved approaches, only among candidate ids."""

from __future__ import annotations

import pytest

from lastv2x.core.errors import FailedPrecondition, InvalidArgument
from lastv2x.core.spec import parse_spec
from services.llm.errors import RoleFailed
from services.llm.fake_openai_server import FakeOpenAIServer, offline_model
from services.llm.planner import ApproachCandidate, solve, validate_plan
from services.llm.roles import LlmRoles
from tests.llm.conftest import approach, openai_backend

IMA = parse_spec({"application": "IMA", "seed": 3, "agents": [{"id": "cross", "role": "cross"}]})
LTA = parse_spec({"application": "LTA", "seed": 3, "ego": {"maneuver": "left"},
                  "agents": [{"id": "opposing", "role": "opposing"}]})
EEBL = parse_spec({"application": "EEBL", "seed": 3, "v2x": {"eebl_rebroadcast": True},
                   "agents": [{"id": "lead", "role": "lead", "behaviour": {"kind": "hard_brake"}},
                              {"id": "relay", "role": "relay"}]})
RLVW = parse_spec({"application": "RLVW", "seed": 3})


def by_agent(plan) -> dict[str, str]:  # noqa: ANN001
    return {a.agent_id: a.candidate_id for a in plan.assignments}


def test_ima_puts_cross_traffic_on_a_perpendicular_approach(roles: LlmRoles, four_way) -> None:  # noqa: ANN001
    plan = roles.plan_scene(IMA, four_way)
    roles_map = by_agent(plan)
    assert roles_map["ego"] == "north"  # best-scoring approach of junction j1 with a partner
    assert roles_map["cross"] in {"east", "west"}
    assert plan.backend == "offline" and plan.junction_id == "j1"


def test_lta_puts_the_opposing_vehicle_oncoming(roles: LlmRoles, four_way) -> None:  # noqa: ANN001
    plan = roles.plan_scene(LTA, four_way)
    ego = plan.for_agent("ego")
    assert ego.turn == "left" and by_agent(plan)["opposing"] == {"north": "south", "south": "north",
                                                                  "east": "west", "west": "east"}[ego.candidate_id]


def test_lead_and_relay_share_the_ego_lane(roles: LlmRoles, four_way) -> None:  # noqa: ANN001
    plan = roles.plan_scene(EEBL, four_way)
    ego, lead, relay = plan.for_agent("ego"), plan.for_agent("lead"), plan.for_agent("relay")
    assert ego.candidate_id == lead.candidate_id == relay.candidate_id == "far"  # no partner needed: best score
    assert ego.lane_id == lead.lane_id == relay.lane_id


def test_signal_apps_need_a_signalized_ego_movement(roles: LlmRoles) -> None:
    cands = (approach("a", 0.0, signal=False, score=0.9), approach("b", 90.0, score=0.5))
    assert roles.plan_scene(RLVW, cands).for_agent("ego").candidate_id == "b"
    with pytest.raises(FailedPrecondition) as err:
        roles.plan_scene(RLVW, cands[:1])
    assert "signalized" in str(err.value)


def test_infeasible_roles_name_the_constraint(roles: LlmRoles) -> None:
    straight_only = (approach("a", 0.0, ("straight",)), approach("b", 180.0, ("straight",)))
    with pytest.raises(FailedPrecondition) as err:
        roles.plan_scene(LTA, straight_only)
    assert "left" in err.value.constraint and "retrieved turns" in err.value.alternative


def test_validate_rejects_ids_outside_the_candidates(four_way) -> None:  # noqa: ANN001
    data = {"assignments": [{"agent_id": "ego", "candidate_id": "north"},
                            {"agent_id": "cross", "candidate_id": "invented_approach_7"}]}
    with pytest.raises(InvalidArgument) as err:
        validate_plan(data, IMA, four_way, "x")
    v = err.value.violations[0]
    assert v.field == "assignments[1].candidate_id" and "not a retrieved candidate" in v.description


@pytest.mark.parametrize(("rows", "field", "words"), [
    ([{"agent_id": "ego", "candidate_id": "north"}, {"agent_id": "cross", "candidate_id": "south"}],
     "assignments[1].candidate_id", "not perpendicular"),
    ([{"agent_id": "ego", "candidate_id": "north"}, {"agent_id": "cross", "candidate_id": "east"},
      {"agent_id": "ghost", "candidate_id": "east"}], "assignments[2].agent_id", "not the ego"),
    ([{"agent_id": "ego", "candidate_id": "north"}], "assignments", "'cross' has no approach"),
    ([{"agent_id": "ego", "candidate_id": "north", "lane_id": "east.lane1"},
      {"agent_id": "cross", "candidate_id": "east"}], "assignments[0].lane_id", "not on north"),
    ([{"agent_id": "ego", "candidate_id": "north"}, {"agent_id": "cross", "candidate_id": "far"}],
     "assignments[1].candidate_id", "another junction"),
])
def test_validate_rejects_bad_geometry(four_way, rows, field: str, words: str) -> None:  # noqa: ANN001
    with pytest.raises(InvalidArgument) as err:
        validate_plan({"assignments": rows}, IMA, four_way, "x")
    assert any(v.field == field and words in v.description for v in err.value.violations), err.value.violations


def test_candidates_are_validated(roles: LlmRoles) -> None:
    with pytest.raises(InvalidArgument):
        roles.plan_scene(IMA, [])
    dup = (approach("a", 0.0), approach("a", 90.0))
    with pytest.raises(InvalidArgument) as err:
        roles.plan_scene(IMA, dup)
    assert "duplicate" in err.value.violations[0].description


def test_ties_are_broken_by_the_seed(four_way) -> None:  # noqa: ANN001
    flat = tuple(ApproachCandidate(**{**c.__dict__, "score": 1.0}) for c in four_way[:4])
    first = {solve(IMA, flat)["assignments"][0]["candidate_id"] for _ in range(3)}
    assert len(first) == 1  # deterministic for one seed
    chosen = {solve(IMA.model_copy(update={"seed": s}), flat)["assignments"][0]["candidate_id"] for s in range(20)}
    assert len(chosen) > 1  # ... and the seed decides between equals


def test_llm_plan_with_an_invented_id_is_rejected(fake_server: FakeOpenAIServer, four_way) -> None:  # noqa: ANN001
    bad = {"assignments": [{"agent_id": "ego", "candidate_id": "north", "lane_id": "north.lane1"},
                           {"agent_id": "cross", "candidate_id": "made_up", "lane_id": "x"}], "rationale": "r"}
    fake_server.enqueue(bad, bad)
    roles = LlmRoles(openai_backend(fake_server))
    with pytest.raises(RoleFailed) as err:
        roles.plan_scene(IMA, four_way)
    assert "made_up" in str(err.value.problems)
    body = fake_server.requests[0]
    schema = body["response_format"]["json_schema"]["schema"]
    ids = schema["properties"]["assignments"]["items"]["properties"]["candidate_id"]["enum"]
    assert sorted(ids) == sorted(c.candidate_id for c in four_way)  # structured output can only pick these
    assert "not a retrieved candidate" in fake_server.requests[1]["messages"][0]["content"]  # fed back


def test_llm_plan_repaired_on_the_second_try(four_way) -> None:  # noqa: ANN001
    with FakeOpenAIServer(offline_model) as server:
        server.enqueue({"assignments": [{"agent_id": "ego", "candidate_id": "nope", "lane_id": "x"}],
                        "rationale": ""})
        plan = LlmRoles(openai_backend(server)).plan_scene(IMA, four_way)
    assert plan.backend == "openai:fake-gpt" and by_agent(plan) == by_agent(LlmRoles().plan_scene(IMA, four_way))


def test_movement_wire_form() -> None:
    from services.llm.planner import MovementOption

    m = MovementOption.parse("left:j1.sg2")
    assert (m.turn, m.signal_group, str(m)) == ("left", "j1.sg2", "left:j1.sg2")
    assert MovementOption.parse("Straight").signal_group is None
