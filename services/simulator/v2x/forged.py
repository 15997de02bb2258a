"""Forged senders (``ghost_sender``, ``spoofed_rsu``; issue 37 item 3): messages from a transmitter the scene does
not have. Unlike the operators of :mod:`.faults`, which rewrite what real senders sent, these make messages of their
own: the transmit step adds them beside the real ones, and the channel carries them from where the forger stands.
A forged sender keeps a schedule as a real one does (its slot phase and bus delays are the BUS_JITTER draws of its
id, its message ids its own count), so nothing depends on a batch's order. :class:`.faults.FaultEngine` builds the
forgers from the faults and asks here for what they send."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lastv2x.core.catalogue import Stream
from lastv2x.core.spec import Phase

from .messages import (
    BSM_PERIOD_S,
    EVENT_HARD_BRAKING,
    MAP_PERIOD_S,
    MSG_COUNT_MOD,
    NO_KEY,
    SPAT_PERIOD_S,
    BsmBatch,
    MapBatch,
    SpatBatch,
    due_mask,
)

#: the deceleration a forged hard brake claims (a ghost_sender on EEBL), m/s^2: the spec's default hard brake
GHOST_BRAKE_MPS2 = 6.0
#: the event id of a ghost's forged hard brake (one event per ghost, as a real vehicle's first hard-braking onset)
GHOST_EVENT_ID = 1


class GhostVehicle:
    """Where a ghost_sender's forged vehicle is: on the ego's route, ``ahead_m`` ahead of the ego's centre when
    its window opens (negative: behind), or, given ``start_s_m`` (``ghost_route: cross``), at that arc length of
    the crossing route (``magnitude`` m before its conflict point), moving along its route at ``speed_mps`` (0:
    stopped in the lane); past
    either end of the route it goes on along the end segment. Its BSMs have the catalogue's period and their
    own slot phase and bus delays (the BUS_JITTER draws, keyed by the ghost's id, as any sender's). A ghost on
    EEBL (``hard_braking``) flags every BSM with the hard-braking event at :data:`GHOST_BRAKE_MPS2`, so the
    transmit step adds its hop-0 EEBL record, as a real vehicle's."""

    def __init__(self, route_xy_m: Any, ahead_m: float, speed_mps: float, key: int, sender_hash: int,
                 hard_braking: bool = False, start_s_m: float | None = None):
        pts = np.asarray(route_xy_m, dtype=np.float64).reshape(-1, 2)
        step = np.sqrt((np.diff(pts, axis=0) ** 2).sum(axis=1))
        pts = np.vstack([pts[:1], pts[1:][step > 1e-9]])  # no zero-length segment
        if len(pts) < 2:
            pts = np.vstack([pts, pts[-1:] + (1.0, 0.0)])
        seg = np.diff(pts, axis=0)
        length = np.sqrt((seg ** 2).sum(axis=1))
        self._pts, self._seg, self._len = pts, seg, length
        self._s = np.concatenate([[0.0], np.cumsum(length)])
        self.ahead_m, self.speed_mps = float(ahead_m), float(speed_mps)
        self.key, self.sender_hash = key, sender_hash
        self.hard_braking = hard_braking  # a ghost_sender on EEBL: every BSM announces a hard brake
        self.count = 0  # the ghost's messages so far (msg_id)
        self.s0_m: float | None = None  # its arc length when the window opened
        self.start_s_m = start_s_m  # a fixed arc length to start from (the crossing route's), else relative to the ego
        self.t0_s = 0.0

    @classmethod
    def for_fault(cls, fault: Any, ctx: Any, key: int, sender_hash: int, stream: Stream) -> GhostVehicle:
        """The forged vehicle of a ghost_sender ``fault`` transmitting as ``key`` (``ctx``: the V2X source's
        ``FaultContext``, whose routes it drives: the crossing one for ``ghost_route: cross``)."""
        cross = str(getattr(fault, "ghost_route", "ego")) == "cross"
        route = ctx.cross_route_xy_m if cross else ctx.ego_route_xy_m
        if route is None:
            raise ValueError(f"fault {fault.name!r}: a ghost_sender needs the {'crossing' if cross else 'ego'} route")
        mag = float(fault.magnitude or 0.0)
        return cls(route, mag, float(getattr(fault, "ghost_speed_mps", None) or 0.0), key, sender_hash,
                   hard_braking=stream is Stream.EEBL,
                   start_s_m=float(ctx.cross_conflict_s_m or 0.0) - mag if cross else None)

    def place(self, t_s: float, ego_s_m: float) -> None:
        if self.s0_m is None:
            self.s0_m, self.t0_s = (ego_s_m + self.ahead_m if self.start_s_m is None else self.start_s_m), t_s

    def pose(self, t_s: float) -> tuple[float, float, float]:
        """(x, y, heading) at ``t_s`` (after :meth:`place`)."""
        assert self.s0_m is not None
        s = self.s0_m + self.speed_mps * (t_s - self.t0_s)
        j = min(max(int(np.searchsorted(self._s, s, side="right")) - 1, 0), len(self._len) - 1)
        u = (s - self._s[j]) / self._len[j]  # < 0 before the start, > 1 past the end: along the end segment
        dx, dy = self._seg[j]
        x0, y0 = self._pts[j]
        return float(x0 + u * dx), float(y0 + u * dy), math.atan2(float(dy), float(dx))


@dataclass
class SpoofedRsu:
    """A spoofed_rsu's forged roadside unit: its sender key and id hash (slot phase, bus delays, link draws: all
    keyed by its id), the signal group it lies about and the phase code it shows, the real RSU of that junction
    (``origin_key``: the intersection its SPaT claims to describe; ``site``: the site index it transmits beside,
    set by the V2X source) and its message count. On MAP (``stream``) it sends the junction's MAP rows of the ego's
    approach lanes (``lanes``, ``stops_xy_m``: set by the V2X source from that site's real MAP) tied to
    ``group_key``."""

    key: int
    sender_hash: Any
    group_key: int
    phase_code: int
    origin_key: int = NO_KEY
    site: int = -1
    count: int = 0
    stream: Stream = Stream.SPAT
    lanes: Any = None  # MAP: the ego's approach lane keys the forged MAP describes
    stops_xy_m: Any = None  # MAP: their stop bars (L, 2), as the real MAP gives them

    @classmethod
    def for_fault(cls, fault: Any, ctx: Any, key: int, sender_hash: int, group_key: int, stream: Stream) -> SpoofedRsu:
        """The forged roadside unit of a spoofed_rsu ``fault`` transmitting as ``key``, lying about ``group_key``
        with the fault's phase (default green; ``ctx``: the V2X source's ``FaultContext``)."""
        if group_key == NO_KEY:
            raise ValueError(f"fault {fault.name!r}: a spoofed_rsu needs a signal group to lie about")
        return cls(key, sender_hash, group_key, ctx.phases.code(fault.target_phase or Phase.GREEN), stream=stream)

    @property
    def lead_s(self) -> float:
        """Each forged message's timestamp is its sample time plus one period of its stream: the receiver keeps the
        newest-stamped SPaT per group (MAP per lane), and a real one sampled up to a period later is stamped no
        later, so it never replaces the forged one (a tie keeps the held message)."""
        return MAP_PERIOD_S if self.stream is Stream.MAP else SPAT_PERIOD_S


def forged_slot(sender_hash: int, stream: Stream, period_s: float, t_prev_s: float | None, t_s: float, jitter: Any,
                 count: int) -> float | None:
    """A forged sender's schedule (``ghost_sender``, ``spoofed_rsu``), as a real sender's: the bus delay [s] of its
    message number ``count`` when its slot (the BUS_JITTER phase of its id) falls in ``(t_prev_s, t_s]``; None when
    it has no slot then. The first step counts as one period after ``t_s - period_s``."""
    hashes = np.asarray([sender_hash], dtype=np.uint64)
    phase = jitter.phase_s(hashes, stream, period_s)
    prev = t_s - period_s if t_prev_s is None else t_prev_s
    if not bool(due_mask(prev, t_s, phase, period_s)[0]):
        return None
    return float(jitter.bus_delay_s(hashes, stream, np.asarray([count], np.int64))[0])


def ghost_bsms(ghosts: Sequence[Any], t_prev_s: float | None, t_s: float, ego_s_m: float, jitter: Any
               ) -> BsmBatch | None:
    """The BSMs the ghosts (``ghost_sender``) whose window is open send in ``(t_prev_s, t_s]``, sampled at
    ``t_s`` as every sender's are (None: none due). Each ghost is placed, the first step its window is open,
    ``magnitude`` m ahead of the ego's arc length ``ego_s_m``; its slot phase and bus delays are the
    BUS_JITTER draws of its id (``jitter``: ``messages.BusJitter``), its message ids its own count."""
    rows: list[tuple[int, int, float, float, float, float, float, bool]] = []
    for af in ghosts:
        g = af.ghost
        assert g is not None
        if not af.window.active(t_s):
            continue
        g.place(t_s, ego_s_m)
        delay = forged_slot(g.sender_hash, Stream.BSM, BSM_PERIOD_S, t_prev_s, t_s, jitter, g.count)
        if delay is None:
            continue
        msg_id = g.count
        g.count += 1
        x, y, h = g.pose(t_s)
        rows.append((g.key, msg_id, t_s + delay, x, y, h, g.speed_mps, g.hard_braking))
    if not rows:
        return None
    n = len(rows)
    col = list(zip(*rows, strict=True))
    msg = np.asarray(col[1], np.int64)
    braking = np.asarray(col[7], bool)
    return BsmBatch(sender=np.asarray(col[0], np.int64), msg_id=msg, msg_count=msg % MSG_COUNT_MOD,
                    tx_time_s=np.asarray(col[2], np.float64), timestamp_s=np.full(n, t_s),
                    x_m=np.asarray(col[3], np.float64), y_m=np.asarray(col[4], np.float64),
                    speed_mps=np.asarray(col[6], np.float64), heading_rad=np.asarray(col[5], np.float64),
                    accel_mps2=np.where(braking, -GHOST_BRAKE_MPS2, 0.0), brake_flag=braking,
                    event_flags=np.where(braking, EVENT_HARD_BRAKING, 0).astype(np.int64))


def _due_forgers(spoofers: Sequence[Any], stream: Stream, period_s: float, t_prev_s: float | None, t_s: float,
                 jitter: Any) -> Iterator[tuple[Any, SpoofedRsu, int, float]]:
    """(fault, forger, message id, bus delay) of each forged roadside unit on ``stream`` whose window is open and
    whose slot falls in ``(t_prev_s, t_s]``; each one's message count moves on."""
    for af in spoofers:
        sp = af.spoof
        assert sp is not None
        if sp.stream is not stream or not af.window.active(t_s):
            continue
        delay = forged_slot(sp.sender_hash, stream, period_s, t_prev_s, t_s, jitter, sp.count)
        if delay is None:
            continue
        sp.count += 1
        yield af, sp, sp.count - 1, delay


def spoof_spat(spoofers: Sequence[Any], ctx: Any, t_prev_s: float | None, t_s: float, jitter: Any) -> SpatBatch | None:
    """The SPaTs the forged roadside units (``spoofed_rsu``) whose window is open send in ``(t_prev_s, t_s]``,
    sampled at ``t_s`` (None: none due): one row, the target group showing the fault's phase held to the
    window's end (its min/max end time; a forged green's next green onset is now), stamped
    :attr:`SpoofedRsu.lead_s` ahead. Slot phase and bus delays are the BUS_JITTER draws of the forger's id."""
    rows: list[tuple[int, int, int, int, int, float, float, float, float]] = []
    for af, sp, msg_id, delay in _due_forgers(spoofers, Stream.SPAT, SPAT_PERIOD_S, t_prev_s, t_s, jitter):
        end = af.window.end_s if af.window.end_s is not None and math.isfinite(af.window.end_s) \
            else float(ctx.duration_s)
        ts = t_s + sp.lead_s
        end = max(end, ts)
        green = ts if sp.phase_code == ctx.phases.green else end
        rows.append((sp.key, msg_id, sp.origin_key, sp.group_key, sp.phase_code, end, green, t_s + delay, ts))
    if not rows:
        return None
    n = len(rows)
    col = list(zip(*rows, strict=True))
    msg = np.asarray(col[1], np.int64)
    return SpatBatch(sender=np.asarray(col[0], np.int64), msg_id=msg, msg_count=msg % MSG_COUNT_MOD,
                     origin=np.asarray(col[2], np.int64), group=np.asarray(col[3], np.int64),
                     phase=np.asarray(col[4], np.int64), min_end_time_s=np.asarray(col[5], np.float64),
                     max_end_time_s=np.asarray(col[5], np.float64),
                     green_start_time_s=np.asarray(col[6], np.float64), tx_time_s=np.asarray(col[7], np.float64),
                     timestamp_s=np.asarray(col[8], np.float64), hop_count=np.zeros(n, np.int64))


def spoof_map(spoofers: Sequence[Any], t_prev_s: float | None, t_s: float, jitter: Any) -> MapBatch | None:
    """The MAPs the forged roadside units on MAP (``spoofed_rsu``) whose window is open send in ``(t_prev_s, t_s]``
    (None: none due): the ego's approach lanes with their true stop bars, each tied to the forger's group, stamped
    :attr:`SpoofedRsu.lead_s` ahead. Slot phase and bus delays are the BUS_JITTER draws of the forger's id."""
    parts: list[MapBatch] = []
    for _af, sp, msg_id, delay in _due_forgers(spoofers, Stream.MAP, MAP_PERIOD_S, t_prev_s, t_s, jitter):
        n = len(sp.lanes)
        parts.append(MapBatch(sender=np.full(n, sp.key, np.int64), msg_id=np.full(n, msg_id, np.int64),
                              msg_count=np.full(n, msg_id % MSG_COUNT_MOD, np.int64),
                              lane=np.asarray(sp.lanes, np.int64), group=np.full(n, sp.group_key, np.int64),
                              stop_x_m=np.asarray(sp.stops_xy_m, np.float64)[:, 0].copy(),
                              stop_y_m=np.asarray(sp.stops_xy_m, np.float64)[:, 1].copy(),
                              tx_time_s=np.full(n, t_s + delay), timestamp_s=np.full(n, t_s + sp.lead_s)))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else MapBatch.concat(parts)


__all__ = ["GHOST_BRAKE_MPS2", "GHOST_EVENT_ID", "GhostVehicle", "SpoofedRsu", "forged_slot", "ghost_bsms", "spoof_map", "spoof_spat"]
