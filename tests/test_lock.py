"""The dependency lock and the stub check: what a fresh clone's `make setup` / `make test` rely on.

A dependency edit that was not re-locked fails here (in CI), not on a user's machine; the stub check
fails on a changed .proto, never on a generator's version stamp.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import lock  # noqa: E402
import protos_check  # noqa: E402

_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^ ;\\]+)\s*(?:;\s*(.*?))?\s*\\?$")


def _pins() -> dict[str, list[tuple[str, str]]]:
    """name -> [(version, marker text)] for every pin in requirements.lock."""
    pins: dict[str, list[tuple[str, str]]] = {}
    for line in lock.LOCK.read_text().splitlines():
        m = _PIN.match(line)
        if m:
            pins.setdefault(_canon(m.group(1)), []).append((m.group(2), m.group(3) or ""))
    return pins


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_lock_was_made_from_pyprojects_current_requirements():
    assert lock.check() is None, lock.check()


def test_every_requirement_is_pinned_at_a_version_its_range_admits():
    tables = lock.requirement_tables()
    requirements = list(tables["dependencies"]) + list(tables["build-system.requires"])
    for extra in tables["optional-dependencies"].values():
        requirements += extra
    pins = _pins()
    for text in requirements:
        req = Requirement(text)
        assert _canon(req.name) in pins, f"{req.name} is not in requirements.lock: run make lock"
        for version, _marker in pins[_canon(req.name)]:
            assert req.specifier.contains(version, prereleases=True), (
                f"requirements.lock pins {req.name}=={version}, outside pyproject's {req.specifier}: run make lock")


def test_every_pin_carries_hashes():
    text = lock.LOCK.read_text()
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 3)[3])
    for block in blocks:
        if "==" in block.splitlines()[0]:
            assert "--hash=sha256:" in block, block.splitlines()[0]


def test_the_venv_holds_the_locked_stub_generators():
    """grpcio-tools and protobuf are what `make protos` and the runtime use: exactly the lock's."""
    pins = _pins()
    for name in ("grpcio-tools", "protobuf", "grpcio"):
        (version, _), *_ = pins[name]
        assert importlib.metadata.version(name) == version, f"{name}: run make setup (the venv is not the lock)"


def test_a_dependency_edit_without_relock_is_refused_in_one_line(tmp_path):
    edited = tmp_path / "pyproject.toml"
    edited.write_text(lock.PYPROJECT.read_text().replace('"numpy>=1.26,<3"', '"numpy>=1.26,<2.5"'))
    reason = lock.check(edited, lock.LOCK)
    assert reason is not None and reason.endswith("run make lock") and "\n" not in reason
    # a comment or formatting change is not a requirement change
    reformatted = tmp_path / "reformatted.toml"
    reformatted.write_text(lock.PYPROJECT.read_text().replace("[project]\n", "[project]\n# a comment\n"))
    assert lock.check(reformatted, lock.LOCK) is None
    # an override is a requirement: dropping the numpy override the ASAM bundles need is a stale lock
    overridden = tmp_path / "overridden.toml"
    overridden.write_text(lock.PYPROJECT.read_text().replace('override-dependencies = ["numpy>=1.26,<3"]',
                                                             "override-dependencies = []"))
    assert overridden.read_text() != lock.PYPROJECT.read_text() and lock.check(overridden, lock.LOCK) is not None


def test_stale_lock_stops_the_script_with_exit_1(tmp_path):
    """What `make setup` runs first: exit 1 and one line, before the venv is touched."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    shutil.copy(ROOT / "scripts" / "lock.py", scripts / "lock.py")
    (tmp_path / "pyproject.toml").write_text(lock.PYPROJECT.read_text().replace('"mcap>=1.2,<2"', '"mcap>=1.3,<2"'))
    shutil.copy(lock.LOCK, tmp_path / "requirements.lock")
    result = subprocess.run([sys.executable, str(scripts / "lock.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "run make lock" in result.stderr


def _stub(version_grpc: str, version_pb: tuple[int, int, int], body: str) -> str:
    major, minor, patch = version_pb
    return (f"# Protobuf Python Version: {major}.{minor}.{patch}\n"
            f"_runtime_version.ValidateProtobufRuntimeVersion(\n    _runtime_version.Domain.PUBLIC,\n"
            f"    {major},\n    {minor},\n    {patch},\n    '',\n    'lastv2x/v1/x.proto'\n)\n"
            f"GRPC_GENERATED_VERSION = '{version_grpc}'\n{body}\n")


def test_stub_check_ignores_version_stamps_but_not_code(tmp_path):
    generated, committed = tmp_path / "gen", tmp_path / "committed"
    generated.mkdir()
    committed.mkdir()
    (generated / "simulator_pb2_grpc.py").write_text(_stub("1.85.4", (7, 36, 2), "class A: pass"))
    (committed / "simulator_pb2_grpc.py").write_text(_stub("1.85.1", (7, 35, 1), "class A: pass"))
    assert protos_check.drift(generated, committed) == []

    (committed / "simulator_pb2_grpc.py").write_text(_stub("1.85.1", (7, 35, 1), "class B: pass"))
    (generated / "grounding_pb2.py").write_text("x = 1\n")
    problems = protos_check.drift(generated, committed)
    assert problems == [
        "stub missing: lastv2x/v1/grounding_pb2.py (run make protos: new protos/lastv2x/v1/grounding.proto)",
        "stub drift: lastv2x/v1/simulator_pb2_grpc.py differs from protos/lastv2x/v1/simulator.proto (run make protos)",
    ]


@pytest.mark.e2e
def test_committed_stubs_match_protos():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "protos_check.py")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
