"""Settings from the environment: one reader for every frozen settings dataclass.

Each service's settings are a frozen dataclass read once in ``main``; this is the one place
that turns ``<PREFIX><FIELD>`` variables into its typed fields, by the type of each field's
default: bool (1/true/yes/on), int, float, Path, a tuple of strings (comma-separated; empty
keeps the default), else the string itself. A value that does not parse is InvalidArgument
naming the variable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from lastv2x.core.errors import FieldViolation, InvalidArgument


def env_flag(raw: str) -> bool:
    """A boolean setting's value: 1 / true / yes / on (any case) is true, anything else false."""
    return raw.strip().lower() in ("1", "true", "yes", "on")


def fields_from_env(kind: type, env: Mapping[str, str], prefix: str, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of dataclass ``kind`` that ``env`` sets (``prefix`` + upper-case field name)."""
    out: dict[str, Any] = {}
    for f in fields(kind):
        if f.name in skip:
            continue
        key = prefix + f.name.upper()
        if key not in env:
            continue
        raw = env[key]
        default = f.default if f.default is not MISSING else None
        try:
            if isinstance(default, tuple):
                out[f.name] = tuple(x.strip() for x in raw.split(",") if x.strip()) or default
            elif isinstance(default, bool):
                out[f.name] = env_flag(raw)
            elif isinstance(default, int):
                out[f.name] = int(raw)
            elif isinstance(default, float):
                out[f.name] = float(raw)
            elif isinstance(default, Path):
                out[f.name] = Path(raw)
            else:
                out[f.name] = raw or None if f.name.endswith("_file") else raw
        except ValueError:
            raise InvalidArgument(FieldViolation(key, f"cannot read {raw!r} as {type(default).__name__}")) from None
    return out


__all__ = ["env_flag", "fields_from_env"]
