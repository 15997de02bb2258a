"""Check family 6 of the verifier (``lastv2x.core.verifier``), freshness_budget: the closed-form age
of information of a dropped, delayed, replayed, back-dated or silenced stream against the application's
budget, the burst arithmetic behind it, and when a window withholds a stream from the start.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from lastv2x.core import catalogue as cat
from lastv2x.core import tolerance
from lastv2x.core.spec import FaultOperator
from lastv2x.core.tolerance import smallest_breaching_burst
from lastv2x.core.verifier_base import Finding, Repair, Severity, _budget, _Ctx, _f, _period


def _words(fault: Any) -> str:
    """The operator's name as words ("timestamp offset")."""
    return fault.operator.value.replace("_", " ")


def burst_breach_probability(p_drop: float, n_burst: int, n_messages: int) -> float:
    """Exact P(a run of >= n_burst drops among n_messages i.i.d. Bernoulli(p) drops).

    With q_k = P(no such run in the first k messages): q_k = 1 for k < n, q_n = 1 - p^n,
    and q_k = q_{k-1} - (1 - p) p^n q_{k-n-1} for k > n (the run ending at k starts
    after a delivered message at k - n).
    """
    if n_messages < n_burst or p_drop <= 0.0:
        return 0.0
    if p_drop >= 1.0:
        return 1.0
    pn = p_drop ** n_burst
    q = [1.0] * n_burst + [1.0 - pn]
    for k in range(n_burst + 1, n_messages + 1):
        q.append(q[k - 1] - (1.0 - p_drop) * pn * q[k - n_burst - 1])
    return min(1.0, max(0.0, 1.0 - q[n_messages]))


def _absent_until_s(ctx: _Ctx, i: int) -> float:
    """A window that opens before the first message withholds the stream from the start: until when
    (its start when it withholds nothing for sure)."""
    fault = ctx.spec.faults[i]
    start, end = ctx.windows[i]
    period = _period(fault.stream)
    if start >= period + cat.NOMINAL_LATENCY_S:
        return start
    if fault.operator is FaultOperator.SUPPRESS_SENDER or (
            fault.operator is FaultOperator.DROP and fault.burst_count is None and fault.probability in (None, 1.0)):
        return end
    if fault.operator is FaultOperator.DROP and fault.burst_count is not None:
        return min(end, start + fault.burst_count * period)
    if fault.operator in (FaultOperator.DELAY, FaultOperator.REPLAY):  # replay: nothing that old was sent yet
        return min(end, start + (fault.magnitude or 0.0))
    if fault.operator is FaultOperator.TIMESTAMP_OFFSET and \
            (fault.magnitude or 0.0) + cat.NOMINAL_LATENCY_S > _budget(ctx, fault.stream):
        return end  # the first message already arrives stale
    return start


def _absent_from_start(ctx: _Ctx, i: int) -> bool:
    """Does fault i keep its stream absent from the start until the first decision epoch?"""
    first = ctx.epochs.checks[0] if ctx.epochs.checks is not None else \
        ctx.epochs.approach[0] if ctx.epochs.approach is not None else math.inf
    absent = _absent_until_s(ctx, i)
    return absent > ctx.windows[i][0] and absent + _period(ctx.spec.faults[i].stream) + cat.NOMINAL_LATENCY_S >= first


def _freshness_budget(ctx: _Ctx) -> Iterator[Finding]:
    if ctx.freshness is None:
        ctx.freshness = list(_freshness_findings(ctx))
    yield from ctx.freshness


def _freshness_findings(ctx: _Ctx) -> Iterator[Finding]:
    lat = cat.NOMINAL_LATENCY_S
    for i, fault in enumerate(ctx.spec.faults):
        if fault.stream not in ctx.app.consumes:
            continue
        budget, period = _budget(ctx, fault.stream), _period(fault.stream)
        kind = cat.FAULT_OPERATORS[fault.operator.value].tolerance
        start, end = ctx.windows[i]
        length = max(0.0, end - start)
        n_star = smallest_breaching_burst(budget, period, lat)
        if _absent_from_start(ctx, i):
            continue  # the stream is absent from the start (not stale) until a decision is taken
        if fault.operator is FaultOperator.DROP:
            n_window = math.ceil(length / period - 1e-9)  # the most messages a window this long can hold
            if fault.burst_count is not None:
                n = min(fault.burst_count, n_window)
                if (n + 1) * period + lat <= budget:
                    patch: list[tuple[str, Any]] = [(_f(i, "burst_count"), n_star)]
                    if n_window < n_star:
                        patch.append((_f(i, "duration_s"), round(n_star * period, 3)))
                    yield Finding("freshness_budget", Severity.ERROR,
                                  f"{n} dropped {fault.stream} messages give AoI {(n + 1) * period + lat:.2f} s, "
                                  f"within the {budget} s budget; {n_star} are needed",
                                  (_f(i, "burst_count"), _f(i, "duration_s")),
                                  Repair(f"drop at least {n_star} consecutive messages", tuple(patch)))
            else:
                p = 1.0 if fault.probability is None else fault.probability
                prob = burst_breach_probability(p, n_star, n_window)
                if prob < 0.5:
                    sev = Severity.ERROR if prob < 0.01 else Severity.WARNING
                    min_len = round(n_star * period, 3)
                    patch = [(_f(i, "duration_s"), max(min_len, fault.duration_s or 0.0))] if n_window < n_star else \
                        [(_f(i, "probability"), round(_min_probability(n_star, n_window), 3))]
                    yield Finding("freshness_budget", sev,
                                  f"drop p={p} over {length:.2f} s breaches the {budget} s budget with probability {prob:.3f}",
                                  (_f(i, "probability"), _f(i, "duration_s")),
                                  Repair(f"minimum episode {min_len} s at p=1, or raise p", tuple(patch)))
        elif fault.operator is FaultOperator.REPLAY and fault.magnitude is not None and \
                tolerance.tolerated(kind, ctx.app, fault.stream, min(fault.magnitude, length)):
            # a replayed message is older than the one the receiver holds until lag - T into the window (it keeps
            # the newer one), so a window shorter than the lag is a silence of its length: within the budget it
            # changes nothing (an error, as a short drop burst). A lag within the budget keeps the AoI at
            # lag + T + L, never stale to the budget, but what the ego believes lags the truth by the lag and a
            # plausibility check (an application's freshness bound) sees its age: a warning, not a block
            need = round(tolerance.limit(kind, ctx.app, fault.stream) + 0.05, 3)
            patch = [(_f(i, "magnitude"), max(need, fault.magnitude))]
            if length < need:
                patch.append((_f(i, "duration_s"), round(need + period, 3)))
            repair = Repair("replay from further back than the budget, over a window at least that long", tuple(patch))
            if length < fault.magnitude:
                yield Finding("freshness_budget", Severity.ERROR,
                              f"a {length:.2f} s replay window, shorter than its {fault.magnitude} s lag, only withholds "
                              f"the stream that long (AoI {length + period + lat:.2f} s, within the {budget} s budget): "
                              "nothing replayed is newer than what the receiver holds",
                              (_f(i, "duration_s"), _f(i, "magnitude")), repair)
            else:
                yield Finding("freshness_budget", Severity.WARNING,
                              f"a {fault.magnitude} s replay keeps AoI at {period + lat + fault.magnitude:.2f} s, within "
                              f"the {budget} s budget: the ego acts on {fault.magnitude} s old {fault.stream} content "
                              "that only a plausibility (freshness) check tells",
                              (_f(i, "magnitude"),), repair)
        elif kind == "latency" and fault.magnitude is not None:
            need = tolerance.limit(kind, ctx.app, fault.stream)
            if tolerance.tolerated(kind, ctx.app, fault.stream, fault.magnitude):
                yield Finding("freshness_budget", Severity.ERROR,
                              f"a {fault.magnitude} s {_words(fault)} keeps AoI at {period + lat + fault.magnitude:.2f} s, "
                              f"within {budget} s",
                              (_f(i, "magnitude"),), Repair("delay past the budget", ((_f(i, "magnitude"), round(need + 0.05, 3)),)))
        elif kind == "age" and fault.magnitude is not None:
            need = tolerance.limit(kind, ctx.app, fault.stream)
            if tolerance.tolerated(kind, ctx.app, fault.stream, fault.magnitude):
                yield Finding("freshness_budget", Severity.ERROR,
                              f"a {fault.magnitude} s {_words(fault)} looks fresh under the {budget} s budget",
                              (_f(i, "magnitude"),), Repair("offset past the budget", ((_f(i, "magnitude"), round(need + 0.05, 3)),)))
        elif fault.operator is FaultOperator.SUPPRESS_SENDER and \
                (math.ceil(length / period - 1e-9) + 1) * period + lat <= budget:
            # a window of length D silences at most ceil(D / T) messages: AoI peak (n + 1) T + L
            yield Finding("freshness_budget", Severity.ERROR,
                          f"a {length:.2f} s silence ends before the {budget} s budget is breached",
                          (_f(i, "duration_s"),), Repair("silence for longer", ((_f(i, "duration_s"), round(budget + 0.5, 3)),)))


def _min_probability(n_burst: int, n_messages: int, target: float = 0.5) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        if burst_breach_probability(mid, n_burst, n_messages) >= target:
            hi = mid
        else:
            lo = mid
    return hi

