"""Which mutants can change which application, and call counts (CC) of the originals.

Part of :mod:`services.strap.mutants` (re-exported there), over the sites of
:mod:`services.strap.mutant_sites`.  Reachability is static and by name: the
functions an application's ``decide`` can reach in its module, and the module
constants they read; a reconstruction mutant can reach every application.  :func:`instrumented` loads an unmutated copy of a module
whose functions and methods count their calls.
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from services.strap.mutant_sites import (
    APP_MODULES,
    CLASSES,
    RECONSTRUCTION_MODULE,
    Mutant,
    exec_module,
    generate_mutants,
    is_module_constant,
    node_for,
    source_of,
)


def application_mutants(apps: Iterable[Any] | None = None, *, classes: Iterable[str] = CLASSES) -> list[Mutant]:
    """Mutants of the application modules that can change at least one of ``apps`` (default all six)."""
    from lastv2x.core.catalogue import Application

    apps = list(Application) if apps is None else list(apps)
    out = []
    for m in generate_mutants(APP_MODULES, classes=classes):
        if any(affects(m, a) for a in apps):
            out.append(m)
    return out


@cache
def _graph(module: str) -> tuple[Mapping[str, frozenset[str]], frozenset[str]]:
    """(qualname -> names it refers to, module-level constant names)."""
    tree = ast.parse(source_of(module))
    refs: dict[str, set[str]] = {}
    consts: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and is_module_constant(node, []):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            consts |= {t.id for t in targets if isinstance(t, ast.Name)}

    def collect(fn: ast.AST, qual: str, cls: str | None) -> None:
        names: set[str] = set()
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif isinstance(sub, ast.Attribute) and cls is not None:
                names.add(f"{cls}.{sub.attr}")
        refs[qual] = names

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            collect(node, node.name, None)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    collect(item, f"{node.name}.{item.name}", node.name)
    return {k: frozenset(v) for k, v in refs.items()}, frozenset(consts)


def reachable_functions(module: str, entry: str) -> frozenset[str]:
    """Functions of ``module`` reachable from ``entry`` by name, and the constants they read."""
    refs, consts = _graph(module)
    seen: set[str] = set()
    todo = [entry]
    while todo:
        f = todo.pop()
        if f in seen or f not in refs:
            continue
        seen.add(f)
        todo.extend(n for n in refs[f] if n in refs)
    read = {n for f in seen for n in refs[f] if n in consts}
    return frozenset(seen | read)


def affects(mutant: Mutant, app: Any) -> bool:
    """Whether ``mutant`` can change application ``app``'s decide (statically, by name)."""
    from services.simulator.apps import APPS

    fn = APPS[app].decide
    if mutant.module == RECONSTRUCTION_MODULE:
        return True
    if fn.__module__ != mutant.module:
        return False
    reach = reachable_functions(mutant.module, fn.__name__)
    if mutant.function == "<module>":
        tree = ast.parse(source_of(mutant.module))
        names = _constant_names(tree, node_for(tree, mutant.site))
        return bool(names & reach)
    return mutant.function in reach


def _constant_names(tree: ast.Module, node: ast.AST) -> set[str]:
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and any(n is node for n in ast.walk(stmt)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            return {t.id for t in targets if isinstance(t, ast.Name)}
    return set()


def readers_of(mutant: Mutant) -> frozenset[str]:
    """Functions whose calls measure the mutant's reach (CC): its enclosing function,
    or for a module constant the functions that read it."""
    if mutant.function != "<module>":
        return frozenset({mutant.function})
    tree = ast.parse(source_of(mutant.module))
    names = _constant_names(tree, node_for(tree, mutant.site))
    refs, _ = _graph(mutant.module)
    return frozenset(f for f, r in refs.items() if r & names)


class CallCounter(dict):
    """qualname -> calls, of an :func:`instrumented` module."""

    def total(self, functions: Iterable[str]) -> int:
        return sum(self.get(f, 0) for f in functions)


def instrumented(module: str) -> tuple[types.ModuleType, CallCounter]:
    """An unmutated copy of ``module`` whose functions and methods count their calls."""
    code = compile(ast.parse(source_of(module)), f"<instrumented {module}>", "exec")
    mod = exec_module(module, code, f"{module}.__instrumented__")
    counts = CallCounter()

    def wrap(fn: Any, qual: str) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            counts[qual] = counts.get(qual, 0) + 1
            return fn(*args, **kwargs)
        counted.__name__ = getattr(fn, "__name__", qual)
        counted.__wrapped__ = fn  # type: ignore[attr-defined]
        return counted

    for name, obj in list(vars(mod).items()):
        if inspect.isfunction(obj) and obj.__module__ == mod.__name__:
            setattr(mod, name, wrap(obj, name))
        elif inspect.isclass(obj) and obj.__module__ == mod.__name__:
            for attr, member in list(vars(obj).items()):
                if inspect.isfunction(member):
                    setattr(obj, attr, wrap(member, f"{name}.{attr}"))
    return mod, counts


__all__ = ["CallCounter", "affects", "application_mutants", "instrumented", "reachable_functions", "readers_of"]
