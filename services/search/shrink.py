"""Delta debugging to a 1-minimal witness, written the way Hypothesis writes its shrinker.

The problem: an admitted spec usually carries more than its failure needs — extra
faults, magnitudes larger than necessary, windows longer than the decision needs,
agent behaviours that do not matter. A *witness* should carry only what is causal:
no single weakening (remove a fault, halve its magnitude, shorten its window from the
end, move its window's start later by half the window with the end kept, drop an
agent's optional behaviour) may keep the paired admission. That is 1-minimality
(LAST-V2X §2.5; moving the start is ours: a freeze anchored before amber may need only
amber +0 .. +1 s, which shortening from the end never finds).

The design, after Hypothesis's ``internal/conjecture/shrinker.py``:

* **A total order on specs** (:func:`spec_order`): fewer faults < weaker faults <
  shorter windows < fewer agent behaviours, ties broken by the canonical JSON. A
  candidate is tried only when it is *strictly smaller* than the current spec, so the
  search cannot cycle and always terminates.
* **One cached predicate** (:class:`CachedPredicate`): "does the paired run admit?".
  The cache is keyed by what the simulator would run — ``(program sha, seed)`` in the
  campaign — so two specs that ground to the same program share one execution and no
  (program, seed) is ever executed twice.
* **Passes are objects with counters** (:class:`ShrinkPass`): each yields the
  weakenings of the current spec it knows, each named structurally by ``(pass, index)``
  (the element it weakens; nothing is ever matched by its description). A sweep runs
  the passes, most useful first (re-ordered by accepted weakenings, as Hypothesis
  re-orders its passes); a pass that succeeds keeps its place: it goes on from the
  element it just weakened, on the new spec, rather than starting over. Sweeps repeat
  to a fixed point: a full sweep that accepts nothing. The order key of the current
  spec (every candidate is compared with it) is computed once per spec.
* **Coarse first, then fine**: the weakenings of the paper (remove, halve, shorten)
  plus moving a window's start later and dropping an agent behaviour are the *basic*
  passes and define 1-minimality; once they reach a fixed point, binary search on the
  numeric fields (magnitude, window length; optional, ``bisect=True``) narrows each
  value between the failed halving and the admitted value in a few calls, then the
  basic passes run again. Off by default: it buys smaller magnitudes for more
  executions, and campaigns pay per execution (``bench/bench_search.py`` measures both).
* **Refinement** (``refine=True``, the default), once, after that: bounded finer steps
  where halving overshoots. Each strength knob steps down by a round 5 % of its value
  (:func:`refine_step`: 2.0 -> 1.9 -> 1.8), at most ``REFINE_STEPS`` accepted steps,
  stopping at the first that loses the admission; each window's start moves to the
  latest admitting start (end kept) by binary search between its start and the one
  ``delay_start`` failed with, ``START_PROBES`` probes to ``START_RESOLUTION_S``, on a
  ``START_GRID_S`` grid of anchor offsets. When it changed anything the basic passes
  run again, so the certificate is about the refined spec. A knob that is already at
  its threshold costs one call.
* **A certificate**: when the fixed point is reached, every basic weakening of the
  final spec has been tried against it; the certificate lists each with its verdict
  (from the cache, no extra run). A shrink stopped by its call budget says so
  (``complete = False``): the result is then smaller, but not proven 1-minimal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lastv2x.core.catalogue import FAULT_OPERATORS, StrengthKnob
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import BehaviourKind, Fault, ScenarioSpec, parse_spec, spec_to_dict
from lastv2x.core.timeline import anchor_time_s, fault_window_s

MIN_WINDOW_S = 0.1  # shortest window a shrink produces
BISECT_PROBES = 4  # binary-search probes per numeric field and visit
# Refinement (on by default; see the module docstring): bounded, after the basic fixed point.
REFINE_STEP = 0.05  # a magnitude step is the 1-2-5 value nearest below this fraction of |value| (2.0 -> 0.1)
REFINE_STEPS = 2  # at most this many accepted magnitude steps per knob (each try is one predicate call)
START_PROBES = 3  # binary-search probes for the latest admitting start of a window, per fault
START_RESOLUTION_S = 0.1  # ... stopped once the admitted and the failed start are this close
START_GRID_S = 0.05  # probed starts are anchor offsets on this grid (the simulator's default step, dt)


class Verdict(StrEnum):
    ADMITTED = "admitted"  # the message-driven ego fails, its ground-truth twin stays safe
    NOT_ADMITTED = "not_admitted"
    REFUSED = "refused"  # the simulator refused the program (e.g. a magnitude out of range)
    UNGROUNDABLE = "ungroundable"  # grounding found no place for the spec
    INVALID = "invalid"  # the weakened spec fails the schema (never sent anywhere)


# ── the total order ───────────────────────────────────────────────────────
def fault_strength(fault: Fault) -> float:
    """How hard a fault pushes, in [0, 1]: the first strength knob the fault sets (the catalogue's
    ``FaultOperatorInfo.knobs``: magnitude over the operator's largest, drop probability, burst length over
    its cap); 1 for operators without one (freeze, phase corruption, ...)."""
    for knob in FAULT_OPERATORS[fault.operator.value].knobs:
        value = getattr(fault, knob.field)
        if value is not None:
            if knob.inverse:  # farther is weaker (a ghost): strongest / |value|
                return min(1.0, knob.strongest / max(abs(value), 1e-9))
            ratio = abs(value) / knob.strongest
            return min(1.0, ratio) if knob.clamp else ratio
    return 1.0


def window_length_s(spec: ScenarioSpec, fault: Fault) -> float:
    """Active seconds of a fault (0 when its anchor never happens)."""
    start, end = fault_window_s(spec, fault)
    return max(0.0, end - start) if math.isfinite(start) else 0.0


def spec_order(spec: ScenarioSpec) -> tuple[Any, ...]:
    """The total order of candidate specs: smaller = simpler witness."""
    return (len(spec.faults),
            round(sum(fault_strength(f) for f in spec.faults), 9),
            round(sum(window_length_s(spec, f) for f in spec.faults), 6),
            sum(a.behaviour.kind is not BehaviourKind.NONE for a in spec.agents),
            spec.model_dump_json())


# ── the cached predicate ──────────────────────────────────────────────────
class CachedPredicate:
    """``spec -> Verdict``, cached by ``key(spec)``.

    ``key`` says what would run (the campaign grounds the spec and returns
    ``(program sha, seed)``; raising :class:`Ungroundable` means there is nothing to
    run); ``run`` executes it. ``run`` is called at most once per key.
    """

    def __init__(self, key: Callable[[ScenarioSpec], Hashable], run: Callable[[ScenarioSpec, Hashable], Verdict]):
        self._key = key
        self._run = run
        self._cache: dict[Hashable, Verdict] = {}
        self._by_spec: dict[str, Verdict] = {}
        self.calls = 0  # predicate evaluations asked for
        self.hits = 0  # answered from the cache
        self.runs = 0  # executions started

    def __call__(self, spec: ScenarioSpec) -> Verdict:
        self.calls += 1
        text = spec.model_dump_json()
        if text in self._by_spec:
            self.hits += 1
            return self._by_spec[text]
        try:
            key = self._key(spec)
        except Ungroundable:
            self._by_spec[text] = Verdict.UNGROUNDABLE
            return Verdict.UNGROUNDABLE
        if key in self._cache:
            self.hits += 1
            verdict = self._cache[key]
        else:
            self.runs += 1
            verdict = self._cache[key] = self._run(spec, key)
        self._by_spec[text] = verdict
        return verdict

    def known(self, spec: ScenarioSpec) -> Verdict | None:
        """The verdict if this spec was already evaluated (no call counted)."""
        return self._by_spec.get(spec.model_dump_json())



class Ungroundable(Exception):
    """Raised by a predicate's key function when the spec cannot be grounded."""


# ── passes ────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Weakening:
    """One candidate, named structurally: ``(pass_name, index)`` says which pass made it and which element it
    weakens (``faults[index]``, or ``agents[index]`` for ``drop_behaviour``); ``description`` is for people."""

    pass_name: str
    index: int
    description: str
    spec: ScenarioSpec


def _with(spec: ScenarioSpec, edit: Callable[[dict[str, Any]], None]) -> ScenarioSpec | None:
    d = spec_to_dict(spec)
    edit(d)
    try:
        return parse_spec(d)
    except InvalidArgument:
        return None


def _remove_fault(spec: ScenarioSpec) -> Iterator[Weakening]:
    for i, f in enumerate(spec.faults):
        def edit(d: dict[str, Any], i: int = i) -> None:
            d["faults"].pop(i)
        out = _with(spec, edit)
        if out is not None:
            yield Weakening("remove_fault", i, f"remove faults[{i}] ({f.name}: {f.operator.value} on {f.stream.value})", out)


def _magnitude_field(fault: Fault) -> tuple[StrengthKnob, float, float] | None:
    """(knob, current value, weakest legal value) of a fault's strength knob (the catalogue's); an inverse knob
    (farther is weaker) is not halved, bisected or refined down: :func:`_move_farther` weakens it."""
    for knob in FAULT_OPERATORS[fault.operator.value].knobs:
        value = getattr(fault, knob.field)
        if knob.inverse:
            return None
        if value is not None:
            return knob, float(value), math.copysign(knob.weakest, value)
    return None


def _set_field(spec: ScenarioSpec, i: int, knob: StrengthKnob, value: float) -> ScenarioSpec | None:
    v: float | int = int(round(value)) if knob.integer else round(value, 4)

    def edit(d: dict[str, Any]) -> None:
        d["faults"][i][knob.field] = v
    return _with(spec, edit)


def _halve_magnitude(spec: ScenarioSpec) -> Iterator[Weakening]:
    for i, f in enumerate(spec.faults):
        knob = _magnitude_field(f)
        if knob is None:
            continue
        k, cur, floor = knob
        new = cur / 2.0
        if abs(new) < abs(floor):
            new = floor
        if abs(new) >= abs(cur) - 1e-9:
            continue
        out = _set_field(spec, i, k, new)
        if out is not None:
            yield Weakening("halve_magnitude", i, f"halve faults[{i}].{k.field} ({cur:g} -> {new:g})", out)


def _move_farther(spec: ScenarioSpec) -> Iterator[Weakening]:
    """An inverse strength knob (a ghost's distance from the ego: farther is weaker) doubled, up to its weakest
    value (the far end), its sign kept."""
    for i, f in enumerate(spec.faults):
        for k in FAULT_OPERATORS[f.operator.value].knobs:
            value = getattr(f, k.field)
            if not k.inverse or value is None:
                continue
            cur = float(value)
            new = min(max(abs(cur) * 2.0, 1.0), k.weakest)
            if new <= abs(cur) + 1e-9:
                continue
            out = _set_field(spec, i, k, math.copysign(new, cur) if cur else new)
            if out is not None:
                yield Weakening("move_farther", i, f"move faults[{i}] farther ({k.field} {cur:g} -> "
                                                   f"{math.copysign(new, cur) if cur else new:g})", out)


def _set_duration(spec: ScenarioSpec, i: int, duration_s: float) -> ScenarioSpec | None:
    def edit(d: dict[str, Any]) -> None:
        d["faults"][i]["duration_s"] = round(duration_s, 3)
    return _with(spec, edit)


def _shorten_window(spec: ScenarioSpec) -> Iterator[Weakening]:
    for i, f in enumerate(spec.faults):
        length = window_length_s(spec, f)
        new = max(MIN_WINDOW_S, length / 2.0)
        if length <= 0.0 or new >= length - 1e-9:
            continue
        out = _set_duration(spec, i, new)
        if out is not None:
            yield Weakening("shorten_window", i, f"shorten faults[{i}] window ({length:.3g} s -> {new:.3g} s)", out)


def _set_start(spec: ScenarioSpec, i: int, start_s: float) -> ScenarioSpec | None:
    """``faults[i]`` opening at ``start_s`` with its end kept: the anchor's offset moves (snapped to
    ``START_GRID_S``) and a set duration loses what the start gained (an open window stays open to the end)."""
    f = spec.faults[i]
    t_anchor = anchor_time_s(spec, f)
    if not math.isfinite(t_anchor):
        return None
    _, end = fault_window_s(spec, f)
    offset = round(round((start_s - t_anchor) / START_GRID_S) * START_GRID_S, 3)
    new_start = max(0.0, t_anchor + offset)
    if end - new_start < MIN_WINDOW_S - 1e-9:
        return None

    def edit(d: dict[str, Any]) -> None:
        d["faults"][i]["anchor"]["offset_s"] = offset
        if f.duration_s is not None:
            d["faults"][i]["duration_s"] = round(end - new_start, 3)
    return _with(spec, edit)


def _delay_start(spec: ScenarioSpec) -> Iterator[Weakening]:
    """Shorten a window from the front: its start moves later by half its length, its end stays (a freeze
    anchored before amber may need only the seconds after it)."""
    for i, f in enumerate(spec.faults):
        length = window_length_s(spec, f)
        new = max(MIN_WINDOW_S, length / 2.0)
        if length <= 0.0 or new >= length - 1e-9:
            continue
        start, end = fault_window_s(spec, f)
        out = _set_start(spec, i, end - new)
        if out is None:
            continue
        later = fault_window_s(out, out.faults[i])[0]
        if later > start + 1e-9:
            yield Weakening("delay_start", i, f"delay faults[{i}] window start ({start:.4g} s -> {later:.4g} s, "
                                              f"end {end:.4g} s kept)", out)


def _drop_behaviour(spec: ScenarioSpec) -> Iterator[Weakening]:
    for j, a in enumerate(spec.agents):
        if a.behaviour.kind is BehaviourKind.NONE:
            continue

        def edit(d: dict[str, Any], j: int = j) -> None:
            d["agents"][j]["behaviour"] = {"kind": "none", "at_time_s": None, "decel_mps2": 6.0}
        out = _with(spec, edit)
        if out is not None:
            yield Weakening("drop_behaviour", j, f"drop agents[{j}] ({a.id}) behaviour {a.behaviour.kind.value}", out)


Generator = Callable[[ScenarioSpec], Iterator[Weakening]]


@dataclass
class ShrinkPass:
    """One kind of weakening, with the counters Hypothesis keeps per pass."""

    name: str
    generate: Generator | None = None  # basic passes: the weakenings of a spec
    basic: bool = True  # part of the 1-minimality definition (and of the certificate)
    tried: int = 0  # candidates evaluated
    accepted: int = 0  # candidates that kept the admission
    runs: int = 0  # of those evaluations, how many executed (cache misses)

    def stats(self) -> dict[str, int | str]:
        return {"pass": self.name, "tried": self.tried, "accepted": self.accepted, "runs": self.runs}


BASIC_PASSES: tuple[tuple[str, Generator], ...] = (
    ("remove_fault", _remove_fault), ("halve_magnitude", _halve_magnitude), ("move_farther", _move_farther),
    ("shorten_window", _shorten_window), ("delay_start", _delay_start), ("drop_behaviour", _drop_behaviour))


def single_weakenings(spec: ScenarioSpec) -> Iterator[Weakening]:
    """Every basic weakening of ``spec`` that is strictly smaller (what 1-minimality quantifies over)."""
    key = spec_order(spec)
    for _name, gen in BASIC_PASSES:
        for w in gen(spec):
            if spec_order(w.spec) < key:
                yield w


# Binary-search knobs: (fault index, current value, weakest legal value) and how to set a value.
Knobs = Callable[[ScenarioSpec], list[tuple[int, float, float]]]
Build = Callable[[ScenarioSpec, int, float], "ScenarioSpec | None"]


def _magnitude_knobs(spec: ScenarioSpec) -> list[tuple[int, float, float]]:
    out = []
    for i, f in enumerate(spec.faults):
        knob = _magnitude_field(f)
        if knob is not None:
            out.append((i, knob[1], knob[2]))
    return out


def _set_magnitude(spec: ScenarioSpec, i: int, value: float) -> ScenarioSpec | None:
    knob = _magnitude_field(spec.faults[i])
    return None if knob is None else _set_field(spec, i, knob[0], value)


def _window_knobs(spec: ScenarioSpec) -> list[tuple[int, float, float]]:
    return [(i, window_length_s(spec, f), MIN_WINDOW_S) for i, f in enumerate(spec.faults)
            if window_length_s(spec, f) > MIN_WINDOW_S]


BISECT_PASSES: tuple[tuple[str, Knobs, Build], ...] = (
    ("bisect_magnitude", _magnitude_knobs, _set_magnitude), ("bisect_window", _window_knobs, _set_duration))
REFINE_PASSES = ("refine_magnitude", "refine_start")


def refine_step(value: float, integer: bool = False) -> float:
    """The magnitude step of the refinement: the largest 1, 2 or 5 x 10^k that is at most ``REFINE_STEP`` of
    ``|value|`` (2.0 -> 0.1, 12 -> 0.5, 0.3 -> 0.01); at least 1 for a whole-number knob; 0 for 0."""
    target = abs(value) * REFINE_STEP
    if target <= 0.0:
        return 0.0
    base = 10.0 ** math.floor(math.log10(target))
    step = next(base * m for m in (5.0, 2.0, 1.0) if base * m <= target * (1.0 + 1e-9))
    return max(1.0, float(math.floor(step))) if integer else step


def _step_below(value: float, step: float) -> float:
    """The largest multiple of ``step`` strictly below ``|value|``."""
    q = abs(value) / step
    n = round(q) if abs(q - round(q)) < 1e-6 else math.ceil(q)
    return (n - 1) * step


# ── the shrinker ─────────────────────────────────────────────────────────
@dataclass(frozen=True)
class CertificateEntry:
    """One single weakening of the witness and what the paired run said of it."""

    pass_name: str
    description: str
    verdict: Verdict | None  # None: not tried (the shrink ran out of budget)

    def to_dict(self) -> dict[str, str]:
        return {"pass": self.pass_name, "weakening": self.description,
                "verdict": self.verdict.value if self.verdict else "untried"}


@dataclass(frozen=True)
class ShrinkResult:
    spec: ScenarioSpec
    steps: int  # accepted weakenings
    complete: bool  # True: every single weakening of `spec` was tried and lost the admission (1-minimal)
    certificate: tuple[CertificateEntry, ...]
    calls: int  # predicate calls
    runs: int  # executions (cache misses)
    hits: int  # calls answered from the cache
    passes: tuple[dict[str, int | str], ...] = field(default=())


    def certificate_dict(self) -> dict[str, Any]:
        return {"complete": self.complete, "steps": self.steps, "predicate_calls": self.calls,
                "executions": self.runs, "cache_hits": self.hits, "passes": list(self.passes),
                "weakenings": [e.to_dict() for e in self.certificate]}


class Shrinker:
    """Minimize an admitted spec under ``predicate`` (see the module docstring)."""

    def __init__(self, predicate: CachedPredicate, *, max_calls: int = 200, bisect: bool = False,
                 refine: bool = True):
        self.predicate = predicate
        self.max_calls = max_calls
        self.passes = [ShrinkPass(n, g) for n, g in BASIC_PASSES]
        self._bisect_specs = {name: (knobs, build) for name, knobs, build in BISECT_PASSES} if bisect else {}
        self.passes += [ShrinkPass(name, basic=False) for name in self._bisect_specs]
        self.refine = refine
        self.passes += [ShrinkPass(name, basic=False) for name in (REFINE_PASSES if refine else ())]
        self.steps = 0
        self._target: ScenarioSpec | None = None  # the spec candidates are compared with, and its order key
        self._target_key: tuple[Any, ...] = ()
        self._calls0 = predicate.calls
        self._runs0 = predicate.runs
        self._hits0 = predicate.hits

    @property
    def _out_of_budget(self) -> bool:
        return self.predicate.calls - self._calls0 >= self.max_calls

    def _order(self, spec: ScenarioSpec) -> tuple[Any, ...]:
        """``spec_order`` of the current spec, computed once per spec (every candidate is compared with it)."""
        if self._target is not spec:
            self._target, self._target_key = spec, spec_order(spec)
        return self._target_key

    def _try(self, p: ShrinkPass, current: ScenarioSpec, candidate: ScenarioSpec) -> bool:
        """Evaluate a strictly smaller candidate; True when it keeps the admission."""
        if not spec_order(candidate) < self._order(current):
            return False
        runs = self.predicate.runs
        verdict = self.predicate(candidate)
        p.tried += 1
        p.runs += self.predicate.runs - runs
        if verdict is Verdict.ADMITTED:
            p.accepted += 1
            self.steps += 1
            self._target, self._target_key = candidate, spec_order(candidate)  # the accepted one is the target now
            return True
        return False

    def _run_basic(self, p: ShrinkPass, spec: ScenarioSpec) -> ScenarioSpec:
        """One pass over the elements of ``spec``, in index order. After a success the pass keeps its place:
        it resumes at the element it just weakened (on the smaller spec: after a removal the next element now
        has that index) instead of starting over; the elements before it are tried again by the next sweep."""
        assert p.generate is not None
        start = 0
        while not self._out_of_budget:
            accepted: Weakening | None = None
            for w in p.generate(spec):
                if w.index < start:
                    continue
                if self._out_of_budget:
                    break
                if self._try(p, spec, w.spec):
                    accepted = w
                    break
            if accepted is None:
                break
            spec, start = accepted.spec, accepted.index
        return spec

    def _run_bisect(self, p: ShrinkPass, spec: ScenarioSpec) -> ScenarioSpec:
        """Per knob: binary search between the largest value known not to admit (the failed halving,
        from the cache) and the admitted one."""
        knobs, build = self._bisect_specs[p.name]
        for i, hi, lo in knobs(spec):
            halved = build(spec, i, hi / 2.0)
            if halved is not None and self.predicate.known(halved) not in (None, Verdict.ADMITTED):
                lo = hi / 2.0 if abs(hi / 2.0) > abs(lo) else lo
            for _ in range(BISECT_PROBES):
                if self._out_of_budget or abs(hi - lo) <= max(0.05 * abs(hi), 1e-3):
                    break
                mid = (hi + lo) / 2.0
                cand = build(spec, i, mid)
                if cand is None:
                    break
                if self._try(p, spec, cand):
                    spec, hi = cand, mid
                else:
                    lo = mid
        return spec

    def _run_refine_magnitude(self, p: ShrinkPass, spec: ScenarioSpec) -> ScenarioSpec:
        """Per strength knob: step its |value| down to the next multiple of :func:`refine_step` (taken from the
        value it starts at, 2.0 -> 1.9 -> 1.8), at most ``REFINE_STEPS`` accepted steps, until one loses the
        admission or the knob's weakest value is reached."""
        for i in range(len(spec.faults)):
            first = _magnitude_field(spec.faults[i])
            if first is None:
                continue
            step = refine_step(first[1], first[0].integer)
            for _ in range(REFINE_STEPS):
                knob = _magnitude_field(spec.faults[i])
                if knob is None or step <= 0.0 or self._out_of_budget:
                    break
                k, cur, floor = knob
                new = max(_step_below(cur, step), abs(floor))
                if new >= abs(cur) - 1e-9:
                    break
                cand = _set_field(spec, i, k, math.copysign(new, cur))
                if cand is None or not self._try(p, spec, cand):
                    break
                spec = cand
        return spec

    def _run_refine_start(self, p: ShrinkPass, spec: ScenarioSpec) -> ScenarioSpec:
        """Per window: binary search for the latest admitting start (end kept) between the start it has
        (admitted) and the one ``delay_start`` tried (known not to admit, from the cache), ``START_PROBES``
        probes at most, until the two are ``START_RESOLUTION_S`` apart."""
        for i in range(len(spec.faults)):
            halved = next((w for w in _delay_start(spec) if w.index == i), None)
            if halved is None or self.predicate.known(halved.spec) in (None, Verdict.ADMITTED):
                continue
            lo = fault_window_s(spec, spec.faults[i])[0]
            hi = fault_window_s(halved.spec, halved.spec.faults[i])[0]
            for _ in range(START_PROBES):
                if self._out_of_budget or hi - lo <= START_RESOLUTION_S + 1e-9:
                    break
                cand = _set_start(spec, i, (lo + hi) / 2.0)
                if cand is None:
                    break
                mid = fault_window_s(cand, cand.faults[i])[0]
                if not lo + 1e-9 < mid < hi - 1e-9:
                    break
                if self._try(p, spec, cand):
                    spec, lo = cand, mid
                else:
                    hi = mid
        return spec

    def _fixed_point(self, spec: ScenarioSpec) -> ScenarioSpec:
        """Sweep the basic passes, most useful first, until a whole sweep accepts nothing."""
        while not self._out_of_budget:
            before = spec
            for p in sorted((q for q in self.passes if q.basic), key=lambda q: -q.accepted):  # stable for ties
                spec = self._run_basic(p, spec)
            if spec == before:
                break
        return spec

    def run(self, spec: ScenarioSpec) -> ShrinkResult:
        """Shrink an admitted ``spec`` to a fixed point (or until the call budget is spent); with
        ``bisect``, then binary-search the numeric knobs and return to the fixed point, while that helps."""
        current = self._fixed_point(spec)
        while self._bisect_specs and not self._out_of_budget:
            before = current
            for p in (q for q in self.passes if q.name in self._bisect_specs):
                current = self._run_bisect(p, current)
            if current == before:
                break
            current = self._fixed_point(current)
        if self.refine and not self._out_of_budget:  # once: bounded, then the basic passes certify the result
            before = current
            for p in (q for q in self.passes if q.name in REFINE_PASSES):
                run = self._run_refine_magnitude if p.name == "refine_magnitude" else self._run_refine_start
                current = run(p, current)
            if current != before:
                current = self._fixed_point(current)
        certificate = tuple(CertificateEntry(w.pass_name, w.description, self.predicate.known(w.spec))
                            for w in single_weakenings(current))
        complete = all(e.verdict not in (None, Verdict.ADMITTED) for e in certificate)
        return ShrinkResult(current, self.steps, complete, certificate,
                            self.predicate.calls - self._calls0, self.predicate.runs - self._runs0,
                            self.predicate.hits - self._hits0, tuple(p.stats() for p in self.passes))


def greedy_minimize(spec: ScenarioSpec, admits: Callable[[ScenarioSpec], bool], max_calls: int = 1000
                    ) -> tuple[ScenarioSpec, int]:
    """The paper's delta debugging as a baseline: fault by fault, try removing it, then halving its
    magnitude and shortening its window as long as admission holds; rounds until a whole round
    changes nothing. No cache, fixed order. Returns (result, predicate calls)."""
    calls = 0
    changed = True
    while changed and calls < max_calls:
        changed = False
        i = 0
        while i < len(spec.faults) and calls < max_calls:
            removed = next((w for w in _remove_fault(spec) if w.index == i), None)
            if removed is not None:
                calls += 1
                if admits(removed.spec):
                    spec, changed = removed.spec, True
                    continue  # the next fault now has index i
            for gen in (_halve_magnitude, _shorten_window):
                while calls < max_calls:
                    w = next((w for w in gen(spec) if w.index == i), None)
                    if w is None:
                        break
                    calls += 1
                    if not admits(w.spec):
                        break
                    spec, changed = w.spec, True
            i += 1
    return spec, calls


__all__ = ["BASIC_PASSES", "BISECT_PASSES", "REFINE_PASSES", "CachedPredicate", "CertificateEntry", "ShrinkPass", "ShrinkResult",
           "Shrinker", "Ungroundable", "Verdict", "Weakening", "fault_strength", "greedy_minimize",
           "refine_step", "single_weakenings", "spec_order", "window_length_s"]
