"""Kinematic traffic core: struct-of-arrays state over ``(B, N)`` = (scenarios, vehicles). The rules below are
computed by the compiled kernels of :mod:`services.simulator.kernels.traffic`; this module packs a
:class:`Scene` for them and wraps what they return in a :class:`TrafficState`.

Each vehicle moves along its own route polyline (arc length ``s``, centre of the
vehicle). One fixed ``dt`` step is two-phase: every vehicle *decides* an
acceleration from the state at ``t`` (nothing moves meanwhile), then *all*
integrate. ``B`` scenarios step at once; paired execution is ``B = 2`` (message-
driven and ground-truth rollouts of one scene), ExecuteBatch ``B = 2 x programs``.

Longitudinal model (per vehicle, the min of the active terms):

* **IDM** (Treiber, Hennecke & Helbing 2000) towards the desired speed, with the
  improved free-road term of IIDM above it (Treiber & Kesting 2013, ch. 11.3.6), and
  the interaction term with the leader found along shared route geometry
  (:func:`services.simulator.routes.shared_geometry`): a vehicle sees the vehicle
  ahead on the same lane/movement ids (all pairs, in the kernel).
  Above ``LANE_SEARCH_MIN_VEHICLES`` vehicles per row (bench grids, dense traffic) the
  all-pairs ``(B, N, N)`` search becomes a per-lane sorted one (:func:`lane_leaders`,
  O(N log N) per step): every vehicle sits on one segment of its route, the vehicles of a
  segment are kept sorted by perceived position, and each observer binary-searches the
  segments of its own route from where it is onwards. The leader is the same whenever two
  routes share at most one run of segments (``tests/simulator/test_traffic.py`` checks it
  against all-pairs); paired executions (1-20 vehicles) keep the all-pairs search and so
  their golden bytes.
  Drivers perceive their leader with a reaction delay: the leader's state
  ``reaction_time_s`` ago, extrapolated at its then speed (Treiber's human-driver
  delay), so a sudden hard brake ahead is noticed late; steady following is exact.
  For what it perceives a driver brakes no harder than its profile's
  ``decel_emergency_mps2`` (a person's emergency braking, about 0.56 g for a normal
  driver, not the tyres' ``DECEL_MAX_MPS2``): a hard brake noticed late can end in
  a rear-end that a warning in time prevents.
* **Stop bar**: a vehicle that must stop at its next stop bar follows the constant
  deceleration that ends at the bar, ``a = -v^2 / (2 (d - gap))``, once that demand
  reaches its activation level (its comfortable deceleration for background
  drivers; 0 for an application-commanded stop or yield, which is already delayed by the
  driver's alerted reaction, ``controller.EgoController``).
* **Signals** (background drivers and conflict-application egos; a signal-
  application ego obeys only its application): at amber/red a driver stops if it
  can at ``COMFORT_DECEL_MPS2`` (amber) or at ``DECEL_MAX_MPS2`` (red), else goes;
  the choice latches until green or until the bar is passed.
* **Drivers without V2X** (``lastv2x.core.perception``): a vehicle with a sight distance decides
  at an amber/red only once its stop bar is within that distance; one with a perception range
  sees no leader beyond that bumper gap.
* **Scripted behaviours**: hard brake at ``t`` (then stays stopped), red-light runner
  and no-yield (ignore signals), yield (stop at the bar while the ego approaches the
  conflict point within ``CONFLICT_WINDOW_S`` and moves), arrive at the conflict point
  at ``t`` (a constant planned speed until the conflict point is passed).

The ego receives an :class:`EgoControl` per scenario from its application; agents that run an
application (``ProgramVehicle.application``) an :class:`AgentControl` on top of their driver model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lastv2x.core.program import ProgramVehicle, ScenarioProgram
from lastv2x.core.spec import BehaviourKind, DriverProfile
from services.simulator.kernels import traffic as kernels
from services.simulator.routes import RouteTable, shared_geometry
from services.simulator.signals import SignalTable


@dataclass(frozen=True)
class DriverParams:
    """IDM parameters of one driver profile."""

    desired_speed_factor: float  # [-] x lane speed limit, where a program leaves the desired speed to the profile
    time_gap_s: float  # T [s]
    min_gap_m: float  # s0, standstill bumper gap [m]
    accel_max_mps2: float  # a [m/s2]
    decel_comfort_mps2: float  # b [m/s2]
    reaction_time_s: float  # leader perception delay [s]
    decel_emergency_mps2: float  # the hardest it brakes for the leader it perceives (the IDM term's floor) [m/s2]


class IDM:
    """Model constants (Treiber & Kesting, *Traffic Flow Dynamics*, 2013, Table 11.2 ranges)."""

    DELTA = 4.0  # acceleration exponent [-]
    DECEL_MAX_MPS2 = kernels.DECEL_MAX_MPS2  # the step's constants live with it (services/simulator/kernels/traffic.py)
    STOP_BAR_GAP_M = kernels.STOP_BAR_GAP_M
    STOP_HOLD_M = kernels.STOP_HOLD_M
    HOLD_SPEED_MPS = kernels.HOLD_SPEED_MPS
    GAP_FLOOR_M = kernels.GAP_FLOOR_M
    # decel_emergency_mps2: a person brakes for a hazard it perceives well below the tyres' limit
    # (DECEL_MAX_MPS2): AASHTO, A Policy on Geometric Design of Highways and Streets (2011), 3.2.2, after
    # Fambro et al., NCHRP Report 400 (1997): "most drivers decelerate at a rate greater than 4.5 m/s2 when
    # confronted with the need to stop for an unexpected object in the roadway", 90 % above 3.4 m/s2.
    # Normal 5.5 m/s2 (about 0.56 g) sits above that "most drivers" floor; cautious 5.0 and aggressive
    # 6.5 spread it by profile (our assumption). Stop bars, scripted brakes and applications' braking
    # demands (a warned driver's braking at the application's deceleration) are not capped by it.
    PROFILES: dict[DriverProfile, DriverParams] = {
        DriverProfile.CAUTIOUS: DriverParams(0.90, 1.8, 3.0, 1.0, 1.5, 1.2, 5.0),
        DriverProfile.NORMAL: DriverParams(1.00, 1.4, 2.0, 1.5, 2.0, 1.0, 5.5),
        DriverProfile.AGGRESSIVE: DriverParams(1.15, 1.0, 1.5, 2.5, 3.0, 0.8, 6.5),
    }


# vehicles per row above which leaders come from the per-lane sorted search (measured on the race grid:
# all-pairs is faster up to ~300 vehicles, 381 vs 480 us a step at 200, 5.2 vs 1.0 ms at 800)
LANE_SEARCH_MIN_VEHICLES = 256
NO_VALUE = np.nan


@dataclass(frozen=True, eq=False)
class Scene:
    """Static description of ``B`` scenarios padded to ``N`` vehicles and ``C`` crossings.

    Vehicle 0 of every row is the ego. Padding rows have ``valid == False``.
    """

    dt_s: float
    vehicle_ids: tuple[tuple[str, ...], ...]  # per row, unpadded
    valid: np.ndarray  # (B, N) bool
    routes: RouteTable
    offset: np.ndarray  # (B, N, N) j's arc length -> i's; NaN = no shared geometry ((B, 1, N), the ego's, under lane search)
    share_lo: np.ndarray  # (B, N, N) shared run of j's arc length
    share_hi: np.ndarray
    bar_s: np.ndarray  # (B, N, C+1) stop bars along the route, +inf padded
    bar_group: np.ndarray  # (B, N, C+1) signal group index, -1 none
    conflict_s: np.ndarray  # (B, N) primary conflict point on the route, NaN none
    length_m: np.ndarray  # (B, N)
    equipped: np.ndarray  # (B, N) bool
    v_desired: np.ndarray  # (B, N)
    v_initial: np.ndarray  # (B, N)
    v_plan: np.ndarray  # (B, N) planned cruise until the conflict point, NaN none
    s_start: np.ndarray  # (B, N)
    time_gap_s: np.ndarray
    min_gap_m: np.ndarray
    accel_max: np.ndarray
    decel_comfort: np.ndarray
    decel_emergency: np.ndarray  # (B, N) the IDM term's floor (DriverParams.decel_emergency_mps2) [m/s2]
    delay_steps: np.ndarray  # (B, N) int
    brake_t_s: np.ndarray  # (B, N) hard-brake onset, +inf none
    brake_decel: np.ndarray  # (B, N)
    ignores_signals: np.ndarray  # (B, N) bool
    yields_to_ego: np.ndarray  # (B, N) bool
    ego_obeys_signals: np.ndarray  # (B,) bool: the ego follows true signals itself (conflict apps)
    signals: SignalTable  # (B, G)
    group_ids: tuple[tuple[str, ...], ...]  # per row
    respawn: bool = False  # benches: a vehicle that leaves its route re-enters at its start
    seg_key: np.ndarray | None = None  # lane search: (B, N, S) segment keys along each route (-1 pad), else None
    seg_start: np.ndarray | None = None  # lane search: (B, N, S) their start arc lengths on the route (+inf pad)
    # drivers without V2X (lastv2x.core.perception): None = unlimited for everyone (the arrays only when one is set)
    sight_m: np.ndarray | None = None  # (B, N) signals acted on only within this distance of the bar (+inf none)
    perceive_m: np.ndarray | None = None  # (B, N) leaders perceived only within this bumper gap (+inf none)
    # derived in __post_init__: the half lengths and delay classes (the per-lane search) and the compiled step's
    # packed parameters (services/simulator/kernels/traffic.py: rows named there)
    half_len: np.ndarray = field(init=False, repr=False)
    delay_classes: tuple[int, ...] = field(init=False, repr=False)
    k_drv: np.ndarray = field(init=False, repr=False)  # (kernels.N_DRV, B, N) float64
    k_int: np.ndarray = field(init=False, repr=False)  # (kernels.N_INT, B, N) int64
    k_offset: np.ndarray = field(init=False, repr=False)
    k_share: np.ndarray = field(init=False, repr=False)  # (2, B, M, N): share_lo, share_hi
    k_bars: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False)
    k_none: tuple[np.ndarray, np.ndarray, np.ndarray] = field(init=False, repr=False)  # no agents, no given leaders

    def __post_init__(self) -> None:
        b, n = self.valid.shape
        put = object.__setattr__
        put(self, "half_len", self.length_m / 2)
        put(self, "delay_classes", tuple(sorted(set(self.delay_steps.ravel().tolist()))))
        obeys = ~self.ignores_signals
        obeys[:, 0] = self.ego_obeys_signals
        drv = np.empty((kernels.N_DRV, b, n))
        for row, arr in ((kernels.V_DESIRED, self.v_desired), (kernels.V_PLAN, self.v_plan),
                         (kernels.ACCEL_MAX, self.accel_max), (kernels.DECEL_COMFORT, self.decel_comfort),
                         (kernels.TIME_GAP, self.time_gap_s), (kernels.MIN_GAP, self.min_gap_m),
                         (kernels.IIDM_EXP, self.accel_max * IDM.DELTA / self.decel_comfort),
                         (kernels.INV_2SQRT_AB, 1.0 / (2.0 * np.sqrt(self.accel_max * self.decel_comfort))),
                         (kernels.BRAKE_T, self.brake_t_s), (kernels.BRAKE_DECEL, self.brake_decel),
                         (kernels.HALF_LEN, self.half_len), (kernels.LENGTH, self.length_m),
                         (kernels.CONFLICT_S, self.conflict_s),
                         (kernels.SIGHT, np.inf if self.sight_m is None else self.sight_m),
                         (kernels.PERCEIVE, np.inf if self.perceive_m is None else self.perceive_m),
                         (kernels.S_START, self.s_start), (kernels.V_INITIAL, self.v_initial),
                         (kernels.ROUTE_LEN, self.routes.length_m), (kernels.DECEL_EMERGENCY, self.decel_emergency)):
            drv[row] = arr
        drv_i = np.empty((kernels.N_INT, b, n), np.int64)
        drv_i[kernels.DELAY], drv_i[kernels.OBEYS], drv_i[kernels.YIELDS] = self.delay_steps, obeys, self.yields_to_ego
        put(self, "k_drv", drv)
        put(self, "k_int", drv_i)
        put(self, "k_offset", np.ascontiguousarray(self.offset, np.float64))
        put(self, "k_share", np.ascontiguousarray(np.stack([self.share_lo, self.share_hi]), np.float64))
        put(self, "k_bars", (np.ascontiguousarray(self.bar_s, np.float64),
                             np.ascontiguousarray(self.bar_group, np.int64)))
        put(self, "k_none", (np.full((2, b, n), np.nan), np.zeros((b, n), bool), np.zeros((2, 1, 1))))

    @property
    def shape(self) -> tuple[int, int]:
        return self.valid.shape  # type: ignore[return-value]

    @property
    def history_len(self) -> int:
        return int(self.delay_steps.max()) + 1

    @classmethod
    def from_programs(cls, programs: Sequence[ScenarioProgram], ego_obeys_signals: Sequence[bool],
                      *, respawn: bool = False, lane_search: bool | None = None) -> Scene:
        """``lane_search``: leaders by the per-lane sorted search (None: above LANE_SEARCH_MIN_VEHICLES
        vehicles per row)."""
        dts = {p.dt_s for p in programs}
        if len(dts) != 1:
            raise ValueError(f"a batch needs one dt_s, got {sorted(dts)}")
        dt = dts.pop()
        rows = [p.vehicles for p in programs]
        b, n = len(rows), max(len(r) for r in rows)
        c = max(len(v.route.crossings) for r in rows for v in r)
        g = max((len(p.signal_groups) for p in programs), default=0)
        valid = np.zeros((b, n), bool)
        f = {k: np.zeros((b, n)) for k in ("length", "vd", "vi", "s0", "T", "gap", "amax", "bcomf", "bemg", "bdec")}
        delay = np.zeros((b, n), np.int64)
        v_plan = np.full((b, n), np.nan)
        conflict = np.full((b, n), np.nan)
        brake_t = np.full((b, n), np.inf)
        eq = np.zeros((b, n), bool)
        ign = np.zeros((b, n), bool)
        yld = np.zeros((b, n), bool)
        bar_s = np.full((b, n, c + 1), np.inf)
        bar_g = np.full((b, n, c + 1), -1, np.int64)
        lane = n > LANE_SEARCH_MIN_VEHICLES if lane_search is None else lane_search
        m = 1 if lane else n  # lane search keeps the shared geometry of the ego only (the adjudicator's)
        offset = np.full((b, m, n), np.nan)
        lo = np.full((b, m, n), np.inf)
        hi = np.full((b, m, n), -np.inf)
        routes: list[list] = []
        tables = []
        for bi, (prog, row) in enumerate(zip(programs, rows, strict=True)):
            gidx = {sg.id: k for k, sg in enumerate(prog.signal_groups)}
            tables.append(SignalTable.from_plans(prog.signal_groups))
            routes.append([v.route for v in row] + [None] * (n - len(row)))
            o, l_, h = shared_geometry(routes[-1], n, [0] if lane else None)
            offset[bi], lo[bi], hi[bi] = o, l_, h
            for ni, v in enumerate(row):
                valid[bi, ni] = True
                _fill_vehicle(v, bi, ni, f, dt, delay, v_plan, conflict, brake_t, eq, ign, yld)
                for k, cr in enumerate(v.route.crossings):
                    bar_s[bi, ni, k] = cr.stop_bar_s_m
                    bar_g[bi, ni, k] = gidx[cr.signal_group_id] if cr.signal_group_id is not None else -1
        sight = np.array([[np.inf if v.sight_distance_m is None else v.sight_distance_m for v in r]
                          + [np.inf] * (n - len(r)) for r in rows])
        perceive = np.array([[np.inf if v.perception_range_m is None else v.perception_range_m for v in r]
                             + [np.inf] * (n - len(r)) for r in rows])
        seg_key = seg_start = None
        if lane:  # each route's segments as (key, start) rows; keys are global over the batch
            sn = max(len(v.route.segments) for r in rows for v in r)
            seg_key = np.full((b, n, sn), -1, np.int64)
            seg_start = np.full((b, n, sn), np.inf)
            keys: dict[tuple[int, str], int] = {}
            for bi, row in enumerate(rows):
                for ni, v in enumerate(row):
                    for k, seg in enumerate(v.route.segments):
                        seg_key[bi, ni, k] = keys.setdefault((bi, seg.id), len(keys))
                        seg_start[bi, ni, k] = seg.start_s_m
        return cls(
            dt_s=dt, vehicle_ids=tuple(tuple(v.id for v in r) for r in rows), valid=valid,
            routes=RouteTable.build(routes, n), offset=offset, share_lo=lo, share_hi=hi, bar_s=bar_s,
            bar_group=bar_g, conflict_s=conflict, length_m=np.where(valid, f["length"], 4.5), equipped=eq,
            v_desired=np.where(valid, f["vd"], 1.0), v_initial=f["vi"], v_plan=v_plan, s_start=f["s0"],
            time_gap_s=np.where(valid, f["T"], 1.0), min_gap_m=np.where(valid, f["gap"], 1.0),
            accel_max=np.where(valid, f["amax"], 1.0), decel_comfort=np.where(valid, f["bcomf"], 1.0),
            decel_emergency=np.where(valid, f["bemg"], IDM.DECEL_MAX_MPS2),
            delay_steps=delay, brake_t_s=brake_t, brake_decel=f["bdec"], ignores_signals=ign, yields_to_ego=yld,
            ego_obeys_signals=np.asarray(ego_obeys_signals, bool), signals=SignalTable.stack(tables, g),
            group_ids=tuple(tuple(sg.id for sg in p.signal_groups) for p in programs), respawn=respawn,
            seg_key=seg_key, seg_start=seg_start, sight_m=sight if np.isfinite(sight).any() else None,
            perceive_m=perceive if np.isfinite(perceive).any() else None)


def _fill_vehicle(v: ProgramVehicle, bi: int, ni: int, f: dict[str, np.ndarray], dt: float, delay: np.ndarray,
                  v_plan: np.ndarray, conflict: np.ndarray, brake_t: np.ndarray, eq: np.ndarray, ign: np.ndarray,
                  yld: np.ndarray) -> None:
    prm = IDM.PROFILES[v.profile]
    f["length"][bi, ni] = v.length_m
    f["vd"][bi, ni] = v.desired_speed_mps
    f["vi"][bi, ni] = v.initial_speed_mps
    f["s0"][bi, ni] = v.start_s_m
    f["T"][bi, ni] = prm.time_gap_s
    f["gap"][bi, ni] = prm.min_gap_m
    f["amax"][bi, ni] = prm.accel_max_mps2
    f["bcomf"][bi, ni] = prm.decel_comfort_mps2
    f["bemg"][bi, ni] = prm.decel_emergency_mps2
    reaction = prm.reaction_time_s if v.reaction_time_s is None else v.reaction_time_s
    delay[bi, ni] = int(round(reaction / dt))
    eq[bi, ni] = v.equipped
    cs = v.route.conflict_s_m
    conflict[bi, ni] = np.nan if cs is None else cs
    if v.arrive_conflict_at_s is not None and cs is not None and cs > v.start_s_m:
        plan = float(np.clip((cs - v.start_s_m) / v.arrive_conflict_at_s, 0.5, 40.0))
        v_plan[bi, ni] = plan
        f["vi"][bi, ni] = plan
    kind = v.behaviour.kind
    if kind is BehaviourKind.HARD_BRAKE:
        brake_t[bi, ni] = v.behaviour.at_time_s if v.behaviour.at_time_s is not None else 0.0
        f["bdec"][bi, ni] = v.behaviour.decel_mps2
    ign[bi, ni] = kind in (BehaviourKind.RED_LIGHT_RUNNER, BehaviourKind.NO_YIELD)
    yld[bi, ni] = kind is BehaviourKind.YIELD


@dataclass(frozen=True, eq=False)
class AgentControl:
    """Commands of the agents that run an application (issue 17, item 4), (B, N) like the state;
    column 0 (the ego) is unused. An agent's application acts on top of its driver model: stop at
    its next bar (activation 0, as the ego's), a speed target (its desired speed), a braking demand."""

    stop_at_bar: np.ndarray  # (B, N) bool
    v_target_mps: np.ndarray  # (B, N) NaN = the driver's own desired speed
    brake_mps2: np.ndarray  # (B, N) 0 = none


@dataclass(frozen=True, eq=False)
class EgoControl:
    """Per-scenario commands to the ego (B,): stop at the next bar, a speed target, a braking demand;
    ``agents``: the commands of application-running agents (vectorized engine only; None = none)."""

    stop_at_bar: np.ndarray  # bool
    v_target_mps: np.ndarray  # NaN = the ego's desired speed
    brake_mps2: np.ndarray  # 0 = none
    agents: AgentControl | None = None

    @classmethod
    def nominal(cls, b: int) -> EgoControl:
        return cls(np.zeros(b, bool), np.full(b, np.nan), np.zeros(b))


@dataclass(frozen=True, eq=False)
class TrafficState:
    """Dynamic state at ``t_s`` (arrays are fresh each step; ``hist_*`` is a ring buffer of past
    ``s``/``v`` for perception delays, indexed by ``step % H``, updated in place)."""

    step: int
    t_s: float
    s: np.ndarray  # (B, N) centre arc length [m]
    v: np.ndarray  # (B, N) [m/s]
    a: np.ndarray  # (B, N) applied acceleration over the last step [m/s2]
    alive: np.ndarray  # (B, N) bool
    next_crossing: np.ndarray  # (B, N) int index into Scene.bar_s
    bar_s: np.ndarray  # (B, N) arc length of the next stop bar (+inf none)
    bar_group: np.ndarray  # (B, N) its signal group index (-1 none)
    sig_stop: np.ndarray  # (B, N) bool latched "stop at this bar"
    sig_go: np.ndarray  # (B, N) bool latched "go through this bar"
    braked_out: np.ndarray  # (B, N) bool hard-braked to a standstill (stays)
    xy: np.ndarray  # (B, N, 2)
    heading: np.ndarray  # (B, N)
    hist_s: np.ndarray  # (H, B, N)
    hist_v: np.ndarray  # (H, B, N)
    crossed: np.ndarray  # (B, N) bool: front bumper passed a stop bar during the last step
    front_prev: np.ndarray  # (B, N) front bumper arc length before the last step
    crossed_bar_s: np.ndarray  # (B, N) the bar passed during the last step (+inf none)
    crossed_group: np.ndarray  # (B, N) its group (-1 none)
    stop_bar_d: np.ndarray  # (B, N) front bumper to the next stop bar [m] (+inf none)
    brake_flag: np.ndarray  # (B, N) bool: brake lights (BSM brakeAppliedStatus)
    hard_brake: np.ndarray  # (B, N) bool: decelerating harder than the J2945/1 hard-braking threshold while moving


def initial_state(scene: Scene) -> TrafficState:
    b, n = scene.shape
    s = scene.s_start.copy()
    v = np.where(scene.valid, scene.v_initial, 0.0)
    h = scene.history_len
    hist_s = np.empty((h, b, n))
    hist_v = np.empty((h, b, n))
    for m in range(h):  # constant-speed past: step -m lives at index (-m) % H
        hist_s[(-m) % h] = s - v * m * scene.dt_s
        hist_v[(-m) % h] = v
    xy, heading = scene.routes.lookup(s)
    front = s + scene.length_m / 2
    nc = (scene.bar_s < front[..., None]).sum(axis=2)  # bars already behind the front bumper
    bar = np.take_along_axis(scene.bar_s, nc[..., None], axis=2)[..., 0]
    grp = np.take_along_axis(scene.bar_group, nc[..., None], axis=2)[..., 0]
    zeros = np.zeros((b, n), bool)
    fields = [s, v, np.zeros((b, n)), scene.valid.copy(), nc, bar, grp, zeros, zeros, zeros, xy, heading]
    tail = [zeros, front, np.full((b, n), np.inf), np.full((b, n), -1, np.int64), bar - front, zeros, zeros]
    for arr in fields + tail:  # read-only, as every later step's (snapshots hold views; one compiled signature)
        arr.setflags(write=False)
    return TrafficState(0, 0.0, fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6], fields[7],
                        fields[8], fields[9], fields[10], fields[11], hist_s, hist_v, tail[0], tail[1], tail[2], tail[3],
                        tail[4], tail[5], tail[6])


def leaders(scene: Scene, st: TrafficState) -> tuple[np.ndarray, np.ndarray]:
    """(bumper gap to the perceived leader, its perceived speed) per vehicle; gap +inf = no leader: the
    compiled step's own search (:func:`services.simulator.kernels.leaders`, all pairs), or :func:`lane_leaders`
    under lane search (``scene.seg_key``)."""
    if scene.seg_key is not None:
        return lane_leaders(scene, st)
    return kernels.leaders(st.step, scene.dt_s, st.s, st.alive, st.hist_s, st.hist_v, scene.k_drv, scene.k_int,
                           scene.k_offset, scene.k_share)


_SPAN_M = 1.0e5  # sort key = segment key * _SPAN_M + position on the segment (|position| < _SPAN_M / 2)


def lane_leaders(scene: Scene, st: TrafficState) -> tuple[np.ndarray, np.ndarray]:
    """:func:`leaders` in O(N log N): per delay class, the live vehicles sorted by (segment they
    are on, perceived position on it); each observer takes, on the segment it is on, the first
    vehicle perceived ahead of it (one binary search) and, on every later segment of its route
    (and the one before, where perception can put a vehicle past it), that segment's first
    vehicle (a lookup; a search where that one is perceived behind), and keeps the nearest. A vehicle counts on the
    segment its true centre is on (as all-pairs counts it on the shared run its true position
    is on)."""
    assert scene.seg_key is not None and scene.seg_start is not None
    seg_key, seg_start = scene.seg_key, scene.seg_start
    b, n = st.s.shape
    sn = seg_key.shape[2]
    s = st.s
    h = st.hist_s.shape[0]
    k = st.step
    # the segment each vehicle's centre is on (the last one starting at or before it)
    cur = np.maximum((seg_start <= s[..., None]).sum(axis=2) - 1, 0)
    key_now = np.take_along_axis(seg_key, cur[..., None], axis=2)[..., 0].ravel()
    start_now = np.take_along_axis(seg_start, cur[..., None], axis=2)[..., 0].ravel()
    cand = np.nonzero(st.alive.ravel() & (key_now >= 0))[0]
    n_keys = int(seg_key.max()) + 1
    s_flat = s.ravel()
    best = np.full(b * n, np.inf)
    lead = np.full(b * n, -1, np.int64)
    v_lead = np.zeros(b * n)

    def one_class(d: int) -> None:  # the observers of one perception delay
        obs = np.nonzero((scene.delay_steps.ravel() == d) & scene.valid.ravel())[0]
        if not obs.size or not cand.size:
            return
        vp = st.hist_v[(k - d) % h].ravel()
        sp = st.hist_s[(k - d) % h].ravel() + vp * (d * scene.dt_s)
        up = np.clip(sp[cand] - start_now[cand], -0.4 * _SPAN_M, 0.4 * _SPAN_M)
        comp = key_now[cand] * _SPAN_M + up
        order = np.argsort(comp, kind="stable")
        comp_s, j_s = comp[order], cand[order]
        last = comp_s.shape[0] - 1
        bounds = np.searchsorted(comp_s, np.arange(n_keys + 1) * _SPAN_M - 0.45 * _SPAN_M)  # per segment key
        first_pos, last_pos = bounds[:-1], bounds[1:] - 1
        bo, no = np.divmod(obs, n)
        s_o = s_flat[obs]

        def first_ahead(g: np.ndarray, thr: np.ndarray, me: np.ndarray) -> np.ndarray:
            """Per query: the first vehicle of segment ``g`` perceived past ``thr`` (not ``me``); -1 none."""
            pos = np.searchsorted(comp_s, g * _SPAN_M + np.clip(thr, -0.4 * _SPAN_M, 0.4 * _SPAN_M), side="right")
            for _ in range(2):  # the observer itself (perceived ahead of itself): the next one
                jj = j_s[np.minimum(pos, last)]
                pos = pos + ((pos <= last) & (jj == me))
            jj = j_s[np.minimum(pos, last)]
            return np.where((pos <= last) & (key_now[jj] == g) & (jj != me), jj, -1)

        def keep(o: np.ndarray, jj: np.ndarray, start_i: np.ndarray) -> None:
            """Take ``jj`` as ``o``'s leader where it is ahead and nearer than the one so far (one query
            per observer)."""
            rel = np.where(jj >= 0, sp[jj] + (start_i - start_now[jj]) - s_flat[o], np.inf)
            nearer = (rel > 0.0) & (rel < best[o])
            o, jj, rel = o[nearer], jj[nearer], rel[nearer]
            best[o] = rel
            lead[o] = jj
            v_lead[o] = vp[jj]

        # 1. the segment the observer is on: one binary search past its own position
        keep(obs, first_ahead(key_now[obs], s_o - start_now[obs], obs), start_now[obs])
        # 2. the segments after it on its route: each one's first vehicle (no search), unless that one is
        #    perceived behind the observer (then a binary search, as in 1); the nearest of them per observer
        g = seg_key[bo, no]  # (O, S)
        start_i = seg_start[bo, no]
        # (and the one before it: a vehicle just behind the segment start can be perceived past the observer)
        c_o = cur.ravel()[obs][:, None]
        col = np.arange(sn)[None, :]
        later = ((col > c_o) | (col == c_o - 1)) & (g >= 0)
        if not np.count_nonzero(later):
            return
        gq = np.where(later, g, 0)
        pos = first_pos[gq]
        jj = j_s[np.minimum(pos, last)]
        me = obs[:, None]
        thr = s_o[:, None] - start_i
        ok = later & (pos <= last) & (key_now[jj] == gq) & (jj != me)
        ahead = ok & (sp[jj] - start_now[jj] > thr)
        jj = np.where(ahead, jj, -1)
        # a search only where the segment's last vehicle is perceived past the observer (else none is)
        redo = ok & ~ahead & (comp_s[np.minimum(last_pos[gq], last)] > gq * _SPAN_M + thr)
        if np.count_nonzero(redo):
            jj[redo] = first_ahead(gq[redo], thr[redo], np.broadcast_to(me, g.shape)[redo])
        rel = np.where(jj >= 0, sp[jj] + (start_i - start_now[jj]) - s_o[:, None], np.inf)
        rel = np.where(rel > 0.0, rel, np.inf)
        m = rel.argmin(axis=1)
        rows = np.arange(obs.shape[0])
        keep(obs, np.where(np.isfinite(rel[rows, m]), jj[rows, m], -1), start_i[rows, m])

    for d in scene.delay_classes:
        one_class(d)
    found = lead >= 0
    half = scene.half_len.ravel()
    gap = np.where(found, best - half - half[np.maximum(lead, 0)], np.inf)
    return gap.reshape(b, n), v_lead.reshape(b, n)


def step(scene: Scene, st: TrafficState, control: EgoControl, phase: np.ndarray | None = None) -> TrafficState:
    """Advance every scenario by ``dt``: all vehicles decide from the state at ``t``, then all integrate
    (:func:`services.simulator.kernels.traffic.advance`: ``decide`` then ``settle``).

    ``phase`` (B, G): the true phases at ``t`` when the caller has them already."""
    return advance(scene, st, np.asarray(control.stop_at_bar, bool),
                   np.array([control.v_target_mps, control.brake_mps2], np.float64), control.agents, phase)


def advance(scene: Scene, st: TrafficState, ego_stop: np.ndarray, ego: np.ndarray, ag: AgentControl | None = None,
            phase: np.ndarray | None = None) -> TrafficState:
    """:func:`step` with the egos' commands as arrays (the step loop's call): ``ego_stop`` (B,) bool, ``ego``
    (2, B) the speed targets (NaN none) and braking demands (0 none)."""
    if phase is None:
        phase = scene.signals.phase_at(st.t_s)
    agents, agent_stop, given = scene.k_none
    if ag is not None:
        agents = np.array([ag.v_target_mps, ag.brake_mps2], np.float64)
        agent_stop = np.asarray(ag.stop_at_bar, bool)
    if scene.seg_key is not None:
        given = np.array(lane_leaders(scene, st))
    r = scene.routes
    out = kernels.advance(
        st.step, st.t_s, scene.dt_s, st.s, st.v, st.alive, st.next_crossing, st.bar_s, st.bar_group, st.sig_stop,
        st.sig_go, st.braked_out, st.hist_s, st.hist_v, scene.k_drv, scene.k_int, scene.k_offset, scene.k_share,
        np.asarray(phase, np.int8), ego, ego_stop, agents, agent_stop, ag is not None, given, scene.seg_key is not None,
        scene.k_bars[0], scene.k_bars[1], scene.respawn, r.samples_xy, r.samples_heading, r.sample_base, r.k_max, r.inv_step)
    return _state(scene, st, out)


def settle(scene: Scene, st: TrafficState, s_new: np.ndarray, v_new: np.ndarray, acc: np.ndarray,
           sig_stop: np.ndarray, sig_go: np.ndarray, braked_out: np.ndarray) -> TrafficState:
    """The state one step after ``st`` once every vehicle is at ``s_new`` with ``v_new`` (where another
    simulator's readings re-enter, see backends/base.py; :func:`step` does the same inside its kernel): stop
    bars passed, routes ended, positions and the perception history (:func:`services.simulator.kernels.traffic.settle`)."""
    r = scene.routes
    f64 = np.float64
    out = kernels.settle(st.step, st.s, np.asarray(s_new, f64), np.asarray(v_new, f64), np.asarray(acc, f64), st.alive,
                         st.next_crossing, st.bar_s, st.bar_group, np.asarray(sig_stop, bool), np.asarray(sig_go, bool),
                         np.asarray(braked_out, bool), scene.k_drv, scene.k_bars[0], scene.k_bars[1], scene.respawn,
                         r.samples_xy, r.samples_heading, r.sample_base, r.k_max, r.inv_step, st.hist_s, st.hist_v)
    return _state(scene, st, out)


_K = kernels
_PACKED_ROWS = {"s": _K.OUT_S, "v": _K.OUT_V, "a": _K.OUT_A, "heading": _K.OUT_HEADING}


def packed_lists(st: TrafficState) -> dict[str, list[float]] | None:
    """``s``, ``v``, ``a`` and ``heading`` as flat (B * N) lists, read from the step's packed float array in one
    ``tolist`` (None for a state the kernel did not make: the initial one)."""
    base = st.s.base
    if base is None or base.ndim != 3 or base.shape[0] != _K.N_OUT_F:
        return None
    rows = base[:4].reshape(4, -1).tolist()  # OUT_S, OUT_V, OUT_A, OUT_HEADING: rows 0-3
    return {name: rows[i] for name, i in _PACKED_ROWS.items()}


def _state(scene: Scene, st: TrafficState, out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> TrafficState:
    """The TrafficState over the kernel's four fresh arrays (read-only; every field a view of one of them),
    built without the frozen dataclass ``__init__`` (one ``object.__setattr__`` per field)."""
    fl, xy, lg, it = out
    for arr in out:
        arr.setflags(write=False)
    k = st.step + 1
    state = object.__new__(TrafficState)
    object.__setattr__(state, "__dict__", {
        "step": k, "t_s": k * scene.dt_s, "s": fl[_K.OUT_S], "v": fl[_K.OUT_V], "a": fl[_K.OUT_A],
        "alive": lg[_K.OUT_ALIVE], "next_crossing": it[_K.OUT_NEXT_CROSSING], "bar_s": fl[_K.OUT_BAR_S],
        "bar_group": it[_K.OUT_BAR_GROUP], "sig_stop": lg[_K.OUT_SIG_STOP], "sig_go": lg[_K.OUT_SIG_GO],
        "braked_out": lg[_K.OUT_BRAKED_OUT], "xy": xy, "heading": fl[_K.OUT_HEADING], "hist_s": st.hist_s,
        "hist_v": st.hist_v, "crossed": lg[_K.OUT_CROSSED], "front_prev": fl[_K.OUT_FRONT_PREV],
        "crossed_bar_s": fl[_K.OUT_CROSSED_BAR_S], "crossed_group": it[_K.OUT_CROSSED_GROUP],
        "stop_bar_d": fl[_K.OUT_STOP_BAR_D], "brake_flag": lg[_K.OUT_BRAKE_FLAG], "hard_brake": lg[_K.OUT_HARD_BRAKE]})
    return state


__all__ = ["IDM", "AgentControl", "DriverParams", "EgoControl", "Scene", "TrafficState", "advance", "initial_state",
           "leaders", "packed_lists", "settle", "step"]
