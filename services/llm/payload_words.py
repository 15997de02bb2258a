"""What a structured payload's keys mean (``payload.py``): the names tools and teams give a vehicle's settings and a
fault's attributes, said in the words the grammar reads.

A key is read by its stem and its unit suffix ("added_ms" is an added delay in milliseconds, "speedMps" a speed in
m/s, "FAULT_LEN_S" a length in seconds): a bare number in it gets that unit. A fault's keys become its attribute lines
("fault: latency", "magnitude: 350 ms", "start: at the decision point", "duration: 2 s"), and a vehicle's keys a line
naming the vehicle ("lead gap: 38 m", "lead brakes hard at t = 6.5 s"). A key this table does not know is said as it
stands ("key: value"), for the grammar to read or to report.
"""

from __future__ import annotations

import re

# a unit suffix of a key, and the unit a bare number in it is in
_UNIT_SUFFIX = re.compile(r"^(?P<stem>.+?)_(?P<unit>ms|msec|s|sec|secs|seconds|m|metres|meters|km_?h|kph|mph|mps|m_s"
                          r"|pct|percent)$")
_UNITS = {"ms": "ms", "msec": "ms", "s": "s", "sec": "s", "secs": "s", "seconds": "s", "m": "m", "metres": "m",
          "meters": "m", "kmh": "km/h", "km_h": "km/h", "kph": "km/h", "mph": "mph", "mps": "m/s", "m_s": "m/s",
          "pct": "%", "percent": "%"}
_NUMBER = re.compile(r"^[-+]?\d+(?:\.\d+)?$")


def snake(key: str) -> str:
    """A key in lower snake case: "speedMps" -> "speed_mps", "FAULT_LEN_S" -> "fault_len_s", "fault.at" ->
    "fault_at"."""
    key = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key.strip().strip("\"'"))
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def split_unit(key: str, value: str) -> tuple[str, str]:
    """(the key's stem, the value with the key's unit when it is a bare number)."""
    m = _UNIT_SUFFIX.match(snake(key))
    if m is None:
        return snake(key), value
    return m.group("stem"), f"{value} {_UNITS[m.group('unit')]}" if _NUMBER.match(value) else value


def words(value: str) -> str:
    """A value said as words: "CONTENT_FREEZE" -> "content freeze", "countdownSkew" -> "countdown skew"."""
    if " " in value.strip() or _NUMBER.match(value):
        return value
    return snake(value).replace("_", " ") or value


# ── a fault's attributes ───────────────────────────────────────────────────────────────────────────────────────────
_OPERATOR = re.compile(r"^(?:op|operator|type|kind|fault|name|mode|impairment|attack|fault_type|fault_kind|fault_op)$")
_STREAM = re.compile(r"^(?:stream|msg|message|msg_type|message_type|channel|target|on|messages)$")
_START_TIME = re.compile(r"^(?:start|from|at|begin|start_time|start_at|starts_at|t0|t|t_start|onset|time|trigger_time"
                         r"|trigger_t|t_on)$")
_ANCHOR = re.compile(r"^(?:anchor|trigger|ref|event|when|trigger_event|start_event|reference|relative_to)$")
_TRIGGER_VALUE = re.compile(r"^(?:trigger_value|trigger_distance|trigger_dist|distance|dist|at_distance|value_m)$")
_DURATION = re.compile(r"^(?:dur|duration|len|length|for|hold|span|window|period|lasting|window_len|window_length"
                       r"|how_long)$")
_MAGNITUDE = re.compile(r"^(?:magnitude|value|amount|added|add|extra|delay|latency|lag|bias|offset|shift|delta|age"
                        r"|lookback|look_back|skew|error|size|staleness|seconds_old|old|range|ahead|behind|back|replay_back"
                        r"|history|bias_by|shift_by)(?:_(?P<way>ahead"
                        r"|behind|back|forward|early|late|faster|slower|less|more|past|stale|old|shorter|longer))?$")
_PROBABILITY = re.compile(r"^(?:rate|probability|prob|p|loss|loss_rate|drop_rate|ratio|fraction|share)$")
_BURST = re.compile(r"^(?:burst|burst_len|burst_count|count|n|consecutive|n_msgs|messages_in_a_row|in_a_row)$")
_PHASE = re.compile(r"^(?:shows|show|shown|displayed|display|phase|target_phase|claims|says|reports|fake_phase"
                    r"|displayed_phase|spoofed_phase|shown_phase)$")
_SENDER = re.compile(r"^(?:sender|source|vehicle|from_vehicle|victim|who)$")
_SWITCH = re.compile(r"^(?:enabled|enable|present|active|on)$")
# which way a size points, said apart from it ("offsetDirection: AHEAD_OF_TRUE", "FAULT_TS_DIRECTION=past")
_DIRECTION = re.compile(r"^(?:direction|dir|sign|way|sense)$")
# an anchor said by name ("decision_point", "CRITICAL_EPOCH", "amberStart", "on_green", "dist_to_stopline")
_ATTRIBUTES = (_STREAM, _START_TIME, _ANCHOR, _TRIGGER_VALUE, _DURATION, _MAGNITUDE, _PROBABILITY, _BURST, _PHASE, _SENDER,
               _DIRECTION)
_ANCHOR_WORDS = (
    (re.compile(r"decision|critical|warning_point|epoch"), "at the decision point"),
    (re.compile(r"green"), "at green onset"),
    (re.compile(r"amber|yellow"), "at amber onset"),
    (re.compile(r"red"), "at red onset"),
    (re.compile(r"^(?:scenario_)?(?:start|begin|t0|zero|scenario)$"), "from the start"),
)
_STOP_BAR = re.compile(r"stop_?(?:line|bar)|stopline|stopbar")
_SCENARIO_CLOCK = re.compile(r"^(?:anchor_|trigger_)?(?:scenario_time|scenario_clock|sim_time|absolute|time|clock)$")
_CLOCK = re.compile(r"(?:t ?= ?)?(\d+(?:\.\d+)?) ?(s|ms|sec|secs|seconds)?")


def _anchor(value: str) -> str | None:
    said = snake(value)
    return next((phrase for pattern, phrase in _ANCHOR_WORDS if pattern.search(said)), None)


# an enumeration's prefix a tool puts on its values ("STREAM_SPAT", "PHASE_RED", "ANCHOR_GREEN_ONSET", "OP_DELAY")
_ENUM_PREFIX = {"stream": r"stream|msg|message", "phase": r"phase|signal", "anchor": r"anchor|trigger|event",
                "operator": r"op|operator|fault|kind|type"}
_WAYS = {"past": "in the past", "stale": "in the past", "old": "in the past", "older": "in the past",
         "future": "in the future", "ahead": "ahead", "forward": "ahead", "front": "ahead", "behind": "behind",
         "back": "behind", "backward": "behind", "faster": "faster", "higher": "faster", "over": "faster",
         "slower": "slower", "lower": "slower", "under": "slower", "early": "early", "earlier": "early",
         "shorter": "short", "short": "short", "less": "short", "late": "late", "later": "late", "longer": "long",
         "long": "long", "more": "long"}


def value_words(value: str, kind: str) -> str:
    """A ``kind`` of value ("stream", "phase", "anchor", "operator") said as words, an enumeration's prefix for that
    kind dropped ("PHASE_RED" -> "red", "STREAM_SPAT" -> "SPAT"); a stream's name as written."""
    m = re.match(rf"^(?:{_ENUM_PREFIX[kind]})_(.+)$", value.strip(), re.IGNORECASE)
    rest = m.group(1) if m else value.strip()
    return rest if kind == "stream" else words(rest)


def _way(value: str) -> str | None:
    return next((_WAYS[w] for w in snake(value).split("_") if w in _WAYS), None)


def fault_lines(items: list[tuple[str, str]]) -> list[str]:
    """A fault object's (key, plain value) pairs, nested keys joined by "_" (a trigger's "trigger_event"), as attribute
    lines: the operator first, then the others in their order, the phase it shows last (the colour a phase fault's
    words end on is the one shown)."""
    read = [(key, value, *split_unit(key, value)) for key, value in items]
    # where a distance trigger fires: its own key ("trigger_value_m": 60), or a start said in metres ("at_m": 150)
    distance = next((said for _k, _v, stem, said in read if _TRIGGER_VALUE.match(_last(stem))
                     or (_START_TIME.match(_last(stem)) and re.fullmatch(r"[\d.]+ m", said))), None)
    way = next((_way(v) for _k, v, stem, _s in read if _DIRECTION.match(_last(stem))), None)
    operator: list[str] = []
    lines: list[str] = []
    shown: list[str] = []
    for _key, value, stem, said in read:
        last = _last(stem)
        if _OPERATOR.match(last) and not operator:
            operator.append(f"fault: {value_words(value, 'operator')}")
        elif _STREAM.match(last):
            lines.append(f"stream: {value_words(value, 'stream')}")
        elif _DIRECTION.match(last) or (said == distance and not _ANCHOR.match(last)):
            continue  # (said with the size it points, or with its trigger)
        elif _ANCHOR.match(last) or (_START_TIME.match(last) and not re.search(r"\d", value)):
            if _STOP_BAR.search(snake(value)):
                said_here = re.search(r"(\d+(?:\.\d+)?) ?m\b", value)  # ("stop_bar_distance 60 m": the cell says it)
                at = distance or (f"{said_here.group(1)} m" if said_here else None)
                if at is not None:
                    lines.append(f"start: once the ego is {at if ' ' in at else at + ' m'} from the stop bar")
            elif _SCENARIO_CLOCK.search(snake(value)):  # the scenario's clock: its time key says when (else its start)
                if not any(_START_TIME.match(_last(st)) and re.search(r"\d", v) for _k, v, st, _s in read):
                    lines.append("start: from the start")
            else:
                phrase = _anchor(value)
                lines.append(f"start: {phrase}" if phrase else f"{stem.replace('_', ' ')}: {value_words(value, 'anchor')}")
        elif _START_TIME.match(last):
            clock = _CLOCK.fullmatch(said.strip())  # a scenario time ("5", "3.5s", "t=3.5s"); else its words as said
            lines.append(f"start: t = {clock.group(1)} {clock.group(2) or 's'}" if clock else f"start: {said}")
        elif _DURATION.match(last):
            lines.append(f"duration: {said}" + (" s" if _NUMBER.match(said) else ""))
        elif (m := _MAGNITUDE.match(last)) is not None:
            towards = _WAYS.get(m.group("way") or last, None) if (m.group("way") or last in _WAYS) else way
            lines.append(f"magnitude: {said}" + (f" {towards}" if towards else ""))
        elif _PROBABILITY.match(last):
            lines.append(f"probability: {said}")
        elif _BURST.match(last):
            lines.append(f"{said} in a row")
        elif _PHASE.match(last):
            shown.append(f"phase: showing {value_words(value, 'phase')}")
        elif _SENDER.match(last):
            lines.append(f"sender: {words(value)}")
        elif _SWITCH.match(last) and snake(value) in ("false", "no", "off", "0"):
            operator.append("fault: none")
        elif not _SWITCH.match(last):
            lines.append(f"{stem.replace('_', ' ')}: {said}")
    return operator + lines + shown


def is_fault_attribute(key: str) -> bool:
    """Is ``key`` (a column's or a field's name, "start_s", "magnitude") one of a fault's attributes?"""
    stem, _ = split_unit(key, "")
    return any(p.match(stem) for p in _ATTRIBUTES)


def _last(stem: str) -> str:
    """A nested key's own name ("trigger_event" -> the whole, "window_len" -> "window_len"; "fault_1_type" -> "type")."""
    parts = [p for p in stem.split("_") if not p.isdigit()]
    for n in range(len(parts)):
        tail = "_".join(parts[n:])
        if _OPERATOR.match(tail) or _SWITCH.match(tail) or any(p.match(tail) for p in _ATTRIBUTES):
            return tail
    return stem


# ── a vehicle's settings ───────────────────────────────────────────────────────────────────────────────────────────
VEHICLE = re.compile(r"^(?:ego|lead|leader|lead_vehicle|relay|relay_vehicle|cross|crossing|crossing_vehicle|cross_vehicle"
                     r"|oncoming|oncoming_vehicle|opposing|opposing_vehicle|opp|follower|braker|braking_vehicle"
                     r"|hidden_vehicle|ghost)$")
_VEHICLE_WORDS = {"ego": "ego", "lead": "lead", "leader": "lead", "lead_vehicle": "lead", "braker": "braking vehicle",
                  "braking_vehicle": "braking vehicle", "relay": "relay", "relay_vehicle": "relay",
                  "cross": "crossing vehicle", "crossing": "crossing vehicle", "crossing_vehicle": "crossing vehicle",
                  "cross_vehicle": "crossing vehicle", "oncoming": "oncoming vehicle",
                  "oncoming_vehicle": "oncoming vehicle", "opposing": "oncoming vehicle", "opp": "oncoming vehicle",
                  "opposing_vehicle": "oncoming vehicle", "follower": "follower", "hidden_vehicle": "hidden_vehicle",
                  "ghost": "ghost"}
_SPEED = re.compile(r"^(?:speed|v|v0|vel|velocity|initial_speed|init_speed|speed_init|cruise_speed|start_speed)$")
_START_DISTANCE = re.compile(r"^(?:start_distance|start_dist|distance_to_stop_line|dist_to_stop_line|distance_to_stopline"
                             r"|dist_to_stopline|d_stopline|d_stop_line|d_stopbar|stopline_distance|dist_to_stop_bar"
                             r"|distance_to_stop_bar|distance_to_junction|dist_to_junction|d0|initial_distance"
                             r"|distance_to_box|dist_to_box|distance_to_intersection|dist_to_intersection)$")
_GAP = re.compile(r"^(?:gap|range|distance|dist|d|headway_m|distance_to_conflict|dist_to_conflict|conflict_distance"
                  r"|distance_to_junction|dist_to_junction|distance_ahead)$")
_BRAKE = re.compile(r"^(?:brake_at|brake_time|brake_t|brake_start|decel_start|hard_brake_time|hard_brake_at"
                    r"|hard_brake|brakes_at|braking_at|brake_onset)$")


_SPEED_UNIT = re.compile(r"(m/s|km/h|kmh|kph|mph)\s*$")


def speed_unit(key: str, value: str) -> str | None:
    """The unit a speed setting is given in (by its key's suffix or its value's own), None when it is no speed or says
    no unit."""
    stem, said = split_unit(key, value)
    if not _SPEED.match(stem):
        return None
    m = _SPEED_UNIT.search(said)
    return m.group(1) if m else None


def vehicle_line(vehicle: str, key: str, value: str, bare_speed_unit: str | None = None) -> str | None:
    """A vehicle's setting said with the vehicle's name ("lead", "gap_m", "38" -> "lead gap: 38 m"); None when the
    setting says nothing of the scene (a relay's "enabled: true"). A bare speed takes ``bare_speed_unit``, the one unit
    the payload's other speeds are given in ("relay: {speed: 22}" beside "ego: {speed: 22 m/s}")."""
    who = _VEHICLE_WORDS.get(snake(vehicle), vehicle)
    stem, said = split_unit(key, value)
    if _SWITCH.match(stem):
        return f"{who}: none" if snake(value) in ("false", "no", "off", "0") else None
    if _SPEED.match(stem):
        return f"{who} speed: {said}" + (f" {bare_speed_unit}" if bare_speed_unit and _NUMBER.match(said) else "")
    if who == "ego" and _START_DISTANCE.match(stem):
        return f"ego start distance: {said}"
    if _GAP.match(stem) or (who != "ego" and _START_DISTANCE.match(stem)):
        return f"{who} gap: {said}"
    if _BRAKE.match(stem):
        return f"{who} brakes hard at t = {said}" + (" s" if _NUMBER.match(said) else "")
    return f"{snake(vehicle)}_{snake(key)}: {value}"


def is_vehicle(key: str) -> bool:
    return VEHICLE.match(snake(key)) is not None


__all__ = ["fault_lines", "is_fault_attribute", "is_vehicle", "snake", "speed_unit", "split_unit", "vehicle_line", "words"]
