"""The papers' experiments as one command (issue 33): ``python -m lastv2x_app.experiments [--quick] [--only ROW]``
(``make experiments [QUICK=1]``) runs every row and writes ``EXPERIMENTS.md`` at the repository root.

One module per row, each a ``run(quick: bool, progress) -> Row``: the paper's figure, ours, n / seeds, the
exact command and, where they differ, why (maps, parameters, application logic). Nothing is tuned to the
paper: every row runs the platform's defaults on the scenes its docstring names. A row that cannot run (a
missing map directory, an optional dependency) returns :func:`not_run` with the reason; a row that raises
is reported as failed with its error. No figure is ever carried over from an earlier run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
Progress = Callable[[str], None]

# Row id -> module under lastv2x_app.experiments, in the order the report lists them (cheapest first).
ROWS: dict[str, str] = {
    "coverage": "coverage",
    "normal-traffic": "normal_traffic",
    "corridor": "corridor",
    "eebl-relay": "eebl_relay",
    "ima-yield": "ima_yield",
    "gate": "gate",
    "refinement": "refinement",
    "paired-ablation": "paired_ablation",
    "strap": "strap",
}


@dataclass
class Row:
    """One experiment: the paper's figure beside ours. ``status``: ``ok``, ``not run`` or ``failed``."""

    id: str
    section: str  # the paper's section, e.g. "LAST-V2X §3.6"
    title: str
    paper: str
    ours: str
    n: str  # scenes / seeds / maps the figure is over
    command: str
    why: str = ""  # why ours differs from the paper's (empty where they agree)
    status: str = "ok"
    details: str = ""  # markdown: the per-map / per-case table behind the headline
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)  # machine-readable figures (tests read them)


def command(row_id: str, quick: bool) -> str:
    return f"python -m lastv2x_app.experiments --only {row_id}" + (" --quick" if quick else "")


def not_run(row_id: str, section: str, title: str, paper: str, reason: str, quick: bool) -> Row:
    """A row that could not run: says why in the table, never a number from an earlier run."""
    return Row(row_id, section, title, paper, f"NOT RUN: {reason}", "-", command(row_id, quick),
               status="not run", why=reason)


def carla_town_dir() -> tuple[Path | None, str]:
    """The CARLA towns' directory from ``LASTV2X_MAP_PATHS`` (a directory holding ``Town01.xodr``) and,
    when there is none or carla's parser is missing, why not."""
    try:
        import carla  # noqa: F401
    except ImportError:
        return None, "the carla extra is not installed (CARLA towns need its OpenDRIVE parser)"
    paths = [Path(p) for p in os.environ.get("LASTV2X_MAP_PATHS", "").split(os.pathsep) if p.strip()]
    for p in paths:
        if (p / "Town01.xodr").is_file():
            return p, ""
    return None, ("no CARLA towns: LASTV2X_MAP_PATHS " + (f"({os.pathsep.join(map(str, paths))}) holds no Town01.xodr"
                                                         if paths else "is unset") +
                  " (make experiments sets it to ../shared/data/opendrive/carla)")


def table(header: tuple[str, ...], rows: list[tuple]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


class Timer:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0


__all__ = ["ROOT", "ROWS", "Progress", "Row", "Timer", "carla_town_dir", "command", "not_run", "table"]
