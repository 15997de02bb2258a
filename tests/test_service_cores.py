"""Every service names its entry core the same way: ``services/<name>/core.py`` exposes
``<Name>Core``, the pure core its servicer calls (no grpc in it)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SERVICES = sorted(p.parent.name for p in (Path(__file__).resolve().parents[1] / "services").glob("*/servicer.py"))


def test_every_service_is_found() -> None:
    assert {"grounding", "llm", "search", "simulator", "strap"} <= set(SERVICES)


@pytest.mark.parametrize("name", SERVICES)
def test_the_entry_core_is_services_name_core(name: str) -> None:
    module = importlib.import_module(f"services.{name}.core")
    assert isinstance(getattr(module, f"{name.capitalize()}Core"), type)
    tree = ast.parse(Path(module.__file__ or "").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m == "grpc" or m.startswith(("grpc.", "lastv2x.v1")) for m in imported)
