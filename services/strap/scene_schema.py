"""Driving-scene schema and channel maps: loading, validation, feature layout.

The schema (``schemas/driving_scene.json``) is STRaP Fig. 4 as data: a scene is
a list of objects — dynamic ``<actor, action>`` (vehicle: truck/car/bus/van,
pedestrian, cyclist: bicyclist/motorcyclist/tricyclist, unknown), static
objects (traffic light ``<color, shape, orientation>``, stop sign, crosswalk,
intersection, traffic cone, unknown) — plus the V2X extension objects our
platform needs (ego, signal belief, AoI, tracks, V2X links, application
decision, divergence).  Flattening is fixed by the schema's *object order*:
each object contributes a presence feature ``"<object>"`` (code 1 = present)
followed by one feature per property ``"<object>.<property>"``; label encoding
is the 1-based position in the property's vocabulary and **0 = none**.

A channel map (``schemas/channels_<name>.json``) says which channel produces
which features (see :mod:`services.strap.extract` for the rule language), which
modules publish/subscribe which channels, and derived cross-channel features.
Each feature has exactly one producer, so *retention* is well defined: for a
set of updated modules we keep the features produced by channels those modules
publish or subscribe, the always-kept objects (stop sign, intersection,
crosswalk) and derived features with a retained input.

Three channel-map facilities serve recordings where one channel carries
several streams or states that hold over time (the platform's own traces):

* a channel's ``"where"`` **filter** keeps only matching messages, e.g.
  ``{"rollout": "md"}`` where both rollouts of a paired execution share a
  channel; filtered-out messages do not exist for alignment either;
* a channel's ``"interval": {"start": path, "end": path}`` makes each message
  an *episode*: its features hold from the message's timestamp for
  ``end - start`` seconds (open-ended when ``end`` is missing), overlapping
  episodes combine by ``max`` and the channel is *none* between episodes;
* a channel marked ``"optional": true`` publishes only when something happens
  (the monitor's episodes): its absence from a recording means *none*, not a
  missing channel;
* top-level ``"context"`` values, e.g. ``{"ego_group": [{"channel": "/recon/ego",
  "path": "ego_group_id"}]}``, hold the latest value a channel published (first
  non-empty source wins) and let rules of *other* channels select by it
  (``"where": {"id": "$ego_group"}``); messages with equal timestamps feed the
  context before any of them is extracted, so stream order does not matter.

Everything is validated at load time (unknown features/labels/modules,
duplicate producers) and raises :class:`~services.strap.errors.SchemaError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .columns import BatchFn, batch_rule
from .errors import SchemaError
from .extract import (
    RuleFn,
    compile_classify_rule,
    compile_filter,
    compile_path,
    compile_value_rule,
    context_names,
)
from .json_structs import StructDecoder, channel_decoders
from .map_schema import check_map_limits, check_map_text, json_path, map_error, validate_map_json

SCHEMA_DIR = Path(__file__).with_name("schemas")
PRESENT = ("present",)


@dataclass(frozen=True)
class SceneSchema:
    """Ordered features of the driving-scene schema with their vocabularies."""

    name: str
    features: tuple[str, ...]
    vocabularies: Mapping[str, tuple[str, ...]]
    objects: tuple[str, ...]
    always_kept: tuple[str, ...]

    def vocab(self, feature: str) -> tuple[str, ...]:
        try:
            return self.vocabularies[feature]
        except KeyError:
            raise SchemaError(f"feature {feature!r} is not in schema {self.name!r}") from None

    def object_of(self, feature: str) -> str:
        return feature if feature in self.objects else feature.rsplit(".", 1)[0]

    def decode(self, feature: str, code: int) -> str | None:
        """Label of ``code`` (``None`` for 0), for reports and debugging."""
        return None if code == 0 else self.vocab(feature)[code - 1]


def _read_json(name_or_path: str | Path, prefix: str) -> tuple[dict[str, Any], str]:
    """(parsed JSON, origin for messages): a built-in ``name`` from ``schemas/`` or a path."""
    p = Path(name_or_path)
    if not p.suffix:
        p = SCHEMA_DIR / f"{prefix}{name_or_path}.json"
    try:
        return json.loads(p.read_text()), str(p)
    except FileNotFoundError:
        raise map_error(str(p), "$", "no such schema/map file",
                        f"give an existing .json file or a built-in map: {', '.join(BUILTIN_MAPS)}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise map_error(str(p), "$", f"cannot read the file: {exc}", "give a readable UTF-8 JSON file") from None
    except json.JSONDecodeError as exc:
        raise map_error(str(p), f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}",
                        "fix the JSON syntax there") from None


@cache
def load_schema(name_or_path: str = "driving_scene") -> SceneSchema:
    """Load a schema by name (from ``schemas/``) or path."""
    raw, _origin = _read_json(name_or_path, "")
    vocabs_raw: dict[str, list[str]] = raw.get("vocabularies", {})
    features: list[str] = []
    vocabularies: dict[str, tuple[str, ...]] = {}
    objects: list[str] = []
    for obj in raw["objects"]:
        name = obj["name"]
        if name in vocabularies:
            raise SchemaError(f"schema {raw['name']}: object {name!r} listed twice")
        objects.append(name)
        features.append(name)
        vocabularies[name] = PRESENT
        for prop, vocab in (obj.get("properties") or {}).items():
            labels = vocabs_raw.get(vocab) if isinstance(vocab, str) else vocab
            if not labels or len(set(labels)) != len(labels):
                raise SchemaError(f"schema {raw['name']}: {name}.{prop} has an empty or repeated vocabulary")
            features.append(f"{name}.{prop}")
            vocabularies[f"{name}.{prop}"] = tuple(labels)
    kept = tuple(raw.get("always_kept", []))
    unknown = [k for k in kept if k not in objects]
    if unknown:
        raise SchemaError(f"schema {raw['name']}: always_kept names unknown objects {unknown}")
    return SceneSchema(raw["name"], tuple(features), vocabularies, tuple(objects), kept)


@dataclass(frozen=True)
class Derived:
    feature: str
    op: str  # "differ" | "any"
    inputs: tuple[str, ...]


@dataclass(frozen=True)
class ChannelMap:
    """Compiled channel map: producers, modules, derived features (see module doc)."""

    name: str
    schema: SceneSchema
    producer: Mapping[str, str]                       # feature -> channel
    channel_features: Mapping[str, tuple[str, ...]]   # channel -> features (schema order)
    rules: Mapping[str, tuple[tuple[tuple[str, ...], RuleFn], ...]] = field(repr=False)
    modules: Mapping[str, frozenset[str]] = field(default_factory=dict)
    derived: tuple[Derived, ...] = ()
    filters: Mapping[str, Callable[[Any], bool]] = field(default_factory=dict, repr=False)
    intervals: Mapping[str, tuple[Callable[[Any], list[Any]], Callable[[Any], list[Any]]]] = field(
        default_factory=dict, repr=False)
    context: Mapping[str, tuple[tuple[str, Callable[[Any], list[Any]]], ...]] = field(
        default_factory=dict, repr=False)
    feature_context: Mapping[str, frozenset[str]] = field(default_factory=dict)  # feature -> context names
    optional: frozenset[str] = frozenset()  # channels whose absence means "nothing happened"
    formats: tuple[str, ...] = ()           # recording formats it is meant for (selection)
    origin: str = ""                        # file or "inline channel map", for messages
    #: the same rules compiled over batches of messages (services.strap.columns), what vectorize runs;
    #: JSON payloads decoded into just the fields the map reads (services.strap.json_structs)
    batch_rules: Mapping[str, tuple[tuple[tuple[str, ...], BatchFn], ...]] = field(default_factory=dict, repr=False)
    struct_decoders: Mapping[str, StructDecoder] = field(default_factory=dict, repr=False)

    @property
    def channels(self) -> tuple[str, ...]:
        return tuple(self.channel_features)

    def module_channels(self, modules: Iterable[str]) -> frozenset[str]:
        out: set[str] = set()
        for m in modules:
            if m not in self.modules:
                raise SchemaError(f"channel map {self.name!r} has no module {m!r} "
                                  f"(known: {', '.join(sorted(self.modules))})")
            out |= self.modules[m]
        return frozenset(out)

    def retained_features(self, modules: Iterable[str] | None = None) -> tuple[str, ...]:
        """Features kept for the updated ``modules`` (``None`` = all), schema order."""
        derived_names = {d.feature for d in self.derived}
        produced = set(self.producer) | derived_names
        if modules is None:
            keep = produced
        else:
            chans = self.module_channels(list(modules))
            keep = {f for f, ch in self.producer.items() if ch in chans}
            keep |= {f for f in produced if self.schema.object_of(f) in self.schema.always_kept}
            keep |= {d.feature for d in self.derived if set(d.inputs) & keep}
        return tuple(f for f in self.schema.features if f in keep)

    def required_channels(self, features: Sequence[str]) -> tuple[str, ...]:
        """Channels needed to compute ``features`` (derived inputs included)."""
        need: set[str] = set()
        by_name = {d.feature: d for d in self.derived}
        for f in features:
            for g in by_name[f].inputs if f in by_name else (f,):
                need.add(self.producer[g])
        return tuple(ch for ch in self.channel_features if ch in need)

    def context_channels(self, features: Sequence[str]) -> tuple[str, ...]:
        """Channels that feed the context values the rules of ``features`` select by
        (streamed when present; an absent one just leaves its value empty)."""
        by_name = {d.feature: d for d in self.derived}
        names: set[str] = set()
        for f in features:
            for g in by_name[f].inputs if f in by_name else (f,):
                names |= self.feature_context.get(g, frozenset())
        chans = {ch for n in sorted(names) for ch, _ in self.context[n]}
        return tuple(sorted(chans))


def _single(feature: str, value_fn) -> RuleFn:
    def rule(msg: Any, ctx: Mapping[str, Any]) -> list[tuple[str, int]]:
        return [(feature, value_fn(msg, ctx))]
    return rule


def _compile_channel(schema: SceneSchema, channel: str, spec: Mapping[str, Any], origin: str,
                     uses: dict[str, set[str]] | None = None, batched: list | None = None):
    compiled = []
    for i, rule in enumerate(spec.get("rules", [])):
        where = f"{origin}: {json_path(['channels', channel, 'rules', i])}"
        refs = set(context_names(rule))
        for prop in (rule.get("properties") or {}).values():
            for sub in prop if isinstance(prop, list) else [prop]:
                refs |= context_names(sub)
        try:
            if "classify" in rule:
                feats, fn = compile_classify_rule(rule, schema.vocab, where)
                compiled.append((tuple(feats), fn))
            elif "feature" in rule:
                feat = rule["feature"]
                compiled.append(((feat,), _single(feat, compile_value_rule(rule, schema.vocab(feat), where))))
            else:
                raise SchemaError(f"{where}: needs 'feature' or 'classify'")
            if batched is not None:
                batched.append(batch_rule(rule, schema.vocab, where))
        except SchemaError as exc:
            msg = str(exc)
            raise SchemaError(msg if msg.startswith(origin) else f"{where}: {msg}") from None
        if uses is not None:
            for f in compiled[-1][0]:
                uses.setdefault(f, set()).update(refs)
    return compiled


#: the built-in channel maps (``schemas/channels_<name>.json``), in selection tie order
BUILTIN_MAPS = ("platform", "apollo", "autoware")


@cache
def load_channel_map(name_or_path: str = "platform") -> ChannelMap:
    """Load ``schemas/channels_<name>.json`` (or a path), validated and compiled."""
    raw, origin = _read_json(name_or_path, "channels_")
    return compile_channel_map(raw, origin)


def compile_channel_map(raw: Any, origin: str = "inline channel map") -> ChannelMap:
    """Validate a parsed channel map (JSON Schema, then what a schema cannot say) and
    compile it. Errors are :class:`SchemaError` s naming ``origin`` and the JSON path."""
    if not isinstance(raw, Mapping):
        raise map_error(origin, "$", f"a channel map is a JSON object, not {type(raw).__name__}",
                        "see `lastv2x strap schema`")
    scene = raw.get("schema", "driving_scene")
    if not isinstance(scene, str) or not scene.isidentifier() or not (SCHEMA_DIR / f"{scene}.json").is_file():
        raise map_error(origin, "$.schema", f"unknown scene schema {scene!r}", "use \"driving_scene\" or omit it")
    schema = load_schema(scene)
    check_map_limits(raw, origin)  # before the JSON Schema walks 20,000 rules
    validate_map_json(raw, schema, origin)
    producer: dict[str, str] = {}
    rules: dict[str, tuple] = {}
    batch_rules: dict[str, tuple] = {}
    uses: dict[str, set[str]] = {}
    filters: dict[str, Callable[[Any], bool]] = {}
    intervals: dict[str, tuple[Callable[[Any], list[Any]], Callable[[Any], list[Any]]]] = {}
    optional = frozenset(ch for ch, spec in raw["channels"].items() if spec.get("optional"))
    for channel, spec in raw["channels"].items():
        here = json_path(["channels", channel])
        try:
            if spec.get("where"):
                filters[channel] = compile_filter(spec["where"])
            if spec.get("interval"):
                iv = spec["interval"]
                intervals[channel] = (compile_path(iv["start"]), compile_path(iv["end"]))
        except SchemaError as exc:
            raise map_error(origin, here, str(exc), "a channel's where/interval takes field paths and constants"
                            ) from None
        batched: list = []
        compiled = _compile_channel(schema, channel, spec, origin, uses, batched)
        batch_rules[channel] = tuple(batched)
        for k, (feats, _fn) in enumerate(compiled):
            for f in feats:
                if producer.get(f, channel) != channel:
                    raise map_error(origin, json_path(["channels", channel, "rules", k]),
                                    f"feature {f!r} produced by both {producer[f]} and {channel}",
                                    "each feature has one producing channel: drop one of the rules")
                producer[f] = channel
        rules[channel] = tuple(compiled)
    channel_features = {
        ch: tuple(f for f in schema.features if producer.get(f) == ch) for ch in raw["channels"]
    }
    derived = []
    for i, d in enumerate(raw.get("derived", [])):
        item = Derived(d["feature"], d["op"], tuple(d["inputs"]))
        missing = [x for x in item.inputs if x not in producer]
        if missing:
            raise map_error(origin, json_path(["derived", i, "inputs"]), f"unproduced inputs {missing}",
                            "add rules producing them or drop the derived feature")
        if item.op == "differ" and len({schema.vocab(x) for x in item.inputs}) != 1:
            raise map_error(origin, json_path(["derived", i, "inputs"]), "'differ' inputs have different "
                            "vocabularies", "compare features of one vocabulary (e.g. two colors)")
        derived.append(item)
    modules = {}
    for mod, spec in raw.get("modules", {}).items():
        modules[mod] = frozenset(spec.get("publishes", [])) | frozenset(spec.get("subscribes", []))
    context: dict[str, tuple[tuple[str, Callable[[Any], list[Any]]], ...]] = {}
    for name, sources in (raw.get("context") or {}).items():
        sources = sources if isinstance(sources, list) else [sources]
        context[name] = tuple((x["channel"], compile_path(x["path"])) for x in sources)
    unknown = sorted({n for refs in uses.values() for n in refs} - set(context))
    if unknown:
        raise map_error(origin, "$.context", f"rules refer to undeclared context values {unknown}",
                        "declare them under \"context\" as {\"name\": [{\"channel\": ..., \"path\": ...}]}")
    feature_context = {f: frozenset(refs) for f, refs in uses.items() if refs}
    return ChannelMap(raw["name"], schema, producer, channel_features, rules, modules, tuple(derived),
                      filters, intervals, context, feature_context, optional,
                      tuple(raw.get("formats", ())), origin, batch_rules, channel_decoders(raw))


# -- which map reads a recording: the one selection rule ----------------------------------
def resolve_channel_map(spec: str | Mapping[str, Any] | ChannelMap, *, allow_files: bool = True) -> ChannelMap:
    """An explicit map: a :class:`ChannelMap`, a parsed JSON object, inline JSON text
    (``{...}``), a built-in name, or (``allow_files``: the CLI, not the service) a file path."""
    if isinstance(spec, ChannelMap):
        return spec
    if isinstance(spec, Mapping):
        return compile_channel_map(spec)
    text = spec.strip()
    if text.startswith("{"):
        check_map_text(text, "inline channel map")  # size and depth before json.loads allocates anything
        try:
            return compile_channel_map(json.loads(text))
        except json.JSONDecodeError as exc:
            raise map_error("inline channel map", f"line {exc.lineno} column {exc.colno}",
                            f"invalid JSON: {exc.msg}", "send one JSON object (see `lastv2x strap schema`)") from None
    if text in BUILTIN_MAPS:
        return load_channel_map(text)
    if allow_files and (text.endswith(".json") or "/" in text):
        return load_channel_map(text)
    files = ", a .json file" if allow_files else ""
    raise map_error("channel map", "$", f"unknown channel map {text!r}",
                    f"give a built-in map ({', '.join(BUILTIN_MAPS)}){files} or inline JSON")


def map_coverage(cmap: ChannelMap, channels: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(present, absent) among the map's non-optional channels, map order."""
    have = set(channels)
    needed = [ch for ch in cmap.channels if ch not in cmap.optional]
    return tuple(ch for ch in needed if ch in have), tuple(ch for ch in needed if ch not in have)


def select_channel_map(spec: str | Mapping[str, Any] | ChannelMap | None, recording_format: str,
                       channels: Iterable[str], *, allow_files: bool = True) -> ChannelMap:
    """THE rule choosing the map a recording is read with (CLI, store and pipeline alike):

    1. an explicit ``spec`` (:func:`resolve_channel_map`) wins;
    2. else the built-in map with the largest share of its (non-optional) channels present
       in the recording; ties: the one whose ``formats`` include the recording's format,
       then more channels present, then :data:`BUILTIN_MAPS` order;
    3. else (no built-in map has any of its channels there) a :class:`SchemaError` listing
       every built-in map and the channels it needs, and how to give a map.
    """
    if spec:
        return resolve_channel_map(spec, allow_files=allow_files)
    have = set(channels)
    best: tuple[tuple, ChannelMap] | None = None
    for rank, name in enumerate(BUILTIN_MAPS):
        cmap = load_channel_map(name)
        present, absent = map_coverage(cmap, have)
        if not present:
            continue
        key = (len(present) / (len(present) + len(absent)), recording_format in cmap.formats, len(present), -rank)
        if best is None or key > best[0]:
            best = (key, cmap)
    if best is not None:
        return best[1]
    needs = "; ".join(f"{n} ({'/'.join(load_channel_map(n).formats)}) reads "
                      f"{', '.join(map_coverage(load_channel_map(n), ())[1])}" for n in BUILTIN_MAPS)
    shown = ", ".join(sorted(have)[:8]) + (" ..." if len(have) > 8 else "")
    raise SchemaError(f"the recording's channels ({shown or 'none'}) match no built-in map: {needs}; fix: give "
                      "your own channel map (lastv2x strap --channel-map FILE, or channel_map as inline JSON on "
                      "Ingest / Reduce; `lastv2x strap schema` prints its JSON Schema)")
