"""Regression APFD on a deliberately broken build (issue 13, Measure): a short campaign on the
reference build, then ``regress`` of its archive against a STRaP mutant served over gRPC
(``lastv2x_app.example_app``, ``mutant:ID``), in one run.

    python bench/bench_regress.py [--apps RLVW,IMA,FCW,EEBL,GLOSA,LTA] [--budget 16] [--mutant ID] [--seed 1]

Prints, for STRaP's RSC order and for the chronological one over the same re-runs, the APFD that
``lastv2x regress`` reports (a "fault" = a re-run still or newly failing on the new build) and the
APFD of the re-runs that *reveal the mutant* (the new build's paired outcome differs from the
archived one: fixed, newly failing, errored, or a rollout's failure changed).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.bench_search import seed_spec
from lastv2x_app.example_app import serve, servicer_for
from lastv2x_app.regress import strap_order
from services.search.core import SearchCore, validate_request
from services.search.pipeline import InProcessPipeline
from services.search.regress import RegressReport, apfd, regress
from services.search.settings import SearchSettings

DEFAULT_MUTANT = "signal:_epoch_rule:L55C4:if"  # a believed red no longer stops the ego (RLVW, GLOSA)


def reveals(row) -> bool:  # type: ignore[no-untyped-def]
    b, a = row.before, row.after
    return row.verdict != "still_failing" or (b["md_failed"], b["gt_failed"]) != (a["md_failed"], a["gt_failed"])


def revealing_apfd(report: RegressReport, order: list[str]) -> float | None:
    by_id = {r.witness_id: reveals(r) for r in report.rows}
    return apfd([by_id[i] for i in order if i in by_id])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default="RLVW,IMA,FCW,EEBL,GLOSA,LTA")
    ap.add_argument("--budget", type=int, default=16, help="candidates per scenario of the campaign")
    ap.add_argument("--mutant", default=DEFAULT_MUTANT)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-regress-"))
    core = SearchCore(InProcessPipeline(synthetic_grounding=True, trace_dir=tmp / "t"),
                      SearchSettings(data_dir=tmp / "s", max_campaigns_running=1))
    server, port = serve(servicer_for(f"mutant:{args.mutant}"))
    try:
        t0 = time.perf_counter()
        specs = [seed_spec(a, args.seed) for a in args.apps.split(",")]
        req = validate_request(settings=core.settings, specs=specs, seed=args.seed, budget_per_scenario=args.budget,
                               reflection_rounds=0)
        view = core.wait(core.start(req).id, timeout_s=3600)
        ws = core.witnesses(view.id)
        t1 = time.perf_counter()
        print(f"campaign on the reference build: {len(specs)} scenarios x {args.budget} candidates -> "
              f"{len(ws)} witnesses ({view.state}, {t1 - t0:.0f} s)")
        target = f"grpc://127.0.0.1:{port}"
        rsc = regress(ws, core.pipeline, target, order=strap_order, order_name="STRaP RSC")
        t2 = time.perf_counter()
        chrono_ids = [w.id for w in sorted(ws, key=lambda w: (w.created_unix_s, w.id))]
        rsc_ids = [r.witness_id for r in rsc.rows]
        print(f"regress on mutant {args.mutant} over gRPC: {len(rsc.rows)} re-runs ({t2 - t1:.0f} s), "
              f"verdicts {rsc.counts()}")
        for r in rsc.rows:
            print(f"  {r.rank + 1:>3}. {r.witness_id} {r.application:<5} {r.verdict:<14} reveals={reveals(r)}")
        print(f"{'order':<14} {'APFD (still/newly failing)':>27} {'APFD (reveals the mutant)':>26}")
        print(f"{'STRaP RSC':<14} {rsc.apfd!s:>27} {revealing_apfd(rsc, rsc_ids)!s:>26}")
        print(f"{'chronological':<14} {rsc.apfd_chronological!s:>27} {revealing_apfd(rsc, chrono_ids)!s:>26}")
    finally:
        server.stop(0)
        core.close()


if __name__ == "__main__":
    main()
