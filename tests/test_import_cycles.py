"""No import cycles among the project's modules (``lastv2x/`` and ``services/``).

The graph is read from the source with :mod:`ast`, nothing is imported. An edge
``a -> b`` is any ``import``/``from ... import`` in module ``a`` that names project module
``b`` — at module level *and* inside functions or classes, because a deferred import that
closes a loop is still a cycle in the design (it only hides it from the interpreter) —
and under ``if TYPE_CHECKING:`` too, for the same reason: two modules that need each
other's types want a third module for them. ``from pkg import name``
is an edge to ``pkg.name`` when that is a module, else to ``pkg`` (its ``__init__``);
package ``__init__`` files are nodes like any other module, but importing ``pkg.mod`` does
not add an edge to ``pkg`` (every module would otherwise sit in a cycle with an
``__init__`` that re-exports it). Generated stubs (``lastv2x/v1``) are not read.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
ROOTS = ("lastv2x", "services")
SKIP = ("lastv2x/v1",)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for root in ROOTS:
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            rel = path.relative_to(REPO_ROOT).as_posix()
            if any(rel.startswith(skip + "/") for skip in SKIP):
                continue
            modules[_module_name(path)] = path
    return modules


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of the tree, at any depth."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                # ``import a.b.c`` names a.b.c; fall back to the longest project prefix.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def strong(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                strong(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strong(node)
    return found


def test_the_graph_sees_the_project() -> None:
    graph = import_graph(project_modules())
    assert "lastv2x.core.spec" in graph["lastv2x.core.verifier"]
    assert len(graph) > 100


def test_a_cycle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    found = cycles(import_graph(project_modules()))
    assert not found, "import cycles (module-level or deferred imports):\n" + "\n".join(
        " <-> ".join(component) for component in found)
