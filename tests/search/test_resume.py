"""A search service killed mid-campaign resumes from its journal and ledger and ends with the same
archive and journal as an uninterrupted run; only executions that were not recorded run again."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path

from services.search.core import SearchCore, validate_request
from services.search.pipeline import Execution, ExecutionRequest, InProcessPipeline
from services.search.settings import SearchSettings
from tests.search.conftest import rlvw_failing_spec


class _Killed(BaseException):
    """What a SIGKILL looks like to the runner thread: nothing catches it, nothing is cleaned up."""


class _CountingPipeline(InProcessPipeline):
    def __init__(self, kill_after: int | None = None, **kw):  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self.submits = 0
        self.kill_after = kill_after

    def submit(self, request: ExecutionRequest) -> Future[Execution]:
        if self.kill_after is not None and self.submits >= self.kill_after:
            raise _Killed()
        self.submits += 1
        return super().submit(request)

    def submit_batch(self, requests: list[ExecutionRequest]) -> list[Future[Execution]]:  # type: ignore[override]
        return [self.submit(r) for r in requests]  # one by one, through this fake's submit


def _core(d: Path, pipeline: InProcessPipeline) -> SearchCore:
    return SearchCore(pipeline, SearchSettings(data_dir=d, stall_candidates=3))


def _request(core: SearchCore):  # type: ignore[no-untyped-def]
    return validate_request(settings=core.settings, specs=[rlvw_failing_spec(1)], seed=9, budget_per_scenario=10,
                            in_flight=2)


def _archive(core: SearchCore, cid: str) -> tuple[list, list, list]:
    witnesses = [(w.id, w.key, w.outcome_json) for w in core.witnesses(cid)]
    journal = [(k, p.get("spec"), p.get("admitted"), p.get("failure_margin")) for _, k, p in core.store.journal(cid)]
    return witnesses, journal, [e["key"] for e in core.store.catalogue()]


def test_a_killed_campaign_resumes_to_the_same_archive(tmp_path: Path) -> None:
    clean = _core(tmp_path / "clean", _CountingPipeline(synthetic_grounding=True, trace_dir=tmp_path / "t1"))
    try:
        cid = clean.start(_request(clean)).id
        assert clean.wait(cid, 300).state == "done"
        expected, clean_submits = _archive(clean, cid), clean.pipeline.submits  # type: ignore[attr-defined]
    finally:
        clean.close()
    assert expected[0], "the clean run archives a witness"

    hook, threading.excepthook = threading.excepthook, lambda args: None  # the kill is expected
    try:
        dying = _CountingPipeline(kill_after=clean_submits // 2, synthetic_grounding=True, trace_dir=tmp_path / "t2")
        first = _core(tmp_path / "crash", dying)
        cid = first.start(_request(first)).id
        first.wait(cid, 300)
        assert first.store.get_campaign(cid).state == "running"  # killed: nobody marked it ended
        recorded = sum(first.store.count_executions(cid).values())
        first.close()
    finally:
        threading.excepthook = hook

    restarted = _core(tmp_path / "crash", _CountingPipeline(synthetic_grounding=True, trace_dir=tmp_path / "t3"))
    try:
        assert restarted.resume_unfinished(at_start=True) == [cid]
        view = restarted.wait(cid, 300)
        assert view.state == "done", view.reason
        assert _archive(restarted, cid) == expected
        # exactly once: what the crashed run recorded was not executed again
        assert restarted.pipeline.submits <= clean_submits - recorded + 1  # type: ignore[attr-defined]
        assert sum(restarted.store.count_executions(cid).values()) == sum(
            1 for _ in restarted.store.journal(cid) if _[1] == "result") + sum(
            s["shrink_executions"] for s in view.summary["scenarios"])
    finally:
        restarted.close()


def test_another_replica_takes_over_once_the_lease_expires(tmp_path: Path) -> None:
    """Two search replicas share one archive: the survivor waits for the dead one's lease, then resumes."""
    settings = SearchSettings(data_dir=tmp_path / "shared", stall_candidates=3, lease_ttl_s=1)
    hook, threading.excepthook = threading.excepthook, lambda args: None
    try:
        dying = SearchCore(_CountingPipeline(kill_after=3, synthetic_grounding=True, trace_dir=tmp_path / "a"),
                           settings)
        cid = dying.start(_request(dying)).id
        dying.wait(cid, 300)  # its runner was killed: the lease is no longer renewed
    finally:
        threading.excepthook = hook
    survivor = SearchCore(_CountingPipeline(synthetic_grounding=True, trace_dir=tmp_path / "b"), settings)
    try:
        assert survivor.resume_unfinished() == []  # the lease is still the dead replica's
        assert survivor.store.lease_holder(cid) == dying.holder
        import time

        time.sleep(1.2)
        assert survivor.resume_unfinished() == [cid]
        view = survivor.wait(cid, 300)
        assert view.state == "done" and survivor.witnesses(cid)
        assert survivor.store.lease_holder(cid) is None  # released at the end
    finally:
        survivor.close()
        dying.close()


def _counts(core: SearchCore, cid: str) -> dict[str, object]:
    view = core.get(cid)
    return {"catalogue": [(e["key"], e["count"]) for e in core.store.catalogue()],
            "ledger": sum(core.store.count_executions(cid).values()), "summary_executions": view.summary["executions"],
            "shrink": [s["shrink_executions"] for s in view.summary["scenarios"]],
            "duplicates": [s["duplicate_keys"] for s in view.summary["scenarios"]]}


def test_a_resumed_campaign_counts_its_catalogue_and_executions_as_a_clean_run(tmp_path: Path) -> None:
    """Issue 41: killed after witnesses were archived and duplicates counted, the resumed campaign counted
    every admission again (catalogue 110/3/1/22 against a clean 56/2/1/22) and skipped the re-checks the
    crashed run had recorded (summary 201 executions against 204 ledger rows)."""
    def request(core: SearchCore):  # type: ignore[no-untyped-def]
        return validate_request(settings=core.settings, specs=[rlvw_failing_spec(0)], seed=1, budget_per_scenario=16,
                                 in_flight=2, reflection_rounds=0)  # 9 admissions of 2 keys: 3 + 6

    clean = _core(tmp_path / "clean", _CountingPipeline(synthetic_grounding=True, trace_dir=tmp_path / "t1"))
    try:
        cid = clean.start(request(clean)).id
        assert clean.wait(cid, 300).state == "done"
        expected, clean_submits = _counts(clean, cid), clean.pipeline.submits  # type: ignore[attr-defined]
    finally:
        clean.close()
    assert any(n > 1 for _, n in expected["catalogue"]), expected  # type: ignore[attr-defined]

    hook, threading.excepthook = threading.excepthook, lambda args: None
    try:
        first = _core(tmp_path / "crash", _CountingPipeline(kill_after=clean_submits - 3, synthetic_grounding=True,
                                                            trace_dir=tmp_path / "t2"))
        cid = first.start(request(first)).id
        first.wait(cid, 300)
        assert first.witnesses(cid), "a witness was archived before the kill"
        first.close()
    finally:
        threading.excepthook = hook
    restarted = _core(tmp_path / "crash", _CountingPipeline(synthetic_grounding=True, trace_dir=tmp_path / "t3"))
    try:
        assert restarted.resume_unfinished(at_start=True) == [cid]
        assert restarted.wait(cid, 300).state == "done"
        assert _counts(restarted, cid) == expected
    finally:
        restarted.close()
