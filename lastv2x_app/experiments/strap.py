"""STRaP RQ1-3 on the platform's own traces with mutants (STRaP §5-6, Table 2): reduction, fault coverage of the
reduced suite against the full one, and Top-K / APFD of RSC, SC, CH, RD (100 shuffles) and CC, per benchmark
(one mutant = one regression benchmark, mean over the detected ones, as the paper's Table 2). The suites are
the six applications' (their mutants replayed on the recorded inputs) and the V2X reconstruction's (open-loop
replay); the machinery is ``strap_suite`` (moved from ``bench/bench_strap_faults.py``) over
``services/strap/evaluate.py``'s APFD / Top-K."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np

from lastv2x_app.experiments import Progress, Row, command, table

SECTION = "STRaP RQ1-3"
TITLE = "reduction, fault coverage, APFD and Top-K on platform traces"
PAPER = "reduction ≥ 34 % (34-77 %); fault coverage 98.8 %; RSC APFD 0.61, Top-K 1.58 (CH 0.46 / 3.39, RD 0.50 / 2.70, CC 0.44 / 3.41, SC 0.54 / 2.42)"


def run(quick: bool, progress: Progress, *, tiny: bool = False) -> Row:
    import shutil

    from lastv2x.core.catalogue import Application
    from lastv2x_app.experiments.strap_suite import (
        ORDER_METHODS,
        application_suite,
        per_benchmark,
        reconstruction_suite,
        record,
        variants,
    )
    from services.strap.mutants import RECONSTRUCTION_MODULE, application_mutants, generate_mutants

    warnings.simplefilter("ignore", RuntimeWarning)  # numpy warnings raised by mutants
    old = np.seterr(all="ignore")
    out = Path(tempfile.mkdtemp(prefix="experiments-strap-"))
    apps = [Application.FCW] if tiny else list(Application)
    shuffles = 10 if tiny else 100
    try:
        recs = {}
        for app in apps:
            progress(f"recording {app.value}")
            recs[app] = [record(app, name, prog, out) for name, prog in variants(app, quick or tiny)]
        app_mut = application_mutants()
        app_mut = app_mut[::16] if tiny else app_mut[::4] if quick else app_mut
        n_recon = 0 if tiny else 8 if quick else 24
        results = []
        for app in apps:
            progress(f"{app.value} suite: replaying segments into its mutants")
            results.append(application_suite(app, recs[app], app_mut, []))
        if n_recon:
            progress(f"reconstruction suite: {n_recon} mutants")
            all_recon = generate_mutants([RECONSTRUCTION_MODULE])
            recon_mut = all_recon[::max(1, len(all_recon) // n_recon)][:n_recon]
            recon_recs = [rs[0] for rs in recs.values()] + [rs[-1] for rs in recs.values()]
            results.append(reconstruction_suite(recon_recs, recon_mut, []))
        progress("scoring orders")
        rows, k_all, a_all = [], {m: [] for m in ORDER_METHODS}, {m: [] for m in ORDER_METHODS}
        frames = kept = full = covd = segs = mutants = 0
        for r in results:
            scores = per_benchmark(r, shuffles)
            n_f = int(r.detected_reduced.sum())
            for m in ORDER_METHODS:
                if n_f and scores[m][0] == scores[m][0]:
                    k_all[m] += [scores[m][0]] * n_f
                    a_all[m] += [scores[m][1]] * n_f
            f, c = int(r.detected_full.sum()), int((r.detected_reduced & r.detected_full).sum())
            frames, kept, full, covd = frames + r.frames, kept + r.kept_frames, full + f, covd + c
            segs, mutants = segs + r.segments_kept, mutants + r.mutants
            rows.append((r.name, r.recordings, r.frames, f"{r.segments_kept}/{r.segments_total}", f"{r.reduction:.1%}",
                         r.mutants, f, c, f"{c / f:.1%}" if f else "-",
                         *(f"{scores[m][1]:.2f} / {scores[m][0]:.2f}" if n_f else "-" for m in ORDER_METHODS)))
    finally:
        np.seterr(**old)
        shutil.rmtree(out, ignore_errors=True)
    mean = {m: (float(np.mean(a_all[m])), float(np.mean(k_all[m]))) if a_all[m] else (float("nan"),) * 2
            for m in ORDER_METHODS}
    reduction = 1.0 - kept / frames if frames else 0.0
    coverage = covd / full if full else float("nan")
    ours = (f"reduction {reduction:.1%}; fault coverage {coverage:.1%} ({covd}/{full}); APFD / Top-K "
            + ", ".join(f"{m} {mean[m][0]:.2f} / {mean[m][1]:.2f}" for m in ("RSC", "SC", "CH", "RD", "CC"))
            + f"; {segs} kept segments in {len(results)} suites")
    why = ("Reduction and fault coverage are of the paper's order. APFD / Top-K are not comparable: our "
           "'recordings' are the platform's own paired-execution traces of a few scenario variants per "
           "application (20 Hz, 20-40 s each), not hours of Apollo driving on three maps, and the mutants are of "
           "our six applications and the V2X reconstruction, many revealed by most segments, which lifts every "
           "order's APFD (the baselines' too) and leaves RSC little room over them. The issue asks for suites of "
           f"≥ 300 segments; ours hold {segs} kept segments in all (table), fewer than these short variants can "
           "give, so the Top-K of a suite of 12-90 segments is not the paper's either.")
    details = table(("suite", "recordings", "frames", "segments kept/total", "reduction", "mutants",
                     "faults (full suite)", "found by reduced", "coverage",
                     *(f"{m} APFD / Top-K" for m in ORDER_METHODS)), rows) + (
        "\n\nPaper defaults: window 3, 3 s clip, de-duplicated, 1 s pre-roll; fault = > 10 % of the frames after "
        f"the warm-up differ from the unmutated module's outputs; RD over {shuffles} shuffles; per-benchmark means "
        "weighted by each suite's detected mutants.")
    n = (f"{sum(len(v) for v in recs.values())} traces of {len(apps)} application(s), {mutants} mutant pairings"
         + (" (every 4th application mutant, 8 reconstruction mutants)" if quick and not tiny else ""))
    return Row("strap", SECTION, TITLE, PAPER, ours, n, command("strap", quick), why=why, details=details,
               extra={"reduction": reduction, "coverage": coverage, "mean": mean, "segments": segs})
