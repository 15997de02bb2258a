"""The offline grammar's timing: the signal plan, its phase offset, arrivals and the run's length.

The fixed-time plan's phases ("a 60 s cycle with 4 s of amber"), the offset that puts an onset at
a time ("the light turns amber at 6 s", ``_signal_event_time``) or where the ego is ("red when the
car is still 80 m away", ``_signal_at_ego``), the conflict agents' arrival offsets ("2 s after the
ego"), and the scenario duration. Fault anchors (times relative to an onset) are in
``intent_windows``. Called from ``grammar.parse_text``.
"""

from __future__ import annotations

from typing import Any

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import Ego, SignalPlan
from services.llm import lexicon as lx
from services.llm.intent_text import BAR, Mention, ParseState, Q, clean, rx, subject


def _scenario_duration(p: ParseState) -> float | None:
    for pattern in (r"(?:scenario|run|simulation|test|episode)\w* (?:of |lasting |lasts |runs? for |for |duration "
                    r"(?:of )?|length (?:of )?)" + Q("time"),
                    # "a 60-second approach": the run is the ego's approach
                    Q("time") + r" (?:long )?(?:scenario|run|simulation|test|approach|drive)\b",
                    r"(?:simulate|run) (?:it |for )?" + Q("time"),
                    # a run sheet's last line ("at t = 20 s arrive, debrief", "at t = 40 s end of run")
                    r"(?:^|\n)at t = " + Q("time") + r" (?:arrive|arrival|end|the end|finish|stop the run|run ends|end of "
                    r"(?:the )?(?:run|test|scenario)|done)\b"):
        m = p.has(pattern)
        # "make the countdown run 8 s short": a comparative after it is an offset, not the run's length
        if m and p.has(r"^ (?:too |much )?(?:short|shorter|long|longer|late|later|early|earlier|behind|ahead|fast|slow|more"
                       r"|less)\b", p.t[m.end():m.end() + 12]):
            continue
        # "the fault window opens 1 s before that brake and runs for 4 s": the window runs, not the scenario
        if m and m.group(0).startswith("run") and p.has(r"\b(?:window|fault|outage|blackout|freeze|loss|drop|delay"
                                                      r"|offset|spoof\w*|corruption|attack)\b[^.;]*$",
                                                      p.t[max(0, m.start() - 60):m.start()]):
            continue
        if m and p.free(m) and not p.has(r"\binto the $", p.t[max(0, m.start() - 9):m.start()]):
            value = p.use(m, "duration_s")
            p.note(f"duration_s {value} from {m.group(0)!r}")
            return value
    return None


def _signal_plan(p: ParseState) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, word in (("cycle_s", r"(?:signal )?cycle"), ("green_s", r"green"), ("amber_s", r"(?:amber|yellow)"),
                      ("all_red_s", r"all[- ]red")):
        # (not the onset's time before the ego's arrival: "turns amber 3.5 s before the ego arrives", _signal_at_ego)
        for pattern in (word + r" (?:time |phase |interval |split |duration |length |clearance )?(?:of |is |lasts )?"
                        + Q("time") + r"(?! (?:before|after|prior to|ahead of)\b)",
                        # "Green windows are short (12 s) on purpose"
                        word + r" (?:windows?|phases?|times?|splits?) (?:is|are) (?:short|long|only|just|about) \(?"
                        + Q("time"),
                        Q("time") + r" (?:of )?" + word + r"(?: time| phase| interval| length)?\b"):
            m = p.has(pattern)
            if m and p.free(m):
                out[key] = p.use(m, f"signal.{key}")
                p.note(f"signal.{key} {out[key]}")
                break
    _signal_event_time(p, out)
    _coordination(p, out)
    return out


def _coordination(p: ParseState, out: dict[str, Any]) -> None:
    """How the junctions after the scenario junction are timed (``signal.coordination``): "signals coordinated for
    50 km/h", "a green wave along the corridor at 40 km/h" (with its design speed, ``progression_speed_mps``),
    "random offsets", "uncoordinated lights"."""
    if p.has(lx.RANDOM_OFFSETS):
        out["coordination"] = "random"
        p.note("signal.coordination random from the wording")
        return
    m = p.has(lx.GREEN_WAVE)
    if not m:
        return
    out["coordination"] = "green_wave"
    p.note(f"signal.coordination green_wave from {clean(m.group(0))!r}")
    near = p.t[m.start():m.end() + 40]
    # the design speed inside the phrase ("progression at 35 mph", "green-wave design speed 70 km/h"), else just after it
    s = rx(r"<q(?P<q>\d+):speed>").search(m.group(0)) or p.has(
        r"^[^.;]*?\b(?:for|at|to|of|with|on)\s(?:a |an )?(?:design |progression )?(?:speed (?:of )?)?" + Q("speed"), near)
    if s:
        q = p.n.quantities[int(s.group("q"))]
        if q.used is None:
            q.used = "signal.progression_speed_mps"
            out["progression_speed_mps"] = q.value
            p.note(f"signal.progression_speed_mps {q.value:g} from {clean(s.group(0))!r}")


def _signal_event_time(p: ParseState, out: dict[str, Any]) -> None:
    """ "The light turns amber at 6 s": the plan's phase offset that puts that onset at that time (the
    fixed-time plan's green starts at t = -offset_s, amber green_s later, red amber_s after that)."""
    m = p.has(r"(?:light|signal|lamp)s? (?:turns|changes to|goes|switches to|is) (?P<ph>amber|yellow|red|green) (?:at |"
              r"(?:at )?(?:around|about|roughly) )(?:t ?= ?)?" + Q("time"))
    # tersely: "amber at t = 10 s, red at t = 13 s", "green ends at t=14 s" (the amber onset)
    m = m or p.has(_TERSE_ONSET)
    # a phase said by what is left of it ("green ending in about 12 s", "signal is mid-green with roughly 14 s left",
    # "red with 15 s to go"): the next phase's onset then
    left = None if m else next((hit for hit in map(p.has, _PHASE_LEFT) if hit is not None), None)
    if left is not None and p.free(left):
        m = left
    if not m or not p.free(m):
        return
    plan = SignalPlan()
    phase = "amber" if m.groupdict().get("end") else m.group("ph")
    if m is left:
        phase = {"green": "amber", "amber": "red", "yellow": "red", "red": "green"}[m.group("ph")]
    nxt = p.has(r"^,? (?:and |then )?(?P<ph>amber|yellow|red) (?:at|from) (?:t ?= ?)?" + Q("time"), p.t[m.end():m.end() + 30]) \
        if phase in ("amber", "yellow") else None
    if nxt is not None and p.free(nxt) and 1.0 <= p.q(nxt).value - p.q(m).value <= 10.0 and nxt.group("ph") == "red":
        out["amber_s"] = round(p.q(nxt).value - p.q(m).value, 3)  # "amber at 10 s, red at 13 s": 3 s of amber
        p.use(nxt, "signal.amber_s")
        p.note(f"signal.amber_s {out['amber_s']:g} from {clean(m.group(0) + nxt.group(0))!r}")
    green, amber, cycle = (out.get(k, getattr(plan, k)) for k in ("green_s", "amber_s", "cycle_s"))
    onset = {"green": 0.0, "amber": green, "yellow": green, "red": green + amber}
    at = p.use(m, "signal.offset_s")
    out["offset_s"] = round((onset[phase] - at) % cycle, 3)
    p.note(f"signal.offset_s {out['offset_s']:g} from {clean(m.group(0))!r}")


_PHASE_LEFT = (r"\b(?P<ph>green|red|amber|yellow) (?:ending|ends|is over|changes|switches) in (?:about |roughly |around "
               r"|~ ?)?" + Q("time"),
               r"\b(?:signal|light)s? (?:is |are )?(?:mid-?|in )?(?P<ph>green|red|amber|yellow)(?: phase)? with (?:about "
               r"|roughly |around |~ ?)?" + Q("time") + r" (?:left|to go|remaining)\b",
               r"\b(?P<ph>green|red|amber|yellow) with (?:about |roughly |around |~ ?)?" + Q("time")
               + r" (?:left|to go|remaining)\b")
_TERSE_ONSET = (r"(?<!before )(?<!after )(?<!from )(?<!during )(?<!of )(?<!the )(?<!until )\b(?:(?P<ph>amber|yellow|red"
                r"|green) (?:at|starts at|begins at|comes on at|onset at)|(?P<end>green) (?:ends|is over|stops) at) "
                r"(?:t ?= ?)?" + Q("time"))


def _signal_at_ego(p: ParseState, ego: dict[str, Any], out: dict[str, Any]) -> None:
    """The light's timing said from the ego's side: "the light becomes red when the car is still 80 m away" (the
    plan's offset that puts that onset where the ego, at its speed from its start distance, is 80 m out); "the ego's
    departure is delayed by 2 s" (the lights run 2 s ahead of the ego). Only when the plan has no offset yet."""
    if "offset_s" in out:
        return
    plan = SignalPlan()
    green, amber, cycle = (out.get(k, getattr(plan, k)) for k in ("green_s", "amber_s", "cycle_s"))
    onset = {"green": 0.0, "amber": green, "yellow": green, "red": green + amber}
    # (or tersely: "light turns red 70 m out")
    m = p.has(r"(?:light|signal|lamp)s? (?:turns|becomes|goes|changes to|switches to|is) (?:to )?(?P<ph>amber|yellow|red"
              r"|green) (?:(?:when|as|once|while) (?:the )?(?:ego|car|vehicle|we|it|our car)(?: is| are|'s|'re)? )?(?:still "
              r"|only |just )?(?:about |roughly |around |~ ?)?" + Q("dist") + r" (?:away|out|(?:from|before|short of) (?:the )?"
              + BAR + r")")
    # "the ego at 60 km/h is 80 m before the stop line at amber onset": the same, said from the ego
    m = m or p.has(r"(?:the )?(?:ego|car|vehicle|we|our car)\b[^.;]{0,30}?\b(?:is|are) (?:still |only |just )?(?:about )?"
                   + Q("dist") + r" (?:away|out|(?:from|before|short of) (?:the )?" + BAR + r") (?:at|when|as) (?:the )?"
                   r"(?:onset of (?:the )?|start of (?:the )?)?(?P<ph>amber|yellow|red|green)\b")
    # "red onset when ego is ~60 m out": the same, said from the light
    m = m or p.has(r"(?P<ph>amber|yellow|red|green) (?:onset|starts|begins|comes on|comes) (?:when|as|once|while) (?:the )?"
                   r"(?:ego|car|vehicle|we|our car|it)(?: is| are|'s)? (?:still |only |just )?(?:about |roughly |around )?"
                   r"(?:~ ?)?" + Q("dist") + r" (?:away|out|(?:from|before|short of) (?:the )?" + BAR + r")")
    # "light turns red 3 s before we get to the stop line": that onset that long before the ego, at its speed from its
    # start distance, reaches the bar
    # ("light turns amber about 3.5 s before arrival", "... before the ego arrives")
    ahead = p.has(r"(?:light|signal|lamp)s? (?:turns|becomes|goes|changes to|switches to|is) (?:to )?(?P<ph>amber|yellow"
                  r"|red|green) (?:about |roughly |around |~ ?)?" + Q("time") + r" before (?:(?:we|the ego|ego|it|the car"
                  r"|our car) (?:get|gets|reach|reaches|arrive|arrives|hit|hits)(?: to| at)? (?:the )?" + BAR + r"|(?:we|the ego"
                  r"|ego|it|the car|our car) (?:arrive|arrives|gets? there)\b|(?:the ego'?s? |its |our )?arrival\b)")
    if ahead and p.free(ahead) and not m:
        start = ego.get("start_distance_m", Ego().start_distance_m)
        at = start / ego["speed_mps"] - p.q(ahead).value
        if at >= 0.0:
            p.use(ahead, "signal.offset_s")
            out["offset_s"] = round((onset[ahead.group("ph")] - at) % cycle, 3)
            p.note(f"signal.offset_s {out['offset_s']:g} from {clean(ahead.group(0))!r} (the onset {at:.2f} s into the run)")
            return
    if m and p.free(m):
        start = ego.get("start_distance_m", Ego().start_distance_m)
        at_distance = p.q(m).value
        if at_distance < start:
            p.use(m, "signal.offset_s")
            at = (start - at_distance) / ego["speed_mps"]
            out["offset_s"] = round((onset[m.group("ph")] - at) % cycle, 3)
            p.note(f"signal.offset_s {out['offset_s']:g} from {clean(m.group(0))!r} (the ego {at_distance:g} m out at "
                   f"{at:.2f} s)")
            return
    m = p.has(r"(?:the ego'?s?|our|its|the car'?s) (?:departure|start) (?:is |gets )?(?:delayed|postponed|held back) "
              r"(?:by )?" + Q("time"))
    if m and p.free(m):
        delay = p.use(m, "signal.offset_s")
        out["offset_s"] = round(delay % cycle, 3)
        p.note(f"signal.offset_s {out['offset_s']:g} from {clean(m.group(0))!r} (the lights run ahead of the ego)")


def _arrivals(p: ParseState, app: Application, roles: list[Mention], agents: dict[str, dict[str, Any]]) -> None:
    default = "opposing" if app is Application.LTA else "cross"
    rules = (
        # (not a message that "arrives 2 s behind time")
        (r"arriv\w* (?:at the (?:conflict point|intersection|junction) )?" + Q("time")
         + r" (?P<rel>after|before|later than|earlier than|ahead of|behind)(?! (?:time|schedule|reality|real[- ]?time)\b)",
         None),
        (Q("time") + r" (?P<rel>after|before|later than|earlier than|ahead of|behind) the ego", None),
        (r"(?:at the same time|simultaneously|together) (?:as|with)", 0.0),
        (Q("time") + r" (?P<rel>gap|headway)\b", None),  # "a 3 second gap": the agent arrives that much later
    )
    for pattern, fixed in rules:
        for m in p.finditer(pattern):
            if fixed is None and not p.free(m):
                continue
            subj = subject(p, roles, m.start(), 80)
            role = subj.what if subj and subj.what in ("cross", "opposing") else default
            if role not in agents:
                continue
            if fixed is None:
                rel = m.group("rel")
                if rel in ("gap", "headway") and app not in (Application.IMA, Application.LTA):
                    continue  # FCW's "2 s headway" is a following distance, not an arrival
                value = p.use(m, f"{role}.arrival_offset_s")
                value = -value if rel in ("before", "earlier than", "ahead of") else value
            else:
                value = fixed
            agents[role]["arrival_offset_s"] = value
            p.note(f"{role}.arrival_offset_s {value:+g} s from {clean(m.group(0))!r}")
