"""The offline grammar reads replay wording (a captured message played back later, its timestamps kept) into
the ``replay`` operator with its lag; a message held and repeated stays a freeze."""

from __future__ import annotations

import pytest

from lastv2x.core.catalogue import APPLICATIONS, Application, Stream
from lastv2x.core.tolerance import default_magnitude
from services.llm.config import LlmConfig
from services.llm.roles import LlmRoles

ROLES = LlmRoles(config=LlmConfig())


def _faults(text: str) -> list[tuple[str, str, float | None]]:
    parsed = ROLES.parse_intent(text, seed=3)
    return [(f.operator.value, f.stream.value, f.magnitude) for f in parsed.spec.faults]


@pytest.mark.parametrize(("text", "want"), [
    ("Red light warning, but an attacker records the SPaT and plays it back 2 s later.", ("replay", "SPAT", 2.0)),
    ("Forward collision warning while a captured BSM from the car ahead is re-sent 1.5 s later.",
     ("replay", "BSM", 1.5)),
    ("Check RLVW when the junction's SPaT is replayed from 3 seconds ago just before amber.", ("replay", "SPAT", 3.0)),
    ("FCW: somebody re-broadcasts old BSMs of the lead vehicle, with their original timestamps, 0.8 s behind.",
     ("replay", "BSM", 0.8)),
    ("Left turn assist when the oncoming car's messages are recorded and sent again 600 ms afterwards.",
     ("replay", "BSM", 0.6)),
])
def test_replay_wording_becomes_a_replay_with_its_lag(text: str, want: tuple[str, str, float]) -> None:
    assert _faults(text) == [want]


@pytest.mark.parametrize(("text", "want"), [
    # fresh21's f21_016: the nearer quantity is when the replayed messages were sent, the age is said as one
    ("eebl test, lead car hard brakes at twenty seconds and starting at thirty seconds in replay the eebl messages "
     "it sent back at twenty seconds with their original timestamps so like ten seconds stale", ("replay", "EEBL", 10.0)),
    ("FCW: from 12 s, the lead's BSMs are stamped as of t = 5 s, i.e. 7 s old.", ("timestamp_offset", "BSM", 7.0)),
])
def test_an_age_said_as_one_is_the_magnitude(text: str, want: tuple[str, str, float]) -> None:
    assert _faults(text) == [want]


def test_a_replay_without_a_lag_gets_the_applications_budget() -> None:
    (fault,) = _faults("Red-light violation warning under a replay attack on the SPaT feed.")
    assert fault[:2] == ("replay", "SPAT")
    assert fault[2] == default_magnitude("latency", APPLICATIONS[Application.RLVW], Stream.SPAT) == 1.0


@pytest.mark.parametrize("text", [
    "EEBL: the DENM stream keeps resending the same stale warning instead of new ones.",
    "RLVW when the RSU keeps replaying the same SPaT snapshot.",
])
def test_one_message_held_and_repeated_stays_a_freeze(text: str) -> None:
    assert [f[0] for f in _faults(text)] == ["freeze"]
