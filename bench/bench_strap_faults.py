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
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lastv2x.core.catalogue import Application  # noqa: E402
from lastv2x_app.experiments.strap_suite import (  # noqa: E402  (the suite's core lives there since issue 33)
    MIN_1S,
    ORDER_METHODS,
    PAPER_45,
    Recording,
    SuiteResult,
    _fmt,
    application_suite,
    per_benchmark,
    pooled,
    reconstruction_suite,
    record,
    subtle,
    variants,
)
from services.strap.mutants import (  # noqa: E402
    RECONSTRUCTION_MODULE,
    application_mutants,
    by_class,
    generate_mutants,
)


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
