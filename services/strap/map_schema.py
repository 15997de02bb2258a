"""The JSON Schema of channel maps, generated from the driving-scene schema, and
validation of a map against it with errors that name the JSON path.

A channel map is JSON (documented in :mod:`services.strap.scene_schema` and
:mod:`services.strap.extract`; docs/guides/channel-maps.md has a worked example). Its JSON Schema
(draft 2020-12) is *generated* here from the scene schema so that feature and
object names are enumerations: ``lastv2x strap schema`` prints it and
``schemas/channel_map.schema.json`` is the published copy (a test keeps the two
equal). :func:`validate_map_json` checks a parsed map against it and raises
:class:`~services.strap.errors.SchemaError` whose message reads
``"<origin>: <JSON path>: <problem>; fix: <hint>"``; what a JSON Schema cannot say
(a label outside the vocabulary of *that* feature, two producers of a feature,
undeclared context values) is checked while the map compiles, with the same form.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import SchemaError

SceneSchema = Any  # services.strap.scene_schema.SceneSchema (which imports this module)

#: recording formats a map may declare it is meant for (``Recording.format``)
FORMATS = ("platform_trace", "mcap", "ros1", "ros2", "cyber")
SCHEMA_ID = "lastv2x/strap/channel_map.schema.json"
_STR_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}}
_LABEL = {"type": ["string", "null"]}


def _where() -> dict[str, Any]:
    scalar = {"type": ["string", "number", "boolean"]}
    return {"type": "object", "description": "item field path -> allowed value(s), or \"$context\"",
            "additionalProperties": {"anyOf": [scalar, {"type": "array", "items": scalar, "minItems": 1}]}}


def _value_rule(with_feature: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "path": {"type": "string", "description": "dotted field path; name[*], name[k], name[a:b], ?oneof"},
        "op": {"enum": ["value", "exists", "count"]},
        "select": {"type": "string", "description": "path of the items the rule looks at"},
        "where": {"$ref": "#/$defs/where"},
        "map": {"type": "object", "additionalProperties": _LABEL, "description": "raw value -> label (null = none)"},
        "bands": {"type": "array", "minItems": 1, "items": {
            "type": "array", "prefixItems": [{"type": ["number", "null"]}, _LABEL], "minItems": 2, "maxItems": 2}},
        "default": _LABEL,
        "reduce": {"enum": ["max", "min", "first", "last"]},
    }
    rule: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if with_feature:
        props["feature"] = {"$ref": "#/$defs/feature"}
        rule["required"] = ["feature"]
    return rule


def channel_map_json_schema(schema: SceneSchema) -> dict[str, Any]:
    """The JSON Schema of channel maps over ``schema``'s features."""
    source = {"type": "object", "required": ["channel", "path"], "additionalProperties": False,
              "properties": {"channel": {"type": "string", "minLength": 1}, "path": {"type": "string"}}}
    prop_rule = _value_rule(False)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"LAST-V2X STRaP channel map over the {schema.name!r} scene schema",
        "description": "Which recorded channel produces which driving-scene feature, and which modules "
                       "publish/subscribe which channels (services/strap/scene_schema.py, extract.py).",
        "type": "object",
        "required": ["name", "channels"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "schema": {"const": schema.name},
            "description": {"type": "string"},
            "formats": {"type": "array", "items": {"enum": list(FORMATS)},
                        "description": "recording formats the map is meant for (selection prefers them)"},
            "context": {"type": "object", "additionalProperties": {
                "anyOf": [source, {"type": "array", "items": source, "minItems": 1}]}},
            "modules": {"type": "object", "additionalProperties": {
                "type": "object", "additionalProperties": False,
                "properties": {"publishes": _STR_LIST, "subscribes": _STR_LIST, "note": {"type": "string"}}}},
            "channels": {"type": "object", "minProperties": 1, "additionalProperties": {"$ref": "#/$defs/channel"}},
            "derived": {"type": "array", "items": {
                "type": "object", "required": ["feature", "op", "inputs"], "additionalProperties": False,
                "properties": {"feature": {"$ref": "#/$defs/feature"}, "op": {"enum": ["differ", "any"]},
                               "inputs": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/feature"}}}}},
        },
        "$defs": {
            "feature": {"enum": list(schema.features)},
            "object": {"enum": list(schema.objects)},
            "where": _where(),
            "channel": {
                "type": "object", "required": ["rules"], "additionalProperties": False,
                "properties": {
                    "rules": {"type": "array", "items": {"$ref": "#/$defs/rule"}},
                    "where": {"$ref": "#/$defs/where"},
                    "interval": {"type": "object", "required": ["start", "end"], "additionalProperties": False,
                                 "properties": {"start": {"type": "string"}, "end": {"type": "string"}}},
                    "optional": {"type": "boolean"},
                    "note": {"type": "string"},
                },
            },
            "rule": {"if": {"type": "object", "required": ["classify"]},
                     "then": {"$ref": "#/$defs/classify_rule"}, "else": {"$ref": "#/$defs/value_rule"}},
            "value_rule": _value_rule(True),
            "classify_rule": {
                "type": "object", "required": ["classify", "by", "objects"], "additionalProperties": False,
                "properties": {
                    "classify": {"type": "string"}, "by": {"type": "string"}, "where": {"$ref": "#/$defs/where"},
                    "objects": {"type": "object", "additionalProperties": {"$ref": "#/$defs/object"}},
                    "default_object": {"anyOf": [{"$ref": "#/$defs/object"}, {"type": "null"}]},
                    "presence": {"type": "boolean"},
                    "properties": {"type": "object", "additionalProperties": {
                        "anyOf": [prop_rule, {"type": "array", "items": prop_rule, "minItems": 1}]}},
                },
            },
        },
    }


def json_path(parts: Sequence[Any]) -> str:
    """``["channels", "/a", "rules", 0]`` -> ``$.channels["/a"].rules[0]``."""
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif str(p).isidentifier():
            out += f".{p}"
        else:
            out += f"[{str(p)!r}]".replace("'", '"')
    return out


def map_error(origin: str, path: str, problem: str, hint: str) -> SchemaError:
    """The one form of a channel-map error: where, what, how to fix it."""
    return SchemaError(f"{origin}: {path}: {problem}; fix: {hint}")


def _suggest(value: Any, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=3, cutoff=0.5)
    return f"did you mean {', '.join(map(repr, close))}?" if close else f"one of {len(choices)} names"


def validate_map_json(raw: Any, schema: SceneSchema, origin: str) -> None:
    """Raise the most relevant JSON Schema violation of ``raw`` as a :class:`SchemaError`."""
    import jsonschema
    from jsonschema.exceptions import best_match

    validator = jsonschema.Draft202012Validator(channel_map_json_schema(schema))
    err = best_match(validator.iter_errors(raw))
    if err is None:
        return
    path = json_path(list(err.absolute_path))
    if err.validator == "enum" and isinstance(err.validator_value, list) and len(err.validator_value) > 8:
        kind = "object" if list(err.validator_value) == list(schema.objects) else "feature"
        raise map_error(origin, path, f"unknown {kind} {err.instance!r}",
                        f"{_suggest(err.instance, err.validator_value)} (`lastv2x strap schema` lists every "
                        f"{kind} of the {schema.name!r} scene schema)")
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties") or {})
        raise map_error(origin, path, err.message, f"remove the key; allowed here: {', '.join(allowed)}")
    if err.validator == "required":
        raise map_error(origin, path, err.message, "add the key (see `lastv2x strap schema`)")
    if err.validator == "type":
        raise map_error(origin, path, f"{err.instance!r} is of the wrong type", f"use {err.validator_value}")
    raise map_error(origin, path, err.message, "see `lastv2x strap schema` for the allowed form")


#: limits of a channel map, checked before it is parsed (text) and before it is validated (rules, paths);
#: the built-in maps are at most 6.4 KB, 10 levels, 31 rules and 7 path segments deep
MAX_MAP_BYTES = 256 * 1024
MAX_MAP_DEPTH = 32
MAX_MAP_RULES = 1000
MAX_PATH_SEGMENTS = 32
_PATH_KEYS = ("path", "select", "by", "classify")


def check_map_text(text: str, origin: str) -> None:
    """Refuse a map text over MAX_MAP_BYTES or nested deeper than MAX_MAP_DEPTH before ``json.loads``
    builds anything (one pass over the characters, strings skipped)."""
    size = len(text.encode("utf-8", "surrogatepass")) if len(text) * 4 > MAX_MAP_BYTES else len(text)
    if size > MAX_MAP_BYTES:
        raise map_error(origin, "$", f"{size} bytes exceed the channel map limit of {MAX_MAP_BYTES} bytes "
                                     "(MAX_MAP_BYTES)", "a channel map is a few KB; the built-in ones are under 7 KB")
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_MAP_DEPTH:
                raise map_error(origin, "$", f"nested deeper than the channel map limit of {MAX_MAP_DEPTH} "
                                             "levels (MAX_MAP_DEPTH)",
                                "a channel map is about 10 levels deep (see `lastv2x strap schema`)")
        elif ch in "]}":
            depth -= 1


def check_map_limits(raw: Mapping[str, Any], origin: str) -> None:
    """Refuse more than MAX_MAP_RULES rules in all, or a field path of more than MAX_PATH_SEGMENTS segments,
    before the JSON Schema validation and compilation (whose cost grows with both)."""
    channels = raw.get("channels")
    if not isinstance(channels, Mapping):
        return
    total = 0
    for name, channel in channels.items():
        rules = channel.get("rules") if isinstance(channel, Mapping) else None
        if not isinstance(rules, list):
            continue
        total += len(rules)
        if total > MAX_MAP_RULES:
            raise map_error(origin, json_path(["channels", name, "rules"]),
                            f"{sum(len(c.get('rules') or []) for c in channels.values() if isinstance(c, Mapping))}"
                            f" rules in all exceed the channel map limit of {MAX_MAP_RULES} (MAX_MAP_RULES)",
                            "map only the features a module reads; the built-in maps have at most 31 rules")
        for i, rule in enumerate(rules):
            if not isinstance(rule, Mapping):
                continue
            for key in _PATH_KEYS:
                value = rule.get(key)
                if isinstance(value, str) and value.count(".") + value.count("[") + 1 > MAX_PATH_SEGMENTS:
                    raise map_error(origin, json_path(["channels", name, "rules", i, key]),
                                    f"a path of {value.count('.') + value.count('[') + 1} segments exceeds the "
                                    f"limit of {MAX_PATH_SEGMENTS} (MAX_PATH_SEGMENTS)",
                                    "name the field by a shorter path (the built-in maps use at most 7 segments)")


def check_label(origin: str, path: str, label: Any, vocab: Mapping[str, int], feature: str) -> None:
    """A label of a rule must be in its feature's vocabulary (or null)."""
    if label is not None and label not in vocab:
        raise map_error(origin, path, f"label {label!r} not in vocabulary of {feature!r} {sorted(vocab)}",
                        f"use one of those labels or null; {_suggest(label, list(vocab))}")
