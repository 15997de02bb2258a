"""Apply a verifier repair patch to a spec given as plain JSON data.

Paths are the verifier's dotted paths: ``faults[0].anchor.offset_s``; ``agents[+]``
appends. A value of ``None`` resets the field to its default (deletes the key).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

_TOKEN = re.compile(r"([a-z_][a-z0-9_]*)|\[(\d+|\+)\]")


def _tokens(path: str) -> list[str | int]:
    out: list[str | int] = []
    for name, index in _TOKEN.findall(path):
        if name:
            out.append(name)
        else:
            out.append(-1 if index == "+" else int(index))
    return out


def apply_patch(data: dict[str, Any], patch: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Return a patched deep copy of ``data``; the input is never modified."""
    out = copy.deepcopy(data)
    for path, value in patch:
        tokens = _tokens(path)
        node: Any = out
        for tok, nxt in zip(tokens, tokens[1:], strict=False):
            if isinstance(tok, int):
                node = node[tok]
            else:
                default: Any = [] if isinstance(nxt, int) else {}
                node = node.setdefault(tok, default)
        last = tokens[-1]
        if last == -1:
            node.append(value)
        elif isinstance(last, int):
            node[last] = value
        elif value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return out
