"""The dependency lock: `requirements.lock`, every package pinned with its hashes.

    python3 scripts/lock.py            # make lock: re-resolve pyproject.toml, keeping the pins it still admits
    python3 scripts/lock.py --upgrade  # make lock UPGRADE=1: newest versions pyproject.toml admits
    python3 scripts/lock.py --check    # exit 1, one line, when the lock was made from other requirements

The lock is written by `uv pip compile --universal --generate-hashes` from pyproject.toml's
dependencies, every extra and the build backend (setuptools, wheel: `make setup` installs the
project itself without build isolation, so nothing unlocked is fetched), with pyproject.toml's
`[tool.uv] override-dependencies` passed as `--override` (a requirement that replaces every
package's requirement on that name). Its header records a SHA-256 of those requirement tables;
`--check` recomputes it from pyproject.toml with the standard library alone (no uv, no
network), so `make setup` can refuse a stale lock before it touches the virtualenv, and the
test suite fails on a dependency edit that was not re-locked.

Why a hashed requirements file and not `uv.lock`: `uv.lock` records the index's host and every
artifact's download address; this file records names, versions, markers and hashes only, so the
same lock installs from whichever index or mirror the machine is configured for.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
LOCK = ROOT / "requirements.lock"
UV = ROOT / ".tools" / "uv" / "bin" / "uv"
LOCK_PYTHON = "3.11"  # the oldest Python pyproject.toml admits; --universal adds markers for newer ones
HASH_PREFIX = "# requirements-sha256: "


def requirement_tables(pyproject: Path = PYPROJECT) -> dict:
    """What the lock is made from: the tables of pyproject.toml that name a requirement."""
    data = tomllib.loads(pyproject.read_text())
    project = data.get("project", {})
    return {
        "requires-python": project.get("requires-python", ""),
        "dependencies": project.get("dependencies", []),
        "optional-dependencies": project.get("optional-dependencies", {}),
        "build-system.requires": data.get("build-system", {}).get("requires", []),
        "tool.uv.override-dependencies": data.get("tool", {}).get("uv", {}).get("override-dependencies", []),
    }


def requirements_sha256(pyproject: Path = PYPROJECT) -> str:
    """Order-preserving canonical JSON of requirement_tables, hashed (formatting and comments do not count)."""
    canonical = json.dumps(requirement_tables(pyproject), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def recorded_sha256(lock: Path = LOCK) -> str | None:
    if not lock.exists():
        return None
    for line in lock.read_text().splitlines():
        if line.startswith(HASH_PREFIX):
            return line[len(HASH_PREFIX) :].strip()
        if line and not line.startswith("#"):
            break
    return None


def check(pyproject: Path = PYPROJECT, lock: Path = LOCK) -> str | None:
    """None when the lock was made from pyproject.toml's current requirements, else the one-line reason."""
    recorded = recorded_sha256(lock)
    if recorded is None:
        return f"{lock.name} is missing or has no '{HASH_PREFIX.strip()}' header: run make lock"
    if recorded != requirements_sha256(pyproject):
        return f"{lock.name} does not match {pyproject.name}'s requirements (edited since the last lock): run make lock"
    return None


def lock(upgrade: bool) -> None:
    if not UV.exists():
        sys.exit(f"{UV} not found: run make setup first (it installs the pinned uv)")
    tables = requirement_tables()
    with tempfile.TemporaryDirectory() as tmp:
        build_in = Path(tmp) / "build-system.in"
        build_in.write_text("\n".join(tables["build-system.requires"]) + "\n")
        overrides = Path(tmp) / "overrides.txt"  # explicit, whichever folder uv reads its settings from
        overrides.write_text("\n".join(tables["tool.uv.override-dependencies"]) + "\n")
        out = Path(tmp) / "requirements.lock"
        if LOCK.exists() and not upgrade:
            out.write_text(LOCK.read_text())  # uv keeps the pins of an existing output file it still admits
        cmd = [
            str(UV), "pip", "compile", str(PYPROJECT), str(build_in),
            "--all-extras", "--universal", "--python-version", LOCK_PYTHON,
            "--override", str(overrides),
            "--generate-hashes", "--no-header", "--quiet", "--output-file", str(out),
        ]
        if upgrade:
            cmd.append("--upgrade")
        subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, "UV_NO_PROGRESS": "1"})
        body = out.read_text().replace(str(build_in), "build-system.requires").replace(tmp + "/", "")
    header = (
        "# The dependency lock: `make setup` installs exactly this (uv pip sync --require-hashes).\n"
        "# Written by `make lock` (scripts/lock.py); never edit by hand.\n"
        f"{HASH_PREFIX}{requirements_sha256()}\n"
    )
    LOCK.write_text(header + body)
    print(f"wrote {LOCK.relative_to(ROOT)}: {sum(1 for ln in body.splitlines() if '==' in ln)} packages")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail (one line) when the lock is stale")
    parser.add_argument("--upgrade", action="store_true", help="re-resolve to the newest admitted versions")
    args = parser.parse_args()
    if args.check:
        reason = check()
        if reason:
            print(reason, file=sys.stderr)
            sys.exit(1)
        return
    lock(upgrade=args.upgrade)


if __name__ == "__main__":
    main()
