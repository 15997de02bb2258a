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

from .errors import SchemaError
from .extract import (
    RuleFn,
    compile_classify_rule,
    compile_filter,
    compile_path,
    compile_value_rule,
    context_names,
)

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


def _read_json(name_or_path: str | Path, prefix: str) -> dict[str, Any]:
    p = Path(name_or_path)
    if not p.suffix:
        p = SCHEMA_DIR / f"{prefix}{name_or_path}.json"
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise SchemaError(f"no such schema/map file: {p}") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{p}: invalid JSON: {exc}") from exc


@cache
def load_schema(name_or_path: str = "driving_scene") -> SceneSchema:
    """Load a schema by name (from ``schemas/``) or path."""
    raw = _read_json(name_or_path, "")
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


def _compile_channel(schema: SceneSchema, channel: str, spec: Mapping[str, Any],
                     uses: dict[str, set[str]] | None = None):
    compiled = []
    for i, rule in enumerate(spec.get("rules", [])):
        where = f"{channel} rule {i}"
        refs = set(context_names(rule))
        for prop in (rule.get("properties") or {}).values():
            for sub in prop if isinstance(prop, list) else [prop]:
                refs |= context_names(sub)
        if "classify" in rule:
            feats, fn = compile_classify_rule(rule, schema.vocab, where)
            compiled.append((tuple(feats), fn))
        elif "feature" in rule:
            feat = rule["feature"]
            compiled.append(((feat,), _single(feat, compile_value_rule(rule, schema.vocab(feat), where))))
        else:
            raise SchemaError(f"{where}: needs 'feature' or 'classify'")
        if uses is not None:
            for f in compiled[-1][0]:
                uses.setdefault(f, set()).update(refs)
    return compiled


def channel_map_for(recording_format: str) -> str:
    """The built-in channel map a recording of this format is read with (the one rule):
    Apollo Cyber records (``cyber``) -> ``apollo``; every other format (the platform's own
    MCAP traces, MCAP, ROS bags) -> ``platform``."""
    return "apollo" if recording_format == "cyber" else "platform"


@cache
def load_channel_map(name_or_path: str = "platform") -> ChannelMap:
    """Load ``schemas/channels_<name>.json`` (or a path) against its schema."""
    raw = _read_json(name_or_path, "channels_")
    schema = load_schema(raw.get("schema", "driving_scene"))
    producer: dict[str, str] = {}
    rules: dict[str, tuple] = {}
    uses: dict[str, set[str]] = {}
    filters: dict[str, Callable[[Any], bool]] = {}
    intervals: dict[str, tuple[Callable[[Any], list[Any]], Callable[[Any], list[Any]]]] = {}
    optional = frozenset(ch for ch, spec in raw["channels"].items() if spec.get("optional"))
    for channel, spec in raw["channels"].items():
        if spec.get("where"):
            filters[channel] = compile_filter(spec["where"])
        if spec.get("interval"):
            iv = spec["interval"]
            if not isinstance(iv, Mapping) or "start" not in iv or "end" not in iv:
                raise SchemaError(f"{channel}: 'interval' needs 'start' and 'end' paths")
            intervals[channel] = (compile_path(iv["start"]), compile_path(iv["end"]))
        compiled = _compile_channel(schema, channel, spec, uses)
        for feats, _fn in compiled:
            for f in feats:
                schema.vocab(f)
                if producer.get(f, channel) != channel:
                    raise SchemaError(f"feature {f!r} produced by both {producer[f]} and {channel}")
                producer[f] = channel
        rules[channel] = tuple(compiled)
    channel_features = {
        ch: tuple(f for f in schema.features if producer.get(f) == ch) for ch in raw["channels"]
    }
    derived = []
    for d in raw.get("derived", []):
        item = Derived(d["feature"], d["op"], tuple(d["inputs"]))
        schema.vocab(item.feature)
        missing = [x for x in item.inputs if x not in producer]
        if missing or item.op not in ("differ", "any"):
            raise SchemaError(f"derived {item.feature}: bad op or unproduced inputs {missing}")
        if item.op == "differ" and len({schema.vocab(x) for x in item.inputs}) != 1:
            raise SchemaError(f"derived {item.feature}: 'differ' inputs need one vocabulary")
        derived.append(item)
    modules = {}
    for mod, spec in raw.get("modules", {}).items():
        modules[mod] = frozenset(spec.get("publishes", [])) | frozenset(spec.get("subscribes", []))
    context: dict[str, tuple[tuple[str, Callable[[Any], list[Any]]], ...]] = {}
    for name, sources in (raw.get("context") or {}).items():
        sources = sources if isinstance(sources, list) else [sources]
        if not sources or not all(isinstance(x, Mapping) and "channel" in x and "path" in x for x in sources):
            raise SchemaError(f"context {name!r}: needs a list of {{channel, path}} sources")
        context[name] = tuple((x["channel"], compile_path(x["path"])) for x in sources)
    unknown = sorted({n for refs in uses.values() for n in refs} - set(context))
    if unknown:
        raise SchemaError(f"rules refer to undeclared context values {unknown}")
    feature_context = {f: frozenset(refs) for f, refs in uses.items() if refs}
    return ChannelMap(raw["name"], schema, producer, channel_features, rules, modules, tuple(derived),
                      filters, intervals, context, feature_context, optional)
