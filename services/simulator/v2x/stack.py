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
   (``messages.LinkDraws``: keyed by stream, sender, message and receiver under the CHANNEL substream);
4. faults act per message (same verdict for every receiver) and survivors are
   queued with ``rx = tx + channel latency + fault delay``;
5. the ego's :class:`~.reconstruction.Receiver` is turned into ``EgoInformation``
   and the :class:`~.monitor.DivergenceMonitor` compares it with the snapshot.

``observe_batch`` runs the steps of a batch's rows together: 1-2 for every row, the links of
every row in one channel evaluation (3), then 3's draws, 4 and 5 row by row (each row's own
seed): the same beliefs as each row's ``observe``.

This module holds the orchestration (reset, the step, the belief, the report); the
seams are modules of their own: ``transmit.py`` (2, with the faults of 4),
``links.py`` (3), ``queues.py`` (1 and the queueing of 4).

Buildings are not part of a ScenarioProgram: give the source the map's buildings
(``V2XInformationSource(buildings=...)`` or ``road_map=``), or it runs in open
space.
"""

from __future__ import annotations

import dataclasses
import math
import time
import weakref
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
    PHASE_NAME,
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

from .channel import ChannelParams, LinkBudget
from .faults import EgoEventInput, FaultContext, FaultEngine
from .geometry import BuildingSet
from .links import LinkEvaluator, PendingLinks, evaluate_pending
from .messages import (
    BSM_PERIOD_S,
    DEFAULT_BUS_DELAY_MAX_S,
    MAP_PERIOD_S,
    NO_KEY,
    SPAT_PERIOD_S,
    BusJitter,
    KeyTable,
    LinkDraws,
    MapLane,
    RsuSite,
    message_starts,
)
from .monitor import DivergenceMonitor, MonitorSummary
from .queues import Inbox, Queues
from .reconstruction import EVENT_TIMEOUT_S, TRACK_TIMEOUT_S, Receiver
from .transmit import Transmitter

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


# one BuildingSet per RoadMap object (both immutable; the map loader keeps its maps): a map's sources share it
_MAP_BUILDINGS: weakref.WeakKeyDictionary[RoadMap, BuildingSet] = weakref.WeakKeyDictionary()


def buildings_from_map(road_map: RoadMap | None) -> BuildingSet | None:
    """The channel's BuildingSet from a RoadMap's building footprints (made once per map object)."""
    if road_map is None or not road_map.buildings:
        return None
    buildings = _MAP_BUILDINGS.get(road_map)
    if buildings is None:
        buildings = _MAP_BUILDINGS[road_map] = BuildingSet((b.footprint, b.height_m) for b in road_map.buildings)
    return buildings


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


class V2XInformationSource(Transmitter, LinkEvaluator, Queues):
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
        self.params = dataclasses.replace(self.base_params.with_model(str(ch.model)), range_m=float(ch.range_m),
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
        self.link_draws = LinkDraws.from_seed(self.seed, Substream.CHANNEL)
        # a drawing channel's LOS states, vehicle blockage and shadowing (channel.channel_draws)
        self.shadowing_base = int(substream(self.seed, Substream.SHADOWING).integers(0, 2**63 - 1))
        rsu_hash = self.senders.hashes(self.rsu_keys) if len(self.rsu_keys) else np.zeros(0, np.uint64)
        self.rsu_phase = {Stream.SPAT: self.jitter.phase_s(rsu_hash, Stream.SPAT, SPAT_PERIOD_S),
                          Stream.MAP: self.jitter.phase_s(rsu_hash, Stream.MAP, MAP_PERIOD_S)}
        self.rsu_count = {Stream.SPAT: np.zeros(len(self.sites), np.int64),
                          Stream.MAP: np.zeros(len(self.sites), np.int64)}
        # per stream, a time before which no sender is due (messages.quiet_until_s): the due checks skip it
        self._quiet_until_s = {Stream.BSM: -math.inf, Stream.SPAT: -math.inf, Stream.MAP: -math.inf}
        self._quiet_keys: np.ndarray | None = None  # the vehicle keys the BSM quiet time was computed for
        # ego lanes (MAP lookup) and fault context
        ego = program.ego
        self.ego_crossings = list(ego.route.crossings)
        self.ego_lane_keys = [self.lanes.key(c.approach_lane_id or
                                             f"{c.junction_id}@{c.stop_bar_xy_m[0]:.1f},{c.stop_bar_xy_m[1]:.1f}")
                              for c in self.ego_crossings]
        # per crossing, the front-bumper arc length up to which its approach is the ego's next (see _ego_lane)
        self._ego_lane_limits = [(c.stop_bar_s_m + 0.5, k) for c, k in zip(self.ego_crossings, self.ego_lane_keys,
                                                                          strict=True)]
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
            rsu_ids=tuple(s.rsu_id for s in self.sites), signal_onset_s=onset,
            ego_route_xy_m=np.asarray(ego.route.points_xy_m, dtype=np.float64),
            **_cross_route(program))
        self.faults = FaultEngine(program.faults, self.fault_ctx, self.senders, self.groups, self.lanes)
        self._windows_open = _windows_open(self.faults)
        # receivers
        self.ego_key = self.senders.key(ego.id)
        self.ego_hash = self.senders.hash_rows([self.ego_key])[0]  # the receiver of every ego link's draw
        self.ego = Receiver(self.app, track_timeout_s=cfg.track_timeout_s, event_timeout_s=cfg.event_timeout_s,
                            record_peaks=cfg.record_peaks, self_key=self.ego_key)
        self.rsu_rx = {int(k): Receiver(None, record_peaks=False, self_key=int(k)) for k in self.rsu_keys}
        self.relay_events: dict[int, dict[tuple[int, int], dict[str, float]]] = {}
        self.inbox_ego = Inbox()
        self.inbox_relay = Inbox()
        self.inbox_rsu = Inbox()
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
        for af in self.faults.spoofers:  # a forged roadside unit transmits from beside its junction's RSU site
            sp = af.spoof
            assert sp is not None
            site = next((i for i, g in enumerate(self.rsu_groups) if sp.group_key in g.tolist()), None)
            if site is None:
                raise ValueError(f"fault {af.fault.name!r}: no RSU site serves the signal group a spoofed_rsu "
                                 "lies about")
            sp.site, sp.origin_key = site, int(self.rsu_keys[site])
            self.rsu_index[sp.key] = site
            if sp.stream is Stream.MAP:  # a forged MAP: the site's real rows of the ego's approach lanes
                lanes, _groups, stops = self.rsu_lanes[site]
                mine = np.isin(lanes, np.asarray(self.ego_lane_keys, np.int64))
                if not mine.any():
                    raise ValueError(f"fault {af.fault.name!r}: the MAP of the RSU serving the group a spoofed_rsu "
                                     "ties the ego's lanes to describes none of them")
                sp.lanes, sp.stops_xy_m = lanes[mine], np.asarray(stops, np.float64).reshape(-1, 2)[mine]
        # RSU-to-RSU backhaul (v2x.backhaul): per site, the sites its SPaT is forwarded to over the wire
        bh = program.v2x.backhaul
        self.backhaul_to: list[list[int]] | None = None
        if bh is not None:
            at = {s.rsu_id: i for i, s in enumerate(self.sites)}
            pairs = ({(at[ln.rsu_a], at[ln.rsu_b]) for ln in bh.links if ln.rsu_a in at and ln.rsu_b in at}
                     if bh.links else {(a, b) for a in range(len(self.sites)) for b in range(a + 1, len(self.sites))})
            self.backhaul_to = [sorted({b for a, b in pairs if a == i} | {a for a, b in pairs if b == i} - {i})
                                for i in range(len(self.sites))]
            self.backhaul_latency_s, self.backhaul_loss = float(bh.latency_s), float(bh.loss)
            self.backhaul_draws = LinkDraws.from_seed(self.seed, Substream.BACKHAUL)
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
        front = float(snap.route_s_m.item(e)) + 0.5 * float(snap.length_m.item(e))
        for limit_s_m, k in self._ego_lane_limits:
            if front <= limit_s_m:
                return k
        return NO_KEY

    # ------------------------------------------------------------------ observe
    def observe(self, snap: WorldSnapshot) -> EgoInformation:
        pending = self._begin_step(snap)
        if pending is not None:
            self._links(pending)
        return self._end_step(snap)

    @staticmethod
    def observe_batch(sources: Sequence[V2XInformationSource], snaps: Sequence[WorldSnapshot]
                      ) -> list[EgoInformation]:
        """``[s.observe(snap) for s, snap in zip(sources, snaps)]`` (the same beliefs, bit for bit), with the
        radio links of every row in one channel evaluation per channel (buildings and parameters): what
        paired execution calls for the V2X rows of a batch at each step."""
        pending = [src._begin_step(snap) for src, snap in zip(sources, snaps, strict=True)]
        groups: dict[tuple[int, ChannelParams], list[tuple[V2XInformationSource, PendingLinks]]] = {}
        for src, p in zip(sources, pending, strict=True):
            if p is not None:
                groups.setdefault((id(src.buildings), src.params), []).append((src, p))
        for members in groups.values():
            first = members[0][0]
            t0 = time.perf_counter()
            results = evaluate_pending([p for _, p in members], first.buildings, first.params)
            share_s = (time.perf_counter() - t0) / sum(p.n for _, p in members)
            for (src, p), (prob, lat) in zip(members, results, strict=True):
                src.stats.channel_s += share_s * p.n
                src._finish_links(p, prob, lat)
        return [src._end_step(snap) for src, snap in zip(sources, snaps, strict=True)]

    def _begin_step(self, snap: WorldSnapshot) -> PendingLinks | None:
        """Steps 1-2 of the module docstring (delivery, fault windows, transmit); the step's radio links wait for
        the channel (None: no link)."""
        t = float(snap.t_s)
        keys = self._vehicle_keys(snap)
        self._deliver(t)
        ego_i = snap.ego_index
        if snap.signal_group_ids is not self._gids:
            self._gids = snap.signal_group_ids
            self._gidx = {g: i for i, g in enumerate(snap.signal_group_ids)}
            self._gkeys = self.groups.keys(snap.signal_group_ids)
        gidx = self._gidx
        trace = self.trace
        was = [af.window.resolved for af in self.faults] if trace is not None else []
        if self._windows_open:
            self.faults.update_windows(
                t, EgoEventInput(t, float(snap.stop_bar_distance_m[ego_i]) if math.isfinite(
                    float(snap.stop_bar_distance_m[ego_i])) else None, float(snap.speed_mps[ego_i])),
                np.asarray(snap.true_phase), np.asarray(snap.time_to_change_s), gidx)
            self._windows_open = _windows_open(self.faults)
        if trace is not None:
            for af, before in zip(self.faults, was, strict=True):
                if (af.window.resolved and not before) or (self.t_prev is None and af.window.resolved):
                    trace.publish("/v2x/fault_window", t, {
                        "name": af.fault.name, "operator": af.operator.name, "stream": af.stream.value,
                        "start_s": af.window.start_s,
                        "end_s": None if math.isinf(af.window.end_s or math.inf) else af.window.end_s})
        if self.t_prev is None:  # the first step behaves like any other: slots in (t - dt, t]
            self.t_prev = t - float(self.program.dt_s if self.program is not None else 0.05)
        return self._transmit(snap, keys, t)

    def _end_step(self, snap: WorldSnapshot) -> EgoInformation:
        """Step 5 (after the links of the step are queued): the ego's belief and the monitor."""
        t = float(snap.t_s)
        trace = self.trace
        self._deliver_ego(t)
        info = self._information(snap, t)
        if self.monitor is not None:
            self.monitor.observe(snap, info)
        if trace is not None:
            self._trace(t, info)
        self.t_prev = t
        self.stats.steps += 1
        return info

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

    def arrivals(self) -> list[dict[str, Any]]:
        """The messages the ego received at the last step (``keep_rx`` on), in arrival order, as plain
        dicts in scenario units (``kind`` BSM / EEBL / SPAT / MAP, ``sender``, ``rx_s``, ``hops``, the
        message's fields; SPaT / MAP rows of one message grouped): what raw-message mode encodes."""
        out: list[dict[str, Any]] = []
        names, groups, lanes = self.senders.name, self.groups.name, self.lanes.name
        for stream, batch, rx in self.rx_batches:
            cols = {n: getattr(batch, n).tolist() for n in batch.field_names()}
            rxl = rx.tolist()
            if stream is Stream.BSM:
                for i in range(len(batch)):
                    out.append({"kind": "BSM", "sender": names(cols["sender"][i]), "rx_s": rxl[i], "hops": 0,
                                "msg_id": cols["msg_id"][i], "timestamp_s": cols["timestamp_s"][i],
                                "x_m": cols["x_m"][i], "y_m": cols["y_m"][i], "speed_mps": cols["speed_mps"][i],
                                "heading_rad": cols["heading_rad"][i], "accel_mps2": cols["accel_mps2"][i],
                                "brake_flag": bool(cols["brake_flag"][i]), "event_flags": cols["event_flags"][i]})
            elif stream is Stream.EEBL:
                for i in range(len(batch)):
                    out.append({"kind": "EEBL", "sender": names(cols["sender"][i]), "rx_s": rxl[i],
                                "hops": cols["hop_count"][i], "origin": names(cols["origin"][i]),
                                "event_id": cols["event_id"][i], "timestamp_s": cols["timestamp_s"][i],
                                "x_m": cols["x_m"][i], "y_m": cols["y_m"][i], "speed_mps": cols["speed_mps"][i],
                                "heading_rad": cols["heading_rad"][i], "decel_mps2": cols["decel_mps2"][i]})
            else:
                msgs: dict[tuple[int, int], dict[str, Any]] = {}
                for i in range(len(batch)):
                    key = (cols["sender"][i], cols["msg_id"][i])
                    m = msgs.get(key)
                    if m is None:
                        m = msgs[key] = {"kind": stream.value.upper(), "sender": names(key[0]), "rx_s": rxl[i],
                                         "hops": cols.get("hop_count", [0] * len(batch))[i], "msg_id": key[1],
                                         "msg_count": cols["msg_count"][i], "timestamp_s": cols["timestamp_s"][i],
                                         "groups" if stream is Stream.SPAT else "lanes": []}
                    if stream is Stream.SPAT:
                        m["groups"].append({
                            "group_id": groups(cols["group"][i]), "origin": names(cols["origin"][i]),
                            "phase": PHASE_NAME.get(cols["phase"][i], "unknown"),
                            **{f: (v if math.isfinite(v) else None) for f in
                               ("min_end_time_s", "max_end_time_s", "green_start_time_s")
                               for v in (cols[f][i],)}})
                    else:
                        g = cols["group"][i]
                        m["lanes"].append({"lane_id": lanes(cols["lane"][i]),
                                           "signal_group_id": None if g == NO_KEY else groups(g),
                                           "stop_bar_xy_m": [cols["stop_x_m"][i], cols["stop_y_m"][i]]})
                out.extend(msgs.values())
        out.sort(key=lambda a: a["rx_s"])  # stable: stream order among equal arrival times
        return out

    # ------------------------------------------------------------------ belief
    def _information(self, snap: WorldSnapshot, t: float) -> EgoInformation:
        ego = self.ego
        group_name, sender_name = self.groups.name, self.senders.name
        signals = {}
        for g, phase, countdown, to_green, aoi, valid in ego.signal_beliefs(t):
            signals[group_name(g)] = BelievedSignal(phase, countdown, aoi, valid, 0.0 if phase == PHASE_GREEN else
                                                    to_green if math.isfinite(to_green) else None)
        lane = self._ego_lane(snap)
        gk, map_ts = ego.lane_group(lane)
        ego_group = None if gk == NO_KEY else group_name(gk)
        map_aoi = t - map_ts if math.isfinite(map_ts) else math.inf
        tracks = {}
        for k, x, y, v, h, a, aoi, _valid, _brake, flags, _cnt in ego.track_beliefs(t):
            vid = sender_name(k)
            tracks[vid] = Track(vid, (x, y), v, h, a, aoi, (flags & (1 << 7)) != 0, False)
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


def _windows_open(faults: FaultEngine) -> bool:
    """Whether a fault window may still resolve online: ``FaultWindow.update`` returns at once on a
    window that is resolved or never will be, so once every window is, the per-step update (and the
    ego state it reads) is skipped. Windows never un-resolve."""
    return any(not (af.window.resolved or af.window.never) for af in faults)


def v2x_source_factory(buildings: BuildingSet | None = None, *, road_map: RoadMap | None = None,
                       channel_params: ChannelParams | None = None, config: V2XConfig | None = None
                       ) -> Any:
    """A ``SourceFactory`` (zero-argument callable) for paired execution."""
    def make() -> V2XInformationSource:
        return V2XInformationSource(buildings, road_map=road_map, channel_params=channel_params, config=config)
    return make



def _cross_route(program: ScenarioProgram) -> dict[str, Any]:
    """The crossing route a ghost on ``ghost_route: cross`` drives: the first agent's with a conflict point (IMA's
    and LTA's conflict agent), as ``FaultContext`` fields; none without one."""
    for agent in program.agents:
        conflict_s_m = agent.route.conflict_s_m
        if conflict_s_m is not None:
            return {"cross_route_xy_m": np.asarray(agent.route.points_xy_m, dtype=np.float64),
                    "cross_conflict_s_m": float(conflict_s_m)}
    return {}

__all__ = ["LinkBudget", "V2XConfig", "V2XInformationSource", "V2XStats", "buildings_from_map", "rsu_sites",
           "v2x_source_factory"]

