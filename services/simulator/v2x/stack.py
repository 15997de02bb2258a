"""The V2X information source: messages -> channel -> faults -> reconstruction.

:class:`V2XInformationSource` implements the simulator's ``InformationSource``
protocol (``reset(program, seed)``, ``observe(snapshot) -> EgoInformation``) and
the optional ``MonitoredSource`` (``report(decisions) -> MonitorReport``). Each
step, in order:

1. messages that have arrived by ``t`` (rx time <= t) are handed to their
   receivers: the ego, relay vehicles (EEBL) and relay RSUs (SPaT);
2. transmitters due in ``(t_prev, t]`` sample the snapshot: BSM (+ EEBL events) from
   every equipped live vehicle but the ego, SPaT and MAP from every RSU, each on its
   own phase offset (BUS_JITTER); RSUs append the SPaT of other junctions they hold
   (``v2x.spat_relay``) and vehicles rebroadcast EEBL events they heard about a
   vehicle ahead of them (``v2x.eebl_rebroadcast``, hop count + 1, up to
   ``V2XConfig.eebl_max_hops``);
3. every link of the step (sender -> ego, EEBL carrier -> relay candidates, RSU ->
   RSU) goes through one vectorized channel evaluation and one Bernoulli draw each
   (CHANNEL substream);
4. faults act per message (same verdict for every receiver) and survivors are
   queued with ``rx = tx + channel latency + fault delay``;
5. the ego's :class:`~.reconstruction.Receiver` is turned into ``EgoInformation``
   and the :class:`~.monitor.DivergenceMonitor` compares it with the snapshot.

Buildings are not part of a ScenarioProgram: give the source the map's buildings
(``V2XInformationSource(buildings=...)`` or ``road_map=``), or it runs in open
space.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from lastv2x.core.catalogue import Stream
from lastv2x.core.rng import Substream, substream
from lastv2x.core.spec import AnchorEvent
from services.simulator.info import (
    PHASE_AMBER,
    PHASE_GREEN,
    PHASE_RED,
    BelievedSignal,
    DecisionRecord,
    EEBLEvent,
    EgoInformation,
    MonitorReport,
    TraceSink,
    Track,
    WorldSnapshot,
)

from .channel import ChannelParams, LinkBudget, delivery_and_latency
from .faults import EgoEventInput, FaultContext, FaultEngine, StepBatch
from .geometry import BuildingSet
from .messages import (
    BSM_PERIOD_S,
    DEFAULT_BUS_DELAY_MAX_S,
    EVENT_HARD_BRAKING,
    MAP_PERIOD_S,
    MSG_COUNT_MOD,
    NO_KEY,
    SPAT_PERIOD_S,
    BsmBatch,
    BusJitter,
    EeblBatch,
    KeyTable,
    MapBatch,
    MapLane,
    RecordBatch,
    RsuSite,
    SpatBatch,
    due_mask,
    eebl_from_bsms,
    filled,
    make_map,
    message_starts,
)
from .monitor import DivergenceMonitor, MonitorSummary
from .reconstruction import EVENT_TIMEOUT_S, TRACK_TIMEOUT_S, Receiver

if TYPE_CHECKING:
    from lastv2x.core.program import ScenarioProgram
    from services.simulator.maps.model import RoadMap

_ONSET_CODE = {AnchorEvent.GREEN_ONSET: PHASE_GREEN, AnchorEvent.AMBER_ONSET: PHASE_AMBER,
               AnchorEvent.RED_ONSET: PHASE_RED}


@dataclass(frozen=True)
class V2XConfig:
    """Stack settings that are not part of the scenario (representative defaults)."""

    bus_delay_max_s: float = DEFAULT_BUS_DELAY_MAX_S
    track_timeout_s: float = TRACK_TIMEOUT_S
    event_timeout_s: float = EVENT_TIMEOUT_S
    eebl_max_hops: int = 3  # rebroadcast chain length
    eebl_relay_hold_s: float = 1.0  # a relay repeats an event this long after it last heard it
    eebl_relay_range_m: float = 300.0  # ... if the event lies ahead of it within this distance (EEBL range)
    spat_relay_max_hops: int = 4  # RSU chain length a SPaT state may travel
    spat_relay_max_age_s: float = 1.0  # RSUs do not relay states older than this
    record_peaks: bool = True  # keep every AoI peak (tests, evidence); off for benchmarks
    monitor: bool = True
    trace_every_s: float = 0.5  # belief summary to the trace sink (0 = off)


@dataclass
class V2XStats:
    steps: int = 0
    links: int = 0
    channel_s: float = 0.0
    tx: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in Stream})
    delivered: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in Stream})
    faulted: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in Stream})

    def to_dict(self, *, timing: bool = False) -> dict[str, Any]:
        """Counters; ``timing`` adds the wall-clock channel time (not deterministic: keep it out of outcomes)."""
        out = dataclasses.asdict(self)
        if not timing:
            out.pop("channel_s")
        return out


def buildings_from_map(road_map: RoadMap | None) -> BuildingSet | None:
    """The channel's BuildingSet from a RoadMap's building footprints."""
    if road_map is None or not road_map.buildings:
        return None
    return BuildingSet((b.footprint, b.height_m) for b in road_map.buildings)


def rsu_sites(program: ScenarioProgram, road_map: RoadMap | None = None) -> list[RsuSite]:
    """RSUs of the program with the groups (SPaT) and lanes (MAP) of their junctions.

    MAP lanes: every approach lane a program vehicle crosses the junction from, plus
    the map's stop bars of the junction's signal groups when a RoadMap is given.
    """
    lanes_of: dict[str, dict[str, MapLane]] = {}
    for v in program.vehicles:
        for c in v.route.crossings:
            lane_id = c.approach_lane_id or f"{c.junction_id}@{c.stop_bar_xy_m[0]:.1f},{c.stop_bar_xy_m[1]:.1f}"
            lanes_of.setdefault(c.junction_id, {}).setdefault(
                lane_id, MapLane(lane_id, c.signal_group_id, (float(c.stop_bar_xy_m[0]), float(c.stop_bar_xy_m[1]))))
    if road_map is not None:
        for g in road_map.signal_groups.values():
            for bar in g.stop_bars:
                lanes_of.setdefault(g.junction_id, {}).setdefault(
                    bar.lane_id, MapLane(bar.lane_id, g.id, (float(bar.xy[0]), float(bar.xy[1]))))
    sites = []
    for r in program.rsus:
        jid = r.junction_id or ""
        groups = tuple(g.id for g in program.signal_groups if jid and g.junction_id == jid)
        lanes = tuple(lanes_of.get(jid, {}).values()) if jid else ()
        sites.append(RsuSite(r.id, (float(r.xy_m[0]), float(r.xy_m[1])), groups, lanes, float(r.height_m), jid))
    return sites


_SMALL_RELAY = 64  # EEBL records x equipped vehicles up to which relay pairs are picked on floats


def _message_count(batch: RecordBatch) -> int:
    """``message_starts(batch.sender, batch.msg_id).sum()``: the messages in a row-per-item batch."""
    n = len(batch)
    if n > 16:
        return int(message_starts(batch.sender, batch.msg_id).sum())
    snd, mid = batch.sender.tolist(), batch.msg_id.tolist()
    return 1 + sum(1 for i in range(1, n) if snd[i] != snd[i - 1] or mid[i] != mid[i - 1])


def _row_messages(batch: RecordBatch) -> np.ndarray:
    """``np.cumsum(message_starts(batch.sender, batch.msg_id)) - 1``: the message number of each row."""
    n = len(batch)
    if n > 16:
        return np.cumsum(message_starts(batch.sender, batch.msg_id)) - 1
    snd, mid = batch.sender.tolist(), batch.msg_id.tolist()
    out, m = [0] * n, 0
    for i in range(1, n):
        if snd[i] != snd[i - 1] or mid[i] != mid[i - 1]:
            m += 1
        out[i] = m
    return np.array(out, dtype=np.int64)


def _keep(batch: RecordBatch, mask: np.ndarray) -> RecordBatch:
    """``batch.take(mask)``; the batch itself when every row is kept (batches are never written to)."""
    return batch if np.count_nonzero(mask) == mask.shape[0] else batch.take(mask)


def _rows_of(xy: np.ndarray, n: int) -> np.ndarray:
    """``n`` copies of one point as an (n, 2) array (``np.broadcast_to``'s values, built directly)."""
    out = np.empty((n, 2))
    out[:] = xy
    return out


class _Inbox:
    """Messages in flight to one kind of receiver: (receiver key, batch, rx time) chunks per stream."""

    def __init__(self) -> None:
        self._pending: dict[Stream, list[tuple[np.ndarray, RecordBatch, np.ndarray]]] = {}
        self._next_rx: dict[Stream, float] = {}  # earliest pending rx time per stream (pop returns early before it)

    def push(self, stream: Stream, receiver: np.ndarray, batch: RecordBatch, rx: np.ndarray) -> None:
        if len(batch):
            self._pending.setdefault(stream, []).append((receiver, batch, rx))
            first = float(rx.min())
            if not first >= self._next_rx.get(stream, math.inf):  # (a NaN disables the early return)
                self._next_rx[stream] = first

    def pop(self, stream: Stream, t_s: float) -> tuple[np.ndarray, RecordBatch, np.ndarray] | None:
        """The rows due by ``t_s`` in reception order (stable: push order among equal rx times); the
        rest stays queued in push order. Chunks are split and merged only as far as needed."""
        chunks = self._pending.get(stream)
        if not chunks:
            return None
        if self._next_rx[stream] > t_s + 1e-12:
            return None  # nothing due yet
        lim = t_s + 1e-12
        due_parts: list[tuple[np.ndarray, RecordBatch, np.ndarray]] = []
        rest: list[tuple[np.ndarray, RecordBatch, np.ndarray]] = []
        for recv, batch, rx in chunks:
            due = rx <= lim
            nd = int(np.count_nonzero(due))
            if nd == rx.shape[0]:
                due_parts.append((recv, batch, rx))
            elif nd == 0:
                rest.append((recv, batch, rx))
            else:
                keep = ~due
                due_parts.append((recv[due], batch.take(due), rx[due]))
                rest.append((recv[keep], batch.take(keep), rx[keep]))
        self._pending[stream] = rest
        self._next_rx[stream] = min(float(c[2].min()) for c in rest) if rest else math.inf
        if not due_parts:
            return None
        if len(due_parts) == 1:
            recv, batch, rx = due_parts[0]
        else:
            recv = np.concatenate([c[0] for c in due_parts])
            batch = type(due_parts[0][1]).concat([c[1] for c in due_parts])
            rx = np.concatenate([c[2] for c in due_parts])
        if rx.shape[0] > 1 and not bool(np.all(rx[1:] >= rx[:-1])):  # else the stable sort is the identity
            order = np.argsort(rx, kind="stable")
            recv, batch, rx = recv[order], batch.take(order), rx[order]
        return recv, batch, rx


class V2XInformationSource:
    """``InformationSource`` of the message-driven ego (see the module docstring)."""

    def __init__(self, buildings: BuildingSet | Iterable[Any] | None = None, *,
                 road_map: RoadMap | None = None, channel_params: ChannelParams | None = None,
                 config: V2XConfig | None = None):
        if buildings is not None and not isinstance(buildings, BuildingSet):
            buildings = BuildingSet((b.footprint, b.height_m) for b in buildings)
        if buildings is None:
            buildings = buildings_from_map(road_map)
        self.buildings: BuildingSet | None = buildings
        self.road_map = road_map
        self.base_params = channel_params or ChannelParams()
        self.config = config or V2XConfig()
        self.program: ScenarioProgram | None = None

    # ------------------------------------------------------------------ reset
    def reset(self, program: ScenarioProgram, seed: int, *, trace: TraceSink | None = None) -> None:
        cfg = self.config
        self.program = program
        self.seed = int(seed)
        self.trace = trace
        ch = program.v2x.channel
        self.params = dataclasses.replace(self.base_params, range_m=float(ch.range_m),
                                          blockage_db_per_m=float(ch.blockage_db_per_m))
        self.spat_relay = bool(program.v2x.spat_relay)
        self.eebl_relay = bool(program.v2x.eebl_rebroadcast)
        self.app = program.application
        self.senders = KeyTable()
        self.groups = KeyTable(g.id for g in program.signal_groups)
        self.lanes = KeyTable()
        self.sites = rsu_sites(program, self.road_map)
        self.rsu_keys = np.array([self.senders.key(s.rsu_id) for s in self.sites], dtype=np.int64)
        self.rsu_xy = np.array([s.xy for s in self.sites], dtype=np.float64).reshape(-1, 2)
        self.rsu_h = np.array([s.height_m if s.height_m is not None else self.params.rsu_antenna_height_m
                               for s in self.sites], dtype=np.float64)
        self.rsu_groups = [np.array([self.groups.key(g) for g in s.group_ids], dtype=np.int64) for s in self.sites]
        self.rsu_lanes = [(np.array([self.lanes.key(ln.lane_id) for ln in s.lanes], dtype=np.int64),
                           np.array([self.groups.key(ln.signal_group_id) if ln.signal_group_id else NO_KEY
                                     for ln in s.lanes], dtype=np.int64),
                           np.array([ln.stop_bar_xy for ln in s.lanes], dtype=np.float64).reshape(-1, 2))
                          for s in self.sites]
        self.jitter = BusJitter.from_seed(self.seed, cfg.bus_delay_max_s)
        self.rng = substream(self.seed, Substream.CHANNEL)
        rsu_hash = self.senders.hashes(self.rsu_keys) if len(self.rsu_keys) else np.zeros(0, np.uint64)
        self.rsu_phase = {Stream.SPAT: self.jitter.phase_s(rsu_hash, Stream.SPAT, SPAT_PERIOD_S),
                          Stream.MAP: self.jitter.phase_s(rsu_hash, Stream.MAP, MAP_PERIOD_S)}
        self.rsu_count = {Stream.SPAT: np.zeros(len(self.sites), np.int64),
                          Stream.MAP: np.zeros(len(self.sites), np.int64)}
        # ego lanes (MAP lookup) and fault context
        ego = program.ego
        self.ego_crossings = list(ego.route.crossings)
        self.ego_lane_keys = [self.lanes.key(c.approach_lane_id or
                                             f"{c.junction_id}@{c.stop_bar_xy_m[0]:.1f},{c.stop_bar_xy_m[1]:.1f}")
                              for c in self.ego_crossings]
        ego_group = program.ego_group_id
        cross = self._cross_group(ego_group)
        plans = {g.id: g for g in program.signal_groups}

        def onset(group: str, event: AnchorEvent) -> float:
            from services.simulator.signals import onset_times_s
            plan = plans.get(group)
            if plan is None:
                return math.inf
            times = onset_times_s(plan, _ONSET_CODE[event], 0.0, plan.cycle_s + 1e-9)
            return float(times[0]) if times.size else math.inf

        self.fault_ctx = FaultContext(
            seed=self.seed, duration_s=program.duration_s, ego_group_id=ego_group, cross_group_id=cross,
            ego_lane_ids=tuple(self.lanes.name(k) for k in self.ego_lane_keys),
            rsu_ids=tuple(s.rsu_id for s in self.sites), signal_onset_s=onset)
        self.faults = FaultEngine(program.faults, self.fault_ctx, self.senders, self.groups, self.lanes)
        # receivers
        self.ego_key = self.senders.key(ego.id)
        self.ego = Receiver(self.app, track_timeout_s=cfg.track_timeout_s, event_timeout_s=cfg.event_timeout_s,
                            record_peaks=cfg.record_peaks, self_key=self.ego_key)
        self.rsu_rx = {int(k): Receiver(None, record_peaks=False, self_key=int(k)) for k in self.rsu_keys}
        self.relay_events: dict[int, dict[tuple[int, int], dict[str, float]]] = {}
        self.inbox_ego = _Inbox()
        self.inbox_relay = _Inbox()
        self.inbox_rsu = _Inbox()
        # per-vehicle state (grown with the sender table)
        self._veh_ids: tuple[str, ...] | None = None
        self._veh_keys = np.zeros(0, np.int64)
        self._bsm_phase = np.zeros(0)
        self._bsm_count = np.zeros(0, np.int64)
        self._event_seq = np.zeros(0, np.int64)
        self._prev_hb = np.zeros(0, bool)
        self._gids: tuple[str, ...] | None = None
        self._gidx: dict[str, int] = {}
        self._gkeys = np.zeros(0, np.int64)
        self.rsu_index = {int(k): i for i, k in enumerate(self.rsu_keys.tolist())}
        self._spat_layout: dict[tuple, tuple] = {}
        self.t_prev: float | None = None
        self._last_trace = -math.inf
        self.stats = V2XStats()
        named = [a.id for a in program.agents if str(a.role) != "background"]
        self.monitor = DivergenceMonitor(self.app, absence_radius_m=self.params.range_m,
                                         agent_ids=named or None) if cfg.monitor else None
        register = getattr(trace, "register", None)
        if self.monitor is not None and register is not None:
            register("/monitor/events")  # present even when no episode occurs (absent = no monitor)

    def _cross_group(self, ego_group: str | None) -> str | None:
        program = self.program
        assert program is not None
        if ego_group is None:
            return None
        try:
            jid = program.group(ego_group).junction_id
        except KeyError:
            return None
        for a in program.agents:
            if str(a.role) == "cross" and a.route.signal_group_id not in (None, ego_group):
                return a.route.signal_group_id
        others = [g.id for g in program.signal_groups if g.junction_id == jid and g.id != ego_group]
        return others[0] if others else None

    # ------------------------------------------------------------------ helpers
    def _vehicle_keys(self, snap: WorldSnapshot) -> np.ndarray:
        if snap.vehicle_ids is not self._veh_ids:
            self._veh_ids = snap.vehicle_ids
            self._veh_keys = self.senders.keys(snap.vehicle_ids)
            n = len(self.senders)
            if self._bsm_phase.shape[0] < n:
                allk = np.arange(n, dtype=np.int64)
                self._bsm_phase = self.jitter.phase_s(self.senders.hashes(allk), Stream.BSM, BSM_PERIOD_S)
                self._bsm_count = np.concatenate([self._bsm_count, np.zeros(n - self._bsm_count.shape[0], np.int64)])
                self._event_seq = np.concatenate([self._event_seq, np.zeros(n - self._event_seq.shape[0], np.int64)])
                self._prev_hb = np.concatenate([self._prev_hb, np.zeros(n - self._prev_hb.shape[0], bool)])
        return self._veh_keys

    def _ego_lane(self, snap: WorldSnapshot) -> int:
        """Lane key of the ego's next approach (the MAP lane whose association it needs)."""
        e = snap.ego_index
        front = float(snap.route_s_m[e]) + 0.5 * float(snap.length_m[e])
        for c, k in zip(self.ego_crossings, self.ego_lane_keys, strict=True):
            if front <= c.stop_bar_s_m + 0.5:
                return k
        return NO_KEY

    # ------------------------------------------------------------------ observe
    def observe(self, snap: WorldSnapshot) -> EgoInformation:
        t = float(snap.t_s)
        keys = self._vehicle_keys(snap)
        self._deliver(t)
        ego_i = snap.ego_index
        if snap.signal_group_ids is not self._gids:
            self._gids = snap.signal_group_ids
            self._gidx = {g: i for i, g in enumerate(snap.signal_group_ids)}
            self._gkeys = self.groups.keys(snap.signal_group_ids)
        gidx = self._gidx
        was = [af.window.resolved for af in self.faults]
        self.faults.update_windows(
            t, EgoEventInput(t, float(snap.stop_bar_distance_m[ego_i]) if math.isfinite(
                float(snap.stop_bar_distance_m[ego_i])) else None, float(snap.speed_mps[ego_i])),
            np.asarray(snap.true_phase), np.asarray(snap.time_to_change_s), gidx)
        if self.trace is not None:
            for af, before in zip(self.faults, was, strict=True):
                if (af.window.resolved and not before) or (self.t_prev is None and af.window.resolved):
                    self.trace.publish("/v2x/fault_window", t, {
                        "name": af.fault.name, "operator": af.operator.name, "stream": af.stream.value,
                        "start_s": af.window.start_s,
                        "end_s": None if math.isinf(af.window.end_s or math.inf) else af.window.end_s})
        if self.t_prev is None:  # the first step behaves like any other: slots in (t - dt, t]
            self.t_prev = t - float(self.program.dt_s if self.program is not None else 0.05)
        self._transmit(snap, keys, t)
        self._deliver_ego(t)
        info = self._information(snap, t)
        if self.monitor is not None:
            self.monitor.observe(snap, info)
        self._trace(t, info)
        self.t_prev = t
        self.stats.steps += 1
        return info

    def _deliver(self, t: float) -> None:
        """Relay receivers (RSUs, vehicles) take what has arrived by t."""
        got = self.inbox_rsu.pop(Stream.SPAT, t)
        if got is not None:
            recv, batch, rx = got
            assert isinstance(batch, SpatBatch)
            for r in np.unique(recv).tolist():
                m = recv == r
                self.rsu_rx[int(r)].ingest_spat(batch.take(m), rx[m])
        got = self.inbox_relay.pop(Stream.EEBL, t)
        if got is not None:
            recv, batch, rx = got
            assert isinstance(batch, EeblBatch)
            for i in range(len(batch)):
                v = int(recv[i])
                table = self.relay_events.setdefault(v, {})
                key = (int(batch.origin[i]), int(batch.event_id[i]))
                row = table.get(key)
                ts = float(batch.timestamp_s[i])
                if row is None or ts > row["ts"]:
                    table[key] = {"ts": ts, "x": float(batch.x_m[i]), "y": float(batch.y_m[i]),
                                  "h": float(batch.heading_rad[i]), "v": float(batch.speed_mps[i]),
                                  "d": float(batch.decel_mps2[i]),
                                  "hop": float(min(batch.hop_count[i], row["hop"] if row else 1e9)),
                                  "rx": float(rx[i])}
                else:
                    row["rx"] = max(row["rx"], float(rx[i]))
                    row["hop"] = min(row["hop"], float(batch.hop_count[i]))

    def _deliver_ego(self, t: float) -> None:
        ego = self.ego
        received: list[dict[str, Any]] | None = [] if self.trace is not None else None
        for stream, fn in ((Stream.MAP, ego.ingest_map), (Stream.SPAT, ego.ingest_spat),
                           (Stream.BSM, ego.ingest_bsm), (Stream.EEBL, ego.ingest_eebl)):
            got = self.inbox_ego.pop(stream, t)
            if got is not None:
                _, batch, rx = got
                fn(batch, rx)  # type: ignore[arg-type]
                self.stats.delivered[stream.value] += _message_count(batch)
                if received is not None:
                    received += self._message_rows(stream, batch, rx)
        ego.expire(t)
        if received:
            assert self.trace is not None
            self.trace.publish("/v2x/rx", t, {"messages": received})

    def _message_rows(self, stream: Stream, batch: Any, rx_s: np.ndarray | None = None,
                      kept: np.ndarray | None = None) -> list[dict[str, Any]]:
        """One trace row per message of ``batch`` (SPaT/MAP: the first row of each; EEBL: per record)."""
        rows = np.arange(len(batch)) if stream in (Stream.BSM, Stream.EEBL) else np.nonzero(
            message_starts(batch.sender, batch.msg_id))[0]
        names = self.senders.names(batch.sender[rows].tolist())
        ids, ts = batch.msg_id[rows].tolist(), batch.timestamp_s[rows].tolist()
        hops = batch.hop_count[rows].tolist() if hasattr(batch, "hop_count") else [0] * rows.size
        origin = self.senders.names(batch.origin[rows].tolist()) if stream is Stream.EEBL else None
        out = []
        for k, r in enumerate(rows.tolist()):
            row: dict[str, Any] = {"stream": stream.value, "sender": names[k], "msg_id": ids[k], "timestamp_s": ts[k],
                                   "hops": int(hops[k])}
            if origin is not None:
                row["origin"] = origin[k]
            if rx_s is not None:
                row["rx_s"] = float(rx_s[r])
            if kept is not None:
                row["kept"] = bool(kept[r])
            out.append(row)
        return out

    # ------------------------------------------------------------------ transmit
    def _transmit(self, snap: WorldSnapshot, keys: np.ndarray, t: float) -> None:
        ego_i = snap.ego_index
        alive = np.asarray(snap.alive, dtype=bool)
        equipped = np.asarray(snap.equipped, dtype=bool) & alive
        cand = equipped.copy()
        cand[ego_i] = False
        hb = np.asarray(snap.hard_brake_event, dtype=bool) & alive
        # hard-braking onsets number the events of each origin (nothing to do while nobody brakes hard)
        if np.count_nonzero(hb) or np.count_nonzero(self._prev_hb):
            onset = hb & ~self._prev_hb[keys]
            self._event_seq[keys[onset]] += 1
            self._prev_hb[keys] = hb
        due = cand & due_mask(self.t_prev, t, self._bsm_phase[keys], BSM_PERIOD_S)
        vi = np.nonzero(due)[0]
        if vi.size:
            vk = keys[vi]
            msg_id = self._bsm_count[vk].copy()
            self._bsm_count[vk] += 1
            hashes = self.senders.hashes(vk)
            bsm_pos = np.asarray(snap.xy_m, dtype=np.float64)[vi]
            hb_vi = hb[vi]
            # make_bsms(...) on arrays that are fresh already (fancy-indexed): the same columns, fewer copies
            bsm = BsmBatch._build(dict(
                sender=vk, msg_id=msg_id, msg_count=msg_id % MSG_COUNT_MOD,
                tx_time_s=t + self.jitter.bus_delay_s(hashes, Stream.BSM, msg_id), timestamp_s=filled(vi.size, t),
                x_m=bsm_pos[:, 0].copy(), y_m=bsm_pos[:, 1].copy(),
                speed_mps=np.asarray(snap.speed_mps, dtype=np.float64)[vi],
                heading_rad=np.asarray(snap.heading_rad, dtype=np.float64)[vi],
                accel_mps2=np.asarray(snap.accel_mps2, dtype=np.float64)[vi],
                brake_flag=np.asarray(snap.brake_flag, dtype=bool)[vi],
                event_flags=np.where(hb_vi, EVENT_HARD_BRAKING, 0).astype(np.int64, copy=False)))
            eebl = eebl_from_bsms(bsm, self._event_seq[vk]) if np.count_nonzero(hb_vi) else EeblBatch.empty()
            if self.eebl_relay:
                eebl = EeblBatch.concat([eebl, self._relay_eebl(bsm, t)])
        else:  # no BSM this step (and so no EEBL record, own or relayed: both ride on a BSM)
            bsm, eebl, bsm_pos = BsmBatch.empty(), EeblBatch.empty(), np.zeros((0, 2))
        # RSUs
        spat, map_ = SpatBatch.empty(), MapBatch.empty()
        if len(self.sites):
            spat = self._rsu_spat(snap, t)
            map_ = self._rsu_map(t)
        # faults (per message, all receivers)
        steps: dict[Stream, StepBatch] = {}
        sent = False
        for s, b in ((Stream.BSM, bsm), (Stream.EEBL, eebl), (Stream.SPAT, spat), (Stream.MAP, map_)):
            st = self.faults.apply(s, t, b)
            steps[s] = st
            n = len(st.batch)
            if n:
                sent = True
                self.stats.tx[s.value] += _message_count(st.batch)
                self.stats.faulted[s.value] += n - int(np.count_nonzero(st.keep))
        if self.trace is not None and sent:
            tx: list[dict[str, Any]] = []
            for s, st in steps.items():
                if len(st.batch):
                    tx += self._message_rows(s, st.batch, kept=st.keep)
            self.trace.publish("/v2x/tx", t, {"messages": tx})
        if not sent:
            return
        self._links(snap, t, bsm, bsm_pos, steps, alive, equipped)

    def _relay_eebl(self, bsm: BsmBatch, t: float) -> EeblBatch:
        cfg = self.config
        rows: list[tuple[int, int, int, int, dict[str, float], float]] = []
        for i in range(len(bsm)):
            s = int(bsm.sender[i])
            table = self.relay_events.get(s)
            if not table:
                continue
            for (o, e), r in list(table.items()):
                if t - r["rx"] > cfg.eebl_relay_hold_s:
                    del table[(o, e)]
                    continue
                if o == s or r["hop"] + 1 > cfg.eebl_max_hops:
                    continue
                # forward only events ahead of the relay (traffic behind it needs them), within range
                dx, dy = r["x"] - float(bsm.x_m[i]), r["y"] - float(bsm.y_m[i])
                h = float(bsm.heading_rad[i])
                if dx * math.cos(h) + dy * math.sin(h) <= 0.0 or math.hypot(dx, dy) > cfg.eebl_relay_range_m:
                    continue
                rows.append((s, int(bsm.msg_id[i]), o, e, r, float(bsm.tx_time_s[i])))
        if not rows:
            return EeblBatch.empty()

        def col(f: Any, dt: Any = np.float64) -> np.ndarray:
            return np.array([f(r) for r in rows], dtype=dt)
        return EeblBatch(
            sender=col(lambda r: r[0], np.int64), msg_id=col(lambda r: r[1], np.int64),
            origin=col(lambda r: r[2], np.int64), event_id=col(lambda r: r[3], np.int64),
            hop_count=col(lambda r: int(r[4]["hop"]) + 1, np.int64), tx_time_s=col(lambda r: r[5]),
            timestamp_s=col(lambda r: r[4]["ts"]), x_m=col(lambda r: r[4]["x"]), y_m=col(lambda r: r[4]["y"]),
            heading_rad=col(lambda r: r[4]["h"]), speed_mps=col(lambda r: r[4]["v"]),
            decel_mps2=col(lambda r: r[4]["d"]))

    def _rsu_spat(self, snap: WorldSnapshot, t: float) -> SpatBatch:
        due = due_mask(self.t_prev, t, self.rsu_phase[Stream.SPAT], SPAT_PERIOD_S)
        ri = np.nonzero(due)[0]
        if ri.size == 0:
            return SpatBatch.empty()
        rk = self.rsu_keys[ri]
        msg_id = self.rsu_count[Stream.SPAT][ri].copy()
        self.rsu_count[Stream.SPAT][ri] += 1
        delay = self.jitter.bus_delay_s(self.senders.hashes(rk), Stream.SPAT, msg_id)
        own = self._own_spat(snap, ri, rk, msg_id, t, delay)
        if not self.spat_relay:
            return own
        parts: list[SpatBatch] = []
        cfg = self.config
        for j, i in enumerate(ri.tolist()):
            k = int(self.rsu_keys[i])
            mine = own.take(own.sender == k)
            view = self.rsu_rx[k].signals(t)
            sel = (view.origin != k) & (view.hop_count + 1 <= cfg.spat_relay_max_hops) & (
                view.aoi_s <= cfg.spat_relay_max_age_s)
            if not np.isin(view.group, self.rsu_groups[i]).all():
                sel &= ~np.isin(view.group, self.rsu_groups[i])
            n = int(sel.sum())
            if n:
                relayed = SpatBatch(
                    sender=np.full(n, k, np.int64), msg_id=np.full(n, msg_id[j], np.int64),
                    msg_count=np.full(n, msg_id[j] % 128, np.int64), origin=view.origin[sel],
                    group=view.group[sel], phase=view.phase[sel], min_end_time_s=view.min_end_time_s[sel],
                    max_end_time_s=view.max_end_time_s[sel], green_start_time_s=view.green_start_time_s[sel],
                    tx_time_s=np.full(n, t + delay[j]), timestamp_s=view.timestamp_s[sel],
                    hop_count=view.hop_count[sel] + 1)
                mine = SpatBatch.concat([mine, relayed])
            parts.append(mine)
        return SpatBatch.concat(parts)

    def _own_spat(self, snap: WorldSnapshot, ri: np.ndarray, rk: np.ndarray, msg_id: np.ndarray, t: float,
                  delay: np.ndarray) -> SpatBatch:
        """``make_spat`` of the due RSUs ``ri``, with the row layout (groups, their sender rows, where each
        group sits in the snapshot) computed once per RSU subset and snapshot group order."""
        key = (tuple(ri.tolist()), self._gids)
        lay = self._spat_layout.get(key)
        if lay is None:
            groups_l = [self.rsu_groups[i] for i in ri.tolist()]
            counts = np.array([len(g) for g in groups_l], dtype=np.int64)
            if counts.sum() == 0:
                lay = None, None, None
            else:
                groups = np.concatenate([np.asarray(g, np.int64) for g in groups_l])
                rep = np.repeat(np.arange(len(groups_l)), counts)
                pos = {int(k): i for i, k in enumerate(self._gkeys.tolist())}
                src = np.array([pos.get(int(g), -1) for g in groups.tolist()], dtype=np.int64)
                groups.setflags(write=False)
                lay = groups, rep, src
            self._spat_layout[key] = lay
        groups, rep, src = lay
        if groups is None:
            return SpatBatch.empty()
        n = groups.shape[0]
        if np.count_nonzero(src >= 0) == src.size:
            phase = np.asarray(snap.true_phase, dtype=np.int64)[src]
            ends = t + np.asarray(snap.time_to_change_s, dtype=np.float64)[src]
            green = t + np.asarray(snap.time_to_green_s, dtype=np.float64)[src]
        else:  # a served group the snapshot does not show: phase -1, no end, no green
            ok = src >= 0
            sc = np.maximum(src, 0)
            phase = np.where(ok, np.asarray(snap.true_phase, dtype=np.int64)[sc], -1)
            ends = np.where(ok, t + np.asarray(snap.time_to_change_s, dtype=np.float64)[sc], math.inf)
            green = np.where(ok, t + np.asarray(snap.time_to_green_s, dtype=np.float64)[sc], math.inf)
        sender = rk[rep].astype(np.int64)
        mid = msg_id[rep].astype(np.int64)
        return SpatBatch._build(dict(
            sender=sender, msg_id=mid, msg_count=(mid % MSG_COUNT_MOD).astype(np.int64), origin=sender.copy(),
            group=groups.copy(), phase=phase, min_end_time_s=ends, max_end_time_s=ends.copy(),
            green_start_time_s=green, tx_time_s=t + delay[rep], timestamp_s=filled(n, t),
            hop_count=np.zeros(n, np.int64)))

    def _rsu_map(self, t: float) -> MapBatch:
        due = due_mask(self.t_prev, t, self.rsu_phase[Stream.MAP], MAP_PERIOD_S)
        ri = np.nonzero(due)[0]
        if ri.size == 0:
            return MapBatch.empty()
        rk = self.rsu_keys[ri]
        msg_id = self.rsu_count[Stream.MAP][ri].copy()
        self.rsu_count[Stream.MAP][ri] += 1
        delay = self.jitter.bus_delay_s(self.senders.hashes(rk), Stream.MAP, msg_id)
        return make_map(rk, msg_id, [self.rsu_lanes[i] for i in ri.tolist()], t, delay)

    # ------------------------------------------------------------------ channel
    def _links(self, snap: WorldSnapshot, t: float, bsm: BsmBatch, bsm_pos: np.ndarray,
               steps: dict[Stream, StepBatch], alive: np.ndarray, equipped: np.ndarray) -> None:
        """One channel evaluation for every link of the step, then queue the survivors."""
        hv = self.params.vehicle_antenna_height_m
        ego_i = snap.ego_index
        ego_xy = np.asarray(snap.xy_m, dtype=np.float64)[ego_i]
        tx_xy: list[np.ndarray] = []
        tx_h: list[np.ndarray] = []
        rx_xy: list[np.ndarray] = []
        rx_h: list[np.ndarray] = []
        spans: dict[str, slice] = {}
        n = 0

        def add(name: str, txy: np.ndarray, th: np.ndarray, rxy: np.ndarray, rh: np.ndarray) -> None:
            nonlocal n
            m = txy.shape[0]
            if m == 0:
                return
            tx_xy.append(txy)
            tx_h.append(th)
            rx_xy.append(rxy)
            rx_h.append(rh)
            spans[name] = slice(n, n + m)
            n += m

        # BSM (the EEBL events share the carrier's BSM link to the ego)
        nb = len(bsm)
        add("bsm", bsm_pos, filled(nb, hv), _rows_of(ego_xy, nb), filled(nb, hv))
        # RSU messages -> ego (one link per message)
        rsu_index = self.rsu_index
        msg_rows: dict[Stream, np.ndarray] = {}
        for s in (Stream.SPAT, Stream.MAP):
            b = steps[s].batch
            if len(b) == 0:
                msg_rows[s] = np.zeros(0, np.int64)
                continue
            starts = np.nonzero(message_starts(b.sender, b.msg_id))[0]
            msg_rows[s] = starts
            ri = np.array([rsu_index[k] for k in b.sender[starts].tolist()], dtype=np.int64)
            add(f"{s.value}_ego", self.rsu_xy[ri].reshape(-1, 2), self.rsu_h[ri], _rows_of(ego_xy, ri.size),
                filled(ri.size, hv))
        # RSU -> RSU (SPaT relay)
        rr_pairs = np.zeros((0, 2), np.int64)
        if self.spat_relay and len(self.sites) > 1 and msg_rows[Stream.SPAT].size:
            b = steps[Stream.SPAT].batch
            src = np.array([rsu_index[int(k)] for k in b.sender[msg_rows[Stream.SPAT]]], dtype=np.int64)
            m_grid, d_grid = np.meshgrid(np.arange(src.size), np.arange(len(self.sites)), indexing="ij")
            m_idx, dst = m_grid.ravel(), d_grid.ravel()
            keep = dst != src[m_idx]
            rr_pairs = np.stack([m_idx[keep], dst[keep]], axis=1)
            add("spat_rsu", self.rsu_xy[src[rr_pairs[:, 0]]], self.rsu_h[src[rr_pairs[:, 0]]],
                self.rsu_xy[rr_pairs[:, 1]], self.rsu_h[rr_pairs[:, 1]])
        # EEBL carriers -> relay candidates (V2V rebroadcast)
        eb = steps[Stream.EEBL].batch
        ev_pairs = np.zeros((0, 2), np.int64)
        if self.eebl_relay and len(eb) and len(eb) * int(np.count_nonzero(equipped)) > _SMALL_RELAY:
            ev_pairs = self._relay_pairs(snap, eb, equipped, ego_i)
            if ev_pairs.shape[0]:
                xy = np.asarray(snap.xy_m, dtype=np.float64)
                pos_of = {k: i for i, k in enumerate(self._veh_keys.tolist())}
                carrier_i = np.array([pos_of.get(k, -1) for k in eb.sender.tolist()], dtype=np.int64)
                m = ev_pairs.shape[0]
                add("eebl_relay", xy[carrier_i[ev_pairs[:, 0]]], filled(m, hv), xy[ev_pairs[:, 1]], filled(m, hv))
        elif self.eebl_relay and len(eb):  # a few pairs: the same selection on floats
            eq = equipped.tolist()
            cand = [i for i, e in enumerate(eq) if e and i != ego_i]
            pos_of = {k: i for i, k in enumerate(self._veh_keys.tolist())}
            carrier = [pos_of.get(k, -1) for k in eb.sender.tolist()]
            if cand:
                xy = np.asarray(snap.xy_m, dtype=np.float64)
                xs, ys = xy[:, 0].tolist(), xy[:, 1].tolist()
                rng_m = self.params.range_m
                lo2, hi2 = rng_m * rng_m * (1.0 - 1e-9), rng_m * rng_m * (1.0 + 1e-9)
                pairs = []
                for rec, ci in enumerate(carrier):  # (record, candidate) pairs, record-major
                    if ci < 0:
                        continue
                    for c in cand:
                        if c == ci:
                            continue
                        # links beyond range R are lost anyway (noise floor): skip them before the channel
                        # (np.hypot(gap) <= R, decided on squares outside a 1e-9 guard band)
                        dx, dy = xs[ci] - xs[c], ys[ci] - ys[c]
                        q = dx * dx + dy * dy
                        if q <= lo2 or (q <= hi2 and float(np.hypot(dx, dy)) <= rng_m):
                            pairs.append((rec, c))
                if pairs:
                    ev_pairs = np.array(pairs, dtype=np.int64)
                    carrier_i = np.array(carrier, dtype=np.int64)
                    m = ev_pairs.shape[0]
                    add("eebl_relay", xy[carrier_i[ev_pairs[:, 0]]], filled(m, hv), xy[ev_pairs[:, 1]], filled(m, hv))
        if n == 0:
            return
        t0 = time.perf_counter()
        cat = (lambda parts: parts[0] if len(parts) == 1 else np.concatenate(parts))  # noqa: E731
        prob, lat = delivery_and_latency(cat(tx_xy), cat(tx_h), cat(rx_xy), cat(rx_h), self.buildings, self.params)
        ok = self.rng.random(n) < prob  # sample_delivery: one uniform per link
        self.stats.channel_s += time.perf_counter() - t0
        self.stats.links += n
        self._queue_ego(steps, spans, ok, lat, bsm, msg_rows)
        if "spat_rsu" in spans:
            sl = spans["spat_rsu"]
            self._queue_rsu(steps[Stream.SPAT], msg_rows[Stream.SPAT], rr_pairs, ok[sl], lat[sl])
        if "eebl_relay" in spans:
            sl = spans["eebl_relay"]
            st = steps[Stream.EEBL]
            r = ev_pairs[:, 0]
            good = ok[sl] & st.keep[r]
            rx = st.batch.tx_time_s[r] + lat[sl] + st.extra_delay_s[r]
            self.inbox_relay.push(Stream.EEBL, self._veh_keys[ev_pairs[good, 1]], st.batch.take(r[good]), rx[good])

    def _relay_pairs(self, snap: WorldSnapshot, eb: EeblBatch, equipped: np.ndarray, ego_i: int) -> np.ndarray:
        """(EEBL record, relay candidate) pairs within range R, record-major (vectorized, for many pairs)."""
        cand = np.nonzero(equipped)[0]
        cand = cand[cand != ego_i]
        keys = self._veh_keys
        pos_of = {int(keys[i]): i for i in range(keys.shape[0])}
        carrier_i = np.array([pos_of.get(int(k), -1) for k in eb.sender], dtype=np.int64)
        if not cand.size:
            return np.zeros((0, 2), np.int64)
        r_idx, c_idx = np.meshgrid(np.arange(len(eb)), cand, indexing="ij")
        r_idx, c_idx = r_idx.ravel(), c_idx.ravel()
        keep = (c_idx != carrier_i[r_idx]) & (carrier_i[r_idx] >= 0)
        xy = np.asarray(snap.xy_m, dtype=np.float64)
        # links beyond range R are lost anyway (noise floor): skip them before the channel
        gap = xy[np.maximum(carrier_i[r_idx], 0)] - xy[c_idx]
        keep &= np.hypot(gap[:, 0], gap[:, 1]) <= self.params.range_m
        return np.stack([r_idx[keep], c_idx[keep]], axis=1).astype(np.int64, copy=False)

    def _queue_ego(self, steps: dict[Stream, StepBatch], spans: dict[str, slice], ok: np.ndarray,
                   lat: np.ndarray, bsm: BsmBatch, msg_rows: dict[Stream, np.ndarray]) -> None:
        ego = self.ego_key
        sl = spans.get("bsm")
        if sl is not None:
            st = steps[Stream.BSM]
            # BSM rows may have been replaced by a freeze but keep one row per message
            if st.batch is bsm:  # untouched by faults: row i is link i (one BSM per sender and step)
                good = ok[sl] & st.keep
                rx = st.batch.tx_time_s + lat[sl] + st.extra_delay_s
            else:
                row_link = self._link_of(st.batch, bsm)
                good = ok[sl][row_link] & st.keep
                rx = st.batch.tx_time_s + lat[sl][row_link] + st.extra_delay_s
            self.inbox_ego.push(Stream.BSM, filled(int(np.count_nonzero(good)), ego, np.int64), _keep(st.batch, good),
                                rx[good])
            st = steps[Stream.EEBL]
            if len(st.batch):
                row_link = self._link_of(st.batch, bsm)
                has = row_link >= 0
                good = has & ok[sl][np.maximum(row_link, 0)] & st.keep
                rx = st.batch.tx_time_s + lat[sl][np.maximum(row_link, 0)] + st.extra_delay_s
                self.inbox_ego.push(Stream.EEBL, filled(int(np.count_nonzero(good)), ego, np.int64),
                                    _keep(st.batch, good), rx[good])
        for s in (Stream.SPAT, Stream.MAP):
            sl = spans.get(f"{s.value}_ego")
            if sl is None:
                continue
            st = steps[s]
            msg_of_row = _row_messages(st.batch)
            good = ok[sl][msg_of_row] & st.keep
            rx = st.batch.tx_time_s + lat[sl][msg_of_row] + st.extra_delay_s
            self.inbox_ego.push(s, filled(int(np.count_nonzero(good)), ego, np.int64), _keep(st.batch, good), rx[good])

    @staticmethod
    def _link_of(batch: RecordBatch, bsm: BsmBatch) -> np.ndarray:
        """Index of the carrier BSM (same sender and msg_id) of each row; -1 if none."""
        if len(bsm) == 0:
            return np.full(len(batch), -1, np.int64)
        code_b = bsm.sender * (1 << 32) + bsm.msg_id
        order = np.argsort(code_b)
        code = batch.sender * (1 << 32) + batch.msg_id
        pos = np.searchsorted(code_b[order], code)
        pos = np.minimum(pos, len(bsm) - 1)
        found = code_b[order][pos] == code
        return np.where(found, order[pos], -1)

    def _queue_rsu(self, st: StepBatch, starts: np.ndarray, pairs: np.ndarray, ok: np.ndarray,
                   lat: np.ndarray) -> None:
        msg_of_row = np.cumsum(message_starts(st.batch.sender, st.batch.msg_id)) - 1
        for p in range(pairs.shape[0]):
            if not ok[p]:
                continue
            rows = (msg_of_row == pairs[p, 0]) & st.keep
            if not np.count_nonzero(rows):
                continue
            dst = int(self.rsu_keys[pairs[p, 1]])
            rx = st.batch.tx_time_s[rows] + lat[p] + st.extra_delay_s[rows]
            self.inbox_rsu.push(Stream.SPAT, np.full(int(rows.sum()), dst), st.batch.take(rows), rx)

    # ------------------------------------------------------------------ belief
    def _information(self, snap: WorldSnapshot, t: float) -> EgoInformation:
        ego = self.ego
        sv = ego.signals(t)
        names = self.groups.names(sv.group.tolist())
        ph = sv.phase.tolist()
        cd = sv.countdown_s.tolist()
        aoi = sv.aoi_s.tolist()
        val = sv.valid.tolist()
        ttg = [0.0 if p == PHASE_GREEN else x for p, x in zip(ph, sv.time_to_green_s.tolist(), strict=True)]
        signals = {g: BelievedSignal(ph[i], cd[i], aoi[i], val[i], ttg[i] if math.isfinite(ttg[i]) else None)
                   for i, g in enumerate(names)}
        lane = self._ego_lane(snap)
        gk, map_ts = ego.lane_group(lane)
        ego_group = None if gk == NO_KEY else self.groups.name(gk)
        map_aoi = t - map_ts if math.isfinite(map_ts) else math.inf
        tv = ego.tracks(t)
        tracks = {}
        if tv.vehicle.shape[0]:
            ids = self.senders.names(tv.vehicle.tolist())
            x, y = tv.x_m.tolist(), tv.y_m.tolist()
            v, h, a = tv.speed_mps.tolist(), tv.heading_rad.tolist(), tv.accel_mps2.tolist()
            ta = tv.aoi_s.tolist()
            hb = [(f & (1 << 7)) != 0 for f in tv.event_flags.tolist()]
            tracks = {vid: Track(vid, (x[i], y[i]), v[i], h[i], a[i], ta[i], hb[i], False) for i, vid in enumerate(ids)}
        ev = ego.events(t)
        events: tuple[EEBLEvent, ...] = ()
        if ev.origin.shape[0]:
            events = tuple(EEBLEvent(self.senders.name(int(ev.origin[i])), (float(ev.x_m[i]), float(ev.y_m[i])),
                                     float(ev.decel_mps2[i]), float(ev.aoi_s[i]), bool(ev.hop_count[i] > 0),
                                     int(ev.hop_count[i])) for i in range(ev.origin.shape[0]))
        return EgoInformation(t, signals, ego_group, tracks, events, map_aoi)

    def _trace(self, t: float, info: EgoInformation) -> None:
        every = self.config.trace_every_s
        if self.trace is None or every <= 0 or t - self._last_trace < every - 1e-9:
            return
        self._last_trace = t
        sig = info.ego_signal()
        self.trace.publish("/v2x/belief", t, {
            "ego_group_id": info.ego_group_id,
            "phase": None if sig is None else sig.phase,
            "countdown_s": None if sig is None else sig.time_to_change_s,
            "spat_aoi_s": None if sig is None else sig.aoi_s,
            "map_aoi_s": info.map_aoi_s if math.isfinite(info.map_aoi_s) else None,
            "tracks": len(info.tracks), "events": len(info.eebl_events),
            "active_faults": [af.fault.name for af in self.faults.active(t)],
        })

    # ------------------------------------------------------------------ report
    def summary(self, decisions: Sequence[DecisionRecord] = ()) -> MonitorSummary:
        if self.monitor is None:
            raise RuntimeError("the monitor is off (V2XConfig.monitor=False)")
        end = self.t_prev if self.t_prev is not None else 0.0
        return self.monitor.summary(decisions, self.faults.activities(end))

    def report(self, decisions: Sequence[DecisionRecord] = ()) -> MonitorReport:
        if self.monitor is None:
            return MonitorReport(extra={"stats": self.stats.to_dict()})
        rep = self.summary(decisions).to_report()
        if self.trace is not None:
            for e in rep.episodes:
                self.trace.publish("/monitor/events", e.start_s, {
                    "kind": e.kind, "subject": e.subject, "start_s": e.start_s, "end_s": e.end_s,
                    "max_error": e.max_error, "detail": e.detail})
        extra = dict(rep.extra)
        extra["stats"] = self.stats.to_dict()
        extra["aoi_peak_s"] = {s.value: self.ego.peaks.max(s) for s in Stream}
        return MonitorReport(rep.episodes, rep.alarms, extra)

    @property
    def receiver(self) -> Receiver:
        return self.ego


def v2x_source_factory(buildings: BuildingSet | None = None, *, road_map: RoadMap | None = None,
                       channel_params: ChannelParams | None = None, config: V2XConfig | None = None
                       ) -> Any:
    """A ``SourceFactory`` (zero-argument callable) for paired execution."""
    def make() -> V2XInformationSource:
        return V2XInformationSource(buildings, road_map=road_map, channel_params=channel_params, config=config)
    return make


__all__ = ["LinkBudget", "V2XConfig", "V2XInformationSource", "V2XStats", "buildings_from_map", "rsu_sites",
           "v2x_source_factory"]
