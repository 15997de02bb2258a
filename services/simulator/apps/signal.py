"""Signal applications: RLVW and GLOSA (LAST-V2X Appendix D, Table 6).

Decision epoch: the first step with ``d <= ds(v) = v t_r + v^2 / (2a)`` (a = 3.5 m/s^2,
t_r = 1.0 s; ``lastv2x.core.catalogue.stopping_distance_m``), ``d`` the front bumper's
distance to the stop bar. At the epoch: **stop** if the believed phase is red, or amber and
the stop bar cannot be reached (``d / v``) before the believed end of amber; else
**proceed**. The decision latches until the ego has passed that stop bar; the next signalized
stop bar on its route gets a decision epoch of its own (a corridor is decided junction by
junction). A latched stop is released only by a fresh believed green once the ego has stopped
(absent information keeps it holding: the conservative choice once the driver has been told to
stop).

Fallback (no fresh SPaT for the associated group at the epoch, or no association): the
driver proceeds on the nominal controller; that is the *silent* failure class (the
application cannot warn about what it does not know). The decision records
``info_valid = False`` (plausibility option: ``apps.base``, a SPaT older than its bound stops).

GLOSA before the epoch advises the speed in ``[GLOSA_MIN_SPEED_MPS, v_desired]`` that
reaches the stop bar ``GLOSA_MARGIN_S`` after the believed next green onset (red: the
countdown; amber/green-too-late: ``time_to_green_s`` when the source knows it); at the
epoch it applies the RLVW rule, except that a red believed to end at least
``GLOSA_RED_END_MARGIN_S`` before the ego reaches the bar is driven through (arriving on
the coming green is the advisory's purpose). An advisory stands while SPaT is absent or stale
until the ego reaches the stop bar it was made for or fresh SPaT returns: the green onset it
aimed at is a prediction, not a message that ages (a corridor's RSUs cover only their junctions;
one that relays the next junction's SPaT and MAP lets the ego plan across the gap). Stops are
counted by the adjudicator.
"""

from __future__ import annotations

import math
from dataclasses import replace

from lastv2x.core.catalogue import Application, stopping_distance_m
from services.simulator.apps.base import Action, AppContext, Decision, EgoState, fresh_signal
from services.simulator.info import PHASE_AMBER, PHASE_GREEN, PHASE_RED, EgoInformation

GLOSA_MIN_SPEED_MPS = 5.0  # slowest advisory [m/s]
GLOSA_MARGIN_S = 1.0  # arrive this long after the green onset [s]
GLOSA_RED_END_MARGIN_S = 0.5  # at the epoch, proceed on a red believed to end this long before arrival [s]
STOPPED_MPS = 0.5  # "has stopped" [m/s]
NEW_BAR_M = 1.0  # a stop bar this far from the one a latched decision is about is another junction's [m]


def _bar_s_m(ego: EgoState) -> float:
    """Where the front bumper is at the next stop bar, as a route arc length (identifies the bar)."""
    return ego.s_m + ego.stop_bar_distance_m


def _epoch_rule(app: Application, info: EgoInformation, ego: EgoState, ctx: AppContext) -> Decision:
    sig = fresh_signal(info, ctx)
    t = ego.t_s
    bar = _bar_s_m(ego)
    if sig is None:
        return Decision(app, Action.PROCEED, t, "no fresh SPaT: nominal controller", epoch=True, after_epoch=True,
                        committed=True, info_valid=False, bar_s_m=bar)
    d, v = ego.stop_bar_distance_m, max(ego.speed_mps, 0.1)
    if sig.phase == PHASE_RED:
        return Decision(app, Action.STOP, t, "believed red at the decision epoch", epoch=True, after_epoch=True,
                        committed=True, aoi_s=sig.aoi_s, bar_s_m=bar)
    if sig.phase == PHASE_AMBER and d / v >= sig.time_to_change_s:
        return Decision(app, Action.STOP, t, "believed amber ends before the stop bar", epoch=True,
                        after_epoch=True, committed=True, aoi_s=sig.aoi_s, bar_s_m=bar)
    why = "believed green" if sig.phase == PHASE_GREEN else "believed amber, clears before red"
    return Decision(app, Action.PROCEED, t, why, epoch=True, after_epoch=True, committed=True, aoi_s=sig.aoi_s,
                    bar_s_m=bar)


def _latched(app: Application, info: EgoInformation, ego: EgoState, ctx: AppContext, prev: Decision) -> Decision:
    stopped = ego.speed_mps < STOPPED_MPS  # RLVW's stop is released at a standstill; GLOSA's whenever green shows
    if prev.action is Action.STOP and (stopped or app is Application.GLOSA):
        sig = fresh_signal(info, ctx)
        if sig is not None and sig.phase == PHASE_GREEN:
            return Decision(app, Action.PROCEED, ego.t_s, f"believed green {'after' if stopped else 'before'} the stop",
                            after_epoch=True, committed=True, aoi_s=sig.aoi_s, bar_s_m=prev.bar_s_m)
    return prev if not prev.epoch else prev.at(ego.t_s)


def _signal_decide(app: Application, info: EgoInformation, ego: EgoState, ctx: AppContext,
                   prev: Decision | None) -> Decision | None:
    """The shared part: past the bar / latched / epoch; None = before the epoch.

    A junction no RSU covers gets no SPaT at all, so its epoch takes the fallback: silent by
    absence, never a decision on another junction's signal. Each epoch records ``known_ahead``,
    how many signalized junctions still ahead on the route (the one decided included) the ego
    holds fresh SPaT for (``AppContext.junctions_known_ahead``; None when the context does not
    list the route's crossings)."""
    if math.isinf(ego.stop_bar_distance_m):
        if prev is not None and prev.action is Action.PROCEED and prev.reason == "no stop bar ahead":
            return prev
        return Decision(app, Action.PROCEED, ego.t_s, "no stop bar ahead", after_epoch=True, committed=True)
    if prev is not None and prev.committed:
        if prev.bar_s_m is None or abs(_bar_s_m(ego) - prev.bar_s_m) <= NEW_BAR_M:
            return _latched(app, info, ego, ctx, prev)
        # that bar is behind the ego: the next junction is decided afresh
    if ego.stop_bar_distance_m <= stopping_distance_m(ego.speed_mps):
        dec = _epoch_rule(app, info, ego, ctx)
        if not dec.info_valid and ctx.plausible_age_s is not None:
            old = ctx.implausible_signal(info)
            if old is not None:  # the plausibility option: a SPaT older than its bound (or from the future) stops
                why = "stamped in the future" if old.aoi_s < 0.0 else "older than the plausibility bound"
                dec = replace(dec, action=Action.STOP, reason=f"SPaT {why}: stop", aoi_s=old.aoi_s)
        return replace(dec, known_ahead=ctx.junctions_known_ahead(info, ego))
    return None


def rlvw(info: EgoInformation, ego: EgoState, ctx: AppContext, prev: Decision | None) -> Decision:
    out = _signal_decide(Application.RLVW, info, ego, ctx, prev)
    if out is not None:
        return out
    if prev is not None and prev.reason == "before the decision epoch":
        return prev
    return Decision(Application.RLVW, Action.PROCEED, ego.t_s, "before the decision epoch")


def glosa(info: EgoInformation, ego: EgoState, ctx: AppContext, prev: Decision | None) -> Decision:
    app = Application.GLOSA
    out = _signal_decide(app, info, ego, ctx, prev)
    if out is not None:
        if out.epoch and out.action is Action.STOP and out.reason.startswith("believed red"):
            sig = fresh_signal(info, ctx)  # the advisory's point: a red that ends before arrival
            d, v = ego.stop_bar_distance_m, max(ego.speed_mps, 0.1)
            if sig is not None and sig.time_to_change_s + GLOSA_RED_END_MARGIN_S <= d / v:
                return replace(out, action=Action.PROCEED, reason="believed red ends before the stop bar")
        return out
    sig = fresh_signal(info, ctx)
    v_max = ctx.desired_speed_mps
    bar = _bar_s_m(ego)
    if sig is None:
        if prev is not None and prev.action is Action.ADVISE and prev.bar_s_m is not None and abs(
                prev.bar_s_m - bar) < NEW_BAR_M:  # between RSUs: the timing it advised on still predicts this bar
            return prev.at(ego.t_s)
        return Decision(app, Action.PROCEED, ego.t_s, "no fresh SPaT: no advisory", info_valid=False)
    d = ego.stop_bar_distance_m
    t_green: float | None
    if sig.phase == PHASE_GREEN and d / v_max < sig.time_to_change_s:
        return Decision(app, Action.ADVISE, ego.t_s, "arrive on this green", target_speed_mps=v_max,
                        aoi_s=sig.aoi_s, bar_s_m=bar)
    if sig.phase == PHASE_RED:
        t_green = sig.time_to_change_s
    else:
        t_green = sig.time_to_green_s
    if t_green is None:
        return Decision(app, Action.PROCEED, ego.t_s, "next green unknown: no advisory", aoi_s=sig.aoi_s)
    v = d / (t_green + GLOSA_MARGIN_S)
    target = min(max(v, GLOSA_MIN_SPEED_MPS), v_max)
    return Decision(app, Action.ADVISE, ego.t_s, "arrive on the next green", target_speed_mps=round(target, 6),
                    aoi_s=sig.aoi_s, bar_s_m=bar)


__all__ = ["GLOSA_MARGIN_S", "GLOSA_MIN_SPEED_MPS", "glosa", "rlvw"]
