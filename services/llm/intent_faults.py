"""Fault phrases of the offline grammar: operators, streams, senders, magnitudes (anchors and durations: in
``intent_windows``; the fault clause being read and which clause owns a phrase: ``intent_fault_draft``).

Fault cues (``lexicon.FAULT_CUES``) are found first; cues close together in one
sentence form one fault, unless a conjunction separates them. Every other fault
phrase (a stream, a sender, an anchor, a duration, a magnitude) attaches to the
nearest cue in its sentence, or to the only fault when there is one.
"""

from __future__ import annotations

import math
import re
from typing import Any

from lastv2x.core import tolerance
from lastv2x.core.catalogue import APPLICATIONS, FAULT_OPERATORS, STREAMS, Application, Stream
from lastv2x.core.faults import CROSS_GHOST_APPS
from lastv2x.core.spec import MAX_FAULTS, FaultOperator
from lastv2x.core.verifier import Finding, Severity
from services.llm import fault_cues
from services.llm import lexicon as lx
from services.llm.intent_fault_draft import (
    PROVENANCE_SIGN_OPEN,
    SEPARATOR,
    STRONG_SEPARATOR,
    FaultDraft,
    nearest,
    owner_of,
)
from services.llm.intent_text import (
    Mention,
    ParseState,
    Q,
    agent_for,
    clean,
    rx,
    stated_range,
)
from services.llm.intent_windows import chained_windows, fault_anchors, fault_durations

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
                    r"|\b(hold|holds|holding|held) up\b(?=\s*(?:[?!.,;]|$|(?:well|under|against|in practice|at all|or not)\b))"
                    # a latency budget met, what a test measures or leaves out, the application's own output being
                    # late (lexicon): said of the run, not of a message
                    r"|" + lx.LATENCY_BUDGET_MET + r"|" + lx.NOT_A_FAULT + r"|" + lx.APP_OUTPUT_LATE +
                    # "a delayed departure (it starts at 4 s)": the scene's choreography
                    r"|\b(delayed|late|postponed) (departure|start|launch|take-?off|release)\b"
                    # where a vehicle is, said after its speed ("oncoming motorcycle at 70 km/h, 80 m out", "making 30
                    # kn, 90 m off"): no position offset
                    r"|<q\d+:speed>,? <q\d+:dist> (?:out|off|away)\b"
                    # the forged vehicle going away ("after the ghost disappears"); a lag on the ego's own actuators ("300ms
                    # of lag on the brake actuator": no message fault, the unparsed-fault guard says so)
                    r"|\b(?:ghost|phantom)\w* (?:\w+ )?(?:disappears?|vanish\w*|goes away|is gone)\b"
                    r"|(?:<q\d+:time> (?:of )?)?\b(?:lag|delay|latency)\w* (?:on|in|of|to) (?:the )?(?:ego'?s? )?(?:brake|braking"
                    r"|steering|throttle) (?:actuator|system|controller|ecu)s?\b")
# a word mentioned, not used: a report's column, counter or metric named by a fault word, quoted or not ("the 'lost'
# column in the report should read zero", "the dropped-packets counter"): what a run shows, not a fault it asks for;
# and the application's own handling of a track ("IMA holds last track? or drops it?")
_MENTION = rx(lx.REPORT_ITEM + r"|" + lx.APP_OWN_HANDLING)
_PUTS_ASIDE = rx(lx.PUTS_ASIDE_PREVIOUS)


_MESSAGE_SUBJECT = rx(r"(messages?|msgs?|packets?|broadcasts?|updates?|frames?|beacons?|spats?|bsms?|data|feeds?"
                      r"|info\w*|notices?|notifications?|denms?)\b")


# a stream said to be out of the run ("DENM not used", "MAP unused here"): no fault's stream
_STREAM_UNUSED = rx(r"\s*(?:is |are )?(?:not used|unused|not in use|not sent|disabled|switched off|turned off)\b")


def _stream_mentions(p: ParseState) -> list[tuple[Stream, int, int]]:
    out: list[tuple[Stream, int, int]] = []
    for stream, pattern in lx.STREAM_CUES:
        for m in p.finditer(pattern):
            if _STREAM_UNUSED.match(p.t, m.end()):
                continue
            if not any(a < m.end() and m.start() < b for _s, a, b in out):
                out.append((stream, m.start(), m.end()))
    return sorted(out, key=lambda x: x[1])


_LIST_ITEM = rx(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s")
# a step of a numbered plan ("1. Phase 1 - 20 nominal crossings, nothing injected"): what it says healthy is that step's
_PLAN_STEP = rx(r"^\s*(?:\d{1,2}[.)]\s*)?(?:phase|step|stage|run|part|round|leg)\s*\d{1,2}\b")
_REFERS_BACK_TO = rx(r"\b(?:delay|drop|freeze|replay|corrupt|offset|shift|suppress|silence|stamp|lose)\w* (?:it|them)\b"
                     r"|\b(?:over|in|during|for|within) the same (?:window|period|interval|span|time span|time)\b")


def _in_context(p: ParseState, context: re.Pattern[str], s: int) -> bool:
    """Does sentence ``s`` speak of communication? A list item ("- whatever gets through shows up 120 ms late")
    also from the item or heading before it: the list's items share one subject."""
    if context.search(p.n.sentence(s)):
        return True
    # (and a sentence that refers back, "First delay it by 0.4 s ...", after one that names the messages: "Could you
    # chain two faults on the lead's BSM?")
    return s > 0 and (_LIST_ITEM.match(p.n.sentence(s)) is not None or _REFERS_BACK_TO.search(p.n.sentence(s))
                      is not None) and context.search(p.n.sentence(s - 1)) is not None


def parse_faults(p: ParseState, app: Application, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> list[FaultDraft]:
    # healthy communication said for the run: no faults; said in one step of a plan whose other steps ask for a fault
    # ("1. Phase 1 - nominal crossings, nothing injected ... 2. Phase 2 - offset the crossing vehicle's reported
    # position by 6 m"), that step's sentence only
    healthy = {p.n.sentence_of(m.start()) for m in p.finditer(lx.NO_FAULTS)}
    # a sentence the next one puts aside ("What happens if ... freezes? Good questions, but I'm not asking them today.")
    put_aside = {i - 1 for i in range(1, len(p.n.sentences)) if _PUTS_ASIDE.search(p.n.sentence(i))}
    context = rx(lx.COMM_CONTEXT)
    cues: list[tuple[int, int, int, FaultOperator | str, str]] = []
    idioms = [(m.start(), m.end()) for pat in (_VEHICLE_IDIOM, _MENTION) for m in pat.finditer(p.t)]
    for op, pattern, needs_context, prio in lx.fault_cue_table():
        for m in p.finditer(pattern):
            s = p.n.sentence_of(m.start())
            if s in healthy or s in put_aside:
                continue
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
    if healthy and not (cues and _PLAN_STEP.match(p.n.sentence(min(healthy)))):
        p.note("no faults: the intent asks for healthy communication")
        return []
    drafts: list[tuple[FaultDraft, int]] = []
    for start, end, prio, op, text in cues:
        s = p.n.sentence_of(start)
        if drafts:
            last, last_prio = drafts[-1]
            gap = p.t[last.end:start]
            # a generic corruption word and the operator its field names ("configured wrong, so our lane gets
            # linked to the wrong group") are one fault, as two cues of one operator are
            same_op = op == last.operator or lx.SEMANTIC in (op, last.operator)
            sep = STRONG_SEPARATOR if same_op else SEPARATOR
            # one subject, two verb phrases ("freezes and keeps repeating", "stays quiet and never sends"): one fault
            one_subject = op == last.operator and (_SAME_SUBJECT.fullmatch(gap) is not None
                                                   or _SAME_SENDER.fullmatch(gap) is not None)
            # a fault announced before a colon and detailed after it ("the SPaT content freezes at the start of
            # green: phase and end times stop changing") is one fault
            announced = op == last.operator and last.sentence == s and ":" in gap and len(gap) < 80
            # "resend a captured message with a 10 s lag": a replayed message is late by what it replays; that lag
            # is the replay's own, not a delay beside it
            # ("rebroadcasting them 2 seconds stale in place of the live ones, with the original timestamps": the replay's
            # age, not a timestamp offset of its own)
            if last.operator is FaultOperator.REPLAY and op in (FaultOperator.DELAY, FaultOperator.TIMESTAMP_OFFSET) \
                    and s in (last.sentence, p.n.sentence_of(max(last.start, last.end - 1))):
                last.end = end
                last.notes.append(f"{text!r}: the replay's lag, not a {getattr(op, 'value', op)} of its own")
                continue
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
        # its MAP "tying our lane to the cross street's signal": the content of a forged MAP, not a second fault
        # (a lane-association cue of its sentence, said apart or merged into the forger's own cue)
        # (but a forger that shows a phase and a lane cue said apart after it are two faults: "a fake RSU pushing
        # green from red onset, plus MAP tying the ego lane to the wrong signal group")
        apart = [g for g in faults if g.operator is FaultOperator.MAP_MISASSOCIATION and g.sentence == f.sentence
                 and g.start > f.end and STRONG_SEPARATOR.search(p.t[f.end:g.start])
                 and rx(r"\b(green|red|amber|yellow)\b(?! onset)").search(p.t[f.start:g.start])]
        for g in [d for d in faults if d.operator is FaultOperator.MAP_MISASSOCIATION and d.sentence == f.sentence
                  and d not in apart]:
            faults.remove(g)
            f.start, f.end = min(f.start, g.start), max(f.end, g.end)
        rewired = None if apart else next((m for op, pattern, *_ in lx.fault_cue_table()
                                           if op is FaultOperator.MAP_MISASSOCIATION
                                           for m in [rx(pattern).search(p.n.sentence(f.sentence))] if m), None)
        if rewired is not None:
            f.stream, f.stream_named = Stream.MAP, True
            f.notes.append(f"stream MAP (the forged RSU's MAP rewires the ego's lane: {rewired.group(0)!r})")
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
        implied = lx.operator_stream(op, APPLICATIONS[app].consumes)
        if implied and f.stream is not implied and (not f.stream_named or f.stream not in FAULT_OPERATORS[op.value].streams):
            f.notes.append(f"stream {implied.value} implied by {op.value}")
            f.stream = implied
        if f.operator is FaultOperator.SPOOFED_RSU and f.sender is not None:
            f.notes.append(f"sender {f.sender} dropped: a forged roadside unit transmits under an id of its own")
            f.sender = None
        if f.operator is FaultOperator.SPOOFED_RSU and f.target_phase is None:
            hit = nearest(p, f, r"(?:reports?|reporting|shows?|showing|claims?|claiming|broadcasts?|broadcasting|says|saying"
                                 r"|displays|displaying|advertises|advertising|sends|sending|transmits|transmitting|announc\w*"
                                 r"|push\w*|puts? out|putting out|beams?|beaming)"
                                 r" (?:a |an |the )?"
                                 r"(?:false |wrong |fake )?(?P<ph>green|red|amber"
                                 r"|yellow)\b|(?:false|fake|spoofed) (?P<ph2>green|red|amber|yellow)"
                                 r"|\bphase ?(?:=|:|of) ?(?P<ph3>green|red|amber|yellow)\b"
                                 # "claiming phase 6 is green", "showing signal group 2 as green", "claims the ego's
                                 # signal is green"
                                 r"|(?:claim\w*|show\w*|report\w*|say\w*) (?:that )?(?:the )?(?:ego'?s? |our |its )?(?:signal "
                                 r"group|group|sg|phase|signal|light)"
                                 r" ?\w{0,3} (?:is|as|to be) (?P<ph4>green|red|amber|yellow)\b"
                                 # "transmits SPaT saying it is red"
                                 r"|(?:say\w*|claim\w*|tell\w*|insist\w*) (?:that )?(?:it|the light|the signal|the phase)"
                                 r" is (?:still |now |already )?(?P<ph5>green|red|amber|yellow)\b")
            if hit:
                f.target_phase = lx.PHASES[next(hit.group(g) for g in ("ph", "ph2", "ph3", "ph4", "ph5") if hit.group(g))]
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
            hit = nearest(p, f, r"(?:reports?|shows?|claims?|broadcasts?|says|displays|advertises|telling|tells|to|as|into) "
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
    _withdrawn_faults(p, faults)
    fault_anchors(p, app, faults, agents)
    fault_durations(p, faults)
    chained_windows(p, faults)
    return faults


# "green ... when it is actually red", "sees a green light in the messages": the first colour is shown
_SHOWN = (r"^(?:\w+ ){0,3}?(?P<ph>green|red|amber|yellow)\b[^.;]{0,60}?\b(?:when|while|although|though|after|but|despite"
          r"|in the (?:messages?|broadcasts?|spat|data))\b")


# "the location carried in those notices": the fault's own words refer back to messages named before
_BACK_TO_MESSAGES = rx(r"\b(those|these|the same|such|said) (messages?|notices?|alerts?|warnings?|notifications?|broadcasts?"
                       r"|packets?|frames?|reports?|beacons?)\b")


def _fault_stream(p: ParseState, app: Application, f: FaultDraft, faults: list[FaultDraft],
                  streams: list[tuple[Stream, int, int]]) -> None:
    if f.stream_named and f.stream is not None:
        return  # its own words settled it (a forged RSU's MAP rewiring the ego's lane)
    mine = [(st, a) for st, a, _b in streams if owner_of(faults, p, a) is f]
    if mine:
        # a stream in the fault's own clause first ("SPaT messages arrive with 0.5 s of lag, and the MAP ...")
        own = [(st, a) for st, a in mine if not STRONG_SEPARATOR.search(p.t[min(a, f.end):max(a, f.start)])]
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
        if r.what == "ego" or owner_of(faults, p, r.start) is not f or p.n.sentence_of(r.start) != f.sentence:
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


# "we drive at 15 m/s": a speed whose subject is the ego, not the forged vehicle named before it
_EGO_MOVES = rx(r"\b(we|ego|i)\b\s+(?:\w+\s+){0,2}?(?:drive|driving|travel\w*|go|goes|going|are|is|approach\w*"
                r"|cruis\w*)\b")


def _ghost_speed(p: ParseState, faults: list[FaultDraft], f: FaultDraft) -> None:
    """A forged vehicle's speed said after its cue in its sentence ("a fake car 60 m ahead, driving at 10 m/s"):
    ``ghost_speed_mps``, so the ego's speed keeps the words meant for it."""
    for m in p.finditer(Q("speed")):
        if m.start() < f.start or p.n.sentence_of(m.start()) != f.sentence or not p.free(m) \
                or owner_of(faults, p, m.start()) is not f or _EGO_MOVES.search(p.t[f.start:m.start()]):
            continue
        f.ghost_speed_mps = round(p.use(m, "ghost_speed_mps"), 3)
        f.notes.append(f"ghost_speed_mps {f.ghost_speed_mps:g} from {m.group(0)!r} ({p.q(m).raw})")
        return


def _ghost_route(p: ParseState, app: Application, f: FaultDraft) -> None:
    """Where the words put a phantom (IMA, LTA: the only applications with a crossing route): on the crossing
    route ("a fake car on the cross street", "approaching the junction from the left", "a phantom oncoming car")
    or on ours ("60 m ahead of us", "in our lane"); both stated, so no repair moves it. Said of neither: open."""
    if app not in CROSS_GHOST_APPS:
        return
    # the phantom's own clause (a follower "8 m behind us" in the next one places the follower, not the phantom)
    clause = _GHOST_CLAUSE_END.split(p.t[f.start:p.n.sentences[f.sentence][1]])[0]
    clause = rx(lx.FOLLOWER_CUE).sub(" ", clause)
    # the phantom named by the crossing route's role ("ghost crossing vehicle BSMs ... 40 m ahead of the ego") is on it,
    # whatever distance is said from the ego
    if _CROSSING_PHANTOM.search(p.t[f.start:f.end + 20]):
        f.ghost_route = "cross"
    elif rx(lx.GHOST_OWN_ROUTE).search(clause):
        f.ghost_route = "ego"
    elif rx(lx.GHOST_CROSS_ROUTE).search(p.n.sentence(f.sentence)):
        f.ghost_route = "cross"
        anchor = f.anchor or {}
        if anchor.get("event") == "stop_bar_distance" and f.magnitude is None and not _EGO_WHEN.search(clause):
            # "a phantom on the cross street, 120 m before the intersection": where the phantom is, not when the
            # window opens (the anchor reading took it first)
            f.magnitude, f.provenance, f.anchor = float(anchor["distance_m"]), "intent", None
            f.notes.append(f"magnitude {f.magnitude:g}: the phantom's distance before the conflict point (not a "
                           "window anchor)")
            fault_anchors(p, app, [f])  # the window the words give besides ("From t=3 s, ... 30 m from the junction")
    if f.ghost_route is not None:
        f.notes.append(f"ghost_route {f.ghost_route} from the wording")


_CROSSING_PHANTOM = rx(r"\b(?:ghost|phantom|fake|forged)[- ](?:crossing|cross|oncoming|opposing)\b")
_GHOST_CLAUSE_END = re.compile(r"[.;]|,\s*(?:and|while|with|plus)\b|\band (?:a|an|the)\b")
# "... appears when we are 50 m before the intersection": the ego's distance, a window anchor, not the phantom's
_EGO_WHEN = re.compile(r"\b(?:when|as|once|after|until) (?:we|the ego|ego|our car|i)\b")


_TAKEN_BACK = rx(lx.TAKEN_BACK)


def _withdrawn_faults(p: ParseState, faults: list[FaultDraft]) -> None:
    """Remove each fault a later sentence takes back by its kind (``_TAKEN_BACK``): the last one of that kind said before
    it, noted; the taking back is no fault of its own."""
    for m in p.finditer(_TAKEN_BACK.pattern):
        ops = lx.taken_back_operators(m.group("what"))
        s = p.n.sentence_of(m.start())
        for f in [f for f in faults if f.operator in ops and f.sentence < s][-1:] + \
                [f for f in faults if f.start < m.end() and m.start() < max(f.end, f.start + 1)]:
            if f in faults:
                faults.remove(f)
                p.withdrawn.add(f.sentence)
                p.note(f"fault {getattr(f.operator, 'value', f.operator)} on {f.stream.value if f.stream else '?'} ({f.cue!r}) "
                       f"taken back by "
                       f"{clean(m.group(0))!r}")


def fault_magnitudes(p: ParseState, app: Application, faults: list[FaultDraft]) -> None:
    for f in faults:
        op = FaultOperator(f.operator)
        if op is FaultOperator.DROP:
            m = nearest(p, f, Q("count"))
            if m and p.free(m) and owner_of(faults, p, m.start()) is f:
                m, source = _upper_end(p, m, "burst_count")
                f.burst_count = int(round(p.use(m, "burst_count")))
                f.notes.append(f"burst_count {f.burst_count}" + (f" {source}" if source else ""))
            else:
                m = nearest(p, f, Q("pct"))
                m = m or nearest(p, f, r"(?:probability|\bprob|rate|chance|\bp|\bp\((?:drop|loss)\))(?: of| ?[=:\u2248~])? ?"
                                       r"(?P<bare>0?\.\d+|1\.0|0|1)\b")
                if m and (m.groupdict().get("bare") or (p.free(m) and owner_of(faults, p, m.start()) is f)):
                    source = None
                    if not m.groupdict().get("bare"):
                        m, source = _upper_end(p, m, "probability")
                    f.probability = float(m.group("bare")) if m.groupdict().get("bare") else p.use(m, "probability")
                    if _DELIVERY_RATIO.search(p.t[max(0, m.start() - 40):m.start()]) or _GETS_THROUGH.search(
                            p.t[m.end():m.end() + 60]):  # "delivery ratio 80 %", "90 % of the messages get through"
                        f.probability = round(1.0 - f.probability, 6)
                        source = (source + ", " if source else "") + "the share not delivered"
                    f.notes.append(f"probability {f.probability:g}" + (f" {source}" if source else ""))
            continue
        if op is FaultOperator.GHOST_SENDER:
            _ghost_speed(p, faults, f)
            _ghost_route(p, app, f)
            if f.magnitude is not None:
                continue
        info = FAULT_OPERATORS[op.value]
        kind = info.magnitude_quantity  # the quantity kind of the magnitude, from the catalogue's unit
        if kind is None:
            continue
        m = None
        said = (False, False)  # (said as the fault's value: "delta=-3 m/s"; an age's: "ten seconds stale")
        for cand in p.finditer(Q(kind)):
            if p.free(cand) and p.n.sentence_of(cand.start()) == f.sentence and owner_of(faults, p, cand.start()) is f:
                # a value under the fault's key, or an age said as one, beats a nearer quantity ("v_oncoming=16 m/s,
                # fault=speed_offset, delta=-3 m/s"; "replay what it sent at twenty seconds ... ten seconds stale")
                keyed = _VALUE_KEY.search(p.t[max(0, cand.start() - 14):cand.start()]) is not None
                is_age = op in _AGE_OPERATORS and bool(_SAID_AS_AGE.search(p.t[cand.end():cand.end() + 24]))
                if m is None or ((keyed, is_age), -f.distance(cand.start())) > (said, -f.distance(m.start())):
                    m, said = cand, (keyed, is_age)
        if m is not None:
            m, source = _upper_end(p, m, "magnitude")
            source = source or f"from {m.group(0)!r} ({p.q(m).raw})"
            value = p.use(m, "magnitude")
            fix = _corrected(p, kind, value) or _corrected_after(p, kind, m)
            if fix is not None:  # "edit: make that 3 s lag, not 2": the value the writer corrected it to
                m, source = fix, f"from {fix.group(0)!r} ({p.q(fix).raw}), corrected from {p.q(m).raw}"
                value = p.use(m, "magnitude")
            neg = info.negative_words
            after = p.t[m.end():m.end() + 30]
            # the sentence's sign words, less a follower's ("a motorcycle 10 m behind us" says nothing of the fault's
            # direction)
            sentence = rx(lx.FOLLOWER_CUE).sub(" ", p.n.sentence(f.sentence))
            # an explicit plus sign ("a constant bias of +10 km/h") or a sign word after the quantity
            positive = p.q(m).raw.lstrip().startswith("+") or p.t[max(0, m.start() - 2):m.start()].rstrip().endswith(
                "+") or rx(lx.POSITIVE_SIGN).search(after)
            if neg and value > 0 and not positive and (
                    rx(r"^\W*(too )?(lower|slower|slow|less|shorter|earlier|early|below|under|low|short|fewer|small|smaller)\b"
                       ).search(after) or rx(neg).search(sentence)):
                value = -value
            elif neg and value > 0 and not positive and not (info.positive_words and rx(info.positive_words).search(
                    sentence)):
                f.provenance = PROVENANCE_SIGN_OPEN
                source += ", direction not stated"
            elif value < 0 and info.positive_words and rx(r"^\W{0,3}(?:" + info.positive_words + r")").search(after) \
                    and not rx(neg or r"$^").search(after):
                # "position offset -5 m (behind)": the writer's own sign convention; the word says the direction
                value = -value
                source += ", direction from the word after it (the spec's sign: positive is " + \
                    rx(info.positive_words).search(after).group(0) + ")"
            f.magnitude = value
            f.notes.append(f"magnitude {value:g} {source}")
        else:
            f.magnitude = _default_magnitude(app, op, f.stream or Stream.BSM)
            f.provenance = f"default: exceeds the {app.value} threshold"
            f.notes.append(f"magnitude {f.magnitude:g} (default past the threshold)")


def _corrected(p: ParseState, kind: str, value: float) -> re.Match[str] | None:
    """The quantity a correction puts in place of ``value`` ("edit: make that 3 s lag, not 2"), or None."""
    for m in p.finditer(lx.CORRECTION + Q(kind) + lx.CORRECTED_FROM):
        if p.free(m) and abs(float(m.group("old")) - value) <= 1e-9 * max(1.0, abs(value)):
            return m
    return None


def _corrected_after(p: ParseState, kind: str, m: re.Match[str]) -> re.Match[str] | None:
    """The quantity said in place of ``m`` right after it ("delayed by half a second, no wait, make that 800
    milliseconds"), or None."""
    fix = rx(r"^" + lx.CORRECTED_AFTER + Q(kind)).search(p.t[m.end():m.end() + 70])
    return fix if fix is not None and p.free(fix) else None


# a share said as what arrives ("packet delivery ratio 80 %", "PDR of 0.8", "only 90 % of SPaT messages get through"): a
# drop's probability is the rest
_GETS_THROUGH = rx(r"^ of (?:the )?(?:\S+ ){0,2}?(?:messages?|msgs?|packets?|bsms?|spats?|mapmsgs?|broadcasts?|updates?"
                   r"|frames?) (?:only |still )?(?:(?:get|gets|make it|makes it) through|(?:are|get|gets) delivered"
                   r"|arrive (?:intact|fine|normally|ok|as sent))\b")
_DELIVERY_RATIO = rx(r"\b(?:(?:packet )?(?:delivery|reception|success) (?:ratio|rate)|pdr|prr)\b[^.;]{0,20}$")

# a hand-typed key that holds a fault's value ("delta=-3 m/s", "offset: 4 m", "magnitude = 0.5 s")
_VALUE_KEY = rx(r"\b(?:delta|offset|magnitude|mag|value|amount|error|shift|age|lag|latency|delay)\s*[=:]\s*$")

# operators whose magnitude is an age (seconds in the past), and the words that say a quantity is one
_AGE_OPERATORS = (FaultOperator.REPLAY, FaultOperator.TIMESTAMP_OFFSET)
_SAID_AS_AGE = rx(r"^\W*(?:too )?(?:stale|old|older|outdated|in the past|ago|earlier|behind|before(?=\s*[,.;)]|\s+instead))\b")


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


_STALENESS = rx(r"stale|outdated|out of date|old|older")


def _same_value(a: FaultDraft, b: FaultDraft, signless: bool = False) -> bool:
    """Do two faults state the same value ("showing it 15 metres further back ... Please reproduce that: reported
    15 m behind its real position")? A restatement, not a second fault. ``signless``: a gloss that says the same
    offset by what it looks like ("5 m further forward ...; the lead therefore appears 5 m farther away"), whose
    relative words give no sign of their own."""
    def close(x: float | None, y: float | None) -> bool:
        if signless and x is not None and y is not None:
            x, y = abs(x), abs(y)
        return (x is None) == (y is None) and (x is None or y is None or abs(x - y) <= 1e-9 * max(1.0, abs(x)))
    return close(a.magnitude, b.magnitude) and close(a.probability, b.probability) \
        and close(a.burst_count, b.burst_count)


# what glosses the fault just said in its own sentence ("the MAP could associate the ego's lane with the wrong signal
# group - say the left-turn arrow instead of the through phase")
_GLOSS_BETWEEN = rx(r"(?:^|[-,(])\s*(?:say|i\.?\s?e\.?|e\.?\s?g\.?|namely|that is|in other words|for example"
                    r"|not an? [\w ]{1,30},)")  # (and a negated alternative: "- not a random drop, a specific sender ...")
# what the fault looks like from the receiver, said after it ("...; the lead therefore appears 5 m farther away")
_LOOKS_BETWEEN = rx(r"[;,]\s*(?:(?:the|its|our) [\w ]{1,20}?|it|they) " + lx.LOOKS_LIKE)


def merge_restatements(p: ParseState, faults: list[FaultDraft]) -> list[FaultDraft]:
    """One fault said twice in different sentences is one fault: a heading and its description ("IMA-88 Cross-traffic
    speed inflated\nDescription: the BSM speed field reads 5 m/s higher"), a fault and its gloss ("its OBU never
    transmits. V2X silence, not a radar dropout.", "the phase it advertises is green ... Only the SPATEM content is
    wrong, and only for the first 3 s after the red onset"). Two faults of one operator, stream and sender merge when at
    most one of them states a value, or both state the same one, and their anchors, durations and values do not differ;
    the merged fault keeps every field either states. Anything that tells them apart (another anchor, another value) keeps both."""
    out: list[FaultDraft] = []
    for f in faults:
        # "the feed freezes ... whether the advisory notices the stale data": frozen or replayed content is stale by
        # what it is; a bare staleness word (no value of its own) beside such a fault on its stream describes it
        kin = next((g for g in faults if g.operator in (FaultOperator.FREEZE, FaultOperator.REPLAY)
                    and (f.stream is None or g.stream == f.stream)), None)  # before it or after ("IMA-57: stale BSMs ...")
        if f.operator is FaultOperator.TIMESTAMP_OFFSET and kin is not None and not _stated(f) \
                and _STALENESS.fullmatch(f.cue.strip()):
            kin.notes.append(f"{f.cue!r} in {clean(p.n.sentence(f.sentence)).strip()!r}: what the {kin.operator} makes "
                             "of the content, not a fault of its own")
            # (its window is the content's: "stale-signal case: at amber onset, swap the live SPaT for a replay")
            if kin.anchor is None and f.anchor is not None:
                kin.anchor = f.anchor
            if kin.duration_s is None and f.duration_s is not None:
                kin.duration_s = f.duration_s
            continue
        # a sender only one of them names is no other sender ("the roadside unit's clock is 1.5 s behind" and later
        # "the signal data as stale")
        twin = next((g for g in out if g.operator == f.operator and g.stream == f.stream
                     and (g.sender == f.sender or g.sender is None or f.sender is None)
                     and (g.sentence != f.sentence or _GLOSS_BETWEEN.search(p.t[g.end:f.start]) is not None
                          or _LOOKS_BETWEEN.search(p.t[g.end:f.start]) is not None)
                     and (not (_stated(g) and _stated(f)) or _same_value(
                         g, f, signless=_LOOKS_BETWEEN.search(p.t[g.end:f.start]) is not None))
                     and (g.anchor is None or f.anchor is None or g.anchor == f.anchor)
                     and (g.duration_s is None or f.duration_s is None or g.duration_s == f.duration_s)), None)
        if twin is None:
            out.append(f)
            continue
        if _stated(f) and not _stated(twin):  # (the first statement's value and sign stand)
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
    for key in ("sender", "anchor", "duration_s", "magnitude", "probability", "burst_count", "target_phase",
                "ghost_speed_mps", "ghost_route"):
        value = getattr(f, key)
        if value is not None:
            out[key] = value
    if f.magnitude is not None:
        out["provenance"] = f.provenance
    p.note(f"fault[{i}] {op.value} on {stream.value}: {'; '.join([repr(f.cue), *f.notes])}")
    return out
