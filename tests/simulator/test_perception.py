"""Drivers without V2X (issue 17, item 2): an unequipped ego or agent drives by what it sees.

Signals are acted on only within the sight distance of the stop bar, leaders only within the
perception range (``lastv2x.core.perception``); specs that use neither keep their programs' bytes.
"""

from __future__ import annotations

import numpy as np

from lastv2x.core.catalogue import SIGNAL_SIGHT_DISTANCE_M, Application
from lastv2x.core.program import program_sha256
from lastv2x.core.spec import (
    Agent,
    Behaviour,
    BehaviourKind,
    Ego,
    Perception,
    ScenarioSpec,
    SignalPlan,
    parse_spec,
)
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.paired import execute_paired
from services.simulator.traffic import EgoControl, Scene, initial_state, step
from services.simulator.v2x.stack import v2x_source_factory

RED_AHEAD = SignalPlan(offset_s=30.0)  # red from t = 0 for 30 s: the ego (120 m at 13.9 m/s) meets it


def _spec(**kw: object) -> ScenarioSpec:
    return ScenarioSpec(application=Application.RLVW, seed=3, duration_s=20.0, signal=RED_AHEAD, **kw)


def test_an_unequipped_ego_stops_at_a_red_it_can_see() -> None:
    prog = program_from_spec_on_straight_roads(_spec(ego=Ego(equipped=False)))
    assert not prog.ego.equipped and prog.ego.sight_distance_m == SIGNAL_SIGHT_DISTANCE_M
    out = execute_paired(prog, md_source_factory=v2x_source_factory())
    for ro in (out.md, out.gt):
        assert ro.red_entries == () and ro.stops >= 1 and ro.stop_bar_time_s is None
        assert ro.decisions == ()  # no on-board unit: the application decides nothing
    assert not out.admitted and out.md == out.gt


def test_a_red_first_seen_too_late_is_run() -> None:
    """Sight 8 m at 13.9 m/s: stopping would need 12 m/s^2 when the red comes into view, so the
    driver goes (as a red-light runner would not: it never looks); with the default sight it stops."""
    prog = program_from_spec_on_straight_roads(_spec(ego=Ego(equipped=False),
                                                     perception=Perception(signal_sight_distance_m=8.0)))
    out = execute_paired(prog)
    assert out.md.red_entries and out.md.stop_bar_time_s is not None and out.md.stops == 0


def test_an_equipped_ego_is_driven_by_its_application_as_before() -> None:
    spec = _spec()
    assert "equipped" not in spec.model_dump_json() and "perception" not in spec.model_dump_json()
    prog = program_from_spec_on_straight_roads(spec)
    assert "sight_distance_m" not in prog.model_dump_json()
    assert program_sha256(prog) == program_sha256(program_from_spec_on_straight_roads(parse_spec(
        spec.model_dump(mode="json"))))
    assert execute_paired(prog).md.decisions  # the RLVW application decides


def _silent_glosa(**kw: object) -> ScenarioSpec:
    """A GLOSA ego without a roadside unit: its application never has SPaT, so never an advisory."""
    from lastv2x.core.spec import V2X, RsuPlacement

    return ScenarioSpec(application=Application.GLOSA, seed=3, duration_s=20.0, signal=RED_AHEAD,
                        v2x=V2X(rsu_placement=RsuPlacement.NONE), **kw)


def test_an_equipped_driver_who_watches_the_lights_stops_at_a_red_its_application_never_heard() -> None:
    """perception.equipped_see_signals (issue 37 item 1): the GLOSA driver without SPaT stops for the red it sees,
    in both rollouts; without the option the message-driven ego acts on its application alone and enters on red
    (the ground-truth twin, with ideal SPaT, stops)."""
    blind = execute_paired(program_from_spec_on_straight_roads(_silent_glosa()),
                           md_source_factory=v2x_source_factory())
    assert blind.md.red_entries and not blind.gt.red_entries
    spec = _silent_glosa(perception=Perception(equipped_see_signals=True))
    prog = program_from_spec_on_straight_roads(spec)
    assert prog.ego.equipped and prog.ego.sight_distance_m == SIGNAL_SIGHT_DISTANCE_M
    seen = execute_paired(prog, md_source_factory=v2x_source_factory())
    assert seen.md.red_entries == () and seen.md.stops >= 1  # no advisory: it stops for the red it sees
    assert seen.gt.red_entries == ()  # (the twin's advisory slows it to arrive on green)
    assert seen.md.decisions  # the application still decides (and advises nothing: no SPaT)
    assert not seen.admitted
    # the field round-trips through the spec's JSON and is left out when off (specs keep their bytes)
    assert parse_spec(spec.model_dump(mode="json")) == spec
    assert "equipped_see_signals" not in Perception().model_dump_json()


def test_the_verifier_keeps_quiet_about_perception_that_equipped_drivers_use() -> None:
    from lastv2x.core.verifier import verify

    warned = [f.message for f in verify(_silent_glosa(perception=Perception())).findings]
    assert any("every scenario vehicle is equipped" in m for m in warned)
    used = [f.message for f in verify(_silent_glosa(perception=Perception(equipped_see_signals=True))).findings]
    assert not any("every scenario vehicle is equipped" in m for m in used)


def test_unequipped_agents_drive_by_sight_only_when_the_spec_says_perception() -> None:
    agents = (Agent(id="lead", role="lead", gap_m=40.0, equipped=False),
              Agent(id="relay", role="relay", gap_m=20.0))
    plain = program_from_spec_on_straight_roads(_spec(agents=agents))
    assert all(v.sight_distance_m is None for v in plain.vehicles)
    seen = program_from_spec_on_straight_roads(_spec(agents=agents, perception=Perception(leader_range_m=30.0)))
    by_id = {v.id: v for v in seen.vehicles}
    assert by_id["lead"].perception_range_m == 30.0 and by_id["lead"].sight_distance_m == SIGNAL_SIGHT_DISTANCE_M
    assert by_id["relay"].perception_range_m is None and by_id["ego"].perception_range_m is None


def _ego_speed_when_gap_first_below(range_m: float | None, gap_m: float) -> float:
    """The unequipped ego's speed when its bumper gap to a standing lead first drops below ``gap_m``."""
    spec = ScenarioSpec(application=Application.FCW, seed=1, duration_s=20.0, ego=Ego(equipped=False),
                        perception=None if range_m is None else Perception(leader_range_m=range_m),
                        agents=(Agent(id="lead", role="lead", gap_m=120.0,
                                      behaviour=Behaviour(kind=BehaviourKind.HARD_BRAKE, at_time_s=0.0,
                                                          decel_mps2=8.0)),))
    prog = program_from_spec_on_straight_roads(spec)
    scene = Scene.from_programs([prog], [True])
    st = initial_state(scene)
    half = scene.length_m[0, 0]  # two half lengths of 4.5 m vehicles
    for _ in range(400):
        if st.s[0, 1] - st.s[0, 0] - half < gap_m:
            return float(st.v[0, 0])
        st = step(scene, st, EgoControl.nominal(1))
    raise AssertionError("the ego never closed in")


def test_a_leader_beyond_the_perception_range_is_not_seen() -> None:
    """A stopped lead 100 m ahead: with the default range (150 m) the ego has slowed by the time the
    gap is 45 m; with a 40 m range it is still at its desired speed there (it has not seen the lead)."""
    far = _ego_speed_when_gap_first_below(None, 45.0)
    short = _ego_speed_when_gap_first_below(40.0, 45.0)
    assert short >= 13.9 - 1e-6 > far + 0.5
    assert np.isfinite(far)


def test_inconsistent_equipage_is_a_verifier_error_with_a_repair() -> None:
    from lastv2x.core.repair import apply_patch
    from lastv2x.core.spec import V2X, Fault, spec_to_dict
    from lastv2x.core.verifier import verify

    relay = ScenarioSpec(application=Application.EEBL, v2x=V2X(eebl_rebroadcast=True), agents=(
        Agent(id="lead", role="lead", gap_m=60.0, behaviour=Behaviour(kind=BehaviourKind.HARD_BRAKE, at_time_s=3.0)),
        Agent(id="cv2", role="relay", gap_m=30.0, equipped=False)))
    deaf = _spec(ego=Ego(equipped=False), faults=(Fault(name="d", operator="drop", stream="SPAT", probability=1.0),))
    for spec, field in ((relay, "agents[1].equipped"), (deaf, "ego.equipped")):
        bad = [f for f in verify(spec).findings if f.severity.value == "error" and field in f.fields]
        assert len(bad) == 1 and bad[0].repair is not None and bad[0].repair.patch == ((field, True),)
        fixed = parse_spec(apply_patch(spec_to_dict(spec), bad[0].repair.patch))
        assert not [f for f in verify(fixed).findings if field in f.fields and f.severity.value == "error"]
