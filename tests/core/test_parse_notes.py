"""The parser's notes read back as the fields the intent's words set (``lastv2x.core.parse_notes``): one reader for the
parse-repair loop and for campaigns' observability repairs."""

from __future__ import annotations

from lastv2x.core.parse_notes import stated_note_fields
from services.llm.stated import keep_stated, stated_scene_fields


def test_a_note_that_quotes_the_words_or_names_a_bare_value_is_stated() -> None:
    notes = ("v2x.channel.range_m 150.0", "ego.maneuver left", "lead.gap_m 60.0 from '60 m'",
             "map.busy from 'busy' traffic", "map.town Town03 named in the intent",
             "lead.speed_mps 4.0 (a slow lead) from 'slow truck'", "lead.gap_m 60.0 from '60 m'",
             "cross.arrival_offset_s -2.25 s from 'crossing vehicle at <speed> and <dist> from the conflict point' (60 m)")
    assert stated_note_fields(notes) == (("v2x", "channel.range_m"), ("ego", "maneuver"), ("lead", "gap_m"),
                                         ("map", "busy"), ("map", "town"), ("lead", "speed_mps"),
                                         ("cross", "arrival_offset_s"))


def test_a_note_of_a_field_the_parser_chose_is_not() -> None:
    notes = ("lead.behaviour.at_time_s 4 s (default)", "ego.speed_mps 13.4 assigned from seed",
             "relay chain: relay.gap_m 30, lead.gap_m 60 (default chain)",
             "ego.speed_mps 25: following the lead at its stated speed (above the seed's draw)",
             "lead.behaviour hard_brake (EEBL needs a braking lead)", "unused quantity '7 s'",
             "ego.start_distance_m 90.0 kept as stated (the repair would set 685.5)",
             "map.signalized false (IMA needs a junction without signals; the intent names none)")
    assert stated_note_fields(notes) == ()


def test_a_repair_keeps_the_stated_ego_and_agent_fields() -> None:
    first = {"ego": {"speed_mps": 28.0, "start_distance_m": 120.0},
             "agents": [{"id": "lead", "role": "lead", "speed_mps": 18.0, "gap_m": 45.0,
                         "behaviour": {"kind": "hard_brake", "at_time_s": 7.0}}],
             "faults": []}
    notes = ("ego.speed_mps 28.0 from '28 m/s'", "lead.gap_m 45.0 from '<dist> ahead'",
             "lead.behaviour.at_time_s 7 s from 'brakes <time> in'", "lead.speed_mps 11.1 assigned from seed")
    stated = stated_scene_fields(first, notes)
    assert stated == {("ego", "speed_mps"): 28.0, ("agents[0]", "gap_m"): 45.0,
                      ("agents[0]", "behaviour.at_time_s"): 7.0}
    repaired = {"ego": {"speed_mps": 20.0, "start_distance_m": 300.0},
                "agents": [{"id": "lead", "role": "lead", "speed_mps": 11.0, "gap_m": 45.0,
                            "behaviour": {"kind": "hard_brake", "at_time_s": 1.33}}],
                "faults": []}
    kept: list[str] = []
    out = keep_stated(repaired, stated, kept)
    assert out["ego"] == {"speed_mps": 28.0, "start_distance_m": 300.0}
    assert out["agents"][0]["behaviour"]["at_time_s"] == 7.0 and out["agents"][0]["speed_mps"] == 11.0
    assert repaired["agents"][0]["behaviour"]["at_time_s"] == 1.33  # (the answer itself is not changed)
    assert kept == ["ego.speed_mps 28.0 kept as stated (the repair would set 20.0)",
                    "agents[0].behaviour.at_time_s 7.0 kept as stated (the repair would set 1.33)"]


def test_a_stated_value_the_spec_cannot_hold_may_be_repaired() -> None:
    first = {"ego": {"speed_mps": 0.0}, "agents": [{"id": "lead", "role": "lead", "gap_m": 1.0}], "faults": []}
    assert stated_scene_fields(first, ("ego.speed_mps 0 from '0 km/h'", "lead.gap_m 1.0 from '1 m ahead'")) == {}
