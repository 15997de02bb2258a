"""Delta debugging: 1-minimality, the total order, the cache, the certificate (against oracles, no simulator)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

from hypothesis import given, settings
from hypothesis import strategies as st

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import ScenarioSpec, parse_spec
from lastv2x.core.timeline import fault_window_s
from services.search.shrink import (
    START_RESOLUTION_S,
    CachedPredicate,
    Shrinker,
    Ungroundable,
    Verdict,
    greedy_minimize,
    refine_step,
    single_weakenings,
    spec_order,
    window_length_s,
)
from services.simulator.reference import reference_spec

FAULTS = [
    {"name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
     "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}},
    {"name": "delay_spat", "operator": "delay", "stream": "SPAT", "magnitude": 4.0},
    {"name": "countdown", "operator": "spat_countdown_offset", "stream": "SPAT", "magnitude": -12.0,
     "duration_s": 20.0},
    {"name": "drop_map", "operator": "drop", "stream": "MAP", "probability": 0.8},
    {"name": "stale_spat", "operator": "timestamp_offset", "stream": "SPAT", "magnitude": 3.0, "duration_s": 9.0},
]


def _spec(fault_ids: list[int]) -> ScenarioSpec:
    base = reference_spec(Application.RLVW).model_dump(mode="json")
    base["faults"] = [FAULTS[i] for i in fault_ids]
    return parse_spec(base)


def _oracle(need: dict[str, tuple[float, ...]]):
    """Admits iff, for some named fault present, its strength knob >= a, its window >= w seconds and (when a
    third figure is given) its window starts no later than s and ends no earlier than e."""
    def admits(spec: ScenarioSpec) -> bool:
        for f in spec.faults:
            if f.name in need:
                min_value, min_window, *when = need[f.name]
                value = abs(f.magnitude) if f.magnitude is not None else (f.probability or 1.0)
                start, end = fault_window_s(spec, f)
                latest_start, earliest_end = (when + [float("inf"), 0.0])[:2]
                if value >= min_value and window_length_s(spec, f) >= min_window and start <= latest_start \
                        and end >= earliest_end:
                    return True
        return False
    return admits


def _predicate(admits, runs: Counter[Hashable]) -> CachedPredicate:
    def key(spec: ScenarioSpec) -> Hashable:
        return spec.model_dump_json()

    def run(spec: ScenarioSpec, k: Hashable) -> Verdict:
        runs[k] += 1
        return Verdict.ADMITTED if admits(spec) else Verdict.NOT_ADMITTED
    return CachedPredicate(key, run)


scenes = st.lists(st.integers(0, len(FAULTS) - 1), min_size=1, max_size=4, unique=True)
needs = st.dictionaries(st.sampled_from([f["name"] for f in FAULTS]),
                        st.tuples(st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.0, 2.9]),
                                  st.sampled_from([0.0, 0.5, 2.0, 5.0]),
                                  st.sampled_from([float("inf"), 0.3, 1.0, 5.0]),  # latest admitting start, s
                                  st.sampled_from([0.0, 6.0])),  # earliest admitting end, s
                        min_size=1, max_size=3)


@settings(max_examples=60, deadline=None)
@given(scenes, needs, st.booleans(), st.booleans())
def test_result_is_one_minimal_and_admitted(fault_ids: list[int], need: dict[str, tuple[float, ...]],
                                            bisect: bool, refine: bool) -> None:
    """1-minimal w.r.t. every basic weakening, delaying a window's start included, with or without the
    binary search and the refinement steps."""
    spec = _spec(fault_ids)
    admits = _oracle(need)
    if not admits(spec):
        return
    runs: Counter[Hashable] = Counter()
    result = Shrinker(_predicate(admits, runs), max_calls=500, bisect=bisect, refine=refine).run(spec)
    assert admits(result.spec)
    assert result.complete
    # 1-minimal: no single weakening keeps the admission, and the certificate lists every one of them
    weakenings = list(single_weakenings(result.spec))
    assert not any(admits(w.spec) for w in weakenings)
    assert [(e.pass_name, e.description) for e in result.certificate] == \
        [(w.pass_name, w.description) for w in weakenings]
    assert all(e.verdict is Verdict.NOT_ADMITTED for e in result.certificate)
    # the simulator never runs the same (program, seed) twice
    assert max(runs.values(), default=1) == 1
    assert result.runs == len(runs) and result.calls == result.runs + result.hits
    assert spec_order(result.spec) <= spec_order(spec)


def test_single_fault_witness_keeps_only_the_causal_fault() -> None:
    spec = _spec([0, 1, 3])
    result = Shrinker(_predicate(_oracle({"freeze_spat": (0.0, 2.0)}), Counter())).run(spec)
    assert [f.name for f in result.spec.faults] == ["freeze_spat"]
    # the window was shortened, but not below what the failure needs
    w = window_length_s(result.spec, result.spec.faults[0])
    assert 2.0 <= w < window_length_s(spec, spec.faults[0])


def test_magnitude_binary_search_finds_the_threshold_region() -> None:
    spec = _spec([2])  # countdown offset -12 s for 20 s
    result = Shrinker(_predicate(_oracle({"countdown": (3.0, 0.0)}), Counter()), bisect=True).run(spec)
    m = abs(result.spec.faults[0].magnitude or 0.0)
    assert 3.0 <= m < 6.0  # halving 12 -> 6 admits, 3 admits, 1.5 does not; bisection cannot go below 3
    plain = Shrinker(_predicate(_oracle({"countdown": (2.2, 0.0)}), Counter())).run(spec)
    bisected = Shrinker(_predicate(_oracle({"countdown": (2.2, 0.0)}), Counter()), bisect=True).run(spec)
    halved = Shrinker(_predicate(_oracle({"countdown": (2.2, 0.0)}), Counter()), refine=False).run(spec)
    assert abs(halved.spec.faults[0].magnitude or 0) == 3.0  # halving stops at a power of two
    assert 2.2 <= abs(bisected.spec.faults[0].magnitude or 0) < 3.0  # bisection gets closer to the threshold
    assert 2.2 <= abs(plain.spec.faults[0].magnitude or 0) < 3.0  # so do the (default) refinement steps


def test_budget_exhaustion_is_reported_not_hidden() -> None:
    spec = _spec([0, 1, 2, 3, 4])
    result = Shrinker(_predicate(_oracle({"countdown": (0.0, 0.0)}), Counter()), max_calls=2).run(spec)
    assert result.calls == 2
    assert not result.complete
    assert any(e.verdict is None for e in result.certificate)


def test_ungroundable_weakenings_are_not_admissions() -> None:
    spec = _spec([0, 1])

    def key(s: ScenarioSpec) -> Hashable:
        if len(s.faults) < 2:
            raise Ungroundable("no junction")
        return s.model_dump_json()

    pred = CachedPredicate(key, lambda s, k: Verdict.ADMITTED)
    result = Shrinker(pred).run(spec)
    assert len(result.spec.faults) == 2
    assert any(e.verdict is Verdict.UNGROUNDABLE for e in result.certificate)


def test_two_specs_grounding_to_one_program_share_one_execution() -> None:
    runs: Counter[Hashable] = Counter()

    def key(s: ScenarioSpec) -> Hashable:
        return len(s.faults)  # pretend grounding maps every spec with n faults to one program

    def run(s: ScenarioSpec, k: Hashable) -> Verdict:
        runs[k] += 1
        return Verdict.NOT_ADMITTED

    pred = CachedPredicate(key, run)
    a, b = _spec([0]), _spec([1])
    assert pred(a) is pred(b) is Verdict.NOT_ADMITTED
    assert runs == {1: 1} and pred.hits == 1


def test_total_order_prefers_fewer_then_weaker_then_shorter() -> None:
    one, two = _spec([1]), _spec([1, 3])
    assert spec_order(one) < spec_order(two)
    halved = next(w.spec for w in single_weakenings(one) if w.pass_name == "halve_magnitude")
    assert spec_order(halved) < spec_order(one)
    shorter = next(w.spec for w in single_weakenings(one) if w.pass_name == "shorten_window")
    assert spec_order(shorter) < spec_order(one)


def test_greedy_baseline_reaches_a_one_minimal_result_with_more_calls() -> None:
    spec = _spec([0, 1, 2, 3])
    admits = _oracle({"countdown": (2.0, 1.0)})
    greedy_spec, greedy_calls = greedy_minimize(spec, admits)
    assert admits(greedy_spec)
    assert not any(admits(w.spec) for w in single_weakenings(greedy_spec)
                   if w.pass_name in ("remove_fault", "halve_magnitude", "shorten_window"))  # the paper's three
    ours = Shrinker(_predicate(admits, Counter()), bisect=False, refine=False).run(spec)
    assert ours.runs <= greedy_calls


def test_weakenings_are_named_structurally() -> None:
    """Each weakening says (pass, index): the element it weakens, never left to its description text."""
    spec = _spec([1, 2, 3])
    for w in single_weakenings(spec):
        if w.pass_name == "remove_fault":
            assert [f.name for f in w.spec.faults] == [f.name for k, f in enumerate(spec.faults) if k != w.index]
        elif w.pass_name == "drop_behaviour":
            assert w.spec.agents[w.index].behaviour.kind.value == "none"
        else:  # halve_magnitude, shorten_window, delay_start: only faults[index] changed
            changed = [k for k, (a, b) in enumerate(zip(spec.faults, w.spec.faults, strict=True)) if a != b]
            assert changed == [w.index], (w.pass_name, w.index, changed)


def test_greedy_baseline_does_not_read_descriptions(monkeypatch) -> None:
    import services.search.shrink as shrink

    spec = _spec([0, 1, 2, 3])
    admits = _oracle({"countdown": (2.0, 1.0)})
    expected = greedy_minimize(spec, admits)
    for name in ("_remove_fault", "_halve_magnitude", "_shorten_window"):
        gen = getattr(shrink, name)
        monkeypatch.setattr(shrink, name, lambda s, gen=gen: (
            shrink.Weakening(w.pass_name, w.index, "", w.spec) for w in gen(s)))
    assert greedy_minimize(spec, admits) == expected


def test_a_pass_keeps_its_place_after_a_success() -> None:
    """Fault 0's magnitude is needed as it is, the others can be halved: after halving faults[1] the pass
    goes on at faults[1], it does not try faults[0] again (the next sweep does, once)."""
    spec = _spec([1, 2, 4])  # delay 4 s, countdown -12 s, stale 3 s
    shrinker = Shrinker(_predicate(_oracle({"delay_spat": (4.0, 0.0)}), Counter()), max_calls=500)
    halve = next(p for p in shrinker.passes if p.name == "halve_magnitude")
    assert halve.generate is not None
    generate, index_of, tried = halve.generate, {}, []

    def logged(s: ScenarioSpec):
        for w in generate(s):
            index_of[id(w.spec)] = w.index
            yield w
    halve.generate = logged
    try_ = shrinker._try

    def spy(p, current, candidate) -> bool:
        tried.append(index_of[id(candidate)])
        return try_(p, current, candidate)
    shrinker._try = spy  # type: ignore[method-assign]
    out = shrinker._run_basic(halve, spec)
    assert tried == sorted(tried) and tried.count(0) == 1 and len(set(tried)) == 3
    assert out.faults[0].magnitude == 4.0 and abs(out.faults[1].magnitude or 0) < 12.0


# ── the window's start moves later; finer magnitude steps (issue 31) ─────────────────────────────────
def _freeze_needing_amber_to_plus_one() -> tuple[ScenarioSpec, object]:
    """The RLVW freeze anchored 0.5 s before amber (amber onset at t = 5 s, the window open to the end), under
    an oracle that needs only amber +0 .. +1.0 s frozen: it admits iff the window covers [5.0, 6.0)."""
    return _spec([0]), _oracle({"freeze_spat": (0.0, 0.0, 5.0, 6.0)})


def test_window_start_moves_later_to_the_latest_admitting_start() -> None:
    spec, admits = _freeze_needing_amber_to_plus_one()
    assert fault_window_s(spec, spec.faults[0]) == (4.5, 30.0)
    result = Shrinker(_predicate(admits, Counter())).run(spec)
    start, end = fault_window_s(result.spec, result.spec.faults[0])
    assert 5.0 - START_RESOLUTION_S < start <= 5.0  # the latest admitting start, to the resolution
    assert result.spec.faults[0].anchor.offset_s == 0.0  # here exactly: "amber +0"
    assert 6.0 <= end < 6.5  # the end the halvings left is kept
    assert result.complete and admits(result.spec)
    # the certificate covers moving the start later (by half the window): it no longer admits
    delayed = [e for e in result.certificate if e.pass_name == "delay_start"]
    assert len(delayed) == 1 and delayed[0].verdict is Verdict.NOT_ADMITTED
    refine = next(p for p in result.passes if p["pass"] == "refine_start")
    assert 0 < int(refine["tried"]) <= 3
    # without the refinement the start stays where it was (halving it overshoots amber)
    coarse = Shrinker(_predicate(admits, Counter()), refine=False).run(spec)
    assert fault_window_s(coarse.spec, coarse.spec.faults[0])[0] == 4.5
    assert result.calls - coarse.calls <= 6


def test_delay_start_keeps_the_end_of_a_window_with_a_duration() -> None:
    spec = _spec([4])  # stale SPaT, magnitude 3 s, [0, 9)
    (w,) = [w for w in single_weakenings(spec) if w.pass_name == "delay_start"]
    assert fault_window_s(w.spec, w.spec.faults[0]) == (4.5, 9.0)
    assert w.spec.faults[0].duration_s == 4.5 and w.spec.faults[0].anchor.offset_s == 4.5
    assert spec_order(w.spec) < spec_order(spec)


def test_finer_magnitude_steps_reach_the_admitting_value_below_a_halving_fixed_point() -> None:
    """GLOSA's countdown fault still admits at 1.9 s where halving keeps 2.0 s (1.0 does not admit)."""
    d = reference_spec(Application.GLOSA).model_dump(mode="json")
    d["faults"] = [{"name": "countdown", "operator": "spat_countdown_offset", "stream": "SPAT", "magnitude": 2.0}]
    spec = parse_spec(d)
    admits = _oracle({"countdown": (1.9, 0.0)})
    coarse = Shrinker(_predicate(admits, Counter()), refine=False).run(spec)
    fine = Shrinker(_predicate(admits, Counter())).run(spec)
    assert coarse.spec.faults[0].magnitude == 2.0
    assert fine.spec.faults[0].magnitude == 1.9 and fine.complete
    assert fine.calls - coarse.calls <= 5  # 1.9 admits, 1.8 does not, then the basic passes certify 1.9
    # signed knobs keep their sign; the step count per knob is bounded (REFINE_STEPS accepted steps)
    signed = Shrinker(_predicate(_oracle({"countdown": (9.0, 0.0)}), Counter())).run(_spec([2]))
    assert signed.spec.faults[0].magnitude == -11.0  # -12 -> -11.5 -> -11 (step 0.5), then it stops


def test_refine_step_is_a_round_fraction_of_the_value() -> None:
    assert refine_step(2.0) == 0.1 and refine_step(-12.0) == 0.5 and refine_step(0.3) == 0.01
    assert refine_step(5, integer=True) == 1.0 and refine_step(0.0) == 0.0


def test_same_spec_same_witness() -> None:
    spec = _spec([0, 1, 2, 4])
    admits = _oracle({"freeze_spat": (0.0, 0.0, 5.0, 6.0), "countdown": (1.7, 1.0)})
    a = Shrinker(_predicate(admits, Counter())).run(spec)
    b = Shrinker(_predicate(admits, Counter())).run(spec)
    assert a.spec.model_dump_json() == b.spec.model_dump_json() and a.calls == b.calls
    assert a.certificate == b.certificate


def test_a_replay_is_weakened_by_a_shorter_lag_and_a_shorter_window() -> None:
    """The replay's catalogue entry gives its knob (the lag, in s): the generic passes halve it and shorten its
    window, and the shrink stops at the shortest lag and window that still admit."""
    base = reference_spec(Application.RLVW).model_dump(mode="json")
    base["faults"] = [{"name": "replay_spat", "operator": "replay", "stream": "SPAT", "magnitude": 8.0,
                       "duration_s": 12.0}]
    spec = parse_spec(base)
    passes = {w.pass_name: w.spec for w in single_weakenings(spec)}
    assert passes["halve_magnitude"].faults[0].magnitude == 4.0
    assert window_length_s(passes["shorten_window"], passes["shorten_window"].faults[0]) < 12.0
    assert spec_order(passes["halve_magnitude"]) < spec_order(spec)
    result = Shrinker(_predicate(_oracle({"replay_spat": (1.5, 3.0)}), Counter())).run(spec)
    (f,) = result.spec.faults
    assert result.complete and 1.5 <= (f.magnitude or 0.0) < 3.0 and 3.0 <= window_length_s(result.spec, f) < 6.0
