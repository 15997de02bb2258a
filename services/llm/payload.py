"""A structured payload pasted as an intent, said as the key lines the parser reads as it reads a form
(``LlmRoles.check_text``). The forms, each parsed into one tree of (key, value) pairs:

- an object in braces: a JSON body, a JavaScript-style literal (``{ app: 'EEBL', ego: {speed: 22 m/s} }``: keys bare,
  strings in either quote, values as typed, commas optional) or protobuf text (``impairment { kind: FREEZE trigger {
  anchor: CRITICAL_EPOCH } }``);
- a YAML block (``spec:\\n  vehicles:\\n    ego:\\n      speedMps: 15.5``), read with PyYAML;
- an INI or TOML file's sections (``[crossing]\\nspeed_kmh = 45``), dotted keys nesting (``fault.1.type = ...``);
- a line of shell or log assignments (``APP=EEBL EGO_SPEED_MPS=27 FAULT_KIND=stale_stamp ...``,
  ``app=IMA ego.v=12.5mps fault.at=decision``).

The tree is said with ``payload_words``: a vehicle's settings named by the vehicle ("lead gap: 38 m"), a fault's object
as its fault line and attribute lines ("fault: latency", "start: at the decision point", "duration: 2 s"; a list of
faults, one list item each), any other object transparent (a wrapper's keys as they stand). Text in no such form, and
a block this reader cannot parse (a Rust struct's ``App::Eebl``, prose in braces), comes back as it stands. Pure
functions of the text.
"""

from __future__ import annotations

import configparser
import json
import re
from typing import Any

import yaml

from services.llm.payload_words import fault_lines, is_vehicle, snake, speed_unit, vehicle_line

_FAULT_KEY = re.compile(r"^(?:faults?|injections?|attacks?|fault_injection|impairments?|perturbations?)$")
_TOKEN = re.compile(r"""[ \t]*(?:([{}\[\]:,\n=])|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^{}\[\]:,"'\n=]+))""")
Items = list[tuple[str, Any]]
# what ends a payload's last line: a clause's end (";"), so a line of prose after it is not its value ("duration: 5s"
# over "anchor is just scenario start."); not a full stop, which a number before it would read as a decimal point
_END = ";"


class _Unreadable(ValueError):
    pass


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: ``p`` punctuation (a line break one, as a comma), ``s`` a quoted string, ``b`` bare text."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip():
                raise _Unreadable(text[pos:pos + 20])
            break
        pos = m.end()
        if m.group(1):
            out.append(("p", "," if m.group(1) == "\n" else ":" if m.group(1) == "=" else m.group(1)))
        elif m.group(2) is not None or m.group(3) is not None:
            out.append(("s", m.group(2) if m.group(2) is not None else m.group(3) or ""))
        elif m.group(4).strip():
            out.append(("b", m.group(4).strip()))
    return out


def _parse(tokens: list[tuple[str, str]], i: int) -> tuple[Any, int]:
    """The value at ``tokens[i]`` and the index after it (objects as lists of (key, value): keys may repeat)."""
    while tokens[i:i + 1] == [("p", ",")]:
        i += 1
    if i >= len(tokens):
        raise _Unreadable("end of text")
    kind, text = tokens[i]
    if (kind, text) == ("p", "{"):
        items: Items = []
        i += 1
        while True:
            while tokens[i:i + 1] == [("p", ",")]:
                i += 1
            if tokens[i:i + 1] == [("p", "}")]:
                return items, i + 1
            if i + 1 >= len(tokens) or tokens[i][0] == "p":
                raise _Unreadable("a key expected")
            key = tokens[i][1]
            if tokens[i + 1] == ("p", "{"):  # protobuf text: "ego { speed_mps: 26 }"
                value, i = _parse(tokens, i + 1)
            elif tokens[i + 1] == ("p", ":"):
                value, i = _parse(tokens, i + 2)
                if tokens[i:i + 1] == [("p", ":")] and isinstance(value, str) and " " in value:
                    # fields without commas ("gap_m: 45 hard_brake_time_s: 7"): the value's last word is the next key
                    value, nxt = value.rsplit(" ", 1)
                    i -= 1
                    tokens[i] = ("b", nxt)
            else:
                raise _Unreadable("':' expected")
            items.append((key, value))
            if tokens[i:i + 1] not in ([("p", ",")], [("p", "}")]) and not (
                    i + 1 < len(tokens) and tokens[i][0] != "p" and tokens[i + 1] in (("p", ":"), ("p", "{"))):
                raise _Unreadable("',' or '}' expected")
    if (kind, text) == ("p", "["):
        values: list[Any] = []
        i += 1
        while True:
            while tokens[i:i + 1] == [("p", ",")]:
                i += 1
            if tokens[i:i + 1] == [("p", "]")]:
                return values, i + 1
            value, i = _parse(tokens, i)
            values.append(value)
    if kind == "p":
        raise _Unreadable(f"unexpected {text!r}")
    return (None if kind == "b" and text in ("None", "null", "nil") else text), i + 1


def _scalar(value: Any) -> str | None:
    """A plain value as text (None for a null: said nowhere)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):  # a list of plain values: said in a row
        said = [_scalar(v) for v in value if not _is_object(v)]
        return ", ".join(s for s in said if s is not None)
    return str(value)


def _is_object(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(x, tuple) and len(x) == 2 for x in value)


def _flat(items: Items, prefix: str = "") -> list[tuple[str, str]]:
    """A fault object's pairs with nested keys joined ("trigger": {"event": ...} -> ("trigger_event", ...))."""
    out: list[tuple[str, str]] = []
    for key, value in items:
        if _is_object(value):
            out += _flat(value, f"{prefix}{key}_")
        elif (said := _scalar(value)) is not None:
            out.append((f"{prefix}{key}", said))
    return out


def _fault_object_lines(value: Any, item: bool) -> list[str]:
    if _is_object(value):
        lines = fault_lines(_flat(value))
    else:
        said = _scalar(value)
        lines = [f"fault: {said or 'none'}"]
    if item and lines:
        lines[0] = "- " + lines[0]
    return lines


def _is_list_of_faults(value: Any) -> bool:
    """A list of faults, or a dotted key's numbered faults ({"1": {...}, "2": {...}})."""
    return (isinstance(value, list) and not _is_object(value)) or (
        _is_object(value) and all(k.isdigit() and _is_object(v) for k, v in value))


_PREFIXED = re.compile(r"^([a-z]+(?:_vehicle)?)_(?=[a-z])")
# a key naming the run or its resource: an identifier there ("rlvw-spat-countdown-short") is a name, not words to read
_NAME_KEY = re.compile(r"^(?:api_version|kind|name|namespace|uid|id|run_id|test_id|case_id|tag|label|requester|owner"
                       r"|resource_version)$")


# a flat object that is one fault ("inject(app=\"glosa\", stream=\"SPAT\", op=\"drop\", rate=0.25, duration=6)"): its
# operator's key, and the keys that set the scene rather than the fault
_FLAT_OPERATOR = re.compile(r"^(?:op|operator|fault|fault_type|fault_kind|impairment|attack|inject)$")
_SCENE_KEY = re.compile(r"^(?:app|application|scenario|seed|run|map|town|repeat|runs|expect\w*)$")


def _speed_units(items: Items, vehicle: str | None = None) -> set[str]:
    """The units the tree's vehicle speeds are given in."""
    units: set[str] = set()
    for key, value in items:
        if _is_object(value):
            units |= _speed_units(value, key if is_vehicle(key) else vehicle)
        elif vehicle is not None and (said := _scalar(value)) is not None and (unit := speed_unit(key, said)):
            units.add(unit)
    return units


def tree_lines(items: Items, vehicle: str | None = None, bare_speed_unit: str | None = None) -> list[str]:
    """The key lines of a parsed tree (see the module docstring)."""
    if vehicle is None and bare_speed_unit is None and len(units := _speed_units(items)) == 1:
        bare_speed_unit = units.pop()
    if vehicle is None and not any(_FAULT_KEY.match(snake(k)) and not _FLAT_OPERATOR.match(snake(k)) for k, _ in items) \
            and any(_FLAT_OPERATOR.match(snake(k)) and not _is_object(v) for k, v in items):
        scene = [(k, v) for k, v in items if _SCENE_KEY.match(snake(k)) or _is_object(v) or _NAME_KEY.match(snake(k))
                 or any(is_vehicle(p) for p in _PREFIXED.findall(snake(k)))]
        fault = [(k, v) for k, v in items if (k, v) not in scene]
        return tree_lines(scene, None, bare_speed_unit) + _fault_object_lines(fault, item=False)
    lines: list[str] = []
    for key, value in items:
        if _FAULT_KEY.match(snake(key)):
            if _is_list_of_faults(value):
                faults = [v for _, v in value] if _is_object(value) else value
                if not faults:
                    lines.append("faults: none")
                for v in faults:
                    lines += _fault_object_lines(v, item=True)
            else:
                lines += _fault_object_lines(value, item=False)
        elif _is_object(value):
            lines += tree_lines(value, key if is_vehicle(key) else vehicle, bare_speed_unit or "")
        elif (said := _scalar(value)) is not None:
            owner = vehicle or next((p for p in _PREFIXED.findall(snake(key)) if is_vehicle(p)), None)
            if owner is not None:  # a vehicle's setting, in its object or by its prefix ("ego_speed_mps")
                line = vehicle_line(owner, key if vehicle else snake(key)[len(owner) + 1:], said, bare_speed_unit or None)
                if line is not None:
                    lines.append(line)
            elif not (_NAME_KEY.match(snake(key)) and " " not in said):  # (a run's name or id names it, asks nothing)
                lines.append(f"{key}: {said}")
    return lines


def _items(value: Any) -> Any:
    """A JSON or YAML value with objects as lists of (key, value), as ``_parse`` gives them."""
    if isinstance(value, dict):
        return [(str(k), _items(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_items(v) for v in value]
    return value


def object_lines(body: str, key: str | None = None) -> list[str] | None:
    """The key lines of an object's text ``body`` ("{...}", held by ``key`` when it is a key's value); None when it is
    not an object this reader parses (then the text stands)."""
    try:
        items = _items(json.loads(body))
    except ValueError:
        try:
            tokens = _tokens(body)
            items, end = _parse(tokens, 0)
        except (_Unreadable, IndexError):
            return None
        if any(t != ("p", ",") for t in tokens[end:]):
            return None
    if not _is_object(items) and items != []:
        return None
    return tree_lines([(key, items)] if key else items)


# a line opening an object ("{", "payload = {", "ego: {speed: 11.1}", protobuf's "impairment {") and its key
_OPENS = re.compile(r"^(\s*(?:-\s+)?)(?:[\"']?([A-Za-z][\w.-]*)[\"']?\s*[:=]?\s*)?(?=\{)")
_BEFORE_OBJECT = re.compile(r"^(?P<head>.*?[:\s]['\"]?)(?=\{\s*[\"'A-Za-z])")


# a call's keyword arguments on one line ("run = client.submit(app=\"IMA\", ego_speed_mps=13.9, faults=[...])")
_CALL = re.compile(r"^(?P<head>.*?)\b[A-Za-z_][\w.]*\((?P<args>\s*[A-Za-z_]\w*\s*=.*)\)\s*;?\s*$")


def _objects(lines: list[str]) -> list[str]:
    """Each object (from an opening brace to its closing one, a line or more) said as key lines; a sentence's object
    at its end ("rerun this: {...}") said after the sentence."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        call = _CALL.match(line)
        if call is not None and (said := object_lines("{" + call.group("args") + "}")) is not None and len(said) >= 2:
            said[-1] += _END
            out += said
            i += 1
            continue
        m = _OPENS.match(line)
        head = ""
        if m is None and (b := _BEFORE_OBJECT.match(line)) is not None and \
                line.rstrip().rstrip("'\"").endswith(("}", "};")):
            head, line, m = b.group("head"), line[b.end("head"):], _OPENS.match(line[b.end("head"):])
        brace = line.find("{")
        if m is None or brace < 0:
            out.append(lines[i])
            i += 1
            continue
        depth, j, end = 0, i, -1
        rows = [line] + lines[i + 1:]
        while j - i < len(rows) and end < 0:  # the line where the object closes
            text = rows[j - i]
            for pos, ch in enumerate(text[brace if j == i else 0:], brace if j == i else 0):
                depth += (ch == "{") - (ch == "}")
                if depth == 0:
                    end = pos
                    break
            if end < 0:
                j += 1
        rest = rows[j - i][end + 1:].strip(" ,;)'\"") if end >= 0 else "?"
        if rest and not rest.startswith(("#", "//")):  # unclosed, or text after it: not a payload of its own
            out.append(lines[i])
            i += 1
            continue
        body = "\n".join([rows[0][brace:], *rows[1:j - i], rows[j - i][:end + 1]]) if j > i else rows[0][brace:end + 1]
        said = object_lines(body, m.group(2))
        if said is None or len(said) < 2:
            out.append(lines[i])
            i += 1
            continue
        said[-1] += _END  # (the object's last line ends its clause: a line of prose after it is not its value)
        out += ([head.strip()] if head.strip() else []) + said
        i = j + 1
    return out


_YAML_LINE = re.compile(r"^\s*(?:-\s+)?(?:[\w.\-/\"']+\s*:(?:\s.*)?|-\s+\S.*)$|^\s*(?:#.*)?$")
_YAML_NESTED = re.compile(r"^\s+(?:-\s+)?[\w.\-/\"']+\s*:")


def _yaml_blocks(lines: list[str]) -> list[str]:
    """Each YAML block (three or more key lines, some nested) said as key lines; other lines as they stand."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and _YAML_LINE.match(lines[j]):
            j += 1
        block = lines[i:j]
        keyed = [x for x in block if x.strip() and not x.lstrip().startswith("#")]
        if len(keyed) >= 3 and any(_YAML_NESTED.match(x) for x in keyed) and not lines[i][:1].isspace():
            try:
                tree = yaml.safe_load("\n".join(block))
            except yaml.YAMLError:
                tree = None
            said = tree_lines(_items(tree)) if isinstance(tree, dict) else []
            if len(said) >= 2:
                said[-1] += _END
                out += said
                i = j
                continue
        out.append(lines[i])
        i += 1
    return out


_SECTION = re.compile(r"^\s*\[([\w.\- ]+)\]\s*$")
_INI_LINE = re.compile(r"^\s*(?:[\w.\-]+\s*=.*|\[[\w.\- ]+\]|[;#].*|)$")


def _nest(pairs: list[tuple[str, str]]) -> Items:
    """Dotted keys as nested objects ("fault.1.type" -> fault: {1: {type: ...}}), in order of first mention."""
    tree: Items = []
    for key, value in pairs:
        node = tree
        parts = [p for p in key.split(".") if p]
        for part in parts[:-1]:
            child = next((v for k, v in node if k == part and isinstance(v, list)), None)
            if child is None:
                child = []
                node.append((part, child))
            node = child
        node.append((parts[-1], value))
    return tree


def _ini_blocks(lines: list[str]) -> list[str]:
    """An INI or TOML file (a section header, then key = value lines) said as key lines."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _SECTION.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and _INI_LINE.match(lines[j]):
            j += 1
        parser = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"), strict=False)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        try:
            parser.read_string("\n".join(lines[i:j]))
        except configparser.Error:
            out.append(lines[i])
            i += 1
            continue
        tree: Items = []
        for section in parser.sections():
            pairs = _nest([(k, v.strip().strip("\"'")) for k, v in parser.items(section)])
            tree += [(section, pairs)] if (is_vehicle(section) or _FAULT_KEY.match(snake(section))) else pairs
        said = tree_lines(tree)
        if len(said) >= 2:
            said[-1] += _END
            out += said
            i = j
        else:
            out.append(lines[i])
            i += 1
    return out


_ASSIGNMENT = re.compile(r"(?:^|\s)([A-Za-z][\w.]*)=(\"[^\"]*\"|'[^']*'|[^\s\"']+)")
_ENV_GROUP = re.compile(r"^(fault|faults|ego|lead|relay|cross|crossing|oncoming|opposing|follower)_(.+)$")


def _assignments(lines: list[str]) -> list[str]:
    """A line of four or more assignments (shell variables before a command, a log line's fields) said as key
    lines, a key's group ("FAULT_KIND", "ego.v") its object; other lines as they stand."""
    out: list[str] = []
    for line in lines:
        found = list(_ASSIGNMENT.finditer(line))
        pairs = [(m.group(1), m.group(2).strip("\"'")) for m in found]
        between = [line[a.end():b.start()] for a, b in zip(found, found[1:], strict=False)]
        if len(pairs) < 4 or any(x.strip() for x in between) or not any(_FAULT_KEY.match(snake(k.split(".")[0])) or is_vehicle(k.split(".")[0])
                                     or _ENV_GROUP.match(snake(k)) for k, _ in pairs):
            out.append(line)
            continue
        keyed = []
        for key, value in pairs:
            group = _ENV_GROUP.match(snake(key)) if "." not in key else None
            keyed.append((f"{group.group(1)}.{group.group(2)}" if group else key, value))
        if any(k.startswith("fault.") for k, _ in keyed):  # "fault=phantom_vehicle stream=BSM fault.at=decision": one fault
            keyed = [(f"fault.{k}" if k in ("fault", "stream") else k, v) for k, v in keyed]
        said = tree_lines(_nest(keyed))
        said[-1] += _END
        out += said
    return out


def payload_lines(text: str) -> str:
    """``text`` with each structured payload it holds said as key lines (see the module docstring)."""
    lines = text.splitlines()
    return "\n".join(_assignments(_ini_blocks(_yaml_blocks(_objects(lines)))))


__all__ = ["object_lines", "payload_lines", "tree_lines"]
