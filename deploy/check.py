"""Render every kustomize overlay offline and validate it (``make deploy-check``).

kubectl renders kustomize without a cluster (``kubectl kustomize``); the rendered
objects are checked by ``kubernetes-validate`` against bundled schemas and by our
own hardening rules (non-root, read-only root fs, dropped capabilities, gRPC probes,
resource limits). No API server is contacted.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent / "k8s"
OVERLAYS = ["overlays/local", "overlays/campaign"]
K8S_VERSION = "1.33.0"


def render(path: Path) -> list[dict]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("kubectl not found: it renders kustomize offline (apt install kubectl)")
    out = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def hardening_errors(obj: dict) -> list[str]:
    if obj["kind"] != "Deployment":
        return []
    name = obj["metadata"]["name"]
    errs = []
    pod = obj["spec"]["template"]["spec"]
    if not pod.get("securityContext", {}).get("runAsNonRoot"):
        errs.append(f"{name}: pod must set runAsNonRoot")
    for c in pod["containers"]:
        if c["name"] == "carla":
            continue
        sc = c.get("securityContext", {})
        if not sc.get("readOnlyRootFilesystem"):
            errs.append(f"{name}/{c['name']}: readOnlyRootFilesystem")
        if "ALL" not in sc.get("capabilities", {}).get("drop", []):
            errs.append(f"{name}/{c['name']}: drop ALL capabilities")
        if "grpc" not in c.get("readinessProbe", {}) or "grpc" not in c.get("livenessProbe", {}):
            errs.append(f"{name}/{c['name']}: native grpc probes")
        if "limits" not in c.get("resources", {}):
            errs.append(f"{name}/{c['name']}: resource limits")
    return errs


def main() -> int:
    failures = 0
    try:
        import kubernetes_validate  # noqa: F401
        have_validator = True
    except ImportError:
        have_validator = False
        print("kubernetes-validate not installed: schema validation skipped (pip install kubernetes-validate)")
    for overlay in OVERLAYS:
        objs = render(ROOT / overlay)
        errs = [e for o in objs for e in hardening_errors(o)]
        if have_validator:
            import kubernetes_validate

            for o in objs:
                try:
                    kubernetes_validate.validate(o, K8S_VERSION, strict=True)
                except kubernetes_validate.ValidationError as exc:
                    errs.append(f"{o['kind']}/{o['metadata']['name']}: {exc.message}")
        kinds = sorted({o["kind"] for o in objs})
        print(f"{overlay}: {len(objs)} objects ({', '.join(kinds)}): {'OK' if not errs else 'FAIL'}")
        for e in errs:
            print("  " + e)
        failures += len(errs)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
