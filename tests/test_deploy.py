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


def _deployment(objs: list[dict], name: str) -> dict:
    return next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == name)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (renders kustomize offline) not installed")
def test_production_overlay_serves_tls_and_the_token_from_cert_manager_certificates() -> None:
    """Issue 41: TLS and the token are on by default in overlays/production: every service mounts its
    own cert-manager Certificate's Secret read-only and sets the settings the services read
    (LASTV2X_TLS_*_FILE, LASTV2X_AUTH_TOKEN_FILE); each Certificate names the Services its peers dial,
    serves and authenticates as a client, and has an issuer; the dev overlay (local) stays plaintext."""
    import copy

    check = _check_module()
    assert "overlays/production" in check.OVERLAYS and "overlays/production" in check.TLS_OVERLAYS
    assert "overlays/local" in check.PLAINTEXT_OVERLAYS
    objs = _rendered("overlays/production")
    deployments = [o for o in objs if o["kind"] == "Deployment"]
    certificates = {o["spec"]["secretName"]: o for o in objs if o["kind"] == "Certificate"}
    assert {d["metadata"]["name"] for d in deployments} == {f"lastv2x-{s}" for s in
                                                            ("llm", "grounding", "simulator", "search", "strap")}
    assert check.cert_errors(objs, require_certificates=True) == []
    for d in deployments:
        assert check.secret_errors(d, require_tls=True) == []
        pod = d["spec"]["template"]["spec"]
        env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
        assert set(check.SECRET_FILE_ENV) <= set(env)
        own = f"{d['metadata']['name']}-tls"
        assert {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v} >= {own, "lastv2x-token"}
        cert = certificates[own]
        assert {"server auth", "client auth"} <= set(cert["spec"]["usages"])
        assert cert["spec"]["issuerRef"]["name"] and cert["spec"]["issuerRef"]["kind"] in ("Issuer", "ClusterIssuer")
    assert "lastv2x-simulator-pods.lastv2x.svc" in certificates["lastv2x-simulator-tls"]["spec"]["dnsNames"]

    def broken(change) -> list[str]:  # type: ignore[no-untyped-def]
        changed = copy.deepcopy(objs)
        change(changed)
        return check.cert_errors(changed, require_certificates=True)

    def cert(o: list[dict], secret: str) -> dict:
        return next(c for c in o if c["kind"] == "Certificate" and c["spec"]["secretName"] == secret)

    assert any("lastv2x-simulator-pods" in e for e in broken(lambda o: cert(o, "lastv2x-simulator-tls")["spec"].update(
        dnsNames=["lastv2x-simulator", "lastv2x-simulator.lastv2x.svc"])))
    assert any("issuerRef" in e for e in broken(lambda o: cert(o, "lastv2x-llm-tls")["spec"].pop("issuerRef")))
    assert any("client auth" in e for e in broken(lambda o: cert(o, "lastv2x-search-tls")["spec"].update(
        usages=["server auth"])))
    assert any("no cert-manager Certificate" in e for e in broken(
        lambda o: o.remove(cert(o, "lastv2x-strap-tls"))))

    def shared(o: list[dict]) -> None:  # the llm pod mounts the search service's key pair
        for v in _deployment(o, "lastv2x-llm")["spec"]["template"]["spec"]["volumes"]:
            if v["name"] == "lastv2x-tls":
                v["secret"]["secretName"] = "lastv2x-search-tls"
    assert any("shares" in e for e in broken(shared))

    sim = copy.deepcopy(_deployment(objs, "lastv2x-simulator"))  # a missing token Secret: a pod without one
    next(v for v in sim["spec"]["template"]["spec"]["volumes"] if v["name"] == "lastv2x-token")["secret"][
        "optional"] = True
    assert any("'lastv2x-token'" in e and "optional" in e for e in check.secret_errors(sim, require_tls=True))
    # the dev overlay: plaintext (a TLS setting there is reported)
    local = _rendered("overlays/local")
    assert check.plaintext_errors(local) == []
    assert check.cert_errors(local) == []
    tls = [o for o in _rendered("overlays/campaign-tls") if o["kind"] == "Deployment"]
    assert any("LASTV2X_TLS_CERT_FILE" in e for e in check.plaintext_errors(tls))
