"""The offline grammar reads corridor wording (issue 37 item 2) and the channel model (item 4): how many
junctions the ego crosses, the whole corridor, how the signals after the first are timed, and the 3GPP TR 37.885
channel; a bare "green wave" (GLOSA's purpose) sets no plan."""

from __future__ import annotations

import json

import pytest

from lastv2x.core.errors import InvalidArgument
from services.llm.config import LlmConfig
from services.llm.roles import LlmRoles

ROLES = LlmRoles(config=LlmConfig())


def _spec(text: str) -> dict:
    return json.loads(ROLES.parse_intent(text, seed=3).spec.model_dump_json())


def test_a_town_is_assigned_only_where_the_road_crosses_the_junctions_asked_for() -> None:
    """fresh15's f15_002 ('along all five junctions of the corridor') was assigned urban_canyon on some seeds, a
    grid with at most three junctions in a row, and grounding refused it; three in a row fit either map."""
    five = "Baseline GLOSA run along all five junctions of the corridor, signals coordinated as a green wave."
    assert {ROLES.parse_intent(five, seed).spec.map.town for seed in range(1, 9)} == {"corridor"}
    three = "GLOSA along three junctions, SPaT frozen for 3 s."
    assert {ROLES.parse_intent(three, seed).spec.map.town for seed in range(1, 9)} == {"corridor", "urban_canyon"}
    # a stated town that cannot host the traversal is repaired, and the repair said
    res = ROLES.parse_intent("GLOSA in urban_canyon along all five junctions.", 1)
    assert res.spec.map.town == "corridor" and any("5 junctions in a row" in n for n in res.notes)


@pytest.mark.parametrize(("text", "ahead", "whole"), [
    ("Speed advice while the car drives along all five junctions of the arterial.", 4, False),
    ("GLOSA test: the ego passes through 3 consecutive signalized intersections.", 2, False),
    ("Let the test vehicle cover the entire corridor with speed advice on.", 0, True),
    ("Check GLOSA at every intersection along the corridor.", 0, True),
])
def test_a_traversal_is_read(text: str, ahead: int, whole: bool) -> None:
    m = _spec(text)["map"]
    assert m.get("junctions_ahead", 0) == ahead and m.get("whole_corridor", False) is whole
    assert m["junction_kind"] == "corridor"


def test_a_traversal_the_catalogue_cannot_hold_is_refused_with_the_range() -> None:
    with pytest.raises(InvalidArgument) as info:
        _spec("GLOSA through 12 junctions in a row of the corridor.")
    assert info.value.violations[0].field == "map.junctions_ahead" and "2 to 8" in info.value.violations[0].hint


@pytest.mark.parametrize(("text", "coordination", "speed_mps"), [
    ("GLOSA on the arterial where the signals are coordinated for 50 km/h; ego at 40 km/h.", "green_wave", 50 / 3.6),
    ("Speed advice with a green wave along the corridor at 40 km/h.", "green_wave", 40 / 3.6),
    ("GLOSA through 4 intersections whose lights have random offsets.", "random", None),
    ("Speed advice across uncoordinated traffic lights on the arterial.", "random", None),
    ("Green wave assistant at a signalized junction while SPaT is delayed by 1 s.", None, None),
])
def test_coordination_is_read_with_its_design_speed(text: str, coordination: str | None,
                                                    speed_mps: float | None) -> None:
    spec = _spec(text)
    signal = spec.get("signal", {})
    assert signal.get("coordination") == coordination
    assert signal.get("progression_speed_mps") == (pytest.approx(speed_mps) if speed_mps else None)
    if speed_mps:  # the design speed is not the ego's
        assert spec["ego"]["speed_mps"] != pytest.approx(speed_mps)


@pytest.mark.parametrize(("text", "model"), [
    ("Forward collision warning on a motorway using the 3GPP TR 37.885 highway channel.", "tr37885_highway"),
    ("Red-light warning downtown under the 3GPP urban channel model.", "tr37885_urban"),
    ("Red-light warning with a 100 m radio range.", None),
    ("FCW, the lead brakes at 5 s, over the WINNER+ B1 channel with the 802.11p receiver.", "winner_b1_80211p"),
    ("EEBL chain checked against Sepulcre's analytical 802.11p model, range 300 m.", "winner_b1_80211p"),
    ("FCW over an 802.11p link with 20 % packet loss on the lead's BSMs.", None),
])
def test_the_channel_model_is_read(text: str, model: str | None) -> None:
    assert _spec(text)["v2x"]["channel"].get("model") == model


@pytest.mark.parametrize(("text", "site", "height_m"), [
    ("Red light warning with the roadside unit on the far corner of the junction.", "far_side", None),
    ("RLVW where the RSU stands before the stop line, mounted at a height of 8 m.", "near_side", 8.0),
    ("GLOSA along the arterial; each RSU is mounted on a pole of 6 m high on the near side.", "near_side", 6.0),
    ("Red-light warning with an RSU, SPaT dropped for 2 s.", None, None),
])
def test_where_and_how_high_the_rsu_stands_is_read(text: str, site: str | None, height_m: float | None) -> None:
    v2x = _spec(text)["v2x"]
    assert v2x.get("rsu_site") == site and v2x.get("rsu_height_m") == height_m


@pytest.mark.parametrize(("text", "sees", "sight_m"), [
    ("GLOSA along the whole corridor at 50 m radio range; the driver still watches the lights.", True, None),
    ("RLVW test: the ego's driver sees the signals only from 30 m (fog), SPaT dropped for 3 s before the red.",
     True, 30.0),
    ("GLOSA on a corridor, an attentive driver who stops at a visible red, RSU relay over backhaul.", True, None),
    ("GLOSA: drivers obey the traffic lights they can see; signal visible from 80 m.", True, 80.0),
    # brake lights are not the signal, and a driver who cannot see is not one who watches
    ("A car several vehicles ahead brakes hard and the ego cannot see its brake lights.", False, None),
    ("RLVW with a SPaT freeze of 4 s at amber onset.", False, None),
])
def test_drivers_who_watch_the_lights_are_read(text: str, sees: bool, sight_m: float | None) -> None:
    """issue 37 item 1: an equipped driver who also acts on the signal face it sees (perception.equipped_see_signals),
    and how far it sees it."""
    per = _spec(text).get("perception")
    if not sees:
        assert per is None or not per.get("equipped_see_signals", False)
        return
    assert per["equipped_see_signals"] is True
    assert per["signal_sight_distance_m"] == (100.0 if sight_m is None else sight_m)
