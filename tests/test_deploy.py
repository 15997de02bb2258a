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


def _pyproject_extras() -> set[str]:
    import tomllib

    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def test_the_image_holds_every_runtime_extra_and_make_setup_every_extra() -> None:
    """A backend the settings can select must be in the image (SUMO, PostgreSQL, ...), and ``make test``
    must install what the suite exercises (else whole backends' tests skip on a fresh machine)."""
    import re

    extras = _pyproject_extras()
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    image = set(re.search(r'uv pip install [^"]*"\.\[([^\]]+)\]"', dockerfile).group(1).split(","))
    assert image == extras - {"dev", "plots"}
    assert "--constraint requirements.lock" in dockerfile  # the image's versions are the lock's
    # make setup installs the lock, which covers every extra (tests/test_lock.py checks every pin)
    assert "pip sync" in (ROOT / "Makefile").read_text() and "--all-extras" in (ROOT / "scripts" / "lock.py").read_text()


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


def _rendered(overlay: str) -> list[dict]:
    return _check_module().render(ROOT / "deploy" / "k8s" / overlay)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (renders kustomize offline) not installed")
def test_network_policies_allow_exactly_the_architectures_calls() -> None:
    check = _check_module()
    objs = _rendered("overlays/campaign")
    assert check.network_errors(objs) == []
    llm = next(o for o in objs if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "lastv2x-llm")
    llm["spec"]["ingress"][0]["from"].append({"podSelector": {"matchLabels": {check.NAME: "lastv2x-strap"}}})
    assert any("strap -> llm" in e for e in check.network_errors(objs))
    objs = [o for o in _rendered("overlays/local") if o["metadata"]["name"] != "lastv2x-grounding"
            or o["kind"] != "NetworkPolicy"]
    errs = check.network_errors(objs)
    assert any("search -> grounding" in e for e in errs) and any("grounding -> llm" in e for e in errs)
    objs = [o for o in _rendered("overlays/local") if o["metadata"]["name"] != "lastv2x-default-deny"]
    assert any("default deny" in e for e in check.network_errors(objs))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (renders kustomize offline) not installed")
def test_every_emptydir_is_bounded_and_the_carla_sidecar_is_read_only() -> None:
    check = _check_module()
    objs = _rendered("overlays/campaign-gpu")
    sim = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "lastv2x-simulator")
    assert check.hardening_errors(sim) == []
    pod = sim["spec"]["template"]["spec"]
    carla = next(c for c in pod["containers"] if c["name"] == "carla")
    assert carla["securityContext"]["readOnlyRootFilesystem"] is True
    carla["securityContext"]["readOnlyRootFilesystem"] = False
    pod["volumes"][0]["emptyDir"] = {}
    errs = check.hardening_errors(sim)
    assert any("carla: readOnlyRootFilesystem" in e for e in errs) and any("sizeLimit" in e for e in errs)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (renders kustomize offline) not installed")
def test_tls_overlay_mounts_the_secrets_read_only_and_probes_the_health_port() -> None:
    """Component tls-auth: every service reads its certificate, key, CA and token from read-only Secret
    mounts (no secret in an env value) and kubelet probes the plaintext health port."""
    import copy

    check = _check_module()
    assert "overlays/campaign-tls" in check.OVERLAYS and "overlays/campaign-tls" in check.TLS_OVERLAYS
    deployments = [o for o in _rendered("overlays/campaign-tls") if o["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in deployments} == {f"lastv2x-{s}" for s in
                                                            ("llm", "grounding", "simulator", "search", "strap")}
    for d in deployments:
        assert check.secret_errors(d, require_tls=True) == []
        pod = d["spec"]["template"]["spec"]
        c = pod["containers"][0]
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["LASTV2X_TLS_CERT_FILE"].startswith("/var/run/secrets/lastv2x/tls/")
        assert env["LASTV2X_AUTH_TOKEN_FILE"].startswith("/var/run/secrets/lastv2x/token/")
        assert c["readinessProbe"]["grpc"]["port"] == c["livenessProbe"]["grpc"]["port"] == \
            int(env["LASTV2X_HEALTH_PORT"]) != check.GRPC_PORT
        assert {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v} >= {"lastv2x-tls", "lastv2x-token"}
    sim = next(d for d in deployments if d["metadata"]["name"] == "lastv2x-simulator")

    def broken(change) -> list[str]:  # type: ignore[no-untyped-def]
        d = copy.deepcopy(sim)
        change(d["spec"]["template"]["spec"]["containers"][0])
        return check.secret_errors(d, require_tls=True)

    def writable(c) -> None:  # type: ignore[no-untyped-def]
        for m in c["volumeMounts"]:
            m.pop("readOnly", None)

    assert any("mounted writable" in e for e in broken(writable))
    assert any("readinessProbe on port 50051" in e
               for e in broken(lambda c: c["readinessProbe"]["grpc"].update(port=50051)))
    assert any("env LASTV2X_X from a Secret" in e for e in broken(lambda c: c["env"].append(
        {"name": "LASTV2X_X", "valueFrom": {"secretKeyRef": {"name": "lastv2x-token", "key": "token"}}})))
    assert any("carries a secret value" in e for e in broken(lambda c: c["env"].append(
        {"name": "LASTV2X_AUTH_TOKEN", "value": "hunter2"})))
    assert any("credentials in a URL" in e for e in broken(lambda c: c["env"].append(
        {"name": "LASTV2X_SEARCH_DB", "value": "postgresql://u:pw@db:5432/x"})))
    assert any("envFrom a Secret" in e for e in broken(lambda c: c["envFrom"].append({"secretRef": {"name": "s"}})))
    assert any("LASTV2X_AUTH_TOKEN_FILE not set" in e for e in broken(lambda c: c.__setitem__(
        "env", [e for e in c["env"] if e["name"] != "LASTV2X_AUTH_TOKEN_FILE"])))
    assert any("not in a read-only mounted Secret" in e for e in broken(lambda c: c["env"].append(
        {"name": "LASTV2X_TLS_CA_FILE", "value": "/tmp/ca.crt"})))
    # the plain campaign overlay serves no TLS: its probes stay on the service port and pass
    plain = [o for o in _rendered("overlays/campaign") if o["kind"] == "Deployment"]
    assert all(check.secret_errors(d) == [] for d in plain)
    assert any("LASTV2X_TLS_CERT_FILE not set" in e for e in check.secret_errors(plain[0], require_tls=True))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (renders kustomize offline) not installed")
def test_strap_memory_and_disk_settings_fit_the_pod() -> None:
    """Issue 41: the strap pod's read budget is at most half its memory limit, its store's quota fits
    the emptyDir it lives on (else filling the store evicts the pod and loses the index)."""
    check = _check_module()
    for overlay in ("overlays/local", "overlays/campaign", "overlays/campaign-tls"):
        assert check.strap_errors(_rendered(overlay)) == [], overlay
    objs = _rendered("overlays/campaign")
    strap = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "lastv2x-strap")
    container = strap["spec"]["template"]["spec"]["containers"][0]
    container["resources"]["limits"]["memory"] = "768Mi"  # the default held budget (512 MiB) no longer fits
    assert any("LASTV2X_STRAP_MAX_HELD_BYTES" in e and "50 %" in e for e in check.strap_errors(objs))
    container["resources"]["limits"]["memory"] = "1Gi"
    container["env"] = [e for e in container["env"] if e["name"] != "LASTV2X_STRAP_QUOTA_BYTES"]
    errs = check.strap_errors(objs)  # the 16 GiB default quota on a 4Gi emptyDir
    assert any("LASTV2X_STRAP_QUOTA_BYTES" in e and "sizeLimit" in e for e in errs), errs
    assert check.parse_quantity("4Gi") == 4 << 30 and check.parse_quantity("1500M") == 1_500_000_000
