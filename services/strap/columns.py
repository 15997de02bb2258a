"""Channel-map rules compiled into operations over a *batch* of one channel's messages.

:mod:`services.strap.extract` turns one message into codes, rule by rule; that is the
reference semantics and stays (tests compare the two on every built-in map). Here the
same rules run over a batch of ``n`` decoded messages of one channel:

1. **columns**: each rule's ``select`` / ``where`` / field path is resolved over the whole
   batch at once into one flat Python list of raw values plus the owning message's index
   (:mod:`services.strap.json_columns`: one comprehension per path segment over JSON
   payloads); other payloads (protobuf, ROS) resolve message by message;
2. **coding, vectorized**: numbers under ``bands`` go through one ``np.searchsorted``
   (ascending band edges; other orders keep the scalar loop), everything else through
   a memo of raw value -> code (``map`` / vocabulary lookups are done once per distinct
   value of the recording, not once per message);
3. **per-message reduction**: ``max`` / ``min`` (non-zero) / ``first`` / ``last``,
   ``exists`` and ``count`` with ``np.maximum.at`` / ``np.minimum.at`` / ``bincount``.

Classify rules flatten their selected items over the batch, look each item's type up
once, and scatter presence and property codes into the object columns.

Each compiled rule is ``batch(messages, contexts) -> [(feature, int16 codes of length n)]``;
``contexts[i]`` is the context mapping message ``i`` saw (rules with ``$name`` filters).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import compress
from typing import Any

import numpy as np

from .errors import SchemaError
from .extract import (
    EMPTY_CONTEXT,
    LabelCoder,
    _selector,
    _truthy,
    compile_path,
    raw_key,
)
from .json_columns import (
    Column,
    resolve_batch,
    resolve_prefixed,
    segments_of,
    selector_batch,
    truthy_flags,
)
from .paths import all_str

CODES = np.int16
_NUMBER_CLASSES = frozenset({float, int})  # not bool: a JSON true is not a band value
BatchFn = Callable[..., list[tuple[str, np.ndarray]]]  # (messages, contexts, columns=None) -> [(feature, codes)]
_MEMO_MAX = 4096


class BatchCoder:
    """:class:`LabelCoder` over a list of raw values, vectorized (see module docstring)."""

    def __init__(self, coder: LabelCoder) -> None:
        self.coder = coder
        self.memo: dict[tuple[type, Any], int] = {}
        bands = coder.bands
        self.edges: np.ndarray | None = None
        if bands is not None and all(a[0] < b[0] for a, b in zip(bands, bands[1:], strict=False)):
            self.edges = np.array([u for u, _ in bands], np.float64)
            self.band_codes = np.array([c for _, c in bands] + [coder.default], CODES)

    def scalar(self, value: Any) -> int:
        try:
            key = (value.__class__, value)
            code = self.memo.get(key)
        except TypeError:  # unhashable (a list or dict as a raw value)
            return self.coder(value)
        if code is None:
            code = self.coder(value)
            if len(self.memo) < _MEMO_MAX:
                self.memo[key] = code
        return code

    def __call__(self, values: list[Any]) -> np.ndarray:
        n = len(values)
        if not n:
            return np.zeros(0, CODES)
        if self.coder.bands is not None:
            if self.edges is not None and set(map(type, values)) <= _NUMBER_CLASSES:
                x = np.asarray(values, np.float64)
                return self.band_codes[np.searchsorted(self.edges, x, side="right")]
            out = np.fromiter((self.scalar(v) if not isinstance(v, (int, float)) or isinstance(v, bool)
                               else self.coder(v) for v in values), CODES, n)
            return out
        memo, scalar = self.memo, self.scalar
        try:  # a memo hit per value without a call; misses (and unhashable values) take scalar()
            codes = list(map(memo.get, zip(map(type, values), values, strict=True)))
        except TypeError:
            return np.fromiter((scalar(v) for v in values), CODES, n)
        if None in codes:
            codes = [scalar(v) if c is None else c for v, c in zip(values, codes, strict=True)]
        return np.array(codes, CODES)


def _any_truthy(values: list[Any]) -> bool:
    """``any(_truthy(v) for v in values)``, numbers and non-empty dicts without a call."""
    for v in values:
        t = v.__class__
        if t is float or t is int:
            return True
        if t is dict:
            if v:
                return True
        elif _truthy(v):
            return True
    return False


def _flatten(lists: list[list[Any]]) -> tuple[list[Any], np.ndarray]:
    """(all values, index of the message each came from)."""
    counts = np.fromiter((len(v) for v in lists), np.int64, len(lists))
    flat = [x for v in lists for x in v]
    return flat, np.repeat(np.arange(len(lists)), counts)


def _reduce(codes: np.ndarray, owner: np.ndarray, n: int, how: str) -> np.ndarray:
    out = np.zeros(n, CODES)
    if not codes.shape[0]:
        return out
    if how == "max":
        np.maximum.at(out, owner, codes)
    elif how == "min":
        nz = codes != 0
        big = np.full(n, np.iinfo(CODES).max, CODES)
        np.minimum.at(big, owner[nz], codes[nz])
        out = np.where(big == np.iinfo(CODES).max, 0, big).astype(CODES)
    elif how == "first":
        first = np.ones(codes.shape[0], bool)
        first[1:] = owner[1:] != owner[:-1]
        out[owner[first]] = codes[first]
    else:  # last
        last = np.ones(codes.shape[0], bool)
        last[:-1] = owner[1:] != owner[:-1]
        out[owner[last]] = codes[last]
    return out


def batch_value_rule(rule: Mapping[str, Any], vocab: Sequence[str], where: str
                     ) -> Callable[[Sequence[Any], Sequence[Mapping[str, Any]]], np.ndarray]:
    """One value/exists/count rule over a batch -> int16 codes (0 = none), as
    :func:`~services.strap.extract.compile_value_rule` message by message."""
    op = rule.get("op", "value")
    get = compile_path(rule.get("path", ""))
    how = rule.get("reduce", "max")
    has_select = bool(rule.get("select")) or bool(rule.get("where"))
    select = _selector(rule, "select")
    # rules of one channel reading the same values share one column per batch
    column_key = (rule.get("select") or "", repr(sorted((rule.get("where") or {}).items())), rule.get("path", ""))

    path = rule.get("path", "")
    plain = path if path and "." not in path and "[" not in path and not path.startswith("?") else None
    select_batch = selector_batch(rule, "select") if has_select else None
    path_segs = segments_of(path)

    def column_of(msgs: Sequence[Any], ctxs: Sequence[Mapping[str, Any]], columns: dict | None = None
                  ) -> Column | None:
        """The rule's values over the whole batch with their message index (``None``: not JSON)."""
        key = ("#column", column_key)
        if columns is not None and key in columns:
            return columns[key]
        got: Column | None = None
        if path_segs is not None:
            if select_batch is None:
                got = resolve_prefixed(path, path_segs, list(msgs), np.arange(len(msgs)), columns, None)
            else:
                sel_key = ("#select", column_key[:2])
                sel = columns[sel_key] if columns is not None and sel_key in columns else select_batch(msgs, ctxs)
                if columns is not None:
                    columns[sel_key] = sel
                if sel is not None:
                    got = resolve_prefixed(path, path_segs, sel[0], sel[1], columns, column_key[:2])
        if columns is not None:
            columns[key] = got
        return got

    def values_of(msgs: Sequence[Any], ctxs: Sequence[Mapping[str, Any]],
                  columns: dict | None = None) -> list[list[Any]]:
        if columns is not None and column_key in columns:
            return columns[column_key]
        if not has_select and plain is not None:
            try:  # one plain key over dicts (JSON): no call per message
                lists = [[v] if (v := m.get(plain)) is not None else [] for m in msgs]
            except AttributeError:
                lists = [get(m) for m in msgs]
        elif not has_select:
            lists = [get(m) for m in msgs]
        else:
            lists = [[v for it in select(m, c) for v in get(it)] for m, c in zip(msgs, ctxs, strict=True)]
        if columns is not None:
            columns[column_key] = lists
        return lists

    if op == "exists":
        if list(vocab) != ["present"]:
            raise SchemaError(f"{where}: 'exists' needs a presence feature")

        def exists(msgs: Sequence[Any], ctxs: Sequence[Mapping[str, Any]], columns: dict | None = None
                   ) -> np.ndarray:
            col = column_of(msgs, ctxs, columns)
            if col is not None:
                out = np.zeros(len(msgs), CODES)
                out[col[1][truthy_flags(col[0])]] = 1
                return out
            return np.fromiter((_any_truthy(vs) for vs in values_of(msgs, ctxs, columns)), CODES, len(msgs))
        return exists
    coder = BatchCoder(LabelCoder(rule, vocab, where))
    if op == "count":
        def count(msgs: Sequence[Any], ctxs: Sequence[Mapping[str, Any]], columns: dict | None = None
                  ) -> np.ndarray:
            col = column_of(msgs, ctxs, columns)
            if col is not None:
                return coder(np.bincount(col[1], minlength=len(msgs)).tolist())
            return coder([len(vs) for vs in values_of(msgs, ctxs, columns)])
        return count

    def value(msgs: Sequence[Any], ctxs: Sequence[Mapping[str, Any]], columns: dict | None = None) -> np.ndarray:
        n = len(msgs)
        col = column_of(msgs, ctxs, columns)
        if col is not None:
            flat, owner = col
            if len(flat) == n and (n == 0 or (owner[0] == 0 and owner[-1] == n - 1)):
                return coder(flat)  # one value per message (owners ascending): no reduction to do
            return _reduce(coder(flat), owner, n, how)
        lists = values_of(msgs, ctxs, columns)
        if all(len(vs) == 1 for vs in lists):  # one value per message: no reduction to do
            return coder([vs[0] for vs in lists])
        flat, owner = _flatten(lists)
        return _reduce(coder(flat), owner, len(msgs), how)
    return value


def batch_classify_rule(rule: Mapping[str, Any], vocab_of: Callable[[str], Sequence[str]], where: str
                        ) -> tuple[list[str], BatchFn]:
    """A classify rule over a batch: presence and property codes of each matched object."""
    select = _selector(rule, "classify")
    get_type = compile_path(rule["by"])
    objects: dict[str, str] = {str(k): v for k, v in rule["objects"].items()}
    default_obj = rule.get("default_object")
    names = sorted({*objects.values(), *([default_obj] if default_obj else [])})
    presence = bool(rule.get("presence", True))
    props: list[tuple[str, list]] = []
    for prop, specs in (rule.get("properties") or {}).items():
        spec_list = specs if isinstance(specs, list) else [specs]
        props.append((prop, [batch_value_rule(s, vocab_of(f"{names[0]}.{prop}"), f"{where}.{prop}")
                             for s in spec_list]))
    features = [f for n in names for f in [*([n] if presence else []), *(f"{n}.{p}" for p, _ in props)]]
    props_use_context = any(s.get("select") or s.get("where") for specs in (rule.get("properties") or {}).values()
                            for s in (specs if isinstance(specs, list) else [specs]))
    obj_index = {n: i for i, n in enumerate(names)}
    type_memo: dict[str, int] = {}

    def obj_of(item: Any) -> int:
        types = get_type(item)
        key = raw_key(types[0]) if types else None
        k = type_memo.get(key) if key is not None else None
        if k is None:
            obj = (objects.get(key) if key is not None else None) or default_obj
            k = obj_index[obj] if obj else -1
            if key is not None and len(type_memo) < _MEMO_MAX:
                type_memo[key] = k
        return k

    by_segs = segments_of(rule["by"])
    select_batch = selector_batch(rule, "classify")
    no_type = (obj_index[default_obj] if default_obj else -1)

    def kind_of_value(v: Any) -> int:
        key = raw_key(v)
        k = type_memo.get(key)
        if k is None:
            obj = objects.get(key) or default_obj
            k = obj_index[obj] if obj else -1
            if len(type_memo) < _MEMO_MAX:
                type_memo[key] = k
        return k

    def kinds_of(items: list[Any]) -> np.ndarray:
        got = None if by_segs is None else resolve_batch(by_segs, items, np.arange(len(items)))
        if got is None:
            return np.fromiter((obj_of(it) for it in items), np.int64, len(items))
        vals, idx = got
        first: list[Any] = [None] * len(items)
        if len(vals) == len(items):  # one type value per item
            first = vals
        else:
            for v, i in zip(reversed(vals), reversed(idx.tolist()), strict=True):
                first[i] = v
        # a memo hit per value without a call (the memo's keys are raw keys, i.e. strings: only a
        # string value can hit one); misses and values without a type take the slow road
        if all_str(first):
            kinds = list(map(type_memo.get, first))
            if None in kinds:
                kinds = [kind_of_value(v) if k is None else k for v, k in zip(first, kinds, strict=True)]
        else:
            kinds = [no_type if v is None else (k if (v.__class__ is str and (k := type_memo.get(v)) is not None)
                                                else kind_of_value(v)) for v in first]
        return np.array(kinds, np.int64).reshape(len(items))

    def classify(msgs: Sequence[Any], ctxs: Sequence[Mapping[str, Any]], columns: dict | None = None
                 ) -> list[tuple[str, np.ndarray]]:
        n = len(msgs)
        sel = select_batch(msgs, ctxs)
        if sel is not None:
            items, owner = sel
        else:
            items, owner = _flatten([select(m, c) for m, c in zip(msgs, ctxs, strict=True)])
        kinds = kinds_of(items)
        keep = kinds >= 0
        owner, kinds = owner[keep], kinds[keep]
        items = list(compress(items, keep.tolist()))
        # the contexts of the items' messages, for property rules that filter on them
        item_ctx = ([ctxs[i] for i in owner.tolist()] if props_use_context else [EMPTY_CONTEXT] * len(items)) \
            if props else ()
        out: list[tuple[str, np.ndarray]] = []
        prop_codes = []
        for prop, fns in props:
            codes = np.zeros(len(items), CODES)
            for fn in fns:
                codes = np.maximum(codes, fn(items, item_ctx))
            prop_codes.append((prop, codes))
        for name, k in obj_index.items():
            mine = kinds == k
            if presence:
                col = np.zeros(n, CODES)
                col[owner[mine]] = 1
                out.append((name, col))
            for prop, codes in prop_codes:
                col = np.zeros(n, CODES)
                np.maximum.at(col, owner[mine], codes[mine])
                out.append((f"{name}.{prop}", col))
        return out

    return features, classify


def batch_rule(rule: Mapping[str, Any], vocab_of: Callable[[str], Sequence[str]], where: str
               ) -> tuple[tuple[str, ...], BatchFn]:
    """Any rule of a channel map -> (features it produces, batch function)."""
    if "classify" in rule:
        feats, fn = batch_classify_rule(rule, vocab_of, where)
        return tuple(feats), fn
    feat = rule["feature"]
    value_fn = batch_value_rule(rule, vocab_of(feat), where)

    def single(msgs: Sequence[Any], ctxs: Sequence[Mapping[str, Any]], columns: dict | None = None
               ) -> list[tuple[str, np.ndarray]]:
        return [(feat, value_fn(msgs, ctxs, columns))]
    return (feat,), single


__all__ = ["EMPTY_CONTEXT", "BatchCoder", "BatchFn", "batch_classify_rule", "batch_rule", "batch_value_rule"]
