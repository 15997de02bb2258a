"""Versioned prompt files (``services/llm/prompts/<role>.<version>.md``).

Prompts are data, not code: each file starts with ``<!-- prompt: <role> <version> -->``
and uses ``$name`` placeholders (``string.Template``), so JSON braces in a prompt
need no escaping. The version travels with every answer (``RoleReply.notes``), so
an archived result names the exact prompt that produced it.

The catalogue's lists are placeholders too, filled at render time from its registries
(``$applications``, ``$fault_operators``: see :func:`catalogue_values`), so an application
or fault operator registered as a plug-in is offered to the model like a built-in one. A
bullet paragraph (``- `` then lines indented by two spaces) holding one of them is
re-flowed to the prompt files' line width after substitution.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template

from lastv2x.core.catalogue import (
    APPLICATIONS,
    FAULT_OPERATORS,
    STREAMS,
    ApplicationInfo,
    FaultOperatorInfo,
)

DEFAULT_VERSION = "v1"
ROLES = ("parser", "repair", "planner", "reflector")
_HEADER = re.compile(r"^<!-- prompt: (\w+) (v\d+) -->\s*\n")
CATALOGUE_PLACEHOLDERS = ("applications", "fault_operators")
WRAP_WIDTH = 87  # the prompt files' line width: a re-flowed paragraph keeps it
_PARAM = re.compile(r"`(\w+)`(,\s*default)?")  # a spec field a description names (", default ...": optional)


def _application_text(info: ApplicationInfo) -> str:
    """``RLVW (red-light violation warning)``: the name and its title (an initialism kept as written)."""
    title = info.title if info.title[:2].isupper() else info.title[:1].lower() + info.title[1:]
    return f"{info.name.value} ({title})"


def _operator_text(info: FaultOperatorInfo) -> str:
    """``name (streams; what to give)``: the streams ("any": every stream), then the magnitude unit, else the
    strength knobs' fields, else "needs sender", else the required fields its description names; "none"
    when it reads no field at all, nothing when it has only optional ones (``map_misassociation (MAP)``)."""
    streams = "any" if set(info.streams) >= set(STREAMS) else "/".join(s.value for s in info.streams)
    params = [(m.group(1), m.group(2) is None) for m in _PARAM.finditer(info.description)
              if m.group(1) != "magnitude"]
    if info.magnitude_unit:
        detail: str | None = info.magnitude_unit
    elif info.strength:
        detail = " or ".join(k.field for k in info.strength)
    elif info.requires_sender:
        detail = "needs sender"
    elif params:
        required = [name for name, req in params if req]
        detail = ", ".join(required) if required else None
    else:
        detail = "none"
    return f"{info.name} ({streams}; {detail})" if detail else f"{info.name} ({streams})"


def catalogue_values() -> dict[str, str]:
    """The catalogue's placeholders as the registries hold them now (plug-ins included)."""
    return {"applications": ", ".join(_application_text(a) for a in APPLICATIONS.values()),
            "fault_operators": ", ".join(_operator_text(o) for o in FAULT_OPERATORS.values())}


def _segments(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into (segment, re-flow) pieces: a bullet paragraph naming a catalogue placeholder is
    re-flowed, everything else is kept as written. The pieces join back to ``text``."""
    names = "|".join(CATALOGUE_PLACEHOLDERS)
    marker = re.compile(rf"\$(?:{names}\b|\{{(?:{names})\}})")
    out: list[tuple[str, bool]] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        j = i + 1
        if lines[i].startswith("- "):
            while j < len(lines) and lines[j].startswith("  ") and lines[j].strip():
                j += 1
        block = "".join(lines[i:j])
        flow = lines[i].startswith("- ") and marker.search(block) is not None
        if out and not flow and not out[-1][1]:
            out[-1] = (out[-1][0] + block, False)
        else:
            out.append((block, flow))
        i = j
    return out


def _reflow(paragraph: str) -> str:
    end = paragraph[len(paragraph.rstrip("\n")):]
    words = " ".join(line.strip() for line in paragraph.splitlines())[2:]
    return textwrap.fill(words, WRAP_WIDTH, initial_indent="- ", subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False) + end


@dataclass(frozen=True)
class Prompt:
    role: str
    version: str
    text: str

    @property
    def label(self) -> str:
        return f"{self.role}.{self.version}"

    def render(self, **values: str) -> str:
        """The text with its placeholders filled: ``values``, and the catalogue's lists (read now, so a
        plug-in registered after import counts) where ``values`` does not give them."""
        wanted = self.placeholders()
        filled = {**{k: v for k, v in catalogue_values().items() if k in wanted}, **values} \
            if wanted & set(CATALOGUE_PLACEHOLDERS) else values
        return "".join(_reflow(Template(seg).substitute(**filled)) if flow else Template(seg).substitute(**filled)
                       for seg, flow in _segments(self.text))

    def placeholders(self) -> set[str]:
        return {m.group(1) or m.group(2) for m in re.finditer(r"\$(?:(\w+)|\{(\w+)\})", self.text)}


@cache
def load_prompt(role: str, version: str = DEFAULT_VERSION) -> Prompt:
    if role not in ROLES:
        raise KeyError(f"unknown prompt role {role!r}; known: {ROLES}")
    text = resources.files("services.llm.prompts").joinpath(f"{role}.{version}.md").read_text(encoding="utf-8")
    m = _HEADER.match(text)
    if not m or m.group(1) != role or m.group(2) != version:
        raise ValueError(f"prompt {role}.{version}.md must start with '<!-- prompt: {role} {version} -->'")
    return Prompt(role, version, text[m.end():])
