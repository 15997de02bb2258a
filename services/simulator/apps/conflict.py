"""Conflict applications: FCW, EEBL, IMA, LTA (LAST-V2X Appendix D, Table 6).

All read neighbour tracks (BSM) and EEBL events; information older than the
application's freshness budget is absent, and an absent vehicle cannot be warned
about: the fallback is the nominal controller (the driver's own car-following with its
perception delay) -- the silent case.

* **FCW**: the lead track is the nearest fresh track ahead on the ego route (lateral
  <= 2.5 m, heading within 45 deg). A warning to brake at ``FCW_BRAKE_MPS2`` when TTC =
  bumper gap / closing speed < 2.5 s, or when the deceleration the driver would need after
  reacting to it (:func:`fcw_required_decel_mps2`, the lead's own braking from its BSM
  included) exceeds ``FCW_ALERT_DECEL_MPS2``; held while TTC < ``FCW_RELEASE_TTC_S`` or the
  deceleration needed now exceeds ``FCW_RELEASE_DECEL_MPS2``.
* **EEBL**: a fresh hard-braking event of the EEBL stream (own reception or relayed)
  ahead on the ego route within 300 m -> braking at ``EEBL_BRAKE_MPS2``, held
  ``EEBL_HOLD_S`` after the last such event. The event is read from that stream alone
  (a BSM track's hard-braking flag is the same event: reading both would make every
  fault on the EEBL stream ineffective).
* **IMA**: from the decision epoch (``d <= ds(v)``) until the stop bar is passed: yield
  at the bar while a fresh cross track heading for the conflict point (not one travelling the ego's
  way: its leader or follower) is predicted there
  no later than ``CONFLICT_WINDOW_S`` (8 s) after the ego and not more than
  ``CLEARANCE_S`` before it.
* **LTA**: the same with the 4 s gap acceptance ``LTA_GAP_S`` against opposing tracks.
* A mutual yield (the ego and a track both below ``HELD_MPS`` within ``WAITING_RANGE_M`` of
  the conflict point) is broken by priority to the right (Vienna Convention on Road Traffic,
  1968, Art. 18(4)(a); the US Uniform Vehicle Code § 11-401): the ego keeps yielding to a
  held track on its right and goes before one on its left.

Every BRAKE and YIELD is a warning the driver acts on after its alerted reaction
(``services.simulator.controller.EgoController``; the catalogue's ``REACTION_TIME_S``, 1 s, by
default), so FCW warns on the deceleration needed *after* that reaction, the way deployed
forward-collision warnings time their alerts (Kiefer et al., "Developing an inverse
time-to-collision crash alert timing approach", NHTSA DOT HS 809 868, 2005: a required-
deceleration alert with a driver reaction time): a bare 2.5 s TTC leaves a driver who
reacts in 1 s no room to stop behind a lead braking at 6 m/s^2. IMA/LTA yield at the stop
bar; a yield is not taken once the bar can no longer be reached below ``HARD_STOP_MPS2``.
The decision epoch of FCW/EEBL is their first braking decision.
"""

from __future__ import annotations

import math

from lastv2x.core.catalogue import (
    CONFLICT_WINDOW_S,
    REACTION_TIME_S,
    Application,
    stopping_distance_m,
)
from services.simulator.apps.base import (
    ROUTE_LATERAL_M,
    SAME_DIRECTION_RAD,
    Action,
    AppContext,
    Decision,
    EgoState,
    angle_diff,
    fresh_tracks,
    time_to_reach_s,
)
from services.simulator.info import EgoInformation, Track

FCW_TTC_S = 2.5  # brake below this time to collision [s]
FCW_RELEASE_TTC_S = 4.0  # keep braking until TTC exceeds this [s]
FCW_BRAKE_MPS2 = 6.0  # the braking a warning asks of the driver [m/s2]
FCW_ALERT_DECEL_MPS2 = 4.0  # warn when the driver, reacting in REACTION_TIME_S, would need more [m/s2] (~0.4 g)
FCW_RELEASE_DECEL_MPS2 = 1.0  # keep warning while braking now would need more than this [m/s2]
FCW_STANDSTILL_M = 2.0  # the gap the required deceleration keeps to the lead [m]
LEAD_BRAKING_MPS2 = 0.5  # a lead decelerating harder than this is taken to brake to a stop [m/s2]
FCW_RANGE_M = 150.0  # lead search range [m]
EEBL_RANGE_M = 300.0  # events farther ahead are ignored [m]
EEBL_BRAKE_MPS2 = 5.0  # braking on an event ahead [m/s2]
EEBL_HOLD_S = 1.0  # keep braking this long after the last event [s]
LTA_GAP_S = 4.0  # gap acceptance of a left turn [s]
CLEARANCE_S = 2.0  # a track due this long before the ego has cleared the point [s]
HARD_STOP_MPS2 = 8.0  # beyond this demand the ego can no longer stop at the bar: commit
HELD_MPS = 3.0  # a vehicle slower than this near its bar is held there (in a mutual yield) [m/s]
WAITING_RANGE_M = 30.0  # a held track this close to the conflict point waits for it [m]


def _route_s_ahead(ctx: AppContext, ego: EgoState, cos_h: float, sin_h: float, x: float, y: float,
                   horizon_m: float) -> float | None:
    """Arc length of the point ``(x, y)`` on the ego route when it lies ahead of the ego within
    ``horizon_m`` and at most 2.5 m from the route; else None. ``cos_h, sin_h``: of the ego heading."""
    ex, ey = ego.xy_m
    along = (x - ex) * cos_h + (y - ey) * sin_h
    if along <= -ROUTE_LATERAL_M or math.hypot(x - ex, y - ey) > horizon_m + ROUTE_LATERAL_M:
        return None
    s, lat = ctx.locate(x, y, ego.s_m + along)
    return s if lat <= ROUTE_LATERAL_M and ego.s_m < s <= ego.s_m + horizon_m else None


def _ahead(ctx: AppContext, ego: EgoState, points: list[tuple[float, float]], horizon_m: float
           ) -> list[tuple[int, float]]:
    """(index, arc length) of the points ahead of the ego on its route within ``horizon_m``."""
    ch, sh = math.cos(ego.heading_rad), math.sin(ego.heading_rad)
    out = []
    for k, (x, y) in enumerate(points):
        s = _route_s_ahead(ctx, ego, ch, sh, x, y, horizon_m)
        if s is not None:
            out.append((k, s))
    return out


def _standing(prev: Decision | None, app: Application, reason: str) -> Decision | None:
    """``prev`` when it is ``app``'s PROCEED for ``reason`` and no epoch: it stands (a decision's ``t_s``
    is when it was taken). Every PROCEED of one reason here is built by one call whose other fields do
    not change while that reason holds, so the reused decision equals the one that would be built."""
    if prev is not None and prev.action is Action.PROCEED and prev.app is app and prev.reason == reason \
            and not prev.epoch:
        return prev
    return None


def _proceed(app: Application, ego: EgoState, prev: Decision | None, reason: str, valid: bool = True) -> Decision:
    return _standing(prev, app, reason) or Decision(app, Action.PROCEED, ego.t_s, reason,
                                                    after_epoch=prev.after_epoch if prev else False,
                                                    info_valid=valid)


def fcw_required_decel_mps2(gap_m: float, ego_speed_mps: float, lead_speed_mps: float, lead_accel_mps2: float,
                            reaction_s: float) -> float:
    """The constant deceleration, m/s^2, an ego that keeps its speed for ``reaction_s`` and then brakes needs to
    stay ``FCW_STANDSTILL_M`` behind its lead; inf when no braking can. A lead decelerating harder than
    ``LEAD_BRAKING_MPS2`` is taken to brake to a stop at that rate (room: the gap plus its stopping
    distance); otherwise it keeps its speed (the ego sheds the closing speed)."""
    room = gap_m - FCW_STANDSTILL_M
    v = ego_speed_mps
    if lead_accel_mps2 < -LEAD_BRAKING_MPS2:
        room += max(lead_speed_mps, 0.0) ** 2 / (-2.0 * lead_accel_mps2)
    else:
        v = ego_speed_mps - lead_speed_mps
    if v <= 0.0:
        return 0.0
    room -= v * reaction_s
    return math.inf if room <= 0.0 else v * v / (2.0 * room)


def fcw(info: EgoInformation, ego: EgoState, ctx: AppContext, prev: Decision | None) -> Decision:
    app = Application.FCW
    budget = ctx.trusted_age_s  # the budget, or the plausibility bound
    eh = ego.heading_rad
    ch, sh = math.cos(eh), math.sin(eh)
    fresh = 0
    best: tuple[float, float, Track] | None = None
    for tr in info.tracks.values():  # the lead: the nearest fresh track ahead, travelling our way
        if not tr.valid or tr.aoi_s > budget:
            continue
        fresh += 1
        dh = angle_diff(tr.heading_rad, eh)
        if dh > SAME_DIRECTION_RAD:
            continue
        s = _route_s_ahead(ctx, ego, ch, sh, tr.xy_m[0], tr.xy_m[1], FCW_RANGE_M)
        if s is None:
            continue
        gap = s - ego.s_m - ctx.ego_length_m
        closing = ego.speed_mps - tr.speed_mps * math.cos(dh)
        ttc = 0.0 if gap <= 0.0 else (gap / closing if closing > 1e-6 else math.inf)
        if best is None or gap < best[0]:
            best = (gap, ttc, tr)
    braking = prev is not None and prev.action is Action.BRAKE
    if best is not None:
        gap, ttc, tr = best
        lead_v, lead_a = tr.speed_mps * math.cos(angle_diff(tr.heading_rad, eh)), tr.accel_mps2
        if ttc < (FCW_RELEASE_TTC_S if braking else FCW_TTC_S):
            why = "lead track below the TTC threshold"
        elif braking and fcw_required_decel_mps2(gap, ego.speed_mps, lead_v, lead_a, 0.0) > FCW_RELEASE_DECEL_MPS2:
            why = "stopping behind the lead track still needs braking"
        elif not braking and fcw_required_decel_mps2(
                gap, ego.speed_mps, lead_v, lead_a, REACTION_TIME_S) > FCW_ALERT_DECEL_MPS2:
            why = "stopping behind the lead track after a reaction needs hard braking"
        else:
            why = ""
        if why:
            return Decision(app, Action.BRAKE, ego.t_s, why,
                            brake_mps2=FCW_BRAKE_MPS2, epoch=not (prev and prev.after_epoch), after_epoch=True,
                            aoi_s=tr.aoi_s, evidence_t_s=ego.t_s)
    if not fresh:
        return _proceed(app, ego, prev, "no fresh lead track", valid=False)
    return _proceed(app, ego, prev, "no lead track" if best is None else "lead track at a safe TTC")


def eebl(info: EgoInformation, ego: EgoState, ctx: AppContext, prev: Decision | None) -> Decision:
    app = Application.EEBL
    budget = ctx.trusted_age_s  # the budget, or the plausibility bound
    pts: list[tuple[float, float]] = []
    aoi: list[float] = []
    for e in info.eebl_events:
        if e.valid and e.aoi_s <= budget:
            pts.append(e.xy_m)
            aoi.append(e.aoi_s)
    braking = prev is not None and prev.action is Action.BRAKE
    if pts:
        hits = _ahead(ctx, ego, pts, EEBL_RANGE_M)
        if hits:
            a = min(aoi[k] for k, _s in hits)
            return Decision(app, Action.BRAKE, ego.t_s, "hard-braking event ahead", brake_mps2=EEBL_BRAKE_MPS2,
                            epoch=not (prev and prev.after_epoch), after_epoch=True, aoi_s=a,
                            evidence_t_s=ego.t_s)
    if prev is not None and braking and ego.t_s - (prev.evidence_t_s or prev.t_s) < EEBL_HOLD_S:
        return prev.at(ego.t_s)
    return _proceed(app, ego, prev, "no hard-braking event ahead")


def _conflict_app(app: Application, window_s: float, info: EgoInformation, ego: EgoState, ctx: AppContext,
                  prev: Decision | None) -> Decision:
    t = ego.t_s
    d = ego.stop_bar_distance_m
    if ctx.conflict_xy_m is None or ego.conflict_distance_m is None or math.isinf(d):
        return _standing(prev, app, "no conflict ahead") or Decision(
            app, Action.PROCEED, t, "no conflict ahead", after_epoch=True, committed=True)
    after = prev is not None and prev.after_epoch
    epoch = not after and d <= stopping_distance_m(ego.speed_mps)
    if not (after or epoch):
        return _standing(prev, app, "before the decision epoch") or Decision(
            app, Action.PROCEED, t, "before the decision epoch")
    if prev is not None and prev.committed:
        return prev if not prev.epoch else prev.at(t)
    v = ego.speed_mps
    yielding = prev is not None and prev.action is Action.YIELD
    if not yielding and v * v / (2.0 * max(d, 0.01)) > HARD_STOP_MPS2:
        return Decision(app, Action.PROCEED, t, "too close to stop: committed", epoch=epoch, after_epoch=True,
                        committed=True)
    t_ego = time_to_reach_s(ego.conflict_distance_m, v)
    cx, cy = ctx.conflict_xy_m
    # both held at their bars (a mutual yield): priority to the right breaks the tie, or each would see the
    # other stopped, go together, and be warned again too late for a driver to react
    waiting = v < HELD_MPS and ego.conflict_distance_m <= WAITING_RANGE_M
    if waiting:
        (ex, ey), ech, esh = ego.xy_m, math.cos(ego.heading_rad), math.sin(ego.heading_rad)
    threat: tuple[float, Track] | None = None
    for tr in fresh_tracks(info, ctx):
        dx, dy = cx - tr.xy_m[0], cy - tr.xy_m[1]
        ch, sh = math.cos(tr.heading_rad), math.sin(tr.heading_rad)
        along = dx * ch + dy * sh
        across = abs(-dx * sh + dy * ch)
        if across > ROUTE_LATERAL_M or along < 0.0:
            continue  # not heading for the conflict point, or its centre is past it
        if abs(angle_diff(tr.heading_rad, ego.heading_rad)) < SAME_DIRECTION_RAD:
            continue  # the ego's own stream (its leader, its follower) crosses nothing: car-following, not a yield
        if waiting and tr.speed_mps < HELD_MPS and along <= WAITING_RANGE_M:
            if (tr.xy_m[0] - ex) * esh - (tr.xy_m[1] - ey) * ech > 0.0:  # it waits on our right: it goes first
                threat = (0.0, tr)
            continue
        t_tr = max(along, 0.0) / max(tr.speed_mps, 0.1)
        if t_tr <= t_ego + window_s and t_tr + CLEARANCE_S >= t_ego and (threat is None or t_tr < threat[0]):
            threat = (t_tr, tr)
    if threat is not None:
        return Decision(app, Action.YIELD, t, "track due at the conflict point", epoch=epoch, after_epoch=True,
                        aoi_s=threat[1].aoi_s, evidence_t_s=t)
    return (None if epoch else _standing(prev, app, "conflict point clear")) or Decision(
        app, Action.PROCEED, t, "conflict point clear", epoch=epoch, after_epoch=True)


def ima(info: EgoInformation, ego: EgoState, ctx: AppContext, prev: Decision | None) -> Decision:
    return _conflict_app(Application.IMA, CONFLICT_WINDOW_S, info, ego, ctx, prev)


def lta(info: EgoInformation, ego: EgoState, ctx: AppContext, prev: Decision | None) -> Decision:
    return _conflict_app(Application.LTA, LTA_GAP_S, info, ego, ctx, prev)


__all__ = ["CLEARANCE_S", "EEBL_BRAKE_MPS2", "EEBL_HOLD_S", "EEBL_RANGE_M", "FCW_ALERT_DECEL_MPS2", "FCW_BRAKE_MPS2",
           "FCW_RELEASE_DECEL_MPS2", "FCW_RELEASE_TTC_S", "fcw_required_decel_mps2",
           "FCW_TTC_S", "LTA_GAP_S", "eebl", "fcw", "ima", "lta"]
