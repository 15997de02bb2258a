"""A recorded md rollout of a simulator trace, step by step, for module replay.

See :mod:`services.strap.replay` for what is read from the trace, what is rebuilt
(older traces) and how; this module holds the run's inputs (:class:`RecordedRun`, :func:`load_run`) and the output keys
(:func:`decision_key`, :func:`belief_key`) both replays compare.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lastv2x.core.catalogue import Application
from lastv2x.core.program import ScenarioProgram
from services.simulator.apps import Action, AppContext, Decision, EgoState
from services.simulator.info import (
    HARD_BRAKE_THRESHOLD_MPS2,
    PHASE_AMBER,
    PHASE_GREEN,
    PHASE_RED,
    BelievedSignal,
    EEBLEvent,
    EgoInformation,
    Track,
)
from services.simulator.paired import app_context, recon_message
from services.simulator.routes import ROUTE_SAMPLE_M, project, resample

from .readers import open_recording
from .scene_schema import load_channel_map

MD = "md"
EVENT_TIMEOUT_S = 1.0  # as services.simulator.v2x.reconstruction.EVENT_TIMEOUT_S
TRACE_CHANNELS = ("/gt/vehicles", "/signals/true", "/recon/ego", "/app/input", "/app/decision", "/ctrl/ego",
                  "/v2x/belief", "/v2x/rx")

#: the seeded previous decision's fields no channel carries (rebuilt from the decision history,
#: on every trace)
SEED_APPROXIMATION = "Decision.after_epoch / evidence_t_s of the seeded previous decision"
#: what is rebuilt from ``/recon/ego`` when a trace predates its full payload (``signals``, ``eebl``,
#: ``map_aoi_s``, full tracks: TRACE_REQUESTS.md second pass)
BELIEF_APPROXIMATIONS: tuple[str, ...] = (
    "EgoInformation.signals[g].time_to_green_s",
    "EgoInformation.signals (groups other than the associated one)",
    "Track.heading_rad / accel_mps2 / hard_brake_event / relayed / valid",
    "EgoInformation.eebl_events (placed at the vehicles seen braking hard)",
    "EgoInformation.map_aoi_s (2 Hz summary in /v2x/belief)",
)
#: what is rebuilt from ``/gt/vehicles`` + the program when a trace has no md ``/app/input``
EGO_APPROXIMATION = "EgoState.s_m / stop_bar_distance_m / conflict_distance_m (rebuilt from xy + program)"
#: every module input :func:`load_run` can rebuild; :attr:`RecordedRun.approximated` says which
#: ones a given trace needed (on traces of today's simulator: only :data:`SEED_APPROXIMATION`)
APPROXIMATED_INPUTS: tuple[str, ...] = (*BELIEF_APPROXIMATIONS, EGO_APPROXIMATION, SEED_APPROXIMATION)

DecisionKey = tuple[str, float | None, float]
DecideFn = Callable[[EgoInformation, EgoState, AppContext, "Decision | None"], Decision]


# ---------------------------------------------------------------------------- outputs
def decision_key(dec: Decision | Mapping[str, Any] | None) -> DecisionKey | None:
    """A decision's observable output: (action, target speed, braking demand), rounded to 1e-6."""
    if dec is None:
        return None
    if isinstance(dec, Mapping):
        action, target, brake = dec.get("action"), dec.get("target_speed_mps"), dec.get("brake_mps2") or 0.0
    else:
        action, target, brake = dec.action.value, dec.target_speed_mps, dec.brake_mps2
    return (str(action), None if target is None else round(float(target), 6), round(float(brake), 6))


def recon_payload(info: EgoInformation, rollout: str = MD) -> dict[str, Any]:
    """``info`` as the simulator publishes it on ``/recon/ego`` (:func:`services.simulator.paired.recon_message`)."""
    return recon_message(info, rollout)


_RECON_RULES: list[Any] = []


def belief_key(payload: Mapping[str, Any] | EgoInformation) -> tuple[int, ...]:
    """A ``/recon/ego`` payload (or an ``EgoInformation``) vectorized by the platform map's rules."""
    if isinstance(payload, EgoInformation):
        payload = recon_payload(payload)
    if not _RECON_RULES:
        cmap = load_channel_map("platform")
        feats = cmap.channel_features["/recon/ego"]
        _RECON_RULES.extend([feats, cmap.rules["/recon/ego"]])
    feats, rules = _RECON_RULES
    row = dict.fromkeys(feats, 0)
    for _f, fn in rules:
        for feat, code in fn(payload, {}):
            row[feat] = max(row[feat], code)
    return tuple(row[f] for f in feats)


# ---------------------------------------------------------------------------- recorded run
@dataclass(frozen=True, eq=False)
class RecordedRun:
    """One md rollout of a trace, step by step, with the program it ran."""

    program: ScenarioProgram
    seed: int
    ctx: AppContext
    timestamps_ns: np.ndarray            # (K,) step times, /recon/ego md
    ego: tuple[EgoState, ...]
    info: tuple[EgoInformation, ...]
    recon: tuple[Mapping[str, Any], ...]    # recorded /recon/ego md payloads
    decisions: tuple[Decision | None, ...]  # recorded decision in force at each step
    expected: tuple[DecisionKey | None, ...]  # recorded output at each step (see recorded_keys)
    vehicles: tuple[Mapping[str, Any], ...]  # /gt/vehicles payload per step
    signals: tuple[Mapping[str, Any], ...]   # /signals/true payload per step
    source: str = ""
    #: the inputs this run rebuilt instead of reading them (subset of APPROXIMATED_INPUTS, in its order)
    approximated: tuple[str, ...] = APPROXIMATED_INPUTS
    #: recorded /v2x/rx messages the md ego received at each step (empty tuples: none, or not traced)
    rx: tuple[tuple[Mapping[str, Any], ...], ...] = ()
    rx_traced: bool = False  # the trace has /v2x/rx messages (so an empty step means: nothing received)

    @property
    def n_steps(self) -> int:
        return len(self.ego)

    @property
    def application(self) -> Application:
        return self.program.application

    def steps_of(self, frame_timestamps_ns: Sequence[int] | np.ndarray) -> np.ndarray:
        """Step index of each aligned frame timestamp (the latest step at or before it)."""
        idx = np.searchsorted(self.timestamps_ns, np.asarray(frame_timestamps_ns, np.int64), side="right") - 1
        return np.clip(idx, 0, self.n_steps - 1)

    def recorded_keys(self) -> list[DecisionKey | None]:
        """Recorded output per step: the action in force (``/app/decision``, on change)
        with the per-step target speed / braking demand the controller received
        (``/ctrl/ego``: they change every step without a new ``/app/decision``)."""
        return list(self.expected)


def _decision_from_payload(msg: Mapping[str, Any], t_s: float, after_before: bool) -> Decision:
    action = Action(msg["action"])
    after = bool(msg.get("epoch") or msg.get("committed") or action in (Action.BRAKE, Action.YIELD)
                 or (after_before and msg.get("reason") != "before the decision epoch"))
    return Decision(Application(msg["app"]), action, t_s, str(msg.get("reason", "")),
                    target_speed_mps=msg.get("target_speed_mps"), brake_mps2=float(msg.get("brake_mps2") or 0.0),
                    epoch=bool(msg.get("epoch")), after_epoch=after, committed=bool(msg.get("committed")),
                    aoi_s=msg.get("aoi_s"), info_valid=bool(msg.get("info_valid", True)),
                    evidence_t_s=t_s if action in (Action.BRAKE, Action.YIELD) else None)


class EgoGeometry:
    """Arc length, stop-bar and conflict distances of the ego, as the traffic core computes them."""

    def __init__(self, program: ScenarioProgram):
        route = program.ego.route
        self.samples, self.length = resample(route.points_xy_m, ROUTE_SAMPLE_M)
        self.half = program.ego.length_m / 2.0
        self.bars = [c.stop_bar_s_m for c in route.crossings]
        cs = route.conflict_s_m
        self.conflict = math.nan if cs is None else float(cs)
        self.groups = [c.signal_group_id for c in route.crossings]

    def arc_lengths(self, xy: np.ndarray) -> np.ndarray:
        if xy.shape[0] == 0:
            return np.zeros(0)
        return project(self.samples, ROUTE_SAMPLE_M, self.length, xy)[0]

    def next_bar(self, s: float) -> int:
        """Index of the next stop bar ahead of the front bumper (len(bars) when none)."""
        return bisect.bisect_right(self.bars, s + self.half)

    def state(self, t_s: float, s: float, v: Mapping[str, Any]) -> EgoState:
        k = self.next_bar(s)
        bar_d = self.bars[k] - (s + self.half) if k < len(self.bars) else math.inf
        c = self.conflict
        cd = None if (math.isnan(c) or s > c) else float(c - s)
        return EgoState(t_s, float(s), float(v["speed_mps"]), float(v["accel_mps2"]), (float(v["x"]), float(v["y"])),
                        float(v["heading_rad"]), float(bar_d), cd)


def _expected_key(dec: Decision | None, ctrl: Mapping[str, Any] | None) -> DecisionKey | None:
    if dec is None:
        return None
    if ctrl is None:
        return decision_key(dec)
    target = ctrl.get("v_target_mps") if dec.action is Action.ADVISE else dec.target_speed_mps
    brake = ctrl.get("brake_mps2") if dec.action is Action.BRAKE else dec.brake_mps2
    return (dec.action.value, None if target is None else round(float(target), 6), round(float(brake or 0.0), 6))


def _time_to_green(phase: int, ttc: float, red_s: float | None) -> float | None:
    if phase == PHASE_GREEN:
        return 0.0
    if phase == PHASE_RED:
        return ttc
    if phase == PHASE_AMBER and red_s is not None:
        return ttc + red_s
    return None


def _hard_braking(v: Mapping[str, Any]) -> bool:
    return (float(v.get("accel_mps2", 0.0)) <= -HARD_BRAKE_THRESHOLD_MPS2 and float(v.get("speed_mps", 0.0)) > 0.0
            and bool(v.get("alive", True)))


def read_messages(path: str | Path, channels: Iterable[str] = TRACE_CHANNELS) -> list[tuple[str, int, Any]]:
    with open_recording(path) as rec:
        declared = set(rec.channels())
        rec.selected = frozenset(c for c in channels if c in declared)
        return [(c, int(t), m) for c, t, m in rec]


def load_run(trace: str | Path | Sequence[tuple[str, int, Any]], program: ScenarioProgram,
             seed: int | None = None) -> RecordedRun:
    """Rebuild the md rollout of a simulator trace step by step (module docstring).

    ``trace`` is a path or the decoded ``(channel, timestamp_ns, payload)``
    messages; ``program`` the program that ran (the trace does not carry it);
    ``seed`` the run's seed (default the program's; only the V2X replay uses it).
    """
    msgs = read_messages(trace) if isinstance(trace, (str, Path)) else list(trace)
    by_ts: dict[str, dict[int, Any]] = {c: {} for c in TRACE_CHANNELS}
    decisions_md: list[tuple[int, Mapping[str, Any]]] = []
    beliefs: list[tuple[int, Mapping[str, Any]]] = []
    rx_by_ts: dict[int, list[Mapping[str, Any]]] = {}
    rx_traced = False
    for ch, ts, m in msgs:
        if ch in ("/recon/ego", "/app/input", "/app/decision", "/ctrl/ego") and m.get("rollout", MD) != MD:
            continue
        if ch == "/app/decision":
            decisions_md.append((ts, m))
        elif ch == "/v2x/belief":
            beliefs.append((ts, m))
        elif ch == "/v2x/rx":
            rx_traced = True
            rx_by_ts.setdefault(ts, []).extend(m.get("messages") or ())
        elif ch in by_ts:
            by_ts[ch][ts] = m
    steps = sorted(by_ts["/recon/ego"])
    if not steps:
        raise ValueError(f"{trace!s:.80}: no md /recon/ego messages: not a paired-execution trace")
    missing = [t for t in steps if t not in by_ts["/gt/vehicles"]]
    if missing:
        raise ValueError(f"{len(missing)} md steps lack /gt/vehicles (first at {missing[0]} ns)")
    geom = EgoGeometry(program)
    ctx = app_context(program)
    plans = {g.id: g for g in program.signal_groups}
    red_s = {g: p.cycle_s - p.green_s - p.amber_s for g, p in plans.items()}
    vehicles = [by_ts["/gt/vehicles"][t] for t in steps]
    signals = [by_ts["/signals/true"].get(t, {"groups": []}) for t in steps]
    ego_xy = np.array([[v["vehicles"][0]["x"], v["vehicles"][0]["y"]] for v in vehicles], dtype=np.float64)
    s_all = geom.arc_lengths(ego_xy)
    times = np.asarray(steps, np.int64)
    dt = float(program.dt_s)
    step_t = [round(t / 1e9 / dt) * dt for t in steps]  # the simulator's k * dt, bit for bit
    # ground truth per vehicle id over time: for track attributes at the information's timestamp
    history: dict[str, list[tuple[float, Mapping[str, Any]]]] = {}
    for t, v in zip(steps, vehicles, strict=True):
        for veh in v["vehicles"][1:]:
            history.setdefault(veh["id"], []).append((t / 1e9, veh))
    hist_t = {k: [x[0] for x in h] for k, h in history.items()}

    def truth_at(vid: str, t_s: float) -> Mapping[str, Any] | None:
        h = history.get(vid)
        if not h:
            return None
        i = bisect.bisect_right(hist_t[vid], t_s + 1e-6) - 1
        return h[max(i, 0)][1]

    # the recorded inputs where the trace has them (every step, else the rebuilt ones for all)
    inputs = by_ts["/app/input"]
    ego_recorded = all(t in inputs for t in steps)
    belief_recorded = all(_full_belief(by_ts["/recon/ego"][t]) for t in steps)
    approximated = tuple(a for a in APPROXIMATED_INPUTS
                         if not ((a in BELIEF_APPROXIMATIONS and belief_recorded)
                                 or (a == EGO_APPROXIMATION and ego_recorded)))
    last_hard: dict[str, tuple[float, Mapping[str, Any]]] = {}
    dec_i = 0
    current: Decision | None = None
    after_seen = False
    bel_i = 0
    belief: tuple[float, Mapping[str, Any]] | None = None
    egos, infos, recon, decs, expected = [], [], [], [], []
    for k, t in enumerate(steps):
        t_s = step_t[k]
        while dec_i < len(decisions_md) and decisions_md[dec_i][0] <= t:
            ts_d, m = decisions_md[dec_i]
            current = _decision_from_payload(m, round(ts_d / 1e9 / dt) * dt, after_seen)
            after_seen = current.after_epoch
            dec_i += 1
        while bel_i < len(beliefs) and beliefs[bel_i][0] <= t:
            belief = (round(beliefs[bel_i][0] / 1e9 / dt) * dt, beliefs[bel_i][1])
            bel_i += 1
        for veh in vehicles[k]["vehicles"][1:]:
            if _hard_braking(veh):
                last_hard[veh["id"]] = (t_s, veh)
        egos.append(_recorded_ego(t_s, inputs[t]) if ego_recorded
                    else geom.state(t_s, float(s_all[k]), vehicles[k]["vehicles"][0]))
        r = by_ts["/recon/ego"][t]
        recon.append(r)
        infos.append(_recorded_information(t_s, r) if belief_recorded
                     else _information(t_s, r, red_s, truth_at, last_hard, belief))
        decs.append(current)
        expected.append(_expected_key(current, by_ts["/ctrl/ego"].get(t)))
    return RecordedRun(program, program.seed if seed is None else int(seed), ctx, times, tuple(egos), tuple(infos),
                       tuple(recon), tuple(decs), tuple(expected), tuple(vehicles), tuple(signals),
                       str(trace) if isinstance(trace, (str, Path)) else "", approximated,
                       tuple(tuple(rx_by_ts.get(t, ())) for t in steps), rx_traced)


def _num(x: Any, none: float = math.inf) -> float:
    """A traced number (JSON ``null`` stands for a non-finite value: ``none``)."""
    return none if x is None else float(x)


def _full_belief(r: Mapping[str, Any]) -> bool:
    """``/recon/ego`` carries the whole ``EgoInformation`` (TRACE_REQUESTS.md §3, second pass)."""
    return ("signals" in r and "eebl" in r and "map_aoi_s" in r
            and all("heading_rad" in tr and "valid" in tr for tr in r.get("tracks") or ()))


def _recorded_ego(t_s: float, m: Mapping[str, Any]) -> EgoState:
    """The application's own-sensor input as recorded on ``/app/input``."""
    cd = m.get("conflict_distance_m")
    return EgoState(t_s, float(m["s_m"]), float(m["speed_mps"]), float(m["accel_mps2"]), (float(m["x"]), float(m["y"])),
                    float(m["heading_rad"]), _num(m.get("stop_bar_distance_m")), None if cd is None else float(cd))


def _recorded_information(t_s: float, r: Mapping[str, Any]) -> EgoInformation:
    """The ego's belief as recorded on ``/recon/ego`` (the inverse of ``recon_message``)."""
    signals = {str(g): BelievedSignal(int(b["phase"]), _num(b.get("time_to_change_s")), _num(b.get("aoi_s")),
                                      bool(b.get("valid", True)),
                                      None if b.get("time_to_green_s") is None else float(b["time_to_green_s"]))
               for g, b in (r.get("signals") or {}).items()}
    tracks = {str(tr["id"]): Track(str(tr["id"]), (float(tr["x"]), float(tr["y"])), float(tr["speed_mps"]),
                                   float(tr["heading_rad"]), float(tr["accel_mps2"]), _num(tr.get("aoi_s")),
                                   bool(tr.get("hard_brake_event", False)), bool(tr.get("relayed", False)),
                                   bool(tr.get("valid", True)))
              for tr in r.get("tracks") or ()}
    events = tuple(EEBLEvent(str(e["origin"]), (float(e["x"]), float(e["y"])), float(e["decel_mps2"]),
                             _num(e.get("aoi_s")), bool(e.get("relayed", False)), int(e.get("hops", 0)),
                             bool(e.get("valid", True)))
                   for e in r.get("eebl") or ())
    gid = r.get("ego_group_id")
    return EgoInformation(t_s, signals, None if gid is None else str(gid), tracks, events, _num(r.get("map_aoi_s")))


def _information(t_s: float, r: Mapping[str, Any], red_s: Mapping[str, float],
                 truth_at: Callable[[str, float], Mapping[str, Any] | None],
                 last_hard: Mapping[str, tuple[float, Mapping[str, Any]]],
                 belief: tuple[float, Mapping[str, Any]] | None) -> EgoInformation:
    gid = r.get("ego_group_id")
    signals: dict[str, BelievedSignal] = {}
    sig = r.get("signal")
    if gid is not None and sig is not None:
        phase, ttc = int(sig["phase"]), float(sig["time_to_change_s"])
        signals[gid] = BelievedSignal(phase, ttc, float(sig["aoi_s"]), bool(sig.get("valid", True)),
                                      _time_to_green(phase, ttc, red_s.get(gid)))
    tracks: dict[str, Track] = {}
    for tr in r.get("tracks") or ():
        aoi = float(tr["aoi_s"])
        truth = truth_at(tr["id"], t_s - aoi) or {}
        tracks[tr["id"]] = Track(tr["id"], (float(tr["x"]), float(tr["y"])), float(tr["speed_mps"]),
                                 float(truth.get("heading_rad", 0.0)), float(truth.get("accel_mps2", 0.0)), aoi,
                                 _hard_braking(truth) if truth else False, False)
    n_events = int(r.get("eebl_events") or 0)
    events: list[EEBLEvent] = []
    if n_events:
        recent = sorted(((ts, vid, v) for vid, (ts, v) in last_hard.items() if t_s - ts <= EVENT_TIMEOUT_S),
                        key=lambda x: (-x[0], x[1]))
        for ts, vid, v in recent[:n_events]:
            events.append(EEBLEvent(vid, (float(v["x"]), float(v["y"])), -float(v["accel_mps2"]), t_s - ts))
    map_aoi = 0.0
    if belief is not None and belief[1].get("map_aoi_s") is not None:
        map_aoi = float(belief[1]["map_aoi_s"]) + (t_s - belief[0])
    return EgoInformation(t_s, signals, gid, tracks, tuple(events), map_aoi)


__all__ = ["APPROXIMATED_INPUTS", "BELIEF_APPROXIMATIONS", "EGO_APPROXIMATION", "MD", "SEED_APPROXIMATION", "TRACE_CHANNELS", "DecideFn", "DecisionKey", "RecordedRun", "belief_key",
           "decision_key", "load_run", "read_messages", "recon_payload"]
