"""Paired execution: the message-driven ego and its ground-truth shadow in matched conditions.

One scene, two rollouts stepped together as a batch of two (``B = 2``): identical
programs, seed, initial conditions and traffic model; only the ego's
:class:`~services.simulator.info.InformationSource` differs (the message-driven
source from ``md_source_factory`` vs :class:`~services.simulator.info.GroundTruthSource`).
The traffic core itself draws no random numbers at run time (equipage and vehicle
lengths are fixed in the program from the seed), so the two rollouts see the same
background traffic until the egos' behaviour differs, and the same program + seed
always gives the same bytes (:meth:`PairedOutcome.to_json_bytes`).

Admission (LAST-V2X Section 2.1): a communication-induced failure is admitted only
when the message-driven ego fails and its ground-truth twin stays safe.

``execute_batch`` stacks ``P`` programs into one ``(2P, N)`` traffic batch.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from enum import Enum
from typing import Any

import numpy as np

from lastv2x.core.catalogue import APPLICATIONS, REACTION_TIME_S, AppKind, Application
from lastv2x.core.program import ScenarioProgram
from services.simulator.adjudicate import Adjudicator, RolloutOutcome
from services.simulator.apps import APPS, Action, AppContext, Decision, EgoState
from services.simulator.info import (
    BRAKE_FLAG_THRESHOLD_MPS2,
    DecisionRecord,
    GroundTruthSource,
    InformationSource,
    MonitoredSource,
    MonitorReport,
    SourceFactory,
    TraceSink,
    WorldSnapshot,
    ground_truth_factory,
)
from services.simulator.traffic import (
    EgoControl,
    Scene,
    TrafficState,
    hard_brake_event,
    initial_state,
    step,
)

LARGE_MARGIN = 1.0e3  # failure margin when no qualifying episode or conflict occurred
OUTCOME_VERSION = "1"
MD, GT = "md", "gt"


@dataclass(frozen=True)
class PairedOutcome:
    application: Application
    program_sha256: str
    seed: int
    md: RolloutOutcome
    gt: RolloutOutcome
    admitted: bool  # md.failed and not gt.failed
    failure_margin: float  # LAST-V2X Appendix E (MD rollout)
    hazard_slack_s: tuple[float, ...] = ()  # per monitor episode (signal apps)
    monitor: MonitorReport | None = None  # from the MD source, when it monitors divergence
    version: str = OUTCOME_VERSION

    def to_dict(self) -> dict[str, Any]:
        return _canon(self)

    def to_json_bytes(self) -> bytes:
        """Canonical serialization: sorted keys, no whitespace, floats rounded to 1e-6."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _canon(x: Any) -> Any:
    if is_dataclass(x) and not isinstance(x, type):
        return {k: _canon(v) for k, v in asdict(x).items()}
    if isinstance(x, Enum):
        return x.value
    if isinstance(x, Mapping):
        return {str(k): _canon(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_canon(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float):
        return round(x, 6) if math.isfinite(x) else None
    return x


def program_sha256(program: ScenarioProgram) -> str:
    return hashlib.sha256(program.model_dump_json().encode()).hexdigest()


def app_context(program: ScenarioProgram) -> AppContext:
    cr = program.ego.route.primary
    return AppContext(
        application=program.application, route_points=np.asarray(program.ego.route.points_xy_m),
        conflict_xy_m=None if cr is None or cr.conflict_xy_m is None else tuple(cr.conflict_xy_m),
        amber_s={g.id: g.amber_s for g in program.signal_groups}, desired_speed_mps=program.ego.desired_speed_mps,
        ego_length_m=program.ego.length_m)


class EgoController:
    """Maps a decision to the ego's commands. A STOP is a warning to the driver, acted on after
    the reaction time the decision epoch assumes (REACTION_TIME_S); YIELD holds at the bar at once;
    BRAKE is automatic; ADVISE sets the speed target."""

    def __init__(self) -> None:
        self.stop_since: float | None = None

    def command(self, dec: Decision, t_s: float) -> tuple[bool, float, float]:
        if dec.action is Action.STOP:
            if self.stop_since is None:
                self.stop_since = dec.t_s
            return t_s >= self.stop_since + REACTION_TIME_S - 1e-9, math.nan, 0.0
        self.stop_since = None
        if dec.action is Action.YIELD:
            return True, math.nan, 0.0
        if dec.action is Action.BRAKE:
            return False, math.nan, dec.brake_mps2
        if dec.action is Action.ADVISE and dec.target_speed_mps is not None:
            return False, dec.target_speed_mps, 0.0
        return False, math.nan, 0.0


class _Frame:
    """Per-step views shared by every row's snapshot (computed once per step)."""

    def __init__(self, scene: Scene, st: TrafficState):
        self.phase, self.ttc, self.ttg = scene.signals.state(st.t_s)
        a = st.a
        self.brake = (a <= -BRAKE_FLAG_THRESHOLD_MPS2) & st.alive
        self.hard = hard_brake_event(st)
        self.bar_d = st.bar_s - (st.s + scene.half_len)
        self.group = st.bar_group
        self.s = st.s.tolist()
        self.v = st.v.tolist()
        self.a = a.tolist()
        self.heading = st.heading.tolist()
        self.xy = st.xy[:, 0].tolist()


def _snapshot(scene: Scene, st: TrafficState, fr: _Frame, b: int, n: int, rollout: str,
              rsu: tuple[tuple[str, ...], np.ndarray, np.ndarray]) -> WorldSnapshot:
    g = len(scene.group_ids[b])
    return WorldSnapshot(
        t_s=st.t_s, step=st.step, vehicle_ids=scene.vehicle_ids[b], xy_m=st.xy[b, :n], speed_mps=st.v[b, :n],
        heading_rad=st.heading[b, :n], accel_mps2=st.a[b, :n], brake_flag=fr.brake[b, :n],
        hard_brake_event=fr.hard[b, :n], equipped=scene.equipped[b, :n], alive=st.alive[b, :n],
        route_s_m=st.s[b, :n], stop_bar_distance_m=fr.bar_d[b, :n], next_group_index=fr.group[b, :n],
        length_m=scene.length_m[b, :n], ego_index=0, signal_group_ids=scene.group_ids[b],
        true_phase=fr.phase[b, :g], time_to_change_s=fr.ttc[b, :g], time_to_green_s=fr.ttg[b, :g],
        rsu_ids=rsu[0], rsu_xy_m=rsu[1], rsu_height_m=rsu[2], rollout=rollout)


def _ego_state(scene: Scene, fr: _Frame, b: int, t_s: float) -> EgoState:
    s = fr.s[b][0]
    c = scene.conflict_s[b, 0]
    cd = None if (math.isnan(c) or s > c) else float(c - s)
    x, y = fr.xy[b]
    return EgoState(t_s, s, fr.v[b][0], fr.a[b][0], (x, y), fr.heading[b][0], float(fr.bar_d[b, 0]), cd)


def _freeze(st: TrafficState) -> None:
    for arr in (st.s, st.v, st.a, st.alive, st.xy, st.heading):
        arr.flags.writeable = False


@dataclass
class _Row:
    program: ScenarioProgram
    seed: int
    source: InformationSource
    rollout: str
    ctx: AppContext
    n: int
    rsu: tuple[tuple[str, ...], np.ndarray, np.ndarray]
    controller: EgoController = field(default_factory=EgoController)
    decision: Decision | None = None
    records: list[DecisionRecord] = field(default_factory=list)
    trace: TraceSink | None = None


def run_rollouts(programs: Sequence[ScenarioProgram], seeds: Sequence[int], sources: Sequence[InformationSource],
                 rollouts: Sequence[str], traces: Sequence[TraceSink | None] | None = None
                 ) -> list[RolloutOutcome]:
    """Step ``len(programs)`` rollouts together; row ``i`` uses ``sources[i]``. Returns one outcome per row."""
    obey = [APPLICATIONS[p.application].kind is AppKind.CONFLICT for p in programs]
    scene = Scene.from_programs(programs, obey)
    st = initial_state(scene)
    traces = traces or [None] * len(programs)
    rows: list[_Row] = []
    for p, seed, src, tag, tr in zip(programs, seeds, sources, rollouts, traces, strict=True):
        rsu = (tuple(r.id for r in p.rsus), np.array([r.xy_m for r in p.rsus]).reshape(-1, 2),
               np.array([r.height_m for r in p.rsus]))
        for arr in rsu[1:]:
            arr.flags.writeable = False
        src.reset(p, seed, trace=tr)
        rows.append(_Row(p, seed, src, tag, app_context(p), len(p.vehicles), rsu, trace=tr))
    adj = Adjudicator(scene, programs)
    n_steps = max(int(round(p.duration_s / p.dt_s)) for p in programs)
    limit = np.array([int(round(p.duration_s / p.dt_s)) for p in programs])
    b_all = len(programs)
    stop = np.zeros(b_all, bool)
    v_tgt = np.full(b_all, np.nan)
    brake = np.zeros(b_all)
    _freeze(st)
    for k in range(n_steps):
        active = st.alive[:, 0] & (k < limit)
        if not active.any():
            break
        fr = _Frame(scene, st)
        t = st.t_s
        for b in np.nonzero(active)[0].tolist():
            row = rows[b]
            snap = _snapshot(scene, st, fr, b, row.n, row.rollout, row.rsu)
            info = row.source.observe(snap)
            ego = _ego_state(scene, fr, b, t)
            dec = APPS[row.program.application].decide(info, ego, row.ctx, row.decision)
            if not dec.same_as(row.decision):
                row.records.append(DecisionRecord(round(t, 6), dec.action.value, dec.epoch, dec.reason,
                                                  dec.after_epoch, dec.app.value))
                if row.trace is not None:
                    row.trace.publish("/app/decision", t, _decision_msg(dec, row.rollout))
            row.decision = dec
            stop[b], v_tgt[b], brake[b] = row.controller.command(dec, t)
            if row.trace is not None:
                _trace_step(row, snap, info, (bool(stop[b]), float(v_tgt[b]), float(brake[b])))
        stop &= active
        st = step(scene, st, EgoControl(stop.copy(), v_tgt.copy(), brake.copy()), fr.phase)
        _freeze(st)
        adj.observe(st, active)
        stop[:] = False
        v_tgt[:] = np.nan
        brake[:] = 0.0
    out = []
    for b, row in enumerate(rows):
        o = adj.outcome(b)
        out.append(RolloutOutcome(**{**o.__dict__, "decisions": tuple(row.records)}))
    return out


def _decision_msg(dec: Decision, rollout: str) -> dict[str, Any]:
    return {"rollout": rollout, "app": dec.app.value, "action": dec.action.value, "reason": dec.reason,
            "epoch": dec.epoch, "committed": dec.committed, "info_valid": dec.info_valid,
            "target_speed_mps": dec.target_speed_mps, "brake_mps2": dec.brake_mps2, "aoi_s": dec.aoi_s}


def _trace_step(row: _Row, snap: WorldSnapshot, info: Any, ctrl: tuple[bool, float, float]) -> None:
    tr = row.trace
    assert tr is not None
    t = snap.t_s
    if row.rollout == MD:
        tr.publish("/gt/vehicles", t, {
            "vehicles": [{"id": vid, "x": float(snap.xy_m[i, 0]), "y": float(snap.xy_m[i, 1]),
                          "speed_mps": float(snap.speed_mps[i]), "heading_rad": float(snap.heading_rad[i]),
                          "accel_mps2": float(snap.accel_mps2[i]), "alive": bool(snap.alive[i]),
                          "equipped": bool(snap.equipped[i])} for i, vid in enumerate(snap.vehicle_ids)]})
        tr.publish("/signals/true", t, {"groups": [
            {"id": g, "phase": int(snap.true_phase[k]), "time_to_change_s": float(snap.time_to_change_s[k])}
            for k, g in enumerate(snap.signal_group_ids)]})
    sig = info.ego_signal()
    tr.publish("/recon/ego", t, {
        "rollout": row.rollout, "ego_group_id": info.ego_group_id,
        "signal": None if sig is None else {"phase": sig.phase, "time_to_change_s": sig.time_to_change_s,
                                            "aoi_s": sig.aoi_s, "valid": sig.valid},
        "tracks": [{"id": k, "x": v.xy_m[0], "y": v.xy_m[1], "speed_mps": v.speed_mps, "aoi_s": v.aoi_s}
                   for k, v in info.tracks.items()],
        "eebl_events": len(info.eebl_events)})
    tr.publish("/ctrl/ego", t, {"rollout": row.rollout, "stop_at_bar": ctrl[0],
                                "v_target_mps": None if math.isnan(ctrl[1]) else ctrl[1], "brake_mps2": ctrl[2],
                                "speed_mps": float(snap.speed_mps[0])})


def hazard_slacks(report: MonitorReport | None, decisions: Sequence[DecisionRecord], end_s: float) -> tuple[float, ...]:
    """Per episode: the next consequential decision's time minus the episode's end
    (negative = the decision was taken while the belief was wrong)."""
    if report is None:
        return ()
    times = sorted(d.t_s for d in decisions if d.epoch or d.after_epoch)
    out = []
    for ep in report.episodes:
        nxt = next((t for t in times if t >= ep.start_s - 1e-9), None)
        if nxt is None:
            continue
        end = end_s if ep.end_s is None else ep.end_s
        out.append(round(nxt - end, 6))
    return tuple(out)


def failure_margin(app: Application, md: RolloutOutcome, slacks: Sequence[float]) -> float:
    if APPLICATIONS[app].kind is AppKind.SIGNAL:
        ok = [s for s in slacks if s >= 0.0]
        return min(ok) if ok else LARGE_MARGIN
    return LARGE_MARGIN if md.min_agent_distance_m is None else md.min_agent_distance_m


def _paired(program: ScenarioProgram, seed: int, md_src: InformationSource, md: RolloutOutcome,
            gt: RolloutOutcome) -> PairedOutcome:
    report = md_src.report(md.decisions) if isinstance(md_src, MonitoredSource) else None
    slacks = hazard_slacks(report, md.decisions, md.end_t_s)
    margin = failure_margin(program.application, md, slacks)
    if report is not None and APPLICATIONS[program.application].kind is AppKind.SIGNAL:
        mm = report.extra.get("failure_margin")  # the monitor knows which episodes are alarms
        if isinstance(mm, int | float) and math.isfinite(mm):
            margin = float(mm)
    return PairedOutcome(program.application, program_sha256(program), int(seed), md, gt,
                         admitted=md.failed and not gt.failed, failure_margin=round(margin, 6),
                         hazard_slack_s=slacks, monitor=report)


def execute_paired(program: ScenarioProgram, seed: int | None = None,
                   md_source_factory: SourceFactory = ground_truth_factory,
                   trace: TraceSink | None = None) -> PairedOutcome:
    """Run the message-driven and ground-truth rollouts of ``program`` under ``seed`` (default: the
    program's) and adjudicate both. ``trace`` receives the MD world, both egos' beliefs, decisions and
    controls; the MD source gets it too (for ``/v2x/*`` and ``/monitor/events``)."""
    seed = program.seed if seed is None else seed
    md_src = md_source_factory()
    md, gt = run_rollouts([program, program], [seed, seed], [md_src, GroundTruthSource()], [MD, GT],
                          [trace, trace])
    return _paired(program, seed, md_src, md, gt)


def execute_batch(programs: Sequence[ScenarioProgram], seeds: Sequence[int] | None = None,
                  md_source_factory: SourceFactory = ground_truth_factory) -> list[PairedOutcome]:
    """Paired execution of many programs in one vectorized traffic batch (programs must share dt_s)."""
    if not programs:
        return []
    seeds = [p.seed for p in programs] if seeds is None else list(seeds)
    if len(seeds) != len(programs):
        raise ValueError("one seed per program")
    md_srcs = [md_source_factory() for _ in programs]
    rows_p, rows_s, rows_src, tags = [], [], [], []
    for p, s, m in zip(programs, seeds, md_srcs, strict=True):
        rows_p += [p, p]
        rows_s += [s, s]
        rows_src += [m, GroundTruthSource()]
        tags += [MD, GT]
    outs = run_rollouts(rows_p, rows_s, rows_src, tags)
    return [_paired(p, s, m, outs[2 * i], outs[2 * i + 1])
            for i, (p, s, m) in enumerate(zip(programs, seeds, md_srcs, strict=True))]


__all__ = ["GT", "LARGE_MARGIN", "MD", "EgoController", "PairedOutcome", "app_context", "execute_batch",
           "execute_paired", "failure_margin", "hazard_slacks", "program_sha256", "run_rollouts"]
