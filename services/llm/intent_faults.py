"""Fault phrases of the offline grammar: operators, streams, senders, anchors, magnitudes.

Fault cues (``lexicon.FAULT_CUES``) are found first; cues close together in one
sentence form one fault, unless a conjunction separates them. Every other fault
phrase (a stream, a sender, an anchor, a duration, a magnitude) attaches to the
nearest cue in its sentence, or to the only fault when there is one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lastv2x.core import tolerance
from lastv2x.core.catalogue import APPLICATIONS, FAULT_OPERATORS, STREAMS, Application, Stream
from lastv2x.core.spec import MAX_FAULTS, AnchorEvent, FaultOperator
from lastv2x.core.verifier import Finding, Severity
from services.llm import fault_cues
from services.llm import lexicon as lx
from services.llm.intent_text import (
    BAR,
    Mention,
    ParseState,
    Q,
    agent_for,
    clean,
    rx,
    stated_range,
)


@dataclass
class FaultDraft:
    operator: FaultOperator | str
    start: int
    end: int
    sentence: int
    cue: str
    stream: Stream | None = None
    sender: str | None = None
    anchor: dict[str, Any] | None = None
    duration_s: float | None = None
    magnitude: float | None = None
    probability: float | None = None
    burst_count: int | None = None
    target_phase: str | None = None
    provenance: str = "intent"
    stream_named: bool = False
    notes: list[str] = field(default_factory=list)

    def distance(self, pos: int) -> int:
        return 0 if self.start <= pos < self.end else min(abs(pos - self.start), abs(pos - self.end))


# " + " joins two faults as "plus" does ("bsm delay 0.4s + bsm speed +2 m/s")
_SEPARATOR = rx(r"\b(and|while|but|plus|whereas|also|then|meanwhile)\b|[,;]|\s\+\s")
_STRONG_SEPARATOR = rx(r"\b(and|while|but|plus|whereas|also|then|meanwhile)\b|;|\s\+\s")
# "...never sends its brake message at all; its radio simply stays quiet": the same sender, said again
_SAME_SENDER = rx(r"[^.]{0,60}?; (its|their|the) (radio|transmitter|unit|obu|rsu|v2x unit|sender) (\w+ )?")
# between two cues of one operator: "and", then a verb phrase of the same subject (no new noun phrase first)
_SAME_SUBJECT = rx(r"\s*(\w+ly )?,?\s*and (it |they |its messages |their messages |its data |their data )?(also |then "
                   r"|still )?(is |are |gets |get )?")


_FALSE_CUES = rx(r"drop\w* (its |the |their )?speed|los\w* control|stuck (in|behind)|too late|late to"
                  r"|late (yellow|amber|red|green)s?\b"
                  r"|(signal|phase|cycle) offset|offset of the signal|relay\w* (the )?spat"
                  r"|(does not|doesn't|never|won't) (brake|stop)")
# a vehicle's or a driver's own motion and timing, not a message's: "the lead car drops back", "a lost in thought
# driver who reacts 1.5 s late", "the ego's departure is delayed by 2 s"; a cue inside one is no fault cue
_VEHICLE_IDIOM = rx(r"\b(drop\w*|fall\w*|fell) (back|behind|away)\b|\blost in thought\b"
                    r"|\b(reacts?|reacting|responds?|responding|brakes?|braking|departs?|starts?|leaves?|sets? off) "
                    r"(<q\d+:time> )?(too |much too )?(late|later)\b"
                    r"|\b(departure|start|launch|take-?off|release)('s)? (is |was |gets |got )?(delayed|late|postponed)\b"
                    # "does the warning hold up?", "how well it holds up under stress": to withstand, not a delay
                    r"|\b(hold|holds|holding|held) up\b(?=\s*(?:[?!.,;]|$|(?:well|under|against|in practice|at all|or not)\b))")
# a word mentioned, not used: a report's column, counter or metric named by a fault word, quoted or not ("the 'lost'
# column in the report should read zero", "the dropped-packets counter"): what a run shows, not a fault it asks for
_MENTION = rx(lx.REPORT_ITEM)


_MESSAGE_SUBJECT = rx(r"(messages?|msgs?|packets?|broadcasts?|updates?|frames?|beacons?|spats?|bsms?|data|feeds?"
                      r"|info\w*|notices?|notifications?|denms?)\b")


def _stream_mentions(p: ParseState) -> list[tuple[Stream, int, int]]:
    out: list[tuple[Stream, int, int]] = []
    for stream, pattern in lx.STREAM_CUES:
        for m in p.finditer(pattern):
            if not any(a < m.end() and m.start() < b for _s, a, b in out):
                out.append((stream, m.start(), m.end()))
    return sorted(out, key=lambda x: x[1])


_LIST_ITEM = rx(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s")


def _in_context(p: ParseState, context: re.Pattern[str], s: int) -> bool:
    """Does sentence ``s`` speak of communication? A list item ("- whatever gets through shows up 120 ms late")
    also from the item or heading before it: the list's items share one subject."""
    if context.search(p.n.sentence(s)):
        return True
    return s > 0 and _LIST_ITEM.match(p.n.sentence(s)) is not None and context.search(p.n.sentence(s - 1)) is not None


def parse_faults(p: ParseState, app: Application, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> list[FaultDraft]:
    if p.has(lx.NO_FAULTS):
        p.note("no faults: the intent asks for healthy communication")
        return []
    context = rx(lx.COMM_CONTEXT)
    cues: list[tuple[int, int, int, FaultOperator | str, str]] = []
    idioms = [(m.start(), m.end()) for pat in (_VEHICLE_IDIOM, _MENTION) for m in pat.finditer(p.t)]
    for op, pattern, needs_context, prio in lx.fault_cue_table():
        for m in p.finditer(pattern):
            s = p.n.sentence_of(m.start())
            if needs_context and not _in_context(p, context, s):
                continue
            if p.negated(m.start()) or _FALSE_CUES.match(p.t, m.start()):
                continue
            if any(a < m.end() and m.start() < b for a, b in idioms):
                continue
            # a false cue near a bare word ("brakes too late") rules it out; a cue that holds its own subject
            # and quantity ("the brake message comes 0.8 s too late") says what it means
            if _FALSE_CUES.search(p.t[max(0, m.start() - 12):m.end() + 12]) and op in (
                    FaultOperator.DROP, FaultOperator.DELAY, lx.SEMANTIC, FaultOperator.FREEZE) and not (
                    "<q" in m.group(0) and _MESSAGE_SUBJECT.match(m.group(0))):
                continue
            overlapped = [c for c in cues if c[0] < m.end() and m.start() < c[1]]
            # a more specific cue over the same words wins ("position reports lag its true location by 9 m" is an
            # offset, not the bare "lag" of a delay): it replaces overlapped cues of lower priority that it covers
            if overlapped and not (prio > max(c[2] for c in overlapped) and all(
                    m.start() <= c[0] and c[1] <= m.end() for c in overlapped)):
                continue
            for c in overlapped:
                cues.remove(c)
            cues.append((m.start(), m.end(), prio, op, m.group(0)))
    cues.sort()
    drafts: list[tuple[FaultDraft, int]] = []
    for start, end, prio, op, text in cues:
        s = p.n.sentence_of(start)
        if drafts:
            last, last_prio = drafts[-1]
            gap = p.t[last.end:start]
            # a generic corruption word and the operator its field names ("configured wrong, so our lane gets
            # linked to the wrong group") are one fault, as two cues of one operator are
            same_op = op == last.operator or lx.SEMANTIC in (op, last.operator)
            sep = _STRONG_SEPARATOR if same_op else _SEPARATOR
            # one subject, two verb phrases ("freezes and keeps repeating", "stays quiet and never sends"): one fault
            one_subject = op == last.operator and (_SAME_SUBJECT.fullmatch(gap) is not None
                                                   or _SAME_SENDER.fullmatch(gap) is not None)
            # a fault announced before a colon and detailed after it ("the SPaT content freezes at the start of
            # green: phase and end times stop changing") is one fault
            announced = op == last.operator and last.sentence == s and ":" in gap and len(gap) < 80
            if announced or (one_subject or (last.sentence == s and not sep.search(gap))) and len(gap) < (60 if same_op else 40):
                last.end = end
                if prio > last_prio:
                    last.operator, last.cue = op, text
                    drafts[-1] = (last, prio)
                continue
        drafts.append((FaultDraft(op, start, end, s, text), prio))
    faults = [d for d, _ in drafts]
    # a forged roadside unit's SPaT "saying our light is green": the phase it claims is its content, not a
    # corruption of the real RSU's SPaT (spoofed_rsu absorbs a phase cue of its sentence)
    for f in [d for d in faults if d.operator is FaultOperator.SPOOFED_RSU]:
        for g in [d for d in faults if d.operator is FaultOperator.SPAT_PHASE_CORRUPT and d.sentence == f.sentence]:
            faults.remove(g)
            f.start, f.end = min(f.start, g.start), max(f.end, g.end)
            shown = rx(_SHOWN).search(g.cue)
            own = rx(r"\b(green|red|amber|yellow)\b").findall(g.cue)
            if shown or own:
                f.target_phase = lx.PHASES[shown.group("ph") if shown else own[-1]]
                f.notes.append(f"target_phase {f.target_phase} (what the forged RSU's SPaT shows, {g.cue!r})")
    if len(faults) > MAX_FAULTS:
        p.findings.append(Finding("parser.fault_count", Severity.WARNING,
                                  f"the intent names {len(faults)} faults; the first {MAX_FAULTS} were kept",
                                  ("faults",)))
        faults = faults[:MAX_FAULTS]
    if not faults:
        return []
    streams = _stream_mentions(p)
    unreadable: list[FaultDraft] = []
    for f in faults:
        _fault_stream(p, app, f, faults, streams)
        _fault_sender(p, app, f, faults, roles, agents)
        if f.operator == lx.SEMANTIC:
            refined = _refine(p, f)
            if refined is None:  # never a default fault for one the intent does not say (issue 31)
                unreadable.append(f)
                continue
            f.operator = refined
            f.notes.append(f"generic corruption {f.cue!r} refined to {refined.value}")
        op = FaultOperator(f.operator)
        implied = lx.operator_stream(op)
        if implied and f.stream is not implied and (not f.stream_named or f.stream not in FAULT_OPERATORS[op.value].streams):
            f.notes.append(f"stream {implied.value} implied by {op.value}")
            f.stream = implied
        if f.operator is FaultOperator.SPOOFED_RSU and f.sender is not None:
            f.notes.append(f"sender {f.sender} dropped: a forged roadside unit transmits under an id of its own")
            f.sender = None
        if f.operator is FaultOperator.SPOOFED_RSU and f.target_phase is None:
            hit = _nearest(p, f, r"(?:reports?|reporting|shows?|showing|claims?|claiming|broadcasts?|says|saying|displays"
                                 r"|advertises|announc\w*) (?:a |an |the )?(?:false |wrong |fake )?(?P<ph>green|red|amber"
                                 r"|yellow)\b|(?:false|fake|spoofed) (?P<ph2>green|red|amber|yellow)")
            if hit:
                f.target_phase = lx.PHASES[hit.group("ph") or hit.group("ph2")]
                f.notes.append(f"target_phase {f.target_phase} (what the forged RSU's SPaT shows)")
        if f.operator is FaultOperator.SUPPRESS_SENDER and f.sender is None:
            f.sender = _default_sender(app, f.stream, agents)
            f.notes.append(f"sender {f.sender} (the silenced sender defaults to the key sender)")
        shown = rx(_SHOWN).search(f.cue) if f.operator is FaultOperator.SPAT_PHASE_CORRUPT else None
        if shown:
            f.target_phase = lx.PHASES[shown.group("ph")]
            f.notes.append(f"target_phase {f.target_phase} (what the receiver is shown)")
        elif f.operator is FaultOperator.SPAT_PHASE_CORRUPT and (own := rx(r"\b(green|red|amber|yellow)\b").findall(f.cue)):
            f.target_phase = lx.PHASES[own[-1]]  # the colour the cue itself says is shown ("telling us it is green")
            f.notes.append(f"target_phase {f.target_phase} (what the receiver is shown)")
        elif f.operator is FaultOperator.SPAT_PHASE_CORRUPT:
            hit = _nearest(p, f, r"(?:reports?|shows?|claims?|broadcasts?|says|displays|advertises|to|as|into) "
                                 r"(?:a |an )?(?:false |wrong |fake )?(?P<ph>green|red|amber|yellow)\b"
                                 r"|(?:false|fake|spoofed) (?P<ph2>green|red|amber|yellow)")
            if hit:
                f.target_phase = lx.PHASES[hit.group("ph") or hit.group("ph2")]
            else:
                f.target_phase = "green"
                f.notes.append("target_phase green (default: a false green)")
    for f in unreadable:
        faults.remove(f)
        clause = clean(p.n.sentence(f.sentence)).strip(" .;!?")
        p.note(f"fault cue {f.cue!r}: no field or quantity says what is wrong; no fault built")
        p.findings.append(Finding(fault_cues.CHECK, Severity.WARNING,
                                  f"the intent asks for a fault the parser cannot build: {clause!r} (cue {f.cue!r}: "
                                  f"no reported field or quantity says what is wrong on {f.stream.value if f.stream else 'the stream'}"
                                  f"); the spec runs without it", ("faults",)))
    _anchors(p, app, faults)
    _durations(p, faults)
    return faults


# "green ... when it is actually red", "sees a green light in the messages": the first colour is shown
_SHOWN = (r"^(?:\w+ ){0,3}?(?P<ph>green|red|amber|yellow)\b[^.;]{0,60}?\b(?:when|while|although|though|after|but|despite"
          r"|in the (?:messages?|broadcasts?|spat|data))\b")


def _nearest(p: ParseState, f: FaultDraft, pattern: str, same_sentence: bool = True) -> re.Match[str] | None:
    best: tuple[int, re.Match[str]] | None = None
    for m in p.finditer(pattern):
        if same_sentence and p.n.sentence_of(m.start()) != f.sentence:
            continue
        d = f.distance(m.start())
        if best is None or d < best[0]:
            best = (d, m)
    return best[1] if best else None


def _owner(faults: list[FaultDraft], p: ParseState, pos: int) -> FaultDraft | None:
    """The fault a phrase at ``pos`` belongs to: nearest cue in its sentence, else the only fault."""
    s = p.n.sentence_of(pos)
    here = [f for f in faults if f.sentence == s]
    if here:
        # a fault in the phrase's own clause first ("speed 3 m/s lower, and 15 % of its BSMs are dropped")
        same_clause = [f for f in here if not _STRONG_SEPARATOR.search(p.t[min(pos, f.end):max(pos, f.start)])]
        return min(same_clause or here, key=lambda f: f.distance(pos))
    return faults[0] if len(faults) == 1 else None


# "the location carried in those notices": the fault's own words refer back to messages named before
_BACK_TO_MESSAGES = rx(r"\b(those|these|the same|such|said) (messages?|notices?|alerts?|warnings?|notifications?|broadcasts?"
                       r"|packets?|frames?|reports?|beacons?)\b")


def _fault_stream(p: ParseState, app: Application, f: FaultDraft, faults: list[FaultDraft],
                  streams: list[tuple[Stream, int, int]]) -> None:
    mine = [(st, a) for st, a, _b in streams if _owner(faults, p, a) is f]
    if mine:
        # a stream in the fault's own clause first ("SPaT messages arrive with 0.5 s of lag, and the MAP ...")
        own = [(st, a) for st, a in mine if not _STRONG_SEPARATOR.search(p.t[min(a, f.end):max(a, f.start)])]
        f.stream = min(own or mine, key=lambda x: f.distance(x[1]))[0]
        f.stream_named = True
        f.notes.append(f"stream {f.stream.value} named")
        return
    everywhere = {st for st, _a, _b in streams}
    if len(everywhere) == 1:
        f.stream = next(iter(everywhere))
        f.notes.append(f"stream {f.stream.value} named elsewhere in the intent")
        a, b = p.n.sentences[f.sentence]
        if _BACK_TO_MESSAGES.search(p.t[a:b]):
            f.stream_named = True
            f.notes.append(f"stream {f.stream.value}: the fault's words refer back to its messages")
        return
    consumed = list(APPLICATIONS[app].consumes)
    f.stream = consumed[0]
    f.notes.append(f"stream {f.stream.value}: the first stream {app.value} consumes")


def _refine(p: ParseState, f: FaultDraft) -> FaultOperator | None:
    """The operator a generic corruption cue ("corrupted", "wrong", "spoofed") means, from a field word or
    the kind of the quantity after it; on SPaT the phase and on MAP the association when neither is said;
    None on a vehicle stream with neither (position or speed? the parser does not guess)."""
    s = p.n.sentence(f.sentence)
    for op, pattern in lx.FIELD_REFINEMENT:
        if op is FaultOperator.SPAT_PHASE_CORRUPT and f.stream is not Stream.SPAT:
            continue
        if op is FaultOperator.BSM_SPEED_OFFSET and f.stream is Stream.SPAT:
            continue
        if rx(pattern).search(s):
            return op
    # no field named: the kind of the quantity right after the cue ("off by 3 m", "wrong by 2 m/s")
    q = rx(r"^\W*(?:\w+\W+){0,3}?<q\d+:(?P<kind>dist|speed|time)>").search(p.t[f.end:f.end + 40])
    if q and q.group("kind") == "dist" and f.stream is not Stream.SPAT:
        return FaultOperator.BSM_POSITION_OFFSET
    if q and q.group("kind") == "speed" and f.stream is not Stream.SPAT:
        return FaultOperator.BSM_SPEED_OFFSET
    if q and q.group("kind") == "time":
        return FaultOperator.SPAT_COUNTDOWN_OFFSET if f.stream is Stream.SPAT else FaultOperator.TIMESTAMP_OFFSET
    return {Stream.SPAT: FaultOperator.SPAT_PHASE_CORRUPT, Stream.MAP: FaultOperator.MAP_MISASSOCIATION}.get(
        f.stream or Stream.BSM)


def _default_sender(app: Application, stream: Stream | None, agents: dict[str, dict[str, Any]]) -> str:
    if stream is None or STREAMS[stream].sender == "rsu":
        return "rsu"
    required = APPLICATIONS[app].required_roles
    if required:
        return required[0]
    return next(iter(agents), "rsu")


def _fault_sender(p: ParseState, app: Application, f: FaultDraft, faults: list[FaultDraft], roles: list[Mention],
                  agents: dict[str, dict[str, Any]]) -> None:
    best: tuple[int, Mention] | None = None
    for r in roles:
        if r.what == "ego" or _owner(faults, p, r.start) is not f or p.n.sentence_of(r.start) != f.sentence:
            continue
        before = p.t[max(0, r.start - 12):r.start]
        after = p.t[r.end:r.end + 14]
        linked = (re.search(r"\b(from|of|by|for)( the| its| their)?\s*$", before)
                  or re.match(r"('s|s'| vehicle's| car's| truck's)", after)
                  or (r.end <= f.start and f.start - r.end <= 24
                      and re.fullmatch(r"[\s\w]*", p.t[r.end:f.start]) is not None)
                  or (r.what == "rsu" and f.distance(r.start) <= 30))
        if not linked:
            continue
        d = f.distance(r.start)
        if best is None or d < best[0]:
            best = (d, r)
    if best is None:
        pron = rx(r"\b(its|their)\b").search(p.t, max(p.n.sentences[f.sentence][0], f.start - 40), f.end)
        if pron:
            antecedents = [r for r in roles if r.end <= pron.start() and p.n.sentence_of(r.start) == f.sentence
                           and r.what != "ego"]
            if antecedents:
                best = (0, antecedents[-1])
    if best is None:
        return
    who = best[1].what
    stream_sender = STREAMS[f.stream].sender if f.stream else "vehicle"
    if who == "rsu":
        if stream_sender == "rsu":
            f.sender = "rsu"
            f.notes.append("sender rsu")
        return
    if stream_sender == "rsu":
        f.notes.append(f"{f.stream.value if f.stream else ''} comes from the RSU; sender {who!r} ignored")
        return
    agent_for(agents, who)
    f.sender = who
    f.notes.append(f"sender {who}")


_PHASE = r"(?P<ph>amber|yellow|red|green)"
_ONSET_OF = r"(?:the |our )?(?:onset of (?:the |our )?|start of (?:the |our )?|beginning of (?:the |our )?)?"


_TURNS = r"(?:(?:light |signal |traffic light )?(?:turns |turning |changes to |changing to |goes |switches to "\
         r"|switching to ))?"


_DECISION = (r"(?:the |its |the ego'?s? |ego'?s? )?(?:decision (?:point|epoch|moment|time|distance)|dilemma zone"
             r"|last comfortable stopping point|point of no return)")


# who reaches the decision point or has to decide: the ego, its driver, or the application under test
_DECIDER = (r"(?:we|it|the ego|the car|our car|the driver|the vehicle|the app|the application|the system"
            r"|the (?:warning|assist|advisory) (?:app|application|logic|system))")

_REACH = r"(?:the ego )?(?:reaches|enters|arrives at|gets to) the (?:intersection|junction|conflict(?: point| zone)?|stop bar)"


# a phase's onset said as a clause, in any tense: "the yellow comes on", "real red begins", "the amber started",
# "our light comes on green", "the lamp switched to red"
_ONSET_CLAUSE = (r"(?:(?:the|our|its|their) )?(?:(?:real|actual|true) )?(?:"
                 + _PHASE + r"(?: light| phase| signal| aspect)? (?:begins|began|begin|starts|started|start|comes on"
                 r"|came on|come on|appears|appeared|is shown|was shown|lights up|lit up|shows up|kicks in|kicked in)\b"
                 r"|(?:light|signal|traffic light|lamp|signal head)s? (?:turns|turned|turn|changes|changed|change|goes"
                 r"|went|go|switches|switched|switch|comes on|came on|come on|flips|flipped|passes|passed|pass)(?: over)?"
                 r"(?: to| on)? " + _PHASE.replace("ph>", "ph2>") + r"\b"
                 # "right when it goes red": nothing but a light turns a colour
                 r"|(?:it|they) (?:turns|turned|goes|went|changes|changed|switches|switched|flips|flipped|passes|passed)"
                 r"(?: over)?(?: to)? " + _PHASE.replace("ph>", "ph4>") + r"\b)")


def _onset_phase(m: re.Match[str]) -> str:
    return next(m.group(g) for g in ("ph", "ph2", "ph3", "ph4") if g in m.groupdict() and m.group(g))


def _same_clause(p: ParseState, faults: list[FaultDraft], m: re.Match[str]) -> bool:
    """Does the phrase ``m`` stand in its owner fault's clause (no "and", "but", "while", ";" between)?"""
    f = _owner(faults, p, m.start())
    return f is not None and not _STRONG_SEPARATOR.search(p.t[min(m.end(), f.start):max(m.end(), f.start)])


def _anchors(p: ParseState, app: Application, faults: list[FaultDraft]) -> None:
    def sig(ph: str, offset: float) -> dict[str, Any]:
        return {"kind": "signal_event", "event": lx.ONSET[lx.PHASES[ph]].value, "offset_s": offset}

    def ego_ev(event: AnchorEvent, offset: float, distance: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "ego_event", "event": event.value, "offset_s": offset}
        if distance is not None:
            out["distance_m"] = distance
        return out

    def sign(rel: str) -> float:
        return -1.0 if rel in ("before", "prior to", "ahead of") else 1.0

    def last_of(m: re.Match[str]) -> dict[str, Any] | None:
        """"in the last second of amber": the window that ends at the next onset (amber -> red, green -> amber)."""
        span = p.use(m, "anchor") if m.group("q") else 1.0
        owner = _owner(faults, p, m.start())
        if owner is not None and owner.duration_s is None:
            owner.duration_s = span
            owner.notes.append(f"duration {span:g} s from {clean(m.group(0))!r}")
        nxt = {"amber": "red", "yellow": "red", "green": "amber"}[m.group("ph")]
        return sig(nxt, -span)

    rules: list[tuple[str, Callable[[re.Match[str]], dict[str, Any] | None]]] = [
        (r"\b(?:in|during|for|over|within|throughout) (?:the )?(?:last|final|closing) (?:" + Q("time") + r"|second|moment)"
         r" of (?:the |our )?(?P<ph>amber|yellow|green)\b", last_of),
        # "starting 10 seconds after the run begins"
        (Q("time") + r" after (?:the )?(?:start|beginning|run|scenario|simulation|test)(?: (?:begins|starts|start|began"
                     r"|started|has started|has begun))?\b",
         lambda m: {"kind": "scenario_time", "offset_s": p.use(m, "anchor")}),
        # "for 6 s after green starts", "for ~2 s after the light turns red": the window opens at the onset and
        # the quantity is its duration (read by _durations), not an offset
        (r"\bfor " + _ABOUT + Q("time") + r" (?:right |just )?(?:after|from|since|following) (?:" + _ONSET_CLAUSE + r"|(?:the )?(?:(?:onset"
         r"|start|beginning) of (?:the )?)?(?:(?:real|actual|true) )?" + _PHASE.replace("ph>", "ph3>") + r"\b)", lambda m: sig(_onset_phase(m), 0.0)),
        # "during the first four seconds of green", "in the first 2 s of the red": from the onset, for that long
        (r"\b(?:during|in|for|over|within|throughout) (?:the )?(?:first|opening|initial) " + _ABOUT + Q("time")
         + r" (?:of|into|after) (?:the )?(?:(?:real|actual|true) )?" + _PHASE + r"\b",
         lambda m: sig(m.group("ph"), 0.0)),
        (Q("time") + r" (?P<rel>before|after|prior to|ahead of|into) " + _ONSET_OF + _TURNS + _PHASE + r"\b",
         lambda m: sig(m.group("ph"), sign(m.group("rel")) * p.use(m, "anchor"))),
        (r"(?:just|right|immediately|shortly|moments?|a moment) (?P<rel>before|after) " + _ONSET_OF + _TURNS + _PHASE
         + r"\b", lambda m: sig(m.group("ph"), sign(m.group("rel")) * 0.5)),
        (r"(?P<rel>before|after) (?:the )?(?:onset|start|beginning) of (?:the )?" + _PHASE,
         lambda m: sig(m.group("ph"), sign(m.group("rel")) * 0.5)),
        (r"(?P<rel>before|after) (?:the )?(?:light|signal|traffic light|lamp) (?:turns|changes to|goes|switches to) "
         + _PHASE, lambda m: sig(m.group("ph"), sign(m.group("rel")) * 0.5)),
        (r"(?P<rel>before|after) " + _PHASE + r" (?:onset|begins|starts|phase|comes on)",
         lambda m: sig(m.group("ph"), sign(m.group("rel")) * 0.5)),
        (r"(?:at|on|upon|with|from|since|starting (?:at|from|with)) (?:the )?(?:onset|start|beginning) of (?:the |our )?"
         + _PHASE, lambda m: sig(m.group("ph"), 0.0)),
        # "from the first green on", "from green onwards", "starting with the next red"
        (r"\b(?:from|since|starting (?:at|from|with)) (?:the )?(?:(?:first|next|initial) " + _PHASE + r"\b(?: (?:light"
         r"|phase|signal))?(?: on(?:wards?)?\b)?|" + _PHASE.replace("ph>", "ph2>") + r"(?: (?:light|phase|signal))? "
         r"on(?:wards?)?\b)", lambda m: sig(m.group("ph") or m.group("ph2"), 0.0)),
        (r"(?:when|as|once|the moment|as soon as) (?:the )?(?:light|signal|traffic light|lamp) (?:turns|changes to|goes"
         r"|switches to) " + _PHASE,
         lambda m: sig(m.group("ph"), 0.0)),
        (r"(?:when|as|once) (?:the )?" + _PHASE + r" (?:begins|starts|comes on)", lambda m: sig(m.group("ph"), 0.0)),
        # "red onset", "begin at the red start" (start as a noun)
        (r"\b" + _PHASE + r" (?:onset|start)\b", lambda m: sig(m.group("ph"), 0.0)),
        (r"during (?:the )?(?:whole |entire |full )?" + _PHASE + r"(?: phase| interval| light)?", lambda m: sig(m.group("ph"), 0.5)),
        (Q("dist") + r" (?:before|from|ahead of|short of|upstream of|prior to|out from|in front of) (?:the |our |its "
         r"|their )?" + BAR,
         lambda m: ego_ev(AnchorEvent.STOP_BAR_DISTANCE, 0.0, p.use(m, "anchor"))),
        (Q("time") + r" (?P<rel>before|after|prior to) " + _DECISION,
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, sign(m.group("rel")) * p.use(m, "anchor"))),
        (r"(?:just|right|shortly|immediately) (?P<rel>before|after) " + _DECISION,
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, sign(m.group("rel")) * 0.5)),
        (r"(?:at|around|near|by|in) " + _DECISION, lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        (r"(?:(?:right|just|exactly) )?(?:as|when|once|the moment) " + _DECIDER + r" (?:reach|reaches"
         r"|hit|hits|get to|gets to|arrive at|arrives at|come to|comes to) " + _DECISION,
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        (r"(?:when|as) the ego (?:decides|must decide|makes (?:its|the) (?:stop |go )?decision)",
         lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        (r"(?:moment|instant|time|point|when|as) " + _DECIDER + r" (?:has to|must|needs to"
         r"|is about to|is forced to) (?:decide|choose)", lambda m: ego_ev(AnchorEvent.DECISION_EPOCH, 0.0)),
        (r"(?:after|once|when|while|though|since) (?:it|the light|the signal)(?: has| had)? (?:already |in fact "
         r"|actually )*(?:turned|changed to"
         r"|gone|switched to|changed from \w+ to) " + _PHASE + r"\b", lambda m: sig(m.group("ph"), 0.0)),
        (r"(?:once|when|as|the moment|as soon as) " + _PHASE + r" (?:begins|starts|comes on|is shown)",
         lambda m: sig(m.group("ph"), 0.0)),
        # "from the moment the yellow comes on", "when the amber started", "starting when the amber begin"
        (r"\b(?:when|whenever|as|once|the moment|the instant|the second|as soon as|from when|starting when) "
         + _ONSET_CLAUSE, lambda m: sig(_onset_phase(m), 0.0)),
        (r"\b(?:after|since|following) " + _ONSET_CLAUSE, lambda m: sig(_onset_phase(m), 0.5)),
        # "while our light is red": during that phase
        # ("while the light is red, the feed says green"; not a fault in another clause)
        (r"\b(?:while|whilst|as long as) (?:the |our |its |their )?(?:light|signal|lamp|traffic light)s? (?:is|are"
         r"|shows|still shows) (?:still )?" + _PHASE + r"\b",
         lambda m: sig(m.group("ph"), 0.5) if _same_clause(p, faults, m) else None),
        # "right as the ego gets within 40 metres of the stop line", "closer than 30 m to the junction"
        (r"\b(?:within|inside|closer than|nearer than|less than|at) " + Q("dist") + r" (?:of|from|to|before) (?:the |our "
         r"|its |their )?" + BAR, lambda m: ego_ev(AnchorEvent.STOP_BAR_DISTANCE, 0.0, p.use(m, "anchor"))),
        (Q("time") + r" before " + _REACH,
         lambda m: ego_ev(AnchorEvent.STOP_BAR_DISTANCE, -p.use(m, "anchor"), 0.0)),
        (r"(?:when|as|once) " + _REACH, lambda m: ego_ev(AnchorEvent.STOP_BAR_DISTANCE, 0.0, 0.0)),
        (r"(?:starting |beginning |from |at |after |opens at )(?:t ?= ?)?" + Q("time")
         + r"(?! (?:before|after|prior|into|of|delay|late))",
         lambda m: {"kind": "scenario_time", "offset_s": p.use(m, "anchor")}),
        (Q("time") + r" into the (?:scenario|run|simulation|test|drive|trip|journey|approach|episode)",
         lambda m: {"kind": "scenario_time", "offset_s": p.use(m, "anchor")}),
    ]
    for pattern, build in rules:
        for m in p.finditer(pattern):
            owner = _owner(faults, p, m.start())
            if owner is None and _ALL_FAULTS.search(p.n.sentence(p.n.sentence_of(m.start()))):
                _anchor_all(p, faults, m, build)  # "Begin both after 5 seconds."
                continue
            if owner is None or owner.anchor is not None:
                continue
            if "q" in m.groupdict() and m.group("q") is not None and not p.free(m):
                continue
            anchor = build(m)
            if anchor is None:
                continue
            owner.anchor = anchor
            owner.notes.append(f"anchor {anchor.get('event', 'scenario_time')} {anchor['offset_s']:+g} s from "
                               f"{clean(m.group(0))!r}")


    # "and from the same point every BSM ... arrives 2 s late": the anchor of the fault before
    for m in p.finditer(r"\b(?:from|at|starting (?:at|from)|beginning (?:at|from)) (?:the |that )?(?:same|very same) "
                        r"(?:point|moment|time|instant|place|distance|spot)\b"):
        owner = _owner(faults, p, m.start())
        if owner is None or owner.anchor is not None:
            continue
        before = [f for f in faults[:faults.index(owner)] if f.anchor is not None]
        if before:
            owner.anchor = dict(before[-1].anchor or {})
            owner.notes.append(f"anchor {owner.anchor.get('event', 'scenario_time')} of the fault before, from "
                               f"{clean(m.group(0))!r}")


# a sentence of its own that speaks of every fault ("Begin both after 5 seconds.")
_ALL_FAULTS = rx(r"\b(both|all of them|all (?:the |these |those )?(?:faults|effects|degradations|errors)|each of them"
                 r"|each fault|every fault|all \d+|all three|all two)\b")


def _anchor_all(p: ParseState, faults: list[FaultDraft], m: re.Match[str],
                build: Callable[[re.Match[str]], dict[str, Any] | None]) -> None:
    """One anchor for every fault still without one."""
    open_faults = [f for f in faults if f.anchor is None]
    if len(faults) < 2 or not open_faults or ("q" in m.groupdict() and m.group("q") is not None and not p.free(m)):
        return
    anchor = build(m)
    if anchor is None:
        return
    for f in open_faults:
        f.anchor = dict(anchor)
        f.notes.append(f"anchor {anchor.get('event', 'scenario_time')} {anchor['offset_s']:+g} s from "
                       f"{clean(m.group(0))!r} (said of every fault)")


# "for about two seconds", "for roughly 3 s": an approximate duration is still the duration
_ABOUT = r"(?:~ ?|≈ ?)?(?:(?:about|roughly|around|approximately|approx\.?|nearly|almost|some|up to|just over|just under|over|under"\
         r"|a little over|a bit over|at least|at most|maybe|perhaps|circa|ca\.) )?"


def _durations(p: ParseState, faults: list[FaultDraft]) -> None:
    for pattern in (r"(?:for|lasting|over|during) (?:a |an |the )?(?:period of |window of |span of |duration of "
                    r"|burst of |total of )?(?:the (?:first|next|last|final) )?" + _ABOUT + Q("time"),
                    r"(?:in|within|throughout) the (?:first|opening|initial) " + _ABOUT + Q("time"),
                    Q("time") + r" (?:long|window|episode|burst|outage|blackout|period|gap|silence)\b",
                    r"(?:window|episode|outage|blackout|burst|silence|period) of " + Q("time"),
                    r"lasts? (?:for )?" + Q("time"), r"(?:until|till) (?:t ?= ?)?" + Q("time")):
        for m in p.finditer(pattern):
            owner = _owner(faults, p, m.start())
            if owner is None or owner.duration_s is not None or not p.free(m):
                continue
            if rx(r" (?:longer|shorter|more|less|extra|too)\b").match(p.t, m.end()):
                continue  # "amber will last 2 s longer": a countdown offset, not the fault's duration
            value = p.use(m, "duration")
            if pattern.startswith("(?:until"):
                start = (owner.anchor or {}).get("offset_s", 0.0) if (owner.anchor or {}).get(
                    "kind", "scenario_time") == "scenario_time" else 0.0
                value = value - start
            if value > 0:
                owner.duration_s = value
                owner.notes.append(f"duration {value:g} s from {clean(m.group(0))!r}")


def fault_magnitudes(p: ParseState, app: Application, faults: list[FaultDraft]) -> None:
    for f in faults:
        op = FaultOperator(f.operator)
        if op is FaultOperator.DROP:
            m = _nearest(p, f, Q("count"))
            if m and p.free(m) and _owner(faults, p, m.start()) is f:
                m, source = _upper_end(p, m, "burst_count")
                f.burst_count = int(round(p.use(m, "burst_count")))
                f.notes.append(f"burst_count {f.burst_count}" + (f" {source}" if source else ""))
            else:
                m = _nearest(p, f, Q("pct"))
                m = m or _nearest(p, f, r"(?:probability|rate|chance)(?: of)? (?P<bare>0?\.\d+|1\.0|0|1)\b")
                if m and (m.groupdict().get("bare") or (p.free(m) and _owner(faults, p, m.start()) is f)):
                    source = None
                    if not m.groupdict().get("bare"):
                        m, source = _upper_end(p, m, "probability")
                    f.probability = float(m.group("bare")) if m.groupdict().get("bare") else p.use(m, "probability")
                    f.notes.append(f"probability {f.probability:g}" + (f" {source}" if source else ""))
            continue
        info = FAULT_OPERATORS[op.value]
        kind = info.magnitude_quantity  # the quantity kind of the magnitude, from the catalogue's unit
        if kind is None:
            continue
        m = None
        for cand in p.finditer(Q(kind)):
            if p.free(cand) and p.n.sentence_of(cand.start()) == f.sentence and _owner(faults, p, cand.start()) is f:
                if m is None or f.distance(cand.start()) < f.distance(m.start()):
                    m = cand
        if m is not None:
            m, source = _upper_end(p, m, "magnitude")
            source = source or f"from {m.group(0)!r} ({p.q(m).raw})"
            value = p.use(m, "magnitude")
            neg = info.negative_words
            after = p.t[m.end():m.end() + 30]
            if neg and value > 0 and not rx(lx.POSITIVE_SIGN).search(after) and (
                    rx(r"^\W*(too )?(lower|slower|less|shorter|earlier|early|below|under|low|short|fewer|small|smaller)\b"
                       ).search(after)
                    or rx(neg).search(p.n.sentence(f.sentence))):
                value = -value
            f.magnitude = value
            f.notes.append(f"magnitude {value:g} {source}")
        else:
            f.magnitude = _default_magnitude(app, op, f.stream or Stream.BSM)
            f.provenance = f"default: exceeds the {app.value} threshold"
            f.notes.append(f"magnitude {f.magnitude:g} (default past the threshold)")


def _upper_end(p: ParseState, m: re.Match[str], what: str) -> tuple[re.Match[str], str | None]:
    """A fault quantity stated as a range ("between 200 and 300 ms late", "3-5 m off") binds one value on purpose:
    the upper end, the worst case a test asks about. Returns the match of the upper end (``m`` itself when it is
    one, or no range) and, for a range, the note's source (the range and the choice); the lower end is marked
    bound by the range."""
    rng = stated_range(p.n, p.q(m))
    if rng is None:
        return m, None
    if rng.low_quantity is not None:
        rng.low_quantity.used = f"{what}: the lower end of the range {rng.words!r}"
    if rng.high is not p.q(m):
        m = rx(rf"<q(?P<q>{rng.high.index}):\w+>").search(p.t, rng.high.start) or m
    return m, f"from {rng.words!r} (the upper end of the stated range {rng.describe()})"


def _default_magnitude(app: Application, op: FaultOperator, stream: Stream) -> float:
    """A magnitude that breaches the application's tolerance (the intent gave none): the operator's catalogue
    default, else its tolerance kind's (``lastv2x.core.tolerance.default_magnitude``), else its range's low end."""
    info = FAULT_OPERATORS[op.value]
    lo, hi = info.magnitude_range or (0.0, math.inf)
    value = info.default_magnitude
    if value is None and info.tolerance:
        value = tolerance.default_magnitude(info.tolerance, APPLICATIONS[app], stream)
    value = lo if value is None else value
    return round(min(max(value, lo), hi), 3)


def _stated(f: FaultDraft) -> bool:
    """Does the fault carry a value of its own (not a default)?"""
    return (f.magnitude is not None and not f.provenance.startswith("default")) or f.probability is not None \
        or f.burst_count is not None


def merge_restatements(p: ParseState, faults: list[FaultDraft]) -> list[FaultDraft]:
    """One fault said twice in different sentences is one fault: a heading and its description ("IMA-88 Cross-traffic
    speed inflated\nDescription: the BSM speed field reads 5 m/s higher"), a fault and its gloss ("its OBU never
    transmits. V2X silence, not a radar dropout.", "the phase it advertises is green ... Only the SPATEM content is
    wrong, and only for the first 3 s after the red onset"). Two faults of one operator, stream and sender merge when at
    most one of them states a value and their anchors, durations and values do not differ; the merged fault keeps every
    field either states. Anything that tells them apart (another anchor, another value) keeps both."""
    out: list[FaultDraft] = []
    for f in faults:
        # a sender only one of them names is no other sender ("the roadside unit's clock is 1.5 s behind" and later
        # "the signal data as stale")
        twin = next((g for g in out if g.operator == f.operator and g.stream == f.stream
                     and (g.sender == f.sender or g.sender is None or f.sender is None)
                     and g.sentence != f.sentence and not (_stated(g) and _stated(f))
                     and (g.anchor is None or f.anchor is None or g.anchor == f.anchor)
                     and (g.duration_s is None or f.duration_s is None or g.duration_s == f.duration_s)), None)
        if twin is None:
            out.append(f)
            continue
        if _stated(f):
            twin.magnitude, twin.probability, twin.burst_count, twin.provenance = (
                f.magnitude, f.probability, f.burst_count, f.provenance)
        twin.anchor = twin.anchor or f.anchor
        twin.duration_s = twin.duration_s if twin.duration_s is not None else f.duration_s
        twin.target_phase = twin.target_phase or f.target_phase
        twin.sender = twin.sender or f.sender
        twin.notes.append(f"the same fault said again in {clean(p.n.sentence(f.sentence)).strip()!r} (cue {f.cue!r}): "
                          f"merged")
        twin.notes.extend(n for n in f.notes if n.startswith(("anchor", "duration", "magnitude", "probability",
                                                               "burst_count")))
    return out


def fault_json(p: ParseState, app: Application, f: FaultDraft, i: int) -> dict[str, Any]:
    op = FaultOperator(f.operator)
    stream = f.stream or next(iter(APPLICATIONS[app].consumes))
    out: dict[str, Any] = {"name": f"{op.value}_{stream.value.lower()}" + (f"_{i}" if i else ""),
                           "operator": op.value, "stream": stream.value}
    for key in ("sender", "anchor", "duration_s", "magnitude", "probability", "burst_count", "target_phase"):
        value = getattr(f, key)
        if value is not None:
            out[key] = value
    if f.magnitude is not None:
        out["provenance"] = f.provenance
    p.note(f"fault[{i}] {op.value} on {stream.value}: {'; '.join([repr(f.cue), *f.notes])}")
    return out
