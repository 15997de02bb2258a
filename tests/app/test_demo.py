"""``make run``: every stage of the main path runs its real core on embedded defaults."""

from __future__ import annotations

from lastv2x.core.catalogue import LARGE_MARGIN, NO_MARGIN_TEXT, margin_text
from lastv2x_app.demo import run_demo


def test_a_failure_margin_reads_as_a_number_or_as_none_for_the_sentinel() -> None:
    assert margin_text(0.25) == "0.25" and margin_text(-1.5, ".2f") == "-1.50"
    assert margin_text(LARGE_MARGIN) == NO_MARGIN_TEXT and margin_text(LARGE_MARGIN, ".2f") == NO_MARGIN_TEXT
    assert margin_text(LARGE_MARGIN, admitted=True) == margin_text(0.3, admitted=True) == "crossed (the failure happened)"


def test_demo_runs_every_stage_on_embedded_defaults() -> None:
    result = run_demo()
    stages = [row[0] for row in result.rows]
    for prefix in ("1 intent -> spec", "2 verify", "3 ground -> program", "4 paired: admission",
                   "5 trace (MCAP)", "6 reduce (STRaP)"):
        assert any(s.startswith(prefix) for s in stages), prefix
    assert dict((r[0], r[1]) for r in result.rows)["3 ground -> program"] == "grounded"  # a real map, no fallback
    assert result.data["verification"]["ok"] and result.data["segments"]
    assert result.data["outcome"]["admitted"]  # the intent's SPaT freeze is a communication-caused failure
    assert result.data["trace_uri"].startswith("file://") and "intent:" in result.table
    admission = dict((r[0], r[2]) for r in result.rows)["4 paired: admission"]
    assert f"failure margin {margin_text(result.data['outcome']['failure_margin'], admitted=True)};" in admission
    assert "failure margin none" not in admission  # never 'none' on an admitted failure (issue 31)
    assert "1e+06" not in result.table  # the no-episode sentinel is said in words
    # part 2: a campaign over the demo intents, every scenario finished, at least one 1-minimal witness
    campaign = result.data["campaign"]
    assert campaign["state"] == "done", campaign["reason"]
    scenarios = campaign["summary"]["scenarios"]
    assert [s["stage"] for s in scenarios] == ["done"] * len(scenarios)
    assert scenarios[0]["admitted_initially"] and scenarios[0]["witness_ids"]
    # the left turn's 0.2 s delay is harmless as written; the search finds the failure (the demo's point)
    assert scenarios[1]["admitted_initially"] is False and scenarios[1]["witness_ids"]
    assert all(w["complete"] and w["faults_left"] >= 1 for w in campaign["witnesses"])
    assert "7 campaign: intents[0]" in [r[0] for r in result.rows] and "archive:" in result.table
