"""V2X knowledge-base notes shown to the reflector: the same notes for every scenario.

The notes live in versioned data files beside this module
(``reflection_notes.v1.json``). The offline reflector's rules are keyed by note id;
an LLM reflector receives every note verbatim and may only cite known ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

DEFAULT_VERSION = "v1"


@dataclass(frozen=True)
class KnowledgeNote:
    id: str
    title: str
    mechanism: str
    note: str
    revision: str


@cache
def load_notes(version: str = DEFAULT_VERSION) -> tuple[KnowledgeNote, ...]:
    text = resources.files(__package__).joinpath(f"reflection_notes.{version}.json").read_text(encoding="utf-8")
    notes = tuple(KnowledgeNote(**entry) for entry in json.loads(text)["notes"])
    ids = [n.id for n in notes]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"duplicate knowledge note ids {dupes}")
    return notes


def render_notes(notes: tuple[KnowledgeNote, ...]) -> str:
    return "\n".join(f"- [{n.id}] {n.title}. {n.note} Revision: {n.revision}" for n in notes)
