"""Channel-map paths over a whole batch of JSON payloads at once (:mod:`services.strap.columns`).

A path over a batch of JSON payloads (dicts and lists) is resolved segment by segment over all
messages at once: one comprehension per segment instead of a resolver call per message. The
result is ``(values, owner)``: every value the path reaches, in message order, and the index of
the message (or item) it came from. Anything that is not plain JSON where the path goes (a
protobuf or ROS payload, a scalar where a list is expected) answers ``None`` and the caller
takes the per-message resolvers instead (same values: tests/strap/test_columns.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import chain, compress, repeat
from operator import eq, is_not, itemgetter
from typing import Any

import numpy as np

from .extract import _compile_where, _parse_part, _truthy, _where_tests, raw_key
from .paths import _ONLY_STR, _STRUCT, all_str, field_column

Column = tuple[list[Any], np.ndarray]
_NONE = type(None)
_LIST_OR_NONE = frozenset({list, _NONE})
_BOOL, _STR_OR_NONE = frozenset({bool}), frozenset({str, _NONE})


def segments_of(path: str) -> list[tuple[str, str, Any]] | None:
    """The path's segments when the whole-batch resolver can take it (no ``?oneof``, no empty name)."""
    segs = [_parse_part(p) for p in path.split(".") if p]
    return None if any(not name or name.startswith("?") for name, _, _ in segs) else segs


def resolve_batch(segments: list[tuple[str, str, Any]], values: list[Any], owner: np.ndarray) -> Column | None:
    """``(values, owner)`` of the path over ``values`` (each owned by ``owner[i]``), or ``None`` (not JSON)."""
    for name, mode, arg in segments:
        children = field_column(values, name)
        if children is None:
            return None
        if mode == "one":
            keep = list(map(is_not, children, repeat(None)))
            if all(keep):
                values = children
            else:
                values = [c for c in children if c is not None]
                owner = owner[np.array(keep, bool)]
        else:
            classes = set(map(type, children))
            if classes - _LIST_OR_NONE:
                return None
            if _NONE in classes:  # no list there: nothing to fan out or index
                children = [() if c is None else c for c in children]
            if mode == "fan":  # all at C level: slices, lengths, one flat list, its None items dropped
                if arg is not None:
                    children = list(map(itemgetter(arg), children))
                counts = np.fromiter(map(len, children), np.int64, len(children))
                values = list(chain.from_iterable(children))
                owner = np.repeat(owner, counts)
                keep = list(map(is_not, values, repeat(None)))
                if not all(keep):
                    values = list(compress(values, keep))
                    owner = owner[np.array(keep, bool)]
            else:  # index
                if children and min(map(len, children)) > (arg if arg >= 0 else -arg - 1):
                    picked = list(map(itemgetter(arg), children))  # every list has item arg
                else:
                    picked = [c[arg] if -len(c) <= arg < len(c) else None for c in children]
                keep = list(map(is_not, picked, repeat(None)))
                values = list(compress(picked, keep))
                owner = owner[np.array(keep, bool)]
        if not values:
            return [], owner[:0]
    return values, owner


_NOT_CACHED = object()


def resolve_prefixed(path: str, segments: list[tuple[str, str, Any]], values: list[Any], owner: np.ndarray,
                     cache: dict | None, base: Any) -> Column | None:
    """:func:`resolve_batch` reusing the columns of the path's prefixes that other rules of the
    channel resolved over the same batch (``cache``, keyed by ``base`` and the prefix), and
    recording its own (e.g. ``signal`` once for ``signal.phase`` and ``signal.aoi_s``)."""
    if cache is None:
        return resolve_batch(segments, values, owner)
    parts = [p for p in path.split(".") if p]
    start, cur = 0, (values, owner)
    for i in range(len(parts), 0, -1):
        hit = cache.get(("#prefix", base, ".".join(parts[:i])), _NOT_CACHED)
        if hit is not _NOT_CACHED:
            if hit is None:
                return None
            start, cur = i, hit
            break
    for i in range(start, len(segments)):
        got = resolve_batch(segments[i:i + 1], cur[0], cur[1])
        cache[("#prefix", base, ".".join(parts[:i + 1]))] = got
        if got is None:
            return None
        cur = got
    return cur


def where_batch(where: Mapping[str, Any]) -> Callable[[list[Any], np.ndarray, Sequence[Mapping[str, Any]]],
                                                        list[bool]]:
    """``(items, owner, contexts) -> keep`` for a rule's ``where``: the plain-key forms of
    :func:`~services.strap.extract._compile_where` over all items at once, else its test per item."""
    test = _compile_where(where)

    def each(items: list[Any], owner: np.ndarray, ctxs: Sequence[Mapping[str, Any]]) -> list[bool]:
        return [test(it, ctxs[o]) for it, o in zip(items, owner.tolist(), strict=True)]

    tests = _where_tests(where)
    if len(where) != 1 or len(tests) != 1:
        return each
    key, ok = next(iter(where)), tests[0][1]
    if "." in key or "[" in key or key.startswith("?"):
        return each
    if isinstance(ok, str):
        ref_name = ok

        def by_ref(items: list[Any], owner: np.ndarray, ctxs: Sequence[Mapping[str, Any]]) -> list[bool]:
            values = field_column(items, key)
            if values is None:  # not JSON: the per-item test
                return each(items, owner, ctxs)
            per_msg = field_column(ctxs if isinstance(ctxs, list) else list(ctxs), ref_name)  # dicts: one map
            if per_msg is None:
                per_msg = [c.get(ref_name) for c in ctxs]
            refs = list(map(per_msg.__getitem__, owner.tolist()))
            if all_str(values) and set(map(type, refs)) <= _STR_OR_NONE:
                return list(map(eq, values, refs))  # strings against strings (or no value yet): equality
            return [(v == ref) if (v.__class__ is str and ref.__class__ is str)
                    else (ref is not None and v is not None and raw_key(v) == raw_key(ref))
                    for v, ref in zip(values, refs, strict=True)]
        return by_ref

    on_true, on_false = raw_key(True) in ok, raw_key(False) in ok
    by_bool = {True: on_true, False: on_false}

    def by_const(items: list[Any], owner: np.ndarray, ctxs: Sequence[Mapping[str, Any]]) -> list[bool]:
        values = field_column(items, key)
        if values is None:  # not JSON: the per-item test
            return each(items, owner, ctxs)
        classes = set(map(type, values))
        if classes <= _ONLY_STR:
            return list(map(ok.__contains__, values))
        if classes <= _BOOL:
            return list(map(by_bool.__getitem__, values))
        return [on_true if v is True else on_false if v is False else (v in ok) if v.__class__ is str
                else (v is not None and raw_key(v) in ok) for v in values]
    return by_const


def selector_batch(rule: Mapping[str, Any], key: str
                    ) -> Callable[[Sequence[Any], Sequence[Mapping[str, Any]]], Column | None]:
    """A rule's ``select``/``classify`` + ``where`` over a whole batch -> (items, owner) or ``None``."""
    segs = segments_of(rule[key]) if rule.get(key) else []
    keep_fn = where_batch(rule["where"]) if rule.get("where") else None

    def select(msgs: Sequence[Any], ctxs: Sequence[Mapping[str, Any]]) -> Column | None:
        if segs is None:
            return None
        got = resolve_batch(segs, list(msgs), np.arange(len(msgs)))
        if got is None or keep_fn is None or not got[0]:
            return got
        items, owner = got
        keep = keep_fn(items, owner, ctxs)
        if all(keep):
            return items, owner
        return list(compress(items, keep)), owner[np.array(keep, bool)]
    return select


_BOOL_IS_TRUTHY = frozenset({dict, list, str, bool, type(None)})  # classes whose _truthy is bool()
_NUMBERS = frozenset({float, int})  # present whatever the value (0 too); not bool


def truthy_flags(values: list[Any]) -> np.ndarray:
    """``_truthy`` of each value: numbers are present (0 too), and so are the structs of
    :mod:`services.strap.json_structs` (objects with a key); JSON containers and strings when
    not empty, booleans as they are; anything else through ``_truthy``."""
    classes = set(map(type, values))
    always = _NUMBERS.union(c for c in classes if issubclass(c, _STRUCT))
    if classes <= always:
        return np.ones(len(values), bool)
    if not classes & always and classes <= _BOOL_IS_TRUTHY:
        return np.array(list(map(bool, values)), bool)
    plain = _BOOL_IS_TRUTHY
    flags = [True if v.__class__ in always else bool(v) if v.__class__ in plain else _truthy(v) for v in values]
    return np.array(flags, bool)


__all__ = ["Column", "field_column", "resolve_batch", "resolve_prefixed", "segments_of", "selector_batch", "truthy_flags", "where_batch"]
