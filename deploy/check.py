"""Render every kustomize overlay offline and validate it (``make deploy-check``).

kubectl renders kustomize without a cluster (``kubectl kustomize``); the rendered
objects are checked by ``kubernetes-validate`` against bundled schemas and by our
own hardening rules (non-root, read-only root fs, dropped capabilities, gRPC probes,
resource limits, a ``sizeLimit`` on every emptyDir, the carla sidecar's read-only root),
least-privilege RBAC (``rbac_errors``), NetworkPolicies that allow exactly the calls of
``CALLS`` (``network_errors``) and secrets only as read-only mounted files, with TLS probes on the
plaintext health port (``secret_errors``; every service has TLS and the token in ``TLS_OVERLAYS``),
cert-manager Certificates for the TLS Secrets (``cert_errors``: in ``CERT_MANAGER_OVERLAYS`` every
service mounts its own Certificate's Secret, which names the Services it is dialled by, serves and
authenticates as a client, and has an issuer), no TLS in the dev overlay (``plaintext_errors``), and the strap pod's settings against its limits (``strap_errors``: read budget <= 50 % of its
memory limit, its store within its emptyDir). No API server is contacted.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent / "k8s"
OVERLAYS = ["overlays/local", "overlays/campaign", "overlays/campaign-gpu", "overlays/campaign-tls",
            "overlays/production"]
# every service serves TLS and asks for the token (component tls-auth)
TLS_OVERLAYS = {"overlays/campaign-tls", "overlays/production"}
# ... from its own cert-manager Certificate's Secret (the TLS default: overlays/production)
CERT_MANAGER_OVERLAYS = {"overlays/production"}
PLAINTEXT_OVERLAYS = {"overlays/local"}  # the dev overlay: no TLS, no token (as `lastv2x up` on loopback)
CRD_GROUPS = ("cert-manager.io/",)  # not in kubernetes-validate's schemas: checked by cert_errors
K8S_VERSION = "1.33.0"


def render(path: Path) -> list[dict]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("kubectl not found: it renders kustomize offline (apt install kubectl)")
    out = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


_UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9,
          "T": 10**12}


def parse_quantity(text: str | int) -> int:
    """A Kubernetes memory / storage quantity in bytes ("1Gi", "512Mi", "1500M", "1024")."""
    text = str(text).strip()
    for unit, factor in _UNITS.items():
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


HELD_SHARE_OF_MEMORY = 0.5  # the strap read budget (inflated bytes held at once) <= 50 % of the pod's memory limit
STORE_SHARE_OF_DISK = 0.9  # quota + one upload <= 90 % of the store's emptyDir (the rest: SQLite index, WAL)
IMAGE_STATE_DIR = "/tmp/lastv2x"  # LASTV2X_STATE_DIR in deploy/Dockerfile


def strap_errors(objs: list[dict]) -> list[str]:
    """The strap pod's read budget and store against its memory limit and emptyDir (issue 41),
    with the settings the service itself reads (``services.strap.store.StrapConfig``)."""
    if str(ROOT.parents[1]) not in sys.path:
        sys.path.insert(0, str(ROOT.parents[1]))
    from services.strap.store import StrapConfig

    config_maps = {o["metadata"]["name"]: o.get("data", {}) for o in objs if o["kind"] == "ConfigMap"}
    errs = []
    for obj in objs:
        if obj["kind"] != "Deployment" or obj["metadata"]["name"] != "lastv2x-strap":
            continue
        pod = obj["spec"]["template"]["spec"]
        c = next(c for c in pod["containers"] if c["name"] == "strap")
        env = {"LASTV2X_STATE_DIR": IMAGE_STATE_DIR}
        for source in c.get("envFrom", []):
            env.update(config_maps.get(source.get("configMapRef", {}).get("name", ""), {}))
        env.update({e["name"]: e["value"] for e in c.get("env", []) if "value" in e})
        config = StrapConfig.from_env(env)
        memory = parse_quantity(c.get("resources", {}).get("limits", {}).get("memory", "0"))
        if config.max_held_bytes > HELD_SHARE_OF_MEMORY * memory:
            errs.append(f"lastv2x-strap: LASTV2X_STRAP_MAX_HELD_BYTES = {config.max_held_bytes} is over 50 % of the "
                        f"memory limit {memory}: lower it or raise the limit")
        if config.max_chunk_bytes > config.max_held_bytes:
            errs.append("lastv2x-strap: LASTV2X_STRAP_MAX_CHUNK_BYTES is over LASTV2X_STRAP_MAX_HELD_BYTES")
        store = str(config.store_dir)
        mounts = [m for m in c.get("volumeMounts", []) if store == m["mountPath"]
                  or store.startswith(m["mountPath"].rstrip("/") + "/")]
        mount = max(mounts, key=lambda m: len(m["mountPath"]), default=None)
        volume = next((v for v in pod.get("volumes", []) if mount and v["name"] == mount["name"]), None)
        if volume is None or "emptyDir" not in volume:
            continue  # a persistent volume: sized by its claim
        size_limit = parse_quantity((volume["emptyDir"] or {}).get("sizeLimit", "0"))
        if config.quota_bytes + config.max_bytes > STORE_SHARE_OF_DISK * size_limit:
            errs.append(f"lastv2x-strap: LASTV2X_STRAP_QUOTA_BYTES = {config.quota_bytes} + LASTV2X_STRAP_MAX_BYTES "
                        f"= {config.max_bytes} (the store's disk) is over 90 % of emptyDir {volume['name']!r} "
                        f"sizeLimit {size_limit}: filling the store would evict the pod")
    return errs


def hardening_errors(obj: dict) -> list[str]:
    if obj["kind"] != "Deployment":
        return []
    name = obj["metadata"]["name"]
    errs = []
    pod = obj["spec"]["template"]["spec"]
    if not pod.get("securityContext", {}).get("runAsNonRoot"):
        errs.append(f"{name}: pod must set runAsNonRoot")
    for v in pod.get("volumes", []):
        if "emptyDir" in v and not (v["emptyDir"] or {}).get("sizeLimit"):
            errs.append(f"{name}: emptyDir {v['name']!r} needs a sizeLimit")
    for c in pod["containers"]:
        sc = c.get("securityContext", {})
        if not sc.get("readOnlyRootFilesystem"):
            errs.append(f"{name}/{c['name']}: readOnlyRootFilesystem")
        if c["name"] == "carla":  # the GPU sidecar: no gRPC probes, its own limits
            continue
        if "ALL" not in sc.get("capabilities", {}).get("drop", []):
            errs.append(f"{name}/{c['name']}: drop ALL capabilities")
        if "grpc" not in c.get("readinessProbe", {}) or "grpc" not in c.get("livenessProbe", {}):
            errs.append(f"{name}/{c['name']}: native grpc probes")
        elif c["livenessProbe"]["grpc"].get("service") != "liveness":  # lastv2x.rpc.server.LIVENESS
            errs.append(f"{name}/{c['name']}: the livenessProbe must ask for service 'liveness' (the overall status "
                        "is NOT_SERVING while a service warms up: readiness, not liveness)")
        if "limits" not in c.get("resources", {}):
            errs.append(f"{name}/{c['name']}: resource limits")
    return errs


# The settings that name mounted secret files: TLS and the bearer token (component tls-auth).
SECRET_FILE_ENV = ("LASTV2X_TLS_CERT_FILE", "LASTV2X_TLS_KEY_FILE", "LASTV2X_TLS_CA_FILE", "LASTV2X_AUTH_TOKEN_FILE")
SECRET_WORDS = ("TOKEN", "PASSWORD", "SECRET", "API_KEY", "PRIVATE_KEY")


def secret_errors(obj: dict, require_tls: bool = False) -> list[str]:
    """Secrets reach a pod only as files of a Secret volume mounted read-only, never as environment
    values (no secretKeyRef, no envFrom secretRef, no secret-looking value); a container serving TLS
    reads its certificate, key, CA and token from such mounts and has its probes on the plaintext
    ``LASTV2X_HEALTH_PORT`` (kubelet's gRPC probes cannot speak TLS). ``require_tls``: every lastv2x
    container serves TLS and asks for the token."""
    if obj["kind"] != "Deployment":
        return []
    name = obj["metadata"]["name"]
    pod = obj["spec"]["template"]["spec"]
    secret_volumes = {v["name"] for v in pod.get("volumes", []) if "secret" in v}
    errs = []
    for c in pod["containers"]:
        who = f"{name}/{c['name']}"
        env = {e["name"]: e for e in c.get("env", [])}
        for e in env.values():
            if "secretKeyRef" in e.get("valueFrom", {}):
                errs.append(f"{who}: env {e['name']} from a Secret (mount it as a file)")
            elif any(w in e["name"] for w in SECRET_WORDS) and not e["name"].endswith(("_FILE", "_ENV")) \
                    and e.get("value"):
                errs.append(f"{who}: env {e['name']} carries a secret value (mount it as a file)")
            elif "://" in e.get("value", "") and "@" in e["value"].split("://", 1)[1].split("/", 1)[0]:
                errs.append(f"{who}: env {e['name']} has credentials in a URL")
        if any("secretRef" in f for f in c.get("envFrom", [])):
            errs.append(f"{who}: envFrom a Secret (mount it as a file)")
        mounts = [m for m in c.get("volumeMounts", []) if m["name"] in secret_volumes]
        for m in mounts:
            if not m.get("readOnly"):
                errs.append(f"{who}: Secret volume {m['name']!r} mounted writable")
        if c["name"] == "carla":
            continue
        if require_tls:
            for var in SECRET_FILE_ENV:
                if var not in env:
                    errs.append(f"{who}: {var} not set (this overlay serves TLS with the token)")
                    continue
                path = env[var].get("value", "")
                mount = next((m for m in mounts if path.startswith(m["mountPath"].rstrip("/") + "/")), None)
                volume = next((v for v in pod["volumes"] if mount and v["name"] == mount["name"]), None)
                if volume and volume["secret"].get("optional"):
                    errs.append(f"{who}: Secret volume {volume['name']!r} ({var}) is optional: without the "
                                "Secret the pod would start without TLS or the token")
        for var in SECRET_FILE_ENV:
            path = env.get(var, {}).get("value", "")
            if var in env and not any(m.get("readOnly") and path.startswith(m["mountPath"].rstrip("/") + "/")
                                      for m in mounts):
                errs.append(f"{who}: {var}={path!r} is not in a read-only mounted Secret")
        if "LASTV2X_TLS_CERT_FILE" in env:
            health = env.get("LASTV2X_HEALTH_PORT", {}).get("value", "")
            if not health.isdigit() or int(health) == GRPC_PORT:
                errs.append(f"{who}: serves TLS without a plaintext LASTV2X_HEALTH_PORT for the probes")
            for probe in ("readinessProbe", "livenessProbe"):
                port = c.get(probe, {}).get("grpc", {}).get("port")
                if str(port) != health:
                    errs.append(f"{who}: {probe} on port {port} under TLS (kubelet's gRPC probes are plaintext:"
                                f" LASTV2X_HEALTH_PORT {health or 'unset'})")
    return errs


def plaintext_errors(objs: list[dict]) -> list[str]:
    """The dev overlay stays plaintext: no lastv2x container sets a TLS or token setting."""
    return [f"{o['metadata']['name']}/{c['name']}: {e['name']} set in the plaintext dev overlay"
            for o in objs if o["kind"] == "Deployment" for c in o["spec"]["template"]["spec"]["containers"]
            for e in c.get("env", []) if e["name"] in SECRET_FILE_ENV or e["name"] == "LASTV2X_TLS_CLIENT_AUTH"]


CERT_USAGES = {"server auth", "client auth"}  # a service's certificate is its client certificate to its peers
ISSUER_KINDS = {"Issuer", "ClusterIssuer"}


def _selects(service: dict, pod_labels: dict) -> bool:
    selector = service.get("spec", {}).get("selector") or {}
    return bool(selector) and all(pod_labels.get(k) == v for k, v in selector.items())


def cert_errors(objs: list[dict], require_certificates: bool = False) -> list[str]:
    """cert-manager Certificates (``cert-manager.io/v1``) well formed: a secretName, DNS names, an
    ``issuerRef`` (name; kind Issuer or ClusterIssuer), usages ``server auth`` and ``client auth``.
    ``require_certificates``: every lastv2x container serving TLS reads ``LASTV2X_TLS_CERT_FILE`` from a
    Secret that a Certificate of its namespace issues, its own (no two Deployments share a key pair),
    whose DNS names cover every Service that selects its pods, short and ``<name>.<namespace>.svc``."""
    ns = lambda o: o["metadata"].get("namespace", "default")  # noqa: E731
    errs = []
    certs: dict[tuple[str, str], dict] = {}
    for o in objs:
        if o["kind"] != "Certificate" or not o.get("apiVersion", "").startswith("cert-manager.io/"):
            continue
        name, spec = o["metadata"]["name"], o.get("spec", {})
        if not spec.get("secretName"):
            errs.append(f"Certificate/{name}: no secretName")
            continue
        certs[(ns(o), spec["secretName"])] = o
        if not spec.get("dnsNames") or not all(isinstance(n, str) and n for n in spec["dnsNames"]):
            errs.append(f"Certificate/{name}: dnsNames (the Services its peers dial)")
        issuer = spec.get("issuerRef") or {}
        if not issuer.get("name") or issuer.get("kind", "Issuer") not in ISSUER_KINDS \
                or issuer.get("group", "cert-manager.io") != "cert-manager.io":
            errs.append(f"Certificate/{name}: issuerRef needs a name and kind Issuer or ClusterIssuer "
                        f"(the operator's private CA), got {issuer or 'none'}")
        missing = CERT_USAGES - set(spec.get("usages", []))
        if missing:
            errs.append(f"Certificate/{name}: usages lack {sorted(missing)} (it serves and is its service's "
                        "client certificate)")
    if not require_certificates:
        return errs
    services = [o for o in objs if o["kind"] == "Service"]
    owners: dict[tuple[str, str], str] = {}
    for o in objs:
        if o["kind"] != "Deployment":
            continue
        name, pod = o["metadata"]["name"], o["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for c in pod["containers"]:
            env = {e["name"]: e.get("value", "") for e in c.get("env", [])}
            if c["name"] == "carla":
                continue
            who, path = f"{name}/{c['name']}", env.get("LASTV2X_TLS_CERT_FILE", "")
            mount = next((m for m in c.get("volumeMounts", []) if path
                          and path.startswith(m["mountPath"].rstrip("/") + "/")), None)
            secret = (volumes.get(mount["name"], {}) if mount else {}).get("secret", {}).get("secretName")
            if not secret:
                errs.append(f"{who}: LASTV2X_TLS_CERT_FILE={path!r} is not in a mounted certificate Secret")
                continue
            for var in ("LASTV2X_TLS_KEY_FILE", "LASTV2X_TLS_CA_FILE"):
                if not env.get(var, "").startswith(mount["mountPath"].rstrip("/") + "/"):
                    errs.append(f"{who}: {var} is not in the certificate's Secret {secret!r}")
            cert = certs.get((ns(o), secret))
            if cert is None:
                errs.append(f"{who}: Secret {secret!r} is issued by no cert-manager Certificate in {ns(o)}")
                continue
            owner = owners.setdefault((ns(o), secret), name)
            if owner != name:
                errs.append(f"{who}: shares the key pair of Secret {secret!r} with {owner} (one Certificate each)")
            labels = o["spec"]["template"].get("metadata", {}).get("labels", {})
            names = set(cert["spec"].get("dnsNames", []))
            for svc in services:
                if ns(svc) == ns(o) and _selects(svc, labels):
                    for dns in (svc["metadata"]["name"], f"{svc['metadata']['name']}.{ns(o)}.svc"):
                        if dns not in names:
                            errs.append(f"{who}: Certificate/{cert['metadata']['name']} does not name {dns!r} "
                                        f"(Service {svc['metadata']['name']} selects its pods; peers dial it)")
    return errs


# What a Role may grant: the search service's replica discovery reads EndpointSlices, nothing else.
ALLOWED_GRANTS = {("discovery.k8s.io", "endpointslices"): {"get", "list", "watch"}}
# Env variables whose container calls the Kubernetes API (only these pods get a token).
API_CLIENT_ENV = {"LASTV2X_SEARCH_SIMULATOR_ENDPOINTSLICES"}


def rbac_errors(objs: list[dict]) -> list[str]:
    """Least privilege: no cluster-wide RBAC; each Role grants only ALLOWED_GRANTS; ServiceAccounts do
    not automount their token; a pod mounts a token only if a container calls the API (API_CLIENT_ENV),
    through its own ServiceAccount bound to a Role in its namespace, and the ``namespace/service`` it
    watches is a Service of that namespace in the same render."""
    errs = []
    ns = lambda o: o["metadata"].get("namespace", "default")  # noqa: E731
    roles = {(ns(o), o["metadata"]["name"]) for o in objs if o["kind"] == "Role"}
    bound = {(ns(o), s["name"]) for o in objs if o["kind"] == "RoleBinding"
             if o["roleRef"]["kind"] == "Role" and (ns(o), o["roleRef"]["name"]) in roles
             for s in o.get("subjects", []) if s["kind"] == "ServiceAccount" and s.get("namespace", ns(o)) == ns(o)}
    services = {(ns(o), o["metadata"]["name"]) for o in objs if o["kind"] == "Service"}
    for o in objs:
        kind, name = o["kind"], o["metadata"]["name"]
        if kind in ("ClusterRole", "ClusterRoleBinding"):
            errs.append(f"{kind}/{name}: no cluster-wide RBAC (a Role in the namespace)")
        elif kind == "Role":
            for rule in o.get("rules", []):
                if rule.get("resourceNames") or rule.get("nonResourceURLs"):
                    errs.append(f"Role/{name}: resourceNames / nonResourceURLs not expected")
                for group in rule.get("apiGroups", []):
                    for resource in rule.get("resources", []):
                        extra = set(rule.get("verbs", [])) - ALLOWED_GRANTS.get((group, resource), set())
                        if extra:
                            errs.append(f"Role/{name}: {sorted(extra)} on {group or 'core'}/{resource} "
                                        f"(allowed: {ALLOWED_GRANTS})")
        elif kind == "ServiceAccount" and o.get("automountServiceAccountToken") is not False:
            errs.append(f"ServiceAccount/{name}: automountServiceAccountToken: false (the pod opts in)")
        elif kind == "Deployment":
            pod = o["spec"]["template"]["spec"]
            env = {e["name"]: e.get("value", "") for c in pod["containers"] for e in c.get("env", [])}
            watched = [env[k] for k in API_CLIENT_ENV if k in env]
            token = pod.get("automountServiceAccountToken") is not False
            if token and not watched:
                errs.append(f"{name}: automountServiceAccountToken: false (no container calls the API)")
            if watched and not token:
                errs.append(f"{name}: calls the API ({sorted(API_CLIENT_ENV & set(env))}) without a token")
            if watched and (ns(o), pod.get("serviceAccountName", "default")) not in bound:
                errs.append(f"{name}: calls the API as ServiceAccount {pod.get('serviceAccountName', 'default')!r},"
                            f" which no RoleBinding in {ns(o)} binds to a Role")
            for ref in watched:
                target_ns, _, svc = ref.partition("/")
                if target_ns != ns(o) or (target_ns, svc) not in services:
                    errs.append(f"{name}: watches {ref!r}, not a Service of its namespace {ns(o)} (its Role "
                                "reads only there)")
    return errs


# (caller, callee): the gRPC calls between lastv2x services, nothing else (port GRPC_PORT).
CALLS = {("search", "llm"), ("search", "grounding"), ("search", "simulator"), ("grounding", "llm")}
GRPC_PORT, METRICS_PORT = 50051, 9090
NAME = "app.kubernetes.io/name"


def _names(peers: list[dict]) -> set[str]:
    """lastv2x service names a rule's from/to selects by pod label (others are ignored here)."""
    return {p["podSelector"]["matchLabels"][NAME].removeprefix("lastv2x-") for p in peers
            if "namespaceSelector" not in p and NAME in p.get("podSelector", {}).get("matchLabels", {})}


def _ports(rule: dict) -> set[int]:
    return {p.get("port") for p in rule.get("ports", [])}


def network_errors(objs: list[dict]) -> list[str]:
    """Default deny (ingress and egress) for every lastv2x pod; lastv2x-to-lastv2x gRPC allowed exactly
    where CALLS says, on both ends (the callee's ingress, the caller's egress); Prometheus may scrape
    every pod's metrics port; no policy allows a lastv2x pod's ingress from everywhere."""
    policies = [o for o in objs if o["kind"] == "NetworkPolicy"]
    services = {o["metadata"]["name"].removeprefix("lastv2x-") for o in objs if o["kind"] == "Deployment"}
    if not services:
        return []
    errs = []
    deny = [p for p in policies if p["spec"]["podSelector"].get("matchLabels") == {"app.kubernetes.io/part-of": "lastv2x"}
            and not p["spec"].get("ingress") and not p["spec"].get("egress")
            and set(p["spec"].get("policyTypes", [])) == {"Ingress", "Egress"}]
    if not deny:
        errs.append("NetworkPolicy: no default deny (ingress and egress) for app.kubernetes.io/part-of=lastv2x")
    ingress: set[tuple[str, str]] = set()
    egress: set[tuple[str, str]] = set()
    scraped: set[str] = set()
    for p in policies:
        labels = p["spec"]["podSelector"].get("matchLabels", {})
        targets = {labels[NAME].removeprefix("lastv2x-")} if NAME in labels else \
            services if labels.get("app.kubernetes.io/part-of") == "lastv2x" else set()
        for rule in p["spec"].get("ingress", []):
            if "from" not in rule:
                errs.append(f"NetworkPolicy/{p['metadata']['name']}: ingress from everywhere")
                continue
            if GRPC_PORT in _ports(rule):
                ingress |= {(src, t) for src in _names(rule["from"]) for t in targets}
            if METRICS_PORT in _ports(rule) and any("namespaceSelector" in f for f in rule["from"]):
                scraped |= targets
        for rule in p["spec"].get("egress", []):
            if GRPC_PORT in _ports(rule):
                egress |= {(t, dst) for dst in _names(rule.get("to", [])) for t in targets}
    for what, got in (("ingress", ingress), ("egress", egress)):
        for pair in sorted(got - CALLS):
            errs.append(f"NetworkPolicy: {what} allows {pair[0]} -> {pair[1]}, a call the architecture does not make")
        for pair in sorted(CALLS - got):
            errs.append(f"NetworkPolicy: {what} does not allow {pair[0]} -> {pair[1]}")
    for svc in sorted(services - scraped):
        errs.append(f"NetworkPolicy: Prometheus may not scrape {svc} (port {METRICS_PORT})")
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
        errs = [e for o in objs for e in hardening_errors(o) + secret_errors(o, overlay in TLS_OVERLAYS)] + \
            rbac_errors(objs) + network_errors(objs) + strap_errors(objs) + \
            cert_errors(objs, overlay in CERT_MANAGER_OVERLAYS) + \
            (plaintext_errors(objs) if overlay in PLAINTEXT_OVERLAYS else [])
        if have_validator:
            import kubernetes_validate

            for o in objs:
                if o.get("apiVersion", "").startswith(CRD_GROUPS):
                    continue
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
