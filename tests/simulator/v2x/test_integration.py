"""The V2X stack inside paired execution (services.simulator.paired)."""

from __future__ import annotations

import numpy as np
import pytest

from lastv2x.core.catalogue import FailureClass
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.v2x.monitor import LARGE_MARGIN
from services.simulator.v2x.stack import v2x_source_factory
from tests.simulator.v2x.world import rlvw_spec

paired = pytest.importorskip("services.simulator.paired")

FREEZE = {"name": "spat_freeze", "operator": "freeze", "stream": "SPAT", "provenance": "test"}


def rlvw_freeze(anchor: dict):
    # amber onset at 27 s (default plan), decision epoch at 28 s: amber 1 s before the epoch
    return program_from_spec_on_straight_roads(parse_spec(rlvw_spec(faults=[{**FREEZE, "anchor": anchor}])))


def test_freeze_before_amber_makes_rlvw_run_the_red_admitted_fresh_but_wrong():
    prog = rlvw_freeze({"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5})
    out = paired.execute_paired(prog, 0, v2x_source_factory())
    assert out.md.failed and not out.gt.failed and out.admitted
    md_epoch = [d for d in out.md.decisions if d.epoch]
    gt_epoch = [d for d in out.gt.decisions if d.epoch]
    assert md_epoch[0].action == "proceed" and gt_epoch[0].action == "stop"
    assert md_epoch[0].t_s == pytest.approx(28.0)
    ex = out.monitor.extra
    assert ex["failure_class"] == FailureClass.FRESH_BUT_WRONG.value
    assert ex["divergence_alarm"]
    phase = [s for s in ex["hazard_slack"] if s["kind"] == "signal_phase"]
    assert phase[0]["start_s"] == pytest.approx(27.0) and phase[0]["slack_s"] < 0  # decided while wrong
    d = ex["aoi_at_decisions"][0]
    assert d["believed_phase"] == "green" and d["true_phase"] == "amber" and d["spat_valid"]
    assert d["spat_aoi_s"] < 0.2  # fresh
    assert ex["faults"][0]["start_s"] == pytest.approx(26.5) and ex["faults"][0]["messages_affected"] > 0
    again = paired.execute_paired(prog, 0, v2x_source_factory())
    assert again.to_json_bytes() == out.to_json_bytes()  # replayable to the byte


def test_same_freeze_at_red_onset_stays_safe():
    prog = rlvw_freeze({"kind": "signal_event", "event": "red_onset"})
    out = paired.execute_paired(prog, 0, v2x_source_factory())
    assert not out.md.failed and not out.admitted
    assert [d.action for d in out.md.decisions if d.epoch] == ["stop"]
    ex = out.monitor.extra
    assert ex["failure_margin"] == LARGE_MARGIN  # the wrong belief began after the decision
    assert all(s["slack_s"] is None for s in ex["hazard_slack"])


def _normal_scene(seed: int):
    rng = np.random.default_rng(1000 + seed)
    app = ("RLVW", "GLOSA", "FCW", "EEBL", "IMA", "LTA")[seed % 6]
    v = float(rng.uniform(9.0, 16.0))
    spec: dict = {"application": app, "seed": seed, "duration_s": 14.0,
                  "ego": {"speed_mps": v, "start_distance_m": float(rng.uniform(80.0, 200.0))},
                  "map": {"busy": bool(rng.random() < 0.5)}, "v2x": {"penetration": float(rng.uniform(0.3, 1.0))},
                  "signal": {"offset_s": float(rng.uniform(0.0, 60.0))}}
    brake = {"kind": "hard_brake", "at_time_s": float(rng.uniform(2.0, 6.0)), "decel_mps2": 6.5}
    if app in ("FCW", "EEBL"):
        spec["agents"] = [{"id": "lead", "role": "lead", "gap_m": float(rng.uniform(20.0, 50.0)), "speed_mps": v,
                           "behaviour": brake}]
    elif app == "IMA":
        spec["agents"] = [{"id": "cross", "role": "cross", "speed_mps": float(rng.uniform(8.0, 14.0)),
                           "arrival_offset_s": float(rng.uniform(-2.0, 2.0))}]
    elif app == "LTA":
        spec["ego"]["maneuver"] = "left"
        spec["agents"] = [{"id": "opp", "role": "opposing", "speed_mps": float(rng.uniform(8.0, 14.0)),
                           "arrival_offset_s": float(rng.uniform(-2.0, 2.0))}]
    return program_from_spec_on_straight_roads(parse_spec(spec))


def test_healthy_channel_admits_nothing_over_24_seeds():
    programs = [_normal_scene(s) for s in range(24)]
    outs = paired.execute_batch(programs, None, v2x_source_factory())
    assert [o.admitted for o in outs] == [False] * 24
    assert sum(o.monitor.alarms for o in outs) == 0
    signal = [o for p, o in zip(programs, outs, strict=True) if p.application in ("RLVW", "GLOSA")]
    assert all(o.monitor.extra["stats"]["delivered"]["SPAT"] > 0 for o in signal)
    assert all(o.monitor.extra["stats"]["delivered"]["BSM"] > 0 for o in outs if o.application in ("FCW", "EEBL"))


def _fcw(*faults: dict):
    return program_from_spec_on_straight_roads(parse_spec({
        "application": "FCW", "duration_s": 12.0, "ego": {"speed_mps": 15.0},
        "agents": [{"id": "lead", "role": "lead", "gap_m": 25.0, "speed_mps": 15.0,
                    "behaviour": {"kind": "hard_brake", "at_time_s": 3.0, "decel_mps2": 8.0}}],
        "faults": list(faults)}))


def test_suppressed_lead_bsm_is_admitted_silent_by_absence():
    healthy = paired.execute_paired(_fcw(), 0, v2x_source_factory())
    assert not healthy.md.failed and not healthy.admitted
    out = paired.execute_paired(_fcw({"name": "mute", "operator": "suppress_sender", "stream": "BSM",
                                      "sender": "lead", "anchor": {"offset_s": 1.0}}), 0, v2x_source_factory())
    assert out.admitted and out.md.failed and not out.gt.failed
    ex = out.monitor.extra
    assert ex["failure_class"] == FailureClass.SILENT_BY_ABSENCE.value
    assert not ex["divergence_alarm"]  # nothing the divergence-only monitor would have flagged
    assert ex["failure_margin"] == pytest.approx(out.md.min_agent_distance_m, abs=1e-3)
    assert any(e.kind == "track_missing" and e.subject == "lead" for e in out.monitor.episodes)
