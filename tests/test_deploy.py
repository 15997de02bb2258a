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


def _check_module():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("deploy_check", ROOT / "deploy" / "check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _discovery_objects(verbs: list[str], automount: bool = True, watched: str = "ns/sim") -> list[dict]:
    meta = lambda name: {"name": name, "namespace": "ns"}  # noqa: E731
    pod = {"serviceAccountName": "search", "automountServiceAccountToken": automount,
           "containers": [{"name": "search", "env": [{"name": "LASTV2X_SEARCH_SIMULATOR_ENDPOINTSLICES",
                                                      "value": watched}]}]}
    return [
        {"kind": "ServiceAccount", "metadata": meta("search"), "automountServiceAccountToken": False},
        {"kind": "Role", "metadata": meta("read"),
         "rules": [{"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": verbs}]},
        {"kind": "RoleBinding", "metadata": meta("read"), "roleRef": {"kind": "Role", "name": "read"},
         "subjects": [{"kind": "ServiceAccount", "name": "search"}]},
        {"kind": "Service", "metadata": meta("sim")},
        {"kind": "Deployment", "metadata": meta("search"), "spec": {"template": {"spec": pod}}},
        {"kind": "Deployment", "metadata": meta("sim"), "spec": {"template": {"spec": {
            "automountServiceAccountToken": False, "containers": [{"name": "sim"}]}}}},
    ]


def test_rbac_rules_allow_only_reading_endpointslices_where_discovery_runs() -> None:
    rbac_errors = _check_module().rbac_errors
    assert rbac_errors(_discovery_objects(["get", "list", "watch"])) == []
    assert any("['create']" in e for e in rbac_errors(_discovery_objects(["get", "list", "watch", "create"])))
    assert any("without a token" in e for e in rbac_errors(_discovery_objects(["list"], automount=False)))
    assert any("not a Service of its namespace" in e
               for e in rbac_errors(_discovery_objects(["list"], watched="other/sim")))
    objs = _discovery_objects(["list"])
    objs[-1]["spec"]["template"]["spec"]["automountServiceAccountToken"] = True  # a pod that needs no token
    objs.append({"kind": "ClusterRole", "metadata": {"name": "x"}, "rules": []})
    errs = rbac_errors(objs)
    assert any(e.startswith("sim: automountServiceAccountToken") for e in errs)
    assert any("cluster-wide" in e for e in errs)
    objs = _discovery_objects(["list"])
    objs[2]["subjects"] = []  # nothing binds the search ServiceAccount
    assert any("no RoleBinding" in e for e in rbac_errors(objs))
