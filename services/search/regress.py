"""Regression over the witness archive: re-run archived witnesses against a new application build.

Each witness is an admitted failure found on some build (its record says which). Re-running
its program and seed against the **new** build (``app``) gives, against the **baseline**
(the witness's archived outcome, or a re-run on ``baseline_app`` when given):

* ``still_failing`` — admitted before and now;
* ``fixed`` — admitted before, not now;
* ``newly_failing`` — not admitted on the baseline, admitted now;
* ``passing`` — admitted on neither;
* ``errored`` — the new build's run is an application error, or the simulator refused it.

The order of re-runs is given by ``order`` (ids in the order to run; the composition root
passes STRaP's RSC prioritization over the witnesses' traces, ``lastv2x_app.regress``), so the
first failures show up first; the report gives the APFD of that order and of the chronological
one over the same re-runs (each failing re-run a fault of its own; computed on the re-runs done,
so with ``budget`` both orders are scored on the runs the budget allowed). ``budget`` stops after
N re-runs. Nothing here imports STRaP or grpc: the pipeline runs the executions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lastv2x.core.errors import FieldViolation, InvalidArgument
from services.search.core import witness_program
from services.search.pipeline import Execution, ExecutionRequest, Pipeline
from services.search.store import WitnessRow

VERDICTS = ("still_failing", "newly_failing", "fixed", "passing", "errored")


@dataclass(frozen=True)
class RegressRow:
    """One re-run, with the paired outcomes side by side (baseline | new)."""

    rank: int  # position in the re-run order (0 = first)
    witness_id: str
    key: str
    application: str
    found_on: dict[str, str]  # the build the witness was found on
    verdict: str
    before: dict[str, Any]  # admitted, md_failed, gt_failed, failure_margin (baseline)
    after: dict[str, Any]  # the same for the new build, plus app_error / refused

    @property
    def failing(self) -> bool:
        return self.verdict in ("still_failing", "newly_failing")


@dataclass
class RegressReport:
    app: dict[str, str]  # the new build
    rows: list[RegressRow] = field(default_factory=list)
    order: str = "chronological"  # how the re-runs were ordered
    skipped: int = 0  # witnesses left out by the budget
    apfd: float | None = None  # of the order used
    apfd_chronological: float | None = None  # of the chronological order, same re-runs

    def counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.rows) for v in VERDICTS}

    def to_dict(self) -> dict[str, Any]:
        return {"app": self.app, "order": self.order, "skipped": self.skipped, "counts": self.counts(),
                "apfd": self.apfd, "apfd_chronological": self.apfd_chronological,
                "rows": [r.__dict__ for r in self.rows]}


def apfd(failing: Sequence[bool]) -> float | None:
    """Average percentage of faults detected of a run order, every failing run one fault
    (Rothermel et al.): ``1 - sum(TF_i) / (n m) + 1 / (2 n)``; None when nothing fails."""
    n, positions = len(failing), [i + 1 for i, f in enumerate(failing) if f]
    if not n or not positions:
        return None
    return round(1.0 - sum(positions) / (n * len(positions)) + 1.0 / (2 * n), 6)


def _side(e: Execution | dict[str, Any]) -> dict[str, Any]:
    d = e.outcome if isinstance(e, Execution) else e
    out = {"admitted": bool(d.get("admitted")), "md_failed": bool((d.get("md") or {}).get("failed")),
           "gt_failed": bool((d.get("gt") or {}).get("failed")), "failure_margin": d.get("failure_margin")}
    if isinstance(e, Execution):
        if e.app_error:
            out["app_error"] = e.app_error
        if e.refused:
            out["refused"] = e.refused
    return out


def verdict(before_admitted: bool, after: Execution) -> str:
    if after.refused or after.app_error:
        return "errored"
    if after.admitted:
        return "still_failing" if before_admitted else "newly_failing"
    return "fixed" if before_admitted else "passing"


def regress(witnesses: Sequence[WitnessRow], pipeline: Pipeline, app: str, *, baseline_app: str | None = None,
            order: Callable[[Sequence[WitnessRow]], list[str]] | None = None, order_name: str = "chronological",
            budget: int | None = None) -> RegressReport:
    """Re-run ``witnesses`` against ``app`` (see the module docstring)."""
    if budget is not None and budget < 1:
        raise InvalidArgument(FieldViolation("budget", f"{budget} re-runs", "at least 1"))
    chrono = sorted(witnesses, key=lambda w: (w.created_unix_s, w.id))
    ids = order(chrono) if order is not None else [w.id for w in chrono]
    by_id = {w.id: w for w in chrono}
    if sorted(ids) != sorted(by_id):
        raise ValueError("the order must name every witness exactly once")
    run_ids = ids if budget is None else ids[:budget]
    report = RegressReport({}, order=order_name if order is not None else "chronological",
                           skipped=len(ids) - len(run_ids))

    def submit(w: WitnessRow, which: str) -> Any:
        return pipeline.submit(ExecutionRequest(witness_program(w), int(w.record["seed"]), app=which))

    futures = [(by_id[i], submit(by_id[i], app), submit(by_id[i], baseline_app) if baseline_app is not None
                else None) for i in run_ids]
    for rank, (w, fut, base_fut) in enumerate(futures):
        after: Execution = fut.result()
        if not report.app and after.app_build:
            report.app = dict(after.app_build)
        before = _side(base_fut.result() if base_fut is not None else json.loads(w.outcome_json))
        report.rows.append(RegressRow(rank, w.id, w.key, w.application, dict(w.record.get("app") or {}),
                                      verdict(bool(before["admitted"]), after), before, _side(after)))
    failing = {r.witness_id: r.failing for r in report.rows}
    report.apfd = apfd([failing[i] for i in run_ids])
    report.apfd_chronological = apfd([failing[w.id] for w in chrono if w.id in failing])
    return report


__all__ = ["VERDICTS", "RegressReport", "RegressRow", "apfd", "regress", "verdict"]
