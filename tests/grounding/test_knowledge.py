"""Knowledge base: data files that cannot disagree with the core catalogue or the simulator."""

from __future__ import annotations

import json
from importlib import resources

from lastv2x.core.catalogue import (
    APPLICATIONS,
    FAULT_OPERATORS,
    STREAMS,
    Application,
    FailureClass,
    Stream,
)
from lastv2x.core.spec import DriverProfile
from services.grounding.knowledge import load_knowledge


def test_application_notes_take_their_figures_from_the_catalogue():
    kb = load_knowledge()
    for app in Application:
        note = kb.get(f"app:{app.value}")
        info = APPLICATIONS[app]
        assert note.facts["freshness_budget_s"] == info.freshness_budget_s
        assert note.facts["consumes"] == {s.value: list(f) for s, f in info.consumes.items()}
        assert note.facts["decision_rule"] == info.decision_rule
        assert f"Freshness budget {info.freshness_budget_s} s" in note.text
        assert note.sources


def test_data_files_hold_no_catalogue_figures():
    """Budgets, consumed streams and decision rules live only in lastv2x.core.catalogue."""
    pkg = resources.files("services.grounding.knowledge")
    apps = json.loads(pkg.joinpath("applications.v1.json").read_text())
    for a in apps["applications"]:
        assert not {"freshness_budget_s", "consumes", "decision_rule", "violation"} & set(a)
    faults = json.loads(pkg.joinpath("faults.v1.json").read_text())
    for o in faults["operators"]:
        assert not {"kind", "failure_class", "streams", "magnitude_range"} & set(o)


def test_every_operator_family_message_and_profile_has_a_note():
    kb = load_knowledge()
    ids = {n.id for n in kb.notes}
    assert {f"fault:{o}" for o in FAULT_OPERATORS} <= ids
    assert {f"family:{c.value}" for c in FailureClass} <= ids
    assert {f"msg:{s.value}" for s in Stream} <= ids
    assert {f"profile:{p.value}" for p in DriverProfile} <= ids
    for s in Stream:
        note = kb.get(f"msg:{s.value}")
        assert note.facts["period_s"] == STREAMS[s].period_s and note.facts["j2735_fields"] and note.sources
    for o in FAULT_OPERATORS:
        info = FAULT_OPERATORS[o]
        note = kb.get(f"fault:{o}")
        assert note.facts["failure_class"] == info.failure_class.value and note.facts["anchor"]


def test_behaviour_profiles_equal_the_simulators_idm_parameters():
    from services.simulator.traffic import IDM

    kb = load_knowledge()
    for profile, params in IDM.PROFILES.items():
        mine = kb.profiles[profile.value]
        assert (mine.desired_speed_factor, mine.time_gap_s, mine.min_gap_m, mine.accel_max_mps2,
                mine.decel_comfort_mps2, mine.reaction_time_s, mine.decel_emergency_mps2) == (
            params.desired_speed_factor, params.time_gap_s, params.min_gap_m, params.accel_max_mps2,
            params.decel_comfort_mps2, params.reaction_time_s, params.decel_emergency_mps2)
    assert kb.get("profile:normal").sources


def test_a_note_needs_no_prose_but_prose_needs_a_registered_name():
    """Each registered operator and application has a note built from its catalogue entry alone; prose for a
    name the catalogue does not register is refused."""
    import pytest

    from services.grounding import knowledge

    pkg = resources.files("services.grounding.knowledge")
    faults = json.loads(pkg.joinpath("faults.v1.json").read_text())
    notes = {n.id: n for n in knowledge._faults({**faults, "operators": []})}
    for o, info in ((o, FAULT_OPERATORS[o]) for o in FAULT_OPERATORS):
        assert info.description in notes[f"fault:{o}"].text and "anchor" not in notes[f"fault:{o}"].facts
    apps = {n.id: n for n in knowledge._apps({"applications": []})}
    assert {f"app:{a.value}" for a in Application} == set(apps)
    assert all(APPLICATIONS[a].decision_rule in apps[f"app:{a.value}"].text for a in Application)
    with pytest.raises(ValueError, match="does not register"):
        knowledge._faults({**faults, "operators": [{"id": "no_such_operator"}]})
