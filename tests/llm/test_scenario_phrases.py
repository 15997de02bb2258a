"""The parser fills issue 17's scenario fields from a sentence: relay chains at increasing gaps with
the gaps and range the text gives (item 7), the ego without V2X (item 2), RSUs sharing SPaT over the
backhaul (item 3), mutual yield as two applications (item 4); the verifier warns when a relay
scenario does not need its relay."""

from __future__ import annotations

import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import ScenarioSpec
from lastv2x.core.verifier import verify
from services.llm import roles


def _parse(text: str) -> ScenarioSpec:
    return roles.parse_intent(text, 1).spec


def _relay_warnings(spec: ScenarioSpec) -> list:
    return [f for f in verify(spec).findings if "relay is not needed" in f.message]


@pytest.mark.parametrize(("text", "lead", "relay"), [
    ("EEBL relay chain: the lead brakes hard at 3 s, a relay car rebroadcasts, radio range 100 m.", 150.0, 75.0),
    ("EEBL with a relay car in between; the braking lead is 200 m ahead.", 200.0, 100.0),
    ("EEBL where the relay car is 40 m ahead and the lead brakes hard.", 80.0, 40.0),
    ("EEBL where the relay car is 40 m ahead and the braking lead is 130 m ahead, range 90 m.", 130.0, 40.0),
])
def test_a_relay_chain_places_lead_relay_ego_at_increasing_gaps(text: str, lead: float, relay: float) -> None:
    spec = _parse(text)
    gaps = {a.id: a.gap_m for a in spec.agents}
    assert spec.application is Application.EEBL and spec.v2x.eebl_rebroadcast
    assert gaps == {"lead": lead, "relay": relay}
    if lead > spec.v2x.channel.range_m:  # the text's range: the lead out of the ego's reach, the relay needed
        assert not _relay_warnings(spec)
        assert not [f for f in verify(spec).findings if "beyond range" in f.message]


def test_a_relay_chain_within_direct_range_is_warned_with_a_repair() -> None:
    spec = _parse("A lead car performs an emergency stop while a relay car sits in between.")
    assert {a.id: a.gap_m for a in spec.agents} == {"lead": 60.0, "relay": 30.0}  # no gaps, no range: 30 / 60 m
    (w,) = _relay_warnings(spec)
    assert w.severity.value == "warning" and w.fields == ("agents[0].gap_m", "v2x.channel.range_m")
    assert w.repair is not None and w.repair.patch == (("v2x.channel.range_m", 45.0),)


def test_the_relay_is_needed_in_the_simulation_of_a_parsed_chain() -> None:
    from lastv2x.core.synthetic import program_from_spec_on_straight_roads
    from services.simulator.paired import execute_paired
    from services.simulator.v2x.stack import v2x_source_factory

    spec = _parse("EEBL relay chain: the lead brakes hard at 3 s, a relay car rebroadcasts, radio range 100 m.")
    actions = {}
    for rebroadcast in (True, False):
        s = spec.model_copy(update={"v2x": spec.v2x.model_copy(update={"eebl_rebroadcast": rebroadcast})})
        out = execute_paired(program_from_spec_on_straight_roads(s), md_source_factory=v2x_source_factory())
        actions[rebroadcast] = [d.action for d in out.md.decisions]
    assert "brake" in actions[True] and "brake" not in actions[False]


def test_the_ego_without_v2x_backhaul_and_mutual_yield_from_a_sentence() -> None:
    assert not _parse("GLOSA along a corridor without V2X.").ego.equipped
    assert not _parse("RLVW where the ego is unequipped and the light turns red.").ego.equipped
    assert _parse("RLVW where the cross vehicle is unequipped.").ego.equipped
    bh = _parse("GLOSA on a corridor where the RSUs share SPaT over the backhaul with 20 ms backhaul latency.")
    assert bh.v2x.backhaul is not None and bh.v2x.backhaul.latency_s == pytest.approx(0.02)
    assert bh.v2x.rsu_placement.value == "chain"
    assert _parse("GLOSA on a corridor with an RSU chain.").v2x.backhaul is None
    ima = _parse("IMA mutual yield: both vehicles run IMA at an unsignalized junction.")
    assert [(a.role.value, a.application) for a in ima.agents] == [("cross", Application.IMA)]
    assert _parse("IMA at an unsignalized junction with a crossing car.").agents[0].application is None


@pytest.mark.parametrize(("text", "gaps"), [
    ("Warn about sudden braking three cars ahead in a platoon.", {"platoon1": 20.0, "platoon2": 40.0, "lead": 60.0}),
    ("EEBL in a platoon of four vehicles spaced 15 m apart; the front car brakes hard and the others rebroadcast.",
     {"platoon1": 15.0, "platoon2": 30.0, "lead": 45.0}),
    ("EEBL in a platoon of 3 cars; the lead is 90 m ahead and brakes hard.", {"platoon1": 45.0, "lead": 90.0}),
])
def test_a_platoon_places_its_vehicles_at_increasing_gaps(text: str, gaps: dict) -> None:
    spec = _parse(text)
    assert {a.id: a.gap_m for a in spec.agents} == gaps
    ahead = sorted(spec.agents, key=lambda a: a.gap_m)
    assert ahead[-1].id == "lead" and ahead[-1].behaviour.kind.value == "hard_brake"
    if spec.v2x.eebl_rebroadcast:
        assert all(a.role.value == "relay" for a in ahead[:-1])
    assert verify(spec).ok
