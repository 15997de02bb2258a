"""Parser wording for ghost_sender: a vehicle that does not exist, and where it is."""

from __future__ import annotations

import pytest

from services.llm.config import LlmConfig
from services.llm.roles import LlmRoles

ROLES = LlmRoles(config=LlmConfig())


@pytest.mark.parametrize(("text", "magnitude"), [
    ("FCW where a ghost car is reported 35 m ahead in our lane for 4 s.", 35.0),
    ("Forward collision warning with a Sybil attacker faking a stopped vehicle that doesn't exist, 25 m ahead.", 25.0),
    ("FCW while someone broadcasts a fictitious truck parked 60 m in front of the ego.", 60.0),
])
def test_a_forged_vehicle_is_a_ghost_sender(text: str, magnitude: float) -> None:
    res = ROLES.parse_intent(text, seed=3)
    (f,) = res.spec.faults
    assert f.operator.value == "ghost_sender" and f.stream.value == "BSM" and f.magnitude == magnitude
    assert all(a.gap_m != magnitude for a in res.spec.agents)  # the distance places the ghost, not the lead


def test_fake_braking_alerts_stay_unsupported() -> None:
    res = ROLES.parse_intent("Emergency brake warning where a stranger's car spoofs fake braking alerts.", seed=3)
    assert not any(f.operator.value == "ghost_sender" for f in res.spec.faults)
