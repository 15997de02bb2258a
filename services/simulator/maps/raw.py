"""The raw lane-segment network a map backend reports, before assembly.

A backend (``opendrive.py`` over carla's parser, ``native.py`` for the built-in
layouts) samples every drivable lane segment — keyed by (road, lane section,
lane) — and reports the segment graph and the traffic-light landmarks as a
:class:`RawNetwork`; ``assemble.py`` turns it into a typed ``RoadMap`` and
``signals.py`` groups its lights. These types are shared by all of them, so
they live apart from both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Key = tuple[int, int, int]  # (road, section, lane)


@dataclass(frozen=True, eq=False)
class RawSegment:
    key: Key
    junction: int | None
    points: np.ndarray  # (N, 2) in driving direction
    headings: np.ndarray  # (N,) rad
    width_m: float
    speed_limit_mps: float
    forward: bool = True  # drives towards increasing road s
    s_range: tuple[float, float] = (0.0, 0.0)  # road s covered by the lane section


@dataclass(frozen=True)
class RawSignal:
    signal_id: str
    road: int
    s: float
    validities: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class RawNetwork:
    segments: Mapping[Key, RawSegment]
    successors: Mapping[Key, tuple[Key, ...]]
    signals: Sequence[RawSignal]
    section_ranges: Mapping[int, Sequence[tuple[float, float]]]  # road -> [(s0, s1)]


__all__ = ["Key", "RawNetwork", "RawSegment", "RawSignal"]
