"""The parser's notes read back as data: which spec fields the intent's own words set.

The notes travel with a parse (``ParseIntent``'s reply, ``services.llm.roles.ParseResult.notes``), so their reader
lives in the shared core.

The offline grammar records every decision as a note. A note that names a field and quotes the words it came
from ("lead.gap_m 45.0 from '<dist> ahead'"), or names a field and a bare value ("v2x.channel.range_m 300.0",
"ego.maneuver left"), records a field the intent states; "(default ...)", "assigned from seed", "kept as stated"
and derivations said after a colon or in brackets ("ego.speed_mps 25: following the lead at its stated speed",
"lead.behaviour hard_brake (EEBL needs a braking lead)") record fields the parser chose.

``assigned_towns`` reads the other choice a campaign may revisit: the town, when the parser assigned it from the seed
among the maps able to host the request (a campaign moves a scene that does not fit that town to another of them).

One reader for both users of the rule: the parse-repair loop (``services.llm.stated``: a repair may not move a stated field)
and campaigns (``services.search.pipeline.stated_fields``: nor may an observability repair). An answer without
such notes (an LLM's) states none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# "<owner>.<field>[.<field>...] <value><rest>": owner is a spec section (ego, v2x, map, ...) or an agent's id
_NOTE = re.compile(r"(?P<owner>[a-z][a-z0-9_]*)(?P<field>(?:\.[a-z_][a-z0-9_]*)+) (?P<after>.*)", re.DOTALL)
_QUOTES_WORDS = re.compile(r"(?:^|\s)from ['\"]|\bnamed in the intent\b|\bfrom the wording\b")
_CHOSEN = re.compile(r"\(default\b|\bassigned from seed\b|\bkept as stated\b")


def stated_note_fields(notes: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(owner, field) of every field the notes say the intent's words set, in note order, each once: ``("ego",
    "start_distance_m")``, ``("lead", "behaviour.at_time_s")``, ``("v2x", "channel.range_m")``."""
    out: list[tuple[str, str]] = []
    for note in notes:
        m = _NOTE.fullmatch(note)
        if m is None:
            continue
        after = m.group("after")
        if _CHOSEN.search(after) or not (" " not in after.strip() or _QUOTES_WORDS.search(after)):
            continue
        key = (m.group("owner"), m.group("field")[1:])
        if key not in out:
            out.append(key)
    return tuple(out)


# "map.town <name> assigned from seed among ['a', 'b']": the parser chose the town (the intent names none)
_ASSIGNED_TOWN = re.compile(r"map\.town \S+ assigned from seed among \[(?P<pool>[^\]]*)\]")


def assigned_towns(notes: Iterable[str]) -> tuple[str, ...]:
    """The towns the parser chose the spec's town among when the intent names none (each one it judged able to
    host the request), in its order; empty when the intent names the town (or the notes do not say)."""
    for note in notes:
        m = _ASSIGNED_TOWN.fullmatch(note)
        if m is not None:
            return tuple(t.strip().strip("'\"") for t in m.group("pool").split(",") if t.strip())
    return ()


__all__ = ["assigned_towns", "stated_note_fields"]
