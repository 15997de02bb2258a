"""A test matrix pasted as an intent, read as sentences: a header line and data rows separated by tabs (a
spreadsheet's cells pasted), commas or semicolons, or a markdown table ("| id | app | ... |", "|---|---|", rows)
("test,app,ego_speed,lead_speed,gap,notes\\nF-03,FCW,90 km/h,60 km/h,40 m,baseline - no faults") become
one sentence per row whose cells are said with their column's name ("ego speed 90 km/h; lead speed 60 km/h; gap 40
m; baseline - no faults"), which the parser reads as it reads prose. Columns that only name the row (an id, a test
or case number) are dropped; a notes or comment column is said as it stands. Anything that is not such a table comes
back unchanged.
"""

from __future__ import annotations

import csv
import re

from services.llm.payload_words import fault_lines, is_fault_attribute, split_unit

# a column named by a role the parser knows only as "<role> vehicle" ("crossing_speed" -> "crossing vehicle speed")
_ROLE_WORDS = {"crossing": "crossing vehicle", "cross": "crossing vehicle", "oncoming": "oncoming vehicle",
               "opposing": "oncoming vehicle", "lead": "lead", "leader": "lead", "braker": "braking vehicle"}
_ID_COLUMNS = re.compile(r"^(id|test|test[ _]?id|test[ _]?case|case|case[ _]?id|scenario|scenario[ _]?id|tc|no|nr|#|row"
                         r"|ref)$", re.IGNORECASE)
_NOTE_COLUMNS = re.compile(r"^(notes?|comments?|remarks?|description|desc|fault|faults|stimulus|disturbance|"
                           r"obstruction|start|when)( ?\d+)?$", re.IGNORECASE)


def _split(line: str) -> tuple[str, list[str]] | None:
    if _PIPE_ROW.match(line):  # a markdown row: "| id | app | fault |"
        return "|", [c.strip() for c in line.strip().strip("|").split("|")]
    for sep in ("\t", ";", ","):
        if line.count(sep) >= 2:  # (a quoted cell keeps its separators: "signalised 4-way, single lane")
            return sep, [c.strip() for c in next(csv.reader([line], delimiter=sep, skipinitialspace=True))]
    return None


_PIPE_ROW = re.compile(r"^\s*\|(?:[^|]*\|){2,}\s*$")
_PIPE_RULE = re.compile(r"^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*\|?\s*$")  # "|---|:---:|"


# a fault's column ("fault"): with the fault's own columns beside it ("stream", "magnitude", "start_s"), the row's
# fault is said as a payload's fault object is (``payload_words.fault_lines``)
_FAULT_COLUMN = re.compile(r"^faults?$", re.IGNORECASE)


def _row_lines(names: list[str], row: list[str]) -> list[str]:
    """A data row said as text: its cells one sentence, each named by its column, a bare number in the unit its column's
    name gives ("ego speed 72 km/h; lead gap 35 m."), and when the row has a fault column and the fault's own columns,
    the fault and its attributes as a form's lines ("fault: freeze", "start: t = 9 s", "duration: 2 s")."""
    cells = [(name.strip(), cell) for name, cell in zip(names, row, strict=True)
             if cell and not _ID_COLUMNS.match(name.strip())]
    fault = [(n, c) for n, c in cells if _FAULT_COLUMN.match(n) or is_fault_attribute(n)]
    as_form = any(_FAULT_COLUMN.match(n) for n, _ in fault) and len(fault) > 1
    said: list[str] = []
    for name, cell in cells:
        if as_form and (name, cell) in fault:
            continue
        stem, value = split_unit(name, cell)
        if _NOTE_COLUMNS.match(name) or name.lower() == "app":
            said.append(cell)
        else:
            said.append(f"{_column(stem)} {value}")
    return (["; ".join(said) + "."] if said else []) + (fault_lines(fault) if as_form else [])


def _names_only(head: tuple[str, list[str]]) -> bool:
    """Whether a separated line can be a header: column names, one word each ("ego_speed"), or a few words each
    between tabs ("ego speed (km/h)")."""
    sep, names = head
    if sep in ("\t", ";"):  # (a spreadsheet's or a semicolon export's header: "Ego speed;Lead gap;Lead brakes at")
        return all(len(name.split()) <= 4 for name in names)
    return all(" " not in name for name in names)


def _column(name: str) -> str:
    words = name.replace("_", " ").replace("-", " ").split()
    if words and words[0].lower() in _ROLE_WORDS:
        words = [_ROLE_WORDS[words[0].lower()], *words[1:]]
    return " ".join(words)


# an SQL insert, on one line or several: "INSERT INTO faults (app, stream, kind) VALUES ('RLVW', 'SPAT', 'delay');"
_INSERT = re.compile(r"^\s*insert\s+into\s+[\w.]+\s*\(([^)]*)\)\s*values\s*(.*?);?\s*$", re.IGNORECASE | re.DOTALL)
_SQL_ROW = re.compile(r"\(((?:[^()']|'[^']*')*)\)")
_SQL_VALUE = re.compile(r"\s*('(?:[^']|'')*'|[^,]+)\s*(?:,|$)")


def _inserts(lines: list[str]) -> list[str]:
    """The lines with each SQL insert said as one sentence per row of values, its columns as keys ("app = RLVW, stream =
    SPAT, kind = countdown_bias, offset_s = -2.0"; a NULL says nothing); beside an insert, a comment line ("-- i.e.
    ...") as a sentence."""
    sql = any(re.match(r"^\s*insert\s+into\b", line, re.IGNORECASE) for line in lines)
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not re.match(r"^\s*insert\s+into\b", lines[i], re.IGNORECASE):
            out.append(re.sub(r"^\s*--\s*", "", lines[i]) if sql else lines[i])
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and not lines[j].rstrip().endswith(";"):
            j += 1
        m = _INSERT.match(" ".join(lines[i:j + 1]))
        if m is None:
            out.extend(lines[i:j + 1])
        else:
            names = [c.strip() for c in m.group(1).split(",")]
            for row in _SQL_ROW.findall(m.group(2)):
                values = [v.strip().strip("'") for v in _SQL_VALUE.findall(row)]
                said = [f"{n} = {v}" for n, v in zip(names, values, strict=False) if v and v.upper() != "NULL"]
                out.append(", ".join(said) + ".")
        i = j + 1
    return out


def rows_as_sentences(lines: list[str]) -> list[str]:
    """``lines`` with a separated header and its data rows, and an SQL insert's rows, said as sentences (other lines
    unchanged)."""
    lines = _inserts(lines)
    out: list[str] = []
    i = 0
    while i < len(lines):
        head = _split(lines[i])
        rows: list[list[str]] = []
        markdown = head is not None and head[0] == "|" and i + 1 < len(lines) and _PIPE_RULE.match(lines[i + 1])
        if markdown or (head is not None and head[0] != "|" and not any(ch.isdigit() for ch in lines[i])
                        and _names_only(head)):
            assert head is not None
            sep, names = head
            j = i + 2 if markdown else i + 1
            while j < len(lines):
                cells = _split(lines[j])
                if cells is None or cells[0] != sep or len(cells[1]) != len(names):
                    break
                rows.append(cells[1])
                j += 1
        if not rows:  # (a spreadsheet row without its header: its cells apart, " | " between them)
            out.append(" | ".join(lines[i].split("\t")) if lines[i].count("\t") >= 2 else lines[i])
            i += 1
            continue
        assert head is not None
        if markdown and len(head[1]) == 2:  # a key-value table ("| field | value |", "| start | t = 15 s |"): key lines
            out.extend(f"{key}: {value}" for key, value in rows if key and value)
            i += 2 + len(rows)
            continue
        for row in rows:
            out += _row_lines(head[1], row)
        i += (2 if markdown else 1) + len(rows)
    return out


__all__ = ["rows_as_sentences"]
