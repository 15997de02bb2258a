"""Settings in one way: every service's settings dataclass is what ``main`` reads, and the
README documents exactly the variables those dataclasses read."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from lastv2x.rpc.server import ServerConfig
from lastv2x.rpc.services import SERVICES

README = Path(__file__).resolve().parents[2] / "README.md"


class RecordingEnv(dict[str, str]):
    """An empty environment that remembers every variable looked up in it."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, key, default=None):  # type: ignore[no-untyped-def, override]
        self.read.add(key)
        return default

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return False

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        raise KeyError(key)


def variables_read(from_env) -> set[str]:  # type: ignore[no-untyped-def]
    env = RecordingEnv()
    from_env(env)
    return {k for k in env.read if k.startswith("LASTV2X_")}


def configuration_section() -> str:
    text = README.read_text()
    return text[text.index("## Configuration"):text.index("\n## ", text.index("## Configuration") + 1)]


def readme_table_variables() -> set[str]:
    """``LASTV2X_*`` names in the first column of the Configuration section's tables."""
    rows = [line for line in configuration_section().splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`(LASTV2X_[A-Z0-9_]+)`", row.split("|")[1])}


SETTINGS = {name: e for name, e in SERVICES.items() if e.settings is not None}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_settings_are_a_frozen_dataclass_read_from_the_environment(name: str) -> None:
    kind = SETTINGS[name].settings_type()
    assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen
    assert SETTINGS[name].settings_from_env({}) == kind()  # an empty environment gives the defaults
    assert variables_read(SETTINGS[name].settings_from_env)


def test_readme_table_lists_exactly_what_the_services_read() -> None:
    read = set().union(*(variables_read(e.settings_from_env) for e in SETTINGS.values()))
    documented = readme_table_variables()
    assert read - documented == set(), "read by a service but missing from the README's settings table"
    assert documented - read == set(), "in the README's settings table but read by no service"


def test_readme_names_every_runtime_variable() -> None:
    text = configuration_section()
    missing = {v for v in variables_read(lambda env: ServerConfig.from_env("x", env)) if f"`{v}`" not in text}
    assert not missing


def _reads_environment(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and \
                isinstance(node.value, ast.Name) and node.value.id == "os":
            return True
    return False


def test_no_service_module_reads_the_environment_outside_its_settings() -> None:
    """Only the settings dataclasses' modules touch os.environ (and the API-key lookup, carla's HOME)."""
    root = README.parent / "services"
    allowed = {"llm/config.py", "llm/backends/openai_compat.py", "grounding/core.py", "simulator/execute.py",
               "strap/store.py", "search/settings.py", "simulator/maps/opendrive.py",
               "simulator/backends/carla_logic.py"}
    readers = {p.relative_to(root).as_posix() for p in root.rglob("*.py") if _reads_environment(p)}
    assert readers <= allowed, readers - allowed
