"""The V2X knowledge base of grounding: data files beside this module, merged with the core catalogue.

Files (versioned, ``*.v1.json``): ``applications`` (prose per application),
``faults`` (per fault operator and per failure class), ``messages`` (J2735 fields
per stream), ``behaviours`` (IDM parameters per driver profile), ``concepts``
(decision epoch, admission, blockage, ...). Every figure that also lives in
``lastv2x.core.catalogue`` (consumed streams and fields, freshness budgets,
decision rules, operator kinds, stream periods) is taken from there at load time,
never from the files, so the knowledge base cannot disagree with the verifier. Every
registered application and fault operator has a note built from its catalogue entry
(a plug-in registered after import included: ``load_knowledge`` is keyed on the
registries); the files only add prose by name, and a name with none still has a note.

``load_knowledge()`` returns a :class:`KnowledgeBase` of :class:`Note` documents,
each with the text the retrieval index embeds and structured ``facts``.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from lastv2x.core.catalogue import (
    APPLICATIONS,
    FAULT_OPERATORS,
    STREAMS,
    FailureClass,
    Stream,
)
from lastv2x.core.spec import DriverProfile

DEFAULT_VERSION = "v1"
KINDS = ("knowledge", "behaviours")


@dataclass(frozen=True)
class Note:
    id: str  # "app:RLVW", "fault:freeze", "family:fresh_but_wrong", "msg:SPAT", "concept:...", "profile:normal"
    kind: str  # "knowledge" or "behaviours"
    title: str
    text: str  # what the index embeds
    facts: dict[str, Any] = field(default_factory=dict)
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class BehaviourProfile:
    id: str
    desired_speed_factor: float
    time_gap_s: float
    min_gap_m: float
    accel_max_mps2: float
    decel_comfort_mps2: float
    reaction_time_s: float
    decel_emergency_mps2: float  # the hardest the driver brakes for what it perceives


@dataclass(frozen=True)
class KnowledgeBase:
    version: str
    notes: tuple[Note, ...]
    profiles: dict[str, BehaviourProfile]

    def of_kind(self, kind: str) -> tuple[Note, ...]:
        return tuple(n for n in self.notes if n.kind == kind)

    def get(self, note_id: str) -> Note:
        for n in self.notes:
            if n.id == note_id:
                return n
        raise KeyError(note_id)


def _read(name: str, version: str) -> dict[str, Any]:
    text = resources.files(__package__).joinpath(f"{name}.{version}.json").read_text(encoding="utf-8")
    return json.loads(text)


def _prose(entries: list[dict[str, Any]], registered: list[str], what: str) -> dict[str, dict[str, Any]]:
    """The data file's prose by name: optional per registered name (a plug-in has none), refused for a name
    the catalogue does not register (a typo or a removed entry)."""
    prose = {e["id"]: e for e in entries}
    extra = sorted(set(prose) - set(registered))
    if extra:
        raise ValueError(f"{what} knowledge names what the catalogue does not register: {extra}")
    return prose


def _cue_words(cue: str) -> str:
    """A wording cue (a regular expression) as the words it matches: ``\\bzzblur\\w*`` -> ``zzblur``."""
    return " ".join(re.sub(r"\\[bBwWsSdD][*+?]?|\(\?:|[()\[\]{}^$*+?|.]", " ", cue).split())


def _apps(data: dict[str, Any]) -> list[Note]:
    """One note per registered application, built from its catalogue entry; the file adds prose (summary,
    geometry, what breaks it, grounding advice, sources) where it has some."""
    prose = _prose(data["applications"], [a.value for a in APPLICATIONS], "applications")
    out = []
    for info in APPLICATIONS.values():
        name = info.name.value
        p = prose.get(name, {})
        consumes = {s.value: list(f) for s, f in info.consumes.items()}
        streams = ", ".join(f"{s} ({', '.join(f)})" for s, f in consumes.items())
        summary = f" {p['summary']}" if "summary" in p else ""
        extra = "".join(f" {label}: {p[key]}" for label, key in (("Geometry", "geometry"),
                                                                  ("What breaks it", "what_breaks_it")) if key in p)
        text = (f"{info.title} ({name}), a {info.kind.value} application.{summary} "
                f"Consumes {streams}. Freshness budget {info.freshness_budget_s} s. Decision rule: {info.decision_rule} "
                f"Violation: {info.violation}{extra} "
                f"Also called: {', '.join(info.synonyms)}.")
        facts = {"application": name, "kind": info.kind.value, "consumes": consumes,
                 "freshness_budget_s": info.freshness_budget_s, "decision_rule": info.decision_rule,
                 "violation": info.violation, "required_roles": list(info.required_roles),
                 "ego_maneuvers": list(info.ego_maneuvers)}
        if "grounding" in p:
            facts["grounding"] = p["grounding"]
        out.append(Note(f"app:{name}", "knowledge", info.title, text, facts, tuple(p.get("sources", ()))))
    return out


def _faults(data: dict[str, Any]) -> list[Note]:
    """One note per registered fault operator, built from its catalogue entry (kind, failure class,
    description, streams, field, magnitude, wording cues); the file adds prose (what it breaks, how to
    anchor it, an example) where it has some. Then one note per failure class."""
    prose = _prose(data["operators"], list(FAULT_OPERATORS), "fault")
    sources = tuple(data.get("sources", ()))
    out = []
    for info in FAULT_OPERATORS.values():
        name, p = info.name, prose.get(info.name, {})
        unit = f" magnitude in {info.magnitude_unit} over {list(info.magnitude_range)}" if info.magnitude_range else ""
        extra = "".join(f" {label}: {p[key]}" for label, key in (("What it breaks", "breaks"),
                                                                  ("How to anchor it", "anchor")) if key in p)
        extra += f" Example: {p['example']}." if "example" in p else ""
        extra += f" Also called: {', '.join(_cue_words(c) for c in info.cues)}." if info.cues else ""
        text = (f"Fault operator {name.replace('_', ' ')} ({info.kind.value}, {info.failure_class.value.replace('_', ' ')}): "
                f"{info.description} Targets {', '.join(s.value for s in info.streams)}, field {info.default_field}.{unit}"
                f"{extra}")
        facts = {"operator": name, "kind": info.kind.value, "failure_class": info.failure_class.value,
                 "streams": [s.value for s in info.streams], "default_field": info.default_field,
                 "magnitude_unit": info.magnitude_unit,
                 "magnitude_range": list(info.magnitude_range) if info.magnitude_range else None,
                 "requires_sender": info.requires_sender}
        facts.update({key: p[key] for key in ("breaks", "anchor") if key in p})
        out.append(Note(f"fault:{name}", "knowledge", f"Fault operator {name}", text, facts,
                        sources if p else ()))
    fam = {f["id"]: f for f in data["families"]}
    if set(fam) != {c.value for c in FailureClass}:
        raise ValueError("fault families must be exactly the failure classes of the catalogue")
    for cls in FailureClass:
        p = fam[cls.value]
        ops = [n for n in FAULT_OPERATORS if FAULT_OPERATORS[n].failure_class is cls]
        text = (f"Fault family {p['title']} ({cls.value}): {p['what']} Operators: {', '.join(ops)} "
                f"({p['operators_note']}). How to anchor it: {p['anchor']}")
        out.append(Note(f"family:{cls.value}", "knowledge", p["title"], text,
                        {"failure_class": cls.value, "operators": ops, "anchor": p["anchor"]}, sources))
    return out


def _messages(data: dict[str, Any]) -> list[Note]:
    prose = {m["id"]: m for m in data["messages"]}
    if set(prose) != {s.value for s in Stream}:
        raise ValueError("message knowledge must cover exactly the catalogue's streams")
    out = []
    for s in Stream:
        info, p = STREAMS[s], prose[s.value]
        text = (f"{p['j2735_name']} ({s.value} message). {p['text']} {info.description}. Sent by the {info.sender} every "
                f"{info.period_s} s. {p['rate_note']} J2735 fields: {'; '.join(p['j2735_fields'])}. "
                f"Platform fields: {', '.join(info.fields)}.")
        facts = {"stream": s.value, "period_s": info.period_s, "sender": info.sender, "fields": list(info.fields),
                 "j2735_name": p["j2735_name"], "j2735_fields": list(p["j2735_fields"])}
        out.append(Note(f"msg:{s.value}", "knowledge", p["j2735_name"], text, facts, tuple(p.get("sources", ()))))
    return out


def _concepts(data: dict[str, Any]) -> list[Note]:
    return [Note(f"concept:{c['id']}", "knowledge", c["title"], f"{c['title']}. {c['text']}", {},
                 tuple(c.get("sources", ()))) for c in data["concepts"]]


_PARAMS = ("desired_speed_factor", "time_gap_s", "min_gap_m", "accel_max_mps2", "decel_comfort_mps2",
           "reaction_time_s", "decel_emergency_mps2")


def _behaviours(data: dict[str, Any]) -> tuple[list[Note], dict[str, BehaviourProfile]]:
    prose = {p["id"]: p for p in data["profiles"]}
    if set(prose) != {d.value for d in DriverProfile}:
        raise ValueError("behaviour profiles must be exactly the spec's driver profiles")
    sources = tuple(data["model"].get("sources", ()))
    notes, profiles = [], {}
    for d in DriverProfile:
        p = prose[d.value]
        prof = BehaviourProfile(d.value, *(float(p[k]) for k in _PARAMS))
        profiles[d.value] = prof
        text = (f"{p['title']} ({d.value} driver profile). {p['text']} IDM parameters: time gap {prof.time_gap_s} s, "
                f"minimum gap {prof.min_gap_m} m, maximum acceleration {prof.accel_max_mps2} m/s^2, comfortable "
                f"deceleration {prof.decel_comfort_mps2} m/s^2, emergency braking for a hazard it sees "
                f"{prof.decel_emergency_mps2} m/s^2, reaction time {prof.reaction_time_s} s, desired speed "
                f"{prof.desired_speed_factor} x the speed limit.")
        facts = {"profile": d.value, **{k: getattr(prof, k) for k in _PARAMS}, "model": data["model"]["name"]}
        notes.append(Note(f"profile:{d.value}", "behaviours", p["title"], text, facts, sources))
    return notes, profiles


_LOADED: dict[tuple[str, tuple[str, ...]], tuple[tuple[object, ...], KnowledgeBase]] = {}
_LOAD_LOCK = threading.Lock()


def load_knowledge(version: str = DEFAULT_VERSION) -> KnowledgeBase:
    """The knowledge base for the catalogue as registered now: built once per set of registered applications
    and fault operators (the same entry objects give the same :class:`KnowledgeBase` object), so one
    registered later (a plug-in) gets its notes and the built-in set gets its own base back afterwards."""
    entries: tuple[object, ...] = (*APPLICATIONS.values(), *FAULT_OPERATORS.values())
    key = (version, tuple(map(str, APPLICATIONS)) + ("|",) + tuple(FAULT_OPERATORS))
    with _LOAD_LOCK:
        hit = _LOADED.get(key)
        if hit is not None and len(hit[0]) == len(entries) and all(
                a is b for a, b in zip(hit[0], entries, strict=True)):
            return hit[1]
        kb = _build(version)
        _LOADED[key] = (entries, kb)
        return kb


def _build(version: str) -> KnowledgeBase:
    notes = _apps(_read("applications", version)) + _faults(_read("faults", version))
    notes += _messages(_read("messages", version)) + _concepts(_read("concepts", version))
    bnotes, profiles = _behaviours(_read("behaviours", version))
    notes += bnotes
    ids = [n.id for n in notes]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"duplicate knowledge ids {dupes}")
    return KnowledgeBase(version, tuple(notes), profiles)


__all__ = ["BehaviourProfile", "KnowledgeBase", "Note", "load_knowledge"]
