"""What an intent states is kept: the fields a parse's first answer read from the words, which no repair of the
parse-repair loop (``roles.LlmRoles.parse_intent``) may change.

A fault's fields are read from the answer itself (a magnitude counts when its provenance says the intent gave it); the
ego's and the agents' from the parser's notes (``lastv2x.core.parse_notes``). The loop keeps them in every later answer
(``keep_stated``) and, when the verifier's errors can only be mended by changing one, returns the spec as stated with
a ``STATED_CHECK`` finding that says what the repair would have set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from lastv2x.core.catalogue import FAULT_OPERATORS
from lastv2x.core.parse_notes import stated_note_fields
from lastv2x.core.spec import Agent, Behaviour, Ego
from lastv2x.core.verifier import Finding
from services.llm.intent_fault_draft import PROVENANCE_SIGN_OPEN

STATED_CHECK = "parser.stated_fault_kept"
# the fault fields an answer reads from the intent's words; a repair may not change them (a magnitude counts when
# its provenance says the intent gave it; one whose direction the intent leaves open, PROVENANCE_SIGN_OPEN, keeps
# its size and may take the sign a repair gives it: "off by 4 m" is bound by 4 m ahead as well as 4 m behind)
_STATED_KEYS = ("magnitude", "probability", "burst_count", "duration_s", "anchor", "ghost_speed_mps", "ghost_route")
_STATED_MAGNITUDE = ("intent", PROVENANCE_SIGN_OPEN)
# the scene fields an answer reads from the intent's words, which a repair may not change either (fresh36: "Ego at 45 mph,
# 90 m from the stop bar at start" was moved to 685.5 m by a decision-window repair; "lead brakes 7 s in" to 1.33 s):
# read from the parser's notes (``lastv2x.core.parse_notes``); an answer without such notes (an LLM's) states none
_STATED_EGO_KEYS = ("speed_mps", "start_distance_m")
_STATED_AGENT_KEYS = ("speed_mps", "gap_m", "arrival_offset_s", "behaviour.at_time_s", "behaviour.decel_mps2")
EGO = "ego"  # the owner of a stated ego field in the stated table (an agent's is "agents[k]", a fault's its index)


@dataclass(frozen=True)
class _Unsigned:
    """A stated size whose sign is open."""

    size: float

    def admits(self, value: Any) -> bool:
        return isinstance(value, int | float) and abs(abs(value) - self.size) <= 1e-9 * max(1.0, self.size)


def stated_fault_fields(data: Any) -> dict[tuple[int, str], Any]:
    """(fault index, field) -> value (or :class:`_Unsigned`) for the fields the first answer read from the intent."""
    out: dict[tuple[int, str], Any] = {}
    faults = data.get("faults") if isinstance(data, dict) else None
    for i, f in enumerate(faults if isinstance(faults, list) else ()):
        if not isinstance(f, dict):
            continue
        for key in _STATED_KEYS:
            if key in f and f[key] is not None and (key != "magnitude" or f.get("provenance") in _STATED_MAGNITUDE) \
                    and _in_range(f, key):
                open_sign = key == "magnitude" and f.get("provenance") == PROVENANCE_SIGN_OPEN
                out[(i, key)] = _Unsigned(abs(float(f[key]))) if open_sign else f[key]
    return out


# the grammar's note of a fault whose stream the words name ("fault[0] drop on BSM: 'drop'; stream BSM named; ...")
_STREAM_NAMED = re.compile(r"fault\[(?P<i>\d+)\] \w+ on (?P<stream>[A-Z]+): .*?\bstream (?P=stream) named\b(?! elsewhere)", re.DOTALL)


def stated_streams(notes: Sequence[str]) -> dict[tuple[int | str, str], Any]:
    """(fault index, "stream") -> the stream a fault's words name (fresh42: "drop one in five relay BSMs" in an EEBL
    scene was moved to EEBL by the verifier's stream_consumption repair: a swap of what was asked)."""
    return {(int(m.group("i")), "stream"): m.group("stream") for note in notes if (m := _STREAM_NAMED.match(note))}


def stated_scene_fields(data: Any, notes: Sequence[str]) -> dict[tuple[int | str, str], Any]:
    """(``EGO`` or ``"agents[k]"``, field) -> value for the ego's and the agents' fields the first answer's notes say the
    intent's words set (a dotted field is nested: ``behaviour.at_time_s``)."""
    if not isinstance(data, dict):
        return {}
    agents = data.get("agents") if isinstance(data.get("agents"), list) else []
    ids = {a["id"]: k for k, a in enumerate(agents) if isinstance(a, dict) and isinstance(a.get("id"), str)}
    out: dict[tuple[int | str, str], Any] = {}
    for who, name in stated_note_fields(notes):
        if who == EGO and name in _STATED_EGO_KEYS:
            owner, holder = EGO, data.get(EGO)
        elif who in ids and name in _STATED_AGENT_KEYS:
            owner, holder = f"agents[{ids[who]}]", agents[ids[who]]
        else:
            continue
        value = _field(holder, name)
        if isinstance(value, int | float) and not isinstance(value, bool) and _admits(owner, name, value):
            out[(owner, name)] = value
    return out


def _field(holder: Any, name: str) -> Any:
    for part in name.split("."):
        holder = holder.get(part) if isinstance(holder, dict) else None
    return holder


def _admits(owner: str, name: str, value: float) -> bool:
    """A stated value the spec can hold ("waits to turn left at 0 km/h" cannot: a repair gives it a speed)."""
    head, _, sub = name.partition(".")
    try:
        if owner == EGO:
            Ego.model_validate({name: value})
        elif head == "behaviour":
            Behaviour.model_validate({sub: value})
        else:
            Agent.model_validate({"id": "a", "role": "lead", name: value})
    except ValidationError:
        return False
    return True


def _path(owner: int | str, key: str) -> str:
    return f"faults[{owner}].{key}" if isinstance(owner, int) else f"{owner}.{key}"


def _changes(stated: Any, value: Any) -> bool:
    return not stated.admits(value) if isinstance(stated, _Unsigned) else value != stated


def needs_stated(finding: Finding, stated: dict[tuple[int | str, str], Any]) -> bool:
    """Would the finding's repair change a field the intent states (so it is not applied)?"""
    patch = finding.repair.patch if finding.repair is not None else ()
    return any((path == _path(i, key) and _changes(value, new)) or path.startswith(_path(i, key) + ".")
               for path, new in patch for (i, key), value in stated.items())


def _in_range(fault: dict[str, Any], key: str) -> bool:
    """A stated value the spec can hold (an absurd "99999 s" is clamped into the operator's range instead)."""
    value = fault[key]
    if key == "magnitude":
        op = fault.get("operator")
        info = FAULT_OPERATORS[op] if isinstance(op, str) and op in FAULT_OPERATORS else None
        bounds = info.magnitude_range if info is not None else None
        return isinstance(value, int | float) and (bounds is None or bounds[0] <= value <= bounds[1])
    if key == "probability":
        return isinstance(value, int | float) and 0.0 <= value <= 1.0
    if key == "burst_count":
        return isinstance(value, int) and 1 <= value <= 10000
    return True


def keep_stated(data: Any, stated: dict[tuple[int | str, str], Any], kept: list[str]) -> Any:
    """``data`` with every stated fault, ego and agent field as the intent states it; what a repair wanted instead goes
    to ``kept`` ("faults[0].probability 0.25 kept (the repair would set 0.558)")."""
    faults = data.get("faults") if isinstance(data, dict) else None
    if not stated or not isinstance(faults, list):
        return data
    out = dict(data)
    out["faults"] = [dict(f) if isinstance(f, dict) else f for f in faults]
    if isinstance(out.get(EGO), dict):
        out[EGO] = dict(out[EGO])
    if isinstance(out.get("agents"), list):
        out["agents"] = [{k: dict(v) if isinstance(v, dict) else v for k, v in a.items()} if isinstance(a, dict) else a
                         for a in out["agents"]]
    for (i, key), value in stated.items():
        owner = _owner(out, i)
        *parents, last = key.split(".")
        for part in parents:
            owner = owner.get(part) if isinstance(owner, dict) else None
        if not isinstance(owner, dict):
            continue
        if _changes(value, owner.get(last)):
            said = value.size if isinstance(value, _Unsigned) else value
            kept.append(f"{_path(i, key)} {json.dumps(said)} kept as stated (the repair would set "
                        f"{json.dumps(owner.get(last))})")
            owner[last] = said
            if key == "magnitude":
                owner["provenance"] = PROVENANCE_SIGN_OPEN if isinstance(value, _Unsigned) else "intent"
    return out


def _owner(data: dict[str, Any], owner: int | str) -> Any:
    """The dict of ``data`` a stated field's owner names: a fault (its index), ``EGO`` or ``"agents[k]"``."""
    if isinstance(owner, int):
        return data["faults"][owner] if owner < len(data["faults"]) else None
    if owner == EGO:
        return data.get(EGO)
    m = re.fullmatch(r"agents\[(\d+)\]", owner)
    agents = data.get("agents")
    return agents[int(m.group(1))] if m and isinstance(agents, list) and int(m.group(1)) < len(agents) else None


__all__ = ["EGO", "STATED_CHECK", "keep_stated", "needs_stated", "stated_fault_fields", "stated_scene_fields",
           "stated_streams"]
