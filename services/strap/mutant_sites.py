"""Mutation sites, ids and isolated loading of mutants (see :mod:`services.strap.mutants`).

The shared base of :mod:`services.strap.mutants` and :mod:`services.strap.mutant_reach`:
the operator classes, the deterministic pre-order walk that numbers the sites, the
:class:`Mutant` that compiles a mutated tree into its own module object, and the
helpers reachability reads (:func:`source_of`, :func:`node_for`,
:func:`is_module_constant`, :func:`exec_module`).
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

APP_MODULES: tuple[str, ...] = ("services.simulator.apps.signal", "services.simulator.apps.conflict")
RECONSTRUCTION_MODULE = "services.simulator.v2x.reconstruction"
DEFAULT_MODULES: tuple[str, ...] = (*APP_MODULES, RECONSTRUCTION_MODULE)
CLASSES: tuple[str, ...] = ("operator_swap", "constant", "condition_flip")

_CMP_SWAP: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                               ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
                               ast.In: ast.NotIn, ast.NotIn: ast.In}
_BIN_SWAP: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_BOOL_SWAP: dict[type, type] = {ast.And: ast.Or, ast.Or: ast.And}
_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is",
           ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
           ast.Div: "/", ast.And: "and", ast.Or: "or"}
_INT_CONTEXT = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor, ast.Mod, ast.FloorDiv, ast.Pow)
FACTORS = (0.5, 2.0)


@dataclass(frozen=True)
class Site:
    """One mutation: ``ordinal`` is the node's position in the pre-order walk."""

    ordinal: int
    kind: str         # compare | arith | augassign | bool | constant | if | ifexp
    variant: int      # op index (compare), factor index (constant), 0 otherwise
    function: str     # enclosing qualname, "<module>" for module constants
    line: int
    col: int
    before: str
    after: str

    @property
    def klass(self) -> str:
        if self.kind == "constant":
            return "constant"
        if self.kind in ("if", "ifexp"):
            return "condition_flip"
        return "operator_swap"


@dataclass(frozen=True)
class Mutant:
    """A mutant of one module; :meth:`load` compiles it into an isolated module object."""

    id: str
    module: str
    path: str          # source path relative to the repository root
    site: Site

    @property
    def klass(self) -> str:
        return self.site.klass

    @property
    def function(self) -> str:
        return self.site.function

    @property
    def description(self) -> str:
        return f"{self.path}:{self.site.line}: {self.site.before} -> {self.site.after} (in {self.site.function})"

    def source_tree(self) -> ast.Module:
        tree = ast.parse(source_of(self.module), filename=self.path)
        _apply(node_for(tree, self.site), self.site)
        return ast.fix_missing_locations(tree)

    def load(self) -> types.ModuleType:
        """Compile and execute the mutated module as a fresh module object."""
        return exec_module(self.module, compile(self.source_tree(), f"<mutant {self.id}>", "exec"),
                            f"{self.module}.__mutant__")

    def decide(self, app: Any) -> Any:
        """The mutated ``decide`` of application ``app`` (its module must be this mutant's)."""
        from services.simulator.apps import APPS

        fn = APPS[app].decide
        if fn.__module__ != self.module:
            raise ValueError(f"{app} is decided in {fn.__module__}, not in {self.module}")
        return getattr(self.load(), fn.__name__)


# ---------------------------------------------------------------------------- source and sites
def _module_path(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ValueError(f"no source for module {module!r}")
    return Path(spec.origin)


@cache
def source_of(module: str) -> str:
    return _module_path(module).read_text()


def _relpath(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            and parent is not None and getattr(parent, "body", [None])[0] is node)


def _walk(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.AST | None, str, bool]]:
    """Pre-order (node, parent, enclosing qualname, in a mutable region)."""

    def visit(node: ast.AST, parent: ast.AST | None, qual: list[str], active: bool) -> Iterator[Any]:
        yield node, parent, ".".join(qual) or "<module>", active
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = [*qual, node.name]
            for child in node.body:  # not decorators, signature, annotations, bases
                if not _is_docstring(child, node):
                    yield from visit(child, node, inner, isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                                     or active)
            return
        if isinstance(node, (ast.AnnAssign,)):
            if node.value is not None:
                yield from visit(node.value, node, qual, active or is_module_constant(node, qual))
            return
        if isinstance(node, ast.Assign):
            yield from visit(node.value, node, qual, active or is_module_constant(node, qual))
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.Module) and _is_docstring(child, node):
                continue
            yield from visit(child, node, qual, active)

    yield from visit(tree, None, [], False)


def is_module_constant(node: ast.Assign | ast.AnnAssign, qual: list[str]) -> bool:
    if qual:
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return all(isinstance(t, ast.Name) and t.id.isupper() and t.id != "__ALL__" for t in targets) and \
        isinstance(node.value, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Call))


def _numeric(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _constant_ok(node: ast.Constant, parent: ast.AST | None) -> bool:
    v = node.value
    if v == 0:
        return False
    if isinstance(v, int):
        if v in (1, -1):
            return False
        if isinstance(parent, (ast.Subscript, ast.Slice)) or (
                isinstance(parent, ast.BinOp) and isinstance(parent.op, _INT_CONTEXT)):
            return False
    return True


def _site_variants(node: ast.AST, parent: ast.AST | None) -> list[tuple[str, int, str, str]]:
    """(kind, variant, before, after) of every mutation of one node."""
    if isinstance(node, ast.Compare):
        return [("compare", i, _SYMBOL[type(op)], _SYMBOL[_CMP_SWAP[type(op)]])
                for i, op in enumerate(node.ops) if type(op) in _CMP_SWAP]
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
        return [("arith", 0, _SYMBOL[type(node.op)], _SYMBOL[_BIN_SWAP[type(node.op)]])]
    if isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
        return [("augassign", 0, _SYMBOL[type(node.op)] + "=", _SYMBOL[_BIN_SWAP[type(node.op)]] + "=")]
    if isinstance(node, ast.BoolOp):
        return [("bool", 0, _SYMBOL[type(node.op)], _SYMBOL[_BOOL_SWAP[type(node.op)]])]
    if _numeric(node) and _constant_ok(node, parent):  # type: ignore[arg-type]
        value = node.value  # type: ignore[attr-defined]
        return [("constant", i, repr(value), repr(_scaled(value, f))) for i, f in enumerate(FACTORS)]
    if isinstance(node, ast.If):
        return [("if", 0, "if c", "if not c")]
    if isinstance(node, ast.IfExp):
        return [("ifexp", 0, "a if c else b", "a if not c else b")]
    return []


def _sites_of(tree: ast.Module) -> list[tuple[ast.AST, Site]]:
    out: list[tuple[ast.AST, Site]] = []
    for ordinal, (node, parent, qual, active) in enumerate(_walk(tree), start=1):
        if not active:
            continue
        line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
        for kind, variant, before, after in _site_variants(node, parent):
            out.append((node, Site(ordinal, kind, variant, qual, line, col, before, after)))
    return out


def node_for(tree: ast.Module, site: Site) -> ast.AST:
    for node, s in _sites_of(tree):
        if (s.ordinal, s.kind, s.variant) == (site.ordinal, site.kind, site.variant):
            return node
    raise ValueError(f"site {site} not found: the source changed since the mutant was generated")


def sites(source: str) -> list[Site]:
    """The mutation sites of a module's source, in generation order."""
    return [site for _node, site in _sites_of(ast.parse(source))]


def _scaled(value: int | float, factor: float) -> int | float:
    if isinstance(value, int):
        return value * 2 if factor > 1 else value // 2
    return value * factor


def _apply(node: ast.AST, site: Site) -> None:
    if site.kind == "compare":
        assert isinstance(node, ast.Compare)
        node.ops[site.variant] = _CMP_SWAP[type(node.ops[site.variant])]()
    elif site.kind == "arith":
        assert isinstance(node, ast.BinOp)
        node.op = _BIN_SWAP[type(node.op)]()
    elif site.kind == "augassign":
        assert isinstance(node, ast.AugAssign)
        node.op = _BIN_SWAP[type(node.op)]()
    elif site.kind == "bool":
        assert isinstance(node, ast.BoolOp)
        node.op = _BOOL_SWAP[type(node.op)]()
    elif site.kind == "constant":
        assert isinstance(node, ast.Constant)
        node.value = _scaled(node.value, FACTORS[site.variant])
    elif site.kind in ("if", "ifexp"):
        assert isinstance(node, (ast.If, ast.IfExp))
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
    else:  # pragma: no cover
        raise ValueError(site.kind)


def _short(module: str) -> str:
    return module.rsplit(".", 1)[-1]


def generate_mutants(modules: Iterable[str] = DEFAULT_MODULES, *, classes: Iterable[str] = CLASSES,
                     functions: Iterable[str] | None = None) -> list[Mutant]:
    """Every mutant of ``modules`` in a deterministic order (module order, then source walk).

    ``classes`` keeps only these operator classes; ``functions`` only mutants whose
    enclosing function (qualname, or ``"<module>"``) is listed.
    """
    keep_classes = set(classes)
    unknown = keep_classes - set(CLASSES)
    if unknown:
        raise ValueError(f"unknown operator classes {sorted(unknown)} (known: {CLASSES})")
    keep_fn = None if functions is None else set(functions)
    out: list[Mutant] = []
    for module in modules:
        tree = ast.parse(source_of(module))
        seen: dict[str, int] = {}
        for _node, site in _sites_of(tree):
            if site.klass not in keep_classes or (keep_fn is not None and site.function not in keep_fn):
                continue
            base = f"{_short(module)}:{site.function}:L{site.line}C{site.col}:{site.kind}"
            if site.kind == "constant":
                base += f"x{FACTORS[site.variant]:g}"
            elif site.kind == "compare":
                base += f"{site.variant}"
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.append(Mutant(base if n == 0 else f"{base}#{n}", module, _relpath(module), site))
    return out


# ---------------------------------------------------------------------------- loading
def exec_module(module: str, code: types.CodeType, name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__package__ = module.rpartition(".")[0]
    mod.__file__ = str(_module_path(module))
    had = sys.modules.get(name)
    sys.modules[name] = mod  # dataclasses resolve string annotations through sys.modules while executing
    try:
        exec(code, mod.__dict__)
    finally:
        if had is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = had
    return mod


def by_class(mutants: Sequence[Mutant]) -> dict[str, int]:
    out = dict.fromkeys(CLASSES, 0)
    for m in mutants:
        out[m.klass] += 1
    return out



__all__ = ["APP_MODULES", "CLASSES", "DEFAULT_MODULES", "FACTORS", "RECONSTRUCTION_MODULE", "Mutant", "Site",
           "by_class", "exec_module", "generate_mutants", "is_module_constant", "node_for", "sites", "source_of"]
