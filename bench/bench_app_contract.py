"""Per-step overhead of the application-under-test contract, in one run.

    .venv/bin/python -m bench.bench_app_contract [--repeat 3]

The six reference programs (ground-truth source: the cheapest simulation, so the contract's
cost shows most), paired one by one and as one batch of six, with the reference apps
(1) on the row-by-row fast path, (2) through the contract's batched ``step`` in-process and
(3) over gRPC on loopback (the example server serving the same apps). Prints paired runs/s
and the overhead per decision (us per row-step) against (1); every way gives the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repo root

from bench.timing import best_of  # noqa: E402
from lastv2x.core.catalogue import Application  # noqa: E402
from lastv2x_app.example_app import serve, servicer_for  # noqa: E402
from services.simulator.apps.base import AppContext, Decision  # noqa: E402
from services.simulator.apps.contract import (  # noqa: E402
    AppBuild,
    AppFault,
    ApplicationUnderTest,
    ReferenceApp,
    StepRow,
)
from services.simulator.apps.plugin import resolve_app  # noqa: E402
from services.simulator.paired import execute_batch, execute_paired  # noqa: E402
from services.simulator.reference import reference_program  # noqa: E402


class Counting:
    """Any app behind the batched path, counting row-steps (decisions asked for)."""

    def __init__(self, inner: ApplicationUnderTest):
        self.inner, self.rows, self.calls = inner, 0, 0

    @property
    def build(self) -> AppBuild:
        return self.inner.build

    def open(self, sessions: Sequence[tuple[str, AppContext]]) -> None:
        self.inner.open(sessions)

    def step(self, k: int, t_s: float, rows: Sequence[StepRow]) -> Sequence[Decision | AppFault]:
        self.rows += len(rows)
        self.calls += 1
        return self.inner.step(k, t_s, rows)

    def close(self, session_ids: Sequence[str]) -> None:
        self.inner.close(session_ids)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    programs = [reference_program(a, seed=1) for a in Application]
    server, port = serve(servicer_for("reference"))
    try:
        remote = resolve_app(f"grpc://127.0.0.1:{port}")
        ways: dict[str, ApplicationUnderTest | None] = {
            "fast path (in-process functions)": None, "contract step, in-process": ReferenceApp(),
            "contract step, gRPC loopback": remote}
        counter = Counting(ReferenceApp())
        for p in programs:
            execute_paired(p, app=counter)
        row_steps_paired, calls_paired = counter.rows, counter.calls
        counter = Counting(ReferenceApp())
        execute_batch(programs, app=counter)
        row_steps_batch, calls_batch = counter.rows, counter.calls
        want = [execute_paired(p).to_json_bytes() for p in programs]
        print(f"six reference programs: {row_steps_paired} decisions in {calls_paired} step calls paired one by one, "
              f"{calls_batch} step calls as one batch of six")
        print(f"{'way':34s} {'paired runs/s':>14s} {'us/decision':>12s} {'batch runs/s':>13s} {'us/decision':>12s}")
        base = None
        for name, app in ways.items():
            wrapped = app if app is None else Counting(app)
            got = [execute_paired(p, app=wrapped).to_json_bytes() for p in programs]
            assert got == want, name
            t_one = best_of(lambda w=wrapped: [execute_paired(p, app=w) for p in programs], args.repeat)
            t_batch = best_of(lambda w=wrapped: execute_batch(programs, app=w), args.repeat)
            if base is None:
                base = (t_one, t_batch)
            over_one = (t_one - base[0]) / row_steps_paired * 1e6
            over_batch = (t_batch - base[1]) / row_steps_batch * 1e6
            print(f"{name:34s} {len(programs) / t_one:14.1f} {over_one:12.1f} {len(programs) / t_batch:13.1f} "
                  f"{over_batch:12.1f}")
    finally:
        server.stop(0)


if __name__ == "__main__":
    main()
