"""Grounding raises nothing but its typed errors, whatever the search's mutator draws (issue 42).

A campaign crashed on ``KeyError: 'cross'``: the built-in planner checked a partial role assignment
(the ego and its first agent) with the check for a whole one. ``make mutant-fuzz`` runs the same
sweep at 10,000 mutants; here a seeded sample keeps the suite fast.
"""

from __future__ import annotations

import pytest

from lastv2x.core.spec import parse_spec
from lastv2x_app.mutant_fuzz import EXTRA_ROLES, base_specs, builtin_grounders, sweep
from services.grounding.ground import Grounder
from services.grounding.index import RetrievalIndex
from services.grounding.planning import BuiltinPlanner, parse_assignments
from services.grounding.selection import EGO, PlanRejected, validate_selection


@pytest.fixture(scope="module")
def grounders(tmp_path_factory):
    return builtin_grounders(tmp_path_factory.mktemp("mutant-sweep"))


def test_mutants_of_every_reference_scene_meet_only_typed_errors(grounders):
    ground, simulate = grounders
    report = sweep(600, seed=42, grounders=ground, simulate=simulate)
    assert report.mutants == 600
    assert not report.crashes, "\n".join(report.lines())
    # the sweep reaches every stage: grounding on both planners and the simulator's validation
    assert report.passed["ground (built-in planner)"] > 100 and report.passed["simulator"] > 200
    assert sum(report.typed.values()) > 0  # and sees typed refusals (IMA has no unsignalized 4-way built in)


def test_base_specs_cover_every_application_map_and_extra_role():
    from lastv2x.core.catalogue import Application
    from services.simulator.maps.builtin import builtin_map_names

    specs = base_specs()
    assert {s.application for s in specs} == set(Application)
    assert {s.map.town for s in specs} >= {None, *builtin_map_names()}
    assert {a.id for s in specs for a in s.agents} >= {a["id"] for a in EXTRA_ROLES.values()}


def _lta_with_cross():
    return parse_spec({"application": "LTA", "ego": {"maneuver": "left"}, "map": {"town": "signalized_4way"},
                       "agents": [{"id": "opposing", "role": "opposing", "arrival_offset_s": 0.5},
                                  {"id": "cross", "role": "cross", "arrival_offset_s": 0.5}]})


def test_builtin_planner_places_two_agents(builtin_catalogue):
    """The issue's path: LTA with an opposing and a cross vehicle through the built-in planner."""
    spec = _lta_with_cross()
    index = RetrievalIndex(builtin_catalogue)
    cands = Grounder(builtin_catalogue, index).retrieve(spec)
    out = BuiltinPlanner(cands, builtin_catalogue)(spec, ())
    assignment = parse_assignments(out, spec, {h.id for h in cands.hits})
    assert set(assignment) == {EGO, "opposing", "cross"}
    selection = validate_selection(spec, assignment, cands, builtin_catalogue)
    assert set(selection.picks) == {EGO, "opposing", "cross"}


def test_a_missing_or_unknown_assignment_is_a_rejection_naming_the_role(builtin_catalogue):
    spec = _lta_with_cross()
    cands = Grounder(builtin_catalogue, RetrievalIndex(builtin_catalogue)).retrieve(spec)
    ego = next(h for h in cands.hits if h.meta.get("ego_eligible"))
    with pytest.raises(PlanRejected) as missing:
        validate_selection(spec, {EGO: (ego.id, None), "opposing": (ego.id, None)}, cands, builtin_catalogue)
    assert list(missing.value.reasons) == ["cross (cross): no assignment"]
    with pytest.raises(PlanRejected) as unknown:
        validate_selection(spec, {EGO: (ego.id, None), "opposing": ("nope", None), "cross": (ego.id, None)},
                           cands, builtin_catalogue)
    assert list(unknown.value.reasons) == ["opposing: 'nope' is not a retrieved candidate"]
    with pytest.raises(PlanRejected, match="ego: no assignment"):
        validate_selection(spec, {}, cands, builtin_catalogue)
