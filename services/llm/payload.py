"""A structured payload pasted as an intent, said as the key lines the parser reads as it reads a form
(``LlmRoles.check_text``). The forms, each parsed into one tree of (key, value) pairs:

- an object in braces: a JSON body, a JavaScript-style literal (``{ app: 'EEBL', ego: {speed: 22 m/s} }``: keys bare,
  strings in either quote, values as typed, commas optional) or protobuf text (``impairment { kind: FREEZE trigger {
  anchor: CRITICAL_EPOCH } }``);
- a YAML block (``spec:\\n  vehicles:\\n    ego:\\n      speedMps: 15.5``), read with PyYAML;
- an INI or TOML file's sections (``[crossing]\\nspeed_kmh = 45``), dotted keys nesting (``fault.1.type = ...``);
- a Python call over several lines (a notebook cell's ``run_case(app="EEBL", ego_speed=24.0,  # m/s ...)``), parsed with
  ``ast`` (literals only);
- a line of shell or log assignments (``APP=EEBL EGO_SPEED_MPS=27 FAULT_KIND=stale_stamp ...``,
  ``app=IMA ego.v=12.5mps fault.at=decision``).

The tree is said with ``payload_words``: a vehicle's settings named by the vehicle ("lead gap: 38 m"), a fault's object
as its fault line and attribute lines ("fault: latency", "start: at the decision point", "duration: 2 s"; a list of
faults, one list item each), any other object transparent (a wrapper's keys as they stand). Text in no such form, and
a block this reader cannot parse (a Rust struct's ``App::Eebl``, prose in braces), comes back as it stands. Pure
functions of the text.
"""

from __future__ import annotations

import ast
import configparser
import json
import re
from collections.abc import Callable
from typing import Any
from xml.etree import ElementTree

import yaml

from services.llm.payload_words import fault_lines, is_vehicle, snake, speed_unit, vehicle_line

_FAULT_KEY = re.compile(r"^(?:faults?|injections?|attacks?|fault_injections?|impairments?|perturbations?|fault_set"
                        r"|fault_list)$")
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
    """A list of faults, a dotted key's numbered faults ({"1": {...}, "2": {...}}), or an element's fault children
    (XML's <faultSet><fault .../><fault .../></faultSet>)."""
    return (isinstance(value, list) and not _is_object(value)) or (
        _is_object(value) and all(_is_object(v) and (k.isdigit() or _FAULT_KEY.match(snake(k))
                                                     or snake(k) in ("item", "entry")) for k, v in value))


_PREFIXED = re.compile(r"^([a-z]+(?:_vehicle)?)_(?=[a-z])")
# a key naming the run or its resource: an identifier there ("rlvw-spat-countdown-short") is a name, not words to read
_NAME_KEY = re.compile(r"^(?:api_version|kind|name|namespace|uid|id|run_id|test_id|case_id|tag|label|requester|owner"
                       r"|resource_version|requested_by|created_by|author|reporter|assignee)$")


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


def _named_vehicle(items: Items) -> tuple[tuple[str, Any], str] | None:
    """The pair that names an object's vehicle ("name": "lead", "id": "oncoming_RV") and that vehicle's key."""
    for key, value in items:
        if snake(key) in ("name", "role", "id", "type", "kind", "actor") and isinstance(value, str):
            vehicle = next((w for w in snake(value).split("_") if is_vehicle(w)), None)
            if vehicle is not None:
                return (key, value), vehicle
    return None


def tree_lines(items: Items) -> list[str]:
    """The key lines of a parsed tree (see the module docstring). A vehicle's bare speed ("relay: {speed: 22}") takes
    the one unit the tree's other speeds are given in, if they agree on one."""
    units = _speed_units(items)
    return _said(items, None, units.pop() if len(units) == 1 else None)


def _said(items: Items, vehicle: str | None, bare_speed_unit: str | None) -> list[str]:
    """``tree_lines`` of ``items``, the settings of ``vehicle`` when they are a vehicle's object."""
    if vehicle is None and not any(_FAULT_KEY.match(snake(k)) and not _FLAT_OPERATOR.match(snake(k)) for k, _ in items) \
            and any(_FLAT_OPERATOR.match(snake(k)) and not _is_object(v) for k, v in items):
        scene = [(k, v) for k, v in items if _SCENE_KEY.match(snake(k)) or _is_object(v) or _NAME_KEY.match(snake(k))
                 or any(is_vehicle(p) for p in _PREFIXED.findall(snake(k)))]
        fault = [(k, v) for k, v in items if (k, v) not in scene]
        return _said(scene, None, bare_speed_unit) + _fault_object_lines(fault, item=False)
    items = _with_units(items)
    lines: list[str] = []
    for key, value in items:
        if _FAULT_KEY.match(snake(key)) and _is_object(value) and any(_FAULT_KEY.match(snake(k)) for k, _ in value):
            lines += _said([(k, v) for k, v in value if not _SWITCHED_ON.match(snake(k))], vehicle, bare_speed_unit)
        elif _FAULT_KEY.match(snake(key)):
            if _is_list_of_faults(value):
                faults = [v for _, v in value] if _is_object(value) else value
                if not faults:
                    lines.append("faults: none")
                for v in faults:
                    lines += _fault_object_lines(v, item=True)
            else:
                lines += _fault_object_lines(value, item=False)
        elif _is_object(value):  # a vehicle's object, by its key or by the name inside it (<remote id="oncoming_RV" .../>)
            named = _named_vehicle(value)
            owner = key if is_vehicle(key) else named[1] if named else vehicle
            lines += _said([kv for kv in value if kv != (named or (None,))[0]], owner, bare_speed_unit)
        elif isinstance(value, list) and any(_is_object(v) for v in value):  # a list of actors, each named inside
            for element in (v for v in value if _is_object(v)):
                named = _named_vehicle(element)
                rest = [kv for kv in element if named is None or kv != named[0]]
                lines += _said(rest, named[1] if named else vehicle, bare_speed_unit)
        elif (said := _scalar(value)) is not None:
            owner = vehicle or next((p for p in _PREFIXED.findall(snake(key)) if is_vehicle(p)), None)
            if owner is not None:  # a vehicle's setting, in its object or by its prefix ("ego_speed_mps")
                line = vehicle_line(owner, key if vehicle else snake(key)[len(owner) + 1:], said, bare_speed_unit)
                if line is not None:
                    lines.append(line)
            elif not (_NAME_KEY.match(snake(key)) and " " not in said):  # (a run's name or id names it, asks nothing)
                lines.append(f"{key}: {said}")
    return lines


_SWITCHED_ON = re.compile(r"^(?:enabled|enable|active|on)$")
_UNIT_KEY = re.compile(r"^(?:(?P<of>[a-z0-9_]+?)_)?unit$")
_BARE = re.compile(r"^[-+]?\d+(?:\.\d+)?$")


def _with_units(items: Items) -> Items:
    """An object's bare numbers with the unit a sibling key gives them (XML's speed="50" speedUnit="km/h": "50 km/h"),
    the unit keys said no more."""
    units = [(m.group("of") or "", v) for k, v in items if isinstance(v, str) and (m := _UNIT_KEY.match(snake(k)))]
    if not units:
        return items
    out: Items = []
    for key, value in items:
        if _UNIT_KEY.match(snake(key)):
            continue
        unit = next((u for of, u in units if snake(key).startswith(of)), None)
        out.append((key, f"{value} {unit}" if unit and isinstance(value, str) and _BARE.match(value) else value))
    return out


def _items(value: Any) -> Any:
    """A JSON or YAML value with objects as lists of (key, value), as ``_parse`` gives them."""
    if isinstance(value, dict):
        return [(str(k), _items(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_items(v) for v in value]
    return value


_GRAPHQL_ARGUMENT = re.compile(r"\b[A-Za-z_]\w*\s*\(\s*([A-Za-z_]\w*)\s*:\s*\{")
_GRAPHQL_SELECTION = re.compile(r"\}\s*\)\s*\{[\w\s,]*\}")


def object_lines(body: str, key: str | None = None) -> list[str] | None:
    """The key lines of an object's text ``body`` ("{...}", held by ``key`` when it is a key's value); None when it is
    not an object this reader parses (then the text stands)."""
    try:
        items = _items(json.loads(body))
    except ValueError:
        # a GraphQL operation: its field's input object ("createRun(input: {...})"), its selection set ("{ runId }") not
        body = _GRAPHQL_SELECTION.sub("}", _GRAPHQL_ARGUMENT.sub(r"\1: {", body))
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
_OPENS = re.compile(r"^(\s*(?:-\s+)?)(?:[\"']?([A-Za-z][\w.-]*)[\"']?(?:\s+\"[^\"]*\")*\s*[:=]?\s*)?(?=\{)")
_BEFORE_OBJECT = re.compile(r"^(?P<head>.*?[:\s]['\"]?)(?=\{\s*[\"'A-Za-z])")


# a call's keyword arguments on one line ("run = client.submit(app=\"IMA\", ego_speed_mps=13.9, faults=[...])")
_CALL = re.compile(r"^(?P<head>.*?)\b[A-Za-z_][\w.]*\((?P<args>\s*[A-Za-z_]\w*\s*=.*)\)\s*;?\s*$")


def _inline_objects(line: str) -> list[str]:
    """A line with objects inside it (a test's parameters: '@pytest.mark.parametrize("app,scene,faults", [("FCW",
    {"ego_speed_mph": 45}, [{"op": "delay", ...}])])'): the text before them, each object's key lines, the text after
    them; a line without such objects as it stands."""
    if "{" not in line:  # (most lines: nothing to scan)
        return [line]
    spans: list[tuple[int, int, list[str]]] = []
    depth, start = 0, -1
    for pos, ch in enumerate(line):
        if ch == "{":
            depth += 1
            start = pos if depth == 1 else start
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0 and (said := object_lines(line[start:pos + 1])) is not None and len(said) >= 2:
                spans.append((start, pos + 1, said))
    if not spans:
        return [line]
    out = [line[:spans[0][0]].rstrip(" ,([")] if line[:spans[0][0]].strip(" ,([") else []
    for _start, _end, said in spans:
        out += said[:-1] + [said[-1] + _END]
    if line[spans[-1][1]:].strip(" ,)]};"):
        out.append(line[spans[-1][1]:].lstrip(" ,)]"))
    return out


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
            out += _inline_objects(lines[i])
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


def _said_blocks(lines: list[str], opens: Callable[[str], bool], goes_on: Callable[[str], bool],
                 say: Callable[[list[str]], list[str] | None]) -> list[str]:
    """Each block of lines (a line ``opens`` accepts, then the lines ``goes_on`` accepts) that ``say`` reads as two or
    more key lines replaced by them, the last ending its clause; other lines as they stand."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if opens(lines[i]):
            j = i + 1
            while j < len(lines) and goes_on(lines[j]):
                j += 1
            said = say(lines[i:j])
            if said is not None and len(said) >= 2:
                said[-1] += _END
                out += said
                i = j
                continue
        out.append(lines[i])
        i += 1
    return out


def _yaml_said(block: list[str]) -> list[str] | None:
    """A YAML block's key lines (three or more key lines, some nested), read with PyYAML; None when it is not one."""
    keyed = [x for x in block if x.strip() and not x.lstrip().startswith("#")]
    if len(keyed) < 3 or not any(_YAML_NESTED.match(x) for x in keyed):
        return None
    try:
        tree = yaml.safe_load("\n".join(block))
    except yaml.YAMLError:
        return None
    return tree_lines(_items(tree)) if isinstance(tree, dict) else None


def _yaml_blocks(lines: list[str]) -> list[str]:
    """Each YAML block said as key lines; other lines as they stand."""
    return _said_blocks(lines, lambda x: bool(_YAML_LINE.match(x)) and not x[:1].isspace(),
                        lambda x: bool(_YAML_LINE.match(x)), _yaml_said)


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


def _ini_said(block: list[str]) -> list[str] | None:
    """An INI or TOML file's key lines (a section header, then key = value lines), read with configparser."""
    parser = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"), strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string("\n".join(block))
    except configparser.Error:
        return None
    tree: Items = []
    for section in parser.sections():
        pairs = _nest([(k, v.strip().strip("\"'")) for k, v in parser.items(section)])
        tree += [(section, pairs)] if (is_vehicle(section) or _FAULT_KEY.match(snake(section))) else pairs
    return tree_lines(tree)


def _ini_blocks(lines: list[str]) -> list[str]:
    """Each INI or TOML file said as key lines; other lines as they stand."""
    return _said_blocks(lines, lambda x: bool(_SECTION.match(x)), lambda x: bool(_INI_LINE.match(x)), _ini_said)


# the operator a fault's settings follow ("fault_1 = 'spat_countdown_offset stream=SPAT offset_s=-4 ...'")
_NAMED_OPERATOR = re.compile(r"\bfaults?(?:_?\d+)?\s*[:=]\s*['\"]?([a-z][a-z_]+)\s*$", re.IGNORECASE)
_ASSIGNMENT = re.compile(r"(?:^|\s)([A-Za-z][\w.]*)=(\"[^\"]*\"|'[^']*'|[^\s\"']+)")
_ENV_GROUP = re.compile(r"^(fault|faults|ego|lead|relay|cross|crossing|oncoming|opposing|follower)_(.+)$")


_SEMICOLON_CELL = re.compile(r"^\s*([A-Za-z][\w.]*)\s*=\s*(\S.*?)\s*$")


def _assignments(lines: list[str]) -> list[str]:
    """A line of four or more assignments (shell variables before a command, a log line's fields; or cells split by
    semicolons, whose values may hold spaces: "app=LTA; ego_speed=4.5 m/s; ...") said as key lines, a key's group
    ("FAULT_KIND", "ego.v") its object; other lines as they stand."""
    out: list[str] = []
    for line in lines:
        found = list(_ASSIGNMENT.finditer(line))
        pairs = [(m.group(1), m.group(2).strip("\"'")) for m in found]
        cells = [_SEMICOLON_CELL.match(c) for c in line.rstrip("; ").split(";")]
        if len(cells) >= 4 and all(cells):  # "app=LTA; ego_speed=4.5 m/s; opp_dist=80 m; ...": values with spaces
            keyed = [(m.group(1), m.group(2)) for m in cells if m is not None]
            said = tree_lines(_nest([(k, v) for k, v in keyed if not _NAME_KEY.match(snake(k))]))
            if said:
                said[-1] += _END
                out += said
                continue
        named = _NAMED_OPERATOR.search(line[:found[0].start()]) if found else None
        if named is not None:  # a fault written as its operator and its settings ("fault_1 = 'drop stream=MAP count=5'")
            pairs.insert(0, ("op", named.group(1)))
        between = [line[a.end():b.start()] for a, b in zip(found, found[1:], strict=False)]
        if len(pairs) < 4 or any(x.strip() for x in between) or not any(_FAULT_KEY.match(snake(k.split(".")[0]))
                                                                         or _FLAT_OPERATOR.match(snake(k))
                                                                         or is_vehicle(k.split(".")[0])
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


def _continued(lines: list[str]) -> list[str]:
    """Lines continued with a trailing backslash (a Dockerfile's ENV, a shell command) joined into one."""
    out: list[str] = []
    for line in lines:
        if out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1].rstrip() + " " + line.strip()
        else:
            out.append(line)
    return out


_XML_START = re.compile(r"^\s*<(?:\?xml\b|[A-Za-z][\w:-]*[\s>/])")


def _xml_said(block: list[str]) -> list[str] | None:
    """An XML document's key lines: an element's attributes and children are its keys, its text its value (no DOCTYPE
    or ENTITY: nothing to expand)."""
    text = "\n".join(block)
    if len(block) < 2 or "<!" in text:
        return None
    try:
        return tree_lines(_element_items(ElementTree.fromstring(text)))
    except ElementTree.ParseError:
        return None


def _xml_documents(lines: list[str]) -> list[str]:
    """Each XML document (its lines all markup, from its first element to its root's end) said as key lines; other
    lines as they stand."""
    return _said_blocks(lines, lambda x: bool(_XML_START.match(x)),
                        lambda x: x.strip().startswith("<") and x.rstrip().endswith(">"), _xml_said)


def _element_items(element: ElementTree.Element) -> Items:
    """An XML element as (key, value) pairs: its attributes, then its children (an empty child's text as its value)."""
    items: Items = [(k, v) for k, v in element.attrib.items()]
    for child in element:
        tag = child.tag.split("}")[-1]
        items.append((tag, _element_items(child) if (len(child) or child.attrib) else (child.text or "").strip()))
    return items


# a test keyword and its named arguments, cells apart by two spaces or more ("Set Opposing Vehicle    speed_kmh=54
# gap_m=70", "Set Ego Speed    kmh=30"): a vehicle's settings when the keyword names one
_KEYWORD_CALL = re.compile(r"^\s*(?P<words>[A-Z][A-Za-z]*(?: [A-Za-z]+)*)(?P<args>(?:\s{2,}[\w.]+=\S+)+)\s*$")
_BARE_UNIT = re.compile(r"^(?:kmh|kph|mph|mps|m|s|ms)$")


def _keyword_calls(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        m = _KEYWORD_CALL.match(line)
        words = snake(m.group("words")).split("_") if m else []
        vehicle = next((w for w in words if is_vehicle(w)), None)
        if m is None or vehicle is None:
            out.append(line)
            continue
        setting = next((w for w in reversed(words) if w in ("speed", "gap", "distance", "range")), "speed")
        for key, value in (arg.split("=", 1) for arg in m.group("args").split()):
            said = vehicle_line(vehicle, f"{setting}_{key}" if _BARE_UNIT.match(snake(key)) else key, value)
            if said is not None:
                out.append(said + _END)
    return out


# a Python call over several lines ("res = run_case(\n    app=\"EEBL\",\n    ego_speed=24.0,   # m/s\n ...)"): its opening
# line, and a keyword argument's bare number with its unit in the line's comment
_CALL_OPENS = re.compile(r"^\s*(?:[A-Za-z_]\w*\s*=\s*)?[A-Za-z_][\w.]*\(\s*(?:#.*)?$")
_COMMENT_UNIT = re.compile(r"^(\s*[A-Za-z_]\w*\s*=\s*)([-+]?\d+(?:\.\d+)?)(\s*,?\s*)#\s*(m/s|km/h|kmh|kph|mph|ms|m|s|%)"
                           r"(?![\w/]).*$")


def _python_calls(lines: list[str]) -> list[str]:
    """Each Python call written over several lines with keyword arguments (a notebook cell's ``run_case(...)``) said as
    the key lines of its arguments: parsed with ``ast`` (literal values only, never evaluated: ``ast.literal_eval``),
    a bare number taking the unit its line's comment gives it (``ego_speed=24.0,  # m/s``); other lines as they stand."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _CALL_OPENS.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        depth, j = 0, i
        while j < len(lines):  # to the line that closes the call (a bracket inside a string would fail the parse below)
            depth += lines[j].count("(") - lines[j].count(")")
            if depth <= 0:
                break
            j += 1
        said = _call_said(lines[i:j + 1])
        if said is None:
            out.append(lines[i])
            i += 1
            continue
        out += said
        i = j + 1
    return out


def _call_said(block: list[str]) -> list[str] | None:
    source = "\n".join(_COMMENT_UNIT.sub(lambda m: f'{m.group(1)}"{m.group(2)} {m.group(4)}"{m.group(3)}', line)
                       for line in block)
    source = re.sub(r"^\s*[A-Za-z_]\w*\s*=\s*(?=[A-Za-z_][\w.]*\()", "", source)  # ("res = run_case(": the call)
    try:
        call = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or not call.keywords or any(k.arg is None for k in call.keywords):
        return None
    items: Items = []
    for keyword in call.keywords:
        try:
            items.append((str(keyword.arg), _items(ast.literal_eval(keyword.value))))
        except ValueError:  # (not a literal: a variable, a call)
            return None
    said = tree_lines(items)
    if len(said) < 2:
        return None
    said[-1] += _END
    return said


def payload_lines(text: str) -> str:
    """``text`` with each structured payload it holds said as key lines (see the module docstring)."""
    lines = _python_calls(_continued(text.splitlines()))
    return "\n".join(_keyword_calls(_assignments(_ini_blocks(_yaml_blocks(_objects(_xml_documents(lines)))))))


__all__ = ["object_lines", "payload_lines", "tree_lines"]
