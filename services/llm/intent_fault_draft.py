"""A fault clause of the offline grammar while it is read (:class:`FaultDraft`), and which clause a phrase
belongs to: the nearest fault cue in its sentence, unless a conjunction separates them, else the only fault
(:func:`owner_of`). Shared by ``intent_faults`` (operators, streams, senders, magnitudes) and ``intent_windows``
(when a fault's window opens and how long it lasts)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lastv2x.core.catalogue import Stream
from lastv2x.core.spec import FaultOperator
from services.llm import lexicon as lx
from services.llm.intent_text import ParseState, rx

# a magnitude whose size the intent states and whose direction it leaves open ("its position is off by 4 m": no
# sign word of the operator's, either way): the parse-repair loop may flip its sign, never change its size
PROVENANCE_SIGN_OPEN = "intent; sign open"


@dataclass
class FaultDraft:
    operator: FaultOperator | str
    start: int
    end: int
    sentence: int
    cue: str
    stream: Stream | None = None
    sender: str | None = None
    anchor: dict[str, Any] | None = None
    duration_s: float | None = None
    magnitude: float | None = None
    probability: float | None = None
    burst_count: int | None = None
    target_phase: str | None = None
    ghost_speed_mps: float | None = None
    ghost_route: str | None = None  # "ego" / "cross" when the words place a phantom; None: open
    provenance: str = "intent"  # or PROVENANCE_SIGN_OPEN, or "default: ..." (the parser chose the magnitude)
    stream_named: bool = False
    notes: list[str] = field(default_factory=list)
    # "over the same window": the fault whose window this one shares (its length is read after the anchors)
    same_window: FaultDraft | None = field(default=None, repr=False, compare=False)

    def distance(self, pos: int) -> int:
        return 0 if self.start <= pos < self.end else min(abs(pos - self.start), abs(pos - self.end))



# " + " joins two faults as "plus" does ("bsm delay 0.4s + bsm speed +2 m/s")
# " + " joins two faults as "plus" does ("bsm delay 0.4s + bsm speed +2 m/s")
# (a table's cell border "|" separates as strongly as ";": "| MAP binds ego lane to ... | SPaT ... starting at amber |")
SEPARATOR = rx(r"\b(and|while|but|plus|whereas|also|then|meanwhile)\b|[,;|]|\s\+\s")
STRONG_SEPARATOR = rx(r"\b(and|while|but|plus|whereas|also|then|meanwhile)\b|[;|]|\s\+\s")


def nearest(p: ParseState, f: FaultDraft, pattern: str, same_sentence: bool = True) -> re.Match[str] | None:
    best: tuple[int, re.Match[str]] | None = None
    for m in p.finditer(pattern):
        if same_sentence and p.n.sentence_of(m.start()) != f.sentence:
            continue
        d = f.distance(m.start())
        if best is None or d < best[0]:
            best = (d, m)
    return best[1] if best else None


def owner_of(faults: list[FaultDraft], p: ParseState, pos: int) -> FaultDraft | None:
    """The fault a phrase at ``pos`` belongs to: nearest cue in its sentence, else the only fault, else, in a sentence
    that refers back ("Start it when the crossing car gets near."), the last fault before it."""
    s = p.n.sentence_of(pos)
    here = [f for f in faults if f.sentence == s]
    if here:
        # a fault in the phrase's own clause first ("speed 3 m/s lower, and 15 % of its BSMs are dropped")
        same_clause = [f for f in here if not STRONG_SEPARATOR.search(p.t[min(pos, f.end):max(pos, f.start)])]
        return min(same_clause or here, key=lambda f: f.distance(pos))
    sentence = p.n.sentence(s)
    if _CRITERION.search(sentence):  # "Expected: IMA holds the last track for at most 1 s": the result, not the fault
        return None
    if len(faults) == 1:
        return faults[0]
    before = [f for f in faults if f.start < pos]
    return before[-1] if before and _REFERS_BACK.search(sentence) else None


_CRITERION = re.compile(lx.CRITERION_HEADING, re.IGNORECASE)
# a sentence of its own about the fault said before it: "Start it when ...", "Apply this from 5 s."
_REFERS_BACK = re.compile(r"^\W*(?:start|begin|apply|inject|trigger|run|activate|enable|do|make|keep|hold)s? (?:it|this|that)\b",
                          re.IGNORECASE)




__all__ = ["SEPARATOR", "STRONG_SEPARATOR", "FaultDraft", "nearest", "owner_of"]
