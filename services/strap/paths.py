"""Field paths of channel-map rules, compiled once: ``"a.b"``, ``"items[*].x"``,
``"v[1:]"``, ``"v[-1]"``, ``"?oneof"`` over dicts (JSON), protobuf messages and rosbags
dataclasses alike (see :mod:`services.strap.extract` for the language). Dotted and
``items[*].field`` paths over dicts have specialised resolvers (the JSON hot path);
everything else takes the general walk, which they fall back to for other payloads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import repeat
from operator import attrgetter
from typing import Any

from google.protobuf.message import Message as ProtoMessage

from .errors import SchemaError

_MISSING = object()
try:
    from msgspec import Struct as _STRUCT
except ImportError:  # pragma: no cover - msgspec is in the recordings extra
    class _STRUCT:  # type: ignore[no-redef]  # nothing is an instance
        pass
_PART = re.compile(r"^(?P<name>[^\[\]]*)(?:\[(?P<sub>\*|-?\d+|-?\d*:-?\d*)\])?$")
# Field facts per (descriptor, field name).  Keyed by the descriptor object itself
# (a strong reference, so an id can never be reused by another recording's pool);
# bounded so that many recordings cannot grow it without limit.
_FIELD_CACHE: dict[tuple[Any, str], tuple[Any, bool, bool, Any]] = {}
_FIELD_CACHE_MAX = 20_000


def _proto_field(msg: ProtoMessage, name: str) -> Any:
    desc = msg.DESCRIPTOR
    key = (desc, name)
    info = _FIELD_CACHE.get(key)
    if info is None:
        if len(_FIELD_CACHE) >= _FIELD_CACHE_MAX:
            _FIELD_CACHE.clear()
        fd = desc.fields_by_name.get(name)
        if fd is None:
            info = (None, False, False, None)
        else:
            repeated = bool(fd.is_repeated)
            presence = (not repeated) and fd.has_presence
            info = (fd, repeated, presence, fd.enum_type)
        _FIELD_CACHE[key] = info
    fd, repeated, presence, enum_type = info
    if fd is None or (presence and not msg.HasField(name)):
        return _MISSING
    value = getattr(msg, name)
    if enum_type is not None:
        names = enum_type.values_by_number
        if repeated:
            return [names[v].name if v in names else v for v in value]
        return names[value].name if value in names else value
    return value


def _child(value: Any, name: str) -> Any:
    if name.startswith("?"):
        if isinstance(value, ProtoMessage):
            try:
                which = value.WhichOneof(name[1:])
            except ValueError:
                return _MISSING
            return which if which is not None else _MISSING
        return _MISSING
    if isinstance(value, dict):
        return value.get(name, _MISSING)
    if isinstance(value, ProtoMessage):
        return _proto_field(value, name)
    return getattr(value, name, _MISSING)


def field_column(values: list[Any], name: str) -> list[Any] | None:
    """Field ``name`` of every value: dicts by ``dict.get``, decoded structs
    (:mod:`services.strap.json_structs`) by attribute; ``None`` for anything else or a mix (a
    struct never has a field named like a dict attribute, so a dict among structs fails too).
    Every name a path uses on a struct is one of its fields (the struct was built from the paths)."""
    try:  # dicts (JSON) only: dict.get refuses anything else (protobuf messages, rosbags dataclasses)
        return list(map(dict.get, values, repeat(name)))
    except TypeError:
        pass
    if not isinstance(values[0], _STRUCT):
        return None
    try:
        return list(map(attrgetter(name), values))
    except AttributeError:
        return None


def all_str(values: list[Any]) -> bool:
    """Whether every value is a ``str`` (then a column test can run as one C-level map)."""
    return set(map(type, values)) <= _ONLY_STR


_ONLY_STR = frozenset({str})


def _is_sequence(value: Any) -> bool:
    if isinstance(value, (str, bytes, dict, ProtoMessage)):
        return False
    return hasattr(value, "__len__") and hasattr(value, "__getitem__")


def _parse_part(part: str) -> tuple[str, str, Any]:
    """``name`` / ``name[*]`` / ``name[k]`` / ``name[a:b]`` → (name, mode, argument)."""
    m = _PART.match(part)
    if m is None:
        raise SchemaError(f"bad path segment {part!r}; fix: join name, name[*], name[k], name[a:b] or ?oneof "
                          "with dots")
    name, sub = m.group("name"), m.group("sub")
    if sub is None:
        return name, "one", None
    if sub == "*":
        return name, "fan", None
    if ":" in sub:
        a, b = sub.split(":")
        return name, "fan", slice(int(a) if a else None, int(b) if b else None)
    return name, "index", int(sub)


def compile_path(path: str) -> Callable[[Any], list[Any]]:
    """``path`` → function returning the list of values it resolves to."""
    segments = [_parse_part(p) for p in path.split(".") if p]

    if not segments:
        return lambda obj: [obj]
    if len(segments) == 1 and segments[0][1] == "one":
        only = segments[0][0]

        def resolve_one(obj: Any) -> list[Any]:  # the common case, kept cheap
            c = obj.get(only, _MISSING) if type(obj) is dict else _child(obj, only)
            return [] if c is _MISSING or c is None else [c]
        resolve_one.field = only  # type: ignore[attr-defined] - a batch may take field_column instead
        return resolve_one
    general = _resolve_general(segments)
    if all(mode == "one" and name and not name.startswith("?") for name, mode, _ in segments):
        names = [name for name, _, _ in segments]

        def resolve_dotted(obj: Any) -> list[Any]:  # a.b.c over dicts (JSON), else the general walk
            c = obj
            for name in names:
                if type(c) is not dict:
                    return general(obj)
                c = c.get(name)
                if c is None:
                    return []
            return [c]
        return resolve_dotted
    if not any(name.startswith("?") or not name for name, _, _ in segments):
        def resolve_json(obj: Any) -> list[Any]:  # lists / slices / indexes over dicts, else the general walk
            values = [obj]
            for name, mode, arg in segments:
                nxt: list[Any] = []
                for v in values:
                    if type(v) is not dict:
                        return general(obj)
                    c = v.get(name)
                    if c is None:
                        continue
                    if mode == "one":
                        nxt.append(c)
                    elif type(c) is not list:
                        return general(obj)
                    elif mode == "fan":
                        nxt.extend([x for x in (c if arg is None else c[arg]) if x is not None])
                    elif -len(c) <= arg < len(c) and c[arg] is not None:
                        nxt.append(c[arg])
                values = nxt
                if not values:
                    return values
            return values
        return resolve_json
    return general


def _resolve_general(segments: list[tuple[str, str, Any]]) -> Callable[[Any], list[Any]]:

    def resolve(obj: Any) -> list[Any]:
        values = [obj]
        for name, mode, arg in segments:
            nxt: list[Any] = []
            for v in values:
                if name:
                    c = v.get(name, _MISSING) if type(v) is dict else _child(v, name)
                else:
                    c = v
                if c is _MISSING or c is None:
                    continue
                if mode == "fan":
                    if _is_sequence(c):
                        items = c if arg is None else list(c)[arg]
                        nxt.extend(x for x in items if x is not None)
                    elif arg is None:
                        nxt.append(c)
                elif mode == "index":
                    if _is_sequence(c) and -len(c) <= arg < len(c) and c[arg] is not None:
                        nxt.append(c[arg])
                else:
                    nxt.append(c)
            values = nxt
            if not values:
                break
        return values

    return resolve


