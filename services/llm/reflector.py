"""Prompt reflection (LLM role 3): why did the intended mechanism not bite?

Input: the prompt that produced an ineffective test, the evidence digest of its
paired run and (when the caller has it) the spec that ran. Output: a diagnosis, the
**field edits** to that spec (``edits``: dotted spec paths and new values, the
verifier's repair format, each with the rule that made it), the revised prompt that
says the same in words (a record for people) and the knowledge-base rule ids the
diagnosis rests on. The campaign applies the edits to the spec, never re-parses the
prose: the edited spec re-enters verify -> ground -> execute under the same admission
test, with the same application, map, fault operators and streams (:data:`FIXED_PATHS`
are refused), so reflection can never touch simulator state or force a violation: it
can only ask for a different test of the same thing.

The offline reflector is a rule engine over the knowledge base (the same notes for
every scenario, ``knowledge/reflection_notes.v1.json``). Rules run in a fixed
order, timing before magnitude: a fault whose window misses the decision cannot be
made causal by a larger magnitude, so the magnitude rule is skipped for a fault
once a timing rule fired for it. Revisions rewrite the prompt in the parser's own
vocabulary (an anchor phrase next to the fault verb, a sentence such as "The radio
range is 300 m."), so the revised prompt parses deterministically.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lastv2x.core import catalogue as cat
from lastv2x.core import tolerance
from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application, Stream
from lastv2x.core.errors import ErrorCollector
from lastv2x.core.faults import CROSS_GHOST_APPS
from lastv2x.core.spec import FaultOperator, Phase
from services.llm import lexicon as lx
from services.llm.evidence import EvidenceDigest, FaultEvidence
from services.llm.knowledge import KnowledgeNote

MAX_DIAGNOSIS_CHARS = 2000
_I = re.IGNORECASE
_NUM = r"[-+]?\d+(?:\.\d+)?"
_TIME = rf"{_NUM}\s*(?:ms|msec|milliseconds?|s|secs?|seconds?)\b"
_DIST = rf"{_NUM}\s*(?:m|metres?|meters?)\b"
_PH = r"(?:amber|yellow|red|green)"
_NOUNS = r"(?:\w+ )?(?:bsms?|spats?|messages?|msgs?|packets?|updates?|broadcasts?|frames?|beacons?)"
_DEC = r"(?:the |its |the ego'?s? )?(?:decision (?:point|epoch|moment|time)|dilemma zone|last comfortable stopping point)"
ANCHOR_PHRASES = (
    rf"(?:just|right|immediately|shortly) (?:before|after) (?:the )?(?:onset of (?:the )?)?(?:light (?:turns|changes to) )?"
    rf"{_PH}(?: onset| phase| light)?",
    rf"{_TIME} (?:before|after|prior to|into) (?:the )?(?:onset of (?:the )?)?{_PH}(?: onset| phase| light)?",
    rf"(?:at|on|upon|with) (?:the )?(?:onset|start|beginning) of (?:the )?{_PH}(?: phase| light)?",
    rf"(?:at|on|upon|with) (?:the )?{_PH} onset",
    rf"(?:when|as|once) (?:the )?(?:light|signal) (?:turns|changes to|goes|switches to) {_PH}",
    rf"during (?:the )?{_PH}(?: phase| interval| light)?",
    rf"(?:{_TIME} (?:before|after|prior to)|(?:just|right|shortly) (?:before|after)|at|around|near) {_DEC}",
    rf"{_DIST} (?:before|from|ahead of|short of) the (?:stop[- ]?bar|stop[- ]?line)",
    rf"{_TIME} before (?:the ego )?(?:reaches|enters|arrives at) the (?:intersection|junction|conflict(?: point| zone)?|stop bar)",
    r"(?:when|as|once) (?:the ego )?(?:reaches|enters|arrives at) the (?:intersection|junction|conflict(?: point| zone)?)",
    rf"(?:starting|beginning|from|opens) (?:at )?(?:t ?= ?)?{_TIME}(?: into the (?:scenario|run|simulation|test))?",
    rf"{_TIME} into the (?:scenario|run|simulation|test)",
    rf"\bat (?:t ?= ?)?{_TIME}",
)
DURATION_PHRASES = (
    rf"(?:for|lasting|over) (?:a |an )?(?:period of |window of |burst of )?{_TIME}",
    rf"{_TIME} (?:long|window|episode|burst|outage|blackout)",
)


@dataclass(frozen=True)
class SpecEdit:
    """One field of the reflected spec: ``path`` in the verifier's dotted form (``faults[0].anchor``), the new
    ``value`` (JSON; None resets the field to its default) and the rule id that asked for it."""

    path: str
    value: Any
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "value": self.value, "rule": self.rule}


# what a reflection may never change: what is tested and where (the application, the map query, each fault's
# operator, stream, field and sender); a path equal to one of these or below it is refused
FIXED_PATHS = re.compile(r"^(application|map(\..*)?|intent|seed|spec_version|faults(\[\d+\])?|agents(\[\d+\])?"
                         r"|faults\[\d+\]\.(operator|stream|field|sender|name)|agents\[\d+\]\.(id|role))$")
EDIT_PATH = re.compile(r"^[a-z_][a-z0-9_]*(\[\d+\])?(\.[a-z_][a-z0-9_]*(\[\d+\])?)*$")
MAX_EDITS = 16


@dataclass(frozen=True)
class Reflection:
    diagnosis: str
    revised_prompt: str
    rule_ids: tuple[str, ...]
    backend: str = "offline"
    edits: tuple[SpecEdit, ...] = ()  # empty: the backend gave words only (the campaign then re-parses them)

    def to_dict(self) -> dict[str, Any]:
        return {"diagnosis": self.diagnosis, "revised_prompt": self.revised_prompt,
                "rule_ids": list(self.rule_ids), "backend": self.backend, "edits": [e.to_dict() for e in self.edits]}


def validate_reflection(data: dict[str, Any], notes: tuple[KnowledgeNote, ...], max_chars: int,
                        backend: str) -> Reflection:
    errors = ErrorCollector()
    known = {n.id for n in notes}
    diagnosis, revised, rules = data.get("diagnosis"), data.get("revised_prompt"), data.get("rule_ids")
    if not isinstance(diagnosis, str) or not diagnosis.strip():
        errors.add("diagnosis", "a non-empty diagnosis is required")
    elif len(diagnosis) > MAX_DIAGNOSIS_CHARS:
        errors.add("diagnosis", f"longer than {MAX_DIAGNOSIS_CHARS} chars")
    if not isinstance(revised, str) or not revised.strip():
        errors.add("revised_prompt", "a non-empty revised prompt is required")
    elif len(revised) > max_chars:
        errors.add("revised_prompt", f"{len(revised)} chars exceeds the {max_chars}-char limit")
    if not isinstance(rules, list) or not rules:
        errors.add("rule_ids", "cite at least one knowledge-base rule id", f"known: {sorted(known)}")
    else:
        for i, r in enumerate(rules):
            if r not in known:
                errors.add(f"rule_ids[{i}]", f"{r!r} is not a knowledge-base rule", f"known: {sorted(known)}")
    edits = _validate_edits(data.get("edits", []), known, errors)
    extra = set(data) - {"diagnosis", "revised_prompt", "rule_ids", "edits"}
    if extra:
        errors.add(sorted(extra)[0], "not a field of the reflection schema",
                   "diagnosis, revised_prompt, rule_ids, edits")
    errors.raise_if_any()
    return Reflection(str(diagnosis).strip(), " ".join(str(revised).split()),
                      tuple(dict.fromkeys(str(r) for r in rules or ())), backend, edits)


def _validate_edits(raw: Any, known: set[str], errors: ErrorCollector) -> tuple[SpecEdit, ...]:
    """The ``edits`` list: each an object {path, value, rule} whose path is a spec field a reflection may change."""
    if not isinstance(raw, list):
        errors.add("edits", "a list of {path, value, rule} objects is required", "[] when only the prompt changes")
        return ()
    if len(raw) > MAX_EDITS:
        errors.add("edits", f"{len(raw)} edits; at most {MAX_EDITS}")
        return ()
    out = []
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or set(e) - {"path", "value", "rule"} or "path" not in e:
            errors.add(f"edits[{i}]", "an object with path, value and rule is required",
                       '{"path": "faults[0].anchor.offset_s", "value": -0.5, "rule": "window_after_decision"}')
            continue
        path, rule = e["path"], e.get("rule", "")
        if not isinstance(path, str) or not EDIT_PATH.match(path):
            errors.add(f"edits[{i}].path", f"{path!r} is not a dotted spec path", "e.g. v2x.channel.range_m")
        elif FIXED_PATHS.match(path):
            errors.add(f"edits[{i}].path", f"{path} is what the test is about: a reflection may not change it",
                       "edit timing, magnitude, geometry or the channel instead")
        elif rule not in known:
            errors.add(f"edits[{i}].rule", f"{rule!r} is not a knowledge-base rule", f"known: {sorted(known)}")
        else:
            out.append(SpecEdit(path, e.get("value"), rule))
    return tuple(out)


# ── prompt rewriting ───────────────────────────────────────────────────────
def _sentences(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in re.finditer(r"(?<!\d)[.;!?]+(?=\s|$)", text):
        out.append((start, m.end()))
        start = m.end()
    if start < len(text):
        out.append((start, len(text)))
    return out or [(0, 0)]


def fault_cues(text: str) -> list[tuple[int, int]]:
    """Spans of the fault verbs in a raw prompt, one per fault, in order (the parser's grouping).

    As in ``intent_faults.parse_faults``: cues in one sentence merge unless a separator
    lies between them (a comma separates different operators, not repeats of one).
    """
    spans: list[tuple[int, int, str]] = []
    for op, pattern, _ctx, _prio in lx.fault_cue_table():
        for m in re.finditer(pattern, text, _I):
            if not any(a < m.end() and m.start() < b for a, b, _o in spans):
                spans.append((m.start(), m.end(), str(op)))
    spans.sort()
    merged: list[tuple[int, int, str]] = []
    for a, b, op in spans:
        if merged:
            gap = text[merged[-1][1]:a]
            same = op == merged[-1][2]
            sep = r"\b(and|while|but|plus|whereas|also|then|meanwhile)\b|[;.!?]" + ("" if same else "|,")
            if not re.search(sep, gap, _I) and len(gap) < (60 if same else 40):
                merged[-1] = (merged[-1][0], b, merged[-1][2])
                continue
        merged.append((a, b, op))
    return [(a, b) for a, b, _op in merged]


class Rewriter:
    """Edits a prompt in place, phrase by phrase; falls back to appending a sentence."""

    def __init__(self, prompt: str):
        self.text = " ".join(prompt.split())

    def _fault_sentence(self, index: int) -> tuple[int, int, tuple[int, int] | None]:
        cues = fault_cues(self.text)
        cue = cues[index] if index < len(cues) else (cues[-1] if cues else None)
        if cue is None:
            return 0, len(self.text), None
        for a, b in _sentences(self.text):
            if a <= cue[0] < b:
                return a, b, cue
        return 0, len(self.text), cue

    def _remove_in_sentence(self, index: int, patterns: tuple[str, ...]) -> None:
        a, b, _cue = self._fault_sentence(index)
        sentence = self.text[a:b]
        for pattern in patterns:
            sentence = re.sub(r"\s*,?\s*\b" + pattern, "", sentence, flags=_I)
        self.text = self.text[:a] + sentence + self.text[b:]
        self._tidy()

    def set_anchor(self, index: int, phrase: str, drop_duration: bool = True) -> None:
        self._remove_in_sentence(index, ANCHOR_PHRASES + (DURATION_PHRASES if drop_duration else ()))
        _a, _b, cue = self._fault_sentence(index)
        if cue is None:  # one such sentence, revised in place round after round
            self.replace_or_append(r"The fault starts\b[^.]*\.", f"The fault starts {phrase}.", f"The fault starts {phrase}.")
        else:
            self.text = self.text[:cue[1]] + f" {phrase}" + self.text[cue[1]:]
        self._tidy()

    def drop_duration(self, index: int) -> None:
        self._remove_in_sentence(index, DURATION_PHRASES)

    def set_magnitude(self, index: int, fault: FaultEvidence, value: float) -> None:
        if fault.operator is FaultOperator.DROP:  # a burst replaces a loss rate: "lose 40 %" -> "lose 6 consecutive"
            self._remove_in_sentence(index, (_LOSS_RATE,))
        a, b, cue = self._fault_sentence(index)
        sentence = self.text[a:b]
        op = fault.operator
        if op is FaultOperator.DROP:
            m = re.search(rf"\b\d+(?=\s+(?:consecutive |successive )?{_NOUNS})", sentence, _I) or \
                re.search(r"(?<=burst of )\d+", sentence, _I)
            new = str(int(value))
            phrase = f" {new} consecutive messages"
        else:
            info = cat.FAULT_OPERATORS[op.value]  # the magnitude's unit and quantity kind: the catalogue's
            unit = {"dist": _DIST, "speed": rf"{_NUM}\s*(?:km/h|kph|mph|m/s)"}.get(info.magnitude_quantity or "", _TIME)
            m = None
            for cand in re.finditer(unit, sentence, _I):
                after = sentence[cand.end():cand.end() + 12]
                before = sentence[max(0, cand.start() - 12):cand.start()]
                if re.match(r"\s+(before|after|prior|into)\b", after, _I) or \
                        re.search(r"\b(for|lasting|over|at|from|starting)\s+$", before, _I):
                    continue
                m = cand
                break
            u = info.magnitude_unit if info.magnitude_quantity in ("dist", "speed") else "s"
            new = f"{value:g} {u}"
            phrase = f" by {new}"
        if m is not None:
            sentence = sentence[:m.start()] + new + sentence[m.end():]
            self.text = self.text[:a] + sentence + self.text[b:]
        elif cue is not None:
            at = cue[1] + (1 if self.text[cue[1]:cue[1] + 1] == "=" else 0)  # "loss=": the value after the sign
            self.text = self.text[:at] + phrase + self.text[at:]
        else:
            self.replace_or_append(r"The fault magnitude is\b[^.]*\.", f"The fault magnitude is {new}.",
                                   f"The fault magnitude is {new}.")
        self._tidy()

    def equip(self) -> None:
        self.text = re.sub(lx.UNEQUIPPED, "equipped", self.text, flags=_I)
        self._tidy()

    def replace_or_append(self, pattern: str, phrase: str, sentence: str) -> None:
        """Replace the first phrase matching ``pattern`` (dropping later ones), else append ``sentence``."""
        matches = list(re.finditer(pattern, self.text, _I))
        if not matches:
            self.append(sentence)
            return
        for m in reversed(matches[1:]):
            self.text = self.text[:m.start()] + self.text[m.end():]
        first = matches[0]
        self.text = self.text[:first.start()] + phrase + self.text[first.end():]
        self._tidy()

    def append(self, sentence: str) -> None:
        """Add ``sentence`` unless the prompt already says it (a round must not repeat the last one's words)."""
        if " ".join(sentence.split()).lower() in self.text.lower():
            return
        self.text = self.text.rstrip()
        if self.text and self.text[-1] not in ".!?":
            self.text += "."
        self.text = f"{self.text} {sentence}".strip()

    def _tidy(self) -> None:
        t = re.sub(r"\s+", " ", self.text)
        t = re.sub(r"\s+([,.;!?])", r"\1", t)
        t = re.sub(r",\s*,", ",", t)
        self.text = t.strip()


# ── rules ──────────────────────────────────────────────────────────────────
@dataclass
class _Ctx:
    prompt: str
    d: EvidenceDigest
    notes: dict[str, KnowledgeNote]
    rw: Rewriter
    fired: list[str]
    why: list[str]
    timing_fixed: set[int]
    spec: dict[str, Any] | None = None  # the spec that ran (JSON data); None: words only, no field edits
    edits: dict[str, SpecEdit] = field(default_factory=dict)  # by path: a later rule's value for a path wins

    def edit(self, path: str, value: Any, rule: str) -> None:
        """Ask for ``path`` = ``value`` in the reflected spec (only when the caller gave the spec)."""
        if self.spec is not None:
            self.edits.pop(path, None)
            self.edits[path] = SpecEdit(path, value, rule)

    def agents(self, *roles: str) -> list[tuple[int, dict[str, Any]]]:
        """(index, agent) of the spec's agents with one of ``roles`` (all when none is named)."""
        found = (self.spec or {}).get("agents") or []
        return [(i, a) for i, a in enumerate(found) if not roles or a.get("role") in roles]

    @property
    def app(self) -> cat.ApplicationInfo:
        return APPLICATIONS[self.d.application]

    @property
    def signal_app(self) -> bool:
        return self.app.kind is AppKind.SIGNAL

    def fire(self, rule: str, detail: str) -> None:
        if rule not in self.fired:
            self.fired.append(rule)
        self.why.append(f"{self.notes[rule].title}: {detail}" if rule in self.notes else detail)


_budget = tolerance.freshness_budget_s


def _past(kind: str, app: cat.ApplicationInfo, stream: Stream, value: float) -> float:
    """The magnitude the reflector asks for when a fault of tolerance ``kind`` stays tolerated: clearly past the
    limit (a latency or age: the budget plus a margin; a countdown or speed error: 3 with its sign; a position:
    5 m; a burst: n* + 2 messages)."""
    budget = _budget(app, stream)
    sign = -1.0 if value < 0 else 1.0
    return {"latency": round(budget + 0.2, 2), "age": round(2.0 * budget, 2), "countdown": 3.0 * sign,
            "position": 5.0, "speed": -3.0 if value <= 0 else 3.0,
            "burst": tolerance.limit("burst", app, stream) + 3.0}[kind]


def _threshold(app: cat.ApplicationInfo, f: FaultEvidence) -> tuple[bool, float] | None:
    """(tolerated?, a magnitude past it) for an operator whose catalogue entry names a tolerance kind
    (``lastv2x.core.tolerance``): its magnitude, or for a burst the messages it dropped in a row (a random drop's
    longest run: losing 40 % of a stream loses many messages, rarely enough of them in a row to matter)."""
    kind = cat.FAULT_OPERATORS[f.operator.value].tolerance
    value: float | None
    if kind == "burst":
        value = f.longest_drop_run if f.longest_drop_run is not None else f.messages_affected
    else:
        value = f.magnitude
    if not kind or value is None:
        return None
    return tolerance.tolerated(kind, app, f.stream, value), _past(kind, app, f.stream, value)


def _conflict_role(app: Application) -> str:
    return "oncoming" if app is Application.LTA else "cross"


# a loss rate the burst replaces: "40 % (of)", "every third", "one in five", "1 out of 5"
_LOSS_RATE = (r"(?:\d+(?:\.\d+)?\s*(?:%|percent|per ?cent)(?:\s+of\b)?|every (?:other|second|third|fourth|fifth|\d+(?:st|nd|rd|th))"
              r"|(?:one|two|\d+) (?:in|out of) (?:two|three|four|five|six|ten|\d+)(?: packets| messages)?)")
JUST_BEFORE_AMBER = ("just before amber", {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5})


def _align(c: _Ctx, f: FaultEvidence) -> tuple[str, dict[str, Any]]:
    """Where a fault must start to meet the decision: the words, and the spec anchor they parse to."""
    if c.signal_app:
        if f.operator is FaultOperator.FREEZE and f.stream is Stream.SPAT:
            return JUST_BEFORE_AMBER
        lead = 1.5 + (c.app.freshness_budget_s if _temporal(f.operator) else 0.0)
        return (f"{lead:g} s before the decision point",
                {"kind": "ego_event", "event": "decision_epoch", "offset_s": -lead})
    if c.d.application in (Application.IMA, Application.LTA):
        return ("2 s before the ego reaches the intersection",
                {"kind": "ego_event", "event": "stop_bar_distance", "offset_s": -2.0, "distance_m": 0.0})
    t = max(0.0, (c.d.decision_epoch_s or 4.0) - 1.0)
    return f"starting at {t:g} s", {"kind": "scenario_time", "offset_s": t}


def _set_anchor(c: _Ctx, i: int, where: tuple[str, dict[str, Any]], rule: str) -> None:
    """Move fault ``i``'s window to ``where`` (words and anchor), active to the end (the shrinker shortens it)."""
    phrase, anchor = where
    c.rw.set_anchor(i, phrase)
    c.edit(f"faults[{i}].anchor", anchor, rule)
    c.edit(f"faults[{i}].duration_s", None, rule)


_ARRIVAL = r"arriv\w* (?:\d+(?:\.\d+)?\s*s (?:after|before) the ego|at the same time as the ego)"
_GAP = r"(?:a )?(?:gap|headway) of \d+(?:\.\d+)?\s*m\b"
_RANGE = (r"(?:a |an )?(?:\d+(?:\.\d+)?\s*m (?:radio |communication )?range|(?:radio |communication )?range "
          r"(?:of |is )?\d+(?:\.\d+)?\s*m\b)")
_PENETRATION = (r"\d+(?:\.\d+)?\s*(?:%|percent) (?:v2x )?penetration|penetration (?:of |is )?\d+(?:\.\d+)?\s*"
                r"(?:%|percent)?")
def _temporal(op: FaultOperator) -> bool:
    """Does the operator change when information arrives (its catalogue kind), not what it says?"""
    return cat.FAULT_OPERATORS[op.value].kind is cat.FaultKind.TEMPORAL


def _rule_gt_unsafe(c: _Ctx) -> bool:
    if not c.d.gt_violations:
        return False
    app = c.d.application
    if c.signal_app:
        c.rw.append("The ego approaches at 30 km/h.")  # the last ego speed in a prompt wins
        c.edit("ego.speed_mps", round(30 / 3.6, 2), "gt_unsafe")
    elif cat.APPLICATIONS[app].follows_lead:  # FCW, EEBL
        c.rw.replace_or_append(_GAP, "a gap of 60 m", "The lead keeps a gap of 60 m.")
        for i, _a in c.agents("lead"):
            c.edit(f"agents[{i}].gap_m", 60.0, "gt_unsafe")
    else:
        c.rw.replace_or_append(_ARRIVAL, "arrives 3 s after the ego",
                               f"The {_conflict_role(app)} vehicle arrives 3 s after the ego.")
        _arrival(c, 3.0, "gt_unsafe")
    c.fire("gt_unsafe", f"the ground-truth twin also violated ({', '.join(c.d.gt_violations)})")
    return True


def _rule_verifier(c: _Ctx) -> None:
    errors = [f for f in c.d.verifier_findings if f.severity == "error"]
    if errors:
        c.fire("verifier_error", "; ".join(f"{f.check}: {f.message}" for f in errors[:3]))


def _arrival(c: _Ctx, offset_s: float, rule: str) -> None:
    """The conflicting vehicle (cross traffic, or oncoming for LTA) arrives ``offset_s`` after the ego."""
    role = "opposing" if c.d.application is Application.LTA else "cross"
    for i, _a in c.agents(role):
        c.edit(f"agents[{i}].arrival_offset_s", offset_s, rule)


def _rule_faults(c: _Ctx) -> None:
    d = c.d
    t_dec = d.decision_epoch_s
    for i, f in enumerate(d.faults):
        if f.sender_equipped is False:
            c.rw.equip()
            for k, a in c.agents():
                if a.get("equipped") is False and (f.sender is None or a.get("id") == f.sender):
                    c.edit(f"agents[{k}].equipped", True, "unequipped_sender")
            c.fire("unequipped_sender", f"{f.name} targets {f.sender or 'a sender'}, which is unequipped")
            continue  # equipping is not a timing fix: the magnitude rule still applies
        if f.delivered_in_window == 0 or (d.ego_in_range_fraction is not None and d.ego_in_range_fraction < 0.5
                                           and not d.divergence_episodes):
            c.rw.replace_or_append(_RANGE, "a radio range of 300 m", "The radio range is 300 m.")
            c.edit("v2x.channel.range_m", 300.0, "no_exposure")
            if c.signal_app and not re.search(lx.SPAT_RELAY, c.rw.text, _I):
                c.rw.append("SPaT is relayed between RSUs.")
            if c.signal_app:
                c.edit("v2x.spat_relay", True, "no_exposure")
            c.fire("no_exposure", f"the ego received no {f.stream} in the window of {f.name}"
                   if f.delivered_in_window == 0 else
                   f"the ego was in range for only {100 * (d.ego_in_range_fraction or 0):.0f} % of the approach")
            c.timing_fixed.add(i)
            continue
        end = f.window_end_s
        if t_dec is not None and f.window_start_s >= t_dec:
            _set_anchor(c, i, _align(c, f), "window_after_decision")
            c.fire("window_after_decision", f"{f.name} opens at {f.window_start_s:g} s, after the decision epoch at "
                                            f"{t_dec:g} s; no magnitude fixes timing")
            c.timing_fixed.add(i)
            continue
        if t_dec is not None and end is not None and end < t_dec - _budget(c.app, f.stream):
            _set_anchor(c, i, _align(c, f), "window_before_decision")
            c.fire("window_before_decision", f"{f.name} ends at {end:g} s, before the decision epoch at {t_dec:g} s")
            c.timing_fixed.add(i)
            continue
        if f.operator is FaultOperator.FREEZE and f.stream is Stream.SPAT and f.captured_phase in (Phase.AMBER,
                                                                                                    Phase.RED):
            _set_anchor(c, i, JUST_BEFORE_AMBER, "freeze_captures_onset_phase")
            c.fire("freeze_captures_onset_phase", f"{f.name} captured {f.captured_phase} when it opened, so the ego "
                                                  "believed a stopping phase and stopped safely")
            c.timing_fixed.add(i)
            continue
        aoi = d.decision_epoch_aoi_s.get(f.stream)
        budget = _budget(c.app, f.stream)
        th = _threshold(c.app, f)
        if _temporal(f.operator) and aoi is not None and aoi <= budget and not (th and th[0]):
            _set_anchor(c, i, _align(c, f), "aoi_fresh_at_decision")
            c.fire("aoi_fresh_at_decision", f"{f.stream} AoI at the decision epoch was {aoi:g} s, within the "
                                            f"{budget:g} s budget: the window missed the decision")
            c.timing_fixed.add(i)
    for i, f in enumerate(d.faults):
        if i in c.timing_fixed:
            continue
        th = _threshold(c.app, f)
        if th and th[0]:
            c.rw.set_magnitude(i, f, th[1])
            if f.operator is FaultOperator.DROP:
                c.edit(f"faults[{i}].burst_count", int(th[1]), "magnitude_below_threshold")
                c.edit(f"faults[{i}].probability", None, "magnitude_below_threshold")
            else:
                c.edit(f"faults[{i}].magnitude", th[1], "magnitude_below_threshold")
            if f.longest_drop_run is not None:  # a random drop: its runs, not its count, delay the information
                what = (f"{f.name} lost at most {f.longest_drop_run} {f.stream} message(s) in a row "
                        f"({f.messages_affected or 0} in all)")
            else:
                what = f"{f.name} magnitude {f.magnitude if f.magnitude is not None else f.messages_affected}"
            c.fire("magnitude_below_threshold", f"{what}, within the {c.d.application} tolerance; raised to {th[1]:g}"
                   + (" consecutive messages" if f.operator is FaultOperator.DROP else ""))


def _crossing_phantom(c: _Ctx) -> bool:
    """Is a phantom (ghost_sender) on the crossing route the scene's conflict (IMA, LTA)? From the spec that ran,
    else from the words."""
    if c.app.name not in CROSS_GHOST_APPS or not any(
            f.operator is FaultOperator.GHOST_SENDER for f in c.d.faults):
        return False
    faults = (c.spec or {}).get("faults")
    if faults:
        return any(f.get("ghost_route") == "cross" for f in faults if isinstance(f, dict))
    return bool(re.search(lx.GHOST_CROSS_ROUTE, c.prompt, _I))


def _rule_conflict(c: _Ctx) -> None:
    gap = c.d.conflict_arrival_gap_s
    if c.signal_app or gap is None or abs(gap) <= cat.CONFLICT_WINDOW_S or _crossing_phantom(c):
        return  # (a crossing phantom is the conflict: the real car outside the window is the point)
    c.rw.replace_or_append(_ARRIVAL, "arrives 1 s after the ego",
                           f"The {_conflict_role(c.d.application)} vehicle arrives 1 s after the ego.")
    _arrival(c, 1.0, "conflict_outside_window")
    c.fire("conflict_outside_window", f"the conflicting arrival is {gap:+g} s from the ego, outside the "
                                      f"{cat.CONFLICT_WINDOW_S:g} s window")


def _rule_benign(c: _Ctx) -> None:
    negative = [e for e in c.d.divergence_episodes if e.hazard_slack_s is not None and e.hazard_slack_s < 0]
    if not negative or c.d.md_violations or c.fired:
        return
    if c.signal_app:
        for i, f in enumerate(c.d.faults):
            if f.stream is Stream.SPAT:
                _set_anchor(c, i, JUST_BEFORE_AMBER, "belief_wrong_decision_same")
                break
    else:
        c.rw.replace_or_append(_ARRIVAL, "arrives at the same time as the ego",
                               f"The {_conflict_role(c.d.application)} vehicle arrives at the same time as the ego.")
        _arrival(c, 0.0, "belief_wrong_decision_same")
    c.fire("belief_wrong_decision_same", f"{len(negative)} episode(s) overlapped the decision but the action "
                                         "did not change")


def _rule_penetration(c: _Ctx) -> None:
    p = c.d.penetration
    if p is not None and p < cat.PENETRATION_WARNING_BELOW:
        c.rw.replace_or_append(_PENETRATION, "80 % penetration", "V2X penetration is 80 %.")
        c.edit("v2x.penetration", 0.8, "low_penetration")
        c.fire("low_penetration", f"penetration {p:g} < {cat.PENETRATION_WARNING_BELOW:g}")


def _rule_phantom_brake(c: _Ctx) -> None:
    """A phantom (ghost_sender) made the ego brake (FCW, EEBL) or yield (IMA, LTA) and its twin not, and nothing
    failed: nobody was behind it. The revised intent adds a tailgater (a follower strikes a warned, braking ego: the
    adjudicator's rule for FCW/EEBL; any collision counts for IMA/LTA)."""
    ghost = any(f.operator is FaultOperator.GHOST_SENDER for f in c.d.faults)
    warning = "brake" if c.app.ahead_only else "yield" if c.app.name in CROSS_GHOST_APPS \
        else None
    masked = "phantom_masked_by_real_conflict" in c.fired  # the twin's yield was the real car's: about to go
    if not (ghost and warning is not None and c.d.md_decision == warning and (c.d.gt_decision != warning or masked)
            and not c.d.md_violations) or c.agents("follower") or re.search(lx.FOLLOWER_CUE, c.prompt, _I):
        return
    c.rw.append(f"A tailgater follows the ego {lx.TAILGATER_GAP_M:g} m behind.")
    c.fire("phantom_brake_nobody_behind", f"the ego {'braked' if warning == 'brake' else 'yielded'} for the phantom "
                                          "vehicle and its twin did not, but nobody followed it")


def _rule_phantom_masked(c: _Ctx) -> None:
    """A phantom on the crossing route, and the twin yielded too: to the real crossing car, so the phantom changed
    nothing. The revised intent sends the real car through well before the window (9 s before the ego: early enough
    to be gone, and it needs no longer run-up than the ego's, where 9 s after it would need a longer one)."""
    if not (_crossing_phantom(c) and c.d.md_decision == "yield" and c.d.gt_decision == "yield"):
        return
    c.rw.replace_or_append(_ARRIVAL, "arrives 9 s before the ego",
                           f"The real {_conflict_role(c.d.application)} vehicle arrives 9 s before the ego.")
    _arrival(c, -9.0, "phantom_masked_by_real_conflict")
    c.fire("phantom_masked_by_real_conflict", "the ego and its twin both yielded, the twin to the real "
                                              f"{_conflict_role(c.d.application)} car")


RULES: tuple[Callable[[_Ctx], Any], ...] = (_rule_verifier, _rule_faults, _rule_phantom_masked, _rule_phantom_brake,
                                             _rule_conflict, _rule_benign, _rule_penetration)


def reflect_offline(prompt: str, digest: EvidenceDigest, notes: tuple[KnowledgeNote, ...],
                    spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rule-based reflection; returns the reflection JSON (diagnosis, revised_prompt, rule_ids, and the field
    edits to ``spec``, the spec that ran, when it is given)."""
    by_id = {n.id: n for n in notes}
    ctx = _Ctx(prompt, digest, by_id, Rewriter(prompt), [], [], set(), spec)
    if digest.admitted:
        ctx.fire("admitted", "the failure is already admitted; minimize it instead")
    elif not _rule_gt_unsafe(ctx):
        for rule in RULES:
            rule(ctx)
        if not [r for r in ctx.fired if r != "verifier_error"]:
            ctx.fire("no_diagnosis", f"failure margin {digest.failure_margin}; leave it to parameter search")
    unknown = [r for r in ctx.fired if r not in by_id]
    if unknown:
        raise ValueError(f"knowledge base lacks rules {unknown}")
    return {"diagnosis": "; ".join(ctx.why) + ".", "revised_prompt": ctx.rw.text, "rule_ids": ctx.fired,
            "edits": [e.to_dict() for e in ctx.edits.values()]}


__all__ = ["FIXED_PATHS", "RULES", "Reflection", "Rewriter", "SpecEdit", "fault_cues", "reflect_offline",
           "validate_reflection"]
