"""Kubernetes manifests render offline and pass schema + hardening checks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (renders kustomize offline) not installed")
def test_deploy_check_passes() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "deploy" / "check.py")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "overlays/campaign" in out.stdout and "FAIL" not in out.stdout


def test_dockerfile_runs_as_non_root_and_selects_service() -> None:
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    assert "USER 10001" in text and 'ENTRYPOINT ["python", "-m"]' in text
    for svc in ("llm", "grounding", "simulator", "search", "strap"):
        manifest = (ROOT / "deploy" / "k8s" / "base" / f"{svc}.yaml").read_text()
        assert f'args: ["services.{svc}"]' in manifest
