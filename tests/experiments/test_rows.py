"""Each experiment row of ``make experiments`` still executes (issue 33), at its tiniest (one seed, the smallest
n): these check that a row runs and reports, not its figures (those come only from ``make experiments``)."""

from __future__ import annotations

import importlib

import pytest

from lastv2x_app.experiments import ROWS, Row
from lastv2x_app.experiments.__main__ import main, render, run_row

TINY = ["coverage", "normal-traffic", "corridor", "eebl-relay", "ima-yield", "gate", "strap", "paired-ablation", "refinement"]


@pytest.mark.parametrize("row_id", TINY)
def test_each_row_runs_at_tiny_size(row_id: str) -> None:
    module = importlib.import_module(f"lastv2x_app.experiments.{ROWS[row_id]}")
    row = module.run(True, lambda msg: None, tiny=True)
    assert isinstance(row, Row) and row.id == row_id and row.status == "ok", row.ours
    assert row.paper and row.ours and row.n and row.command.startswith("python -m lastv2x_app.experiments")


def test_a_row_that_raises_is_reported_failed_never_a_gap(monkeypatch) -> None:
    module = importlib.import_module("lastv2x_app.experiments.coverage")

    def boom(quick, progress):
        raise RuntimeError("no map here")

    monkeypatch.setattr(module, "run", boom)
    row = run_row("coverage", True, lambda m: None)
    assert row.status == "failed" and "no map here" in row.ours
    text = render([row], True, ["coverage"], 1.0)
    assert "QUICK" in text and "FAILED: RuntimeError: no map here" in text


def test_carla_towns_missing_say_so(monkeypatch) -> None:
    monkeypatch.setenv("LASTV2X_MAP_PATHS", "")
    from lastv2x_app.experiments import carla_town_dir

    path, why = carla_town_dir()
    assert path is None and why


def test_the_command_writes_the_report(tmp_path) -> None:
    out = tmp_path / "E.md"
    assert main(["--quick", "--only", "ima-yield", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| row | paper |" in text and "LAST-V2X §3.4" in text and "--only ima-yield --quick" in text
    with pytest.raises(SystemExit):
        main(["--only", "nope", "--out", str(out)])
