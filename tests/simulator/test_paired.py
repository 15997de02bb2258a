"""Paired execution: admission, matched conditions, determinism, the six reference scenarios."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import (
    Agent,
    Behaviour,
    ChannelModel,
    Ego,
    MapQuery,
    ScenarioSpec,
    SignalPlan,
)
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.info import (
    DecisionRecord,
    DivergenceEpisode,
    GroundTruthSource,
    InformationSource,
    MonitorReport,
)
from services.simulator.paired import LARGE_MARGIN, execute_batch, execute_paired, hazard_slacks
from services.simulator.reference import reference_program
from tests.simulator.doubles import FrozenSignalSource, SilentSource, StaleSource


@pytest.mark.parametrize("app", list(Application))
def test_every_reference_scenario_runs_and_its_ground_truth_is_safe(app):
    out = execute_paired(reference_program(app))
    assert not out.md.failed and not out.gt.failed and not out.admitted
    assert out.md == out.gt, "GT vs GT: the two rollouts are identical"
    assert any(d.epoch for d in out.gt.decisions), "every application reaches its decision epoch"


def test_rlvw_gt_stops_on_amber_at_the_epoch_and_frozen_green_is_admitted():
    prog = reference_program(Application.RLVW)  # amber onset 5 s, decision epoch ~5.65 s
    out = execute_paired(prog, md_source_factory=lambda: FrozenSignalSource(freeze_at_s=4.5))
    epoch_gt = next(d for d in out.gt.decisions if d.epoch)
    epoch_md = next(d for d in out.md.decisions if d.epoch)
    assert epoch_gt.action == "stop" and epoch_md.action == "proceed"
    assert epoch_gt.t_s == epoch_md.t_s == pytest.approx(5.65)
    assert out.gt.red_entries == () and out.gt.stops == 1
    assert out.md.red_entries and out.md.red_entries[0].group_id == prog.ego_group_id
    assert out.md.failed and not out.gt.failed and out.admitted


def test_rlvw_gt_stops_on_red_and_silent_md_runs_it():
    spec = ScenarioSpec(application="RLVW", signal=SignalPlan(offset_s=29.0))  # red from t = 1 s
    out = execute_paired(program_from_spec_on_straight_roads(spec), md_source_factory=SilentSource)
    assert next(d for d in out.gt.decisions if d.epoch).action == "stop"
    md_epoch = next(d for d in out.md.decisions if d.epoch)
    assert md_epoch.action == "proceed" and "nominal" in md_epoch.reason
    assert out.admitted


def test_freeze_after_the_epoch_changes_nothing():
    out = execute_paired(reference_program(Application.RLVW),
                         md_source_factory=lambda: FrozenSignalSource(freeze_at_s=6.0))
    assert not out.admitted and out.md == out.gt


@pytest.mark.parametrize("app", [Application.FCW, Application.EEBL, Application.IMA, Application.LTA])
def test_stale_tracks_make_conflict_apps_fail_where_ground_truth_is_safe(app):
    out = execute_paired(reference_program(app), md_source_factory=lambda: StaleSource(aoi_s=5.0))
    assert out.md.collision is not None and out.admitted
    assert out.failure_margin == out.md.min_agent_distance_m < 4.5


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), app=st.sampled_from(list(Application)), busy=st.booleans(),
       offset=st.floats(0.0, 59.0))
def test_healthy_gt_vs_gt_is_never_admitted(seed, app, busy, offset):
    base = reference_program(app).spec
    spec = base.model_copy(update={"seed": seed, "map": base.map.model_copy(update={"busy": busy}),
                                   "signal": SignalPlan(offset_s=offset)})
    out = execute_paired(program_from_spec_on_straight_roads(spec))
    assert not out.admitted and out.md == out.gt


@pytest.mark.parametrize("model", ["log_distance", "tr37885_urban", "winner_b1_80211p"])
def test_healthy_batch_over_many_seeds_has_no_admission(model: str):
    """Healthy worlds admit nothing, under the default channel and under TR 37.885's (LOS states, vehicle
    blockage and shadowing drawn per link)."""
    programs = []
    for seed in range(24):
        app = list(Application)[seed % 6]
        spec = reference_program(app).spec.model_copy(update={"seed": seed, "map": MapQuery(busy=True)})
        if app is Application.IMA:
            spec = spec.model_copy(update={"map": MapQuery(busy=True, signalized=False)})
        channel = spec.v2x.channel.model_copy(update={"model": ChannelModel(model)})
        spec = spec.model_copy(update={"v2x": spec.v2x.model_copy(update={"channel": channel})})
        programs.append(program_from_spec_on_straight_roads(spec))
    outs = execute_batch(programs)
    assert len(outs) == 24 and not any(o.admitted for o in outs)
    assert not any(o.gt.failed for o in outs)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**40), app=st.sampled_from(list(Application)), freeze=st.floats(2.0, 8.0))
def test_same_program_and_seed_give_identical_bytes(seed, app, freeze):
    prog = reference_program(app, seed)
    a = execute_paired(prog, seed, lambda: FrozenSignalSource(freeze))
    b = execute_paired(prog, seed, lambda: FrozenSignalSource(freeze))
    assert a.to_json_bytes() == b.to_json_bytes()
    data = json.loads(a.to_json_bytes())
    assert data["seed"] == seed and data["application"] == app.value


def test_batch_equals_paired():
    programs = [reference_program(a) for a in Application]
    batch = execute_batch(programs, md_source_factory=lambda: FrozenSignalSource(4.5))
    for p, b in zip(programs, batch, strict=True):
        assert b.to_json_bytes() == execute_paired(p, md_source_factory=lambda: FrozenSignalSource(4.5)).to_json_bytes()


def test_a_large_batch_equals_paired_executions():
    """The benchmark's shape (several seeds of every application, 48 rollouts stepped together): each program's
    paired bytes exactly, as if it ran alone."""
    programs = [reference_program(list(Application)[i % 6], seed=i) for i in range(24)]
    batch = execute_batch(programs)
    assert [b.to_json_bytes() for b in batch] == [execute_paired(p).to_json_bytes() for p in programs]


def test_monitor_report_feeds_hazard_slack_and_margin():
    class Monitored(FrozenSignalSource):
        def report(self, decisions):  # noqa: ANN001, ANN202
            self.seen = list(decisions)
            return MonitorReport((DivergenceEpisode("signal_phase", "j0.sg0", 5.0, None),), alarms=1)

    holder: list[InformationSource] = []

    def factory() -> InformationSource:
        holder.append(Monitored(4.5))
        return holder[-1]

    out = execute_paired(reference_program(Application.RLVW), md_source_factory=factory)
    assert out.monitor is not None and out.monitor.alarms == 1
    assert out.hazard_slack_s and out.hazard_slack_s[0] < 0, "the epoch fell inside the open episode"
    assert out.failure_margin == LARGE_MARGIN
    assert any(d.epoch for d in holder[0].seen)


def test_hazard_slack_sign():
    rep = MonitorReport((DivergenceEpisode("countdown", "g", 1.0, 2.0), DivergenceEpisode("countdown", "g", 4.0, 6.0)))
    decs = [DecisionRecord(3.0, "stop", True, after_epoch=True), DecisionRecord(5.0, "proceed", False, after_epoch=True)]
    assert hazard_slacks(rep, decs, 30.0) == (1.0, -1.0)


@pytest.mark.parametrize("app", list(Application))
def test_ground_truth_as_the_message_source_makes_twins(app: Application):
    """Perfect information leaves communication nothing to break: with GroundTruthSource as the
    message-driven ego's source, the two rollouts are identical and nothing is admitted."""
    for seed in (0, 1):
        out = execute_paired(reference_program(app, seed=seed), md_source_factory=GroundTruthSource)
        assert out.md == out.gt and not out.admitted and not out.md.failed


def test_red_light_runner_cross_traffic_hits_a_silent_ego_only():
    spec = ScenarioSpec(application="RLVW", ego=Ego(start_distance_m=120.0),
                        signal=SignalPlan(offset_s=0.0),
                        agents=(Agent(id="runner", role="cross", arrival_offset_s=0.0,
                                      behaviour=Behaviour(kind="red_light_runner")),))
    out = execute_paired(program_from_spec_on_straight_roads(spec))
    assert out.gt.collision is not None, "GT RLVW proceeds on green; the runner hits it in both rollouts"
    assert not out.admitted


def _second_junction(app: Application, first_offset_s: float):
    """The reference program of ``app`` with a second signalized crossing 67 m past the first (junction
    ``j1``, red from t = 8 s to 60 s) and the first junction's plan shifted by ``first_offset_s``."""
    from lastv2x.core.program import Crossing, SignalGroupPlan

    prog = reference_program(app)
    route = prog.ego.route
    first = route.crossings[0]
    j1 = SignalGroupPlan(id="j1.sg0", junction_id="j1", cycle_s=60.0, green_s=5.0, amber_s=3.0, offset_s=0.0)
    second = Crossing(junction_id="j1", approach_lane_id="N.out", stop_bar_s_m=first.stop_bar_s_m + 67.0,
                      stop_bar_xy_m=(1.75, 57.0), signal_group_id=j1.id)
    groups = tuple(g.model_copy(update={"offset_s": first_offset_s}) if g.id == first.signal_group_id else g
                   for g in prog.signal_groups) + (j1,)
    ego = prog.ego.model_copy(update={"route": route.model_copy(update={"crossings": (first, second)})})
    prog = prog.model_copy(update={"ego": ego, "signal_groups": groups})
    return type(prog).model_validate(prog.model_dump()), first, second  # validated as a whole


@pytest.mark.parametrize("app, first_offset_s", [(Application.RLVW, 0.0), (Application.GLOSA, 48.0)])
def test_signal_apps_decide_again_at_every_junction_of_the_route(app, first_offset_s):
    prog, first, second = _second_junction(app, first_offset_s)
    out = execute_paired(prog)
    epochs = [d for d in out.gt.decisions if d.epoch]
    assert len(epochs) == 2, "one decision epoch per signalized stop bar"
    assert epochs[0].action == "proceed" and epochs[1].action == "stop"
    assert out.gt.red_entries == () and not out.gt.failed  # it stops at the second junction's red
    assert out.gt.stops >= 1
