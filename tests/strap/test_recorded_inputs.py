"""Module replay from what was recorded (TRACE_REQUESTS.md §3): ``/app/input`` and ``/recon/ego``
feed the application, ``/v2x/rx`` checks what the replayed V2X stack delivered."""

from __future__ import annotations

import dataclasses
import math

import pytest

from lastv2x.core.catalogue import Application
from services.simulator.apps import APPS, Action
from services.simulator.info import PHASE_GREEN
from services.simulator.paired import execute_paired
from services.simulator.reference import reference_program
from services.simulator.trace import TraceWriter
from services.simulator.v2x.stack import v2x_source_factory
from services.strap.recorded import (
    BELIEF_APPROXIMATIONS,
    EGO_APPROXIMATION,
    MD,
    SEED_APPROXIMATION,
    read_messages,
)
from services.strap.replay import load_run, replay_reconstruction


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    out = {}
    base = tmp_path_factory.mktemp("recorded")
    for app in Application:
        program = reference_program(app)
        path = base / f"{app.value}.mcap"
        with TraceWriter(path) as tw:
            execute_paired(program, None, md_source_factory=v2x_source_factory(), trace=tw)
        out[app] = (program, path, read_messages(path))
    return out


def _replayed_changes(run):
    """The reference module over the whole run from the recorded inputs, recorded the way paired
    execution records ``/app/decision`` (on a change of action, reason or commitment)."""
    decide = APPS[run.application].decide
    prev, changes = None, []
    for k in range(run.n_steps):
        dec = decide(run.info[k], run.ego[k], run.ctx, prev)
        if not (dec is prev and not dec.epoch and dec.action is not Action.STOP) and not dec.same_as(prev):
            changes.append((int(run.timestamps_ns[k]), dec.action.value, dec.reason, dec.epoch, dec.committed))
        prev = dec
    return changes


@pytest.mark.parametrize("app", list(Application), ids=lambda a: a.value)
def test_recorded_inputs_give_back_the_recorded_decisions(traces, app):
    program, _path, msgs = traces[app]
    run = load_run(msgs, program)
    assert run.approximated == (SEED_APPROXIMATION,)  # everything else read from the trace
    recorded = [(ts, m["action"], m["reason"], bool(m["epoch"]), bool(m["committed"]))
                for ch, ts, m in msgs if ch == "/app/decision" and m["rollout"] == MD]
    assert recorded and _replayed_changes(run) == recorded
    # and per step, the outputs the controller received (/ctrl/ego)
    assert all(run.expected)
    inputs = {ts: m for ch, ts, m in msgs if ch == "/app/input" and m["rollout"] == MD}
    for k in (0, run.n_steps // 2, run.n_steps - 1):
        m, ego = inputs[int(run.timestamps_ns[k])], run.ego[k]
        assert (ego.s_m, ego.speed_mps, ego.xy_m) == (m["s_m"], m["speed_mps"], (m["x"], m["y"]))
        bar = m["stop_bar_distance_m"]
        assert ego.stop_bar_distance_m == (math.inf if bar is None else bar)


def test_a_changed_input_changes_the_replayed_decisions(traces):
    """The property can fail: RLVW fed a belief in which its light stays green does not stop."""
    program, _path, msgs = traces[Application.RLVW]
    run = load_run(msgs, program)
    gid = next(i.ego_group_id for i in run.info if i.ego_group_id is not None)
    stuck = tuple(dataclasses.replace(i, signals={g: dataclasses.replace(b, phase=PHASE_GREEN, time_to_change_s=99.0,
                                                                        time_to_green_s=0.0) for g, b in i.signals.items()})
                  for i in run.info)
    assert gid and "stop" in [c[1] for c in _replayed_changes(run)]
    assert "stop" not in [c[1] for c in _replayed_changes(dataclasses.replace(run, info=stuck))]


def test_older_traces_fall_back_to_rebuilt_inputs(traces):
    program, _path, msgs = traces[Application.FCW]
    no_input = [x for x in msgs if x[0] != "/app/input"]
    run = load_run(no_input, program)
    assert EGO_APPROXIMATION in run.approximated and not set(BELIEF_APPROXIMATIONS) & set(run.approximated)
    thin = [(c, t, {k: v for k, v in m.items() if k not in ("signals", "eebl")} if c == "/recon/ego" else m)
            for c, t, m in no_input]
    assert load_run(thin, program).approximated == (*BELIEF_APPROXIMATIONS, EGO_APPROXIMATION, SEED_APPROXIMATION)


def test_the_v2x_replay_delivers_what_v2x_rx_recorded(traces):
    program, _path, msgs = traces[Application.EEBL]
    run = load_run(msgs, program)
    assert run.rx_traced and sum(map(len, run.rx)) > 0
    assert replay_reconstruction(run, check_rx=True).rx_mismatch == []
    k = next(i for i, r in enumerate(run.rx) if r)
    lost = dataclasses.replace(run, rx=(*run.rx[:k], run.rx[k][1:], *run.rx[k + 1:]))
    assert replay_reconstruction(lost, check_rx=True).rx_mismatch == [k]
