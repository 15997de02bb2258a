"""Short fault test on loopback (``make chaos`` runs a longer one): every service killed in turn mid-campaign
(llm, grounding, both simulator replicas, the search service; then the only replica of a one-replica run)
-> 0 lost, 0 duplicate results, the clean run's archive (witnesses, traces, ledger, journal, catalogue)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lastv2x_app.chaos import run_chaos

pytestmark = pytest.mark.e2e


def test_replica_kills_and_a_search_restart_lose_nothing(tmp_path: Path) -> None:
    r = run_chaos(budget=4, root=tmp_path)
    assert r["kills"] == ["llm", "grounding", "sim0", "sim1", "search", "sim0 (the only replica)"]
    assert r["chaos"]["state"] == r["clean"]["state"] == 3  # CAMPAIGN_STATE_DONE
    assert r["ledger"]["lost_results"] == 0 and r["ledger"]["duplicate_results"] == 0
    assert r["chaos_witnesses"] and r["archive_identical"], (r["differs_in"], r["single_replica"])


def test_simulator_and_strap_killed_mid_call_lose_nothing(tmp_path: Path) -> None:
    from lastv2x_app.chaos import run_service_kills

    r = run_service_kills(tmp_path)
    assert r["simulator"]["streamed_before_kill"] >= 1 and r["simulator"]["identical"]
    assert r["simulator"]["half_written"] == []
    assert r["strap"]["kept_recording_reduces"]  # ingested before the kill: still there after the restart
    assert r["strap"]["staged_before_restart"] and r["strap"]["staged_after_restart"] == []  # swept at start
    assert not r["strap"]["cut_upload_stored"]
