"""Intent text for the offline grammar: normalization, quantities, mentions, parse state.

An intent is normalized once: Unicode folded, lower-cased, number words turned into
digits, and every number with a unit replaced by a typed placeholder ``<qN:kind>``
(kind in speed, time, dist, pct, accel, db, count) whose SI value is kept aside in
``Normalized.quantities``. Grammar rules are plain regular expressions over that
text; a quantity consumed by one slot is marked used and never reused by another.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lastv2x.core.verifier import Finding
from services.llm import lexicon as lx
from services.llm.assignment import Assigner
from services.llm.maps import MapView, canonical_map_name

_FLAGS = re.IGNORECASE


def rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _FLAGS)


def Q(kind: str, name: str = "q") -> str:
    """A placeholder of one quantity kind, capturing its index as group ``name``."""
    return rf"<q(?P<{name}>\d+):{kind}>"


@dataclass
class Quantity:
    index: int
    value: float  # SI units (m, s, m/s, m/s^2, fraction, dB/m, count)
    kind: str
    raw: str
    start: int = 0
    end: int = 0
    used: str | None = None


@dataclass
class Normalized:
    text: str
    quantities: list[Quantity]
    maps: list[tuple[str, str]]  # (canonical name, raw mention)
    sentences: list[tuple[int, int]]

    def sentence_of(self, pos: int) -> int:
        for i, (a, b) in enumerate(self.sentences):
            if a <= pos < b:
                return i
        return len(self.sentences) - 1

    def sentence(self, i: int) -> str:
        a, b = self.sentences[i]
        return self.text[a:b]


_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")
_QUOTES = {ord("\u2018"): "'", ord("\u2019"): "'", ord("\u201c"): '"', ord("\u201d"): '"'}
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_UNITS_WORDS = "one|two|three|four|five|six|seven|eight|nine"
_PLACEHOLDER = re.compile(r"<q(\d+):(\w+)>")


def normalize(text: str) -> Normalized:
    t = unicodedata.normalize("NFKC", text).translate(_DASHES).translate(_QUOTES)
    t = re.sub(r"[<>\x00-\x08\x0b-\x1f]", " ", t)
    t = re.sub(r"\bMAP\b", "mapmsg", t)  # the stream, upper case; "the map" stays a map
    t = t.lower()
    t = re.sub(r"[ \t]+", " ", t)
    maps: list[tuple[str, str]] = []

    def _map(m: re.Match[str]) -> str:
        maps.append((canonical_map_name(m.group(0)), m.group(0)))
        return f"<map{len(maps) - 1}>"

    t = re.sub(r"\btown\s*0*\d{1,2}\s*(hd)?\b|\b(signalized_4way|t_junction|urban_canyon)\b", _map, t)
    t = re.sub(rf"\b({_TENS})[- ]({_UNITS_WORDS})\b",
               lambda m: str(lx.NUMBER_WORDS[m.group(1)] + lx.NUMBER_WORDS[m.group(2)]), t)
    t = re.sub(r"\bhalf (a|one) (second|sec)\b", "0.5 s", t)
    t = re.sub(rf"\b({_UNITS_WORDS}) and a half\b", lambda m: f"{lx.NUMBER_WORDS[m.group(1)]}.5", t)
    t = re.sub(r"\b(" + "|".join(lx.NUMBER_WORDS) + r")\b", lambda m: str(lx.NUMBER_WORDS[m.group(1)]), t)
    t = re.sub(r"(\d),(\d{3})\b", r"\1\2", t)
    t = re.sub(r"(\d)\s*-\s*(?=[a-z%])", r"\1 ", t)  # "10-second", "30-m", "4-way"
    quantities: list[Quantity] = []
    num = r"(?<![\w.])(?P<num>[-+]?(?:\d+(?:\.\d+)?|\.\d+))"

    def _sub(kind: str, factor: float) -> Callable[[re.Match[str]], str]:
        def repl(m: re.Match[str]) -> str:
            q = Quantity(len(quantities), float(m.group("num")) * factor, kind, m.group(0))
            quantities.append(q)
            return f"<q{q.index}:{kind}>"
        return repl

    for kind, unit, factor in lx.UNITS:
        t = re.sub(num + r"\s*(?:" + unit + r")(?![a-z0-9/²^])", _sub(kind, factor), t)
    t = re.sub(num + r"\s+(?=" + lx.COUNT_NOUNS + r"\b)", lambda m: _sub("count", 1.0)(m) + " ", t)
    t = re.sub(r"(?:burst of|a run of) " + num, lambda m: "burst of " + _sub("count", 1.0)(m), t)
    t = re.sub(num + r" (?=in a row\b)", lambda m: _sub("count", 1.0)(m) + " ", t)
    for m in _PLACEHOLDER.finditer(t):
        q = quantities[int(m.group(1))]
        q.start, q.end = m.start(), m.end()
    sentences = []
    start = 0
    for m in re.finditer(r"[.;!?]+(?=\s|$)|\n", t):
        sentences.append((start, m.end()))
        start = m.end()
    if start < len(t) or not sentences:
        sentences.append((start, len(t) + 1))
    return Normalized(t, quantities, maps, sentences)


@dataclass(frozen=True)
class Mention:
    what: str  # an AgentRole value, "ego" or "rsu"
    start: int
    end: int


NEGATED = rx(r"\b(no|not|without|never|zero)\s+(\w+\s+){0,2}$")


class ParseState:
    """One parse: the normalized text, the slots filled so far, and the notes."""

    def __init__(self, n: Normalized, assigner: Assigner, maps: MapView):
        self.n = n
        self.t = n.text
        self.assigner = assigner
        self.maps = maps
        self.notes: list[str] = []
        self.findings: list[Finding] = []

    # small helpers --------------------------------------------------------
    def q(self, m: re.Match[str], group: str = "q") -> Quantity:
        return self.n.quantities[int(m.group(group))]

    def free(self, m: re.Match[str], group: str = "q") -> bool:
        return self.q(m, group).used is None

    def use(self, m: re.Match[str], what: str, group: str = "q") -> float:
        q = self.q(m, group)
        q.used = what
        return q.value

    def finditer(self, pattern: str) -> Iterator[re.Match[str]]:
        return rx(pattern).finditer(self.t)

    def has(self, pattern: str, text: str | None = None) -> re.Match[str] | None:
        return rx(pattern).search(self.t if text is None else text)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def negated(self, pos: int) -> bool:
        return bool(NEGATED.search(self.t[max(0, pos - 24):pos]))


def role_mentions(p: ParseState) -> list[Mention]:
    taken: list[tuple[int, int]] = []
    out: list[Mention] = []
    cues = [(r.value, pat) for r, pat in lx.ROLE_CUES] + [("ego", lx.EGO_CUE), ("rsu", lx.RSU_CUE)]
    for what, pattern in cues:
        for m in p.finditer(pattern):
            if what == "lead" and p.has(r"^ to\b", p.t[m.end():m.end() + 4]):
                continue  # "may lead to a collision"
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            out.append(Mention(what, m.start(), m.end()))
    return sorted(out, key=lambda x: x.start)


def subject(p: ParseState, roles: list[Mention], pos: int, window: int = 40) -> Mention | None:
    """Nearest role/ego mention before ``pos`` in the same sentence, within ``window`` chars."""
    s = p.n.sentence_of(pos)
    before = [r for r in roles if r.end <= pos and pos - r.end <= window and p.n.sentence_of(r.start) == s]
    return before[-1] if before else None


def agent_for(agents: dict[str, dict[str, Any]], role: str) -> dict[str, Any]:
    if role not in agents:
        agents[role] = {"id": role, "role": role}
    return agents[role]


BAR = r"(?:stop[- ]?bar|stop[- ]?line|stopline|intersection|junction|light|signal)"


def clean(text: str) -> str:
    return _PLACEHOLDER.sub(lambda m: f"<{m.group(2)}>", text)
