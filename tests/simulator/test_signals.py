"""Fixed-time plans reproduce lastv2x.core.timeline for the ego and the cross group."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lastv2x.core.spec import ScenarioSpec, SignalPlan
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.core.timeline import phase_at, time_to_change_s
from services.simulator.info import PHASE_CODE
from services.simulator.signals import SignalTable, onset_times_s


@settings(max_examples=25, deadline=None)
@given(cycle=st.floats(40, 120), green=st.floats(5, 30), amber=st.floats(2, 5), red=st.floats(0, 3),
       offset=st.floats(0, 100))
def test_state_matches_timeline(cycle, green, amber, red, offset):
    assume(green + 2 * amber + 2 * red < cycle - 0.5)  # else the timeline's cross group never shows green
    plan = SignalPlan(cycle_s=cycle, green_s=green, amber_s=amber, all_red_s=red, offset_s=offset)
    p = program_from_spec_on_straight_roads(ScenarioSpec(application="RLVW", signal=plan))
    table = SignalTable.from_plans(p.signal_groups)
    for t in np.linspace(0.013, 2.5 * cycle, 97):
        phase, ttc, ttg = table.state(float(t))
        want = [PHASE_CODE[phase_at(plan, t)], PHASE_CODE[phase_at(plan, t, "cross")]]
        assert phase.tolist() == want
        assert np.allclose(ttc, [time_to_change_s(plan, t), time_to_change_s(plan, t, "cross")], atol=1e-6)
        assert np.array_equal(table.phase_at(float(t)), phase)
        assert np.all(ttg[phase == 0] == 0.0) and np.all(ttg[phase != 0] > 0.0)


def test_onsets_and_batch_padding():
    p = program_from_spec_on_straight_roads(ScenarioSpec(application="RLVW", signal=SignalPlan(offset_s=22.0)))
    ns = p.signal_groups[0]
    assert np.allclose(onset_times_s(ns, 1, 0.0, 130.0), [5.0, 65.0, 125.0])
    one = SignalTable.from_plans(p.signal_groups)
    batch = SignalTable.stack([one, SignalTable.from_plans(p.signal_groups[:1])], 2)
    assert batch.state(3.0)[0].shape == (2, 2)
    assert np.array_equal(batch.state(3.0)[0][0], one.state(3.0)[0])
