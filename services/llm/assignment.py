"""Deterministic assignment of the fields an intent leaves open.

The paper's normal-traffic benchmark leaves the application and the town to the
pipeline; speeds are usually left open too. Every such field is drawn from the
scenario seed's ASSIGNMENT substream, each field from its own sub-substream
(``substream(seed, ASSIGNMENT, field_index, ...)``), so assigning one field never
shifts the draw of another and the same seed gives the same spec on any machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from lastv2x.core.catalogue import Application
from lastv2x.core.rng import Substream, substream

T = TypeVar("T")


class Field(IntEnum):
    """Sub-substream index per assigned field (append only: indices are part of replay)."""

    APPLICATION = 0
    TOWN = 1
    EGO_SPEED = 2
    AGENT_SPEED = 3


EGO_SPEED_RANGE_MPS = (8.3, 15.3)  # 30-55 km/h: urban approach speeds
AGENT_SPEED_RANGE_MPS = (8.3, 13.9)  # 30-50 km/h
# an open ego speed is drawn at least this much above a stated speed it must close on (an FCW phantom's: a ghost
# moving no slower than the ego is never closed on), within [floor, floor + 2 * margin] when the floor passes the
# range: 3 m/s closes a 35 m gap to the FCW's 2.5 s time to collision in under 10 s
CLOSING_MARGIN_MPS = 3.0


@dataclass(frozen=True)
class Assigner:
    seed: int

    def _rng(self, which: Field, *extra: int):  # noqa: ANN202 - numpy Generator
        return substream(self.seed, Substream.ASSIGNMENT, int(which), *extra)

    def choose(self, which: Field, options: Sequence[T]) -> T:
        if not options:
            raise ValueError(f"nothing to assign for {which.name}")
        ordered = sorted(options, key=str)
        return ordered[int(self._rng(which, len(ordered)).integers(len(ordered)))]

    def application(self, options: Sequence[Application] = tuple(Application)) -> Application:
        return self.choose(Field.APPLICATION, options)

    def town(self, pool: Sequence[str]) -> str | None:
        return self.choose(Field.TOWN, pool) if pool else None

    def ego_speed_mps(self, closing_on_mps: float | None = None) -> float:
        """The ego's speed when the intent states none; above ``closing_on_mps`` (a stated speed ahead it must
        close on) by :data:`CLOSING_MARGIN_MPS` at least, so a stated value is never what has to give way."""
        lo, hi = EGO_SPEED_RANGE_MPS
        if closing_on_mps is not None and closing_on_mps + CLOSING_MARGIN_MPS > lo:
            lo = closing_on_mps + CLOSING_MARGIN_MPS
            hi = max(hi, lo + 2 * CLOSING_MARGIN_MPS)
        return round(float(self._rng(Field.EGO_SPEED).uniform(lo, hi)), 1)

    def agent_speed_mps(self, ordinal: int) -> float:
        lo, hi = AGENT_SPEED_RANGE_MPS
        return round(float(self._rng(Field.AGENT_SPEED, ordinal).uniform(lo, hi)), 1)

    def preview(self, towns: Sequence[str], *, application_open: bool = True) -> dict[str, object]:
        """The draws an LLM backend is told to use for fields the intent leaves open; no application
        when the intent names one (``application_open`` False: a small model copies a default it is
        shown instead of the application asked for)."""
        out: dict[str, object] = {"application_if_unstated": self.application().value} if application_open else {}
        return out | {"town_if_unstated": self.town(towns), "ego_speed_mps_if_unstated": self.ego_speed_mps(),
                      "agent_speed_mps_if_unstated": [self.agent_speed_mps(i) for i in range(3)]}
