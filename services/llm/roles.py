"""The three LLM roles over any backend: parse_intent, plan_scene, reflect (+ verify).

This is the API a gRPC servicer calls. It owns everything a backend must not be
trusted with: input limits, schema validation of every answer, the verifier in the
parse-repair loop, the map catalogue check, pinning the seed and the intent into
the spec, seed-based assignment of open fields, and attempt budgets. Backends only
turn requests into JSON objects.

Parse-repair loop (LAST-V2X Module I): attempt 1 parses; each later attempt gives
the backend its previous answer and the problems found (schema violations, or
verifier error findings with their minimal repairs) and asks for a corrected spec.
It stops at the first answer that validates and verifies without errors, when an
answer repeats the previous one (no progress), or after ``max_attempts``
(``ParseFailed``). Warnings and notes never trigger a repair: they may be
deliberate (an unequipped conflict vehicle as a silent-miss probe).

No silent drop (issue 19): every accepted answer, whatever the backend, goes through the
fault-cue guard (``services.llm.fault_cues``): a clause of the intent that asks for a
fault the spec does not contain becomes a ``parser.unparsed_fault`` WARNING naming the
clause (``ParseResult.unparsed``). An LLM backend is first asked once more for the
missing fault while attempts remain (the offline grammar is deterministic, so it is not);
the best answer is returned with the finding if the fault never comes.

No silent quantity (issue 31): each quantity with a unit in the intent must also be in the answer (a
fault's field where its clause asks for a fault), else ``services.llm.quantity_guard`` reports its clause
as a ``parser.unparsed_fault`` too. ``ParseResult.unparsed_clauses`` gives the clauses as quoted: what a
campaign names when it stops on a partial parse.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.map_hosting import junctions_ahead_needed, signal_required
from lastv2x.core.spec import JunctionKind, ScenarioSpec, parse_spec
from lastv2x.core.verifier import Finding, Repair, Severity, VerificationReport, verify
from services.llm import fault_cues, quantity_guard
from services.llm import lexicon as lx
from services.llm.assignment import Assigner
from services.llm.backends import (
    Backend,
    ParseRequest,
    PlanRequest,
    ReflectRequest,
    RepairRequest,
    create_backend,
)
from services.llm.config import LlmConfig
from services.llm.dialogue import SPEAKER, corrected, withdrawn
from services.llm.errors import MalformedOutput, ParseFailed, RoleFailed
from services.llm.evidence import EvidenceDigest
from services.llm.grammar import LANGUAGE_CHECK, LANGUAGE_SAID, stated_applications
from services.llm.knowledge import KnowledgeNote, load_notes
from services.llm.maps import MapView, junction_kind_for
from services.llm.payload import payload_lines
from services.llm.planner import ApproachCandidate, ScenePlan, check_candidates, validate_plan
from services.llm.reflector import Reflection, validate_reflection
from services.llm.stated import (
    EGO,
    STATED_CHECK,
    keep_stated,
    needs_stated,
    stated_fault_fields,
    stated_scene_fields,
    stated_streams,
)
from services.llm.table_rows import rows_as_sentences
from services.llm.text_forms import as_changed, code_lines, outline, telegram

MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class AttemptRecord:
    attempt: int
    problems: tuple[dict[str, Any], ...]  # what was wrong with this attempt's answer (empty: accepted)
    notes: tuple[str, ...] = ()
    data: dict[str, Any] | None = field(default=None, repr=False)  # the answer, as pinned


@dataclass(frozen=True)
class ParseResult:
    spec: ScenarioSpec
    attempts_used: int
    # final verifier findings + parser observations; errors only when the intent's own fault does not verify and
    # only changing what it states would (parser.stated_fault_kept says which value the repair wanted)
    findings: tuple[Finding, ...]
    backend: str
    notes: tuple[str, ...] = ()  # explanation: which words set which fields, what the seed assigned
    history: tuple[AttemptRecord, ...] = field(default=(), repr=False)
    decision_epoch_s: float = math.inf
    stop_bar_s: float = math.inf

    @property
    def report(self) -> VerificationReport:
        """Every finding (verifier + parser observations) as one report, for ParseIntentResponse.report."""
        return VerificationReport(self.findings, self.decision_epoch_s, self.stop_bar_s)

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def unparsed(self) -> tuple[Finding, ...]:
        """Clauses asking for a fault, or holding a quantity, the spec does not contain (``parser.unparsed_fault``)."""
        return tuple(f for f in self.findings if f.check == fault_cues.CHECK)

    @property
    def unparsed_clauses(self) -> tuple[str, ...]:
        """The clauses of :attr:`unparsed`, as quoted (what a campaign names when it stops on a partial parse)."""
        return tuple(fault_cues.quoted_clause(f) for f in self.unparsed)

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec.model_dump(mode="json"), "attempts_used": self.attempts_used,
                "findings": [f.to_dict() for f in self.findings], "backend": self.backend,
                "notes": list(self.notes)}


def _unread(text: str, spec: ScenarioSpec, answers: list[dict[str, Any] | None], observed: Sequence[Finding]
            ) -> list[Finding]:
    """The guards' ``parser.unparsed_fault`` findings on an answer: clauses asking for a fault it lacks, quantities
    bound nowhere, and, in a text the offline parser read only the English words of, clauses about a stream no fault
    is on."""
    missing = _dedupe(observed, fault_cues.findings(text, [f.operator.value for f in spec.faults],
                                                    [f.stream.value for f in spec.faults]))
    missing += quantity_guard.findings(text, answers, list(observed) + missing)
    language = next((f.message for f in observed if f.check == LANGUAGE_CHECK), None)
    if language is not None:
        said = LANGUAGE_SAID.search(language)
        missing += fault_cues.foreign_findings(text, said.group(1) if said else "another language",
                                               [f.stream.value for f in spec.faults], list(observed) + missing)
    return missing


def _dedupe(observed: Sequence[Finding], missing: Sequence[Finding]) -> list[Finding]:
    """The guard's findings less those whose clause a backend's own ``parser.unparsed_fault`` finding
    already quotes (the offline grammar reports a fault it recognised but could not build)."""
    quoted = [fault_cues.quoted_clause(f).lower() for f in observed if f.check == fault_cues.CHECK]
    out = []
    for f in missing:
        clause = fault_cues.quoted_clause(f).lower()
        if not any(q and clause and (clause in q or q in clause) for q in quoted):
            out.append(f)
    return out


def _violation_dicts(exc: InvalidArgument) -> list[dict[str, Any]]:
    return [{"field": v.field, "description": v.description, "hint": v.hint} for v in exc.violations]


# a list item: "- 12 SPaT lost", "2) MAP late", a checklist's "[ ] relay silent", a log line's "[10.42] V2 decel", a
# comment's "# covered by FCW-R2", a run sheet's clock time "00:00:12 SPaT reports red ..."
_LIST_ITEM = re.compile(r"(?:[-*\u2022#]|\d{1,2}[.)]|\[[ xX]?\]|\[\d[\d.:]*\]|\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s")
# a line opened by a key: a ticket's field ("RLVW-212 Stale SPaT\nDescription: SPaT messages are ..."), a hand-typed
# YAML / key=value line ("ego_speed: 90 km/h"), a chat's speaker ("Ben: no, the countdown reads longer"); and a
# Gherkin step ("Given the ego approaches ...", "Then the SPaT stream is delayed ...")
_FIELD_LINE = re.compile(r"^(?:[a-z][\w/-]*(?: [\w/-]+){0,2}\s*[:=](?:\s|$)|(?:feature|scenario(?: outline)?|background"
                         r"|examples|given|when|then|and|but)\b)", re.IGNORECASE)
# a bulleted key line ("- operator: suppress_sender", "* duration: 4 s"): its bullet
_KEY_ITEM = re.compile(r"^[-*\u2022]\s+(?=[a-z][\w ]{0,20}\s*[:=])", re.IGNORECASE)
# a hand-typed key ("ego_speed:", "lead_decel =") opening a line; a fault's attribute lines ("start:", "duration:")
_KEY_LINE = re.compile(r"^([a-z][\w/-]*)\s*[:=](?:\s|$)", re.IGNORECASE)
_ATTRIBUTE_KEY = re.compile(r"^(start|starts?[ _]at|from|until|end|stop|duration|length|window|trigger|anchor|magnitude"
                            r"|offset|value|amount|stream|channel|sender|target|probability|rate|burst|count|age|look ?back|seconds[ _]old"
                            r"|staleness|phase)(?:[ _](?:s|ms))?"
                            r"\s*[:=]", re.IGNORECASE)
# a headline in capitals before its story ("GHOST CAR HAUNTS TEST INTERSECTION -- Engineers will today ..."): a line of
# its own
_HEADLINE = re.compile(r"^([A-Z0-9][A-Z0-9 ,:'!?&/-]{10,}[A-Z0-9!?])\s+(?:--|\u2014|\u2013)\s+(?=[A-Z][a-z])")
# a checklist's leader dots between an item and its setting ("Ego speed ... SET 50 KPH")
_LEADER = re.compile(r"\s+\.{2,}\s+|\s*\u2026\s+")
# a config file's section header ("[v2x]", "[[impairment]]"): a line of its own
_SECTION_LINE = re.compile(r"^\[\[?[\w .-]+\]\]?$")
# Gherkin: "When" opens the step a fault is timed by; "Then", "And", "But" after it continue its sentence
_GHERKIN_WHEN = re.compile(r"^when\b", re.IGNORECASE)
_GHERKIN_CONTINUED = re.compile(r"^(then|and|but)\b", re.IGNORECASE)
# a one-line heading whose line ends its sentence: an email's subject, a ticket's title field
_HEADING_LINE = re.compile(r"^(subject|title|re|fwd?)\s*:", re.IGNORECASE)


_FENCE = re.compile(r"^\s*(```|~~~)\s*[\w+-]*\s*$")
# an XML element's line ('<fault type="speed-bias" value="-15 km/h" start="t=3.0s" duration="4s"/>'): its name and
# attributes said as keys ("fault type = speed-bias, value = -15 km/h, start = t=3.0s, duration = 4s")
_XML_LINE = re.compile(r"^\s*</?[\w:-]+(?:\s+[\w:-]+\s*=\s*\"[^\"]*\")*\s*/?>\s*$")
_XML_ATTRIBUTE = re.compile(r"([\w:-]+)\s*=\s*\"([^\"]*)\"")


def _form_lines(text: str) -> list[str]:
    """The intent's lines once the forms it may come in are read as text: a structured payload (``payload.py``), a
    Gherkin outline's Examples, a configuration's diff, a telegram, and per line code and wire formats
    (``text_forms.py``)."""
    whole = telegram(as_changed(outline(payload_lines(text.replace("\x00", " ")))))
    whole = _TICKET_FIELD.sub("\n", whole)  # ("Expected: warning within spec. Actual: warning ~0.8 s late.")
    return [x for line in whole.splitlines() for x in code_lines(line)]


# a ticket's outcome field run on after another sentence on its line: a line of its own
_TICKET_FIELD = re.compile(r"(?<=[.!?])[ \t]+(?=(?:Expected|Actual|Observed)(?: result| behaviou?r| outcome)?:)")


def _folded(line: str) -> str:
    """A line's white space folded; a spreadsheet row's tabs kept between its cells."""
    if line.count("\t") >= 2:
        return "\t".join(" ".join(cell.split()) for cell in line.split("\t"))
    return " ".join(line.split())


def _xml_as_keys(line: str) -> str:
    """An XML element's line as key = value text; a closing tag says nothing (any other line as it stands)."""
    if not _XML_LINE.match(line):
        return line
    if line.lstrip().startswith("</"):
        return ""
    name = re.match(r"\s*<([\w:-]+)", line)
    attributes = ", ".join(f"{k} = {v}" for k, v in _XML_ATTRIBUTE.findall(line))
    return f"{name.group(1) if name else ''} {attributes}".strip()


# a test function's signature ("def test_ima_crossing_pos_lag():"): a name, whose words ("lag") ask for nothing; its
# docstring is read
_DEF_LINE = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\([^)]*\)\s*(?:->\s*[^:]+)?:")
def _quoted(line: str) -> str:
    """A line an email reply quotes ("> could we drop 30% of EEBL msgs?"): what was asked before, not the request; said
    as one ``(quoted)`` sentence (``lexicon.NOT_NOW``)."""
    if not line.startswith(">"):
        return line
    said = re.sub(r"[.;!?]+(?=\s|$)", ",", line.lstrip("> ").strip()).rstrip(",")
    return f"(quoted) {said}" if said else ""


# a reply that keeps the quoted request but for what it changes ("make that countdown offset -3 s instead, everything
# else the same"): the quoted lines are the request again
_KEEPS_THE_QUOTE = re.compile(r"\b(?:everything|all|the rest) else (?:is |stays |the )?(?:the )?same\b|\botherwise (?:the )?same\b"
                              r"|\b(?:rest|everything else) (?:is |stays )?unchanged\b|\bsame as (?:quoted|above|below)\b",
                              re.IGNORECASE)


def _unquoted_when_kept(lines: list[str]) -> list[str]:
    """The lines, the quoted ones (``_quoted``) said as they were when a reply line keeps them (``_KEEPS_THE_QUOTE``)."""
    if not any(not x.startswith("(quoted)") and _KEEPS_THE_QUOTE.search(x) for x in lines):
        return lines
    return [x.removeprefix("(quoted) ") for x in lines]


class LlmRoles:
    """The LLM service core: one backend, one config, one map view."""

    def __init__(self, backend: Backend | None = None, config: LlmConfig | None = None,
                 maps: MapView | None = None, notes: tuple[KnowledgeNote, ...] | None = None):
        self.config = config or LlmConfig()
        self.backend = backend or create_backend(self.config)
        self.maps = maps or self.config.map_view()
        self.notes = notes or load_notes()

    # ── input checks ──────────────────────────────────────────────────────
    def check_text(self, text: object, field_name: str = "text") -> str:
        if not isinstance(text, str):
            raise InvalidArgument(FieldViolation(field_name, f"expected a string, got {type(text).__name__}"))
        limit = self.config.max_text_chars
        if len(text) > limit:
            raise InvalidArgument(FieldViolation(field_name, f"{len(text)} characters exceeds the {limit}-character "
                                                             "limit", "shorten the intent"))
        # white space folded; a line that opens a list item ("- 12 SPaT lost", "2) MAP late") keeps its line break,
        # so each item is a sentence of its own, as does a ticket's field ("Description: ...", "Expected: ...") after
        # its title line, and the line after an email's subject (a hard-wrapped line joins the one before)
        # (a row pasted from a spreadsheet keeps its tabs between cells, each cell's white space folded:
        # ``rows_as_sentences`` reads a header row and its data rows, and says any other such row with " | ")
        # (a code fence's marks, "```yaml", carry nothing: the block's lines are read as they stand; a JSON or
        # JavaScript-style object, and a YAML vehicle's block, are said as key lines first: ``payload.py``)
        lines = [_xml_as_keys(_DEF_LINE.sub("", x)) for x in _form_lines(text)]
        lines = _unquoted_when_kept([_quoted(_folded(line)) for line in lines if not _FENCE.match(line)])
        # (a writer's own correction after the fact, and a chat's: ``dialogue.py``)
        lines = withdrawn(corrected(lines))
        cleaned, last, when = "", "", False
        # (a pasted test matrix, "test,app,ego_speed,...\nF-03,FCW,90 km/h,...": each row a sentence, its cells named)
        for line in rows_as_sentences(list(filter(None, lines))):
            line = _LEADER.sub(": ", line)  # a checklist's leader dots ("Fault duration ... 10 SECONDS")
            line = _HEADLINE.sub(lambda m: m.group(1) + "\n", line)  # a headline before its story
            key = _KEY_LINE.match(line)
            if key:  # "ego_speed: 90 km/h": the key's words; a quoted value as it reads ('start = "T+8s"')
                line = key.group(1).replace("_", " ") + re.sub(r'([:=]\s*)"([^"]*)"\s*$', r"\1\2", line[key.end(1):])
            # a Gherkin step after "When" continues its sentence ("When the signal turns amber, then the SPaT is
            # delayed ..."), as a fault's attribute line continues the fault's ("fault: ...\nstart: when the lead
            # brakes\nduration: 3s"), so that what times the fault is in its sentence
            if (when and _GHERKIN_CONTINUED.match(line)) or (key and _ATTRIBUTE_KEY.match(line) and cleaned):
                cleaned += ", " + line  # (``last`` stays the line it continues: a list item's, say)
                continue
            # (so does a bulleted attribute under a bulleted fault: "- operator: suppress_sender" / "- duration: 4 s")
            bullet = _KEY_ITEM.match(line)
            if bullet and _ATTRIBUTE_KEY.match(line[bullet.end():]) and _KEY_ITEM.match(last):
                cleaned += ", " + line[bullet.end():]
                continue
            when = bool(_GHERKIN_WHEN.match(line)) or (when and not _FIELD_LINE.match(line) and not _LIST_ITEM.match(line))
            # (a capitalized line after a list's last item is a sentence of its own: "2) ... higher than actual\nEgo
            # follows at 2 s headway.")
            own = _LIST_ITEM.match(line) or _FIELD_LINE.match(line) or SPEAKER.match(line) or _HEADING_LINE.match(last) \
                or _SECTION_LINE.match(line) or _SECTION_LINE.match(last) \
                or (_LIST_ITEM.match(last) and line[:1].isupper())
            cleaned += ("\n" if cleaned and own else " " if cleaned else "") + line
            last = line
        if not cleaned:
            raise InvalidArgument(FieldViolation(field_name, "empty intent", "say what to test in one or two sentences"))
        return cleaned

    @staticmethod
    def check_seed(seed: object) -> int:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise InvalidArgument(FieldViolation("seed", f"expected an integer in [0, 2^63-1], got {seed!r}"))
        return seed

    def _check_attempts(self, max_attempts: int | None) -> int:
        n = self.config.max_attempts if max_attempts is None else max_attempts
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10:
            raise InvalidArgument(FieldViolation("max_attempts", f"expected 1..10, got {n!r}"))
        return n

    # ── role 1: parser ────────────────────────────────────────────────────
    def parse_intent(self, text: str, seed: int, max_attempts: int | None = None, *,
                     campaign: str = "default") -> ParseResult:
        """Natural language -> verified ScenarioSpec, repairing from findings for at most N attempts, never what the
        intent states (a stated fault field stays as stated; see ``stated_fault_fields``)."""
        text = self.check_text(text)
        seed = self.check_seed(seed)
        attempts = self._check_attempts(max_attempts)
        assigner = Assigner(seed)
        observed: list[Finding] = []
        if re.search(lx.INJECTION, text, re.IGNORECASE):
            observed.append(Finding("intent.injection", Severity.WARNING,
                                    "the intent contains instructions addressed to the model or code; they were "
                                    "treated as data and only schema-valid output was accepted", ("intent",)))
        assignment = assigner.preview(self.maps.candidates(junction_kind_for(JunctionKind.ANY, None)),
                                      application_open=len(stated_applications(text)) != 1)
        history: list[AttemptRecord] = []
        notes: list[str] = []
        data: dict[str, Any] | None = None
        raw: str | None = None
        problems: list[dict[str, Any]] = []
        findings: tuple[Finding, ...] = ()
        best: ParseResult | None = None  # a verified answer that still misses a fault the intent asks for
        rereads = not getattr(self.backend, "deterministic", False)
        stated: dict[tuple[int, str], Any] = {}  # the fault fields the first answer read from the intent
        kept: list[str] = []  # repairs that would have changed one of them (refused)
        for attempt in range(1, attempts + 1):
            try:
                if attempt == 1:
                    reply = self.backend.parse(ParseRequest(text, seed, assignment, self.maps, campaign))
                else:
                    reply = self.backend.repair(RepairRequest(text, seed, assignment, data, raw, tuple(problems),
                                                              attempt, self.maps, campaign))
            except MalformedOutput as exc:
                problems = [{"field": "<root>", "description": exc.description,
                             "hint": "answer with one JSON object matching the ScenarioSpec schema"}]
                data, raw = None, exc.raw
                history.append(AttemptRecord(attempt, tuple(problems)))
                continue
            pinned = self._pin(reply.data, text, seed, assigner, [])
            if attempt == 1:
                stated = stated_fault_fields(pinned) | stated_scene_fields(pinned, reply.notes) | stated_streams(reply.notes)
            else:
                pinned = keep_stated(pinned, stated, kept)
            if attempt > 1 and data is not None and pinned == data:
                history.append(AttemptRecord(attempt, tuple(problems), reply.notes + ("no progress",), data))
                break
            observed.extend(f for f in reply.findings if f not in observed)
            notes.extend(reply.notes)
            data, raw = self._pin(reply.data, text, seed, assigner, notes), None
            if attempt > 1:
                data = keep_stated(data, stated, [])
                notes.extend(n for n in kept if n not in notes)
            try:
                spec = parse_spec(data)
            except InvalidArgument as exc:
                problems, findings = _violation_dicts(exc), ()
                history.append(AttemptRecord(attempt, tuple(problems), reply.notes, data))
                continue
            report = verify(spec)
            findings = tuple(self._map_findings(spec, assigner)) + report.findings
            errors = [f for f in findings if f.severity is Severity.ERROR]
            problems = [f.to_dict() for f in errors]
            if errors and kept and all(needs_stated(f, stated) for f in errors):
                history.append(AttemptRecord(attempt, tuple(problems), reply.notes, data))
                break  # only changing what the intent states would verify it: kept as stated (below)
            if not errors:
                missing = _unread(text, spec, [h.data for h in history] + [data], observed)
                result = ParseResult(spec, attempt, tuple(observed) + tuple(missing) + findings, self.backend.name,
                                     tuple(notes), tuple(history) + (AttemptRecord(attempt, (), reply.notes, data),),
                                     report.decision_epoch_s, report.stop_bar_s)
                if not missing or not rereads or attempt == attempts:
                    return result
                if best is None or len(missing) < len(best.unparsed):
                    best = result
                problems = fault_cues.problems(missing)
            history.append(AttemptRecord(attempt, tuple(problems), reply.notes, data))
        if best is not None:
            return best
        if kept and data is not None and findings:
            # the intent's own fault does not verify, and only changing what it states would: the spec as stated,
            # its errors kept (a campaign runs it and searches from there), never a silent substitute
            spec = parse_spec(data)
            faults_only = all(k.startswith("faults[") for k in kept)
            note = Finding(STATED_CHECK, Severity.WARNING,
                           ("the fault as the intent states it" if faults_only else "what the intent states")
                           + " does not meet the verifier; the parser kept it as stated instead of repairing it: "
                           + "; ".join(dict.fromkeys(kept)),
                           ("faults",) + tuple(root for root in (EGO, "agents") if any(k.startswith(root) for k in kept)))
            missing = _unread(text, spec, [h.data for h in history] + [data], observed)
            used = sum(1 for h in history if "no progress" not in h.notes)  # attempts that gave a new answer
            return ParseResult(spec, used, tuple(observed) + tuple(missing) + (note,) + findings,
                               self.backend.name, tuple(notes), tuple(history), verify(spec).decision_epoch_s)
        raise ParseFailed(len(history), problems, findings, data)

    def _pin(self, data: dict[str, Any], text: str, seed: int, assigner: Assigner, notes: list[str]) -> dict[str, Any]:
        """Fields the role layer owns: the request's seed and intent; a seed-assigned town when none is named."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        out["seed"] = seed
        out["intent"] = text[:4000]
        query = out.get("map")
        if query is None or isinstance(query, dict):
            query = dict(query or {})
            if not query.get("town"):
                try:
                    kind = JunctionKind(query.get("junction_kind", "any"))
                    approaches = int(query.get("min_approaches", 3))
                except (ValueError, TypeError):
                    return out
                needed = junction_kind_for(kind, out.get("application"))
                sig = query.get("signalized")
                ahead = query.get("junctions_ahead", 0)
                town = assigner.town(self.maps.candidates(needed, approaches, signal_required(
                    out.get("application"), needed.value, sig if isinstance(sig, bool) else None),
                    junctions_ahead_needed(ahead if isinstance(ahead, int) else 0, query.get("whole_corridor") is True)))
                if town:
                    query["town"] = town
                    notes.append(f"map.town {town} assigned from seed")
                out["map"] = query
        return out

    def _map_findings(self, spec: ScenarioSpec, assigner: Assigner) -> list[Finding]:
        q = spec.map
        if q.town is None:
            return []
        facts = self.maps.get(q.town)
        pool = self.maps.candidates(q.junction_kind, q.min_approaches)
        fix = assigner.town(pool)
        if facts is None:
            return [Finding("map_catalogue", Severity.ERROR, f"no map named {q.town!r} in the catalogue",
                            ("map.town",), Repair("use a catalogue map", (("map.town", fix),)) if fix else None)]
        if facts.name != q.town:
            return [Finding("map_catalogue", Severity.ERROR, f"map {q.town!r} is spelled {facts.name!r}",
                            ("map.town",), Repair("use the catalogue name", (("map.town", facts.name),)))]
        if not facts.offers(q.junction_kind, q.min_approaches):
            repair = Repair(f"use a map offering {q.junction_kind.value}", (("map.town", fix),)) if fix else \
                Repair("ask for any junction", (("map.junction_kind", "any"), ("map.min_approaches", 3)))
            return [Finding("map_catalogue", Severity.ERROR,
                            f"{facts.name} has no {q.junction_kind.value} junction with {q.min_approaches}+ approaches",
                            ("map.town", "map.junction_kind", "map.min_approaches"), repair)]
        needed = junction_kind_for(q.junction_kind, spec.application)
        sig = signal_required(spec.application, needed.value, q.signalized)
        ahead = junctions_ahead_needed(q.junctions_ahead, q.whole_corridor)
        # a map that hosts the traversal, where this one cannot (none at all: grounding says how many it crosses)
        hosts = [m.name for m in self.maps.maps if m.offers(needed, q.min_approaches, sig, ahead)] if ahead else []
        if hosts and facts.offers(needed, q.min_approaches, sig) and facts.name not in hosts:
            fix = assigner.town(self.maps.candidates(needed, q.min_approaches, sig, ahead))  # (hosts: the strict pool)
            return [Finding("map_catalogue", Severity.ERROR,
                            f"{facts.name} has no road through {ahead + 1} junctions in a row, which the traversal "
                            "asks for", ("map.town", "map.junctions_ahead"),
                            Repair(f"use a map with {ahead + 1} junctions in a row", (("map.town", fix),)))]
        if not facts.offers(needed, q.min_approaches, sig):
            fix = assigner.town(self.maps.candidates(needed, q.min_approaches, sig))
            what = {True: "signalized ", False: "unsignalized "}.get(sig, "") if sig is not None else ""
            return [Finding("map_catalogue", Severity.ERROR,
                            f"{facts.name} has no {what}{needed.value} junction with {q.min_approaches}+ approaches, "
                            f"which {spec.application.value} needs", ("map.town",),
                            Repair(f"use a map offering a {what}{needed.value} junction", (("map.town", fix),))
                            if fix else None)]
        return []

    # ── role 2: scene planner ─────────────────────────────────────────────
    def plan_scene(self, spec: ScenarioSpec, candidates: Sequence[ApproachCandidate], *,
                   campaign: str = "default") -> ScenePlan:
        """Map the spec's roles onto retrieved approaches; only candidate ids are accepted."""
        if not isinstance(spec, ScenarioSpec):
            raise InvalidArgument(FieldViolation("spec", "expected a ScenarioSpec"))
        cands = check_candidates(tuple(candidates))
        previous: dict[str, Any] | None = None
        problems: list[dict[str, Any]] = []
        for _attempt in range(self.config.plan_attempts):
            try:
                reply = self.backend.plan(PlanRequest(spec, cands, previous, tuple(problems), campaign))
            except MalformedOutput as exc:
                previous, problems = None, [{"field": "<root>", "description": exc.description}]
                continue
            try:
                return validate_plan(reply.data, spec, cands, self.backend.name)
            except InvalidArgument as exc:
                previous, problems = reply.data, _violation_dicts(exc)
        raise RoleFailed("scene planner", self.config.plan_attempts, problems,
                         f"choose only among candidate ids {sorted(c.candidate_id for c in cands)}")

    # ── role 3: reflector ─────────────────────────────────────────────────
    def reflect(self, prompt: str, evidence_digest: EvidenceDigest | dict[str, Any], *,
                campaign: str = "default", spec: ScenarioSpec | dict[str, Any] | None = None) -> Reflection:
        """Diagnose an ineffective test from its evidence digest: the field edits to ``spec`` (the spec that ran;
        none without it) and the revised prompt that says them in words."""
        prompt = self.check_text(prompt, "prompt")
        spec_data = spec.model_dump(mode="json") if isinstance(spec, ScenarioSpec) else spec
        digest = evidence_digest if isinstance(evidence_digest, EvidenceDigest) else \
            EvidenceDigest.from_dict(evidence_digest)
        previous: dict[str, Any] | None = None
        problems: list[dict[str, Any]] = []
        for _attempt in range(self.config.reflect_attempts):
            try:
                reply = self.backend.reflect(ReflectRequest(prompt, digest, self.notes, previous, tuple(problems),
                                                            campaign, spec_data))
            except MalformedOutput as exc:
                previous, problems = None, [{"field": "<root>", "description": exc.description}]
                continue
            try:
                return validate_reflection(reply.data, self.notes, self.config.max_text_chars, self.backend.name)
            except InvalidArgument as exc:
                previous, problems = reply.data, _violation_dicts(exc)
        raise RoleFailed("reflector", self.config.reflect_attempts, problems,
                         f"cite rule ids among {[n.id for n in self.notes]}")

    # ── verifier passthrough (the Verify RPC) ─────────────────────────────
    @staticmethod
    def verify(spec: ScenarioSpec | dict[str, Any] | str) -> VerificationReport:
        return verify(spec if isinstance(spec, ScenarioSpec) else parse_spec(spec))


def parse_intent(text: str, seed: int, max_attempts: int = 3, *, backend: Backend | None = None) -> ParseResult:
    """Module-level convenience over ``LlmRoles`` (offline backend unless one is given)."""
    return LlmRoles(backend).parse_intent(text, seed, max_attempts)


def plan_scene(spec: ScenarioSpec, candidates: Sequence[ApproachCandidate], *,
               backend: Backend | None = None) -> ScenePlan:
    return LlmRoles(backend).plan_scene(spec, candidates)


def reflect(prompt: str, evidence_digest: EvidenceDigest | dict[str, Any], *,
            backend: Backend | None = None, spec: ScenarioSpec | dict[str, Any] | None = None) -> Reflection:
    return LlmRoles(backend).reflect(prompt, evidence_digest, spec=spec)


__all__ = ["AttemptRecord", "LlmRoles", "ParseResult", "parse_intent", "plan_scene", "reflect"]
