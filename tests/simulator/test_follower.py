"""A follower behind the ego (issue 37 item 3): the rear-end an unwarranted warning causes. FCW/EEBL count a
vehicle behind striking the ego within REAR_STRIKE_WINDOW_S of its braking on the application's warning, so a
phantom vehicle (``ghost_sender``) that makes the ego brake is admitted when someone follows it; the
ground-truth twin never brakes for it."""

from __future__ import annotations

import pytest

from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.perception import INATTENTIVE_REACTION_S
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.core.verifier import Severity, verify
from services.simulator.paired import execute_paired
from services.simulator.v2x.stack import v2x_source_factory

GHOST = {"name": "ghost", "operator": "ghost_sender", "stream": "BSM", "magnitude": 40.0,
         "anchor": {"offset_s": 3.0}}


def _fcw(*faults: dict, follower_gap_m: float | None = 12.0, lead: dict | None = None, app: str = "FCW") -> dict:
    agents = [lead or {"id": "lead", "role": "lead", "gap_m": 90.0}]
    if follower_gap_m is not None:
        agents.append({"id": "tail", "role": "follower", "gap_m": follower_gap_m})
    return {"application": app, "duration_s": 15.0, "agents": agents, "faults": list(faults)}


def _run(spec: dict):
    return execute_paired(program_from_spec_on_straight_roads(parse_spec(spec)), 0, v2x_source_factory())


def test_the_follower_is_placed_behind_the_ego_on_its_route_as_an_inattentive_driver():
    p = program_from_spec_on_straight_roads(parse_spec({**_fcw(), "ego": {"maneuver": "straight"}}))
    tail = next(v for v in p.agents if v.id == "tail")
    assert tail.role.value == "follower" and tail.route == p.ego.route
    assert p.ego.start_s_m - tail.start_s_m == pytest.approx(12.0)
    assert tail.reaction_time_s == INATTENTIVE_REACTION_S


def test_a_phantom_brake_is_a_rear_end_the_twin_never_has():
    out = _run(_fcw(GHOST))
    assert out.admitted and out.md.collision is not None and out.md.collision.other_id == "tail"
    assert not out.gt.failed and out.gt.collision is None
    assert out.monitor.extra["failure_class"] == "fresh_but_wrong"
    braked = [r.t_s for r in out.md.decisions if r.action == "brake"]
    assert braked and braked[0] < out.md.collision.t_s  # the ego braked for the phantom first


def test_without_a_follower_or_without_a_phantom_nothing_fails():
    alone = _run(_fcw(GHOST, follower_gap_m=None))
    assert not alone.md.failed and not alone.admitted  # a phantom brake with nobody behind harms nobody
    healthy = _run(_fcw())
    assert not healthy.md.failed and not healthy.gt.failed


def test_a_follower_counts_only_for_the_applications_that_brake_on_warnings():
    findings = verify(parse_spec({"application": "RLVW", "agents": [{"id": "tail", "role": "follower"}]})).findings
    warn = [f for f in findings if f.fields == ("agents[0].role",)]
    assert warn and warn[0].severity is Severity.WARNING and warn[0].repair.patch == (("agents[0].role", "background"),)
    braking = verify(parse_spec(_fcw(lead={"id": "lead", "role": "lead", "gap_m": 30.0,
                                           "behaviour": {"kind": "hard_brake", "at_time_s": 3.0}}))).findings
    assert any("ground-truth twin" in f.message for f in braking)  # a real hazard: the twin is struck too
    assert not [f for f in verify(parse_spec(_fcw(GHOST))).findings if f.severity is Severity.ERROR]


def test_a_follower_far_behind_is_placed_exactly_or_refused_with_a_repair(builtin_grounder_or_skip):
    for gap in (150.0, 300.0):
        spec = parse_spec({**_fcw(GHOST, follower_gap_m=gap), "ego": {"start_distance_m": 900.0}})
        try:
            p = builtin_grounder_or_skip.ground(spec)
        except FailedPrecondition as exc:
            assert "gap_m" in str(exc) or "start_distance_m" in str(exc)
            assert exc.alternative
            continue
        tail = next(v for v in p.agents if v.id == "tail")
        assert p.ego.start_s_m - tail.start_s_m == pytest.approx(gap) and tail.start_s_m > 0.0


def test_grounded_follower_is_on_the_ego_route_and_the_phantom_is_admitted(builtin_grounder_or_skip):
    p = builtin_grounder_or_skip.ground(parse_spec(_fcw(GHOST)))
    tail = next(v for v in p.agents if v.id == "tail")
    assert tail.route == p.ego.route and p.ego.start_s_m - tail.start_s_m == pytest.approx(12.0)
    out = execute_paired(p, 0, v2x_source_factory())
    assert out.admitted and out.md.collision.other_id == "tail"


@pytest.fixture(scope="module")
def builtin_grounder_or_skip(tmp_path_factory):
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue
    from services.grounding.ground import Grounder
    from services.grounding.index import RetrievalIndex

    cat = MapCatalogue(CatalogueConfig(cache_dir=tmp_path_factory.mktemp("c"), map_cache_dir=tmp_path_factory.mktemp("m")))
    return Grounder(cat, RetrievalIndex(cat))


EEBL_GHOST = {**GHOST, "name": "forged_brake", "stream": "EEBL"}


def test_an_eebl_phantom_announces_a_hard_brake_that_only_the_message_driven_ego_brakes_for():
    """A ghost_sender on EEBL forges a hard-braking vehicle (its BSMs flagged, each with a hop-0 EEBL record): no
    braking lead is needed (the verifier's roster rule), the EEBL ego brakes for the forged event and its follower
    strikes it; the twin hears no event. Without a follower the same forged brake harms nobody."""
    spec = _fcw(EEBL_GHOST, app="EEBL", lead={"id": "lead", "role": "lead", "gap_m": 90.0})
    assert not [f for f in verify(parse_spec(spec)).findings if f.severity is Severity.ERROR]
    out = _run(spec)
    braked = [r for r in out.md.decisions if r.action == "brake"]
    assert braked and braked[0].reason == "hard-braking event ahead" and braked[0].t_s >= 3.0  # the window opens
    assert out.admitted and out.md.collision is not None and out.md.collision.other_id == "tail"
    assert not any(r.action == "brake" for r in out.gt.decisions) and not out.gt.failed
    alone = _run(_fcw(EEBL_GHOST, app="EEBL", follower_gap_m=None))
    assert any(r.action == "brake" for r in alone.md.decisions) and not alone.admitted
    on_bsm = verify(parse_spec(_fcw(GHOST, app="EEBL"))).findings  # a ghost on BSM: EEBL never reads it
    assert any(f.check == "stream_consumption" and f.severity is Severity.ERROR for f in on_bsm)


def test_a_phantom_with_nobody_behind_is_said_up_front_and_a_campaign_adds_the_tailgater():
    """The verifier says what the search used to find only after stalling (fresh33's f33_010, 145 runs): a phantom's
    needless brake fails only by a rear strike, so with nobody behind the ego no run can fail. A WARNING whose repair
    adds a tailgater at the ego's speed; a campaign applies it as an observability repair, and the repaired scene
    admits."""
    from lastv2x.core.perception import TAILGATER_GAP_M
    from lastv2x.core.verifier import PHANTOM_FOLLOWER
    from services.search.repairs import observability_repairs

    alone = parse_spec(_fcw(GHOST, follower_gap_m=None))
    (finding,) = [f for f in verify(alone).findings if f.check == PHANTOM_FOLLOWER]
    assert finding.severity is Severity.WARNING and "nobody follows the ego" in finding.message
    assert finding.repair.patch == (("agents[+]", {"id": "follower", "role": "follower", "gap_m": TAILGATER_GAP_M,
                                                   "speed_mps": alone.ego.speed_mps}),)
    for spec in (_fcw(GHOST), _fcw(follower_gap_m=None), _fcw(EEBL_GHOST, app="EEBL")):  # a follower, or no phantom
        assert not [f for f in verify(parse_spec(spec)).findings if f.check == PHANTOM_FOLLOWER]
    assert [f.check for f in verify(parse_spec(_fcw(EEBL_GHOST, app="EEBL", follower_gap_m=None))).findings
            if f.check == PHANTOM_FOLLOWER] == [PHANTOM_FOLLOWER]
    repaired, (record,) = observability_repairs(alone)
    assert record["applied"] and record["check"] == PHANTOM_FOLLOWER and record["patch"][0]["from"] is None
    assert [a.role.value for a in repaired.agents] == ["lead", "follower"]
    assert not _run(alone.model_dump(mode="json")).admitted
    out = _run(repaired.model_dump(mode="json"))
    assert out.admitted and out.md.collision.other_id == "follower"
    # a given spec is the user's own: reported, not applied
    kept, (given,) = observability_repairs(alone, frozenset({"*"}))
    assert kept == alone and not given["applied"]
