"""A chat or meeting's minutes as an intent (``LlmRoles.check_text``): who said what, what a later reply turned down,
and what value a later line corrected; and a writer's own correction after the fact.

- Speakers: "Anna: ...", a tracker's "[ben] ...", a chat typed in lower case ("dana: ...") and a chat client's
  "[09:12] anna.k: ..." (its clock is when the line was typed, not a scenario time).
- A line a speaker turned down in the next reply of another ("Ines: add 50 % EEBL loss?" / "Kai: no, keep it clean"),
  or gave up by agreeing to another's version, is marked ``(withdrawn)`` (``withdrawn``).
- A value corrected in a later line ("Owen: ... when the ego is 40 m from the stop bar." / "Priya: Sorry, 30 m, not
  40"; "Luis: Make that three seconds back, two won't be stale enough"), or proposed by one speaker and agreed to by
  the one who said the first ("Raj: ... were at 50 km/h" / "Mei: Fair, 50 then."), is put in the line that said the
  first, and the correcting or agreeing sentence said no more (``value_corrections``): one value, where it was asked
  for.
- A writer's own correction in a later sentence ("but use 40 % not 25 %" above a forwarded request, "I meant replay,
  not freeze", "I meant the MAP, not the SPaT, for the timestamp one") is put where the corrected words were
  (``corrected``).

Pure functions of the lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from services.llm import fault_cues
from services.llm import lexicon as lx

# a chat's speaker ("Anna: can we ...", "Ben: no, ..."), and a reply that turns down what the other speaker asked
SPEAKER = re.compile(r"^(?:([A-Z][a-z]{1,15}):|\[([a-z][\w.-]{1,15})\]:?)\s")  # "Ben: ...", a tracker's "[ben] ..."
_NOT_A_SPEAKER = frozenset({"Description", "Summary", "Details", "Expected", "Steps", "Setup", "Notes", "Note",
                            "Objective", "Scenario", "Feature", "Fault", "Faults", "Scope", "Type", "Priority", "Repro",
                            "Requirement", "Requirements", "Stimulus", "Subject", "Title", "Effect", "Cause",
                            "Verification", "Background", "Examples", "Given", "When", "Then", "And", "But", "Expect"})
_TURNED_DOWN = re.compile(r"^(no|nope|nah|not that)\b|\binstead\b|^(maybe |perhaps )?(later|not now|not yet|not today"
                          r"|not in this run)\b", re.IGNORECASE)
_AGREED = re.compile(r"^(ok|okay|agreed|fine|sure|yes|yep|right|deal|confirmed)\b", re.IGNORECASE)


def withdrawn(lines: Iterable[str]) -> list[str]:
    """The lines of a chat between two or more speakers, each line a speaker turned down in the next reply of another
    ("Ines: add 50 % EEBL loss on the relay test?" / "Kai: no, keep it clean"), or agreed to in a reply that restates
    the fault ("Tom: agreed, SPaT freeze from green onset for 8 s"), marked ``(withdrawn)`` as one sentence
    (its stops made commas), so what it asked for is read as said of no run (``lexicon.NOT_NOW``); the rest as
    written. (First its speakers are named and its corrected values put in place: ``value_corrections``.)"""
    out = value_corrections(_named_speakers(list(lines)))
    said_at: list[int] = []  # where each line's words start after its speaker
    speakers: list[str | None] = []
    for line in out:
        m = SPEAKER.match(line)
        name = (m.group(1) or m.group(2)) if m else None
        speakers.append(name if name not in _NOT_A_SPEAKER else None)
        said_at.append(m.end() if m else 0)
    if len({s for s in speakers if s}) < 2:
        return out

    def withdraw(j: int) -> None:
        if "(withdrawn)" not in out[j]:
            said = re.sub(r"[.;!?]+(?=\s|$)", ",", out[j][said_at[j]:].strip()).rstrip(",")
            out[j] = f"{out[j][:said_at[j]].strip()} (withdrawn) {said}"

    for i, speaker in enumerate(speakers):
        reply = out[i][said_at[i]:].strip() if speaker else ""
        # turned down, or agreed to in words that restate the fault ("Tom: agreed, SPaT freeze from green onset for 8
        # s"): the reply is what is asked for
        if speaker is None:
            continue
        if _TURNED_DOWN.search(reply) or (_AGREED.match(reply) and fault_cues.detect(reply)):
            j = next((k for k in range(i - 1, -1, -1) if speakers[k] is not None), None)
            if j is not None and speakers[j] != speaker:
                withdraw(j)
        if _AGREED.match(reply):  # who agrees to another's version drops their own earlier proposal ("agreed, use ben's")
            for j in range(i):
                if speakers[j] == speaker and fault_cues.detect(out[j][said_at[j]:]):
                    withdraw(j)
    return out


_NUMBER = r"(?:\d+(?:\.\d+)?|" + "|".join(sorted(lx.NUMBER_WORDS, key=len, reverse=True)) + r")"
_UNIT_CLASS = {  # a unit's kind: a correction replaces a value of the same kind
    "speed": r"km/h|kmh|kph|kilomet(?:re|er)s? (?:an|per) hour|mph|miles (?:an|per) hour|m/s",
    "distance": r"m|metres?|meters?|ft|feet|yards?",
    "time": r"s|secs?|seconds?|ms|milliseconds?",
}
_UNIT = "|".join(f"(?:{u})" for u in _UNIT_CLASS.values())
# "Sorry, 30 m, not 40", "Correction: 0.5 s, not 0.3"
_SORRY_NOT = re.compile(rf"^(?:(?:sorry|oops|correction|actually|wait|no)[,:!]?\s+)(?P<new>{_NUMBER})\s*(?P<unit>{_UNIT})?"
                        rf",?\s+not\s+(?P<old>{_NUMBER})\b", re.IGNORECASE)
# "Make that three seconds back, two won't be stale enough": the new value, then the old one named
_MAKE_THAT = re.compile(rf"^(?:(?:no|ok|okay|actually)[,!]?\s+)?make (?:that|it)\s+(?P<new>{_NUMBER})\s*(?P<unit>{_UNIT})?\b",
                        re.IGNORECASE)
_OLD_NAMED = re.compile(rf"(?:\bnot (?P<a>{_NUMBER})\b|\b(?P<b>{_NUMBER}) (?:won'?t|wouldn'?t|isn'?t|is not|is too|would be"
                        r" too)\b)", re.IGNORECASE)
# "OK, 30.", "Agreed, three.", "Fair, 50 then.": a value agreed to, nothing else
_AGREED_VALUE = re.compile(rf"^(?:ok|okay|agreed|fair|fine|sure|yes|yep|right|deal|confirmed|good)[,!]?\s+(?:then\s+)?"
                           rf"(?P<value>{_NUMBER})\s*(?:{_UNIT})?(?:\s+(?:then|it is|it'?s|works|is fine))?\s*[.!]?$",
                           re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


# a chat typed in lower case ("dana: @sam can you queue an LTA run?", "sam: sure. make it 400 ms"): a name that opens a
# line, not a key a form or a payload opens lines with
_LOWER_SPEAKER = re.compile(r"^(?:\[\d{1,2}:\d{2}(?::\d{2})?\]\s*)?([a-z][a-z]{1,15})(?:\.[a-z]{1,3})?:\s+(?=[a-z@\d])")
_KEY_WORDS = frozenset("""app application ego lead relay cross crossing oncoming fault faults stream start end duration
anchor trigger magnitude note notes expect expected scenario test case run speed gap phase target sender from to subject
re fyi cc update edit ps nb todo action id priority summary step steps setup objective result results status cause effect
given when then and but kind type name mode value values window description details scope title comment comments
context background goal goals request question answer reason why what how where who""".split())


def _named_speakers(lines: list[str]) -> list[str]:
    """Lines of a chat typed in lower case, a chat client's "[09:12] anna.k:" too, with their speakers' names said as
    names ("dana:" -> "Dana:", "[09:12] anna.k:" -> "Anna:"), when two or more names open lines; any other lines as they
    stand. (A message's clock is when it was typed, not a scenario time.)"""
    names = {m.group(1) for x in lines if (m := _LOWER_SPEAKER.match(x)) and m.group(1) not in _KEY_WORDS}
    if len(names) < 2:
        return lines
    return [f"{m.group(1).capitalize()}: {x[m.end():]}" if (m := _LOWER_SPEAKER.match(x)) and m.group(1) in names else x
            for x in lines]


def _value(word: str) -> float:
    word = word.lower()
    return float(lx.NUMBER_WORDS[word]) if word in lx.NUMBER_WORDS else float(word)


def _unit_class(unit: str | None) -> str | None:
    if not unit:
        return None
    return next((kind for kind, pattern in _UNIT_CLASS.items() if re.fullmatch(pattern, unit, re.IGNORECASE)), None)


def _said_with_unit(line: str, value: float | None, kind: str | None) -> re.Match[str] | None:
    """The last number in ``line`` equal to ``value`` (any value when None) with a unit of ``kind`` (any unit, or none
    when ``kind`` is None)."""
    unit = _UNIT_CLASS[kind] if kind else _UNIT
    found = None
    for m in re.finditer(rf"(?<![\w.])(?P<n>{_NUMBER})\b(?P<u>\s*(?:{unit})\b)" + ("" if kind else "?"), line, re.IGNORECASE):
        if value is None or _value(m.group("n")) == value:
            found = m
    return found


def _replace(lines: list[str], upto: int, old: float | None, new: str, kind: str | None, skip: str | None) -> bool:
    """Put ``new`` in place of ``old`` (or of the last value of ``kind`` when ``old`` is None and it differs) in the
    nearest line before ``upto`` that says it (a line of speaker ``skip`` passed over); whether one was found."""
    for j in range(upto - 1, -1, -1):
        if skip is not None and SPEAKER.match(lines[j]) and _speaker(lines[j]) == skip:
            continue
        m = _said_with_unit(lines[j], old, kind)
        if m is not None and (old is not None or _value(m.group("n")) != _value(new)):
            lines[j] = lines[j][:m.start("n")] + new + lines[j][m.end("n"):]
            return True
    return False


def _speaker(line: str) -> str | None:
    m = SPEAKER.match(line)
    return (m.group(1) or m.group(2)) if m else None


def value_corrections(lines: list[str]) -> list[str]:
    """The lines of a chat between two or more speakers with each corrected value put where it was first said, and the
    sentences that corrected or agreed to it said no more (see the module docstring); other lines as they stand."""
    speakers = [_speaker(x) for x in lines]
    if len({s for s in speakers if s and s not in _NOT_A_SPEAKER}) < 2:
        return lines
    out = list(lines)
    for i, speaker in enumerate(speakers):
        if not speaker or speaker in _NOT_A_SPEAKER:
            continue
        head = SPEAKER.match(out[i])
        assert head is not None
        kept: list[str] = []
        for sentence in _SENTENCE_END.split(out[i][head.end():].strip()):
            said = sentence.strip()
            fix = _SORRY_NOT.match(said) or _MAKE_THAT.match(said)
            old = _OLD_NAMED.search(said, fix.end()) if fix is not None and fix.re is _MAKE_THAT else None
            if fix is not None and (fix.re is _SORRY_NOT or old is not None):
                old_word = fix.group("old") if fix.re is _SORRY_NOT else (old.group("a") or old.group("b"))
                new = str(_value(fix.group("new"))).removesuffix(".0")
                if _replace(out, i, _value(old_word), new, None, None):
                    continue
            agreed = _AGREED_VALUE.match(said)
            if agreed is not None:
                value = _value(agreed.group("value"))
                proposal = next((j for j in range(i - 1, -1, -1) if speakers[j] and speakers[j] != speaker
                                 and _said_with_unit(out[j], value, None) is not None
                                 and _said_with_unit(out[j], value, None).group("u")), None)
                if proposal is not None:  # another's proposal ("were at 50 km/h"): it replaces the value before it
                    m = _said_with_unit(out[proposal], value, None)
                    assert m is not None
                    _replace(out, proposal, None, m.group("n") if m.group("n")[0].isdigit() else str(value),
                             _unit_class(m.group("u").strip()), None)
                continue  # (the agreed value is said where it belongs)
            kept.append(sentence)
        out[i] = out[i][:head.end()] + " ".join(kept)
    return out


# a correction said after the fact by its writer: a value ("but use 40 % not 25 %") or a word ("Oh wait, sorry, I meant
# replay, not freeze:", "Sorry, I meant the MAP, not the SPaT, for the timestamp one.")
_USE_NOT = re.compile(rf"\b(?:use|make (?:it|that)|change (?:it|that) to|should be)\s+(?P<new>{_NUMBER})\s*(?P<unit>%|{_UNIT})?"
                      rf"\s*,?\s+(?:not|instead of|rather than)\s+(?P<old>{_NUMBER})\s*(?P<unit2>%|{_UNIT})?", re.IGNORECASE)
_MEANT = re.compile(r"(?:\b(?:oh )?(?:wait|sorry|oops|correction)[,!:]?\s+)*\bi meant\s+(?:the\s+)?(?P<new>[\w-]+),?\s+not\s+"
                    r"(?:the\s+)?(?P<old>[\w-]+)(?:,?\s+for the (?P<which>[\w -]+?) one)?\s*[:,.;]?", re.IGNORECASE)
# a value replaced by naming what it is ("make that countdown offset -3 s instead", under the quoted request it changes):
# the value of that unit in the sentence that names it
_INSTEAD = re.compile(rf"\bmake (?:it|that)\s+(?P<which>[a-z][a-z ]{{0,40}}?)\s+(?P<new>[-+]?{_NUMBER})\s*(?P<unit>%|{_UNIT})"
                      rf"\s+instead\b", re.IGNORECASE)
_SENTENCES = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")


def corrected(lines: list[str]) -> list[str]:
    """The lines with each correction its writer said after the fact put where the corrected value or word was said
    (in another sentence: a correction within one sentence is the grammar's), the correction itself said no more."""
    out = list(lines)
    for i in range(len(out)):
        for fix in list(_USE_NOT.finditer(out[i])) + list(_MEANT.finditer(out[i])) + list(_INSTEAD.finditer(out[i])):
            if fix.re is _USE_NOT:
                old = rf"(?<![\w.]){re.escape(fix.group('old'))}\s*{re.escape(fix.group('unit2') or fix.group('unit') or '')}"
            elif fix.re is _INSTEAD:  # (any value of its unit, in the sentence that names the same thing)
                old = rf"(?<![\w.])[-+]?\d+(?:\.\d+)?\s*{re.escape(fix.group('unit'))}(?![\w/])"
            else:
                old = rf"\b{re.escape(fix.group('old'))}\b"
            which = fix.groupdict().get("which")
            found = _elsewhere(out, i, fix, old, which)
            if found is None:
                continue
            j, start, end = found
            new = fix.group("new") + (f" {fix.group('unit') or fix.groupdict().get('unit2') or ''}".rstrip()
                                      if fix.re is not _MEANT else "")
            out[j] = out[j][:start] + new + out[j][end:]
            here = out[i] if j != i else out[j]
            sentence = next(m for m in _SENTENCES.finditer(here) if m.start() <= here.find(fix.group(0)) < m.end()) \
                if fix.group(0) in here else None
            if sentence is not None:  # the correcting words said no more (the rest of a "...: replay them" sentence kept)
                rest = here[sentence.start():sentence.end()].replace(fix.group(0), "", 1).strip()
                keep = rest if fix.re is _MEANT and re.search(r"[a-z]{3}", rest) and not rest.startswith(("for ", ",")) \
                    else ""
                said = here[sentence.start():sentence.end()]
                lead = said[:len(said) - len(said.lstrip())]  # (the space before it, kept before what stays)
                out[i] = here[:sentence.start()] + (lead + keep if keep else "") + here[sentence.end():]
            break
    return out


def _elsewhere(lines: list[str], i: int, fix: re.Match[str], old: str, which: str | None
               ) -> tuple[int, int, int] | None:
    """Where ``old`` was said in another sentence (``which`` in it too, when given): the nearest before the correction,
    else the first after it (a forwarded message under its note); (line, start, end) or None."""
    spots: list[tuple[int, int, int, int]] = []  # (distance, line, start, end)
    for j, line in enumerate(lines):
        for sentence in _SENTENCES.finditer(line):
            if j == i and sentence.start() <= fix.start() < sentence.end():
                continue
            if which and not re.search(rf"\b{re.escape(which.split()[0])}", sentence.group(0), re.IGNORECASE):
                continue
            m = re.search(old, sentence.group(0), re.IGNORECASE)
            if m is not None:
                before = (j, sentence.start()) < (i, fix.start())
                spots.append((0 if before else 1, -j if before else j, sentence.start() + m.start(),
                              sentence.start() + m.end()))
    if not spots:
        return None
    spots.sort(key=lambda s: (s[0], s[1], -s[2] if s[0] == 0 else s[2]))
    _, j, start, end = spots[0]
    return abs(j), start, end


__all__ = ["SPEAKER", "corrected", "value_corrections", "withdrawn"]
