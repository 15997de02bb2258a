"""How far a fault must push before an application notices: one rule per *tolerance kind*.

A fault operator's catalogue entry names its kind (``FaultOperatorInfo.tolerance``); the verifier (is the
fault strong enough to matter?) and the reflector (how much stronger should the next test make it?) read the
same limit from here, so an added operator that declares a kind gets both. Budgets and periods are the
catalogue's (LAST-V2X Appendix D); the limits are what an application tolerates, inclusive unless noted:

``latency``   a delay of d s keeps the AoI at T + L + d: tolerated while d <= B - T - L
``age``       a timestamp d s in the past looks fresh while d <= B - L
``countdown`` a countdown error within the monitor's divergence threshold (|d| <= 1.0 s)
``position``  a position error within the track budget at one period's age (d <= 1.5 + 3.0 T m)
``speed``     a speed error under 1 m/s barely moves a dead-reckoned track (|d| < 1.0 m/s, strict)
``burst``     fewer than n* = floor((B - L) / T) consecutive lost messages keep the AoI within B

with B the application's freshness budget for the stream (MAP: ten periods, whatever the application),
T the stream's period and L the nominal channel latency.
"""

from __future__ import annotations

import math

from lastv2x.core import catalogue as cat
from lastv2x.core.catalogue import STREAMS, ApplicationInfo, Stream

KINDS = cat.TOLERANCE_KINDS


def freshness_budget_s(app: ApplicationInfo, stream: Stream) -> float:
    """B: the AoI above which ``app`` treats ``stream`` as stale (MAP changes rarely: ten periods)."""
    return 10.0 * STREAMS[stream].period_s if stream is Stream.MAP else app.freshness_budget_s


def smallest_breaching_burst(budget_s: float, period_s: float, latency_s: float = cat.NOMINAL_LATENCY_S) -> int:
    """n* = floor((B - L) / T): the fewest consecutive drops whose AoI peak exceeds B."""
    return max(1, math.floor((budget_s - latency_s) / period_s + 1e-9))


def limit(kind: str, app: ApplicationInfo, stream: Stream) -> float:
    """The largest |value| of ``kind`` that ``app`` tolerates on ``stream`` (burst: messages, n* - 1)."""
    budget, period, lat = freshness_budget_s(app, stream), STREAMS[stream].period_s, cat.NOMINAL_LATENCY_S
    if kind == "latency":
        return budget - period - lat
    if kind == "age":
        return budget - lat
    if kind == "countdown":
        return cat.COUNTDOWN_DIVERGENCE_S
    if kind == "position":
        return cat.POSITION_BUDGET_BASE_M + cat.POSITION_BUDGET_PER_S_M * period
    if kind == "speed":
        return 1.0
    if kind == "burst":
        return float(smallest_breaching_burst(budget, period, lat) - 1)
    raise KeyError(f"unknown tolerance kind {kind!r}; known: {list(KINDS)}")


def default_magnitude(kind: str, app: ApplicationInfo, stream: Stream) -> float | None:
    """The magnitude a parser writes for a fault of ``kind`` when the intent gives none: one the application
    does not tolerate (a latency of the whole budget, an age of twice it, a 3 s countdown error, a 5 m position
    error, a 3 m/s under-reported speed); None for a burst (drop says how many by its window)."""
    budget = freshness_budget_s(app, stream)
    return {"latency": budget, "age": 2.0 * budget, "countdown": 3.0, "position": 5.0, "speed": -3.0}.get(kind)


def tolerated(kind: str, app: ApplicationInfo, stream: Stream, value: float) -> bool:
    """Does ``app`` tolerate a fault of ``kind`` with this magnitude (burst: messages lost in a row)?"""
    bound = limit(kind, app, stream)
    return abs(value) < bound if kind == "speed" else abs(value) <= bound


__all__ = ["KINDS", "default_magnitude", "freshness_budget_s", "limit", "smallest_breaching_burst", "tolerated"]
