"""STRaP fault-detection benchmark on the platform's own traces (paper §5, Table 2).

1. Record paired executions (V2X stack as the message-driven source) of a few
   scenario variants per application — the reference program of
   ``services/simulator/reference.py`` and variants of its signal timing,
   agent gaps / arrival offsets, braking, V2X faults — as MCAP traces.
2. Reduce each (module ``application``; paper defaults: window 3, 3 s clip —
   60 frames at our 20 Hz — de-duplicated, 1 s pre-roll).  The *full* suite is
   the same segmentation unclipped and not de-duplicated.
3. Mutants (``services/strap/mutants.py``) of the six applications: each
   application suite pairs with the mutants that can reach its ``decide``; the
   reconstruction suite with a deterministic sample of reconstruction mutants
   (``--recon-mutants``; the V2X stack replays open loop on the recorded world).
4. Replay every kept and every full segment into every mutant
   (``services/strap/replay.py``): fault = > 10 % of the frames after the 1 s
   warm-up differ from the unmutated module's outputs, replayed the same way
   (paper: "inconsistency of a module output before and after code changes").
   The unmutated modules are also compared with the *recording*: the
   ``orig FP`` column counts segments where they are inconsistent with it.  The
   applications are fed the recorded ``/app/input`` and ``/recon/ego``
   (``RecordedRun.approximated``: only the seeded previous decision is rebuilt on
   today's traces); the open-loop V2X replay is checked against the recorded
   ``/v2x/rx`` (``rx steps``: steps whose deliveries to the ego differ).
5. Report reduction ratio, fault coverage (faults revealed by the reduced
   segments / by the full suite), and Top-K / APFD of CH, RD (100 shuffles),
   CC (calls of the mutated function while replaying the original), SC and RSC,
   per benchmark (one mutant = one regression benchmark, averaged over the
   detected ones, as in the paper's Table 2) and pooled (all of a suite's
   faults in one matrix; no CC there, its order is per mutant).

Runs in a few minutes on 2 cores (``--quick`` for a smoke run)::

    .venv/bin/python bench/bench_strap_faults.py [--quick] [--recon-mutants 24]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lastv2x.core.catalogue import Application  # noqa: E402
from lastv2x.core.program import ScenarioProgram  # noqa: E402
from lastv2x.core.spec import parse_spec  # noqa: E402
from lastv2x.core.synthetic import program_from_spec_on_straight_roads  # noqa: E402
from services.simulator.apps import APPS  # noqa: E402
from services.simulator.paired import execute_paired  # noqa: E402
from services.simulator.reference import reference_spec  # noqa: E402
from services.simulator.trace import TraceWriter  # noqa: E402
from services.simulator.v2x.stack import v2x_source_factory  # noqa: E402
from services.strap.evaluate import evaluate_order, random_baseline  # noqa: E402
from services.strap.mutants import (  # noqa: E402
    RECONSTRUCTION_MODULE,
    Mutant,
    affects,
    application_mutants,
    by_class,
    generate_mutants,
    instrumented,
    readers_of,
)
from services.strap.pipeline import ingest, reduce_table  # noqa: E402
from services.strap.prioritize import prioritize  # noqa: E402
from services.strap.reduce import ReduceParams, Reduction  # noqa: E402
from services.strap.replay import (  # noqa: E402
    RecordedRun,
    compare_window,
    load_run,
    recorded_belief_keys,
    replay_reconstruction,
    replay_segment,
    segment_steps,
    world_snapshots,
)
from services.strap.vectorize import FrameTable  # noqa: E402

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="two recordings per application, few mutants")
    ap.add_argument("--recon-mutants", type=int, default=24, help="reconstruction mutants (every k-th)")
    ap.add_argument("--shuffles", type=int, default=100)
    ap.add_argument("--out", type=Path, default=None, help="keep the traces here")
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)  # numpy warnings raised by mutants
    np.seterr(all="ignore")
    t0 = time.perf_counter()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_strap_faults_"))
    out.mkdir(parents=True, exist_ok=True)

    recs: dict[Application, list[Recording]] = {}
    for app in Application:
        recs[app] = [record(app, name, prog, out) for name, prog in variants(app, args.quick)]
    t_rec = time.perf_counter() - t0
    app_mut = application_mutants()
    if args.quick:
        app_mut = app_mut[::4]
    all_recon = generate_mutants([RECONSTRUCTION_MODULE])
    step = max(1, len(all_recon) // max(1, args.recon_mutants))
    recon_mut = all_recon[::step][: args.recon_mutants]
    print(f"recorded {sum(len(v) for v in recs.values())} traces in {t_rec:.1f} s -> {out}")
    rebuilt = sorted({a for rs in recs.values() for r in rs if r.run is not None for a in r.run.approximated})
    print(f"application inputs rebuilt instead of read from the trace: {rebuilt or 'none'}")
    print(f"mutants: {len(app_mut)} of the applications {by_class(app_mut)}, "
          f"{len(recon_mut)} of {len(all_recon)} of the reconstruction {by_class(recon_mut)}")

    extra = [("45 frames", PAPER_45), ("min 1 s", MIN_1S)]
    results: list[SuiteResult] = []
    for app in Application:
        t = time.perf_counter()
        results.append(application_suite(app, recs[app], app_mut, extra))
        print(f"  {app.value}: {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    recon_recs = [rs[0] for rs in recs.values()] + [rs[-1] for rs in recs.values()]
    results.append(reconstruction_suite(recon_recs, recon_mut, extra))
    print(f"  recon: {time.perf_counter() - t:.1f} s", flush=True)

    print("\n== reduction and fault coverage (paper defaults: window 3, 3 s clip, de-duplicated)")
    print(f"{'suite':7s} {'recs':>4s} {'frames':>6s} {'kept':>5s} {'segs':>9s} {'reduct.':>7s} "
          f"{'mutants':>7s} {'faults full':>11s} {'covered':>8s} {'cover.':>6s} {'orig FP':>7s} "
          f"{'45 frames red/cov':>18s} {'min 1 s red/cov':>16s}")
    tot = dict(frames=0, kept=0, mut=0, full=0, cov=0)
    for r in results:
        full, covd = int(r.detected_full.sum()), int((r.detected_reduced & r.detected_full).sum())
        tot["frames"] += r.frames
        tot["kept"] += r.kept_frames
        tot["mut"] += r.mutants
        tot["full"] += full
        tot["cov"] += covd
        e45, e1 = r.extra["45 frames"], r.extra["min 1 s"]
        print(f"{r.name:7s} {r.recordings:4d} {r.frames:6d} {r.kept_frames:5d} {r.segments_kept:4d}/{r.segments_total:<4d} "
              f"{r.reduction:7.1%} {r.mutants:7d} {full:11d} {covd:8d} {_fmt(r.coverage, '.1%'):>6s} "
              f"{r.original_faults:7d} {e45[0]:8.1%}/{_fmt(e45[1], '.1%'):>7s}  {e1[0]:7.1%}/{_fmt(e1[1], '.1%'):>7s}")
    red_all = 1.0 - tot["kept"] / tot["frames"]
    print(f"{'total':7s} {'':4s} {tot['frames']:6d} {tot['kept']:5d} {'':9s} {red_all:7.1%} {tot['mut']:7d} "
          f"{tot['full']:11d} {tot['cov']:8d} {tot['cov'] / max(tot['full'], 1):6.1%}")
    print("paper (Apollo, Table 2 / RQ1): reduction 34-77 %, coverage 98.8 %")

    tables: list[tuple[str, Callable[[SuiteResult], dict[str, tuple[float, float]]], Callable[[SuiteResult], int],
                       tuple[str, ...]]] = [
        ("per benchmark (one mutant each; mean over the detected)", lambda r: per_benchmark(r, args.shuffles),
         lambda r: int(r.detected_reduced.sum()), ORDER_METHODS),
        ("per benchmark, subtle faults only (revealed by <= 25 % of the kept segments)",
         lambda r: per_benchmark(r, args.shuffles, subtle(r)), lambda r: int(subtle(r).sum()), ORDER_METHODS),
        ("pooled (all faults of a suite in one matrix)", lambda r: pooled(r, args.shuffles),
         lambda r: int(r.detected_reduced.sum()), ("CH", "RD", "SC", "RSC")),
    ]
    for title, fn, count, methods in tables:
        print(f"\n== Top-K / APFD, {title}")
        print(f"{'suite':7s} {'faults':>6s} {'segs':>5s}  " + " ".join(f"{'K ' + m:>6s}" for m in methods) + "  "
              + " ".join(f"{'APFD ' + m:>8s}" for m in methods))
        k_all: dict[str, list[float]] = {m: [] for m in methods}
        a_all: dict[str, list[float]] = {m: [] for m in methods}
        pooled_table = "CC" not in methods
        for r in results:
            scores = fn(r)
            n_f = count(r)
            for m in methods:
                if n_f and scores[m][0] == scores[m][0]:
                    weight = 1 if pooled_table else n_f
                    k_all[m] += [scores[m][0]] * weight
                    a_all[m] += [scores[m][1]] * weight
            print(f"{r.name:7s} {n_f:6d} {r.segments_kept:5d}  " + " ".join(f"{_fmt(scores[m][0]):>6s}" for m in methods)
                  + "  " + " ".join(f"{_fmt(scores[m][1]):>8s}" for m in methods))
        label = "mean" if pooled_table else "all"
        print(f"{label:7s} {'':6s} {'':5s}  " + " ".join(f"{_fmt(float(np.mean(k_all[m])) if k_all[m] else np.nan):>6s}"
                                                        for m in methods) + "  "
              + " ".join(f"{_fmt(float(np.mean(a_all[m])) if a_all[m] else np.nan):>8s}" for m in methods))
    print("paper total: Top-K CH 3.39 RD 2.70 CC 3.41 SC 2.42 RSC 1.58; APFD CH 0.46 RD 0.50 CC 0.44 SC 0.54 RSC 0.61")
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
