"""Campaigns from the command line: in-process or against a search service, with a progress bar and
a results table a person reads (``lastv2x campaign``, ``lastv2x witness``, ``make run``).

The in-process path builds the same ``SearchCore`` the search service runs, over the service
cores in this process; ``--target`` talks to a search service over gRPC instead. Either way the
table is built from the campaign summary (``CampaignRunner.summary``) and the archived witnesses.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from services.search.campaign import Event
from services.search.core import SearchCore
from services.search.pipeline import InProcessPipeline
from services.search.repairs import repair_text
from services.search.settings import SearchSettings


def local_core(data_dir: Path, *, synthetic_grounding: bool = False, **settings: Any) -> SearchCore:
    """A search core over the service cores in this process, archiving under ``data_dir``."""
    s = SearchSettings.from_env(data_dir=data_dir, **settings)
    return SearchCore(InProcessPipeline(trace_dir=s.data_dir / "staging", synthetic_grounding=synthetic_grounding), s)


class Progress:
    """A one-line progress bar on a terminal; plain lines for stage changes otherwise."""

    def __init__(self, stream: TextIO = sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.stage = ""

    def __call__(self, e: Event) -> None:
        if e.kind == "stage":
            self.stage = e.message
        if self.tty:
            width = 24
            done = int(width * e.candidates_done / max(1, e.budget_total))
            eta = f" eta {e.eta_s:.0f}s" if e.eta_s is not None else ""
            line = (f"\r[{'#' * done}{'.' * (width - done)}] {e.candidates_done}/{e.budget_total} candidates, "
                    f"{e.executions_done} runs, {e.admitted} admitted{eta}  {self.stage}")
            cols = shutil.get_terminal_size((120, 20)).columns
            self.stream.write(line[:cols - 1].ljust(cols - 1))
            self.stream.flush()
        elif e.kind in ("stage", "repair", "witness", "reflection", "flaky", "errored", "failed", "done", "cancelled"):
            self.stream.write(f"  {e.message}\n")

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


def _yes(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "no")


def results_table(summary: dict[str, Any], witnesses: Iterable[dict[str, Any]], archive: str, *,
                  state: str = "done", reason: str = "") -> str:
    """intent -> application, admitted before / after refinement, executions, minimal witness, archive."""
    by_id = {w["witness_id"]: w for w in witnesses}
    rows = [("intent", "app", "admitted before", "after refinement", "runs (search+shrink)", "witness (faults left)")]
    for sc in summary.get("scenarios", []):
        intent = sc["intent"] or sc["source"]
        intent = intent if len(intent) <= 60 else intent[:57] + "..."
        after = sc["admitted_executions"] > 0
        refinement = "-" if sc["admitted_initially"] else (
            f"yes (cand. {sc['first_admitted_at']}, {sc['reflection_rounds']} refl.)" if after else
            f"no ({sc['reflection_rounds']} refl.)")
        ws = [f"{w} ({by_id[w]['faults_left'] if w in by_id else '?'})" for w in sc["witness_ids"]]
        if not ws and sc.get("duplicate_keys"):
            ws = ["catalogued earlier"]
        elif not ws and sc["admitted_initially"] and sc.get("coverage_gaps"):
            ws = ["none: its faults shrink away (coverage gap)"]  # the no-fault run fails as well
        if sc["stage"] == "failed":
            ws = ["FAILED: " + (sc["error"][:60] + "..." if len(sc["error"]) > 60 else sc["error"])]
        rows.append((intent, sc["application"] or "?", _yes(sc["admitted_initially"]), refinement,
                     f"{sc['executions']}+{sc['shrink_executions']}", ", ".join(ws) or "-"))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(str(c).ljust(w) for c, w in zip(rows[0], widths, strict=True)), line]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows[1:]]
    errored = summary.get("errored", 0)
    total = (f"{summary.get('executions', 0)} executions, {summary.get('admitted', 0)} admitted, "
             + (f"{errored} candidate(s) ERRORED (journal and service log), " if errored else "") +
             f"{summary.get('distinct_keys', 0)} distinct catalogue key(s), {len(summary.get('witness_ids', []))} "
             + (f"witness(es) of {summary['distinct_failures']} distinct failure(s)"
                if "distinct_failures" in summary else "witness(es)") +
             f" in {summary.get('elapsed_s', 0):.1f} s; campaign {state}" + (f": {reason}" if reason else ""))
    partial = [f"{sc['source']} ran without what the parser could not read: "
               + "; ".join(repr(c) for c in sc["unparsed_clauses"])
               for sc in summary.get("scenarios", []) if sc.get("unparsed_clauses")]
    partial += [f"{sc['source']} {repair_text(r)}" for sc in summary.get("scenarios", [])
                for r in sc.get("repairs", [])]
    gaps = summary.get("coverage_gaps", 0)
    if gaps:
        partial.append(f"{gaps} coverage gap(s): failures with no fault injected and no coverage taken away (the "
                       "scene's own radio did not reach); reported apart, not fault witnesses")
    return "\n".join([*out, line, total, *partial, f"archive: {archive}"])


def witness_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The parts of an archived witness a table shows."""
    spec = record["spec"]
    return {"witness_id": record["witness_id"], "application": spec["application"],
            "faults_left": len(spec["faults"]), "key": record["key"],
            "faults": [f"{f['operator']} on {f['stream']}" for f in spec["faults"]],
            "complete": record["certificate"]["complete"], "steps": record["certificate"]["steps"],
            "trace": record.get("trace_path") or record.get("trace_uri", "")}


__all__ = ["Progress", "local_core", "results_table", "witness_summary"]
