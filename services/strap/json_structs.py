"""JSON payloads decoded straight into the fields a channel map reads (msgspec Structs).

Every path a JSON channel's map entry uses (rule ``select`` / ``classify`` / ``where`` /
``by`` / ``path`` / properties, the channel's ``where`` filter and ``interval``, the context
sources on the channel) is merged into one *field tree*. Each object node of the tree
becomes a ``msgspec.Struct`` holding only the fields some path goes through, every field
defaulting to ``None``; a node where a path *ends* (its value is coded, tested or counted)
stays ``Any`` and is decoded whole, exactly as the plain JSON decoder does (so ``{}`` stays
falsy, ``1`` and ``1.0`` stay apart). A payload is then decoded with one
``msgspec.json.Decoder(RootStruct).decode`` call that skips every field no rule reads: ~3x
less work than building every dict of the message (a 10-vehicle ``/gt/vehicles`` message
becomes 11 small structs of 4 slots instead of 11 dicts of 8 keys).

The structs answer the path language as dicts do (:func:`services.strap.paths._child` takes
their attributes; an absent key and ``null`` are both ``None``, which resolves to nothing
either way), and :mod:`services.strap.json_columns` resolves them column-wise with
``operator.attrgetter``. A payload the tree does not fit (a scalar where an object or a list
is expected, NaN literals, bad JSON) fails validation; then the whole batch is decoded by the
plain JSON decoder instead (:func:`StructDecoder.many` answers ``None``), so results never
depend on which decoder ran (tests/strap/test_json_structs.py).

Known difference, in the decoder's favour: integers beyond 64 bits decode exactly (as the
standard library's ``json`` does), where orjson turns them into floats.

Without msgspec installed (it is in the ``recordings`` extra) no channel gets a struct type and
payloads decode as before.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Iterable, Mapping
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import Any, Optional

import numpy as np

from .extract import compile_filter
from .json_columns import resolve_batch
from .paths import _parse_part

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is in the recordings extra
    msgspec = None  # type: ignore[assignment]


class _Node:
    """One object (or list of objects) of the field tree."""

    __slots__ = ("fields", "leaf", "present")

    def __init__(self) -> None:
        self.fields: dict[str, tuple[str, _Node]] = {}  # name -> ("one" | "list", child)
        self.leaf = False                               # a value is read here: decode it whole
        self.present = False                            # only its truthiness is read (op exists)


def _add(node: _Node, path: str, *, use: str | None) -> _Node | None:
    """Walk ``path`` from ``node``, adding its fields; the node it reaches, marked by ``use``
    (``"value"``: decoded whole; ``"present"``: an ``exists`` reads its truthiness; None: a
    ``select`` or a ``count``, which only see whether items are there), or None where the path
    leaves the JSON language."""
    cur = node
    for part in (p for p in path.split(".") if p):
        name, mode, _arg = _parse_part(part)
        if not name:        # "[*]" over the node itself: the node is a value
            cur.leaf = True
            return None
        if name.startswith("?"):  # a protobuf oneof: never set on JSON, nothing to read
            return None
        kind = "one" if mode == "one" else "list"
        got = cur.fields.get(name)
        if got is None:
            got = cur.fields[name] = (kind, _Node())
        elif got[0] != kind:  # read as an object here and as a list elsewhere: decode it whole
            got[1].leaf = True
        cur = got[1]
    if use == "value":
        cur.leaf = True
    elif use == "present":
        cur.present = True
    return cur


_USE_OF_OP = {"value": "value", "exists": "present", "count": None}


def _add_value_rule(base: _Node, rule: Mapping[str, Any]) -> None:
    items = _add(base, rule.get("select") or "", use=None) if rule.get("select") else base
    if items is None:
        return
    for sub in (rule.get("where") or {}):
        _add(items, sub, use="value")
    _add(items, rule.get("path", ""), use=_USE_OF_OP.get(rule.get("op", "value"), "value"))


def field_tree(spec: Mapping[str, Any], context_paths: Iterable[str] = ()) -> _Node:
    """The field tree of one channel's map entry (module docstring)."""
    root = _Node()
    for sub in (spec.get("where") or {}):
        _add(root, sub, use="value")
    for key in ("start", "end"):
        if (spec.get("interval") or {}).get(key):
            _add(root, spec["interval"][key], use="value")
    for path in context_paths:
        _add(root, path, use="value")
    for rule in spec.get("rules", []):
        if "classify" not in rule:
            _add_value_rule(root, rule)
            continue
        items = _add(root, rule["classify"], use=None)
        if items is None:
            continue
        for sub in (rule.get("where") or {}):
            _add(items, sub, use="value")
        _add(items, rule["by"], use="value")
        for specs in (rule.get("properties") or {}).values():
            for s in specs if isinstance(specs, list) else [specs]:
                _add_value_rule(items, s)
    return root


def _plain_name(name: str) -> bool:
    """A field name a struct can carry as an attribute of the same name, and no dict attribute
    (:func:`~services.strap.paths.field_column` tells structs from dicts by it)."""
    return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_") \
        and not hasattr(dict, name)


#: a node an ``exists`` reads as a struct: (path segments from the root, its fields)
Presence = tuple[list[tuple[str, str, Any]], tuple[str, ...]]


def _type_of(node: _Node, label: str, at: list[tuple[str, str, Any]], checks: list[Presence]) -> Any:
    if node.leaf or not node.fields or not all(_plain_name(n) for n in node.fields):
        return Any
    fields = []
    for name, (kind, child) in sorted(node.fields.items()):
        t = _type_of(child, f"{label}_{name}", [*at, (name, "one" if kind == "one" else "fan", None)], checks)
        if t is not Any:
            t = Optional[list[Optional[t]]] if kind == "list" else Optional[t]  # noqa: UP045 - runtime types
        fields.append((name, t, None))
    if node.present:  # a struct is truthy; the object it stands for only when it has a key
        checks.append((at, tuple(sorted(node.fields))))
    return msgspec.defstruct(label, fields, gc=False)


def struct_type(spec: Mapping[str, Any], context_paths: Iterable[str] = (), label: str = "Payload",
                checks: list[Presence] | None = None) -> Any:
    """The root struct type of one channel, or None (no msgspec, or the whole message is a value);
    ``checks`` receives the nodes an ``exists`` reads (see :class:`StructDecoder`)."""
    if msgspec is None:
        return None
    t = _type_of(field_tree(spec, context_paths), label, [], [] if checks is None else checks)
    return None if t is Any else t


class StructDecoder:
    """Payloads of one JSON channel -> root structs (module docstring).

    A channel with a ``where`` filter (``head`` and ``keep``: the struct of the filter's fields
    and the filter over a list of them) decodes every payload into its head first and only the
    kept ones in full, and :meth:`many` drops the others (the filter would drop them downstream
    anyway: a paired trace's other rollout costs a skim, not a decode).

    An object an ``exists`` reads (``checks``) is a struct too: it is truthy, as the object is
    when it has a key, which it surely has when one of the struct's fields is set. When one comes
    out with none set (``{}``, or only keys no rule reads, or only nulls), the batch is declined.
    """

    def __init__(self, root: Any, head: Any = None, keep: Callable[[list[Any]], list[bool]] | None = None,
                 checks: Iterable[Presence] = ()) -> None:
        self.root = root
        self._decode = msgspec.json.Decoder(root).decode
        self._head = msgspec.json.Decoder(head).decode if head is not None and keep is not None else None
        self._keep = keep
        self._checks = list(checks)

    def _unsure(self, structs: list[Any]) -> bool:
        """Whether an object an ``exists`` reads came out with none of its struct's fields set."""
        for segments, fields in self._checks:
            got = resolve_batch(segments, structs, np.zeros(len(structs), np.int64)) if segments else (structs,)
            if got is None:
                return True
            rest = got[0]
            for name in fields:  # those with no field set so far
                if not rest:
                    break
                rest = list(compress(rest, map(is_, map(attrgetter(name), rest), repeat(None))))
            if rest:
                return True
        return False

    def many(self, payloads: list[bytes]) -> tuple[list[Any], np.ndarray | None] | None:
        """``(structs, kept)``: the structs of the payloads the channel's filter keeps and which
        those are (a bool mask; None: all of them), or None when a payload does not fit the tree
        (then decode the batch with the plain JSON decoder, and filter downstream)."""
        try:
            if self._head is None:
                structs, kept = list(map(self._decode, payloads)), None
            else:
                keep = self._keep(list(map(self._head, payloads)))  # type: ignore[misc]
                structs, kept = list(map(self._decode, compress(payloads, keep))), np.array(keep, bool)
        except msgspec.DecodeError:  # ValidationError included
            return None
        return None if self._checks and self._unsure(structs) else (structs, kept)


def channel_decoders(raw_map: Mapping[str, Any]) -> dict[str, StructDecoder]:
    """A :class:`StructDecoder` per channel of a (validated) channel map whose payloads can be
    read as structs (JSON ones; the others never ask)."""
    context_paths: dict[str, list[str]] = {}
    for sources in (raw_map.get("context") or {}).values():
        for x in sources if isinstance(sources, list) else [sources]:
            context_paths.setdefault(x["channel"], []).append(x["path"])
    out: dict[str, StructDecoder] = {}
    for k, (channel, spec) in enumerate(raw_map["channels"].items()):
        checks: list[Presence] = []
        root = struct_type(spec, context_paths.get(channel, ()), f"Channel{k}", checks)
        if root is None:
            continue
        head = struct_type({"where": spec["where"]}, (), f"Channel{k}Head") if spec.get("where") else None
        keep = compile_filter(spec["where"]).batch if head is not None else None  # type: ignore[attr-defined]
        out[channel] = StructDecoder(root, head, keep, checks)
    return out


__all__ = ["StructDecoder", "channel_decoders", "field_tree", "struct_type"]
