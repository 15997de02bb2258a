"""What may import what (STYLE.md, "Layers"), checked on every module's syntax tree.

contracts and core (``lastv2x/core``, ``lastv2x/rpc``, generated ``lastv2x/v1``) <- services
(``services/<name>/``: a pure core + a thin gRPC shell) <- composition roots (``lastv2x_app``),
which may import anything. Every ``import`` counts, also one inside a function. A service
reaches another over gRPC, or in-process only through a pair listed in ``CROSS_SERVICE``
with its reason; a listed pair that no module uses any more fails too, so the list stays
as small as the code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lastv2x", "lastv2x_app", "services")

# (importer, imported) -> why the in-process adapter is honest. An importer ending in ".*" is a
# package prefix: a service still being written; it is exempt from the "still used" check.
CROSS_SERVICE: dict[tuple[str, str], str] = {
    ("services.grounding.catalogue", "services.simulator.maps"):
        "the catalogue indexes the simulator's own map model (one OpenDRIVE parser)",
    ("services.grounding.catalogue", "services.simulator.maps.assemble"):
        "catalogue versions are the simulator's map content hash",
    ("services.grounding.catalogue", "services.simulator.maps.buildings"):
        "building footprints and their size cap, as the simulator reads them",
    ("services.grounding.catalogue", "services.simulator.maps.xodr_facts"):
        "the OpenDRIVE parsing limits, as the simulator applies them",
    ("services.grounding.extract", "services.simulator.maps"):
        "the catalogue is extracted from the simulator's own map model",
    ("services.grounding.extract", "services.simulator.maps.buildings"):
        "building exposure and RSU line of sight over the simulator's footprints",
    ("services.grounding.assemble", "services.simulator.maps"):
        "grounding places the scenario on the simulator's RoadMap",
    ("services.grounding.planning", "services.llm.roles"):
        "the scene planner in-process when LASTV2X_LLM_TARGET is unset",
    ("services.grounding.planning", "services.llm.planner"):
        "scene-plan types and validation shared with the in-process planner",
    ("services.strap.mutant_sites", "services.simulator.apps"):
        "STRaP's mutants are mutations of the simulator's application functions",
    ("services.strap.mutant_reach", "services.simulator.apps"):
        "which mutated line each application decision reaches",
    ("services.strap.replay", "services.simulator.apps"):
        "replaying a segment runs the applications under test",
    ("services.strap.recorded", "services.simulator.apps"):
        "a recorded frame becomes the applications' own input types",
    ("services.strap.recorded", "services.simulator.info"):
        "the ego's information built exactly as in paired execution",
    ("services.strap.recorded", "services.simulator.paired"):
        "the application context and message reconstruction of paired execution",
    ("services.strap.recorded", "services.simulator.routes"):
        "route projection and resampling of paired execution",
    ("services.strap.replay_v2x", "services.simulator.info"):
        "replayed V2X becomes the ego's information as in paired execution",
    ("services.strap.replay_v2x", "services.simulator.signals"):
        "the recorded signal table, as the simulator models it",
    ("services.strap.replay_v2x", "services.simulator.v2x.reconstruction"):
        "replay through the simulator's message reconstruction (mutated for STRaP)",
    ("services.strap.replay_v2x", "services.simulator.v2x.stack"):
        "replay through the simulator's V2X stack",
    # The search service (being written) drives the other cores in-process for one campaign.
    ("services.search.*", "services.llm.roles"): "the parser / planner / reflector roles in-process",
    ("services.search.*", "services.llm.config"): "the LLM roles' typed configuration",
    ("services.search.*", "services.llm.maps"): "the maps an intent may be assigned",
    ("services.search.*", "services.grounding.core"): "grounding in-process",
    ("services.search.*", "services.simulator.execute"): "paired execution in-process",
    ("services.search.*", "services.simulator.paired"): "paired-execution results and types",
}

# Service modules that may speak gRPC besides every servicer.py and __main__.py (gRPC clients).
GRPC_CLIENTS = {"services.grounding.remote_planner": "the scene planner over gRPC (LASTV2X_LLM_TARGET)",
                "services.search.remote": "the llm, grounding and simulator services over gRPC (search targets)",
                "services.simulator.apps.remote": "a team's application under test over gRPC (--app grpc://host:port)",
                "services.simulator.apps.access": "apps.remote's allow-list and an application server's own credentials"}
# Service modules that may import carla (an optional extra, imported on first use).
CARLA_USERS = {"services.simulator.maps.opendrive": "carla's own OpenDRIVE parser (carla.Map, offline)"}

GRPC_ROOTS = ("grpc", "grpc_health", "grpc_reflection", "grpc_status", "google.rpc", "lastv2x.v1", "lastv2x.rpc")


@dataclass(frozen=True)
class Edge:
    importer: str  # dotted module name
    imported: str  # dotted module name (a module of the tree when it names one)
    where: str  # path:line


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


MODULES = _modules()


def edges_of(name: str, source: str, where: str, is_package: bool = False) -> list[Edge]:
    """Every import in the module, relative ones resolved, ``from pkg import mod`` as ``pkg.mod``."""
    edges = []
    for node in ast.walk(ast.parse(source, where)):
        at = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            edges += [Edge(name, a.name, at) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                edges.append(Edge(name, sub if sub in MODULES else base, at))
    return edges


EDGES = [e for name, path in MODULES.items()
         for e in edges_of(name, path.read_text(), str(path.relative_to(ROOT)), path.name == "__init__.py")]


def _under(module: str, *roots: str) -> bool:
    return any(module == r or module.startswith(r + ".") for r in roots)


def _service(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "services" and len(parts) > 1 else None


def _allowed_cross(importer: str, imported: str) -> bool:
    for (who, what) in CROSS_SERVICE:
        who_ok = importer.startswith(who[:-1]) if who.endswith(".*") else importer == who
        if who_ok and imported == what:
            return True
    return False


def violations(edges: list[Edge]) -> list[str]:
    """Each edge that breaks a layer rule, as 'where: importer -> imported (rule)'."""
    bad = []
    for e in edges:
        rule = None
        if _under(e.importer, "lastv2x.core"):
            if _under(e.imported, "grpc", "grpc_health", "grpc_reflection", "grpc_status", "google.protobuf",
                      "google.rpc", "carla", "services", "lastv2x_app", "lastv2x.rpc", "lastv2x.v1"):
                rule = "the core imports no grpc, protobuf, carla, rpc, stubs, services or app"
        elif _under(e.importer, "lastv2x.rpc", "lastv2x.v1", "lastv2x"):
            if _under(e.imported, "services", "lastv2x_app"):
                rule = "contracts and rpc import no services or app"
        elif _service(e.importer):
            own = _service(e.importer)
            shell = e.importer.rsplit(".", 1)[-1] in ("servicer", "__main__") or e.importer in GRPC_CLIENTS
            if _under(e.imported, "lastv2x_app"):
                rule = "services import no composition root"
            elif _service(e.imported) and _service(e.imported) != own and not _allowed_cross(e.importer, e.imported):
                rule = "another service only over gRPC or a pair listed in CROSS_SERVICE"
            elif _under(e.imported, *GRPC_ROOTS) and not shell:
                rule = "a service core speaks no gRPC (only servicer.py, __main__.py and GRPC_CLIENTS)"
            elif _under(e.imported, "carla") and e.importer not in CARLA_USERS:
                rule = "carla is imported only where CARLA_USERS says"
        if rule:
            bad.append(f"{e.where}: {e.importer} -> {e.imported} ({rule})")
    return bad


def test_every_package_is_parsed() -> None:
    assert {"lastv2x.core.spec", "lastv2x.rpc.server", "lastv2x_app.cli", "services.llm.servicer",
            "services.simulator.maps.opendrive"} <= set(MODULES)
    assert len(EDGES) > 500


def test_no_module_breaks_a_layer() -> None:
    assert violations(EDGES) == []


def test_nothing_but_tests_imports_the_composition_roots() -> None:
    users = {e.importer for e in EDGES if _under(e.imported, "lastv2x_app")}
    assert users <= {m for m in MODULES if _under(m, "lastv2x_app")}


def test_every_listed_exception_is_still_needed() -> None:
    used = {(e.importer, e.imported) for e in EDGES}
    stale = [pair for pair in CROSS_SERVICE if not pair[0].endswith(".*") and pair not in used]
    stale += [m for m in (*GRPC_CLIENTS, *CARLA_USERS) if m not in MODULES]
    assert not stale, f"no module needs these any more; delete them from the lists: {stale}"
    assert all(reason.strip() for reason in (*CROSS_SERVICE.values(), *GRPC_CLIENTS.values(),
                                             *CARLA_USERS.values()))


@pytest.mark.parametrize(("importer", "source", "rule"), [
    ("lastv2x.core.timeline", "import grpc", "the core imports no"),
    ("lastv2x.core.spec", "from carla import Map", "the core imports no"),
    ("lastv2x.core.verifier", "def f():\n    from services.simulator import paired", "the core imports no"),
    ("lastv2x.core.rng", "from ..rpc.errors import to_status", "the core imports no"),
    ("lastv2x.rpc.convert", "from lastv2x_app import cli", "contracts and rpc import no"),
    ("services.llm.roles", "from services.simulator.execute import run_one", "CROSS_SERVICE"),
    ("services.search.campaign", "from services.strap import store", "CROSS_SERVICE"),
    ("services.strap.reduce", "import grpc", "speaks no gRPC"),
    ("services.simulator.execute", "from lastv2x.v1 import simulator_pb2", "speaks no gRPC"),
    ("services.simulator.traffic", "import carla", "CARLA_USERS"),
    ("services.strap.store", "from lastv2x_app.stack import up", "no composition root"),
])
def test_a_bad_import_is_caught(importer: str, source: str, rule: str) -> None:
    found = violations(edges_of(importer, source, "<test>"))
    assert len(found) == 1 and rule in found[0], found


def test_listed_adapters_pass() -> None:
    ok = [Edge("services.search.campaign", "services.grounding.core", "x"),
          Edge("services.grounding.planning", "services.llm.roles", "x"),
          Edge("services.llm.servicer", "grpc", "x"),
          Edge("lastv2x_app.demo", "services.strap.pipeline", "x")]
    assert violations(ok) == []
