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
    restates: int | None = None  # "4 m/s (≈ 14 km/h)": the index of the quantity this one glosses in another unit


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
_NUMBER_WORD = "|".join(sorted(lx.NUMBER_WORDS, key=len, reverse=True))
# "two hundred and fifty", "twenty-five", "seven hundred": "and" joins only after hundred / thousand,
# so "between five and ten" stays two numbers
_NUMBER_SEQUENCE = re.compile(rf"\b(?:{_NUMBER_WORD})(?:[- ](?:{_NUMBER_WORD})|(?<=hundred) and (?:{_NUMBER_WORD})"
                              rf"|(?<=thousand) and (?:{_NUMBER_WORD}))*\b")


def _number_value(words: str) -> str:
    total = current = 0
    for w in re.split(r"[- ]|\band\b", words):
        if not w:
            continue
        if w == "hundred":
            current = (current or 1) * 100
        elif w == "thousand":
            total += (current or 1) * 1000
            current = 0
        else:
            current += lx.NUMBER_WORDS[w]
    return str(total + current)


_LATEX_WINDOW = re.compile(r"t\s*\\in\s*\[\s*t_\{?(?:\\mathrm\{)?(amber|yellow|red|green)\}?\}?\s*,\s*t_\{?(?:\\mathrm\{)?"
                           r"\1\}?\}?\s*\+\s*(\d+(?:\.\d+)?)\s*\]\$?\s*(?:\\,)?\s*(?:\\mathrm\{s\}|s\b)?", re.IGNORECASE)


def _latex(t: str) -> str:
    """LaTeX in a test description as the words it says: "$v_0 = 45\\,\\mathrm{km/h}$" is "45 km/h",
    "$t \\in [t_{\\mathrm{amber}}, t_{\\mathrm{amber}} + 3]$ s" from amber onset for 3 s, "$t \\in [0, T_{\\mathrm{end}}]$" the
    whole run, "$t \\in [6, 10]$ s" from t = 6 s to t = 10 s; text without a "$" as it stands."""
    if "$" not in t and "\\" not in t and "\u2208" not in t and "\u0394" not in t:
        return t
    # plain-text math: "t \u2208 [3 s, 10 s]", "\u0394t_delay = 0.4 s", "P(drop) \u2248 20%"
    t = re.sub(r"t\s*(?:\\in|\u2208)\s*\[\s*(\d+(?:\.\d+)?)\s*s?\s*,\s*(\d+(?:\.\d+)?)\s*s?\s*\]\$?\s*(?:\\,)?\s*"
               r"(?:\\mathrm\{s\}|s\b)?", r"from t = \1 s to t = \2 s", t)
    t = re.sub(r"(?:\u0394|\\Delta\s*)t[ _]?\{?(delay|lag|latency|offset)\}?\s*=\s*", r"\1 of ", t)
    t = re.sub(r"\bP\((drop|loss)\)\s*(?:=|\u2248|~)\s*", r"\1 probability ", t)
    t = _LATEX_WINDOW.sub(lambda m: f"from {m.group(1)} onset for {m.group(2)} s", t)
    t = re.sub(r"t\s*\\in\s*\[\s*0\s*,\s*T_\{?(?:\\mathrm\{)?end\}?\}?\s*\]", "for the whole run", t)
    t = re.sub(r"t\s*\\in\s*\[\s*(\d+(?:\.\d+)?)\s*,\s*(\d+(?:\.\d+)?)\s*\]\$?\s*(?:\\,)?\s*(?:\\mathrm\{s\}|s\b)?",
               r"from t = \1 s to t = \2 s", t)
    t = re.sub(r"\\(?:mathrm|text|textrm|mathit|operatorname|textbf|emph|paragraph|section|subsection)\*?\{([^{}]*)\}",
               r"\1", t)
    t = re.sub(r"\\[,;!:]|\\q?quad\b", " ", t)
    # a symbol's assignment ("v_0 = ", "\\Delta = "): the value is what it says
    t = re.sub(r"(?:\\[A-Za-z]+|\b[A-Za-z]_\{?\w+\}?)\s*=\s*", "", t)
    return t.replace("$", "")


_FRACTIONS = {"half": 50.0, "a half": 50.0, "one half": 50.0, "a third": 100 / 3, "one third": 100 / 3,
              "a quarter": 25.0, "one quarter": 25.0, "a fifth": 20.0, "one fifth": 20.0, "a tenth": 10.0,
              "one tenth": 10.0, "two thirds": 200 / 3, "three quarters": 75.0}


def _ratios(t: str) -> str:
    """Shares of messages as percentages: "one in four", "3 out of 10", "a third of", "half the"."""
    t = re.sub(r"\b(\d+) (?:in|out of) (?:every )?(\d+)\b(?! ?(?:s|sec|secs|seconds?|ms|m|km|min|minutes?|ft|mph)\b)",
               lambda m: f"{100 * int(m.group(1)) / max(1, int(m.group(2))):.4g} % of" if int(m.group(2)) else m.group(0),
               t)
    t = re.sub(r"\b(" + "|".join(sorted(_FRACTIONS, key=len, reverse=True)) + r")(?: of)?(?= (?:the|all|its|their|them"
               r"|our|these|those|spat|bsm|map|signal|safety|brake|oncoming|crossing|lead|packets|messages|updates"
               r"|broadcasts|frames|beacons)\b)", lambda m: f"{_FRACTIONS[m.group(1)]:.4g} % of", t)
    # "every third BSM goes missing": one message in three
    t = re.sub(r"\bevery (" + "|".join(_ORDINALS) + r")(?= (?:spat |bsm |map |eebl |brake |safety |status |position )?"
               r"(?:bsms?|spats?|messages?|msgs?|packets?|updates?|broadcasts?|frames?|beacons?|notifications?)\b)",
               lambda m: f"{100 / _ORDINALS[m.group(1)]:.4g} % of", t)
    return re.sub(r"% of of\b", "% of", t)


# "a second car", "a second RSU": the ordinal of a noun
_ORDINAL_NOUN = (r"(?!\s+(?:[a-z]+\s+)?(?:cars?|vehicles?|trucks?|vans?|bus|buses|drivers?|ones?|leads?|relays?|junctions?"
                 r"|intersections?|lights?|signals?|lanes?|runs?|tests?|messages?|rows?|rounds?|stops?|approach\w*|groups?"
                 r"|rsus?|roadside|units?|radios?|senders?|streams?|faults?|phases?|cycles?|attempts?|tries|waves?"
                 r"|sources?|sensors?|checks?|opinions?|hops?|paths?|channels?|links?)\b)")
_ORDINALS = {"second": 2, "other": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
             "ninth": 9, "tenth": 10, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5, "10th": 10}


_WORD = re.compile(r"[a-z]{4,}")
_LOWER_WORD = re.compile(r"(?<![A-Za-z])[a-z]{4,}(?![A-Za-z])")  # a whole lower-case word ("Forward" stays)


def _known_words() -> frozenset[str]:
    words: set[str] = set(lx.ENGLISH_WORDS) | set(lx.NUMBER_WORDS) | set(lx.TYPO_VOCABULARY) | set(lx.COMMON_WORDS)
    for value in vars(lx).values():
        texts = [value] if isinstance(value, str) else [x for row in value for x in (row if isinstance(row, tuple)
                                                                                   else (row,))
                                                           if isinstance(x, str)] if isinstance(value, tuple) else []
        for text in texts:
            words.update(_WORD.findall(re.sub(r"\\[a-z]", " ", text)))
    return frozenset(words)


_KNOWN: frozenset[str] | None = None


def _edits1(word: str) -> set[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in letters}
    out |= {a + c + b for a, b in splits for c in letters}
    return out


def _plausible_typo(word: str, target: str) -> bool:
    """``word`` is ``target`` with a letter missed, doubled or swapped, or one letter changed into a keyboard
    neighbour or a sound-alike (``lexicon.TYPO_LETTER_PAIRS``); the two are one edit apart."""
    if len(word) != len(target):
        return True
    diff = [(a, b) for a, b in zip(word, target, strict=True) if a != b]
    return len(diff) == 2 or frozenset(diff[0]) in lx.TYPO_LETTER_PAIRS  # two: a swap (one edit apart)


def correct_typos(t: str) -> str:
    """One-edit typos of the domain vocabulary ("delayd", "oncomming", "trun") fixed, word by word.

    Only a word that is not known (a word of the lexicon's patterns, ``lexicon.COMMON_WORDS``, ...)
    and has exactly one word of ``lexicon.TYPO_VOCABULARY`` one edit away is replaced; words of
    four letters only by a transposition ("trun" -> "turn").
    """
    global _KNOWN
    if _KNOWN is None:
        _KNOWN = _known_words()
    known, vocab = _KNOWN, lx.TYPO_VOCABULARY

    def fix(m: re.Match[str]) -> str:
        w = m.group(0)
        if w in known:
            return w
        # an inflection of a known word stays, unless it misspells that word's own inflection ("droped")
        stem = next((w[:-len(x)] for x in ("ing", "ed", "es", "ly", "s", "d") if w.endswith(x) and w[:-len(x)] in known),
                    None)
        if len(w) == 4:
            cands = {w[:i] + w[i + 1] + w[i] + w[i + 2:] for i in range(3)} & vocab
        else:
            cands = _edits1(w) & vocab
        if stem is not None:
            cands = {c for c in cands if c.startswith(stem) and len(c) > len(stem)}
        # into a fault word by a changed letter only where the letters are typo neighbours (lexicon.FAULT_TYPO_TARGETS)
        cands = {c for c in cands if c not in lx.FAULT_TYPO_TARGETS or _plausible_typo(w, c)}
        if len(cands) > 1:  # "delayd": delayed, not delays
            cands = {c for c in cands if c[-1] == w[-1]}
        return next(iter(cands)) if len(cands) == 1 else w

    return _LOWER_WORD.sub(fix, t)


_FAULT_LABEL = re.compile(lx.FAULT_LABEL)


# a vehicle named by a short id after its role ("relay RV2 rebroadcasting ... RV2 goes quiet", "lead V1 brakes"): the id
# said again is that role
_ALIAS = re.compile(r"\b(relay|lead|leader|lead (?:car|vehicle)|crossing (?:car|vehicle|truck)|oncoming (?:car|vehicle"
                    r"|sedan|suv|truck)|braking (?:car|vehicle))\s+([a-z]{1,3}-?\d{1,2})\b")


def _aliases(t: str) -> str:
    names = {m.group(2): m.group(1) for m in _ALIAS.finditer(t)}
    for name, role in names.items():
        t = re.sub(rf"\b{re.escape(role)}\s+{name}\b", role, t)  # "relay rv2" -> "relay"
        t = re.sub(rf"(?<![\w-]){name}(?![\w-])", f"the {role}", t)  # "rv2 goes quiet" -> "the relay goes quiet"
    return t


# a key's unit suffix, said after its bare number (``normalize``)
_KEY_UNITS = {"m": "m", "s": "s", "ms": "ms", "mps": "m/s", "mps2": "m/s2", "kph": "km/h", "kmh": "km/h", "mph": "mph", "pct": "%",
              "hz": "Hz"}


_VULGAR_FRACTIONS = {"\u00bc": 0.25, "\u00bd": 0.5, "\u00be": 0.75, "\u2153": 1 / 3, "\u2154": 2 / 3, "\u215b": 0.125}


def _vulgar_fraction(m: re.Match[str]) -> str:
    return f"{int(m.group(1) or 0) + _VULGAR_FRACTIONS[m.group(2)]:g}"


def _foreign_number(m: re.Match[str]) -> str:
    return f"{lx.FOREIGN_NUMBERS[m.group(1)]} "


_CLOCK = r"(\d{1,2}):([0-5]\d):([0-5]\d(?:\.\d+)?)\b"
_LINE_CLOCK = re.compile(r"(?:(?<=^)|(?<=\n))" + _CLOCK)
_RUN_S = 600.0  # a run lasts ten minutes at most: clock readings further apart are no run sheet


def run_sheet_times(t: str) -> str:
    """Clock readings of a run sheet as scenario times: each line's opening reading ("00:00:12 SPaT reports red"), and
    an end said as a reading ("until 09:00:10.0"); counted from 00:00:00, or from the first line's reading when that is
    a time of day on a whole minute (an itinerary starting "09:00:00.0 depart"; a pasted log's "14:02:31.200 RX EEBL"
    is no run sheet)."""
    def seconds(m: re.Match[str], first: int = 1) -> float:
        return int(m.group(first)) * 3600 + int(m.group(first + 1)) * 60 + float(m.group(first + 2))

    starts = [seconds(m) for m in _LINE_CLOCK.finditer(t)]
    if not starts:
        return t
    base = starts[0] if starts[0] > _RUN_S else 0.0
    if base % 60 or max(starts) - base > _RUN_S:
        return t if base else _LINE_CLOCK.sub(lambda m: f"at t = {seconds(m):g} s", t)
    t = _LINE_CLOCK.sub(lambda m: f"at t = {seconds(m) - base:g} s", t)
    if base:
        t = re.sub(r"\b(until|till|to|by|at|from|after) " + _CLOCK,
                   lambda m: (f"{m.group(1)} t = {seconds(m, 2) - base:g} s" if 0 <= seconds(m, 2) - base <= _RUN_S
                              else m.group(0)), t)
    return t


# ordinal words of a second ("at the fifth second")
_NTH_SECOND = {w: i for i, w in enumerate(("first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
                                         "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
                                         "nineteenth twentieth").split(), start=1)}
# a quantity in a change said with both values (normalize)
_CHANGED = r"\d+(?:\.\d+)? ?(?:%|percent|ms|msec|milliseconds?|s|secs?|seconds?|m|metres?|meters?|m/s|km/h|kph|kmh|mph)"


def normalize(text: str) -> Normalized:
    text = _latex(text)
    # a vulgar fraction ("+¼ s", "1½ s") as its decimal (NFKC would make "¼" the digits "1⁄4")
    t = re.sub(r"(\d*)([\u00bc\u00bd\u00be\u2153\u2154\u215b])", _vulgar_fraction, text)
    t = unicodedata.normalize("NFKC", t).translate(_DASHES).translate(_QUOTES)
    t = re.sub(r"\s*(?:\u2192|\u27f6|->|=>)\s*(?=[tT] ?=|\d)", " to ", t)  # "t=6 s -> t=10 s": a span
    t = re.sub(r"\s*<=\s*", " \u2264 ", t)  # a trigger's "ego_dist_to_stopbar <= 60m": a bound, not a setting
    t = re.sub(r"\s*>=\s*", " \u2265 ", t)
    t = re.sub(r"[<>\x00-\x08\x0b-\x1f]", " ", t)
    t = re.sub(r"\bMAP\b", "mapmsg", t)  # the stream, upper case; "the map" stays a map
    t = t.lower()
    t = re.sub(r"[ \t]+", " ", t)
    t = re.sub(r"(?<![\w)~])~ ?(?=\d)", "about ", t)  # "~800 ft out": about so far
    # a voice note's fillers ("it brakes at, uh, six seconds", "and then, you know, offset ...") say nothing
    t = re.sub(r",?[ \t]*\b(?:um+|uh+|erm+|uhm+|you know)\b[ \t]*,?", " ", t)
    t = re.sub(r"[ \t]+", " ", t)
    maps: list[tuple[str, str]] = []

    def _map(m: re.Match[str]) -> str:
        maps.append((canonical_map_name(m.group(0)), m.group(0)))
        return f"<map{len(maps) - 1}>"

    t = re.sub(r"\btown\s*0*\d{1,2}\s*(hd)?\b|\b(signalized_4way|t_junction|urban_canyon)\b", _map, t)
    for pattern, english in lx.FOREIGN_VALUES:
        repl: Any = english  # (a string or a function of the match)
        t = re.sub(pattern, repl, t)
    t = re.sub(r"\b(" + "|".join(lx.FOREIGN_NUMBERS) + r") (?=seconds|metres)", _foreign_number, t)
    # a known word where a fault word was meant: "staring at green onset", "for the hole run"
    t = re.sub(r"\bstaring (at|from|with) (?=(?:the )?(?:green|red|amber|yellow|t ?=|<q|\d))", r"starting \1 ", t)
    t = re.sub(r"\bthe hole (run|test|scenario|drive)\b", r"the whole \1", t)
    t = re.sub(r"\bform (?=the (?:stop|line|signal|light|junction|intersection)\b)", "from ", t)  # "60m form the stop bar"
    t = re.sub(r"\b(start|begin|approach|brak|driv)in'?(?=\s)", r"\1ing", t)  # a dropped g: "startin 200 m out"
    t = correct_typos(t)
    t = _aliases(t)
    # texting shorthand: "b4" before, "w/" with, "w/o" without; a hand-typed key's underscores ("v_ego", "speed_offset")
    t = re.sub(r"\bb4\b", "before", t)
    t = re.sub(r"\bw/o\b", "without", t)
    t = re.sub(r"\bw/(?=\s)", "with", t)
    t = re.sub(r"\bvehs?\b\.?", lambda m: "vehicles" if m.group(0).startswith("vehs") else "vehicle", t)  # "cross veh"
    # a matrix's keys: "ego_v=12 m/s", "cross_v=15 m/s", "cross_dist_to_junction=40 m" (a crossing vehicle's)
    t = re.sub(r"\b(ego|lead|oncoming|opposing|crossing|cross)[ _]v\b(?=\s*[=:])", r"\1 speed", t)
    t = re.sub(r"\bcross(?:ing)?(?=[ _](?:speed|dist|distance|gap|pos|position)\b)", "crossing vehicle", t)
    t = re.sub(r"(?<=[a-z])_(?!(?:s|ms|m|mps|kmh|pct|deg)\b)(?=[a-z])", " ", t)  # (not a unit suffix: "duration_s")
    # a speed key ("v_ego=12 m/s", "v_oncoming=16 m/s"): whose speed it is
    t = re.sub(r"\bv ?(ego|lead|oncoming|opposing|crossing|cross)\b(?=\s*[=:])",
               lambda m: {"ego": "ego speed", "lead": "lead speed", "oncoming": "oncoming vehicle speed",
                          "opposing": "oncoming vehicle speed", "crossing": "crossing vehicle speed",
                          "cross": "crossing vehicle speed"}[m.group(1)], t)
    # a fault named as the label of a ticket or bug ("the delayed-SPaT ticket", "our packet-loss bug") is a
    # reference to it, not a fault to inject
    t = _FAULT_LABEL.sub("reference", t)
    # "zero packet loss" (before number words become quantities): none, not a loss of 0
    t = re.sub(r"\b(?:zero|0) (packet |message |msg )?(loss|losses|drops?|delay|latency)\b", r"no \1\2", t)
    # "0 ms added latency", "0 s of extra delay": none
    t = re.sub(r"\b(?:zero|0) ?(?:ms|s|sec|secs|seconds?|milliseconds?) (?:of )?((?:added |extra |additional )?(?:latency|delay"
               r"|lag))\b", r"no \1", t)
    t = re.sub(r"\btime[- ]stamp", "timestamp", t)  # "time stamps", "time-stamped"
    t = re.sub(r"\bhalf (a|one) (second|sec)\b", "0.5 s", t)
    t = re.sub(r"\b(a|one) quarter (of )?(a |one )?(second|sec)\b", "0.25 s", t)
    t = re.sub(r"\bthree quarters (of )?(a |one )?(second|sec)\b", "0.75 s", t)
    t = re.sub(r"\b(a|one) (full|whole|single) (second|sec)\b", "1 s", t)
    t = re.sub(r"\ba couple (of )?(?=(seconds|secs|metres|meters|messages|packets|updates|broadcasts|frames)\b)", "2 ", t)
    # "relayed by a second car": an ordinal before a noun, not a time
    t = re.sub(r"\b(by|for|about|roughly|around|than|of|over|nearly|almost) (a|one) (second|sec)\b" + _ORDINAL_NOUN,
               r"\1 1 s", t)
    t = re.sub(r"\ba (second|sec)\b(?= (late|behind|old|stale|early|earlier|later|off|delay|lag|in the past))", "1 s", t)
    # a value said vaguely, then pinned ("a few hundred ms (call it 300 ms)"): the pinned value
    t = re.sub(r"\b(?:a few|several|some|a couple of|a handful of) (?:hundred |dozen |tens of |hundreds of )?"
               r"(?:ms|msec|milliseconds?|s|secs?|seconds?|m|metres?|meters?)\s*\((?:call it|say|let's say|i\.e\.|about"
               r"|roughly|~)\s*([^()]{1,20})\)", r"\1", t)
    t = re.sub(r"\ba few hundred\b", "300", t)  # ("a few hundred ms": about 300 ms, not a hundred)
    # a position offset's size said with its direction alone ("offset of 5 m ahead", a payload's "magnitude: 6 m
    # ahead"): where the reported position lies against the true one, not a vehicle's gap
    t = re.sub(r"\b((?:(?:offset|shift|bias|displac|mov)\w*\b[^.;,]{0,30}?\b(?:by|of))|magnitude:) (\d+(?:\.\d+)?) ?(m|metres?"
               r"|meters?|ft|feet) (ahead|forward|in front|behind|back)\b(?! of)", r"\1 \2 \3 \4 of its true position", t)
    t = re.sub(r"\ba (hundred|thousand)\b", r"one \1", t)  # "a hundred and ten metres": 110 m
    t = _NUMBER_SEQUENCE.sub(lambda m: _number_value(m.group(0)), t)
    t = re.sub(r"\bt (?:equals|is) (?=\d)", "t = ", t)  # "from t equals four seconds"
    t = re.sub(r"\b(?:at )?scenario time (?:of )?(?=t ?=)", "", t)  # "beginning at scenario time t=4 s"
    # the ego's start said tersely ("Ego approach speed: 60 km/h, start 200 m before stop bar"; "far from stop line 250
    # metre")
    t = re.sub(r"(\bego\b[^.;\n]{0,40}?,\s*)start (?=\d)", r"\1starting ", t)
    t = re.sub(r"\bfar from (?:the )?(stop ?(?:line|bar)|junction|intersection) (\d+(?:\.\d+)? ?(?:m|metres?|meters?))\b",
               r"\2 from the \1", t)
    # "delay the EEBL msgs 400 ms from the start of the run": the delay's size, then its window (milliseconds time no
    # window's start)
    t = re.sub(r"\b(\d+(?:\.\d+)? ?(?:ms|msec|milliseconds?)) (from the (?:very )?(?:start|beginning)\b)", r"\1, \2", t)
    t = re.sub(r"\b(?:like|kinda|sort of) (?=\d)", "", t)  # "starting like 200 metres from the stop line"
    # a sheet's "fault start: decision epoch", "window start: amber onset": when the fault starts
    # (a command line's "--fault-start decision", "--spoof-start green-onset")
    t = re.sub(r"\b(?:fault|window|injection|impairment|spoof|attack)[ _-](?:start|onset|trigger)(?:\s*[:=|]\s*|(?<=start) "
               r"(?=[a-z]))(?:at )?", "starting at ", t)
    t = re.sub(r"\bgreen-onset\b", "green onset", t)
    t = re.sub(r"\b(amber|yellow|red)-onset\b", r"\1 onset", t)
    # a command line's "--spoof-phase red": the phase the forged unit claims
    t = re.sub(r"\bspoof(?:ed)?[ _-]phase\s*[:=]?\s*(green|red|amber|yellow)\b", r"claiming \1", t)
    # a learner's missing article: "45 m to stop line", "15 m before conflict point"
    t = re.sub(r"\b(to|from|before|behind|past|at|reach(?:es)?) (stop ?line|stop ?bar|conflict point|conflict zone)\b",
               r"\1 the \2", t)
    # a learner's word order: "SPaT must show still green during 2 seconds" (still shows green for 2 seconds)
    t = re.sub(r"\b(shows?|says?|reports?|displays?|indicates?) still (?=green|red|amber|yellow)\b", r"still \1 ", t)
    t = re.sub(r"\bduring (?=(?:\d+(?:\.\d+)?|a|one|two|three|four|five|six|seven|eight|nine|ten) ?(?:s|secs?|seconds?|ms"
               r"|milliseconds?|min|minutes?)\b)", "for ", t)
    # "shave 2 s off the SPaT countdown": the countdown reads that much short
    t = re.sub(r"\b(?:shav|knock|tak|cut|trim|chop)\w* (\d+(?:\.\d+)? ?(?:s|secs?|seconds?|ms)) off (?:of )?(?:the |its )?"
               r"((?:spat |signal )?(?:countdown|time[- ]to[- ](?:change|red|green)|timer))\b", r"the \2 reads \1 short", t)
    t = re.sub(r"\b(\d+)[- ]point[- ](\d+)\b", r"\1.\2", t)  # "two point five", "two-point-five"
    t = re.sub(r"\b(\d+) (tenth|hundredth)s? of (?:(?:a|one|1) )?(?:seconds?|secs?|s)\b",  # "eight tenths of a second"
               lambda m: f"{int(m.group(1)) / (10 if m.group(2) == 'tenth' else 100):g} s", t)
    # "off by plus 4 s", "reads + 4 s": a signed quantity; not a conjunction (", plus 150 ms extra latency")
    t = re.sub(r"\b(by|of|is|are|at|to|reads?|shows?|offset|off|set to|=|:) (?:plus|\+) ?(?=\d)", r"\1 +", t)
    t = re.sub(r"(?<![\w,]) ?\+ (?=\d)", " +", t)
    t = re.sub(r"\b(\d+) and a half\b", lambda m: f"{int(m.group(1))}.5", t)
    t = re.sub(r"(\d),(\d{3})\b", r"\1\2", t)
    # a decimal comma before a unit ("13,9 m/s", "0,5 s", "2,5 m"): a decimal point
    t = re.sub(r"(\d),(\d{1,2})(?=\s?(?:s|ms|m|km|mph|kmh|%|sec|secs|seconds?|metres?|meters?|m/s|km/h)\b)", r"\1.\2", t)
    # "it's about to reach", "he's braking": the verb said out
    t = re.sub(r"\b(it|he|she|that|there)'s\b", r"\1 is", t)
    # shorthand for a reported position ("lead RV pos reported 4 m behind actual")
    t = re.sub(r"\bpos\.?(?= (?:reported|is|was|offset|shifted|error|off|wrong|jumps?)\b)", "position", t)
    # "at the 12-second mark", "at 00:12" (minutes:seconds after a word of time): a scenario time
    t = re.sub(r"\b(?:the )?(\d+(?:\.\d+)?)[- ]?(?:second|sec|s) mark\b", r"t = \1 s", t)
    # (not a time of day: "track cleared till 23:00"; a run is ten minutes at most)
    t = re.sub(r"\b(at|from|until|till|by|after|before|starting at|starting from) (0?\d|10):([0-5]\d)\b(?!:)",
               lambda m: f"{m.group(1)} t = {int(m.group(2)) * 60 + int(m.group(3))} s", t)
    # a run sheet's line opened by its clock time ("00:00:12 SPaT reports red ..."): at that scenario time; an
    # itinerary's clock of the day ("09:00:06.0 van's EEBL messages ... (until 09:00:10.0)") counts from its first line
    t = run_sheet_times(t)
    # a hand-typed key in seconds with a bare number ("'duration_s': 3.5", "start_s=12"): that many seconds; a key
    # line's unit suffix likewise ("length_s = 3.0", "lead_decel_mps2 = 7.0", read as "length s = 3.0")
    t = re.sub(r"\b([a-z]+_s)(['\"]?\s*[:=]\s*)([-+]?\d+(?:\.\d+)?)(?![\d.]|\s*(?:s|sec|secs|seconds?|ms)\b)", r"\1\2\3 s",
               t)
    # (a config block's "start_dist_m   = 400", "ego_speed_mps = 16": the suffix is the unit)
    t = re.sub(r"\b([a-z]+)[ _](m|mps2|mps|kph|kmh|mph|ms|pct)(['\"]?\s*[:=]\s*)([-+]?\d+(?:\.\d+)?)(?![\d.]|[ \t]*(?:[a-z]+/|%|(?:m|s|ms|mph|kph|kmh|km|mps)\b))",
               lambda m: f"{m.group(1)}{m.group(3)}{m.group(4)} {_KEY_UNITS[m.group(2)]}", t)
    t = re.sub(r"(?:(?<=^)|(?<=\n)|(?<=, ))([a-z][a-z ]*?) (s|ms|mps2|mps|kph|kmh|mph|pct|hz)( ?[:=] ?)([-+]?\d+(?:\.\d+)?)(?=[.;]?\s*(?:$|\n|,))",
               lambda m: f"{m.group(1)}{m.group(3)}{m.group(4)} {_KEY_UNITS[m.group(2)]}", t)
    # a replay's or a stale stamp's age as a key ("age: 2s", "lookback_s: 10", "seconds_old: 1.5"): that old
    t = re.sub(r"\b(?:age|look ?back|seconds old|staleness)\s*[:=]\s*(\d+(?:\.\d+)?) ?(ms|s|sec|secs|seconds)\b",
               r"\1 \2 old", t)
    # a duration key with a bare number ("duration=6" in a call, "duration: 4"): seconds
    t = re.sub(r"\b(duration)(['\"]?\s*[:=]\s*)(\d+(?:\.\d+)?)(?![\d.]|\s*(?:s|sec|secs|seconds?|ms|msec|milliseconds?|min"
               r"|minutes?)\b)", r"\1\2\3 s", t)
    # "at 15th second", "from 10th second till end of run", "starting at the fifth second": a scenario time
    t = re.sub(rf"\b({'|'.join(_NTH_SECOND)}) (?=(?:second|sec)\b)", lambda m: f"{_NTH_SECOND[m.group(1)]}th ", t)
    t = re.sub(r"\b(at|from|after|in|on|by|till|until) (?:the )?(\d+)(?:st|nd|rd|th) (?:second|sec)\b", r"\1 t = \2 s", t)
    # a telegram's or a terse note's "AT T 11 S": a scenario time
    t = re.sub(r"\bt (\d+(?:\.\d+)?) (s|sec|secs|seconds)\b", r"t = \1 s", t)
    # a lead's braking time as a key ("LEAD_BRAKE_AT=12s", "lead_brake_s=8", a table's "lead brake time | t = 6 s"): when
    # the lead brakes
    t = re.sub(r"\blead[ _]brak(?:e|ing)(?:[ _](?:at|time|start|onset|t))?(?:[ _]s)?\s*[:=]\s*(?:t ?= ?)?(\d+(?:\.\d+)?)"
               r"\s*(?:s\b)?", r"the lead brakes hard at t = \1 s", t)
    t = re.sub(r"\bhard[ _]brak(?:e|ing)[ _](?:at|time|start|onset)(?:[ _]s)?\s*[:=]\s*(?:t ?= ?)?(\d+(?:\.\d+)?)\s*(?:s\b)?",
               r"brakes hard at t = \1 s", t)  # a struct's field ("lead: Vehicle { hard_brake_at_s: 9.0 }")
    # a lab notebook's units in brackets ("13.9 [m/s]", "p = 0.30 [-]") and its symbols ("d_stopbar(0) = 250 m", "start
    # when d_stopbar = 120 m", "IF ego.dist_to_stop_bar <= 60 m"), "v_approach = 13.9 m/s"
    t = re.sub(r"(\d) ?\[(m|s|ms|m/s|km/h|kmh|mph|%|m/s2|m/s\^2|hz|db)\]", r"\1 \2", t)
    t = re.sub(r"(\d) ?\[-\]", r"\1", t)
    t = re.sub(r"\bd[ _]?stop[ _]?(?:bar|line) ?\(0\) ?= ?(\d+(?:\.\d+)?) ?m\b", r"\1 m from the stop bar at the start", t)
    t = re.sub(r"\b(when|once|while|if) (?:ego\.?|the ego'?s? )?d(?:ist(?:ance)?)?[ _]?(?:to[ _])?stop[ _]?(?:bar|line) ?(?:=|<=|\u2264|<)"
               r" ?(\d+(?:\.\d+)?) ?m\b", r"\1 the ego is \2 m from the stop bar", t)
    # an anchor named by its kind and distance ("anchor: stop_bar_distance 60 m", a matrix's cell), and a trigger said
    # by where the ego is ("trigger: ego 60 m from the stop bar"): a window's start, not the ego's
    t = re.sub(r"\bstop[ _]bar[ _]distance\s*(?:[:=]|of|\u2264|<)?\s*(\d+(?:\.\d+)?) ?m\b",
               r"once the ego is \1 m from the stop bar", t)
    t = re.sub(r"\b(trigger|anchor|start)\s*[:=]\s*(?:the )?ego(?:'s)? (?:is )?(\d+(?:\.\d+)?) ?m (from|before|to) ",
               r"\1: once the ego is \2 m \3 ", t)
    t = re.sub(r"\bv[ _](?:approach|app|0)\b(?=\s*[=:])", "ego speed", t)
    # a mission clock ("at t+00:05"): minutes and seconds after the start
    t = re.sub(r"\bt ?\+ ?(\d{1,2}):([0-5]\d)\b", lambda m: f"t = {int(m.group(1)) * 60 + int(m.group(2))} s", t)
    # a time after the start ("start = T+8s", "à partir de T+10 s"): a scenario time
    t = re.sub(r"\bt ?\+ ?(?=\d)", "t = ", t)
    # a time said as a clock reading without its unit ("brakes t=10", "at t = 12.5"), and "@" for "at" ("brakes @ -6 m/s2")
    t = re.sub(r"\bt ?= ?(\d+(?:\.\d+)?)(?![\d.]|\s*(?:s|sec|secs|seconds?|ms|msec|milliseconds?|min|minutes?)\b)",
               r"t = \1 s", t)
    t = re.sub(r"(?<=\s)@(?=\s)", "at", t)
    t = _ratios(t)
    t = re.sub(r"\b(\d+(?:\.\d+)?) (more|less|fewer|extra) (seconds?|secs?|s|ms|milliseconds?|m|metres?|meters?)\b",
               r"\1 \3 \2", t)  # "3 more seconds of amber" -> "3 seconds more of amber"
    # a change said with the old value and the new: the new one ("halve the drop rate from 40% to 20%" is a 20 % drop
    # rate; "case 3 had 150 ms on the lead BSMs, so now 300 ms" a 300 ms delay)
    t = re.sub(rf"\b(?:halve|double|triple|raise|lower|reduce|increase|cut|bump|change|bring)(?: (?:down|up))? "
               rf"((?:the |its |their )?[a-z' ]{{1,40}}?) from {_CHANGED} to ({_CHANGED})(?![\w.])", r"\1 \2", t)
    t = re.sub(rf"\b(?:case \d+|the (?:last|previous|old) (?:run|case|one)|last time|previously|before) (?:had|was|used) "
               rf"{_CHANGED}[^.;:\n]*?, so now ({_CHANGED})", r"now \1", t)
    t = re.sub(r"(\d)[ \t]*-[ \t]*(?=[a-z%])", r"\1 ", t)  # "10-second", "30-m", "4-way" (not a list's "\n- ")
    t = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?) - (?=\d)", r"\1-", t)  # "3 - 5 m" is the range "3-5 m", not a negative 5 m
    quantities: list[Quantity] = []
    num = r"(?<![\w.])(?P<num>[-+]?(?:\d+(?:\.\d+)?|\.\d+))"
    # (a count is not an id's number: "RSU-2 SPaT will be delayed" is no count of two SPaT messages)
    count_num = r"(?<![a-z]-)" + num

    def _sub(kind: str, factor: float) -> Callable[[re.Match[str]], str]:
        def repl(m: re.Match[str]) -> str:
            q = Quantity(len(quantities), float(m.group("num")) * factor, kind, m.group(0))
            quantities.append(q)
            return f"<q{q.index}:{kind}>"
        return repl

    for kind, unit, factor in lx.UNITS:
        t = re.sub(num + r"\s*(?:" + unit + r")(?![a-z0-9/²^])", _sub(kind, factor), t)
    t = re.sub(count_num + r"\s+(?=" + lx.COUNT_NOUNS + r"\b)", lambda m: _sub("count", 1.0)(m) + " ", t)
    t = re.sub(r"(?:burst of|a run of) " + num, lambda m: "burst of " + _sub("count", 1.0)(m), t)
    # "12 in a row", "lost five times in a row": a burst of that many messages
    t = re.sub(num + r" (?=(?:times )?in a row\b|times (?:running|back-to-back)\b)", lambda m: _sub("count", 1.0)(m) + " ", t)
    t = _GLOSS.sub(lambda m: _gloss(m, quantities), t)
    t = re.sub(r"\[\s*(<q\d+:\w+>)\s*\]", r"\1", t)  # a matrix cell's "ego_v=[12 m/s]"
    for m in _PLACEHOLDER.finditer(t):
        q = quantities[int(m.group(1))]
        q.start, q.end = m.start(), m.end()
    sentences = []
    start = 0
    # (an abbreviation's stop ends no sentence: "withheld, i.e. not delivered ...", "approx. 10:42")
    # (a quotation's closing mark stays with its sentence: "... see what happens?' 'Not today,' said the hare")
    # (an item of a list numbered inside a line, "... 1) a phantom car ... for 2 s 2) the lead's BSMs frozen ...", is a
    # sentence of its own: its window is not the next item's)
    for m in re.finditer(r"(?<!\bi\.e)(?<!\be\.g)(?<!\bapprox)(?<!\bca)(?<!\bvs)[.;!?]+['\"]*(?=\s|$)|\n"
                         r"|(?<=[^\s(])[ \t](?=[1-9]\)[ \t])", t):
        sentences.append((start, m.end()))
        start = m.end()
    if start < len(t) or not sentences:
        sentences.append((start, len(t) + 1))
    return Normalized(t, quantities, maps, sentences)


# "4 m/s (≈ 14 km/h)", "18 km/h (5 m/s)", "2 s (i.e. 2000 ms)": one quantity glossed in another unit is one quantity;
# the gloss leaves the text and stays in the list, bound with the quantity it restates
_GLOSS = re.compile(r"<q(?P<a>\d+):(?P<k>\w+)> ?\((?:≈|~|=|about |approx\.? |approximately |roughly |around |i\.e\.,? "
                    r"|or |that is |ca\.? )? ?<q(?P<b>\d+):(?P=k)>\)")


def _gloss(m: re.Match[str], quantities: list[Quantity]) -> str:
    a, b = quantities[int(m.group("a"))], quantities[int(m.group("b"))]
    if abs(a.value - b.value) > 0.1 * abs(a.value) + 1e-9:  # not the same value: two quantities, left as written
        return m.group(0)
    b.restates, b.used = a.index, f"restates {a.raw!r}"
    return f"<q{a.index}:{a.kind}>"


SI_UNITS = {"time": "s", "dist": "m", "speed": "m/s", "accel": "m/s²", "pct": "", "db": "dB/m", "angle": "°", "count": ""}
_RANGE_LOW = re.compile(r"(?P<between>\bbetween )?(?<![\w.=+-])(?P<lo>\d+(?:\.\d+)?|<q(?P<q>\d+):(?P<kind>\w+)>)"
                        r" ?(?P<sep>and|to|-) ?$")
_RANGE_HIGH = re.compile(r" ?(?P<sep>and|to|-) ?<q(?P<q>\d+):(?P<kind>\w+)>")
_NOT_A_RANGE = re.compile(r"\b(?:from|t ?=|until|till|at)\s*$")  # "from 5 to 10 s": a window or a change


@dataclass(frozen=True)
class StatedRange:
    """One quantity stated as a range ("between 200 and 300 ms", "3-5 m", "0.2 s to 0.3 s")."""
    low: float  # SI
    high: Quantity
    low_quantity: Quantity | None  # the lower end when it has its own unit
    words: str

    def describe(self) -> str:
        unit = SI_UNITS.get(self.high.kind, "")
        return f"{self.low:g}-{self.high.value:g}{' ' + unit if unit else ''}"


def stated_range(n: Normalized, q: Quantity) -> StatedRange | None:
    """The range ``q`` is one end of, or None. A range goes up; "and" needs "between"; "from A to B" is a window
    or a change, not a range."""
    hi, lo_q, start = q, None, q.start
    after = _RANGE_HIGH.match(n.text, q.end)
    if after and after.group("kind") == q.kind and (after.group("sep") != "and"
                                                     or n.text[:q.start].endswith("between ")):
        hi, lo_q = n.quantities[int(after.group("q"))], q
        low = q.value
        if n.text[:q.start].endswith("between "):
            start = q.start - len("between ")
    else:
        m = _RANGE_LOW.search(n.text[max(0, q.start - 40):q.start])
        if m is None or (m.group("sep") == "and" and not m.group("between")):
            return None
        start = q.start - (len(m.group(0)))
        if m.group("q"):
            lo_q = n.quantities[int(m.group("q"))]
            if lo_q.kind != q.kind:
                return None
            low = lo_q.value
        else:
            num = re.match(r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)", q.raw)
            if num is None or float(num.group(0)) == 0:
                return None
            low = float(m.group("lo")) * q.value / float(num.group(0))
    between = n.text[max(0, start - 8):start + 8].find("between ") >= 0
    if (not between and _NOT_A_RANGE.search(n.text[max(0, start - 12):start])) or not 0 <= low < hi.value:
        return None
    end = hi.end or q.end
    words = _PLACEHOLDER.sub(lambda m: n.quantities[int(m.group(1))].raw.strip(), n.text[start:end]).strip()
    return StatedRange(round(low, 6), hi, lo_q, words)


@dataclass(frozen=True)
class Mention:
    what: str  # an AgentRole value, "ego" or "rsu"
    start: int
    end: int


# a negated list negates every item: "nothing dropped, delayed, frozen or spoofed", "no loss, no delay"
NEGATED_LIST = r"|\b(no|nothing|none|neither|without|zero|\w+n't)\s+(\w+(?: \w+)?,\s+){1,4}$"
# what negates the word after it: "no loss", "no packets are lost", "nobody tampers with anything", "aren't delayed, frozen or dropped", "nothing is corrupted or late", "none of the
# messages should be lost or stale" ("none of" reaches over four words; the negator's scope runs to an "or"/"nor"
# within 40 characters), a negated list
NEGATED = rx(r"\b(no|not|\w+n't|cannot|without|never|zero|nothing|none|neither|nor|nobody|no one)\s+(\w+,?\s+){0,2}$"
             r"|\b(none|neither) of\s+(\w+\s+){1,4}$"
             # "don't bother with the delay stuff", "no need to worry about any drops", "don't add the speed offset"
             r"|\b(\w+n't|do not|no need to) (bother|worry) (with|about)\s+(the |any |that |this )?$"
             r"|\b(\w+n't|do not|never) (add|include|inject|apply)\s+(the |any |that |this )?([\w-]+\s+){0,2}$"
             r"|\b(nothing|none|neither|without|not|no \w+|\w+n't)\b[^.;]{0,40}\b(or|nor)\s+(an? )?$" + NEGATED_LIST)


class ParseState:
    """One parse: the normalized text, the slots filled so far, and the notes."""

    def __init__(self, n: Normalized, assigner: Assigner, maps: MapView):
        self.n = n
        self.t = n.text
        self.assigner = assigner
        self.maps = maps
        self.notes: list[str] = []
        self.findings: list[Finding] = []
        self.withdrawn: set[int] = set()  # sentences of faults taken back later ("scrap the burst drop"): they time nothing
        # a quoted older request or a line the next speaker turned down (marked by ``roles.check_text``) sets nothing:
        # its quantities are spoken for ("> Please set up RLVW with the ego at 35 mph ...", forwarded under a new ask)
        # (to the end of the marked line's sentence: a text adventure's "> LOOK" command joins the room's description)
        for marker in re.finditer(r"\((?:quoted|withdrawn)\)[^\n.!?]*", self.t):
            for q in n.quantities:
                if q.used is None and marker.start() < q.start < marker.end():
                    q.used = "quoted"

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
        return bool(NEGATED.search(self.t[max(0, pos - 48):pos]))


def role_mentions(p: ParseState) -> list[Mention]:
    taken: list[tuple[int, int]] = []
    out: list[Mention] = []
    cues = [(r.value, pat) for r, pat in lx.ROLE_CUES] + [("ego", lx.EGO_CUE), ("rsu", lx.RSU_CUE)]
    for what, pattern in cues:
        for m in p.finditer(pattern):
            if what == "lead" and p.has(r"^ to\b", p.t[m.end():m.end() + 4]):
                continue  # "may lead to a collision"
            if what != "ego" and p.has(r"(?:\bno|\bwithout(?: an?| any)?|\bnot (?:a|an|any)|\bzero)\s+(?:real |actual |other )?$",
                                       p.t[max(0, m.start() - 22):m.start()]):
                continue  # "no lead vehicle", "without a crossing car": none of that role
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            out.append(Mention(what, m.start(), m.end()))
    return sorted(out, key=lambda x: x.start)


def subject(p: ParseState, roles: list[Mention], pos: int, window: int = 40) -> Mention | None:
    """Nearest role/ego mention before ``pos`` in the same sentence, within ``window`` chars."""
    s = p.n.sentence_of(pos)
    before = [r for r in roles if r.end <= pos and pos - r.end <= window and p.n.sentence_of(r.start) == s
              and not _PLACED_AGAINST.search(p.t[max(0, r.start - 16):r.start])]
    return before[-1] if before else None


# a mention that places another vehicle ("relay truck 150 ft ahead of ego at 55 mph": the relay's speed) is no subject
_PLACED_AGAINST = re.compile(r"\b(?:ahead of|behind|in front of|than) (?:the )?$")


def agent_for(agents: dict[str, dict[str, Any]], role: str) -> dict[str, Any]:
    if role not in agents:
        agents[role] = {"id": role, "role": role}
    return agents[role]


BAR = r"(?:stop[- ]?bar|stop[- ]?line|stopline|intersection|junction|light|signal|line\b|bar\b)"


def clean(text: str) -> str:
    return _PLACEHOLDER.sub(lambda m: f"<{m.group(2)}>", text)
