"""Search fixtures: the real service cores in-process, specs on the synthetic crossing (fast)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import ScenarioSpec, parse_spec
from services.search.core import SearchCore
from services.search.pipeline import InProcessPipeline
from services.search.settings import SearchSettings
from services.simulator.reference import reference_spec

FREEZE_BEFORE_AMBER: dict[str, Any] = {
    "name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
    "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}
HARMLESS_MAP_DROP: dict[str, Any] = {"name": "drop_map", "operator": "drop", "stream": "MAP", "probability": 0.2,
                                     "duration_s": 2.0}


def rlvw_failing_spec(extra_faults: int = 1) -> ScenarioSpec:
    """RLVW whose SPaT freezes just before amber (admitted), plus faults that do not matter."""
    d = reference_spec(Application.RLVW, seed=7).model_dump(mode="json")
    d["faults"] = [FREEZE_BEFORE_AMBER, HARMLESS_MAP_DROP][: 1 + extra_faults]
    return parse_spec(d)


@pytest.fixture
def search_core(tmp_path: Path) -> Iterator[SearchCore]:
    settings = SearchSettings(data_dir=tmp_path / "search", stall_candidates=3)
    core = SearchCore(InProcessPipeline(synthetic_grounding=True, trace_dir=tmp_path / "traces"), settings)
    yield core
    core.close()
