"""LASTV2X_SEARCH_VERIFY_BACKEND (issue 20): every new witness is re-run on a second simulator and
the verdict is stored with it; a backend that cannot run is a verdict too, never a lost witness."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.search.core import SearchCore, validate_request
from services.search.pipeline import InProcessPipeline
from services.search.settings import SearchSettings
from tests.search.conftest import rlvw_failing_spec


def _witness(tmp_path: Path, backend: str):  # type: ignore[no-untyped-def]
    settings = SearchSettings(data_dir=tmp_path / "search", stall_candidates=3, verify_backend=backend)
    core = SearchCore(InProcessPipeline(synthetic_grounding=True, trace_dir=tmp_path / "traces"), settings)
    try:
        req = validate_request(settings=core.settings, specs=[rlvw_failing_spec(0)], seed=3, budget_per_scenario=1)
        view = core.wait(core.start(req).id, timeout_s=300)
        assert view.state == "done", view.reason
        (w,) = core.witnesses(view.id)
        return w, core.store.count_executions(view.id)
    finally:
        core.close()


def test_a_witness_carries_its_verdict_on_sumo(tmp_path: Path) -> None:
    pytest.importorskip("libsumo", reason="the SUMO backend needs the 'sumo' extra")
    w, counts = _witness(tmp_path, "sumo")
    xc = w.record["cross_check"]
    assert xc["backend"] == "sumo" and xc["admitted"] and xc["md_failed"] and not xc["gt_failed"]
    assert counts.get("cross_check") == 1  # in the ledger like every execution


def test_a_backend_that_cannot_run_is_a_verdict_and_the_witness_stays(tmp_path: Path) -> None:
    w, _ = _witness(tmp_path, "gazebo")
    xc = w.record["cross_check"]
    assert xc["backend"] == "gazebo" and not xc["admitted"] and "unknown simulator backend" in xc["error"]
    assert w.record["certificate"]["complete"]


def test_without_the_setting_nothing_is_cross_checked(tmp_path: Path) -> None:
    w, counts = _witness(tmp_path, "")
    assert "cross_check" not in w.record and "cross_check" not in counts
