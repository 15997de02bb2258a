"""STRaP on the platform's own traces (STRaP RQ1-3, Table 2), moved from ``bench/bench_strap_faults.py`` (which
imports it from here): record paired executions of scenario variants per application as MCAP traces, reduce
them (paper defaults), replay every kept and every full segment into the applications' and the
reconstruction's mutants (fault = > 10 % of the frames after warm-up differ), and score reduction, fault
coverage and Top-K / APFD of CH, RD, CC, SC and RSC per benchmark (one mutant each) and pooled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lastv2x.core.catalogue import Application
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.apps import APPS
from services.simulator.paired import execute_paired
from services.simulator.reference import reference_spec
from services.simulator.trace import TraceWriter
from services.simulator.v2x.stack import v2x_source_factory
from services.strap.evaluate import evaluate_order, random_baseline
from services.strap.mutants import (
    RECONSTRUCTION_MODULE,
    Mutant,
    affects,
    instrumented,
    readers_of,
)
from services.strap.pipeline import ingest, reduce_table
from services.strap.prioritize import prioritize
from services.strap.reduce import ReduceParams, Reduction
from services.strap.replay import (
    RecordedRun,
    compare_window,
    load_run,
    recorded_belief_keys,
    replay_reconstruction,
    replay_segment,
    segment_steps,
    world_snapshots,
)
from services.strap.vectorize import FrameTable

PAPER = ReduceParams()                                           # window 3, 3 s clip, dedupe, 1 s pre-roll
PAPER_45 = ReduceParams(clip_frames=45, clip_duration_s=None)    # the literal 45 frames (2.25 s at 20 Hz)
MIN_1S = ReduceParams(min_segment_duration_s=1.0)                # the reference code's 1 s segment filter
FULL = ReduceParams(clip_duration_s=None, dedupe=False)          # the unreduced suite
ORDER_METHODS = ("CH", "RD", "CC", "SC", "RSC")
BSM_DROP = {"name": "bsm_drop", "operator": "drop", "stream": "BSM", "probability": 1.0,
            "anchor": {"kind": "scenario_time", "offset_s": 2.0}, "duration_s": 2.5}
SPAT_FREEZE = {"name": "spat_freeze", "operator": "freeze", "stream": "SPAT",
               "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = dict(base)
    out.update(changes)
    return out


def variants(app: Application, quick: bool) -> list[tuple[str, ScenarioProgram]]:
    """Scenario variants of one application (reference first)."""
    base = reference_spec(app, 0).model_dump(mode="json")
    specs: list[tuple[str, dict[str, Any]]] = [("ref", base)]
    if app in (Application.RLVW, Application.GLOSA):
        offsets = (0.0, 26.0, 40.0) if app is Application.RLVW else (0.0, 20.0, 35.0)
        specs += [(f"offset{o:g}", _with(base, signal=_with(base["signal"], offset_s=o))) for o in offsets]
        specs.append(("spat_freeze", _with(base, signal=_with(base["signal"], offset_s=22.353), faults=[SPAT_FREEZE])))
    elif app in (Application.FCW, Application.EEBL):
        lead = base["agents"][0]
        specs.append(("late_brake", _with(base, agents=[_with(lead, behaviour=_with(lead["behaviour"], at_time_s=6.0)),
                                                        *base["agents"][1:]])))
        specs.append(("far_lead", _with(base, agents=[_with(lead, gap_m=lead["gap_m"] + 20.0), *base["agents"][1:]])))
        specs.append(("bsm_drop", _with(base, faults=[_with(BSM_DROP, anchor={"kind": "scenario_time",
                                                                               "offset_s": 2.5})])))
    else:
        agent = base["agents"][0]
        specs += [(f"arrive{o:+g}", _with(base, agents=[_with(agent, arrival_offset_s=o)])) for o in (2.0, -2.5)]
        specs.append(("bsm_drop", _with(base, faults=[_with(BSM_DROP, anchor={"kind": "scenario_time",
                                                                               "offset_s": 3.5})])))
    if quick:
        specs = specs[:2]
    return [(name, program_from_spec_on_straight_roads(parse_spec(_with(s, seed=i))))
            for i, (name, s) in enumerate(specs)]


@dataclass
class Recording:
    app: Application
    name: str
    program: ScenarioProgram
    path: Path
    run: RecordedRun | None = None
    tables: dict[str, FrameTable] = field(default_factory=dict)
    reductions: dict[tuple[str, ReduceParams], Reduction] = field(default_factory=dict)

    def table(self, module: str) -> FrameTable:
        if module not in self.tables:
            self.tables[module] = ingest(self.path, "platform", modules=[module])
        return self.tables[module]

    def reduce(self, module: str, params: ReduceParams) -> Reduction:
        key = (module, params)
        if key not in self.reductions:
            self.reductions[key] = reduce_table(self.table(module), params)
        return self.reductions[key]


def record(app: Application, name: str, program: ScenarioProgram, out: Path) -> Recording:
    path = out / f"{app.value.lower()}-{name}.mcap"
    with TraceWriter(path) as tw:
        execute_paired(program, None, md_source_factory=v2x_source_factory(), trace=tw)
    return Recording(app, name, program, path, load_run(path, program))


# ---------------------------------------------------------------------------- fault matrices
@dataclass
class SuiteResult:
    name: str
    recordings: int
    frames: int
    kept_frames: int
    segments_total: int
    segments_kept: int
    mutants: int
    detected_full: np.ndarray          # (mutants,) bool
    matrix: np.ndarray                 # (kept segments, mutants) bool
    calls: np.ndarray                  # (kept segments, mutants) int: CC
    segment_vectors: np.ndarray
    frame_vectors: np.ndarray
    original_faults: int               # segments where an unmutated module is inconsistent
    extra: dict[str, tuple[float, float]] = field(default_factory=dict)  # params -> (reduction, coverage)

    @property
    def reduction(self) -> float:
        return 1.0 - self.kept_frames / self.frames if self.frames else 0.0

    @property
    def detected_reduced(self) -> np.ndarray:
        return self.matrix.any(axis=0) if self.matrix.size else np.zeros(self.mutants, bool)

    @property
    def coverage(self) -> float:
        full = self.detected_full
        return float((self.detected_reduced & full).sum() / full.sum()) if full.sum() else float("nan")


def _faults_app(rec: Recording, red: Reduction, decides: Sequence[Callable[..., Any]]) -> tuple[np.ndarray, int]:
    """(segments x changes) faults against the replayed original, and the segments where the
    original itself is inconsistent with the recording (the rebuilt inputs' infidelity)."""
    table = rec.table("application")
    run = rec.run
    assert run is not None
    out = np.zeros((len(red.segments), len(decides)), bool)
    original = APPS[rec.app].decide
    infidel = 0
    for i, seg in enumerate(red.segments):
        first, stop, warm = segment_steps(run, table, seg)
        base = replay_segment(run, table, seg, original, baseline="recorded")
        infidel += int(base.is_fault())
        for j, fn in enumerate(decides):
            out[i, j] = replay_segment(run, table, seg, fn, baseline=base.outputs).is_fault()
    return out, infidel


def _calls_app(rec: Recording, red: Reduction, mutants: Sequence[Mutant]) -> np.ndarray:
    """CC: calls of each mutant's function while the original replays each segment."""
    table = rec.table("application")
    assert rec.run is not None
    by_module: dict[str, tuple[Any, Any]] = {}
    out = np.zeros((len(red.segments), len(mutants)), np.int64)
    for i, seg in enumerate(red.segments):
        counts: dict[str, dict[str, int]] = {}
        for module in sorted({m.module for m in mutants}):
            if module not in by_module:
                by_module[module] = instrumented(module)
            mod, counter = by_module[module]
            counter.clear()
            replay_segment(rec.run, table, seg, getattr(mod, APPS[rec.app].decide.__name__))
            counts[module] = dict(counter)
        for j, m in enumerate(mutants):
            out[i, j] = sum(counts[m.module].get(f, 0) for f in readers_of(m))
    return out


def application_suite(app: Application, recs: Sequence[Recording], mutants: Sequence[Mutant],
                      extra_params: Sequence[tuple[str, ReduceParams]]) -> SuiteResult:
    mine = [m for m in mutants if affects(m, app)]
    decides = [m.decide(app) for m in mine]
    rows, calls, full_det, seg_vecs, frames, orig_bad = [], [], np.zeros(len(mine), bool), [], [], 0
    kept = total = n_seg_total = 0
    extra_det = {name: np.zeros(len(mine), bool) for name, _ in extra_params}
    extra_kept = dict.fromkeys(extra_det, 0)
    for rec in recs:
        table = rec.table("application")
        red, full = rec.reduce("application", PAPER), rec.reduce("application", FULL)
        fm, bad_kept = _faults_app(rec, red, decides)
        fm_full, bad_full = _faults_app(rec, full, decides)
        rows.append(fm)
        calls.append(_calls_app(rec, red, mine))
        full_det |= fm_full.any(axis=0)
        orig_bad += bad_kept + bad_full
        seg_vecs.append(red.segment_vectors)
        frames.append(table.vectors)
        kept += red.kept_frames
        total += red.n_frames
        n_seg_total += red.n_segments_total
        for name, params in extra_params:
            r = rec.reduce("application", params)
            extra_det[name] |= _faults_app(rec, r, decides)[0].any(axis=0)
            extra_kept[name] += r.kept_frames
    res = SuiteResult(app.value, len(recs), total, kept, n_seg_total, sum(len(r) for r in rows), len(mine),
                      full_det, np.vstack(rows), np.vstack(calls), np.vstack(seg_vecs), np.vstack(frames), orig_bad)
    for name, det in extra_det.items():
        cov = float((det & full_det).sum() / full_det.sum()) if full_det.sum() else float("nan")
        res.extra[name] = (1.0 - extra_kept[name] / total if total else 0.0, cov)
    return res


def _faults_recon(rec: Recording, red: Reduction, replays: Sequence[Any], expected: Sequence[Any]) -> np.ndarray:
    table = rec.table("reconstruction")
    assert rec.run is not None
    out = np.zeros((len(red.segments), len(replays)), bool)
    for i, seg in enumerate(red.segments):
        first, stop, warm = segment_steps(rec.run, table, seg)
        for j, rp in enumerate(replays):
            out[i, j] = compare_window(rp.keys, expected, first, stop, warm).is_fault()
    return out


def reconstruction_suite(recs: Sequence[Recording], mutants: Sequence[Mutant],
                         extra_params: Sequence[tuple[str, ReduceParams]]) -> SuiteResult:
    modules = [m.load() for m in mutants]
    inst, counter = instrumented(RECONSTRUCTION_MODULE)
    rows, calls, seg_vecs, frames = [], [], [], []
    full_det = np.zeros(len(mutants), bool)
    extra_det = {name: np.zeros(len(mutants), bool) for name, _ in extra_params}
    extra_kept = dict.fromkeys(extra_det, 0)
    kept = total = n_seg_total = orig_bad = rx_bad = rx_unchecked = 0
    for rec in recs:
        assert rec.run is not None
        snaps = world_snapshots(rec.run)
        expected = recorded_belief_keys(rec.run)
        replays = [replay_reconstruction(rec.run, mod, snapshots=snaps) for mod in modules]
        original = replay_reconstruction(rec.run, None, snapshots=snaps, check_rx=True)
        rx_bad += len(original.rx_mismatch or ())
        rx_unchecked += int(original.rx_mismatch is None)
        # CC: cumulative calls of every reconstruction function, step by step, while the original replays
        counter.clear()
        cumulative = []
        src_keys = replay_reconstruction_counting(rec.run, inst, counter, snaps, cumulative)
        assert src_keys == original.keys
        red, full = rec.reduce("reconstruction", PAPER), rec.reduce("reconstruction", FULL)
        table = rec.table("reconstruction")
        rows.append(_faults_recon(rec, red, replays, expected))
        full_det |= _faults_recon(rec, full, replays, expected).any(axis=0)
        orig_bad += int(_faults_recon(rec, full, [original], expected).sum()
                        + _faults_recon(rec, red, [original], expected).sum())
        cc = np.zeros((len(red.segments), len(mutants)), np.int64)
        for i, seg in enumerate(red.segments):
            first, stop, _ = segment_steps(rec.run, table, seg)
            before = cumulative[first - 1] if first > 0 else {}
            after = cumulative[stop - 1]
            for j, m in enumerate(mutants):
                cc[i, j] = sum(after.get(f, 0) - before.get(f, 0) for f in readers_of(m))
        calls.append(cc)
        seg_vecs.append(red.segment_vectors)
        frames.append(table.vectors)
        kept += red.kept_frames
        total += red.n_frames
        n_seg_total += red.n_segments_total
        for name, params in extra_params:
            r = rec.reduce("reconstruction", params)
            extra_det[name] |= _faults_recon(rec, r, replays, expected).any(axis=0)
            extra_kept[name] += r.kept_frames
    print(f"  recon: recorded /v2x/rx vs the open-loop replay's deliveries: {rx_bad} steps differ"
          + (f" ({rx_unchecked} traces without /v2x/rx)" if rx_unchecked else ""), flush=True)
    res = SuiteResult("recon", len(recs), total, kept, n_seg_total, sum(len(r) for r in rows), len(mutants),
                      full_det, np.vstack(rows), np.vstack(calls), np.vstack(seg_vecs), np.vstack(frames), orig_bad)
    for name, det in extra_det.items():
        cov = float((det & full_det).sum() / full_det.sum()) if full_det.sum() else float("nan")
        res.extra[name] = (1.0 - extra_kept[name] / total if total else 0.0, cov)
    return res


def replay_reconstruction_counting(run: RecordedRun, module: Any, counter: dict[str, int], snaps: Sequence[Any],
                                   cumulative: list[dict[str, int]]) -> list[Any]:
    from services.strap.replay import belief_key, receiver_source_factory

    src = receiver_source_factory(module)()
    src.reset(run.program, run.seed)
    keys = []
    for snap in snaps:
        keys.append(belief_key(src.observe(snap)))
        cumulative.append(dict(counter))
    return keys


# ---------------------------------------------------------------------------- prioritization metrics
def _orders(res: SuiteResult) -> dict[str, np.ndarray]:
    return {m: prioritize(m, res.segment_vectors, frame_vectors=res.frame_vectors)
            for m in ("CH", "SC", "RSC")}


def subtle(res: SuiteResult, max_share: float = 0.25) -> np.ndarray:
    """Detected mutants revealed by at most ``max_share`` of the kept segments."""
    share = res.matrix.mean(axis=0) if res.matrix.shape[0] else np.zeros(res.mutants)
    return res.detected_reduced & (share <= max_share)


def per_benchmark(res: SuiteResult, n_shuffles: int, only: np.ndarray | None = None) -> dict[str, tuple[float, float]]:
    """Method -> (mean Top-K, mean APFD) over the detected mutants, one mutant per benchmark."""
    detected = np.flatnonzero(res.detected_reduced if only is None else only)
    orders = _orders(res)
    acc: dict[str, list[tuple[float, float]]] = {m: [] for m in ORDER_METHODS}
    for j in detected:
        fm = res.matrix[:, [j]]
        for m, o in orders.items():
            s = evaluate_order(o, fm)
            acc[m].append((float(s.top_k), s.apfd))
        rd = random_baseline(fm, n_shuffles, seed=int(j))
        acc["RD"].append((float(rd.top_k), rd.apfd))
        cc = prioritize("CC", res.segment_vectors, call_counts=res.calls[:, j])
        s = evaluate_order(cc, fm)
        acc["CC"].append((float(s.top_k), s.apfd))
    return {m: (float(np.mean([a for a, _ in v])), float(np.mean([b for _, b in v]))) if v else (np.nan, np.nan)
            for m, v in acc.items()}


def pooled(res: SuiteResult, n_shuffles: int) -> dict[str, tuple[float, float]]:
    fm = res.matrix[:, res.detected_reduced]
    out: dict[str, tuple[float, float]] = {}
    if fm.shape[1] == 0:
        return dict.fromkeys(("CH", "RD", "SC", "RSC"), (np.nan, np.nan))
    for m, o in _orders(res).items():
        s = evaluate_order(o, fm)
        out[m] = (float(s.top_k), s.apfd)
    rd = random_baseline(fm, n_shuffles, seed=0)
    out["RD"] = (float(rd.top_k), rd.apfd)
    return out


def _fmt(x: float, spec: str = ".2f") -> str:
    return "  -  " if x != x else format(x, spec)
