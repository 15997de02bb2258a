"""Campaigns end to end on the real cores (parser, verifier, paired simulator), in-process."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from lastv2x.core.errors import InvalidArgument, Unavailable
from lastv2x.core.spec import parse_spec
from services.search.core import SearchCore, validate_request
from services.search.pipeline import Execution, ExecutionRequest, InProcessPipeline
from services.search.settings import SearchSettings
from services.search.shrink import single_weakenings
from tests.search.conftest import rlvw_failing_spec


def _run(core: SearchCore, **kw):  # type: ignore[no-untyped-def]
    req = validate_request(settings=core.settings, **kw)
    view = core.wait(core.start(req).id, timeout_s=300)
    return view


def test_admitted_spec_becomes_a_one_minimal_replayable_witness(search_core: SearchCore) -> None:
    view = _run(search_core, specs=[rlvw_failing_spec()], seed=3, budget_per_scenario=3)
    assert view.state == "done", view.reason
    (sc,) = view.summary["scenarios"]
    assert sc["admitted_initially"] is True and sc["admitted_executions"] >= 1
    (w,) = search_core.witnesses(view.id)
    spec = w.record["spec"]
    assert [f["name"] for f in spec["faults"]] == ["freeze_spat"]  # the harmless MAP drop is gone
    cert = w.record["certificate"]
    assert cert["complete"] and cert["weakenings"]
    assert all(e["verdict"] != "admitted" for e in cert["weakenings"])
    assert Path(w.trace_path).is_file() and Path(w.trace_path).parent == search_core.store.traces_dir
    replay = search_core.replay(w.id)
    assert replay.admitted and replay.identical
    # the ledger holds every execution once, under its id
    counts = search_core.store.count_executions(view.id)
    assert sum(counts.values()) == view.summary["executions"]
    kinds = [k for _, k, _ in search_core.store.journal(view.id)]
    assert {"dispatch", "result", "elite", "admitted", "witness"} <= set(kinds)


def test_witness_certificate_matches_its_single_weakenings(search_core: SearchCore) -> None:
    from lastv2x.core.spec import parse_spec

    view = _run(search_core, specs=[rlvw_failing_spec()], seed=3, budget_per_scenario=1)
    (w,) = search_core.witnesses(view.id)
    spec = parse_spec(w.record["spec"])
    assert [e["weakening"] for e in w.record["certificate"]["weakenings"]] == \
        [x.description for x in single_weakenings(spec)]


def test_same_seed_same_campaign(tmp_path: Path) -> None:
    def once(d: Path) -> tuple[list, list[str]]:
        core = SearchCore(InProcessPipeline(synthetic_grounding=True, trace_dir=d / "t"),
                          SearchSettings(data_dir=d / "s", stall_candidates=3))
        try:
            view = _run(core, specs=[rlvw_failing_spec(0)], seed=11, budget_per_scenario=6)
            results = [(p["admitted"], p["failure_margin"]) for _, k, p in core.store.journal(view.id) if k == "result"]
            dispatched = [p["spec"] for _, k, p in core.store.journal(view.id) if k == "dispatch"]
            return [results, dispatched], [w.id for w in core.witnesses(view.id)]
        finally:
            core.close()
    a, b = once(tmp_path / "a"), once(tmp_path / "b")
    assert a == b
    assert a[1]  # found and archived a witness


def test_bad_requests_name_the_field() -> None:
    s = SearchSettings()
    cases = [({}, "intents"), ({"intents": ["  "]}, "intents[0]"),
             ({"intents": ["x"], "budget_per_scenario": s.max_candidates_per_scenario + 1}, "budget_per_scenario"),
             ({"intents": ["x"], "reflection_rounds": 99}, "reflection_rounds"),
             ({"specs": [{"application": "RLVW", "ego": {"speed_mps": -1}}]}, "specs[0].ego.speed_mps")]
    for kw, field in cases:
        with pytest.raises(InvalidArgument) as exc:
            validate_request(settings=s, **kw)
        assert field in [v.field for v in exc.value.violations], (kw, exc.value.violations)


def test_an_intent_that_does_not_parse_fails_its_scenario_and_the_rest_run(search_core: SearchCore) -> None:
    """A campaign is FAILED only when none of its scenarios could run (issue 42): one that did not parse
    fails alone, the campaign is done and its reason names the failed scenario."""
    view = _run(search_core, intents=["hello world"], specs=[rlvw_failing_spec(0)], seed=1, budget_per_scenario=1)
    assert view.state == "done"
    assert view.reason.startswith("1 of 2 scenarios failed: intents[0]") and "no scenario vocabulary" in view.reason
    assert [sc["stage"] for sc in view.summary["scenarios"]] == ["failed", "done"]
    assert len(search_core.witnesses(view.id)) == 1  # the spec's witness is archived regardless
    alone = _run(search_core, intents=["hello world"], seed=1, budget_per_scenario=1)
    assert alone.state == "failed" and "no scenario vocabulary" in alone.reason


class _DyingPipeline(InProcessPipeline):
    """The real in-process pipeline, whose simulator stops answering once ``dead()`` says so."""

    def __init__(self, **kw):  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self.dead = lambda: False

    def submit(self, request: ExecutionRequest) -> Future[Execution]:
        if self.dead():
            f: Future[Execution] = Future()
            f.set_exception(Unavailable("simulator 127.0.0.1:1 answered UNAVAILABLE"))
            return f
        return super().submit(request)

    def submit_batch(self, requests: list[ExecutionRequest]) -> list[Future[Execution]]:  # type: ignore[override]
        return [self.submit(r) for r in requests]  # one by one, through this fake's submit


def test_an_unreachable_simulator_fails_the_campaign_with_the_reason_and_keeps_witnesses(tmp_path: Path) -> None:
    pipeline = _DyingPipeline(synthetic_grounding=True, trace_dir=tmp_path / "t")
    core = SearchCore(pipeline, SearchSettings(data_dir=tmp_path / "s"))
    pipeline.dead = lambda: len(core.store.list_witnesses()) > 0  # dies right after the first archive
    try:
        view = _run(core, specs=[rlvw_failing_spec(0), rlvw_failing_spec(1)], seed=2, budget_per_scenario=3)
        assert view.state == "failed" and "UNAVAILABLE" in view.reason
        assert len(core.witnesses(view.id)) == 1
        assert view.summary["scenarios"][1]["stage"] == "failed"
    finally:
        core.close()


def test_cancel_is_safe_at_any_moment(search_core: SearchCore) -> None:
    req = validate_request(settings=search_core.settings, specs=[rlvw_failing_spec(0)], seed=5,
                           budget_per_scenario=500)
    view = search_core.start(req)
    for event, _ in search_core.watch(view.id):
        if event.kind == "execution":
            search_core.cancel(view.id)
            break
    final = search_core.wait(view.id, timeout_s=120)
    assert final.state == "cancelled"
    assert final.summary["candidates"] < 500
    events = [e.kind for e, _ in search_core.watch(view.id)]  # a late watcher replays the history and ends
    assert events[-1] == "cancelled"


def test_gate_off_runs_what_the_gate_would_block(search_core: SearchCore) -> None:
    on = _run(search_core, specs=[rlvw_failing_spec(0)], seed=4, budget_per_scenario=12, minimize=False)
    off = _run(search_core, specs=[rlvw_failing_spec(0)], seed=4, budget_per_scenario=12, minimize=False, gate=False)
    (a,), (b,) = on.summary["scenarios"], off.summary["scenarios"]
    assert b["gated"] == 0
    assert a["candidates"] == b["candidates"] == 12
    assert b["executions"] == 12 and a["executions"] == 12 - a["gated"]


def test_a_budget_in_executions_does_not_charge_gated_candidates(search_core: SearchCore) -> None:
    """Issue 37, item 5: the paper's budget counts executions; the gate's blocked candidates are drawn on top."""
    on = _run(search_core, specs=[rlvw_failing_spec(0)], seed=4, budget_per_scenario=12, minimize=False)
    ex = _run(search_core, specs=[rlvw_failing_spec(0)], seed=4, budget_per_scenario=12, minimize=False,
              budget_in_executions=True)
    (a,), (b,) = on.summary["scenarios"], ex.summary["scenarios"]
    assert a["gated"] > 0 and a["executions"] == 12 - a["gated"]  # the same draws, charged per candidate
    assert b["executions"] == 12 and b["candidates"] == 12 + b["gated"] and b["gated"] >= a["gated"]


def test_a_budget_in_executions_still_ends_when_the_gate_blocks_everything() -> None:
    from services.search.campaign_base import CampaignBase
    from services.search.campaign_types import GATED_ALLOWANCE, CampaignRequest, ScenarioProgress

    runner = object.__new__(CampaignBase)
    runner.request = CampaignRequest(budget_per_scenario=10, budget_in_executions=True)
    sc = ScenarioProgress(0, "intents[0]", "x", candidates=GATED_ALLOWANCE * 10 - 1, gated=GATED_ALLOWANCE * 10 - 1)
    assert runner.budget_left(sc) == 1
    sc.candidates, sc.gated = GATED_ALLOWANCE * 10, GATED_ALLOWANCE * 10
    assert runner.budget_left(sc) == 0  # nothing executed, but the allowance of candidates is spent
    runner.request = CampaignRequest(budget_per_scenario=10)
    assert runner.budget_left(ScenarioProgress(0, "intents[0]", "x", candidates=10, gated=9)) == 0


def test_a_stalled_search_reflects_and_its_field_edits_re_enter_the_pipeline(search_core: SearchCore) -> None:
    # a lead cruising at a stated speed: no hazard for the drop to hide (a lead left unsaid brakes hard by default)
    intent = "Forward collision warning when the lead vehicle, cruising at 14 m/s, has its BSMs dropped for 2 s"
    view = _run(search_core, intents=[intent], seed=2, budget_per_scenario=9, reflection_rounds=2)
    (sc,) = view.summary["scenarios"]
    assert sc["reflection_rounds"] >= 1
    rounds = [p for _, k, p in search_core.store.journal(view.id) if k == "reflection"]
    first = rounds[0]
    assert first["prompt"] == intent and first["revised_prompt"] != intent
    assert "window_before_decision" in first["rule_ids"]  # the drop heals before the decision epoch
    # issue 31, item 5: the reflector edited fields of the spec that ran (the window), not the prose
    assert {e["path"] for e in first["edits"]} == {"faults[0].anchor", "faults[0].duration_s"}
    assert all(e["rule"] == "window_before_decision" for e in first["edits"])
    # the edited spec was grounded and executed under the same admission test
    dispatched = [p for _, k, p in search_core.store.journal(view.id) if k == "dispatch"]
    initial = next(p for p in dispatched if p["origin"] == "initial")
    reflected = [p for p in dispatched if p["origin"] == "reflection"]
    assert reflected
    # reflection edits how hard and when, never what or where: the root spec with the edits, nothing else
    edited = {**initial["spec"], "faults": [{**initial["spec"]["faults"][0], "anchor": first["edits"][0]["value"]}]}
    edited["faults"][0].pop("duration_s", None)
    assert parse_spec(reflected[0]["spec"]) == parse_spec(edited)
    # GetCampaign shows each round: its edits, and that the edited spec (not the words) is what ran
    from services.search.servicer import campaign_to_proto, reflection_from_proto

    shown = sc["reflections"][0]
    assert shown["round"] == 1 and shown["applied"] == "edits" and shown["reason"] == ""
    assert shown["edits"] == first["edits"] and shown["diagnosis"] == first["diagnosis"]
    (progress,) = campaign_to_proto(view).scenarios
    assert [reflection_from_proto(r) for r in progress.reflections] == sc["reflections"]


PARTIAL = ("Red-light violation warning when the SPaT feed freezes just before amber, "
           "while every SPaT message arrives twice")  # duplication: no operator expresses it


def test_a_partly_parsed_intent_stops_its_scenario_naming_the_clause(search_core: SearchCore) -> None:
    """Issue 31: never a run of something else than was asked: the clause the parser could not read
    fails the scenario (FAILED_PRECONDITION's text names it), unless allow_partial."""
    view = _run(search_core, intents=[PARTIAL], seed=1, budget_per_scenario=2)
    assert view.state == "failed"
    assert "every SPaT message arrives twice" in view.reason and "allow_partial" in view.reason
    assert view.summary["executions"] == 0


def test_allow_partial_runs_the_rest_and_every_record_names_the_clause(search_core: SearchCore) -> None:
    from lastv2x_app.campaigns import results_table

    view = _run(search_core, intents=[PARTIAL], seed=1, budget_per_scenario=2, allow_partial=True,
                stop_at_first_admission=True)
    assert view.state == "done", view.reason
    (sc,) = view.summary["scenarios"]
    assert sc["unparsed_clauses"] == ["every SPaT message arrives twice"]
    assert all(w.record["unparsed_clauses"] == sc["unparsed_clauses"] for w in search_core.witnesses(view.id))
    assert "intents[0] ran without what the parser could not read: 'every SPaT message arrives twice'" \
        in results_table(view.summary, [], "archive")


def test_reflection_edits_of_fields_the_spec_lacks_are_refused_not_a_crash(search_core: SearchCore) -> None:
    """A reflector (an LLM, say) may name ``faults[3]`` of a one-fault spec: the round is refused and journaled,
    the words are parsed instead, and the scenario goes on."""
    from services.search.pipeline import Reflected

    pipeline = search_core.pipeline
    real = pipeline.reflect

    def wrong_path(prompt, digest, campaign, spec=None):  # type: ignore[no-untyped-def]
        r = real(prompt, digest, campaign, spec)
        return Reflected(r.diagnosis, r.revised_prompt, r.rule_ids, (("faults[3].magnitude", 1.0, "no_diagnosis"),))

    pipeline.reflect = wrong_path  # type: ignore[method-assign]
    intent = "Forward collision warning when the lead vehicle, cruising at 14 m/s, has its BSMs dropped for 2 s"
    view = _run(search_core, intents=[intent], seed=2, budget_per_scenario=9, reflection_rounds=1)
    assert view.state == "done", view.reason
    refused = [p for _, k, p in search_core.store.journal(view.id) if k == "reflection" and "edits_refused" in p]
    assert refused and "does not have" in refused[0]["edits_refused"]
    (shown, *_) = view.summary["scenarios"][0]["reflections"]  # GetCampaign says why the edits did not run
    assert shown["edits"] == [{"path": "faults[3].magnitude", "value": 1.0, "rule": "no_diagnosis"}]
    assert "does not have" in shown["reason"] and "the revised intent was parsed instead" in shown["reason"]
    assert shown["applied"] in ("revised_prompt", "")



def test_an_execution_id_counts_once_per_process(search_core: SearchCore) -> None:
    """A later shrink may try a weakening an earlier one ran (the ledger serves it), or shrink to a witness this run
    archived: the summary counts each execution id once, as the ledger holds it; a resumed process (a new
    runner) counts what the crashed one recorded once more, as that run did."""
    from services.search.campaign_base import CampaignBase
    from services.search.campaign_types import ScenarioProgress

    def runner() -> CampaignBase:
        r = object.__new__(CampaignBase)
        r.id, r.store, r._counted, r._exec_count, r._exec_seconds = "c-test", search_core.store, set(), 0, 0.0
        return r

    e = Execution("sha", 1, True, 0.0, b"{}", "sim-0")
    sc = ScenarioProgress(0, "specs[0]", "")
    first = runner()
    assert first._record(sc, "x1", "shrink", e) and not first._record(sc, "x1", "shrink", e)
    assert first._count_once("x2") and not first._count_once("x2")
    assert search_core.store.count_executions("c-test") == {"shrink": 1}
    assert runner()._record(sc, "x1", "shrink", e)  # resumed: counted again, the ledger unchanged
    assert search_core.store.count_executions("c-test") == {"shrink": 1}


def test_the_results_table_says_when_an_admission_was_only_a_coverage_gap() -> None:
    """An initial run admitted whose faults all shrink away (the no-fault run fails too) has no witness: the table
    says why instead of a bare '-' beside 'admitted before: yes'."""
    from lastv2x_app.campaigns import results_table

    sc = {"intent": "IMA where the side vehicle's location is 3 metres off for 5 seconds.", "source": "intents[0]",
          "application": "IMA", "admitted_initially": True, "admitted_executions": 0, "first_admitted_at": None,
          "reflection_rounds": 0, "witness_ids": [], "duplicate_keys": 0, "stage": "done", "error": "",
          "executions": 197, "shrink_executions": 12, "coverage_gaps": 82, "unparsed_clauses": []}
    table = results_table({"scenarios": [sc]}, [], "archive")
    assert "none: its faults shrink away (coverage gap)" in table
    assert "none: its faults" not in results_table({"scenarios": [{**sc, "coverage_gaps": 0}]}, [], "archive")
