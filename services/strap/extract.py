"""Feature extractors compiled from channel-map rules (data, never code).

A channel map (``schemas/channels_*.json``) lists, per channel, *rules* that
turn one decoded message into label codes of schema features.  This module
compiles those rules into closures once, so extraction is a few dict/attr
lookups per message.

Paths
    Dotted field paths over dicts (JSON), protobuf messages and rosbags
    dataclasses alike: ``"decision.main_decision"``.  ``name[*]`` fans out over
    a list/repeated field, ``name[k]`` takes its item ``k`` (negative from the
    end; nothing when out of range) and ``name[a:b]`` fans out over a slice
    (``vehicles[1:]``: every vehicle but the first); ``?oneof`` yields the
    *name* of the set member of a protobuf oneof (``"decision.main_decision.?task"``
    → ``"stop"``).  Protobuf enums resolve to their value *names* (``"ST_CAR"``)
    so maps stay readable; unset optional/sub-message fields resolve to nothing.

Rules (one feature)::

    {"feature": "traffic_light.color", "path": "phase",
     "op": "value" | "exists" | "count",             # default "value"
     "select": "vehicles[*]", "where": {"kind": ["car", "van"]},   # optional
     "map": {"amber": "yellow", "none": null},   # overrides: raw -> label / none
     "bands": [[0.5, "fresh"], [2.0, "aging"], [null, "stale"]],  # numbers
     "default": null,                                   # unmapped raw values
     "reduce": "max" | "min" | "first" | "last"}        # several values

A raw value is looked up in ``map`` (exact, then lower-case), then directly in
the vocabulary (exact, then lower-case), else ``default``.

``where`` values may name a *context* value instead of constants: ``"$ego_group"``
keeps the items whose field equals the current value of the map's context
``ego_group`` (declared at the top of the channel map, fed from another channel;
see :mod:`services.strap.scene_schema`).  Rules take ``(message, context)``;
``context`` defaults to empty (then ``$`` references match nothing).
``exists`` gives the presence code 1 when any value is truthy (numbers count,
``False``/empty do not); ``count`` is the number of values, then ``bands``.
Label codes are schema vocabulary positions (1-based); ``reduce: max`` picks
the most salient label because vocabularies are listed in rising salience.

Classify rules (several objects from one list)::

    {"classify": "prediction_obstacle[*]", "by": "perception_obstacle.sub_type",
     "objects": {"ST_CAR": "vehicle.car", "ST_BUS": "vehicle.bus"},
     "default_object": "actor.unknown",
     "properties": {"action": {"path": "is_static", "map": {"true": "stop", "false": "cruise"}}}}

set each matched object's presence (unless ``"presence": false``, for a map
where another channel owns presence) and properties (``max`` over items).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import SchemaError
from .paths import (  # noqa: F401 - re-exported
    _MISSING,
    _PART,
    _child,
    _is_sequence,
    _parse_part,
    all_str,
    compile_path,
    field_column,
)

Contribution = list[tuple[str, int]]
RuleFn = Callable[..., Contribution]  # (message, context=EMPTY_CONTEXT) -> contributions
EMPTY_CONTEXT: Mapping[str, Any] = {}


def raw_key(value: Any) -> str:
    """Normalise a raw value to the string used as a ``map`` key."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, (str, bytes)) or _is_sequence(value) or isinstance(value, dict):
        return len(value) > 0
    return value is not None


class LabelCoder:
    """Raw value → label code for one rule (map / bands / direct vocabulary)."""

    def __init__(self, spec: Mapping[str, Any], vocab: Sequence[str], where: str) -> None:
        self.codes = {label: i + 1 for i, label in enumerate(vocab)}
        self.map = spec.get("map")
        self.bands: list[tuple[float, int]] | None = None
        self.default = self._code(spec.get("default"), where)
        if self.map is not None:
            self.map = {str(k): self._code(v, where) for k, v in self.map.items()}
        if "bands" in spec:
            bands = []
            for upper, label in spec["bands"]:
                bands.append((math.inf if upper is None else float(upper), self._code(label, where)))
            self.bands = bands

    def _code(self, label: Any, where: str) -> int:
        if label is None:
            return 0
        if label not in self.codes:
            raise SchemaError(f"{where}: label {label!r} not in vocabulary {sorted(self.codes)}; "
                              "fix: use one of those labels, or null for none")
        return self.codes[label]

    def __call__(self, value: Any) -> int:
        if self.bands is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            x = float(value)
            for upper, code in self.bands:
                if x < upper:
                    return code
            return self.default
        key = raw_key(value)
        if self.map is not None:
            if key in self.map:
                return self.map[key]
            low = key.lower()
            if low in self.map:
                return self.map[low]
        return self.codes.get(key, self.codes.get(key.lower(), self.default))


_REDUCERS: dict[str, Callable[[list[int]], int]] = {
    "max": max,
    "min": lambda codes: min((c for c in codes if c), default=0),
    "first": lambda codes: codes[0],
    "last": lambda codes: codes[-1],
}


def _where_tests(where: Mapping[str, Any]) -> list[tuple[Callable[[Any], list[Any]], Any]]:
    """``{sub_path: allowed}`` → [(getter, frozenset of raw keys | "$context name")]."""
    tests = []
    for sub, allowed in where.items():
        if isinstance(allowed, str) and allowed.startswith("$"):
            tests.append((compile_path(sub), allowed[1:]))
            continue
        allowed_set = frozenset(raw_key(a) for a in (allowed if isinstance(allowed, list) else [allowed]))
        tests.append((compile_path(sub), allowed_set))
    return tests


def _passes(item: Any, tests, ctx: Mapping[str, Any]) -> bool:
    for get, ok in tests:
        if isinstance(ok, str):  # a context reference
            ref = ctx.get(ok)
            if ref is None or not any(raw_key(v) == raw_key(ref) for v in get(item)):
                return False
        elif not any(raw_key(v) in ok for v in get(item)):
            return False
    return True


def context_names(rule: Mapping[str, Any]) -> frozenset[str]:
    """Context values a rule's ``where`` refers to (``"$name"``)."""
    return frozenset(v[1:] for v in (rule.get("where") or {}).values() if isinstance(v, str) and v.startswith("$"))


def _compile_where(where: Mapping[str, Any]) -> Callable[[Any, Mapping[str, Any]], bool]:
    """``(item, ctx) -> bool`` for a ``where``; one plain key over dicts is the fast case."""
    tests = _where_tests(where)
    if len(tests) == 1 and len(where) == 1:
        (key, _), (_get, ok) = next(iter(where.items())), tests[0]
        if _PART.match(key) and "." not in key and "[" not in key and not key.startswith("?"):
            if isinstance(ok, str):
                ref_name = ok

                def one_ref(item: Any, ctx: Mapping[str, Any]) -> bool:
                    if type(item) is not dict:
                        return _passes(item, tests, ctx)
                    ref, v = ctx.get(ref_name), item.get(key)
                    if v.__class__ is str and ref.__class__ is str:
                        return v == ref
                    return ref is not None and v is not None and raw_key(v) == raw_key(ref)
                return one_ref

            def one_const(item: Any, ctx: Mapping[str, Any]) -> bool:
                if type(item) is not dict:
                    return _passes(item, tests, ctx)
                v = item.get(key)
                if v.__class__ is str:
                    return v in ok
                return v is not None and raw_key(v) in ok
            return one_const
    return lambda item, ctx: _passes(item, tests, ctx)


def compile_filter(where: Mapping[str, Any]) -> Callable[[Any], bool]:
    """A channel-level message filter (constants only): keep a message when every
    ``where`` field has one of the allowed values (e.g. ``{"rollout": "md"}``).
    The function's ``batch(messages) -> [bool]`` does the same over a list."""
    tests = _where_tests(where)
    if any(isinstance(ok, str) for _, ok in tests):
        raise SchemaError("a channel 'where' filter takes constants, not context references")
    test = _compile_where(where)

    def keep(msg: Any) -> bool:
        return test(msg, EMPTY_CONTEXT)

    def batch(msgs: Sequence[Any]) -> list[bool]:
        return [test(m, EMPTY_CONTEXT) for m in msgs]

    if len(where) == 1:
        key, (_get, ok) = next(iter(where)), tests[0]
        if "." not in key and "[" not in key and not key.startswith("?"):
            def batch(msgs: Sequence[Any]) -> list[bool]:  # noqa: F811 - the plain-key fast case
                values = field_column(msgs if isinstance(msgs, list) else list(msgs), key)
                if values is None:  # not JSON: the general test
                    return [test(m, EMPTY_CONTEXT) for m in msgs]
                if all_str(values):
                    return list(map(ok.__contains__, values))  # strings: one C-level map
                return [v in ok if v.__class__ is str else (v is not None and raw_key(v) in ok) for v in values]
    keep.batch = batch  # type: ignore[attr-defined]
    return keep


def _selector(rule: Mapping[str, Any], key: str) -> Callable[[Any, Mapping[str, Any]], list[Any]]:
    items = compile_path(rule[key]) if rule.get(key) else (lambda m: [m])
    if not rule.get("where"):
        return lambda msg, ctx: items(msg)
    test = _compile_where(rule["where"])

    def select(msg: Any, ctx: Mapping[str, Any]) -> list[Any]:
        return [it for it in items(msg) if test(it, ctx)]

    return select


def compile_value_rule(rule: Mapping[str, Any], vocab: Sequence[str], where: str) -> Callable[..., int]:
    """One value/exists/count rule → ``(message, context=EMPTY_CONTEXT) -> code`` (0 = none)."""
    op = rule.get("op", "value")
    select = _selector(rule, "select")
    get = compile_path(rule.get("path", ""))
    reduce = _REDUCERS.get(rule.get("reduce", "max"))
    if reduce is None:
        raise SchemaError(f"{where}: unknown reduce {rule.get('reduce')!r}")
    if op == "exists":
        if list(vocab) != ["present"]:
            raise SchemaError(f"{where}: 'exists' needs a presence feature; fix: use op 'value' (with map/"
                              "bands) for a property, or name the object itself")

        def exists(msg: Any, ctx: Mapping[str, Any] = EMPTY_CONTEXT) -> int:
            return int(any(_truthy(v) for it in select(msg, ctx) for v in get(it)))
        return exists
    coder = LabelCoder(rule, vocab, where)
    if op == "count":
        def count(msg: Any, ctx: Mapping[str, Any] = EMPTY_CONTEXT) -> int:
            return coder(sum(len(get(it)) for it in select(msg, ctx)))
        return count
    if op != "value":
        raise SchemaError(f"{where}: unknown op {op!r}")

    def value(msg: Any, ctx: Mapping[str, Any] = EMPTY_CONTEXT) -> int:
        codes = [coder(v) for it in select(msg, ctx) for v in get(it)]
        return reduce(codes) if codes else 0
    return value


def compile_classify_rule(
    rule: Mapping[str, Any], vocab_of: Callable[[str], Sequence[str]], where: str
) -> tuple[list[str], RuleFn]:
    """A classify rule → (features it produces, ``message -> [(feature, code)]``)."""
    select = _selector(rule, "classify")
    get_type = compile_path(rule["by"])
    objects: dict[str, str] = {str(k): v for k, v in rule["objects"].items()}
    default_obj = rule.get("default_object")
    names = sorted({*objects.values(), *([default_obj] if default_obj else [])})
    if not names:
        raise SchemaError(f"{where}: classify needs at least one object")
    presence = bool(rule.get("presence", True))
    props: list[tuple[str, list[Callable[[Any], int]]]] = []
    for prop, specs in (rule.get("properties") or {}).items():
        spec_list = specs if isinstance(specs, list) else [specs]
        fns = [compile_value_rule(s, vocab_of(f"{names[0]}.{prop}"), f"{where}.{prop}") for s in spec_list]
        for name in names:
            if list(vocab_of(f"{name}.{prop}")) != list(vocab_of(f"{names[0]}.{prop}")):
                raise SchemaError(f"{where}: {name}.{prop} vocabulary differs across objects")
        props.append((prop, fns))
    features = [f for n in names for f in [*([n] if presence else []), *(f"{n}.{p}" for p, _ in props)]]

    def classify(msg: Any, ctx: Mapping[str, Any] = EMPTY_CONTEXT) -> Contribution:
        out: Contribution = []
        for item in select(msg, ctx):
            types = get_type(item)
            obj = objects.get(raw_key(types[0])) if types else None
            obj = obj or default_obj
            if not obj:
                continue
            if presence:
                out.append((obj, 1))
            for prop, fns in props:
                out.append((f"{obj}.{prop}", max(fn(item, ctx) for fn in fns)))
        return out

    return features, classify
