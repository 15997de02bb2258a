"""Builtin vs SUMO backend (issue 20), in one run.

    .venv/bin/python -m bench.bench_backends [--repeat 3] [--no-campaign]

1. Wall time of one paired execution (V2X source) of each of the six reference scenarios on the
   builtin backend and on SUMO, interleaved, best of ``--repeat``; the ratio per scenario and
   over all six.
2. The share of a campaign's witnesses that SUMO confirms: the ``make run`` campaign (three
   intents on built-in maps), every witness replayed with ``backend="sumo"``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repo root

from bench.timing import best_of  # noqa: E402
from lastv2x.core.catalogue import Application  # noqa: E402
from services.simulator.paired import execute_paired  # noqa: E402
from services.simulator.reference import reference_program  # noqa: E402
from services.simulator.v2x.stack import v2x_source_factory  # noqa: E402


def race(repeat: int) -> None:
    print(f"{'scenario':<8} {'builtin ms':>11} {'sumo ms':>9} {'sumo/builtin':>13}  same admission")
    total = {"builtin": 0.0, "sumo": 0.0}
    execute_paired(reference_program(Application.FCW, seed=1), backend="sumo")  # warm: netconvert, libsumo load
    for app in Application:
        program = reference_program(app, seed=1)
        times, admitted = {}, {}
        for backend in ("builtin", "sumo"):  # interleaved per scenario
            def run(b: str = backend, p: object = program, seen: dict = admitted) -> None:
                seen[b] = execute_paired(p, md_source_factory=v2x_source_factory(), backend=b).admitted
            times[backend] = best_of(run, repeat)
            total[backend] += times[backend]
        print(f"{app.value:<8} {times['builtin'] * 1e3:>11.1f} {times['sumo'] * 1e3:>9.1f} "
              f"{times['sumo'] / times['builtin']:>12.2f}x  {admitted['builtin'] == admitted['sumo']}")
    print(f"{'all six':<8} {total['builtin'] * 1e3:>11.1f} {total['sumo'] * 1e3:>9.1f} "
          f"{total['sumo'] / total['builtin']:>12.2f}x")


def confirmation_share() -> None:
    from lastv2x_app.campaigns import local_core
    from lastv2x_app.demo import CAMPAIGN_BUDGET, CAMPAIGN_INTENTS, CAMPAIGN_SEED
    from services.search.core import validate_request

    with tempfile.TemporaryDirectory() as tmp:
        core = local_core(Path(tmp) / "search")
        try:
            request = validate_request(settings=core.settings, intents=list(CAMPAIGN_INTENTS), seed=CAMPAIGN_SEED,
                                       budget_per_scenario=CAMPAIGN_BUDGET, stop_at_first_admission=True)
            view = core.wait(core.start(request).id, timeout_s=900)
            witnesses = core.witnesses(view.id)
            confirmed = 0
            for w in witnesses:
                t = time.perf_counter()
                r = core.replay(w.id, "sumo")
                confirmed += r.admitted
                print(f"  {w.id} {w.application:<5} on sumo: {'confirmed' if r.admitted else 'NOT confirmed'} "
                      f"({time.perf_counter() - t:.2f} s)")
            print(f"SUMO confirms {confirmed} of {len(witnesses)} builtin witnesses "
                  f"({confirmed / max(1, len(witnesses)):.0%}) of the make-run campaign")
        finally:
            core.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-campaign", action="store_true", help="skip the witness confirmation share")
    args = ap.parse_args()
    race(args.repeat)
    if not args.no_campaign:
        confirmation_share()


if __name__ == "__main__":
    main()
