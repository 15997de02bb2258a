"""Faults described by their effect on what a receiver sees (issue 19, item 2), numbers and typos.

Sentences here are written for the tests (the held-out set is never used to develop the lexicon).
"""

from __future__ import annotations

import pytest

from services.llm.intent_text import correct_typos, normalize
from services.llm.roles import LlmRoles


@pytest.mark.parametrize(("text", "want"), [
    ("FCW where the truck ahead seems to drive 6 km/h slower than it actually does.",
     ("BSM", "bsm_speed_offset", -6 / 3.6, "scenario_time")),
    ("IMA where the crossing van's speed reads 2 mph too high.", ("BSM", "bsm_speed_offset", 0.89408, "scenario_time")),
    ("LTA where the oncoming car shows up 9 ft further away than it is.",
     ("BSM", "bsm_position_offset", 2.7432, "scenario_time")),
    ("RLVW where the driver is told there are 2 seconds less of green than there really are.",
     ("SPAT", "spat_countdown_offset", -2.0, "scenario_time")),
    ("GLOSA where the car believes the light is red while it is actually green.",
     ("SPAT", "spat_phase_corrupt", None, "scenario_time")),
    ("RLVW where the signal information stops coming once the ego is 70 m from the stop line.",
     ("SPAT", "drop", None, "stop_bar_distance")),
    ("EEBL where the braking car goes completely quiet.", ("EEBL", "suppress_sender", None, "scenario_time")),
    ("FCW where the lead's data is four hundred milliseconds out of date.",
     ("BSM", "timestamp_offset", 0.4, "scenario_time")),
    ("IMA where the crossing car's messages lag by a second.", ("BSM", "delay", 1.0, "scenario_time")),
    ("GLOSA where the lane map puts the ego lane under the wrong signal.",
     ("MAP", "map_misassociation", None, "scenario_time")),
    ("RLVW where two in five SPaT frames never get through.", ("SPAT", "drop", 0.4, "scenario_time")),
    ("LTA where the oncoming car is out of radio range of the ego.", ("BSM", "drop", None, "scenario_time")),
])
def test_effect_described_fault(text: str, want: tuple[str, str, float | None, str]) -> None:
    res = LlmRoles().parse_intent(text, 11)
    data = res.history[0].data
    assert data is not None
    (fault,) = data["faults"]
    stream, op, magnitude, anchor = want
    assert (fault["stream"], fault["operator"]) == (stream, op)
    a = fault.get("anchor") or {}
    assert (a["event"] if a.get("kind", "scenario_time") != "scenario_time" else "scenario_time") == anchor
    got = next((fault[k] for k in ("magnitude", "burst_count", "probability") if fault.get(k) is not None), None)
    if magnitude is not None:
        assert got == pytest.approx(magnitude, rel=0.02)
    assert not res.unparsed


@pytest.mark.parametrize(("text", "value", "kind"), [
    ("four hundred and twenty ms", 0.42, "time"),
    ("one point five seconds", 1.5, "time"),
    ("three and a half metres", 3.5, "dist"),
    ("a quarter of a second", 0.25, "time"),
    ("one out of five packets", 0.2, "pct"),
    ("a fifth of the messages", 0.2, "pct"),
    ("thirty-five mph", 35 * 0.44704, "speed"),
    ("rotated 90 degrees", 90.0, "angle"),
])
def test_numbers_as_people_write_them(text: str, value: float, kind: str) -> None:
    (q,) = normalize(text).quantities
    assert q.kind == kind and q.value == pytest.approx(value, rel=1e-3)


def test_between_five_and_ten_stays_two_numbers() -> None:
    assert normalize("between five and ten seconds").text.startswith("between 5 and <q0:time>")


def test_typos_of_domain_words_are_fixed_and_english_words_left_alone() -> None:
    assert correct_typos("the oncomming vehicel is transmiting delayd mesages") == \
        "the oncoming vehicle is transmitting delayed messages"
    for fine in ("the heads of the trucks along the lines", "rates coasts toward whose points"):
        assert correct_typos(fine) == fine
    # a fault word from a letter missed, doubled, swapped or changed into a keyboard neighbour or a sound-alike;
    # any other changed letter would invent a fault from a real word
    assert correct_typos("frames arrive lattency-free, the stcuk one is droped") == \
        "frames arrive latency-free, the stuck one is dropped"
    assert correct_typos("the latensy and the delsy") == "the latency and the delay"
    for word in ("stock", "logging", "stack", "stuff", "dolay"):
        assert correct_typos(f"the {word} here") == f"the {word} here"
