"""The mutation tool: deterministic sites and ids, isolated compiled mutants, reachability."""

from __future__ import annotations

import ast
import hashlib
import sys

from lastv2x.core.catalogue import Application
from services.simulator.apps import APPS, signal
from services.strap.mutants import (
    APP_MODULES,
    CLASSES,
    DEFAULT_MODULES,
    affects,
    application_mutants,
    by_class,
    generate_mutants,
    instrumented,
    readers_of,
    sites,
)

SNIPPET = '''"""doc"""
LIMIT_S = 2.5
name = 3.0


def f(x, y=4.0):
    """doc"""
    if x < LIMIT_S and y >= 1:
        return x + 2 * y
    z = [1, 2, 3][2]
    return z if x else -0.5
'''


def test_sites_are_pinned_on_a_fixed_source():
    got = [(s.kind, s.line, s.before, s.after, s.function) for s in sites(SNIPPET)]
    assert got == [
        ("constant", 2, "2.5", "1.25", "<module>"), ("constant", 2, "2.5", "5.0", "<module>"),
        ("if", 8, "if c", "if not c", "f"), ("bool", 8, "and", "or", "f"),
        ("compare", 8, "<", "<=", "f"), ("compare", 8, ">=", ">", "f"),
        ("arith", 9, "+", "-", "f"), ("arith", 9, "*", "/", "f"),
        ("constant", 9, "2", "1", "f"), ("constant", 9, "2", "4", "f"),
        ("constant", 10, "2", "1", "f"), ("constant", 10, "2", "4", "f"),   # list items, not the index
        ("constant", 10, "3", "1", "f"), ("constant", 10, "3", "6", "f"),
        ("ifexp", 11, "a if c else b", "a if not c else b", "f"),
        ("constant", 11, "0.5", "0.25", "f"), ("constant", 11, "0.5", "1.0", "f"),
    ]  # docstrings, defaults, lower-case globals, ints 0/±1 and indices are not mutated
    assert sites(SNIPPET) == sites(SNIPPET)


def _digest(paths):
    return {p: hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths}


SITE_NODES = {"compare": (ast.Compare,), "arith": (ast.BinOp,), "augassign": (ast.AugAssign,), "bool": (ast.BoolOp,),
              "constant": (ast.Constant, ast.UnaryOp), "if": (ast.If,), "ifexp": (ast.IfExp,)}


def test_generation_is_deterministic_and_covers_every_class():
    first, second = generate_mutants(), generate_mutants()
    assert [m.id for m in first] == [m.id for m in second] and len(first) == len(second)
    assert len({m.id for m in first}) == len(first)  # ids are unique
    # Properties, not counts, so an edit to the applications does not break this test: every
    # module keeps a healthy number of sites (today 83, 158 and 101), every id names its own
    # site, and that site is a node of its kind in the module's source.
    for mod in DEFAULT_MODULES:
        assert sum(m.module == mod for m in first) >= 40, mod
    trees = {path: ast.parse(open(path).read()) for path in {m.path for m in first}}
    nodes = {path: {(n.lineno, n.col_offset, type(n)) for n in ast.walk(tree) if hasattr(n, "col_offset")}
             for path, tree in trees.items()}
    for m in first:
        assert m.id.startswith(f"{m.module.rsplit('.', 1)[-1]}:{m.site.function}:L{m.site.line}C{m.site.col}:")
        assert any((m.site.line, m.site.col, k) in nodes[m.path] for k in SITE_NODES[m.site.kind]), m.id
    assert [m.module for m in first] == sorted((m.module for m in first), key=DEFAULT_MODULES.index)
    apps = application_mutants()
    assert len(apps) >= 30 and all(m.module in APP_MODULES for m in apps)
    assert all(n > 0 for n in by_class(apps).values()) and set(by_class(apps)) == set(CLASSES)
    pairs = {(m.site.before, m.site.after) for m in apps}
    assert {("<", "<="), ("<=", "<"), ("+", "-"), ("-", "+"), ("and", "or"), ("or", "and"),
            ("if c", "if not c")} <= pairs
    consts = [m for m in apps if m.klass == "constant"]
    assert any(float(m.site.after) == 0.5 * float(m.site.before) for m in consts)
    assert any(float(m.site.after) == 2.0 * float(m.site.before) for m in consts)
    for app in Application:  # every application has mutants that can change it
        assert sum(affects(m, app) for m in apps) >= 10, app
    assert all(any(affects(m, app) for app in Application) for m in apps)  # and every mutant is reachable


def test_every_mutant_compiles_in_isolation():
    mutants = generate_mutants()
    paths = sorted({m.path for m in mutants})
    before = _digest(paths)
    original = APPS[Application.RLVW].decide
    for m in mutants:
        mod = m.load()
        assert mod is not sys.modules.get(m.module) and mod.__name__.endswith("__mutant__")
    assert _digest(paths) == before  # nothing written to the source tree
    assert not [n for n in sys.modules if "__mutant__" in n]  # nothing left registered
    assert APPS[Application.RLVW].decide is original is signal.rlvw


def test_reachability_and_call_counts():
    mutants = generate_mutants(APP_MODULES)
    in_glosa = next(m for m in mutants if m.function == "glosa")
    in_epoch = next(m for m in mutants if m.function == "_epoch_rule")
    in_fcw = next(m for m in mutants if m.function == "fcw")
    assert not affects(in_glosa, Application.RLVW) and affects(in_glosa, Application.GLOSA)
    assert affects(in_epoch, Application.RLVW) and affects(in_epoch, Application.GLOSA)
    assert affects(in_fcw, Application.FCW) and not affects(in_fcw, Application.IMA)
    glosa_const = next(m for m in mutants if m.function == "<module>" and m.site.before == "1.0"
                       and m.module.endswith("signal"))  # GLOSA_MARGIN_S
    assert readers_of(glosa_const) == {"glosa"} and not affects(glosa_const, Application.RLVW)
    mod, counts = instrumented("services.simulator.apps.signal")
    assert mod.rlvw is not signal.rlvw and counts == {}
    try:
        mod.rlvw(None, None, None, None)
    except AttributeError:
        pass
    assert counts["rlvw"] == 1 and counts["_signal_decide"] == 1
