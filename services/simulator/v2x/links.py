"""Links (step 3 of :class:`~.stack.V2XInformationSource`): one channel evaluation per step (in a batch
whose rows are observed together, one for the links of all its rows: :func:`evaluate_pending`).

Every link of the step — sender -> ego (BSM, with the EEBL records riding on it; one
per SPaT/MAP message), EEBL carrier -> relay candidates within range, RSU -> RSU
(SPaT relay over the radio) — goes through one ``delivery_and_latency`` (the channel's kernel) and one Bernoulli
draw each, its uniform keyed by (stream, sender, message, receiver) under the CHANNEL substream
(``messages.LinkDraws``); the survivors are queued (``queues.py``). RSU -> RSU over the wired
backhaul (``v2x.backhaul``) is not a radio link: its latency and loss are the spec's (loss drawn the same
way under the BACKHAUL substream).
"""

from __future__ import annotations

import time

import numpy as np

from lastv2x.core.catalogue import Stream
from services.simulator.info import (
    WorldSnapshot,
)
from services.simulator.kernels.links import relay_pairs

from .channel import ChannelParams, channel_draws, delivery_and_latency
from .faults import StepBatch
from .geometry import BuildingSet
from .messages import (
    BSM_STREAM,
    EEBL_STREAM,
    SPAT_STREAM,
    BsmBatch,
    filled,
    live_equipped,
    message_start_rows,
)
from .queues import RSU_EGO_SPANS

_NO_ROWS = np.zeros(0, np.int64)
_NO_ROWS.setflags(write=False)
_NO_PAIRS = np.zeros((0, 2), np.int64)
_NO_PAIRS.setflags(write=False)


Column = list[float] | np.ndarray


class _StepLinks:
    """The links of one step in the order they are added, as six columns (transmitter x, y, antenna height,
    receiver x, y, height) in segments of Python floats or arrays, with the span of each kind of link.
    (:func:`evaluate_pending` sends them to the channel.)"""

    def __init__(self) -> None:
        self.segments: list[tuple[Column, Column, Column, Column, Column, Column]] = []
        self.spans: dict[str, slice] = {}
        self.n = 0

    def add(self, name: str, m: int, tx_x: Column, tx_y: Column, tx_h: Column, rx_x: Column, rx_y: Column,
            rx_h: Column) -> None:
        """``m`` links (every column of length ``m``)."""
        if m == 0:
            return
        self.segments.append((tx_x, tx_y, tx_h, rx_x, rx_y, rx_h))
        self.spans[name] = slice(self.n, self.n + m)
        self.n += m


class PendingLinks:
    """The links one row's step put on the air, waiting for the channel: what :meth:`LinkEvaluator._finish_links`
    needs to draw and queue them once their ``(delivery_prob, latency_s)`` are known. A batch of rows
    evaluates the pending links of all its rows in one channel call (``V2XInformationSource.observe_batch``)."""

    __slots__ = ("bsm", "draws", "ev_pairs", "links", "msg_rows", "rr_pairs", "steps")

    def __init__(self, links: _StepLinks, steps: dict[Stream, StepBatch], bsm: BsmBatch,
                 msg_rows: dict[Stream, np.ndarray], rr_pairs: np.ndarray, ev_pairs: np.ndarray) -> None:
        self.links, self.steps, self.bsm = links, steps, bsm
        self.msg_rows, self.rr_pairs, self.ev_pairs = msg_rows, rr_pairs, ev_pairs
        self.draws: np.ndarray | None = None  # (3, n) under a TR 37.885 channel (channel.channel_draws), else None

    @property
    def n(self) -> int:
        """The number of links."""
        return self.links.n


def evaluate_pending(pending: list[PendingLinks], buildings: BuildingSet | None, params: ChannelParams
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(delivery_prob, latency_s)`` of each row's pending links, in link order: one channel evaluation for
    the links of every row (the channel is elementwise: each row gets the bits its own evaluation gives)."""
    segments = [seg for p in pending for seg in p.links.segments]
    tx_x, tx_y, tx_h, rx_x, rx_y, rx_h = (_column([seg[j] for seg in segments]) for j in range(6))
    draws = None
    if params.draws_links:
        parts = [p.draws for p in pending if p.draws is not None]
        draws = parts[0] if len(parts) == 1 else np.ascontiguousarray(np.concatenate(parts, axis=1))
    prob, lat = delivery_and_latency(tx_x, tx_y, tx_h, rx_x, rx_y, rx_h, buildings, params, draws)
    if len(pending) == 1:
        return [(prob, lat)]
    out, at = [], 0
    for p in pending:
        out.append((prob[at:at + p.n], lat[at:at + p.n]))
        at += p.n
    return out


def _column(parts: list[Column]) -> np.ndarray:
    """One float64 column of the pieces in order (runs of Python-float pieces joined before they become arrays)."""
    if len(parts) == 1 and isinstance(parts[0], list):  # most steps: one segment of floats
        return np.array(parts[0], dtype=np.float64)
    arrays: list[np.ndarray] = []
    run: list[float] = []
    for c in parts:
        if isinstance(c, list):
            run += c
            continue
        if run:
            arrays.append(np.array(run, dtype=np.float64))
            run = []
        arrays.append(np.asarray(c, dtype=np.float64))
    if run:
        arrays.append(np.array(run, dtype=np.float64))
    return np.ascontiguousarray(arrays[0] if len(arrays) == 1 else np.concatenate(arrays))


class LinkEvaluator:
    """The channel half of the V2X source (a mixin of ``V2XInformationSource``)."""

    def _collect_links(self, snap: WorldSnapshot, t: float, bsm: BsmBatch, steps: dict[Stream, StepBatch]
                       ) -> PendingLinks | None:
        """Every link of the step, for one channel evaluation (None: no link). The wired backhaul, not a
        radio link, is queued here."""
        hv = self.params.vehicle_antenna_height_m
        ego_i = snap.ego_index
        ego_x, ego_y = np.asarray(snap.xy_m, dtype=np.float64)[ego_i].tolist()
        links = _StepLinks()
        # BSM (the EEBL events share the carrier's BSM link to the ego)
        nb = len(bsm)
        if nb:
            links.add("bsm", nb, bsm.x_m, bsm.y_m, [hv] * nb, [ego_x] * nb, [ego_y] * nb, [hv] * nb)
        # RSU messages -> ego (one link per message)
        rsu_index = self.rsu_index
        msg_rows: dict[Stream, np.ndarray] = {}
        rsu_cols: tuple[list[float], list[float], list[float]] | None = None  # RSU x, y, antenna height
        for s, span in RSU_EGO_SPANS:
            b = steps[s].batch
            if len(b) == 0:
                msg_rows[s] = _NO_ROWS
                continue
            if rsu_cols is None:
                rsu_cols = self.rsu_xy[:, 0].tolist(), self.rsu_xy[:, 1].tolist(), self.rsu_h.tolist()
            rsu_x, rsu_y, rsu_h = rsu_cols
            starts = message_start_rows(b)
            msg_rows[s] = np.array(starts, dtype=np.int64)
            snd = b.sender.tolist()
            ri = [rsu_index[snd[r]] for r in starts]
            m = len(ri)
            links.add(span, m, [rsu_x[i] for i in ri], [rsu_y[i] for i in ri], [rsu_h[i] for i in ri],
                      [ego_x] * m, [ego_y] * m, [hv] * m)
        # RSU -> RSU (SPaT relay)
        rr_pairs = _NO_PAIRS
        if self.spat_relay and len(self.sites) > 1 and msg_rows[SPAT_STREAM].size:
            b = steps[SPAT_STREAM].batch
            src = np.array([rsu_index[int(k)] for k in b.sender[msg_rows[SPAT_STREAM]]], dtype=np.int64)
            m_grid, d_grid = np.meshgrid(np.arange(src.size), np.arange(len(self.sites)), indexing="ij")
            m_idx, dst = m_grid.ravel(), d_grid.ravel()
            keep = dst != src[m_idx]
            rr_pairs = np.stack([m_idx[keep], dst[keep]], axis=1)
            tx, rx = self.rsu_xy[src[rr_pairs[:, 0]]], self.rsu_xy[rr_pairs[:, 1]]
            links.add("spat_rsu", rr_pairs.shape[0], tx[:, 0], tx[:, 1], self.rsu_h[src[rr_pairs[:, 0]]], rx[:, 0],
                      rx[:, 1], self.rsu_h[rr_pairs[:, 1]])
        # EEBL carriers -> relay candidates (V2V rebroadcast)
        eb = steps[EEBL_STREAM].batch
        ev_pairs = _NO_PAIRS
        if self.eebl_relay and len(eb):
            equipped = live_equipped(snap)
            candidates = np.nonzero(equipped)[0]
            candidates = candidates[candidates != ego_i]
            if candidates.size:
                pos_of = {k: i for i, k in enumerate(self._veh_keys.tolist())}
                carrier = np.array([pos_of.get(k, -1) for k in eb.sender.tolist()], dtype=np.int64)
                xy = np.asarray(snap.xy_m, dtype=np.float64)
                x, y = np.ascontiguousarray(xy[:, 0]), np.ascontiguousarray(xy[:, 1])
                ev_pairs = relay_pairs(carrier, candidates.astype(np.int64, copy=False), x, y,
                                       float(self.params.range_m))
                if ev_pairs.shape[0]:
                    m = ev_pairs.shape[0]
                    tx, rx = carrier[ev_pairs[:, 0]], ev_pairs[:, 1]
                    links.add("eebl_relay", m, x[tx], y[tx], filled(m, hv), x[rx], y[rx], filled(m, hv))
        if self.backhaul_to is not None and msg_rows[SPAT_STREAM].size:
            self._backhaul(steps[SPAT_STREAM], msg_rows[SPAT_STREAM])
        if links.n == 0:
            return None
        pending = PendingLinks(links, steps, bsm, msg_rows, rr_pairs, ev_pairs)
        if self.params.draws_links:
            pending.draws = self._channel_draws(pending)
        return pending

    def _links(self, pending: PendingLinks) -> None:
        """One channel evaluation for the step's links, then :meth:`_finish_links`."""
        t0 = time.perf_counter()
        [(prob, lat)] = evaluate_pending([pending], self.buildings, self.params)
        self.stats.channel_s += time.perf_counter() - t0
        self._finish_links(pending, prob, lat)

    def _finish_links(self, pending: PendingLinks, prob: np.ndarray, lat: np.ndarray) -> None:
        """One Bernoulli draw per link (its own counter-based uniform, :meth:`_link_uniforms`), then queue the
        survivors."""
        n = pending.n
        ok = self._link_uniforms(pending) < prob
        self.stats.links += n
        steps, bsm, msg_rows, rr_pairs, ev_pairs = (pending.steps, pending.bsm, pending.msg_rows, pending.rr_pairs,
                                                    pending.ev_pairs)
        spans = pending.links.spans
        self._queue_ego(steps, spans, ok, lat, bsm, msg_rows)
        if "spat_rsu" in spans:
            sl = spans["spat_rsu"]
            self._queue_rsu(steps[SPAT_STREAM], msg_rows[SPAT_STREAM], rr_pairs, ok[sl], lat[sl])
        if "eebl_relay" in spans:
            sl = spans["eebl_relay"]
            st = steps[EEBL_STREAM]
            r = ev_pairs[:, 0]
            good = ok[sl] & st.keep[r]
            rx = st.batch.tx_time_s[r] + lat[sl] + st.extra_delay_s[r]
            self.inbox_relay.push(EEBL_STREAM, self._veh_keys[ev_pairs[good, 1]], st.batch.take(r[good]), rx[good])

    def _link_uniforms(self, pending: PendingLinks) -> np.ndarray:
        """The uniform of every link of the step, in link order, each keyed by (stream, sender, message,
        receiver) (:class:`~.messages.LinkDraws`): a BSM (its EEBL records ride on it) and each SPaT/MAP message
        to the ego, a SPaT message to another RSU, an EEBL record to a relay candidate; one kernel call."""
        return self.link_draws.uniform_spans(pending.n, self._link_identities(pending))

    def _link_identities(self, pending: PendingLinks) -> list[tuple[slice, Stream, np.ndarray, np.ndarray, np.ndarray]]:
        """What each link carries, span by span in link order: ``(span, stream, sender id hashes, sender-local message
        indices, receiver id hashes)``."""
        out = []
        spans, steps, hashes = pending.links.spans, pending.steps, self.senders.hashes
        sl = spans.get("bsm")
        if sl is not None:
            b = pending.bsm
            out.append((sl, BSM_STREAM, hashes(b.sender), b.msg_id, self._ego_hash(len(b))))
        for s, span in RSU_EGO_SPANS:
            sl = spans.get(span)
            if sl is not None:
                b, rows = steps[s].batch, pending.msg_rows[s]
                out.append((sl, s, hashes(b.sender[rows]), b.msg_id[rows], self._ego_hash(rows.size)))
        sl = spans.get("spat_rsu")
        if sl is not None:
            b, rows = steps[SPAT_STREAM].batch, pending.msg_rows[SPAT_STREAM][pending.rr_pairs[:, 0]]
            out.append((sl, SPAT_STREAM, hashes(b.sender[rows]), b.msg_id[rows],
                        hashes(self.rsu_keys[pending.rr_pairs[:, 1]])))
        sl = spans.get("eebl_relay")
        if sl is not None:
            b, rows = steps[EEBL_STREAM].batch, pending.ev_pairs[:, 0]
            out.append((sl, EEBL_STREAM, hashes(b.sender[rows]), b.msg_id[rows],
                        hashes(self._veh_keys[pending.ev_pairs[:, 1]])))
        return out

    def _channel_draws(self, pending: PendingLinks) -> np.ndarray:
        """The draws of every link of the step under a TR 37.885 channel (``channel.channel_draws``: keyed by the
        pair of ends and where the link lies, never by the message), in link order."""
        sender = np.empty(pending.n, np.uint64)
        receiver = np.empty(pending.n, np.uint64)
        for sl, _stream, sender_hash, _msg, receiver_hash in self._link_identities(pending):
            sender[sl], receiver[sl] = sender_hash, receiver_hash
        cols = [_column([seg[j] for seg in pending.links.segments]) for j in (0, 1, 3, 4)]
        return channel_draws(self.shadowing_base, sender, receiver, *cols)

    def _ego_hash(self, n: int) -> np.ndarray:
        """The ego's id hash, ``n`` times (a link's receiver)."""
        return np.full(n, self.ego_hash, dtype=np.uint64)

    def _backhaul(self, st: StepBatch, starts: np.ndarray) -> None:
        """RSU -> RSU over the wired backhaul (``v2x.backhaul``): every SPaT message of an RSU to the RSUs
        joined to it, after the backhaul's latency, each lost with its loss probability (own substream:
        the radio draws do not move). Not the radio: no range, no blockage."""
        assert self.backhaul_to is not None
        if self.faults.spoofers:  # a forged roadside unit is on no wire: only the real RSUs' SPaT travels it
            starts = starts[np.isin(st.batch.sender[starts], self.rsu_keys)]
        src = [self.rsu_index[int(k)] for k in st.batch.sender[starts].tolist()]
        pairs = np.array([(m, d) for m, s in enumerate(src) for d in self.backhaul_to[s]], np.int64).reshape(-1, 2)
        if not pairs.shape[0]:
            return
        m = pairs.shape[0]
        if self.backhaul_loss > 0.0:
            rows = starts[pairs[:, 0]]
            ok = self.backhaul_draws.uniform(SPAT_STREAM, self.senders.hashes(st.batch.sender[rows]),
                                             st.batch.msg_id[rows],
                                             self.senders.hashes(self.rsu_keys[pairs[:, 1]])) >= self.backhaul_loss
        else:
            ok = np.ones(m, bool)
        self._queue_rsu(st, starts, pairs, ok, filled(m, self.backhaul_latency_s))


__all__ = ["LinkEvaluator", "PendingLinks", "evaluate_pending"]
