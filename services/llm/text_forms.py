"""Code and wire formats an intent may come wrapped in, read as the lines of text they say (``LlmRoles.check_text``):
a shell script (comments, exports), a Makefile target's help, an HTTP request and its form body, text-format fields, a
notebook cell, a unified diff of a configuration, IF/THEN/ELSE pseudo-code, a telegram's STOPs, a Gherkin outline's
Examples. Each reader is a pure
function of its text; text in no such format comes back as it stands."""

from __future__ import annotations

import re
import urllib.parse

# code and wire formats around an intent: a script's shebang, a notebook's cell marker, an HTTP request line and its
# headers say nothing; a Makefile target's "## help" text is what the target does (its prerequisites are not)
_SAYS_NOTHING = re.compile(r"^\s*(?:#!.*|#\s*in\s*\[\s*\d*\s*\]\s*:?\s*|(?:get|post|put|patch|delete)\s+/\S*\s+http/\d(?:\.\d)?"
                           r"|(?:content-type|content-length|accept|host|authorization|user-agent)\s*:.*|[{}\s]*"
                           # a Robot Framework file's section marks and settings ("*** Test Cases ***", "[Tags] lta")
                           r"|\s*\*{3}\s*[\w ]+\s*\*{3}\s*|\s*\[(?:tags|documentation|setup|teardown|timeout)\].*"
                           r"|(?:resource|library|variables)\s{2,}\S.*)$", re.IGNORECASE)
_MAKE_TARGET = re.compile(r"^([\w.-]+:)[^=#]*##\s*(.+)$")
# a line of several shell assignments ("$(RUN) APP=FCW LEAD_SPEED_MPH=35 EGO_SPEED_MPH=45", "export SPAT_LATENCY_MS=300")
# or text-format fields ("kind: REPLAY stream: SPAT lookback_s: 10 len_s: 4"): one key line each
_ASSIGNMENT = r"[A-Za-z][\w.-]*=(?:\"[^\"]*\"|'[^']*'|\S+)"
_ASSIGNMENTS = re.compile(rf"^\s*(?:export\s+)?(?:\$\([\w.-]+\)\s+|\./[\w./-]+\s+)*{_ASSIGNMENT}(?:\s+{_ASSIGNMENT})*\s*$")
_FIELDS = re.compile(r"^\s*(?:[A-Za-z]\w*\s*\{\s*)?(?:[A-Za-z]\w*:\s*[^\s:{}]+\s*){2,}\}?\s*$")
# a form body ("app=FCW&ego_kph=90&inject=none&note=baseline+only%3B+..."): its fields, decoded
_FORM = re.compile(r"^\s*[\w.-]+=[^&\s]*(?:&[\w.-]+=[^&\s]*)+\s*$")


_DIFF_HEADER = re.compile(r"^(?:--- a/|\+\+\+ b/|--- /dev/null|\+\+\+ /dev/null|@@ .* @@|diff --git |index [0-9a-f]+\.\.)")
_PSEUDO_IF = re.compile(r"^\s*if\b(.*)\bthen\s*$", re.IGNORECASE)
_PSEUDO_ELSE = re.compile(r"^\s*else\b", re.IGNORECASE)
_PSEUDO_END = re.compile(r"^\s*(?:end(?:\s*if)?|fi|endif)\s*;?\s*$", re.IGNORECASE)


# a command line's flag and its value ("--start-dist 250m", "--magnitude -3s", "--anchor=green_onset")
_CLI_FLAG = re.compile(r"(?:^|\s)--([a-z][a-z0-9-]*)(?:=|\s+)(?!--)('[^']*'|\"[^\"]*\"|\S+)", re.IGNORECASE)
_CHANGED_KEY = re.compile(r"^[-+]\s*([a-z_][\w.]*)\s*[:=]", re.IGNORECASE)


def as_changed(text: str) -> str:
    """A unified diff of a configuration ("-fault none", "+fault oncoming BSM frozen ..."): the file as it will be (its
    added and kept lines, without the markers); a change request's old and new values, the new ones; an IF ... THEN ... ELSE ... END block in pseudo-code: its condition
    ("when ...,") and its THEN branch, the ELSE branch (what holds otherwise: nominal) left out. Other text as it stands."""
    lines = text.splitlines()
    if any(_DIFF_HEADER.match(x) for x in lines) and any(x.startswith("+") and not x.startswith("+++") for x in lines):
        lines = [x[1:] if x[:1] in "+ " else x for x in lines if not _DIFF_HEADER.match(x) and not x.startswith("-")]
    # a changed setting pasted without a header ("- fault.delay: 0.2s" over "+ fault.delay: 0.5s"): its new value only
    # (a list's "- " items stay: only a key both removed and added is a change)
    changed = {m.group(1) for x in lines if (m := _CHANGED_KEY.match(x)) and x.startswith("-")} & \
        {m.group(1) for x in lines if (m := _CHANGED_KEY.match(x)) and x.startswith("+")}
    if changed:
        lines = [x[1:].lstrip() if x.startswith("+") and (m := _CHANGED_KEY.match(x)) and m.group(1) in changed else x
                 for x in lines if not (x.startswith("-") and (m := _CHANGED_KEY.match(x)) and m.group(1) in changed)]
    lines = _chosen_variant(_change_request(lines))
    if any(_PSEUDO_IF.match(x) for x in lines) and any(_PSEUDO_ELSE.match(x) for x in lines):
        out, skipping = [], False
        for x in lines:
            cond = _PSEUDO_IF.match(x)
            if cond:
                out.append(f"when {cond.group(1).strip()},")
            elif _PSEUDO_ELSE.match(x):
                skipping = True
            elif _PSEUDO_END.match(x):
                skipping = False
            elif not skipping:
                out.append(x)
        lines = out
    return "\n".join(lines)


_PARAMETER = re.compile(r"^\s*(?:parameter|field|setting|item)\s*:\s*(.+?)\s*$", re.IGNORECASE)
_OLD_VALUE = re.compile(r"^\s*(?:old|previous|current|was|from)(?: value)?\s*:", re.IGNORECASE)
_NEW_VALUE = re.compile(r"^\s*(?:new|proposed|requested|becomes|to)(?: value)?\s*:\s*(.*?)\s*(?:\(unchanged\))?\s*$",
                        re.IGNORECASE)


def _change_request(lines: list[str]) -> list[str]:
    """A change request's "Parameter: lead gap / Old value: 30 m / New value: 40 m": the parameter at its new value
    ("lead gap: 40 m"); the old value said no more."""
    if not any(_OLD_VALUE.match(x) for x in lines) or not any(_NEW_VALUE.match(x) for x in lines):
        return lines
    out: list[str] = []
    parameter: str | None = None
    for line in lines:
        if (m := _PARAMETER.match(line)) is not None:
            parameter = m.group(1)
        elif _OLD_VALUE.match(line):
            continue
        elif (m := _NEW_VALUE.match(line)) is not None:
            out.append(f"{parameter}: {m.group(1)}" if parameter else m.group(1))
            parameter = None
        else:
            out.append(line)
    return out


# a variant's line ("Variant A: ...", "row C) ...", a matrix's bare "B: ..."; a bare label is one capital letter)
_VARIANT = re.compile(r"^\s*(?:[-*]\s*)?(?:(?:variant|option|alternative|case|row)\s+(?P<named>[A-Za-z0-9]{1,3})"
                      r"|(?P<bare>(?-i:[A-Z])))\s*[:.)-]\s*", re.IGNORECASE)
# the one to run ("Run only variant B", "of rows A-D run only A (the baseline)", "run only C")
_ONLY_VARIANT = re.compile(r"\b(?:run|use|execute|test|do|pick|take)\s+(?:only\s+)?(?:the\s+)?(?:variant|option|alternative"
                           r"|case|row)\s+(?P<a>[A-Za-z0-9]{1,3})\s+only\b|\b(?:run|use|execute|test|do|pick|take)?\s*only\s+"
                           r"(?:(?:the\s+)?(?:variant|option|alternative|case|row)\s+(?P<b>[A-Za-z0-9]{1,3})|(?P<c>(?-i:[A-Z])))\b",
                           re.IGNORECASE)


def _label(m: re.Match[str]) -> str:
    return (m.group("named") or m.group("bare")).lower()


def _chosen_variant(lines: list[str]) -> list[str]:
    """Drafted variants of which one is to run ("Variant A: ... / Variant B: ... / Run only variant B"): that variant's
    words, the others said no more."""
    chosen = next((m.group("a") or m.group("b") or m.group("c") for x in lines if (m := _ONLY_VARIANT.search(x))), None)
    variants = [_label(m) for x in lines if (m := _VARIANT.match(x))]
    if chosen is None or len(variants) < 2 or chosen.lower() not in variants:
        return lines
    out = []
    for line in lines:
        m = _VARIANT.match(line)
        if m is None:
            out.append(line)
        elif _label(m) == chosen.lower():
            out.append(line[m.end():])
    return out


def code_lines(line: str) -> list[str]:
    """A line of code or of a wire format around the intent as the lines of text it says (see the patterns above); any
    other line as it stands."""
    if _SAYS_NOTHING.match(line):
        return []
    target = _MAKE_TARGET.match(line)
    if target:
        return [f"{target.group(1)} {target.group(2)}"]
    flags = _CLI_FLAG.findall(line)
    if len(flags) >= 3:  # a command line's flags ("--ego-speed 60kmh --fault spat_countdown_offset ..."): one key each
        # (one sentence, a clause per flag: "--hold 10s" stays with the fault it times)
        return [", ".join(f"{name.replace('-', ' ')} {value.strip(chr(39) + chr(34)).replace('_', ' ')}"
                          for name, value in flags)]
    if _FORM.match(line):
        return [f"{k} = {v}" for k, v in urllib.parse.parse_qsl(line.strip(), keep_blank_values=True)]
    if _ASSIGNMENTS.match(line):
        return [m.group(0).replace("=", " = ", 1).replace('"', "") for m in re.finditer(_ASSIGNMENT, line)]
    if _FIELDS.match(line):
        body = re.sub(r"^\s*[A-Za-z]\w*\s*\{|\}\s*$", "", line)
        return [f"{k}: {v}" for k, v in re.findall(r"([A-Za-z]\w*):\s*([^\s:{}]+)", body)]
    return [line]


# a Gherkin outline's placeholder ("<ego_speed>") and its Examples table's lines ("Examples:", "| a | b |")
_PLACEHOLDER = re.compile(r"<([A-Za-z][\w -]*)>")
_EXAMPLES = re.compile(r"^\s*examples\s*:\s*$", re.IGNORECASE)
_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")


def outline(text: str) -> str:
    """A Gherkin "Scenario Outline" with one row of Examples: its steps with each ``<name>`` replaced by the row's value,
    the Examples table said by them (several rows are several scenarios: the text then stands, for the parser to report
    what it cannot read). Any other text as it stands."""
    lines = text.splitlines()
    at = next((i for i, x in enumerate(lines) if _EXAMPLES.match(x)), None)
    if at is None or not _PLACEHOLDER.search(text):
        return text
    table = [x for x in lines[at + 1:at + 4] if _TABLE_LINE.match(x)]
    rows = [[c.strip() for c in x.strip().strip("|").split("|")] for x in table]
    rows = [r for r in rows if not all(re.fullmatch(r":?-+:?", c) for c in r)]
    if len(rows) != 2 or len(rows[0]) != len(rows[1]) or len(lines) > at + 1 + len(table) and \
            _TABLE_LINE.match(lines[at + 1 + len(table)]):
        return text
    values = dict(zip((n.lower() for n in rows[0]), rows[1], strict=True))
    steps = lines[:at] + lines[at + 1 + len(table):]
    said = [_PLACEHOLDER.sub(lambda m: values.get(m.group(1).strip().lower(), m.group(0)), x) for x in steps]
    return "\n".join(said)


# a telegram's "STOP" between its sentences ("EEBL TEST REQUESTED STOP EGO 60 KMH ... STOP")
_TELEGRAM_STOP = re.compile(r"\s+STOP\b(?=\s|$)")


def telegram(text: str) -> str:
    """A telegram (upper case, two or more "STOP"s) with its STOPs as full stops; any other text as it stands."""
    letters = [c for c in text if c.isalpha()]
    if len(_TELEGRAM_STOP.findall(text)) < 2 or sum(c.isupper() for c in letters) < 0.9 * len(letters):
        return text
    return _TELEGRAM_STOP.sub(".", text)


__all__ = ["as_changed", "code_lines", "outline", "telegram"]
