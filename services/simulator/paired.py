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

Engines (:mod:`services.simulator.engines`): one step loop (``run_rollouts``) drives an ``Engine``: the
compiled traffic step (:mod:`services.simulator.kernels`) for every batch size, or another simulator
moving the vehicles (``PlantEngine``). A plain
:class:`GroundTruthSource` without a trace is served straight from the step's lists (the same
``EgoInformation`` its ``observe`` would build from a snapshot; pinned by the same test module).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from lastv2x.core.catalogue import APPLICATIONS, LARGE_MARGIN, AppKind, Application
from lastv2x.core.program import ScenarioProgram, VehicleRole, program_sha256
from lastv2x.core.rng import stable_hash64
from services.simulator.adjudicate import RolloutOutcome
from services.simulator.apps import APPS, AppContext, Decision, EgoState
from services.simulator.apps.contract import (
    INPUT_RAW,
    AppFault,
    ApplicationUnderTest,
    DecideFnApp,
    RawMessage,
    ReferenceApp,
    StepRow,
    bounded_text,
    decision_problem,
    input_mode,
)
from services.simulator.controller import NOMINAL as _NOMINAL
from services.simulator.controller import EgoController
from services.simulator.engines import (
    Engine,
    Frame,
    PlantEngine,
    VectorEngine,
    ground_truth_fast,
    new_snapshot,
)
from services.simulator.info import (
    DecisionRecord,
    EgoInformation,
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
    AgentControl,
    Scene,
    initial_state,
)
from services.simulator.young_gc import restore_young_gc, widen_young_gc

if TYPE_CHECKING:
    from services.simulator.backends.plant import Plant, PlantOptions
    from services.simulator.v2x.wire import WireCodec

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
    app_error: str = ""  # the application under test failed (names the app, the rollout, the step)

    def to_dict(self) -> dict[str, Any]:
        d = _canon(self)
        if not self.app_error:  # absent unless set: outcomes of working apps keep their bytes
            del d["app_error"]
        for rollout in ("md", "gt"):  # likewise "known_ahead", set only on corridor routes
            for rec in d[rollout].get("decisions", ()):
                if rec.get("known_ahead") is None:
                    rec.pop("known_ahead", None)
            if not d[rollout].get("agent_decisions"):  # and the decisions of agents running applications
                d[rollout].pop("agent_decisions", None)
            for _, recs in d[rollout].get("agent_decisions", ()):
                for rec in recs:
                    if rec.get("known_ahead") is None:
                        rec.pop("known_ahead", None)
        return d

    def to_json_bytes(self) -> bytes:
        """Canonical serialization: sorted keys, no whitespace, floats rounded to 1e-6."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _canon(x: Any) -> Any:
    if is_dataclass(x) and not isinstance(x, type):  # (field by field: ``asdict`` would copy the tree first)
        return {f.name: _canon(getattr(x, f.name)) for f in fields(x)}
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


def app_context(program: ScenarioProgram) -> AppContext:
    cr = program.ego.route.primary
    return AppContext(
        application=program.application, route_points=np.asarray(program.ego.route.points_xy_m),
        conflict_xy_m=None if cr is None or cr.conflict_xy_m is None else tuple(cr.conflict_xy_m),
        amber_s={g.id: g.amber_s for g in program.signal_groups}, desired_speed_mps=program.ego.desired_speed_mps,
        ego_length_m=program.ego.length_m, crossings=_corridor_crossings(program))


def _corridor_crossings(program: ScenarioProgram) -> tuple[tuple[float, str, str], ...]:
    """The route's signalized crossings when it has several (a corridor): what "junctions known
    ahead" counts at each epoch. A single-junction route leaves the count unset (its outcomes keep
    their bytes: the count would only say whether that one junction's SPaT was fresh)."""
    from services.simulator.apps.base import route_crossings

    crossings = route_crossings(program.ego.route.crossings)
    return crossings if len({junction for _, _, junction in crossings}) > 1 else ()


def agent_view(program: ScenarioProgram, agent_id: str) -> ScenarioProgram:
    """``program`` as the agent ``agent_id`` sees it when it runs its application (issue 17, item 4):
    that agent is the receiver ("ego": its route, its application), the program's ego one of the
    others (with the agent's role), no faults (faults act on the ego's reception: the system under
    test). Not validated (a view for an information source and an application context)."""
    agents = list(program.agents)
    k = next(i for i, a in enumerate(agents) if a.id == agent_id)
    me = agents[k]
    assert me.application is not None
    agents[k] = program.ego.model_copy(update={"role": me.role})
    return program.model_copy(update={"application": me.application, "faults": (), "agents": tuple(agents),
                                      "ego": me.model_copy(update={"role": VehicleRole.EGO, "application": None})})


def agent_seed(seed: int, agent_id: str) -> int:
    """The seed of an agent's own information source: its channel draws are its own."""
    return (seed ^ stable_hash64(f"agent:{agent_id}")) & (2**63 - 1)


@dataclass(slots=True)
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
    decide: Any = None  # the application's decide function
    fast_gt: bool = False  # a plain GroundTruthSource without a trace: read the truth off the frame
    conflict_s: float = math.nan  # the ego's conflict point on its route
    plan: int = 0  # rows with equal signal plans share a number
    ctrl: tuple[bool, float, float] = _NOMINAL  # the controller's command for ``decision``
    error: str = ""  # the application under test failed on this row: the rollout stops deciding
    by_sight: bool = False  # an unequipped ego (lastv2x.core.perception): nothing decides, it drives by sight
    agents: list[_AgentApp] = field(default_factory=list)  # agents that run an application in this rollout
    observe_batch: Any = None  # the source class's BatchSource.observe_batch (an untraced row), else None


@dataclass(slots=True)
class _AgentApp:
    """An agent that runs an application in one rollout: its own source, context, controller, records."""

    index: int  # the agent's column in its row
    vehicle_id: str
    decide: Any
    ctx: AppContext
    source: InformationSource
    conflict_s: float
    controller: EgoController = field(default_factory=EgoController)
    decision: Decision | None = None
    ctrl: tuple[bool, float, float] = _NOMINAL
    records: list[DecisionRecord] = field(default_factory=list)


def _agent_apps(program: ScenarioProgram, seed: int, factory: SourceFactory,
                conflict_s: Sequence[float]) -> list[_AgentApp]:
    out = []
    for j, v in enumerate(program.vehicles):
        if j == 0 or v.application is None or not v.equipped:
            continue
        view = agent_view(program, v.id)
        src = factory()
        src.reset(view, agent_seed(seed, v.id))
        out.append(_AgentApp(j, v.id, APPS[v.application].decide, app_context(view), src, conflict_s[j],
                             EgoController(v.alerted_reaction_s)))
    return out


def _agent_controls(scene: Scene) -> AgentControl:
    b, n = scene.shape
    return AgentControl(np.zeros((b, n), bool), np.full((b, n), math.nan), np.zeros((b, n)))


def _agents_decide(row: _Row, fr: Frame, b: int, t: float, out: AgentControl) -> None:
    """Each application-running agent of row ``b``: observe (the row's snapshot, the agent as receiver),
    decide, record a changed decision, and set its commands in ``out``."""
    snap = fr.snapshot(b, row.n, row.rollout, row.rsu)
    alive = fr.st.alive
    for ag in row.agents:
        j = ag.index
        if not alive[b, j]:
            continue
        info = ag.source.observe(new_snapshot({**snap.__dict__, "ego_index": j}))
        fi = b * fr.N + j
        s_m, c = fr.s[fi], ag.conflict_s
        me = EgoState(t, s_m, fr.v[fi], fr.a[fi], (fr.x[fi], fr.y[fi]), fr.heading[fi], float(fr.bar_d[b, j]),
                      None if (c != c or s_m > c) else c - s_m)
        dec = ag.decide(info, me, ag.ctx, ag.decision)
        if not dec.same_as(ag.decision):
            ag.records.append(DecisionRecord(round(t, 6), dec.action.value, dec.epoch, dec.reason, dec.after_epoch,
                                             dec.app.value, dec.known_ahead))
        ag.decision = dec
        ag.ctrl = ag.controller.command(dec, t)
        out.stop_at_bar[b, j], out.v_target_mps[b, j], out.brake_mps2[b, j] = ag.ctrl


def _apply(row: _Row, dec: Decision, t: float) -> tuple[bool, float, float]:
    """Record ``dec`` when it changes the row's decision and return the controller's command."""
    prev = row.decision
    if dec is prev and not dec.epoch and not row.controller.waiting:
        return row.ctrl  # the decision stands: nothing to record, the same command as last step
    if not dec.same_as(prev):
        row.records.append(DecisionRecord(round(t, 6), dec.action.value, dec.epoch, bounded_text(dec.reason),
                                          dec.after_epoch, dec.app.value, dec.known_ahead))
        if row.trace is not None:
            row.trace.publish("/app/decision", t, _decision_msg(dec, row.rollout))
    row.decision = dec
    ctrl = row.ctrl = row.controller.command(dec, t)
    return ctrl


def _batch_observer(cls: type) -> Any:
    """``cls.observe_batch`` (:class:`~services.simulator.info.BatchSource`) when it is defined where the
    ``observe`` in force is, or below; else None: a subclass that overrides ``observe`` alone is observed row
    by row, through its own ``observe``."""
    def owner(name: str) -> type | None:
        return next((c for c in cls.__mro__ if name in vars(c)), None)

    batch, single = owner("observe_batch"), owner("observe")
    if batch is None or single is None or not issubclass(batch, single):
        return None
    return cls.observe_batch  # type: ignore[attr-defined]


def _observe_batches(rows: list[_Row], active: Sequence[bool], fr: Frame
                     ) -> dict[int, tuple[WorldSnapshot, EgoInformation]]:
    """This step's snapshot and belief of each running row whose source observes a batch
    (:class:`~services.simulator.info.BatchSource`), one ``observe_batch`` per source class."""
    by_class: dict[Any, list[int]] = {}
    for b, r in enumerate(rows):
        if r.observe_batch is not None and active[b]:
            by_class.setdefault(r.observe_batch, []).append(b)
    out: dict[int, tuple[WorldSnapshot, EgoInformation]] = {}
    for observe_batch, bs in by_class.items():
        snaps = [fr.snapshot(b, rows[b].n, rows[b].rollout, rows[b].rsu) for b in bs]
        infos = observe_batch([rows[b].source for b in bs], snaps)
        out.update(zip(bs, zip(snaps, infos, strict=True), strict=True))
    return out


def _app_step(app: ApplicationUnderTest, k: int, t: float, rows: list[StepRow]) -> list[Decision | AppFault]:
    """One contract step; a raised error (timeout, transport) or a wrong count faults every row."""
    try:
        out = list(app.step(k, t, rows))
    except Exception as exc:  # the app's failure is an outcome, not a simulator crash
        return [AppFault(f"{type(exc).__name__}: {bounded_text(str(exc))}")] * len(rows)
    if len(out) != len(rows):
        return [AppFault(f"answered {len(out)} decisions for {len(rows)} rows")] * len(rows)
    return out


def run_rollouts(programs: Sequence[ScenarioProgram], seeds: Sequence[int], sources: Sequence[InformationSource],
                 rollouts: Sequence[str], traces: Sequence[TraceSink | None] | None = None,
                 app: ApplicationUnderTest | None = None, app_errors: list[str] | None = None,
                 plant: Plant | None = None,
                 agent_sources: Sequence[SourceFactory] | None = None) -> list[RolloutOutcome]:
    """Step ``len(programs)`` rollouts together; row ``i`` uses ``sources[i]``. Returns one outcome per row.

    ``plant``: another simulator moves the vehicles (one row only; see :class:`PlantEngine`); the
    caller closes it.

    ``app`` None calls the six reference ``decide`` functions row by row, a :class:`DecideFnApp` its
    own functions so; any other :class:`ApplicationUnderTest` gets one session per row and one ``step``
    per simulation step with every running row. A row the app fails on stops deciding (its adjudication stops there);
    ``app_errors``, when given, receives one text per row ("" = none).

    Agents with an ``application`` (issue 17, item 4) run that reference application every step on their own
    information: a source from ``agent_sources[row]`` (default: ground truth) reset on :func:`agent_view`
    with :func:`agent_seed`, fed the row's snapshot with the agent as receiver; their commands act through
    :class:`AgentControl` (numpy engine only: a batch with such agents runs on it) and their decisions land
    in the outcome's ``agent_decisions``."""
    generic = app is not None and not isinstance(app, DecideFnApp)
    raw = generic and input_mode(app) == INPUT_RAW  # raw-message mode: the arrivals, encoded, not the belief
    wire: WireCodec | None = None
    if raw:  # raw-message mode loads its codec on first use
        from services.simulator.v2x.wire import active_codec

        wire = active_codec()
    fns = app if isinstance(app, DecideFnApp) else None
    checked = fns is not None and not isinstance(fns, ReferenceApp)  # a team's functions: check each decision
    # conflict-application egos obey the true signals; an unequipped ego drives by sight (no application), and so
    # does an equipped one given a sight distance (perception.equipped_see_signals), besides its application
    obey = [APPLICATIONS[p.application].kind is AppKind.CONFLICT or not p.ego.equipped
            or p.ego.sight_distance_m is not None for p in programs]
    scene = Scene.from_programs(programs, obey)
    st = initial_state(scene)
    traces = traces or [None] * len(programs)
    rows: list[_Row] = []
    conflict0 = scene.conflict_s[:, 0].tolist()
    conflict_all = scene.conflict_s.tolist()
    plans: dict[tuple, int] = {}
    for b, (p, seed, src, tag, tr) in enumerate(zip(programs, seeds, sources, rollouts, traces, strict=True)):
        rsu = (tuple(r.id for r in p.rsus), np.array([r.xy_m for r in p.rsus]).reshape(-1, 2),
               np.array([r.height_m for r in p.rsus]))
        for arr in rsu[1:]:
            arr.flags.writeable = False
        src.reset(p, seed, trace=tr)
        plan = plans.setdefault(tuple((g.id, g.cycle_s, g.green_s, g.amber_s, g.offset_s) for g in p.signal_groups),
                                len(plans))
        rows.append(_Row(p, seed, src, tag, app_context(p), len(p.vehicles), rsu, trace=tr,
                         decide=APPS[p.application].decide if fns is None else fns.decide_for(p.application),
                         fast_gt=type(src) is GroundTruthSource and tr is None, conflict_s=conflict0[b], plan=plan,
                         by_sight=not p.ego.equipped, controller=EgoController(p.ego.alerted_reaction_s)))
    n_steps = max(int(round(p.duration_s / p.dt_s)) for p in programs)
    limit = [int(round(p.duration_s / p.dt_s)) for p in programs]
    b_all = len(programs)
    engine: Engine
    if plant is not None:
        engine = PlantEngine(scene, st, programs, limit, plant, rollouts[0])
    else:
        engine = VectorEngine(scene, st, programs, limit)
    ground_truth, group_ids = ground_truth_fast, scene.group_ids
    others = [ids[1:] for ids in scene.vehicle_ids]
    any_fast_gt = any(r.fast_gt for r in rows)
    for b, r in enumerate(rows):
        r.agents = _agent_apps(r.program, r.seed, agent_sources[b] if agent_sources else ground_truth_factory,
                               conflict_all[b])
    any_agents = any(r.agents for r in rows)
    for r in rows:
        if not (r.fast_gt or r.by_sight or r.trace is not None):
            r.observe_batch = _batch_observer(type(r.source))
    batch_observed = sum(r.observe_batch is not None for r in rows) > 1
    for r in rows:
        if not generic and r.decide is None:
            assert fns is not None
            r.error = f"{fns.build.label()}: {r.rollout} rollout, open: does not implement {r.program.application.value}"
    sids: list[str] = []
    if generic:  # one session per rollout, on the same app object (the same build) for every row
        assert app is not None
        import uuid

        run = uuid.uuid4().hex[:12]
        sids = [f"{run}-{b}-{r.rollout}" for b, r in enumerate(rows)]
        try:
            if wire is not None:
                wire.check()  # the ETSI ASN.1 compiles (once per process), else every row is an app error
            app.open([(sid, r.ctx) for sid, r in zip(sids, rows, strict=True)])
        except Exception as exc:
            for r in rows:
                r.error = f"{app.build.label()}: {r.rollout} rollout, open: {type(exc).__name__}: {exc}"
    for r in rows:
        if hasattr(r.source, "arrivals"):  # a message-driven source keeps its arrivals only in raw mode
            r.source.keep_rx = raw  # type: ignore[attr-defined]
    raw_msgs: dict[int, tuple[RawMessage, ...]] = {}
    widen_young_gc(b_all)
    try:
        for k in range(n_steps):
            active = engine.running(k)
            if app is not None:
                active = [a and not r.error for a, r in zip(active, rows, strict=True)]
            if not any(active):
                break
            fr = engine.frame(k)
            t = fr.t
            gt_cache: dict[Any, Any] = {}  # this step's shared ground-truth parts (see ground_truth_fast)
            stop = [False] * b_all
            v_tgt = [math.nan] * b_all
            brake = [0.0] * b_all
            lists = fr.gt_lists() if any_fast_gt else ()
            xs, ys, vs, accs, hs, ss, n_cols = fr.x, fr.y, fr.v, fr.a, fr.heading, fr.s, fr.N
            ego_bar_d = fr.ego_bar_d
            pending: list[tuple[int, WorldSnapshot | None, EgoInformation, EgoState]] = []
            agent_ctl = _agent_controls(scene) if any_agents else None
            observed = _observe_batches(rows, active, fr) if batch_observed else {}
            for b in range(b_all):
                if not active[b]:
                    continue
                row = rows[b]
                if row.agents:
                    assert agent_ctl is not None and isinstance(fr, Frame)
                    _agents_decide(row, fr, b, t, agent_ctl)
                if row.by_sight:  # no on-board unit: no belief, no application, the traffic model drives
                    continue
                i = b * n_cols  # the ego's flat index
                if row.fast_gt:
                    snap = None
                    info = ground_truth(lists, fr, b, i, t, others[b], group_ids[b], row.plan, gt_cache)
                elif b in observed:
                    snap, info = observed[b]
                else:
                    snap = fr.snapshot(b, row.n, row.rollout, row.rsu)
                    info = row.source.observe(snap)
                s_m, c = ss[i], row.conflict_s  # a Python float: c - s is the float(c - s) of the numpy value
                ego = EgoState(t, s_m, vs[i], accs[i], (xs[i], ys[i]), hs[i], ego_bar_d[b],
                               None if (c != c or s_m > c) else c - s_m)
                if generic:  # decided below, every running row in one call
                    if wire is not None:
                        try:
                            raw_msgs[b] = tuple(wire.encode(row.source.arrivals()) if hasattr(row.source, "arrivals")
                                                and not row.fast_gt else wire.ideal(info, t))
                        except Exception as exc:
                            assert app is not None
                            row.error = (f"{app.build.label()}: {row.rollout} rollout, step {k} (t = {t:.2f} s): "
                                         f"raw-message encoding: {type(exc).__name__}: {exc}")
                            continue
                    pending.append((b, snap, info, ego))
                    continue
                try:
                    dec = row.decide(info, ego, row.ctx, row.decision)
                    problem = decision_problem(dec) if checked else None
                except Exception as exc:
                    if app is None:
                        raise  # the reference apps failing is the simulator's bug
                    problem = f"{type(exc).__name__}: {exc}"
                if problem is not None:
                    assert app is not None
                    row.error = f"{app.build.label()}: {row.rollout} rollout, step {k} (t = {t:.2f} s): {bounded_text(problem)}"
                    continue
                ctrl = _apply(row, dec, t)
                stop[b], v_tgt[b], brake[b] = ctrl
                if row.trace is not None:
                    assert snap is not None
                    _trace_step(row, snap, info, ego, (bool(ctrl[0]), float(ctrl[1]), float(ctrl[2])))
            if pending:
                assert app is not None
                decided = _app_step(app, k, t, [StepRow(sids[b], EgoInformation(t, {}, None, {}, (), math.inf), ego,
                                                        raw_msgs[b]) if raw else StepRow(sids[b], info, ego)
                                                for b, _, info, ego in pending])
                for (b, snap, info, ego), dec in zip(pending, decided, strict=True):
                    row = rows[b]
                    problem = dec.message if isinstance(dec, AppFault) else decision_problem(dec)
                    if problem is not None:
                        row.error = f"{app.build.label()}: {row.rollout} rollout, step {k} (t = {t:.2f} s): {bounded_text(problem)}"
                        continue  # this step on the nominal controller; the row stops from the next step
                    assert isinstance(dec, Decision)
                    ctrl = _apply(row, dec, t)
                    stop[b], v_tgt[b], brake[b] = ctrl
                    if row.trace is not None:
                        assert snap is not None
                        _trace_step(row, snap, info, ego, (bool(ctrl[0]), float(ctrl[1]), float(ctrl[2])))
            engine.advance(fr, stop, v_tgt, brake, active, agent_ctl)
    finally:
        restore_young_gc()
        if generic:
            assert app is not None
            try:
                app.close(sids)
            except Exception:  # closing is courtesy: the outcome is decided
                pass
    adj = engine.finish()
    if app_errors is not None:
        app_errors[:] = [r.error for r in rows]
    out = []
    for b, row in enumerate(rows):
        o = adj.outcome(b)
        out.append(RolloutOutcome(**{**o.__dict__, "decisions": tuple(row.records), "agent_decisions": tuple(
            (ag.vehicle_id, tuple(ag.records)) for ag in row.agents)}))
    return out


def _decision_msg(dec: Decision, rollout: str) -> dict[str, Any]:
    return {"rollout": rollout, "app": dec.app.value, "action": dec.action.value, "reason": bounded_text(dec.reason),
            "epoch": dec.epoch, "committed": dec.committed, "info_valid": dec.info_valid,
            "target_speed_mps": dec.target_speed_mps, "brake_mps2": dec.brake_mps2, "aoi_s": dec.aoi_s}


def recon_message(info: EgoInformation, rollout: str) -> dict[str, Any]:
    """The ``/recon/ego`` payload of one rollout's belief (STRaP's recorded runs read it back)."""
    sig = info.ego_signal()
    return {
        "rollout": rollout, "ego_group_id": info.ego_group_id,
        "map_aoi_s": info.map_aoi_s if math.isfinite(info.map_aoi_s) else None,  # no MAP yet: null (as JSON)
        "signal": None if sig is None else {"phase": sig.phase, "time_to_change_s": sig.time_to_change_s,
                                            "aoi_s": sig.aoi_s, "valid": sig.valid,
                                            "time_to_green_s": sig.time_to_green_s},
        "signals": {g: {"phase": b.phase, "time_to_change_s": b.time_to_change_s, "aoi_s": b.aoi_s,
                        "valid": b.valid, "time_to_green_s": b.time_to_green_s} for g, b in info.signals.items()},
        "tracks": [{"id": k, "x": v.xy_m[0], "y": v.xy_m[1], "speed_mps": v.speed_mps, "aoi_s": v.aoi_s,
                    "heading_rad": v.heading_rad, "accel_mps2": v.accel_mps2,
                    "hard_brake_event": v.hard_brake_event, "relayed": v.relayed, "valid": v.valid}
                   for k, v in info.tracks.items()],
        "eebl_events": len(info.eebl_events),
        "eebl": [{"origin": e.origin_id, "x": e.xy_m[0], "y": e.xy_m[1], "decel_mps2": e.decel_mps2,
                  "aoi_s": e.aoi_s, "relayed": e.relayed, "hops": e.hops, "valid": e.valid}
                 for e in info.eebl_events]}


def _trace_step(row: _Row, snap: WorldSnapshot, info: EgoInformation, ego: EgoState,
                ctrl: tuple[bool, float, float]) -> None:
    """One step of one rollout into the trace: the world and true signals (once, from the MD row), then
    this rollout's belief (``/recon/ego``), the application's inputs (``/app/input``) and the command."""
    tr = row.trace
    assert tr is not None
    t = snap.t_s
    if row.rollout == MD:
        tr.publish("/gt/vehicles", t, {
            "vehicles": [{"id": vid, "x": float(snap.xy_m[i, 0]), "y": float(snap.xy_m[i, 1]),
                          "speed_mps": float(snap.speed_mps[i]), "heading_rad": float(snap.heading_rad[i]),
                          "accel_mps2": float(snap.accel_mps2[i]), "alive": bool(snap.alive[i]),
                          "equipped": bool(snap.equipped[i])} for i, vid in enumerate(snap.vehicle_ids)]})
        tr.publish("/signals/true", t, {"ego_group_id": snap.ego_group_id, "groups": [
            {"id": g, "phase": int(snap.true_phase[k]), "time_to_change_s": float(snap.time_to_change_s[k]),
             "time_to_green_s": float(snap.time_to_green_s[k])}
            for k, g in enumerate(snap.signal_group_ids)]})
    tr.publish("/recon/ego", t, recon_message(info, row.rollout))
    tr.publish("/app/input", t, {
        "rollout": row.rollout, "s_m": ego.s_m, "speed_mps": ego.speed_mps, "accel_mps2": ego.accel_mps2,
        "x": ego.xy_m[0], "y": ego.xy_m[1], "heading_rad": ego.heading_rad,
        "stop_bar_distance_m": ego.stop_bar_distance_m, "conflict_distance_m": ego.conflict_distance_m})
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
            gt: RolloutOutcome, app_error: str = "") -> PairedOutcome:
    report = md_src.report(md.decisions) if isinstance(md_src, MonitoredSource) else None
    slacks = hazard_slacks(report, md.decisions, md.end_t_s)
    margin = failure_margin(program.application, md, slacks)
    if report is not None and APPLICATIONS[program.application].kind is AppKind.SIGNAL:
        mm = report.extra.get("failure_margin")  # the monitor knows which episodes are alarms
        if isinstance(mm, int | float) and math.isfinite(mm):
            margin = float(mm)
    return PairedOutcome(program.application, program_sha256(program), int(seed), md, gt,
                         admitted=md.failed and not gt.failed and not app_error,
                         failure_margin=round(margin, 6), hazard_slack_s=slacks, monitor=report, app_error=app_error)


def execute_paired(program: ScenarioProgram, seed: int | None = None,
                   md_source_factory: SourceFactory = ground_truth_factory,
                   trace: TraceSink | None = None, app: ApplicationUnderTest | None = None,
                   backend: str = "", plant_options: PlantOptions | None = None) -> PairedOutcome:
    """Run the message-driven and ground-truth rollouts of ``program`` under ``seed`` (default: the
    program's) and adjudicate both. ``trace`` receives the MD world, both egos' beliefs, decisions and
    controls; the MD source gets it too (for ``/v2x/*`` and ``/monitor/events``). ``app``: the
    application under test (None = the reference apps); both rollouts talk to it. ``backend``: the
    simulator that moves the vehicles (``""`` / ``builtin``: ours, both rollouts in one batch; another
    registered backend runs the MD rollout, then the GT rollout, each on a fresh plant built with the
    simulator's ``plant_options``: its map paths and server settings)."""
    seed = program.seed if seed is None else seed
    md_src = md_source_factory()
    errors: list[str] = []
    from services.simulator.backends.base import backend_info, open_plant

    if backend_info(backend).factory is None:
        md, gt = run_rollouts([program, program], [seed, seed], [md_src, GroundTruthSource()], [MD, GT],
                              [trace, trace], app=app, app_errors=errors,
                              agent_sources=[md_source_factory, ground_truth_factory])
        return _paired(program, seed, md_src, md, gt, "; ".join(e for e in errors if e))
    outs = []
    for src, tag, fac in ((md_src, MD, md_source_factory), (GroundTruthSource(), GT, ground_truth_factory)):
        plant = open_plant(backend, plant_options)
        row_errors: list[str] = []
        try:
            outs += run_rollouts([program], [seed], [src], [tag], [trace], app=app, app_errors=row_errors,
                                 plant=plant, agent_sources=[fac])
        finally:
            if plant is not None:
                plant.close()
        errors += row_errors
    return _paired(program, seed, md_src, outs[0], outs[1], "; ".join(e for e in errors if e))


def execute_batch(programs: Sequence[ScenarioProgram], seeds: Sequence[int] | None = None,
                  md_source_factory: SourceFactory = ground_truth_factory,
                  app: ApplicationUnderTest | None = None) -> list[PairedOutcome]:
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
    errors: list[str] = []
    outs = run_rollouts(rows_p, rows_s, rows_src, tags, app=app, app_errors=errors,
                        agent_sources=[md_source_factory, ground_truth_factory] * len(programs))
    return [_paired(p, s, m, outs[2 * i], outs[2 * i + 1], "; ".join(e for e in errors[2 * i:2 * i + 2] if e))
            for i, (p, s, m) in enumerate(zip(programs, seeds, md_srcs, strict=True))]


__all__ = ["GT", "LARGE_MARGIN", "MD", "PairedOutcome", "agent_seed", "agent_view", "app_context",
           "execute_batch",
           "execute_paired", "failure_margin", "hazard_slacks", "program_sha256", "recon_message", "run_rollouts"]
