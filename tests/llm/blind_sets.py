"""Sets of intents written first, by a helper who had not read the parser (``bench/data/parse_*_blind.jsonl``): one
way to load one and parametrize a test over its items, named by their ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2] / "bench" / "data"


def over_blind_set(name: str) -> Any:
    """``pytest.mark.parametrize("item", ...)`` over the items of ``bench/data/parse_<name>_blind.jsonl``."""
    lines = (DATA / f"parse_{name}_blind.jsonl").read_text().splitlines()
    return pytest.mark.parametrize("item", [json.loads(line) for line in lines if line.strip()],
                                   ids=lambda item: item["id"])
