"""Spec-space mutations keep what the test is about and are reproducible from the seed."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application
from lastv2x.core.spec import parse_spec
from services.search.mutate import FAMILY_WEIGHTS, OPERATORS, Family, invariant, mutate
from services.simulator.reference import reference_spec

FAULTED = {
    Application.RLVW: [{"name": "f", "operator": "spat_countdown_offset", "stream": "SPAT", "magnitude": 5.0}],
    Application.GLOSA: [{"name": "f", "operator": "freeze", "stream": "SPAT"}],
    Application.FCW: [{"name": "f", "operator": "delay", "stream": "BSM", "magnitude": 1.0, "duration_s": 4.0}],
    Application.EEBL: [{"name": "f", "operator": "drop", "stream": "EEBL", "probability": 0.5}],
    Application.IMA: [{"name": "f", "operator": "bsm_position_offset", "stream": "BSM", "magnitude": 8.0}],
    Application.LTA: [{"name": "f", "operator": "drop", "stream": "BSM", "burst_count": 20}],
}


def _spec(app: Application):
    d = reference_spec(app).model_dump(mode="json")
    d["faults"] = FAULTED[app]
    return parse_spec(d)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(list(Application)), st.integers(0, 2**32 - 1))
def test_mutants_keep_application_manoeuvre_roster_and_map_query(app: Application, seed: int) -> None:
    spec = _spec(app)
    out = mutate(spec, np.random.default_rng(seed))
    assert out is not None
    child, ops = out
    assert invariant(child) == invariant(spec)
    assert child != spec and ops and all(op in OPERATORS for op in ops)
    assert parse_spec(child.model_dump(mode="json")) == child  # a valid spec, round-trips


@pytest.mark.parametrize("app", list(Application))
def test_same_seed_same_child(app: Application) -> None:
    a = mutate(_spec(app), np.random.default_rng(7))
    b = mutate(_spec(app), np.random.default_rng(7))
    assert a == b


def test_weights_favour_timing_for_conflict_apps_and_faults_for_signal_apps() -> None:
    counts: dict[AppKind, Counter[Family]] = {}
    for app in (Application.IMA, Application.RLVW):
        kind = APPLICATIONS[app].kind
        rng = np.random.default_rng(1)
        c: Counter[Family] = Counter()
        for _ in range(300):
            out = mutate(_spec(app), rng, max_operators=1)
            assert out is not None
            c[OPERATORS[out[1][0]].family] += 1
        counts[kind] = c
    assert counts[AppKind.CONFLICT][Family.TIMING] > counts[AppKind.CONFLICT][Family.FAULT]
    assert counts[AppKind.SIGNAL][Family.FAULT] > counts[AppKind.SIGNAL][Family.TIMING]
    assert FAMILY_WEIGHTS[AppKind.SIGNAL][Family.FAULT] > FAMILY_WEIGHTS[AppKind.SIGNAL][Family.TIMING]


def test_magnitudes_stay_within_the_operator_range() -> None:
    from lastv2x.core.catalogue import FAULT_OPERATORS

    rng = np.random.default_rng(3)
    spec = _spec(Application.RLVW)
    for _ in range(200):
        out = mutate(spec, rng)
        assert out is not None
        for f in out[0].faults:
            rng_ = FAULT_OPERATORS[f.operator.value].magnitude_range
            if rng_ and f.magnitude is not None:
                assert rng_[0] <= f.magnitude <= rng_[1]
        spec = out[0]
