"""Regression over the witness archive: verdicts per witness against a new build, STRaP's order,
APFD, the budget."""

from __future__ import annotations

import pytest

from lastv2x_app.example_app import serve, servicer_for
from lastv2x_app.regress import strap_order
from services.search.core import SearchCore, validate_request
from services.search.regress import apfd, regress
from tests.search.conftest import rlvw_failing_spec


def test_apfd_rewards_failures_first() -> None:
    assert apfd([True, False, False, False]) == pytest.approx(1 - 1 / 4 + 1 / 8)
    assert apfd([False, False, False, True]) == pytest.approx(1 - 4 / 4 + 1 / 8)
    assert apfd([True, True, False]) > apfd([False, True, True])
    assert apfd([False, False]) is None and apfd([]) is None


@pytest.fixture
def archive(search_core: SearchCore) -> SearchCore:
    req = validate_request(settings=search_core.settings, specs=[rlvw_failing_spec(0), rlvw_failing_spec(1)],
                           seed=3, budget_per_scenario=2, reflection_rounds=0)
    view = search_core.wait(search_core.start(req).id, timeout_s=300)
    assert view.state == "done" and search_core.witnesses(view.id)
    return search_core


def test_the_same_build_still_fails_every_witness_in_strap_order(archive: SearchCore) -> None:
    ws = archive.witnesses()
    order = strap_order(ws)
    assert sorted(order) == sorted(w.id for w in ws)
    report = regress(ws, archive.pipeline, "reference", order=strap_order, order_name="STRaP RSC")
    assert report.counts()["still_failing"] == len(ws) and report.order == "STRaP RSC"
    assert [r.witness_id for r in report.rows] == order
    assert report.apfd is not None and report.apfd_chronological is not None
    assert report.app["name"] == "lastv2x-reference"
    row = report.rows[0]
    assert row.before["admitted"] and row.after["admitted"] and row.before["md_failed"] and not row.after["gt_failed"]
    assert row.found_on["name"] == "lastv2x-reference"


def test_a_broken_build_over_grpc_gets_a_verdict_per_witness_and_the_budget_stops(archive: SearchCore) -> None:
    server, port = serve(servicer_for("mutant:signal:_epoch_rule:L55C4:if"))  # believed red -> no stop
    try:
        ws = archive.witnesses()
        target = f"grpc://127.0.0.1:{port}"
        report = regress(ws, archive.pipeline, target, budget=1)
        assert len(report.rows) == 1 and report.skipped == len(ws) - 1
        assert report.app["target"] == target and report.app["version"] == "signal:_epoch_rule:L55C4:if"
        (row,) = report.rows
        assert row.verdict in ("fixed", "still_failing", "errored")
        assert set(row.after) >= {"admitted", "md_failed", "gt_failed", "failure_margin"}
        base = regress(ws, archive.pipeline, target, baseline_app="reference")
        assert all(r.before["admitted"] for r in base.rows)  # the reference still fails them
    finally:
        server.stop(0)


def test_an_order_that_loses_a_witness_is_refused(archive: SearchCore) -> None:
    with pytest.raises(ValueError, match="every witness"):
        regress(archive.witnesses(), archive.pipeline, "", order=lambda ws: [])


def test_lastv2x_regress_prints_the_outcomes_side_by_side(archive: SearchCore, capsys) -> None:
    from lastv2x_app.cli import main

    rc = main(["regress", "--app", "reference", "--archive", str(archive.settings.data_dir), "--budget", "1"])
    out = capsys.readouterr().out
    assert rc == 1  # still failing
    assert "still_failing" in out and "before: ADMITTED" in out and "now: ADMITTED" in out and "APFD" in out


def test_an_erroring_build_is_labelled_error_not_with_a_safe_outcome(archive: SearchCore, capsys) -> None:
    """Issue 31: an application error is ERROR and its text, never 'now: ok (md safe, gt safe)'."""
    from lastv2x.v1 import application_pb2 as pb
    from lastv2x_app.cli import main
    from lastv2x_app.example_app import MinimalRlvw

    class Crashes(MinimalRlvw):
        def Step(self, request, context):  # type: ignore[no-untyped-def]
            return pb.StepResponse(decisions=[pb.AppDecision(session_id=r.session_id, error="segfault in decide()")
                                              for r in request.rows])

    server, port = serve(Crashes())
    try:
        rc = main(["regress", "--app", f"grpc://127.0.0.1:{port}", "--archive", str(archive.settings.data_dir),
                   "--budget", "1"])
    finally:
        server.stop(0)
    out = capsys.readouterr().out
    assert rc == 1 and "errored" in out
    (line,) = [ln for ln in out.splitlines() if "now:" in ln]
    now = line.split("now:", 1)[1]
    assert now.strip().startswith("ERROR") and "segfault in decide()" in now and "safe" not in now
