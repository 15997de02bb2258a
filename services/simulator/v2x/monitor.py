"""Divergence monitor (LAST-V2X Appendix D/E): when was the ego's belief wrong?

Every step :meth:`DivergenceMonitor.observe` compares the ego's belief
(:class:`~services.simulator.info.EgoInformation`) with the ground truth
(:class:`~services.simulator.info.WorldSnapshot`). Divergence conditions (the
paper's three; each raises the divergence-only alarm):

``signal_phase``
    the believed phase of the group the ego uses (its MAP association) differs from
    the true phase of the group truly controlling the ego's next stop bar. A belief
    that equals the phase the true group showed less than ``grace_s`` ago is the
    ordinary reporting lag (one SPaT period + latency), not a divergence.
``countdown``
    phases agree but ``|believed countdown - true time to change| >
    COUNTDOWN_DIVERGENCE_S`` (1.0 s; exactly 1.0 s is not a divergence).
``track_displaced``
    a track of a live vehicle is farther from the vehicle than its age-adjusted
    position budget ``POSITION_BUDGET_BASE_M + POSITION_BUDGET_PER_S_M * AoI``.
``ghost_track``
    a track for a vehicle that no longer exists, ``STALE_TRACK_TIMEOUT_S`` (2.0 s)
    after it vanished.

Absences (``signal_missing``: no usable SPaT/MAP belief for the ego's group;
``track_missing``: a live vehicle within ``absence_radius_m`` of the ego without a
track) are recorded as episodes too -- they are the evidence of silent-by-absence
failures -- but raise no alarm: the paper's monitor does not flag them.

:meth:`report` turns the episodes into the Appendix E quantities against the
application's decision records: the hazard slack of every episode against the next
decision epoch (``t_decision - t_end``; negative = the decision was taken while the
belief was wrong, None = no decision after the episode began), the AoI at every
decision epoch, the failure margin (signal apps: smallest non-negative slack;
conflict apps: minimum ego-agent centre distance, FCW/EEBL counting only vehicles
ahead; ``LARGE_MARGIN`` = 1e6 otherwise), the divergence-only alarm flag and a
failure-class label (:func:`classify_failure`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lastv2x.core.catalogue import (
    APPLICATIONS,
    COUNTDOWN_DIVERGENCE_S,
    FAULT_OPERATORS,
    LARGE_MARGIN,
    POSITION_BUDGET_BASE_M,
    POSITION_BUDGET_PER_S_M,
    ROUTE_LATERAL_BAND_M,
    STALE_TRACK_TIMEOUT_S,
    AppKind,
    Application,
    FailureClass,
    Stream,
)
from services.simulator.info import (
    PHASE_NAME,
    PHASE_UNKNOWN,
    DecisionRecord,
    DivergenceEpisode,
    EgoInformation,
    MonitorReport,
    WorldSnapshot,
)

from .reconstruction import freshness_budget_s

ALARM_KINDS = ("signal_phase", "countdown", "track_displaced", "ghost_track")
SIGNAL_KINDS = ("signal_phase", "countdown")
TRACK_KINDS = ("track_displaced", "ghost_track")
ABSENCE_KINDS = ("signal_missing", "track_missing")
DEFAULT_GRACE_S = 0.3  # SPaT period + latency + one step: the ordinary reporting lag
LATERAL_CONFLICT_M = ROUTE_LATERAL_BAND_M  # conflicts ignore traffic farther than this from the ego path
ABSENCE_MIN_S = 0.3  # absences shorter than this (start-up, one lost message) are not evidence
_np_hypot = np.hypot
_BAND = 1e-9  # relative guard band of squared-distance decisions
_TINY_M2 = 1e-290  # squared lengths below this (near the subnormals) are not compared on squares


def _below(dx: float, dy: float, limit: float, limit2: float) -> tuple[bool, float | None]:
    """``np.hypot(dx, dy) < limit`` without the hypot where the squared length decides it (outside the
    relative guard band ``_BAND``). Returns (below, the exact hypot when it was computed)."""
    q = dx * dx + dy * dy
    if q < limit2 * (1.0 - _BAND):
        return True, None
    if q > limit2 * (1.0 + _BAND):
        return False, None
    h = float(_np_hypot(dx, dy))
    return h < limit, h


def _nearer(rx: float, ry: float, q: float, bx: float, by: float, bq: float) -> bool:
    """``np.hypot(rx, ry) < np.hypot(bx, by)`` for offsets with squared lengths ``q`` and ``bq``: decided on
    the squares outside the relative guard band ``_BAND`` (when both are normal numbers: a subnormal
    square has lost its relative precision), on the two hypots inside it (and for NaN / inf)."""
    if q > _TINY_M2 and bq > _TINY_M2:
        if q < bq * (1.0 - _BAND):
            return True
        if q > bq * (1.0 + _BAND):
            return False
    return bool(_np_hypot(rx, ry) < _np_hypot(bx, by))


def position_budget_m(aoi_s: float | np.ndarray) -> float | np.ndarray:
    """Age-adjusted position budget of a track: base + per-second growth x AoI."""
    return POSITION_BUDGET_BASE_M + POSITION_BUDGET_PER_S_M * np.maximum(aoi_s, 0.0)


def position_divergent(displacement_m: float, aoi_s: float) -> bool:
    return bool(displacement_m > position_budget_m(aoi_s))


def countdown_divergent(believed_s: float, true_s: float) -> bool:
    return abs(float(believed_s) - float(true_s)) > COUNTDOWN_DIVERGENCE_S


@dataclass
class _Open:
    start_s: float
    max_error: float
    detail: str
    last_s: float


@dataclass(frozen=True)
class EpisodeSlack:
    kind: str
    subject: str
    start_s: float
    end_s: float
    decision_s: float | None
    slack_s: float | None  # decision - end; negative = decided while wrong

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class DecisionAoI:
    t_s: float
    action: str
    spat_aoi_s: float | None
    map_aoi_s: float | None
    bsm_aoi_s: float | None  # of the nearest qualifying agent's track (None: no track)
    spat_valid: bool | None
    believed_phase: str | None
    true_phase: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class MonitorSummary:
    episodes: list[DivergenceEpisode]
    slacks: list[EpisodeSlack]
    aoi_at_decisions: list[DecisionAoI]
    failure_margin: float
    divergence_alarm: bool
    failure_class: FailureClass | None
    min_distance_m: float | None
    critical_agent: str | None
    critical_t_s: float | None
    faults: list[dict[str, Any]] = field(default_factory=list)

    @property
    def alarms(self) -> int:
        return sum(1 for e in self.episodes if e.kind in ALARM_KINDS)

    def to_report(self) -> MonitorReport:
        extra = {
            "hazard_slack": [s.to_dict() for s in self.slacks],
            "aoi_at_decisions": [d.to_dict() for d in self.aoi_at_decisions],
            "failure_margin": self.failure_margin,
            "divergence_alarm": self.divergence_alarm,
            "failure_class": None if self.failure_class is None else str(self.failure_class),
            "min_distance_m": self.min_distance_m,
            "critical_agent": self.critical_agent,
            "critical_t_s": self.critical_t_s,
            "faults": self.faults,
        }
        return MonitorReport(tuple(self.episodes), self.alarms, extra)


# The divergence-only baseline (LAST-V2X §3.6, issue 37 item 5): the alarm a monitor without paired execution raises,
# judged on its own threshold, apart from the episodes (any divergence) that the paired verdict reads.
ALARM_MIN_S = 1.0  # a belief error must last this long to alarm: ten SPaT periods / BSM intervals at 10 Hz [s]


def divergence_only_alarm(episodes: Sequence[DivergenceEpisode], end_t_s: float, min_s: float = ALARM_MIN_S) -> bool:
    """Whether the divergence-only baseline alarms on a rollout: a belief error of an alarm kind (a wrong phase, a
    countdown off by more than ``COUNTDOWN_DIVERGENCE_S``, a track beyond its position budget, a ghost track: the
    monitor's bounds) that lasts at least ``min_s`` (an episode still open at the end lasts to ``end_t_s``)."""
    return any(e.kind in ALARM_KINDS and (end_t_s if e.end_s is None else e.end_s) - e.start_s >= min_s - 1e-9
               for e in episodes)


class DivergenceMonitor:
    """Compares belief with truth each step; reports episodes, slack, margin and class."""

    def __init__(self, app: Application | str | None, *, grace_s: float = DEFAULT_GRACE_S,
                 absence_radius_m: float = 150.0, agent_ids: Sequence[str] | None = None):
        self.app = Application(app) if app is not None else None
        info = APPLICATIONS[self.app] if self.app is not None else None
        self.kind = info.kind if info is not None else AppKind.SIGNAL
        self.budget_s = {s: freshness_budget_s(self.app, s) for s in Stream}
        self.grace_s = float(grace_s)
        self.absence_radius_m = float(absence_radius_m)
        self._radius2_m2 = self.absence_radius_m * self.absence_radius_m  # for the squared-length decisions
        self.agent_ids = None if agent_ids is None else frozenset(agent_ids)
        self._ahead_only = self.app is not None and APPLICATIONS[self.app].ahead_only  # conflicts ahead of the ego only (the catalogue's)
        self._open: dict[tuple[str, str], _Open] = {}
        self._episodes: list[DivergenceEpisode] = []
        self._phase_prev: dict[str, tuple[int, int, float]] = {}  # group -> (phase, prev phase, change t)
        self._last_alive: dict[str, float] = {}
        self._t_last = 0.0
        # per-step evidence
        self._t: list[float] = []
        self._spat_aoi: list[float] = []
        self._spat_valid: list[bool | None] = []
        self._map_aoi: list[float] = []
        self._bel_phase: list[int] = []
        self._true_phase: list[int] = []
        self._near_id: list[str | None] = []
        self._near_dx: list[float] = []  # offset of the nearest agent from the ego (inf, 0: none), see summary()
        self._near_dy: list[float] = []
        self._near_aoi: list[float] = []  # nan = no track

    # ------------------------------------------------------------------ per step
    def _flag(self, kind: str, subject: str, t: float, on: bool, error: float = 0.0, detail: str = "",
              since: float | None = None) -> None:
        key = (kind, subject)
        ep = self._open.get(key)
        if on:
            if ep is None:
                self._open[key] = _Open(t if since is None else min(since, t), error, detail, t)
            else:
                ep.max_error = max(ep.max_error, error)
                ep.last_s = t
                if detail and detail not in ep.detail:
                    ep.detail = f"{ep.detail},{detail}" if ep.detail else detail
        elif ep is not None:
            self._close(key, t)

    def _close(self, key: tuple[str, str], t_end: float | None) -> None:
        ep = self._open.pop(key)
        self._episodes.append(DivergenceEpisode(key[0], key[1], ep.start_s, t_end, ep.max_error, ep.detail))

    def observe(self, snap: WorldSnapshot, info: EgoInformation) -> None:
        t = float(snap.t_s)
        self._t_last = t
        self._observe_signal(snap, info, t)
        self._observe_tracks(snap, info, t)

    def _observe_signal(self, snap: WorldSnapshot, info: EgoInformation, t: float) -> None:
        gid = snap.ego_group_id
        true_code = PHASE_UNKNOWN
        bel_code = PHASE_UNKNOWN
        spat_aoi = math.nan
        valid: bool | None = None
        if gid is not None:
            gi = snap.group_index(gid)
            true_code = int(snap.true_phase.item(gi))  # item(): a Python number without a numpy scalar
            true_ttc = float(snap.time_to_change_s.item(gi))
            prev = self._phase_prev.get(gid)
            if prev is None:
                self._phase_prev[gid] = (true_code, true_code, -math.inf)
            elif prev[0] != true_code:
                self._phase_prev[gid] = (true_code, prev[0], t)
            cur, before, changed = self._phase_prev[gid]
            bel = info.ego_signal()
            # (an episode is switched off only where one is open: the off calls are skipped while none is)
            if bel is None or bel.phase == PHASE_UNKNOWN:
                self._flag("signal_missing", gid, t, True, 0.0,
                           "no_map" if info.ego_group_id is None else "no_spat")
                self._flag("signal_phase", gid, t, False)
                self._flag("countdown", gid, t, False)
            else:
                if self._open:
                    self._flag("signal_missing", gid, t, False)
                bel_code = int(bel.phase)
                spat_aoi = float(bel.aoi_s)
                valid = bool(bel.valid)
                detail = []
                if info.ego_group_id != gid:
                    detail.append(f"misassociated:{info.ego_group_id}")
                if not bel.valid:
                    detail.append("stale")
                lag = bel_code == before and t - changed <= self.grace_s
                wrong = bel_code != true_code and not lag
                # a belief stuck on the previous phase has been wrong since the true change
                since = changed if bel_code == before and math.isfinite(changed) else None
                if wrong or self._open:
                    self._flag("signal_phase", gid, t, wrong, 1.0, ",".join(detail), since)
                err = abs(float(bel.time_to_change_s) - true_ttc)
                off = wrong or bel_code != true_code or not countdown_divergent(bel.time_to_change_s, true_ttc)
                if not off or self._open:
                    self._flag("countdown", gid, t, not off, err, ",".join(detail))
        elif self._open:  # no group ahead (most steps of a conflict app): close the signal episodes, if any
            for key in [k for k in self._open if k[0] in ("signal_phase", "countdown", "signal_missing")]:
                self._close(key, t)
        self._spat_aoi.append(spat_aoi)
        self._spat_valid.append(valid)
        self._map_aoi.append(float(info.map_aoi_s) if info.ego_group_id is not None else math.nan)
        self._bel_phase.append(bel_code)
        self._true_phase.append(true_code)
        self._t.append(t)

    def _observe_tracks(self, snap: WorldSnapshot, info: EgoInformation, t: float) -> None:
        # plain floats for the per-vehicle logic (one tolist per array instead of numpy scalar reads); np.hypot
        # (not math.hypot: other bits) for the distances kept and compared, see below
        ids = snap.vehicle_ids
        alive = snap.alive.tolist()
        ego = snap.ego_index
        xy = snap.xy_m.ravel().tolist()
        xs, ys = xy[0::2], xy[1::2]
        index: dict[str, int] = {}  # the live vehicles' rows
        last_alive = self._last_alive
        for r, vid in enumerate(ids):  # (a loop, not a comprehension and a second loop: 1-3 vehicles a row)
            if alive[r]:
                index[vid] = r
                last_alive[vid] = t
        flag = self._flag
        tracks = info.tracks
        for vid, tr in tracks.items():
            i = index.get(vid)
            if i is None:
                gone_at = last_alive.setdefault(vid, t)
                flag("track_displaced", vid, t, False)
                flag("ghost_track", vid, t, t - gone_at > STALE_TRACK_TIMEOUT_S, t - gone_at)
                continue
            d = math.hypot(tr.xy_m[0] - xs[i], tr.xy_m[1] - ys[i])
            aoi = tr.aoi_s
            budget = POSITION_BUDGET_BASE_M + POSITION_BUDGET_PER_S_M * (aoi if (aoi > 0.0 or aoi != aoi) else 0.0)
            displaced = bool(d > budget)
            if displaced or self._open:  # (switching off only where an episode may be open)
                flag("track_displaced", vid, t, displaced, d)
                flag("ghost_track", vid, t, False)
        if self._open:
            for kind, vid in [k for k in self._open if k[0] in TRACK_KINDS and k[1] not in tracks]:
                self._close((kind, vid), t)
        # absences and the nearest qualifying agent (the first smallest distance): decided on squared lengths
        # with the scalar engine's guard band, np.hypot only inside it; the nearest distance is kept as its
        # offset (rx, ry) and turned into np.hypot's bits in summary(), one call for the whole run
        ex, ey = xs[ego], ys[ego]
        agent_ids = self.agent_ids
        if self._ahead_only:
            h = float(snap.heading_rad.item(ego))
            ch, sh = math.cos(h), math.sin(h)
        radius, radius2 = self.absence_radius_m, self._radius2_m2
        near_set: set[str] = set()
        j, bx, by, bq = -1, math.inf, 0.0, math.inf
        for i, vid in enumerate(ids):
            if i == ego or not alive[i]:
                continue
            rx, ry = xs[i] - ex, ys[i] - ey
            below, exact_d = _below(rx, ry, radius, radius2)  # d <= radius: below, or d computed and == radius
            if below or (exact_d is not None and exact_d <= radius):
                near_set.add(vid)
            if agent_ids is not None and vid not in agent_ids:
                continue
            if self._ahead_only and not (rx * ch + ry * sh > 0.0 and abs(-rx * sh + ry * ch) <= LATERAL_CONFLICT_M):
                continue
            q = rx * rx + ry * ry
            if j < 0 or _nearer(rx, ry, q, bx, by, bq):
                j, bx, by, bq = i, rx, ry, q
        for vid in near_set:
            missing = vid not in tracks
            if missing or self._open:
                flag("track_missing", vid, t, missing)
        if self._open:
            for kind, vid in [k for k in self._open if k[0] == "track_missing" and k[1] not in near_set]:
                self._close((kind, vid), t)
        if j >= 0:
            vid = ids[j]
            near_tr = tracks.get(vid)
            self._near_id.append(vid)
            self._near_aoi.append(math.nan if near_tr is None else float(near_tr.aoi_s))
        else:  # (inf, 0): np.hypot gives the inf distance of "no agent"
            self._near_id.append(None)
            self._near_aoi.append(math.nan)
        self._near_dx.append(bx)
        self._near_dy.append(by)

    # ------------------------------------------------------------------ report
    def episodes(self) -> list[DivergenceEpisode]:
        """Closed episodes plus the still-open ones (end None), absences filtered."""
        out = list(self._episodes)
        out += [DivergenceEpisode(k, s, ep.start_s, None, ep.max_error, ep.detail) for (k, s), ep in self._open.items()]
        keep = []
        for e in out:
            end = self._t_last if e.end_s is None else e.end_s
            if e.kind in ABSENCE_KINDS and end - e.start_s < ABSENCE_MIN_S:
                continue
            keep.append(e)
        keep.sort(key=lambda e: (e.start_s, e.kind, e.subject))
        return keep

    def _at(self, t: float) -> int:
        """Index of the last observed step at or before t."""
        if not self._t:
            return -1
        return max(0, int(np.searchsorted(np.asarray(self._t), t + 1e-9, side="right")) - 1)

    def summary(self, decisions: Sequence[DecisionRecord] = (), faults: Sequence[Any] = ()) -> MonitorSummary:
        episodes = self.episodes()
        epochs = sorted(d.t_s for d in decisions if d.epoch)
        slacks = [hazard_slack(e, epochs, self._t_last) for e in episodes if e.kind in ALARM_KINDS]
        aoi = []
        for d in decisions:
            if not d.epoch:
                continue
            i = self._at(d.t_s)
            if i < 0:
                continue
            def num(x: float) -> float | None:
                return None if not math.isfinite(x) else float(x)
            aoi.append(DecisionAoI(d.t_s, d.action, num(self._spat_aoi[i]), num(self._map_aoi[i]),
                                   num(self._near_aoi[i]), self._spat_valid[i],
                                   None if self._bel_phase[i] == PHASE_UNKNOWN else PHASE_NAME[self._bel_phase[i]],
                                   None if self._true_phase[i] == PHASE_UNKNOWN else PHASE_NAME[self._true_phase[i]]))
        min_d, crit_agent, crit_t = None, None, None
        if self._near_dx:
            nd = self.near_distances_m()
            if np.isfinite(nd).any():
                j = int(np.argmin(nd))
                min_d, crit_agent, crit_t = float(nd[j]), self._near_id[j], self._t[j]
        if self.kind is AppKind.SIGNAL:
            relevant = [s.slack_s for s in slacks if s.kind in SIGNAL_KINDS and s.slack_s is not None
                        and s.slack_s >= 0.0]
            margin = min(relevant) if relevant else LARGE_MARGIN
        else:
            margin = min_d if min_d is not None else LARGE_MARGIN
        fault_rows = [f.to_dict() if hasattr(f, "to_dict") else dict(f) for f in faults]
        summary = MonitorSummary(episodes, slacks, aoi, float(margin),
                                 any(e.kind in ALARM_KINDS for e in episodes), None, min_d, crit_agent, crit_t,
                                 fault_rows)
        summary.failure_class = classify_failure(self, summary, fault_rows)
        return summary

    def report(self, decisions: Sequence[DecisionRecord] = (), faults: Sequence[Any] = ()) -> MonitorReport:
        return self.summary(decisions, faults).to_report()

    def near_distances_m(self) -> np.ndarray:
        """Per observed step, the distance to the nearest qualifying agent (inf: none): np.hypot of the kept
        offsets, element-wise the bits of a per-step scalar np.hypot (libm's hypot either way)."""
        return _np_hypot(np.array(self._near_dx, dtype=np.float64), np.array(self._near_dy, dtype=np.float64))

    # evidence accessors used by classify_failure
    def near_status(self, t: float) -> tuple[str | None, float]:
        i = self._at(t)
        if i < 0:
            return None, math.nan
        return self._near_id[i], self._near_aoi[i]

    def spat_status(self, t: float) -> tuple[float, bool | None, int, int]:
        i = self._at(t)
        if i < 0:
            return math.nan, None, PHASE_UNKNOWN, PHASE_UNKNOWN
        return self._spat_aoi[i], self._spat_valid[i], self._bel_phase[i], self._true_phase[i]


def hazard_slack(ep: DivergenceEpisode, epochs: Sequence[float], t_last: float) -> EpisodeSlack:
    """Slack of an episode against the first decision epoch at or after its start."""
    end = t_last if ep.end_s is None else float(ep.end_s)
    nxt = next((t for t in epochs if t >= ep.start_s - 1e-9), None)
    slack = None if nxt is None else float(nxt - end)
    if slack is not None and nxt is not None and ep.start_s <= nxt < end:
        slack = min(slack, -1e-9)  # decided inside the episode: strictly negative
    return EpisodeSlack(ep.kind, ep.subject, float(ep.start_s), end, nxt, slack)


def _fault_class(faults: Sequence[Mapping[str, Any]]) -> FailureClass | None:
    hit = [f for f in faults if f.get("messages_affected", 0) > 0] or list(faults)
    for f in hit:
        op = str(f.get("operator", ""))
        if op in FAULT_OPERATORS:
            return FAULT_OPERATORS[op].failure_class
    return None


def classify_failure(mon: DivergenceMonitor, s: MonitorSummary,
                     faults: Sequence[Mapping[str, Any]] = ()) -> FailureClass | None:
    """Failure class from the evidence at the critical moment, else from the faults.

    Signal apps, at each decision epoch: a wrong belief used while fresh ->
    fresh_but_wrong; a stale (invalid) belief -> stale_but_detectable; no belief
    (no SPaT / MAP for the ego's group) -> silent_by_absence. Conflict apps, at the
    decision epoch (or 1 s before the closest approach when there is none), for the
    closest qualifying agent: no track -> silent_by_absence; a stale track ->
    stale_but_detectable; a displaced fresh track -> fresh_but_wrong. Without such
    evidence the catalogue class of the fault that acted (if any) is returned.
    """
    if mon.kind is AppKind.SIGNAL:
        for d in s.aoi_at_decisions:
            aoi, valid, bel, true = mon.spat_status(d.t_s)
            if bel == PHASE_UNKNOWN:
                return FailureClass.SILENT_BY_ABSENCE
            if valid is False or (math.isfinite(aoi) and aoi > mon.budget_s[Stream.SPAT]):
                return FailureClass.STALE_BUT_DETECTABLE
            wrong = any(sl.slack_s is not None and sl.slack_s < 0 and sl.decision_s == d.t_s
                        and sl.kind in SIGNAL_KINDS for sl in s.slacks)
            if wrong:
                return FailureClass.FRESH_BUT_WRONG
        return _fault_class(faults)
    if s.critical_t_s is None:
        return _fault_class(faults)
    t_eval = s.aoi_at_decisions[0].t_s if s.aoi_at_decisions else max(0.0, s.critical_t_s - 1.0)
    agent, aoi = mon.near_status(t_eval)
    if agent is not None:
        if math.isnan(aoi):
            return FailureClass.SILENT_BY_ABSENCE
        if aoi > mon.budget_s[Stream.BSM]:
            return FailureClass.STALE_BUT_DETECTABLE
        displaced = any(e.kind == "track_displaced" and e.subject == agent and e.start_s <= t_eval
                        and (e.end_s is None or e.end_s >= t_eval) for e in s.episodes)
        if displaced:
            return FailureClass.FRESH_BUT_WRONG
    return _fault_class(faults)
