"""Versioned prompt files (``services/llm/prompts/<role>.<version>.md``).

Prompts are data, not code: each file starts with ``<!-- prompt: <role> <version> -->``
and uses ``$name`` placeholders (``string.Template``), so JSON braces in a prompt
need no escaping. The version travels with every answer (``RoleReply.notes``), so
an archived result names the exact prompt that produced it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template

DEFAULT_VERSION = "v1"
ROLES = ("parser", "repair", "planner", "reflector")
_HEADER = re.compile(r"^<!-- prompt: (\w+) (v\d+) -->\s*\n")


@dataclass(frozen=True)
class Prompt:
    role: str
    version: str
    text: str

    @property
    def label(self) -> str:
        return f"{self.role}.{self.version}"

    def render(self, **values: str) -> str:
        return Template(self.text).substitute(**values)

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
