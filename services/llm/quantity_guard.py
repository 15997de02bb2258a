"""The no-silent-quantity guard: every quantity with a unit in an intent is in the spec, or reported.

Issue 31: wording the parser has not seen lost a fault with no warning; the only trace was a
note "unused quantity '2 seconds'". Whatever backend answered, each quantity with a unit
("for about two seconds", "50 %", "15 km/h faster", "a run of 15 messages") is looked up
among the values of the answer (every attempt's answer, so a verifier's deliberate repair
does not count as a loss):

* in a clause that asks for a fault (``fault_cues.detect``), the value must be one of a
  fault's fields: magnitude, duration, probability, burst count, a phantom's speed, anchor
  offset or distance (or an anchor offset plus a duration: "until t = 10 s");
* in any other clause, the value must be somewhere in the answer (a speed, a gap, a range).

A quantity found nowhere becomes a ``parser.unparsed_fault`` WARNING quoting its clause and
the quantity, one per clause, exactly as a fault clause without a fault does: the spec is
returned, ``lastv2x parse`` exits non-zero unless ``--allow-partial``, and a campaign stops
the scenario (the clause is in ``ParseResult.unparsed``). Values are compared by magnitude
(the sign is the parser's reading of "lower", "before") within 2 %.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError

from lastv2x.core.spec import Ego, SignalPlan
from lastv2x.core.timeline import conflict_time_s
from lastv2x.core.verifier import Finding, Severity
from services.llm import fault_cues
from services.llm import lexicon as lx
from services.llm.intent_text import Quantity, normalize, run_sheet_times, stated_range

CHECK = fault_cues.CHECK
TOLERANCE = 0.02
_FAULT_FIELDS = ("magnitude", "duration_s", "probability", "burst_count", "ghost_speed_mps")
_ANCHOR_FIELDS = ("offset_s", "distance_m")
_NOT_VALUES = frozenset({"seed", "spec_version", "intent", "name", "id"})


def _numbers(value: Any, key: str = "") -> Iterable[float]:
    if key in _NOT_VALUES or isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, str(k))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _numbers(v, key)


def _fault_numbers(fault: dict[str, Any]) -> Iterable[float]:
    for key in _FAULT_FIELDS:
        if isinstance(fault.get(key), int | float):
            yield float(fault[key])
    anchor: dict[str, Any] = fault["anchor"] if isinstance(fault.get("anchor"), dict) else {}
    for key in _ANCHOR_FIELDS:
        if isinstance(anchor.get(key), int | float):
            yield float(anchor[key])
    if isinstance(anchor.get("offset_s"), int | float) and isinstance(fault.get("duration_s"), int | float):
        yield float(anchor["offset_s"]) + float(fault["duration_s"])  # "from t = 4 s until t = 10 s"


def _signal_times(data: dict[str, Any]) -> Iterable[float]:
    """The first onsets of green, amber and red the answer's fixed-time plan implies ("amber at 6 s" is an
    offset of the plan)."""
    plan = data.get("signal") if isinstance(data.get("signal"), dict) else {}
    try:
        p = SignalPlan.model_validate(plan)
    except ValidationError:
        return
    ego: dict[str, Any] = data["ego"] if isinstance(data.get("ego"), dict) else {}
    speed, start = ego.get("speed_mps"), ego.get("start_distance_m", Ego().start_distance_m)
    arrival = start / speed if isinstance(speed, int | float) and speed > 0 and isinstance(start, int | float) else None
    for onset in (0.0, p.green_s, p.green_s + p.amber_s):
        at = (onset - p.offset_s) % p.cycle_s
        yield at
        if arrival is not None and arrival > at:
            yield arrival - at  # "the light turns red 3 s before we get to the stop line"


def _signal_distances(data: dict[str, Any]) -> Iterable[float]:
    """How far the ego, at its speed from its start distance, is from the stop bar at each first onset ("the light
    becomes red when the car is 80 m away")."""
    ego = data.get("ego") if isinstance(data.get("ego"), dict) else {}
    try:
        e = Ego.model_validate(ego)
    except ValidationError:
        return
    for t in _signal_times(data):
        left = e.start_distance_m - e.speed_mps * t
        if left > 0:
            yield left


def _headways(data: dict[str, Any]) -> Iterable[float]:
    """Each agent's gap as a time at the ego's speed ("follows at 2 s headway": 27.8 m at 13.9 m/s)."""
    ego = data.get("ego")
    speed = ego.get("speed_mps") if isinstance(ego, dict) else None
    if not isinstance(speed, int | float) or speed <= 0:
        return
    for a in data.get("agents") or ():
        if isinstance(a, dict) and isinstance(a.get("gap_m"), int | float):
            yield float(a["gap_m"]) / float(speed)


def _conflict_distances(data: dict[str, Any]) -> Iterable[float]:
    """Each crossing or oncoming car's distance to the conflict point at t = 0, as its arrival there implies ("cross
    veh 35 km/h, 45 m from conflict pt": the grammar times it, ``timeline.conflict_time_s``)."""
    ego = data.get("ego")
    if not isinstance(ego, dict) or not isinstance(ego.get("speed_mps"), int | float) or ego["speed_mps"] <= 0:
        return
    start = ego.get("start_distance_m", Ego.model_fields["start_distance_m"].default)
    if not isinstance(start, int | float):
        return
    t_e = conflict_time_s(float(start), float(ego["speed_mps"]))
    for a in data.get("agents") or ():
        if isinstance(a, dict) and a.get("role") in ("cross", "opposing") and isinstance(a.get("speed_mps"), int | float):
            offset = a.get("arrival_offset_s", 0.0)
            if isinstance(offset, int | float):
                yield float(a["speed_mps"]) * (t_e + float(offset))


def values(answers: Sequence[dict[str, Any] | None]) -> tuple[list[float], list[float]]:
    """(fault values, every value) of the answers."""
    faults: list[float] = []
    everything: list[float] = []
    for data in answers:
        if not isinstance(data, dict):
            continue
        everything.extend(_numbers(data))
        everything.extend(_signal_times(data))
        everything.extend(_signal_distances(data))
        everything.extend(_headways(data))
        everything.extend(_conflict_distances(data))
        brakes = [float(a["behaviour"]["at_time_s"]) for a in data.get("agents") or ()
                  if isinstance(a, dict) and isinstance(a.get("behaviour"), dict)
                  and isinstance(a["behaviour"].get("at_time_s"), int | float)]
        for fault in data.get("faults") or ():
            if isinstance(fault, dict):
                faults.extend(_fault_numbers(fault))
                # a start said against a vehicle's braking ("two seconds after the lead brakes", "opens 1 s before that
                # brake"): the lag
                offset = (fault.get("anchor") or {}).get("offset_s") if isinstance(fault.get("anchor"), dict) else None
                if isinstance(offset, int | float):
                    faults.extend(abs(float(offset) - t) for t in brakes if offset != t)
    # (a fault's end time said in a clause of its own: "between t = 5 s and t = 20 s")
    return faults, everything + faults


def _bound(q: Quantity, pool: Sequence[float]) -> bool:
    # (a share may be bound as what it leaves: "packet delivery ratio 80 %" is a drop probability of 0.2)
    values = (q.value, 1.0 - q.value) if q.kind == "pct" and 0.0 < q.value < 1.0 else (q.value,)
    return any(abs(abs(v) - abs(x)) <= TOLERANCE * abs(x) + 1e-6 for v in pool for x in values)


# "all cars within 300 m of each other", "no more than 80 m apart": a bound on the spacing, not a value; the
# answer holds it when its vehicles all stand within it (their gaps ahead of the ego, summed, are no longer)
_SPACING_BOUND = re.compile(r"\b(?:within|less than|under|no more than|not more than|at most|no further than"
                            r"|closer than) (?:about |roughly |around )?<q(?P<q>\d+):dist> (?:of each other|of one another"
                            r"|apart)\b", re.IGNORECASE)


def _spacing(answers: Sequence[dict[str, Any] | None]) -> float | None:
    """The largest span of the vehicles ahead of the ego in any answer (None: no vehicle with a gap)."""
    spans = []
    for data in answers:
        agents = data.get("agents") if isinstance(data, dict) else None
        gaps = [float(a["gap_m"]) for a in agents or () if isinstance(a, dict) and isinstance(a.get("gap_m"), int | float)]
        if gaps:
            spans.append(max(gaps))
    return max(spans) if spans else None


def _spacing_bounds(segment: str, answers: Sequence[dict[str, Any] | None]) -> set[int]:
    """Indices (in ``normalize(segment).quantities``) of spacing bounds the answers keep."""
    n = normalize(segment)
    span = _spacing(answers)
    return {int(m.group("q")) for m in _SPACING_BOUND.finditer(n.text)
            if span is not None and span <= n.quantities[int(m.group("q"))].value + 1e-6}


def _range_lows(text: str, pool: Sequence[float]) -> set[str]:
    """The lower ends (raw, lower case) of the stated ranges in ``text`` ("between 200 ms and 300 ms", "0.2 s to
    0.3 s") whose upper end is in ``pool``: the parser binds a range's upper end on purpose and notes it, so the
    lower end is bound by the range. Read on the whole text: a clause may end at the range's "and"."""
    n = normalize(text)
    out = set()
    for q in n.quantities:
        rng = stated_range(n, q)
        if rng is not None and rng.high is not q and _bound(rng.high, pool):
            out.add(q.raw.lower())
    return out


# A clause's parts: a fault's own words end at a comma, a bar ("FCW | ... late | gap 25 m") or where another
# subject begins ("RLVW at 60 km/h where 12 SPaT packets are lost", "stale BSMs, with the lead braking hard at 3 s").
# (a parenthesis is a part of its own: "for the corridor run (3 lights, ego 55 km/h) could you make the countdown ...")
_PART = re.compile(r",\s+|\s+\|\s+|\s+[\u2014\u2013]\s+|\s+(?:with|where|whereas|when|whenever|once|as soon as|while)\s+|\)\s*"
                   r"|\s*\("
                   r"|(?<=[a-z0-9%)]):\s+", re.IGNORECASE)  # (and a label's colon: "ego at 13,9 m/s: SPaT countdown ...",
# and a dash between two thoughts: "... from the start \u2014 advice must be withheld within 2 s")


def _fault_part(clause: str, cue: str) -> tuple[int, int]:
    """The span of the part of ``clause`` holding the fault cue (the whole clause if the cue is not found)."""
    at = clause.lower().find(cue.lower())
    if at < 0:
        return 0, len(clause)
    start, end = 0, len(clause)
    for m in _PART.finditer(clause):
        if m.end() <= at:
            start = m.end()
        elif m.start() >= at + len(cue):
            end = m.start()
            break
    return start, end


# a pass criterion, not a setting: "the follower must react within 1 s", "the requirement is that the warning comes
# at least 3 s before the conflict point" (the outcome a test checks; the spec has no field for it)
_OUTCOME = re.compile(r"\b(requirements?|pass criteri(on|a)|acceptance criteri(on|a))\b|^\W*kpis?\b"
                      # a table's "pass KPI | warning >= 1.5 s before conflict", "(target: at least 95% of 40 seeds)"
                      r"|\bpass(?:/fail)? (kpis?|criteri(on|a)|conditions?|thresholds?|targets?)\b|\(target:"
                      # "Expect the warning about 2.5 s before the stop bar", "Warning issued at least 2 s before the stop
                      # bar", "Stop the run if the ego comes within 5 metres"
                      r"|^\W*expect\w*\b|\bwe expect\b|\b(warnings?|alerts?)\s+(is |are )?(issued|given|raised|shown|fired|presented) (at "
                      r"least|no later than|within|before|by)\b|\b(stop|abort|end) the (run|test|scenario)\b"
                      r"|^\W*(verify|check|ensure|confirm|make sure|determine) (that|whether|if)\b"
                      # a repro's step "3. Observe FCW fires within 200 ms"
                      r"|^\W*(\d+[.)]\s*)?(observe|watch|see|note) (that |whether |if )?(the )?(fcw|eebl|ima|lta|rlvw|glosa"
                      r"|app|application|warning|alert|advisory|it)\b"
                      r"|\b(must|should|shall|has to|have to"
                      r"|needs? to) (still |always )?(react|respond|brake|stop|warn|alert|be (warned|alerted|issued|raised)"
                      r"|(issue|give|raise|deliver|display|provide|present) (a|an|the|its)\b"
                      r"|come|fire|trigger)\b"
                      # "Expected: ...", "Pass: exactly one warning within 300 ms", "the warning within 500 ms of the
                      # brake event", "TTC must stay above 1.5 s", "corrects its advice within 1 s after the change"
                      r"|" + lx.CRITERION_HEADING + r"|" + lx.LATENCY_BUDGET_MET +
                      r"|\b(warnings?|alerts?|advisory|advisories|advice|recommendations?|notifications?)\b[^.;]{0,40}"
                      r"\bwithin\b|\bwithin \d+(\.\d+)? ?(ms|s|secs?|seconds?|milliseconds?) (of|after|from)\b"
                      r"|\b(must|should|shall|has to) (stay|remain|be|keep) (above|below|under|over|within|less than"
                      r"|more than|at least|at most)\b|\bttc (thr(eshold)?|limit|must|should|drops?|stays?|guard)\b"
                      # an application's own parameter ("warning threshold 1.5 s", "widen TTC guard band to 2.4 s")
                      r"|\b(warning|alert|advisory) thresholds?\b|\bguard ?bands?\b"
                      r"|\bttc\s*(>=?|<=?|=>|=<|\u2265|\u2264|\u2248|~|=|of|about|around)"  # "FCW warns at TTC >= 2.4 s", "(TTC \u2248 4 s)"
                      # a tolerance or a spread a run showed ("the advisory speed jitters \u00b14 km/h in run 7")
                      r"|(\u00b1|\+/-|\+-)\s*\d"
                      # the application's own words quoted ("the advisory says 'hold 38 mph, you'll make the green'")
                      r"|\b(says|reads|shows|displays|advises|suggests)\s+['\"\u2018\u201c]"
                      # "the advisory should handle up to 10 % SPaT loss": what it must withstand, not what is injected
                      r"|" + lx.ROBUSTNESS_REQUIREMENT +
                      # "advice must stay valid even if the countdown were off by a second": a robustness requirement
                      r"|\b(must|should|shall|has to) (still )?(stay|remain|be|keep) (valid|correct|stable|accurate"
                      r"|consistent|usable|safe)\b|\beven if\b[^.;]{0,60}\b(were|was|would be)\b", re.IGNORECASE)


_CORRECTED_AFTER = re.compile(r"<q(\d+):\w+>" + lx.CORRECTED_AFTER + r"<q\d+:\w+>")
_CORRECTED = re.compile(lx.CORRECTION + r"[-+]?\d+(?:\.\d+)? ?[a-z/%]+" + lx.CORRECTED_FROM, re.IGNORECASE)
# a quoted older request or a turned-down line (``roles.check_text`` marks them): nothing in it is a setting
_QUOTED_TAIL = re.compile(r"\((?:quoted|withdrawn)\)[^\n.!?]*")
_NOT_THIS_RUN = re.compile(lx.CRITERION_HEADING + r"|" + lx.NOT_NOW, re.IGNORECASE)
_PAST = re.compile(lx.PAST_INCIDENT, re.IGNORECASE)


# the project's own business ("we're about 8% over on the Q3 lab budget"): a share or count there is no setting
_BUSINESS = re.compile(r"\b(?:budgets?|costs?|spend(?:ing)?|invoices?|funding|procurement|headcount|expenses?|quotas?"
                       r"|overtime|billing)\b", re.IGNORECASE)


# the lab's own timetable ("Bench A is free after 08:00", "the rig is booked until 14:30"): a clock there is no setting
# (and its log: "Firmware 7.2.1 flashed at 09:40")
_TIMETABLE = re.compile(r"\b(?:bench|rig|lab|room|slot|shift|meeting|booking|booked|free|available|standup|firmware"
                        r"|flashed|installed|rebooted|calibrated|lunch)\b[^.;]{0,30}"
                        r"\b\d{1,2}:\d{2}\b|\b\d{1,2}:\d{2}\b[^.;]{0,20}\b(?:standup|meeting|sync|call)\b", re.IGNORECASE)


def _business(text: str) -> bool:
    """Is the clause about the project's money, staff or timetable, its quantities only shares and counts (or the
    timetable's clock)?"""
    return (bool(_BUSINESS.search(text)) and all(q.kind in ("pct", "count") for q in normalize(text).quantities)) \
        or bool(_TIMETABLE.search(text))


def _fault_like(text: str) -> bool:
    """Are the clause's quantities all of the kinds a fault states (times, shares, counts), none a scene's?"""
    return all(q.kind in ("time", "pct", "count") for q in normalize(text).quantities)


def unbound(text: str, answers: Sequence[dict[str, Any] | None]) -> list[tuple[str, list[Quantity], bool]]:
    """(clause, its quantities found nowhere they belong, whether one of them is a fault's) for each clause
    with any, in order. A quantity in the part of a clause that asks for a fault must be a fault's value;
    any other quantity must be somewhere in the answers."""
    faults, everything = values(answers)
    # an itinerary's clocks of the day count from its first line, which a clause alone does not have
    text = run_sheet_times(text)
    # a value a correction replaced ("... a 2 s lag ... edit: make that 3 s lag, not 2") was said and taken back
    taken_back = [float(m.group("old")) for m in _CORRECTED.finditer(text)]
    # ("delayed by half a second, no wait, make that 800 milliseconds": the value before the correction)
    said = normalize(text)
    taken_back += [said.quantities[int(m.group(1))].value for m in _CORRECTED_AFTER.finditer(said.text)]
    faults, everything = faults + taken_back, everything + taken_back
    fault_lows, any_lows = _range_lows(text, faults), _range_lows(text, everything)
    asks = {c.text: c.cue for c in fault_cues.detect(text)}
    withdrawn = fault_cues.taken_back(text)
    out = []
    for clause, sentence in fault_cues.read_clauses_in_sentences(text):
        if clause.text in withdrawn:
            continue  # a fault taken back later ("Actually, scrap the burst drop"): its values are no settings
        if clause.text not in asks and (_OUTCOME.search(clause.text) or fault_cues.healthy(clause.text)
                                        or fault_cues.within_requirement(sentence, clause.text)
                                        or _PAST.search(sentence) or _business(clause.text)
                                        or (_NOT_THIS_RUN.search(sentence) and (_fault_like(clause.text)
                                                                                 or fault_cues.detect(clause.text)
                                                                                 or fault_cues.names_a_fault(clause.text)))):
            # an outcome to check, a healthy baseline ("about 20 ms, which is nominal"), or a fault's values in a
            # sentence about another run or test ("Requirement: ... if SPaT has 200 ms delay, but this we test in
            # other campaign", "The position offset of 5 m we make afterwards in a separate test"); a scene's speeds
            # and distances there are still settings to read
            continue
        part = _fault_part(clause.text, asks[clause.text]) if clause.text in asks else (0, 0)
        lost, fault = [], False
        for segment, own in ((clause.text[:part[0]], False), (clause.text[part[0]:part[1]], True),
                             (clause.text[part[1]:], False)):
            if not own and _OUTCOME.search(segment):
                continue  # the outcome said around the fault ("shall issue a warning within 1.2 s ... when BSMs are delayed")
            kept = set() if own else _spacing_bounds(segment, answers)
            pool, lows = (faults, fault_lows) if own else (everything, any_lows)
            # a gloss in another unit ("4 m/s (≈ 14 km/h)") stands and falls with the quantity it restates
            missing = [q for q in normalize(_QUOTED_TAIL.sub(" ", segment)).quantities
                       if q.index not in kept and q.restates is None and not _bound(q, pool)
                       and q.raw.lower() not in lows]
            lost += missing
            fault |= own and bool(missing)
        if lost:
            out.append((clause.text, lost, fault))
    return out


def findings(text: str, answers: Sequence[dict[str, Any] | None],
             already: Sequence[Finding] = ()) -> list[Finding]:
    """One ``parser.unparsed_fault`` WARNING per clause holding a quantity the answers do not contain
    (none for a clause an ``already`` finding quotes)."""
    quoted = [fault_cues.quoted_clause(f).lower() for f in already if f.check == CHECK]
    out = []
    for clause, lost, fault in unbound(text, answers):
        low = clause.lower()
        if any(q and (low in q or q in low) for q in quoted):
            continue
        raws = ", ".join(repr(q.raw) for q in lost)
        what = "no fault field" if fault else "no field of the spec"
        out.append(Finding(CHECK, Severity.WARNING,
                           f"the intent asks for something the spec does not contain: {clause!r} (quantity {raws} "
                           f"is bound to {what}); the spec runs without it", ("faults",)))
    return out


__all__ = ["CHECK", "findings", "unbound", "values"]
