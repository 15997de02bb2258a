"""The parser's notes read back as data: which spec fields the intent's own words set.

The notes travel with a parse (``ParseIntent``'s reply, ``services.llm.roles.ParseResult.notes``), so their reader
lives in the shared core.

The offline grammar records every decision as a note. A note that names a field and quotes the words it came
from ("lead.gap_m 45.0 from '<dist> ahead'"), or names a field and a bare value ("v2x.channel.range_m 300.0",
"ego.maneuver left"), records a field the intent states; "(default ...)", "assigned from seed", "kept as stated"
and derivations said after a colon or in brackets ("ego.speed_mps 25: following the lead at its stated speed",
"lead.behaviour hard_brake (EEBL needs a braking lead)") record fields the parser chose.

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


__all__ = ["stated_note_fields"]
