"""Every verifier check family both fires and stays silent."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import parse_spec
from lastv2x.core.verifier import (
    CHECKS,
    Severity,
    burst_breach_probability,
    smallest_breaching_burst,
    verify,
)

# A clean RLVW spec: freeze captured just before amber, amber 1 s before the decision epoch.
RLVW_OK = {
    "application": "RLVW",
    "signal": {"offset_s": 22.353},
    "faults": [{"name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
                "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}],
}
IMA_OK = {
    "application": "IMA",
    "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 1.0}],
    "faults": [{"name": "drop_cross", "operator": "drop", "stream": "BSM", "sender": "cross",
                "burst_count": 20}],
}
FCW_OK = {
    "application": "FCW",
    "agents": [{"id": "lead", "role": "lead", "behaviour": {"kind": "hard_brake", "at_time_s": 4.0}}],
    "faults": [{"name": "drop_lead", "operator": "drop", "stream": "BSM", "sender": "lead",
                "anchor": {"kind": "scenario_time", "offset_s": 3.5}, "duration_s": 3.0}],
}


def families(spec: dict, severity: Severity | None = None) -> set[str]:
    report = verify(parse_spec(spec))
    return {f.check for f in report.findings if severity is None or f.severity is severity}


def mutate(base: dict, patch: list[tuple[str, object]]) -> dict:
    return apply_patch(copy.deepcopy(base), patch)


@pytest.mark.parametrize("spec", [RLVW_OK, IMA_OK, FCW_OK], ids=["rlvw", "ima", "fcw"])
def test_clean_specs_have_no_findings(spec: dict) -> None:
    assert families(spec) == set()


FIRING = {
    "consistency": (IMA_OK, [("faults[0].sender", "ghost")]),
    "roster": (IMA_OK, [("agents", [])]),
    "stream_consumption": (RLVW_OK, [("faults[0].stream", "BSM")]),
    "operator_field": (IMA_OK, [("faults[0].operator", "delay"), ("faults[0].burst_count", None),
                                ("faults[0].magnitude", 99.0)]),
    "anchor_reachability": (RLVW_OK, [("faults[0].anchor", {"kind": "ego_event", "event": "stop_bar_distance",
                                                          "distance_m": 500.0})]),
    "freshness_budget": (IMA_OK, [("faults[0].burst_count", 2)]),
    "decision_window": (RLVW_OK, [("faults[0].anchor", {"kind": "scenario_time", "offset_s": 20.0})]),
    "semantic_corruption": (RLVW_OK, [("signal.offset_s", None)]),
    "timing": (IMA_OK, [("agents[0].arrival_offset_s", 12.0)]),
    "penetration": (IMA_OK, [("v2x", {"penetration": 0.1})]),
    "channel_baseline": (RLVW_OK, [("v2x", {"channel": {"range_m": 30.0}})]),
}


def test_every_family_has_a_firing_case() -> None:
    assert set(FIRING) == set(CHECKS)
    assert len(CHECKS) == 11


@pytest.mark.parametrize("family", sorted(FIRING))
def test_family_fires_with_fields_and_repair(family: str) -> None:
    base, patch = FIRING[family]
    report = verify(parse_spec(mutate(base, patch)))
    hits = [f for f in report.findings if f.check == family]
    assert hits, f"{family} did not fire: {[f.check for f in report.findings]}"
    for f in hits:
        assert f.fields, "a finding must name responsible fields"
        assert f.message


@pytest.mark.parametrize("family", sorted(FIRING))
def test_repair_silences_the_family(family: str) -> None:
    base, patch = FIRING[family]
    bad = mutate(base, patch)
    report = verify(parse_spec(bad))
    finding = next(f for f in report.findings if f.check == family)
    if finding.repair is None or not finding.repair.patch:
        pytest.skip(f"{family} repair is advisory")
    fixed = apply_patch(bad, finding.repair.patch)
    assert family not in families(fixed, finding.severity)


def test_severities_match_the_paper() -> None:
    assert families(mutate(IMA_OK, [("v2x", {"penetration": 0.1})]), Severity.WARNING) == {"penetration"}
    silent_probe = mutate(IMA_OK, [("faults", []), ("agents[0].equipped", False)])
    report = verify(parse_spec(silent_probe))
    assert [(f.check, f.severity) for f in report.findings] == [("penetration", Severity.NOTE)]
    assert report.ok
    no_rsu = mutate(RLVW_OK, [("v2x", {"rsu_placement": "none"})])
    assert families(no_rsu, Severity.WARNING) == {"channel_baseline"}


def test_conflict_timing_window_is_8_seconds() -> None:
    assert "timing" not in families(mutate(IMA_OK, [("agents[0].arrival_offset_s", 8.0)]))
    assert "timing" in families(mutate(IMA_OK, [("agents[0].arrival_offset_s", -8.5)]))


def test_breaching_drop_count_is_closed_form() -> None:
    # IMA budget 0.5 s, BSM period 0.1 s, latency 0.01 s: n* = floor(0.49 / 0.1) = 4.
    assert smallest_breaching_burst(0.5, 0.1, 0.01) == 4
    report = verify(parse_spec(mutate(IMA_OK, [("faults[0].burst_count", 3)])))
    f = next(f for f in report.findings if f.check == "freshness_budget")
    assert ("faults[0].burst_count", 4) in f.repair.patch
    assert "freshness_budget" not in families(mutate(IMA_OK, [("faults[0].burst_count", 4)]))


@settings(max_examples=60, deadline=None)
@given(p=st.floats(0.0, 1.0), n=st.integers(1, 20), m=st.integers(0, 200))
def test_breach_probability_is_a_probability_and_monotone(p: float, n: int, m: int) -> None:
    q = burst_breach_probability(p, n, m)
    assert 0.0 <= q <= 1.0
    assert burst_breach_probability(min(1.0, p + 0.05), n, m) >= q - 1e-12
    assert burst_breach_probability(p, n, m + 10) >= q - 1e-12


@settings(max_examples=80, deadline=None)
@given(speed=st.floats(3.0, 30.0), dist=st.floats(30.0, 400.0), offset=st.floats(0.0, 59.0))
def test_verifier_is_deterministic_and_total(speed: float, dist: float, offset: float) -> None:
    spec = mutate(RLVW_OK, [("ego", {"speed_mps": speed, "start_distance_m": dist}), ("signal.offset_s", offset)])
    a, b = verify(parse_spec(spec)), verify(parse_spec(spec))
    assert a == b
    for f in a.findings:
        assert f.check in CHECKS
