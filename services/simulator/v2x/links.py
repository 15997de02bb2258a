"""Links (step 3 of :class:`~.stack.V2XInformationSource`): one channel evaluation per step.

Every link of the step — sender -> ego (BSM, with the EEBL records riding on it; one
per SPaT/MAP message), EEBL carrier -> relay candidates within range, RSU -> RSU
(SPaT relay over the radio) — goes through one vectorized ``delivery_and_latency`` and one Bernoulli
draw each (CHANNEL substream); the survivors are queued (``queues.py``). RSU -> RSU over the wired
backhaul (``v2x.backhaul``) is not a radio link: its latency and loss are the spec's (BACKHAUL substream).
"""

from __future__ import annotations

import time

import numpy as np

from lastv2x.core.catalogue import Stream
from services.simulator.info import (
    WorldSnapshot,
)

from .channel import delivery_and_latency
from .faults import StepBatch
from .messages import (
    BsmBatch,
    EeblBatch,
    filled,
    message_starts,
)

_SMALL_RELAY = 64  # EEBL records x equipped vehicles up to which relay pairs are picked on floats


def _rows_of(xy: np.ndarray, n: int) -> np.ndarray:
    """``n`` copies of one point as an (n, 2) array (``np.broadcast_to``'s values, built directly)."""
    out = np.empty((n, 2))
    out[:] = xy
    return out


class LinkEvaluator:
    """The channel half of the V2X source (a mixin of ``V2XInformationSource``)."""

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
        if self.backhaul_to is not None and msg_rows[Stream.SPAT].size:
            self._backhaul(steps[Stream.SPAT], msg_rows[Stream.SPAT])
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

    def _backhaul(self, st: StepBatch, starts: np.ndarray) -> None:
        """RSU -> RSU over the wired backhaul (``v2x.backhaul``): every SPaT message of an RSU to the RSUs
        joined to it, after the backhaul's latency, each lost with its loss probability (own substream:
        the radio draws do not move). Not the radio: no range, no blockage."""
        assert self.backhaul_to is not None
        src = [self.rsu_index[int(k)] for k in st.batch.sender[starts].tolist()]
        pairs = np.array([(m, d) for m, s in enumerate(src) for d in self.backhaul_to[s]], np.int64).reshape(-1, 2)
        if not pairs.shape[0]:
            return
        m = pairs.shape[0]
        ok = self.backhaul_rng.random(m) >= self.backhaul_loss if self.backhaul_loss > 0.0 else np.ones(m, bool)
        self._queue_rsu(st, starts, pairs, ok, filled(m, self.backhaul_latency_s))

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


__all__ = ["LinkEvaluator"]
