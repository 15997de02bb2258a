"""``make run``: the main path on embedded defaults (offline LLM backend, built-in maps).

Part 1, one intent stage by stage: intent -> spec -> verified (with repairs) -> grounded
program -> paired outcome and admission -> MCAP trace -> reduced segments.
Part 2, a short campaign over a few intents (one of them needs refinement): admitted
failures -> 1-minimal witnesses with certificates -> the archive, as a results table.
Every stage is the real core, in-process; grounding falls back to the synthetic crossing
only when no map can host the spec, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lastv2x.core.catalogue import margin_text
from lastv2x.core.spec import ScenarioSpec, spec_to_dict

INTENT = ("Check that red-light violation warning stays safe when the SPaT feed freezes "
          "just before amber at a busy signalized intersection.")

MAX_SEGMENT_ROWS = 4

# The campaign of part 2: the paper's running example (admitted as written), a left turn whose
# 0.2 s BSM delay is too small to matter until search moves it, and a forward-collision intent
# (whatever the search finds within the budget is what the table shows).
CAMPAIGN_INTENTS = (
    INTENT,
    "Left turn assist when the opposing vehicle's BSMs are delayed by 0.2 s",
    "Forward collision warning when the hard-braking lead's BSMs are delayed by 0.3 s",
)
CAMPAIGN_SEED = 11
CAMPAIGN_BUDGET = 16  # candidates per scenario (the paper's 120 is `lastv2x campaign`'s default)
CAMPAIGN_DIR = Path(".lastv2x/demo/search")  # wiped at the start of each run
REPORT_DIR = Path(".lastv2x/demo/reports")  # the campaign's report: REPORT_DIR/<campaign id>/index.html


def _short(features: dict[str, int], limit: int = 70) -> str:
    text = ", ".join(f"{n}={v}" for n, v in features.items()) or "-"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class DemoResult:
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # stage, status, detail
    data: dict[str, Any] = field(default_factory=dict)
    campaign_table: str = ""  # part 2: the campaign's results table

    @property
    def table(self) -> str:
        w0 = max(len(r[0]) for r in self.rows)
        w1 = max(len(r[1]) for r in self.rows)
        line = "-" * (w0 + w1 + 60)
        out = [f"LAST-V2X on embedded defaults\n\n1) one intent, stage by stage\nintent: {INTENT}", line,
               f"{'stage':<{w0}}  {'status':<{w1}}  detail", line]
        out += [f"{s:<{w0}}  {st:<{w1}}  {d}" for s, st, d in self.rows]
        out.append(line)
        if self.campaign_table:
            out += ["", f"2) a campaign over {len(CAMPAIGN_INTENTS)} intents: search, refinement, delta debugging, "
                        f"archive ({CAMPAIGN_BUDGET} candidates per intent, seed {CAMPAIGN_SEED})",
                    self.campaign_table]
        return "\n".join(out)


def run_demo(campaign: bool = True, progress: Any = None) -> DemoResult:
    from services.llm.roles import LlmRoles

    result = DemoResult()
    parsed = LlmRoles().parse_intent(INTENT, seed=7)  # embedded defaults: offline backend, built-in maps
    spec, report = parsed.spec, parsed.report
    result.data["spec"] = spec_to_dict(spec)
    result.data["verification"] = report.to_dict()
    f = spec.faults[0] if spec.faults else None
    result.rows.append(("1 intent -> spec", f"{spec.application.value}",
                        f"backend {parsed.backend}; fault {f.operator.value} on {f.stream.value} anchored "
                        f"{f.anchor.kind.value}/{f.anchor.event.value} {f.anchor.offset_s:+g} s" if f else "no fault"))
    for h in parsed.history:
        for problem in h.problems:
            result.rows.append((f"2 verify (attempt {h.attempt})", problem.get("severity", "error"),
                                f"{problem.get('check', '?')}: {problem.get('message', '')}"))
            if problem.get("repair"):
                result.rows.append(("   repair", "applied", problem["repair"]["description"]))
    result.rows.append(("2 verify", "ok" if report.ok else "BLOCKED",
                        f"{parsed.attempts_used} parse attempt(s); decision epoch {report.decision_epoch_s:.2f} s, "
                        f"stop bar {report.stop_bar_s:.2f} s, signal.offset_s={spec.signal.offset_s}"))
    _execute_stages(result, spec)
    if campaign:
        _campaign_stage(result, progress)
    return result


def _campaign_stage(result: DemoResult, progress: Any = None) -> None:
    """Part 2: a short campaign; one row per intent, then the results table and one certificate."""
    import shutil

    from lastv2x_app.campaigns import local_core, results_table, witness_summary
    from services.search.core import validate_request

    shutil.rmtree(CAMPAIGN_DIR, ignore_errors=True)
    core = local_core(CAMPAIGN_DIR)
    try:
        request = validate_request(settings=core.settings, intents=list(CAMPAIGN_INTENTS), seed=CAMPAIGN_SEED,
                                   budget_per_scenario=CAMPAIGN_BUDGET, stop_at_first_admission=True)
        cid = core.start(request).id
        for event, _ in core.watch(cid):
            if progress is not None:
                progress(event)
        view = core.get(cid)
        witnesses = [witness_summary(w.record) for w in core.witnesses(cid)]
        records = {w.id: w.record for w in core.witnesses(cid)}
        from lastv2x_app.report import write_report

        report = write_report(core, cid, REPORT_DIR, archive=str(CAMPAIGN_DIR))
    finally:
        core.close()
    archive = str(CAMPAIGN_DIR.resolve())
    for sc in view.summary["scenarios"]:
        found = "admitted as written" if sc["admitted_initially"] else (
            f"admitted after refinement (candidate {sc['first_admitted_at']})" if sc["admitted_executions"]
            else "no admitted failure within the budget")
        result.rows.append((f"7 campaign: {sc['source']}", sc["application"] or "?",
                            f"{found}; {len(sc['witness_ids'])} witness(es), {sc['executions']}+"
                            f"{sc['shrink_executions']} runs"))
    text = results_table(view.summary, witnesses, archive, state=view.state, reason=view.reason)
    if records:
        first = next(iter(records.values()))
        cert = first["certificate"]
        text += (f"\n\nwitness {first['witness_id']} ({first['spec']['application']}): "
                 f"{', '.join(f['operator'] + ' on ' + f['stream'] for f in first['spec']['faults'])}; "
                 f"1-minimality certificate ({'complete' if cert['complete'] else 'incomplete'}):")
        text += "".join(f"\n  {e['verdict']:<13} {e['weakening']}" for e in cert["weakenings"])
        text += f"\nreplay it: lastv2x witness replay {first['witness_id']} --out {CAMPAIGN_DIR}"
    text += f"\n\nreport (opens offline in a browser): {report.index.resolve()}"
    result.campaign_table = text
    result.data["campaign"] = {"id": view.id, "state": view.state, "reason": view.reason,
                               "summary": view.summary, "witnesses": witnesses, "archive": archive,
                               "report": str(report.index.resolve())}


def _execute_stages(result: DemoResult, spec: ScenarioSpec) -> None:
    import tempfile

    from lastv2x.core.errors import FailedPrecondition
    from services.grounding.core import GroundingConfig, GroundingCore
    from services.simulator.execute import SimulatorLimits, program_for, run_one

    try:
        core = GroundingCore(GroundingConfig(cache_dir=Path(tempfile.gettempdir()) / "lastv2x-demo" / "catalogue"))
        program = core.ground(spec)
        junction = next((c.junction_id for c in program.ego.route.crossings), "?")
        chosen = program.grounding.details.get("chosen", {}) if program.grounding.details else {}
        result.rows.append(("3 ground -> program", "grounded",
                            f"map {program.map_name}, junction {junction} ({len(core.list_maps())} maps in catalogue; "
                            f"planner {program.grounding.builder}); {len(program.agents)} vehicle(s), "
                            f"{len(program.rsus)} RSU(s), {len(program.faults)} fault(s)"
                            + (f"; {chosen}" if chosen and len(str(chosen)) < 60 else "")))
    except FailedPrecondition as exc:
        program = program_for(spec)
        result.rows.append(("3 ground -> program", "fallback", f"{exc}; using the synthetic crossing"))
    trace_dir = Path(tempfile.gettempdir()) / "lastv2x-demo"
    outcome, uri = run_one(program, None, SimulatorLimits(trace_dir=trace_dir), write_trace=True)
    d = outcome.to_dict()
    extra = (d.get("monitor") or {}).get("extra") or {}
    for name in ("md", "gt"):
        r = d[name]
        epoch = next((x for x in r["decisions"] if x["epoch"]), None)
        verdict = "FAILED " + ",".join(["red_entry"] * bool(r["red_entries"]) + ["collision"] * bool(r["collision"])) \
            if r["failed"] else "safe"
        when = f"decided {epoch['action']} at {epoch['t_s']:.2f} s ({epoch['reason']})" if epoch else "no epoch"
        label = "message-driven ego" if name == "md" else "ground-truth ego"
        result.rows.append((f"4 paired: {label}", verdict, f"{when}; stops {r['stops']}"))
    result.rows.append(("4 paired: admission", "ADMITTED" if d["admitted"] else "not admitted",
                        f"failure class {extra.get('failure_class') or '-'}; failure margin {margin_text(d['failure_margin'], admitted=d['admitted'])}; "
                        f"divergence alarm {extra.get('divergence_alarm')}"))
    result.data["outcome"] = d
    result.rows.append(("5 trace (MCAP)", "written", uri))
    result.data["trace_uri"] = uri
    _reduce_stage(result, Path(uri.removeprefix("file://")))


def _reduce_stage(result: DemoResult, trace: Path) -> None:
    from services.strap.pipeline import ingest, reduce_table

    table = ingest(trace, "platform", modules=["application"])
    reduction = reduce_table(table)
    kept = reduction.kept_frames
    result.rows.append(("6 reduce (STRaP)", f"{len(reduction.segments)} segment(s)",
                        f"{table.n_frames} frames -> {kept} kept ({1 - kept / max(1, table.n_frames):.0%} reduction); "
                        f"module 'application', {len(table.feature_names)} features"))
    t0 = int(table.timestamps_ns[0]) if table.n_frames else 0
    previous: dict[str, int] = {}
    for k, seg in enumerate(reduction.segments):
        features = dict(zip(table.feature_names, (int(v) for v in seg.vector), strict=True))
        changed = {n: v for n, v in features.items() if previous.get(n, 0) != v}
        previous = features
        if k < MAX_SEGMENT_ROWS:
            result.rows.append(("   segment", f"{(seg.start_ns - t0) / 1e9:6.2f} s",
                                f"{seg.clip_frames:>3} frames (pre-roll {(seg.start_ns - seg.preroll_start_ns) / 1e9:.1f} s); "
                                f"changed: {_short(changed)}"))
    if len(reduction.segments) > MAX_SEGMENT_ROWS:
        result.rows.append(("   ...", f"+{len(reduction.segments) - MAX_SEGMENT_ROWS}", "more segments (--json lists all)"))
    result.data["segments"] = [{"start_ns": s.start_ns, "clip_frames": s.clip_frames, "vector": list(s.vector)}
                               for s in reduction.segments]
