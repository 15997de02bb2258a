"""The platform channel map and the module-replay harness on real simulator traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.apps import APPS
from services.simulator.paired import execute_paired
from services.simulator.reference import reference_program
from services.simulator.trace import TraceWriter
from services.simulator.v2x.stack import v2x_source_factory
from services.strap.mutants import RECONSTRUCTION_MODULE, generate_mutants
from services.strap.pipeline import ingest, reduce_table
from services.strap.replay import (
    fidelity,
    load_run,
    read_messages,
    recon_payload,
    recorded_belief_keys,
    replay_reconstruction,
    replay_segment,
    replay_segment_reconstruction,
)
from services.strap.scene_schema import load_channel_map

FREEZE_BEFORE_AMBER = {  # the admitted case of tests/simulator/test_servicer.py
    "application": "RLVW", "seed": 7, "signal": {"offset_s": 22.353},
    "faults": [{"name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
                "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}],
}
SOURCES = {
    "signal": Path("services/simulator/apps/signal.py"),
    "reconstruction": Path("services/simulator/v2x/reconstruction.py"),
}


def _trace(program, path: Path):
    with TraceWriter(path) as tw:
        outcome = execute_paired(program, None, md_source_factory=v2x_source_factory(), trace=tw)
    return outcome


@pytest.fixture(scope="module")
def freeze(tmp_path_factory):
    program = program_from_spec_on_straight_roads(parse_spec(FREEZE_BEFORE_AMBER))
    path = tmp_path_factory.mktemp("traces") / "freeze.mcap"
    return program, path, _trace(program, path)


@pytest.fixture(scope="module")
def rlvw(tmp_path_factory):
    program = reference_program(Application.RLVW)
    path = tmp_path_factory.mktemp("traces") / "rlvw.mcap"
    return program, path, _trace(program, path)


def _mutant_at(module_key: str, text: str, kind: str, function: str, module: str | None = None):
    """The mutant of ``kind`` in ``function`` on the source line containing ``text``."""
    lines = SOURCES[module_key].read_text().splitlines()
    mod = module or f"services.simulator.apps.{module_key}"
    found = [m for m in generate_mutants([mod], functions=[function])
             if m.site.kind == kind and text in lines[m.site.line - 1]]
    assert found, (module_key, text, kind)
    return found[0]


def test_map_reads_the_simulators_payloads_md_rollout_only(freeze):
    _program, path, outcome = freeze
    table = ingest(path, "platform", modules=["application"])
    rollouts = [m["rollout"] for c, _, m in read_messages(path, ["/recon/ego"])]
    assert rollouts.count("gt") > rollouts.count("md")  # the gt twin waits at the bar to the end
    assert table.n_frames == rollouts.count("md")  # it shares the channels but is filtered out
    t = table.timestamps_ns / 1e9
    belief, mismatch = table.column("v2x.signal_belief.color"), table.column("v2x.signal_mismatch")
    assert belief.any() and table.column("v2x.aoi.band").any() and table.column("app.decision").all()
    epoch = next(d.t_s for d in outcome.md.decisions if d.epoch)
    around = (t >= epoch - 0.5) & (t <= epoch + 0.5)
    assert mismatch[around].all()  # believed green (frozen SPaT) while the light is amber
    assert set(belief[around]) == {2}  # green
    assert not mismatch[t < 4.0].any()  # before the freeze the belief is right
    monitors = ingest(path, "platform", modules=["monitor"])
    assert monitors.column("monitor.divergence.kind")[around].tolist() == [4] * int(around.sum())  # phase_wrong
    true_light = monitors.column("traffic_light.color")
    assert set(true_light[around]) == {3}  # yellow, from /signals/true of the ego's group


def test_every_module_ingests_a_real_trace(freeze):
    _program, path, _ = freeze
    for module in sorted(load_channel_map("platform").modules):
        table = ingest(path, "platform", modules=[module])
        assert table.n_frames > 0 and table.vectors.any(), module
    assert ingest(path, "platform").vectors.shape[1] == len(load_channel_map("platform").retained_features())


def test_original_modules_replay_exactly(rlvw):
    program, path, _ = rlvw
    run = load_run(path, program)
    assert fidelity(run) == 1.0
    table = ingest(path, "platform", modules=["application"])
    red = reduce_table(table)
    assert not any(replay_segment(run, table, s).is_fault() for s in red.segments)
    stack = replay_reconstruction(run, keep_infos=True)
    assert stack.error is None
    assert [json.dumps(recon_payload(i)) for i in stack.infos] == [json.dumps(r) for r in run.recon]


def test_a_flipped_stop_rule_is_a_fault_at_the_decision_epoch(rlvw):
    program, path, outcome = rlvw
    run = load_run(path, program)
    table = ingest(path, "platform", modules=["application"])
    red = reduce_table(table)
    flip = _mutant_at("signal", "PHASE_AMBER and d / v", "if", "_epoch_rule").decide(Application.RLVW)
    epoch = next(d.t_s for d in outcome.md.decisions if d.epoch)
    assert next(d.action for d in outcome.md.decisions if d.epoch) == "stop"
    t = table.timestamps_ns / 1e9
    at_epoch = [s for s in red.segments if t[s.start] <= epoch + 1e-9 < t[s.clip_end - 1] + 0.05]
    assert len(at_epoch) == 1
    seg = at_epoch[0]
    changed = replay_segment(run, table, seg, flip)
    assert changed.is_fault() and changed.inconsistency > 0.5
    assert changed.outputs[changed.warmup + int(round((epoch - t[seg.start]) / 0.05))][0] == "proceed"
    assert not replay_segment(run, table, seg, APPS[Application.RLVW].decide).is_fault()
    assert not replay_segment(run, table, seg).mismatch.any()
    before = [s for s in red.segments if t[s.clip_end - 1] < epoch - 1.0]
    assert before and not any(replay_segment(run, table, s, flip).is_fault() for s in before)


def test_a_reconstruction_mutant_is_a_fault(rlvw):
    program, path, _ = rlvw
    run = load_run(path, program)
    table = ingest(path, "platform", modules=["reconstruction"])
    red = reduce_table(table)
    mutant = _mutant_at("reconstruction", "_not_negative(min_end - t_s)", "arith", "Receiver.signal_beliefs",
                        RECONSTRUCTION_MODULE)
    replayed = replay_reconstruction(run, mutant.load())
    expected = recorded_belief_keys(run)
    faults = [replay_segment_reconstruction(run, table, s, replayed, expected).is_fault() for s in red.segments]
    assert any(faults)
    original = replay_reconstruction(run)
    assert not any(replay_segment_reconstruction(run, table, s, original, expected).is_fault() for s in red.segments)
    assert np.array_equal(np.array(original.keys), np.array(expected))
