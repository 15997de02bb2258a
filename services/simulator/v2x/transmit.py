"""Transmit (step 2 of :class:`~.stack.V2XInformationSource`): due senders sample the snapshot.

BSM (+ EEBL events) from every equipped live vehicle but the ego, SPaT and MAP from
every RSU, each on its own phase offset (BUS_JITTER); RSUs append the SPaT of other
junctions they hold (``v2x.spat_relay``, ``v2x.backhaul``) and describe those junctions'
lanes in their MAP; vehicles rebroadcast EEBL events they
heard about a vehicle ahead of them (``v2x.eebl_rebroadcast``). Faults act per
message (same verdict for every receiver), what left the senders goes to the trace
(``/v2x/tx``), and the step's links are collected for the channel (``links.py``; ``_transmit`` returns
them, and ``observe`` or ``observe_batch`` evaluates them).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from lastv2x.core.catalogue import Stream
from services.simulator.info import (
    WorldSnapshot,
)
from services.simulator.kernels.transmit import bsm_slots

from .faults import StepBatch
from .forged import GHOST_EVENT_ID
from .messages import (
    BATCH_TYPES,
    BSM_PERIOD_S,
    BSM_STREAM,
    EEBL_STREAM,
    EVENT_HARD_BRAKING,
    MAP_PERIOD_S,
    MAP_STREAM,
    MSG_COUNT_MOD,
    QUIET_GUARD_S,
    SPAT_PERIOD_S,
    SPAT_STREAM,
    STREAM_VALUE,
    BsmBatch,
    EeblBatch,
    MapBatch,
    SpatBatch,
    due_mask,
    eebl_from_bsms,
    filled,
    live_equipped,
    make_map,
    message_count,
    quiet_until_s,
)

if TYPE_CHECKING:
    from .links import PendingLinks

_NO_SITES = np.zeros(0, np.int64)
# the step of a stream with nothing to send: what ``FaultEngine.apply`` returns for an empty batch (no operator
# runs on it, and its zero-length columns cannot be written), shared by every step (its time is not read)
_EMPTY_STEPS = {s: StepBatch.untouched(s, math.nan, b.empty()) for s, b in BATCH_TYPES.items()}


class Transmitter:
    """The transmit half of the V2X source (a mixin of ``V2XInformationSource``, whose state it reads:
    the sender and group tables, jitter, per-sender counters, RSU sites, the fault engine)."""

    # the ``_prev_hb`` array last seen all False (``reset`` and new vehicles replace the array, and only
    # ``_transmit`` writes into it): while it is, steps without a hard-braking flag skip the onset bookkeeping
    _prev_hb_clear: np.ndarray | None = None
    # the snapshot rows that may send a BSM (all but the ego's) and their phases, for ``_quiet_keys`` and
    # ``_quiet_ego`` (``reset`` clears ``_quiet_keys``)
    _quiet_ego = -1
    _bsm_rows: np.ndarray = _NO_SITES
    _bsm_rows_phase: np.ndarray = np.zeros(0)
    _bsm_delay_key = np.uint64(0)  # the BSM stream's bus-delay key (BusJitter.delay_key), with the rows above
    # ``_sending_sites`` per stream, for the ``rsu_phase`` table ``_sending_for``
    _sending_for: object = None
    _sending: dict[Stream, tuple[np.ndarray, np.ndarray]]

    def _transmit(self, snap: WorldSnapshot, keys: np.ndarray, t: float) -> PendingLinks | None:
        """Send what is due at ``t``; the step's radio links wait for the channel (None: no link)."""
        ego_i = snap.ego_index
        # hard-braking onsets number the events of each origin (nothing to do while nobody brakes hard and no
        # flag is left from the last steps); hb None: no live vehicle brakes hard
        hb: np.ndarray | None = None
        if np.count_nonzero(snap.hard_brake_event) or self._prev_hb_clear is not self._prev_hb:
            hb = np.asarray(snap.hard_brake_event, dtype=bool) & np.asarray(snap.alive, dtype=bool)
            onset = hb & ~self._prev_hb[keys]
            self._event_seq[keys[onset]] += 1
            self._prev_hb[keys] = hb
            self._prev_hb_clear = None if np.count_nonzero(self._prev_hb) else self._prev_hb
        if keys is not self._quiet_keys or ego_i != self._quiet_ego:
            # another set of vehicles (or ego): their BSM slots are checked afresh. The ego sends no BSM to
            # itself, so its slots neither make a step due nor end a quiet time (none at all with a lone ego)
            self._quiet_keys, self._quiet_ego, self._quiet_until_s[BSM_STREAM] = keys, ego_i, -math.inf
            rows = np.arange(keys.shape[0])
            self._bsm_rows = rows[rows != ego_i]
            self._bsm_rows_phase = self._bsm_phase[keys[self._bsm_rows]]
            self._bsm_delay_key = self.jitter.delay_key(BSM_STREAM)
        if t < self._quiet_until_s[BSM_STREAM]:
            vi = _NO_SITES
        else:  # the due senders, their message numbers (counters advanced) and bus delays: one kernel call
            vi, msg_id, delay, self._quiet_until_s[BSM_STREAM] = bsm_slots(
                self.t_prev, t, BSM_PERIOD_S, QUIET_GUARD_S, self._bsm_rows, self._bsm_rows_phase,
                live_equipped(snap), keys, self._bsm_count, self.senders.hash_table(), self._bsm_delay_key,
                self.jitter.bus_delay_max_s)
        spat_due = self._due_sites(SPAT_STREAM, SPAT_PERIOD_S, t)
        map_due = self._due_sites(MAP_STREAM, MAP_PERIOD_S, t)
        # forged vehicles (ghost_sender) due now; none without such a fault
        ghost = self.faults.ghost_bsms(self.t_prev, t, float(snap.route_s_m[ego_i]), self.jitter) \
            if self.faults.ghosts else None
        # forged roadside units (spoofed_rsu) due now; none without such a fault
        spoof = self.faults.spoof_spat(self.t_prev, t, self.jitter) if self.faults.spoofers else None
        spoof_map = self.faults.spoof_map(self.t_prev, t, self.jitter) if self.faults.spoofers else None
        if not (vi.size or spat_due.size or map_due.size) and ghost is None and spoof is None and spoof_map is None:
            return None  # nobody is due (10 Hz messages, 20 Hz steps): no message, no fault verdict, no link
        if vi.size:
            vk = keys[vi]
            xy = np.asarray(snap.xy_m, dtype=np.float64)
            hb_vi = hb[vi] if hb is not None else None
            # make_bsms(...) on arrays that are fresh already (fancy-indexed): the same columns, fewer copies
            bsm = BsmBatch._build(dict(
                sender=vk, msg_id=msg_id, msg_count=msg_id % MSG_COUNT_MOD,
                tx_time_s=t + delay, timestamp_s=filled(vi.size, t),
                x_m=xy[:, 0][vi], y_m=xy[:, 1][vi],  # (a column view, then one index: cheaper than xy[vi, 0])
                speed_mps=np.asarray(snap.speed_mps, dtype=np.float64)[vi],
                heading_rad=np.asarray(snap.heading_rad, dtype=np.float64)[vi],
                accel_mps2=np.asarray(snap.accel_mps2, dtype=np.float64)[vi],
                brake_flag=np.asarray(snap.brake_flag, dtype=bool)[vi],
                event_flags=np.zeros(vi.size, np.int64) if hb_vi is None else np.where(
                    hb_vi, EVENT_HARD_BRAKING, 0).astype(np.int64, copy=False)))
            eebl = EeblBatch.empty()
            if hb_vi is not None and np.count_nonzero(hb_vi):
                eebl = eebl_from_bsms(bsm, self._event_seq[vk])
            if self.eebl_relay:
                eebl = EeblBatch.concat([eebl, self._relay_eebl(bsm, t)])
        else:  # no BSM this step (and so no EEBL record, own or relayed: both ride on a BSM)
            bsm, eebl = BsmBatch.empty(), EeblBatch.empty()
        if ghost is not None:  # after the real ones (the channel carries them from where the ghost claims to be)
            bsm = BsmBatch.concat([bsm, ghost]) if len(bsm) else ghost
            if np.count_nonzero(ghost.event_flags):  # a forged hard brake (ghost_sender on EEBL): its EEBL record
                forged = eebl_from_bsms(ghost, np.full(len(ghost), GHOST_EVENT_ID, np.int64))
                eebl = EeblBatch.concat([eebl, forged]) if len(eebl) else forged
        # RSUs
        spat, map_ = SpatBatch.empty(), MapBatch.empty()
        if len(self.sites):
            spat = self._rsu_spat(snap, t, spat_due)
            map_ = self._rsu_map(t, map_due)
        if spoof is not None:  # after the real ones (the channel carries them from the junction's RSU site)
            spat = SpatBatch.concat([spat, spoof]) if len(spat) else spoof
        if spoof_map is not None:
            map_ = MapBatch.concat([map_, spoof_map]) if len(map_) else spoof_map
        # faults (per message, all receivers)
        steps: dict[Stream, StepBatch] = {}
        sent = False
        for s, b in ((BSM_STREAM, bsm), (EEBL_STREAM, eebl), (SPAT_STREAM, spat), (MAP_STREAM, map_)):
            if not len(b):  # no fault acts on an empty batch: the shared empty step (most streams, most steps)
                steps[s] = _EMPTY_STEPS[s]
                continue
            st = self.faults.apply(s, t, b)
            steps[s] = st
            n = len(st.batch)
            if n:
                sent = True
                self.stats.tx[STREAM_VALUE[s]] += message_count(st.batch)
                if not st.untouched_rows:  # (untouched: every row kept)
                    self.stats.faulted[STREAM_VALUE[s]] += n - int(np.count_nonzero(st.keep))
        if self.trace is not None and sent:
            tx: list[dict[str, Any]] = []
            for s, st in steps.items():
                if len(st.batch):
                    tx += self._message_rows(s, st.batch, kept=st.keep)
            self.trace.publish("/v2x/tx", t, {"messages": tx})
        if not sent:
            return None
        return self._collect_links(snap, t, bsm, steps)

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

    def _due_sites(self, stream: Stream, period_s: float, t: float) -> np.ndarray:
        """Indices of the RSU sites that send ``stream`` and whose slot falls in (t_prev, t] (none without
        such sites, none before the quiet time the last check left: MAP is due on one step in twenty)."""
        if t < self._quiet_until_s[stream]:
            return _NO_SITES
        sites, phase = self._sending_sites(stream)
        self._quiet_until_s[stream] = quiet_until_s(t, phase, period_s)  # +inf without sending sites
        if not sites.size:
            return _NO_SITES
        return sites[due_mask(self.t_prev, t, phase, period_s)]

    def _sending_sites(self, stream: Stream) -> tuple[np.ndarray, np.ndarray]:
        """The RSU sites that can put a ``stream`` message on the air, and their phases: SPaT from sites
        serving a signal group, or from every site while RSUs rebroadcast what radio or backhaul brought;
        MAP from sites with lanes. The others would build empty batches on their slots (their counters,
        never sent, need not advance). Computed once per ``rsu_phase`` table (``reset`` replaces it)."""
        if self._sending_for is not self.rsu_phase:
            relays = self.spat_relay or self.backhaul_to is not None
            sends = {SPAT_STREAM: [relays or len(g) > 0 for g in self.rsu_groups],
                     MAP_STREAM: [len(lanes[0]) > 0 for lanes in self.rsu_lanes]}
            self._sending = {}
            for s, ok in sends.items():
                idx = np.array([i for i, v in enumerate(ok) if v], dtype=np.int64)
                self._sending[s] = idx, self.rsu_phase[s][idx]
            self._sending_for = self.rsu_phase
        return self._sending[stream]

    def _due_rsus(self, stream: Stream, ri: np.ndarray, t: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The due RSUs ``ri`` (site indices whose ``stream`` slot falls in (t_prev, t]): (site indices,
        sender keys, message ids, bus delays), their message counters advanced; None when none is due."""
        if ri.size == 0:
            return None
        rk = self.rsu_keys[ri]
        count = self.rsu_count[stream]
        msg_id = count[ri]  # fancy-indexed: a copy
        count[ri] = msg_id + 1
        return ri, rk, msg_id, self.jitter.bus_delay_s(self.senders.hashes(rk), stream, msg_id)

    def _rsu_spat(self, snap: WorldSnapshot, t: float, ri: np.ndarray) -> SpatBatch:
        due = self._due_rsus(SPAT_STREAM, ri, t)
        if due is None:
            return SpatBatch.empty()
        ri, rk, msg_id, delay = due
        own = self._own_spat(snap, ri, rk, msg_id, t, delay)
        if not self.spat_relay and self.backhaul_to is None:  # RSUs rebroadcast what radio or backhaul brought
            return own
        parts: list[SpatBatch] = []
        for j, i in enumerate(ri.tolist()):
            k = int(self.rsu_keys[i])
            mine = own.take(own.sender == k)
            view, sel = self._relayable(i, t)
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

    def _relayable(self, i: int, t: float) -> tuple[Any, np.ndarray]:
        """What RSU site ``i`` holds of other junctions' SPaT (radio or backhaul brought it) and may pass on at
        ``t``: (its signal view, the rows within the relay's hop and age limits, its own groups' rows left out)."""
        cfg = self.config
        k = int(self.rsu_keys[i])
        view = self.rsu_rx[k].signals(t)
        sel = (view.origin != k) & (view.hop_count + 1 <= cfg.spat_relay_max_hops) & (
            view.aoi_s <= cfg.spat_relay_max_age_s)
        if not np.isin(view.group, self.rsu_groups[i]).all():
            sel &= ~np.isin(view.group, self.rsu_groups[i])
        return view, sel

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
                lay = None, None, None, False
            else:
                groups = np.concatenate([np.asarray(g, np.int64) for g in groups_l])
                rep = np.repeat(np.arange(len(groups_l)), counts)
                pos = {int(k): i for i, k in enumerate(self._gkeys.tolist())}
                src = np.array([pos.get(int(g), -1) for g in groups.tolist()], dtype=np.int64)
                groups.setflags(write=False)
                lay = groups, rep, src, bool(np.count_nonzero(src >= 0) == src.size)
            self._spat_layout[key] = lay
        groups, rep, src, all_shown = lay
        if groups is None:
            return SpatBatch.empty()
        n = groups.shape[0]
        if all_shown:
            phase = np.asarray(snap.true_phase, dtype=np.int64)[src]
            ends = t + np.asarray(snap.time_to_change_s, dtype=np.float64)[src]
            green = t + np.asarray(snap.time_to_green_s, dtype=np.float64)[src]
        else:  # a served group the snapshot does not show: phase -1, no end, no green
            ok = src >= 0
            sc = np.maximum(src, 0)
            phase = np.where(ok, np.asarray(snap.true_phase, dtype=np.int64)[sc], -1)
            ends = np.where(ok, t + np.asarray(snap.time_to_change_s, dtype=np.float64)[sc], math.inf)
            green = np.where(ok, t + np.asarray(snap.time_to_green_s, dtype=np.float64)[sc], math.inf)
        sender = rk[rep]  # int64 keys and counters, fancy-indexed: fresh arrays
        mid = msg_id[rep]
        return SpatBatch._build(dict(
            sender=sender, msg_id=mid, msg_count=mid % MSG_COUNT_MOD, origin=sender.copy(),
            group=groups.copy(), phase=phase, min_end_time_s=ends, max_end_time_s=ends.copy(),
            green_start_time_s=green, tx_time_s=t + delay[rep], timestamp_s=filled(n, t),
            hop_count=np.zeros(n, np.int64)))

    def _rsu_map(self, t: float, ri: np.ndarray) -> MapBatch:
        due = self._due_rsus(MAP_STREAM, ri, t)
        if due is None:
            return MapBatch.empty()
        ri, rk, msg_id, delay = due
        if not self.spat_relay and self.backhaul_to is None:
            return make_map(rk, msg_id, [self.rsu_lanes[i] for i in ri.tolist()], t, delay)
        # an RSU that relays other junctions' SPaT describes their lanes too: a receiver can then tie its lane at
        # the next junction to the group the relayed SPaT is about (the junctions' MAPs are static, held by the chain)
        return make_map(rk, msg_id, [self._lanes_told(i, t) for i in ri.tolist()], t, delay)

    def _lanes_told(self, i: int, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``rsu_lanes[i]`` and, after them, the lanes of every site whose SPaT site ``i`` relays at ``t`` (a lane
        told twice kept once, at its first place)."""
        view, sel = self._relayable(i, t)
        origins = set(view.origin[sel].tolist())
        if not origins:
            return self.rsu_lanes[i]
        at = {int(k): x for x, k in enumerate(self.rsu_keys.tolist())}
        parts = [self.rsu_lanes[i]] + [self.rsu_lanes[at[o]] for o in sorted(origins) if o in at and at[o] != i]
        lanes = np.concatenate([p[0] for p in parts])
        _, first = np.unique(lanes, return_index=True)
        keep = np.sort(first)
        return (lanes[keep], np.concatenate([p[1] for p in parts])[keep],
                np.concatenate([np.asarray(p[2], np.float64).reshape(-1, 2) for p in parts])[keep])


__all__ = ["Transmitter"]
