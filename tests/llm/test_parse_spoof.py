"""Parser wording for spoofed_rsu: SPaT from a roadside unit that is not the junction's, and what it shows."""

from __future__ import annotations

import pytest

from services.llm.config import LlmConfig
from services.llm.roles import LlmRoles

ROLES = LlmRoles(config=LlmConfig())


@pytest.mark.parametrize(("text", "phase"), [
    ("Red light warning where a fake roadside unit near the junction broadcasts SPaT showing green while our "
     "light is red.", "green"),
    ("RLVW with a rogue RSU impersonating the junction's roadside unit, from 1 s before amber.", None),
    ("GLOSA while an attacker spoofs the intersection's RSU and claims red for our approach for 6 seconds.", "red"),
])
def test_a_forged_roadside_unit_is_a_spoofed_rsu(text: str, phase: str | None) -> None:
    res = ROLES.parse_intent(text, seed=3)
    (f,) = res.spec.faults
    assert f.operator.value == "spoofed_rsu" and f.stream.value == "SPAT" and f.magnitude is None
    assert f.sender is None  # the forged id defaults to one nobody has (rsu_spoof)
    assert (f.target_phase.value if f.target_phase else None) == phase


def test_a_spoofed_car_stays_a_ghost_and_a_lying_rsu_stays_a_phase_corruption() -> None:
    ghost = ROLES.parse_intent("FCW where a spoofed car is reported 40 m ahead in our lane.", seed=3)
    assert [f.operator.value for f in ghost.spec.faults] == ["ghost_sender"]
    corrupt = ROLES.parse_intent("RLVW where the roadside unit's SPaT says green while the light is red.", seed=3)
    assert [f.operator.value for f in corrupt.spec.faults] == ["spat_phase_corrupt"]


@pytest.mark.parametrize("text", [
    "RLVW where a fake roadside unit broadcasts a MAP that ties our lane to the cross street signal.",
    "RLVW where a fake roadside unit links our lane to the wrong signal group.",
    "GLOSA test: an attacker impersonates the RSU and sends forged MAP messages for the junction.",
])
def test_a_forged_roadside_unit_s_map_is_one_spoofed_rsu_on_map(text: str) -> None:
    """Its lane rewiring is the forged MAP's content, not a second fault (a map_misassociation of the real RSU);
    nothing is reported unread ("a fake roadside unit broadcasts" is a forger, not an injection no operator has)."""
    res = ROLES.parse_intent(text, seed=3)
    (f,) = res.spec.faults
    assert (f.operator.value, f.stream.value, f.target_phase) == ("spoofed_rsu", "MAP", None)
    assert not [x for x in res.findings if x.check == "parser.unparsed_fault"]
