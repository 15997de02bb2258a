"""Per-receiver reconstruction of the world from delivered messages, with AoI.

A :class:`Receiver` consumes delivered records in reception order and keeps:

* **signals** -- per signal group the state of the newest SPaT row (largest
  timestamp; an older or equal timestamp never replaces a newer one, so
  out-of-order, delayed or back-dated messages do not roll the belief back):
  phase, ``min_end_time``/``max_end_time`` (absolute), the countdown dead-reckoned
  as ``max(0, min_end_time - t)``, the AoI ``t - timestamp`` of the SPaT row in use,
  the hop count (0 = direct, k = k RSU relays) and ``valid = AoI <= budget``;
* **MAP** -- the newest lane -> signal group association and stop bars, with AoI;
* **tracks** -- per remote vehicle the newest BSM, dead-reckoned to ``t`` with
  constant acceleration along the reported heading (never reversing: a braking
  vehicle stops), AoI, ``valid = AoI <= budget``; a track is dropped when nothing
  was received from the vehicle for ``track_timeout_s`` (receiver clock);
* **events** -- EEBL hard-braking events per (origin, event), newest record, the
  smallest hop count seen, dropped ``event_timeout_s`` after the last reception.

It also records every AoI peak: just before a newer record replaces the one in use
the age reached ``rx_time - timestamp_in_use`` -- for a burst of ``n`` dropped
messages of period ``T`` and latency ``L`` that is exactly ``(n + 1) T + L`` (the
verifier's closed form).

Budgets (``freshness_budget_s``): the application's budget for BSM / SPaT / EEBL,
and ten MAP periods for MAP (MAP changes rarely), as in the verifier.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from lastv2x.core.catalogue import APPLICATIONS, STREAMS, Application, Stream

from .messages import (
    BSM_STREAM,
    EEBL_STREAM,
    MAP_STREAM,
    NO_KEY,
    SPAT_STREAM,
    BoolArray,
    BsmBatch,
    EeblBatch,
    FloatArray,
    IntArray,
    MapBatch,
    SpatBatch,
)

TRACK_TIMEOUT_S = 1.5  # < STALE_TRACK_TIMEOUT_S: a healthy receiver never shows a ghost track
EVENT_TIMEOUT_S = 1.0  # an EEBL event not heard of for this long is over


def freshness_budget_s(app: Application | str | None, stream: Stream) -> float:
    """AoI above which the receiver marks its information of ``stream`` stale."""
    if stream is Stream.MAP:
        return 10.0 * STREAMS[Stream.MAP].period_s
    if app is None:
        return 1.0
    return APPLICATIONS[Application(app)].freshness_budget_s


def _grow(arr: np.ndarray, n: int, fill: object) -> np.ndarray:
    if arr.shape[0] >= n:
        return arr
    out = np.full((max(n, 2 * arr.shape[0], 8),) + arr.shape[1:], fill, dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


def _frozen(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """``arrays`` made read-only: the views hand out the same arrays while the state does not change."""
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _where(idx: IntArray, keys: IntArray, mask: BoolArray) -> tuple[IntArray, IntArray]:
    """``idx[mask], keys[mask]``; the arrays themselves when every row is selected (the common case)."""
    if all(mask.tolist()):
        return idx, keys
    return idx[mask], keys[mask]


def _not_negative(x: float) -> float:
    """``np.maximum(0.0, x)`` of one float (a NaN passes through, as there; ``max(0.0, x)`` would drop it)."""
    return x if x > 0.0 or x != x else 0.0


def _newest_per_key(keys: IntArray, timestamp: FloatArray, rx: FloatArray) -> IntArray:
    """Index of the row with the largest (timestamp, rx time) per key, in key order."""
    rows = _newest_rows(keys.tolist(), keys, timestamp, rx)
    return np.arange(len(rows)) if isinstance(rows, range) else rows


def _newest_rows(k: list[int], keys: IntArray, timestamp: FloatArray, rx: FloatArray) -> range | IntArray:
    """:func:`_newest_per_key` (``k``: ``keys`` as a list); ``range`` when every row is the newest of its key."""
    # one row per key, in key order: the usual batch (most often a single row, decided without the generator)
    if len(k) < 2 or all(a < b for a, b in zip(k, k[1:], strict=False)):
        return range(len(k))
    order = np.lexsort((rx, timestamp, keys))
    sorted_keys = keys[order]
    last = np.ones(sorted_keys.shape[0], dtype=bool)
    last[:-1] = sorted_keys[1:] != sorted_keys[:-1]
    return order[last]


@dataclass
class AoiPeaks:
    """AoI peaks seen just before each replacement, per stream (for tests and evidence)."""

    peaks: dict[Stream, list[tuple[float, int, float]]] = field(default_factory=dict)  # (rx time, key, peak)
    record: bool = True

    def add(self, stream: Stream, rx: FloatArray, keys: IntArray, peak: FloatArray) -> None:
        self.add_rows(stream, list(zip(rx.tolist(), keys.tolist(), peak.tolist(), strict=True)))

    def add_rows(self, stream: Stream, rows: list[tuple[float, int, float]]) -> None:
        """:meth:`add` of (rx time, key, peak) rows."""
        if not self.record or not rows:
            return
        self.peaks.setdefault(stream, []).extend(rows)

    def max(self, stream: Stream, key: int | None = None) -> float:
        vals = [p for _, k, p in self.peaks.get(stream, []) if key is None or k == key]
        return max(vals) if vals else 0.0


@dataclass(frozen=True, eq=False)
class SignalView:
    group: IntArray
    phase: IntArray
    min_end_time_s: FloatArray
    max_end_time_s: FloatArray
    green_start_time_s: FloatArray
    countdown_s: FloatArray
    time_to_green_s: FloatArray
    aoi_s: FloatArray
    timestamp_s: FloatArray
    valid: BoolArray
    hop_count: IntArray
    origin: IntArray


@dataclass(frozen=True, eq=False)
class TrackView:
    vehicle: IntArray
    x_m: FloatArray
    y_m: FloatArray
    speed_mps: FloatArray
    heading_rad: FloatArray
    accel_mps2: FloatArray
    brake_flag: BoolArray
    event_flags: IntArray
    aoi_s: FloatArray
    valid: BoolArray
    msg_count: IntArray


@dataclass(frozen=True, eq=False)
class EventView:
    origin: IntArray
    event_id: IntArray
    x_m: FloatArray
    y_m: FloatArray
    heading_rad: FloatArray
    speed_mps: FloatArray
    decel_mps2: FloatArray
    hop_count: IntArray
    aoi_s: FloatArray
    valid: BoolArray


@dataclass(frozen=True, eq=False)
class MapView:
    lane: IntArray
    group: IntArray
    stop_x_m: FloatArray
    stop_y_m: FloatArray
    aoi_s: FloatArray
    valid: BoolArray


def _empty_view(cls: type, **ints: bool) -> object:
    """A view with no rows (read-only: every receiver hands out the same one)."""
    names = [f.name for f in dataclasses.fields(cls)]
    return cls(*_frozen(*(np.zeros(0, np.int64 if ints.get(n) else bool if n in ("valid", "brake_flag") else np.float64)
                           for n in names)))


# a held group / track as Python rows (Receiver._held_signals / _held_tracks say the fields)
_HeldSignal = tuple[int, float, float, float, float, int, int, float]  # phase, min end, max end, green, ts, hop, origin, rx
_SignalRow = tuple[int, int, float, float, float]
_TrackRow = tuple[int, float, float, float, float, float, float, float, float, float, bool, int, int]

# a held track's fields besides (vehicle, timestamp): (speed, accel, heading, time to standstill, cos and sin of the
# heading, x, y, brake flag, event flags, msg count); before any BSM replaced it: all zero (heading 0: cos 1)
_TrackData = tuple[float, float, float, float, float, float, float, float, bool, int, int]
_NO_TRACK_DATA: _TrackData = (0.0, 0.0, 0.0, math.inf, 1.0, 0.0, 0.0, 0.0, False, 0, 0)


class _Track:
    """One remote vehicle as the receiver knows it (kept after the track is dropped, as numpy rows were)."""

    __slots__ = ("data", "held", "rx_s", "ts_s")

    def __init__(self) -> None:
        self.ts_s = -math.inf  # timestamp of the BSM in use (-inf: none, or dropped)
        self.rx_s = -math.inf  # last reception of any BSM of the vehicle (-inf: dropped)
        self.held = False
        self.data = _NO_TRACK_DATA


def _track_data(v0: float, a: float, h: float, cos_h: float, sin_h: float, x: float, y: float, brake: bool,
                flags: int, cnt: int) -> _TrackData:
    # constant acceleration, clamped at standstill (a braking vehicle does not reverse)
    t_stop = v0 / max(-a, 1e-9) if a < 0.0 else math.inf
    return v0, a, h, t_stop, cos_h, sin_h, x, y, brake, flags, cnt


def _np_maximum(a: float, b: float) -> float:
    """``np.maximum(a, b)`` of two floats (a NaN wins; of equal values, b: -0.0 vs 0.0 as numpy)."""
    return a if a > b or a != a else b


_NO_TRACKS: TrackView = _empty_view(TrackView, vehicle=True, event_flags=True, msg_count=True)  # type: ignore[assignment]
_NO_EVENTS: EventView = _empty_view(EventView, origin=True, event_id=True, hop_count=True)  # type: ignore[assignment]


class Receiver:
    """World belief of one receiver (the ego, or a relay vehicle / RSU)."""

    def __init__(self, app: Application | str | None = None, *, track_timeout_s: float = TRACK_TIMEOUT_S,
                 event_timeout_s: float = EVENT_TIMEOUT_S, record_peaks: bool = True,
                 self_key: int = NO_KEY):
        self.app = app
        self.budget = {s: freshness_budget_s(app, s) for s in Stream}
        self.track_timeout_s = float(track_timeout_s)
        self.event_timeout_s = float(event_timeout_s)
        self.self_key = int(self_key)
        self.peaks = AoiPeaks(record=record_peaks)
        # signals: group key -> the SPaT row in use (a Python row, as the tracks)
        self._signals: dict[int, _HeldSignal] = {}
        # tracks, by vehicle key (Python rows: a step ingests a BSM or two, for which numpy's per-call cost is
        # most of the work)
        self._tracks: dict[int, _Track] = {}
        # a lower bound of the held tracks' last reception times: expire has nothing to drop before
        # t - floor exceeds the timeout (inf: no track held)
        self._v_rx_floor = math.inf
        # map, by lane key
        self._l_has = np.zeros(0, bool)
        self._l = {n: np.zeros(0) for n in ("sx", "sy", "ts", "rx")}
        self._l_group = np.zeros(0, np.int64)
        self._lane_rows: dict[int, tuple[int, float]] = {}  # lane_group's answers, until the next MAP ingest
        # events: (origin, event_id) -> row
        self._events: dict[tuple[int, int], dict[str, float]] = {}
        # the views' parts that depend on the held state only (not on t), gathered once per change of
        # that state: None = stale (every ingest / expire that changes a part clears its entry)
        self._signal_rows: list[_SignalRow] | None = None
        self._signal_arrays: tuple[np.ndarray, ...] | None = None
        self._track_rows: list[_TrackRow] | None = None
        self._event_rows: tuple[np.ndarray, ...] | None = None

    # ------------------------------------------------------------------ ingest
    def _add_peaks(self, stream: Stream, has: BoolArray, held_ts: FloatArray, rx: FloatArray, keys: IntArray) -> None:
        """Record the AoI peaks of the rows about to replace the held rows ``keys`` (received at ``rx``)."""
        if not self.peaks.record:
            return
        had = has[keys]
        if not all(had.tolist()):
            rx, keys = rx[had], keys[had]
        self.peaks.add(stream, rx, keys, rx - held_ts[keys])

    def ingest_spat(self, b: SpatBatch, rx: FloatArray) -> None:
        if len(b) == 0:
            return
        g = b.group.tolist()
        rows = _newest_rows(g, b.group, b.timestamp_s, rx)
        rx_l, ts_l, hop_l = rx.tolist(), b.timestamp_s.tolist(), b.hop_count.tolist()
        signals = self._signals
        new: list[int] = []  # the rows that replace the held one: newer, or as new and over fewer hops
        peaks: list[tuple[float, int, float]] = []
        for i in rows.tolist() if isinstance(rows, np.ndarray) else rows:
            held = signals.get(g[i])
            held_ts, held_hop = (-math.inf, 0) if held is None else (held[4], held[5])
            if ts_l[i] > held_ts or (ts_l[i] == held_ts and hop_l[i] < held_hop):
                if held is not None:  # the age the replaced SPaT reached
                    peaks.append((rx_l[i], g[i], rx_l[i] - held_ts))
                new.append(i)
        self._signal_rows = self._signal_arrays = None
        self.peaks.add_rows(SPAT_STREAM, peaks)
        if new:
            # the rows by one zip of the columns (not a generator per row: its per-item resumes cost more)
            held_rows = list(zip(b.phase.tolist(), b.min_end_time_s.tolist(), b.max_end_time_s.tolist(),
                                 b.green_start_time_s.tolist(), ts_l, hop_l, b.origin.tolist(), rx_l, strict=True))
            for i in new:
                signals[g[i]] = held_rows[i]

    def ingest_bsm(self, b: BsmBatch, rx: FloatArray) -> None:
        if len(b) == 0:
            return
        k = b.sender.tolist()
        if self.self_key in k:  # its own BSMs (a relay hearing itself) are no track
            mine = b.sender != self.self_key
            b, rx = b.take(mine), rx[mine]
            if len(b) == 0:
                return
            k = b.sender.tolist()
        rows = _newest_rows(k, b.sender, b.timestamp_s, rx)
        self._track_rows = None
        rx_l, ts_l = rx.tolist(), b.timestamp_s.tolist()
        self._v_rx_floor = min(self._v_rx_floor, min(rx_l))
        tracks = self._tracks
        new: list[tuple[int, _Track]] = []  # (row, track) of the rows newer than the held BSM
        peaks: list[tuple[float, int, float]] = []
        for i in rows.tolist() if isinstance(rows, np.ndarray) else rows:
            key = k[i]
            tr = tracks.get(key)
            if tr is None:
                tr = tracks[key] = _Track()
            r = rx_l[i]
            tr.rx_s = _np_maximum(tr.rx_s, r)  # any reception keeps the track alive, only newer data replaces it
            if ts_l[i] > tr.ts_s:
                if tr.held:  # the age the replaced BSM reached
                    peaks.append((r, key, r - tr.ts_s))
                tr.ts_s = ts_l[i]
                new.append((i, tr))
            tr.held = True
        self.peaks.add_rows(BSM_STREAM, peaks)
        if new:
            cos_h, sin_h = np.cos(b.heading_rad).tolist(), np.sin(b.heading_rad).tolist()
            rows_l = list(zip(b.speed_mps.tolist(), b.accel_mps2.tolist(), b.heading_rad.tolist(), cos_h, sin_h,
                              b.x_m.tolist(), b.y_m.tolist(), b.brake_flag.tolist(), b.event_flags.tolist(),
                              b.msg_count.tolist(), strict=True))  # (one zip, as in ingest_spat)
            for i, tr in new:
                tr.data = _track_data(*rows_l[i])

    def ingest_map(self, b: MapBatch, rx: FloatArray) -> None:
        if len(b) == 0:
            return
        self._lane_rows = {}
        idx = _newest_per_key(b.lane, b.timestamp_s, rx)
        lane = b.lane[idx]
        n = max(lane.tolist()) + 1
        if n > self._l_has.shape[0]:
            self._l_has = _grow(self._l_has, n, False)
            self._l_group = _grow(self._l_group, n, NO_KEY)
            for k in self._l:
                self._l[k] = _grow(self._l[k], n, -math.inf if k in ("ts", "rx") else 0.0)
        sel, ls = _where(idx, lane, b.timestamp_s[idx] > self._l["ts"][lane])
        self._add_peaks(MAP_STREAM, self._l_has, self._l["ts"], rx[sel], ls)
        self._l_has[ls] = True
        self._l_group[ls] = b.group[sel]
        self._l["sx"][ls] = b.stop_x_m[sel]
        self._l["sy"][ls] = b.stop_y_m[sel]
        self._l["ts"][ls] = b.timestamp_s[sel]
        self._l["rx"][ls] = rx[sel]

    def ingest_eebl(self, b: EeblBatch, rx: FloatArray) -> None:
        if len(b):
            self._event_rows = None
        for i in range(len(b)):  # events are rare: a handful of rows per step at most
            o = int(b.origin[i])
            if o == self.self_key:
                continue
            key = (o, int(b.event_id[i]))
            row = self._events.get(key)
            ts = float(b.timestamp_s[i])
            hop = int(b.hop_count[i])
            if row is None:
                row = {"ts": -math.inf, "hop": float(hop), "rx": -math.inf}
                self._events[key] = row
            row["rx"] = max(row["rx"], float(rx[i]))
            row["hop"] = min(row["hop"], float(hop))
            if ts > row["ts"]:
                row.update(ts=ts, x=float(b.x_m[i]), y=float(b.y_m[i]), h=float(b.heading_rad[i]),
                           v=float(b.speed_mps[i]), d=float(b.decel_mps2[i]))

    # ------------------------------------------------------------------ views
    def expire(self, t_s: float) -> None:
        """Drop tracks and events not heard of within their timeouts."""
        # t - rx does not grow with rx (rounding is monotonic): nothing is due while the floor is not
        if t_s - self._v_rx_floor > self.track_timeout_s:
            floor, nan = math.inf, False
            for tr in self._tracks.values():
                if not tr.held:
                    continue
                if t_s - tr.rx_s > self.track_timeout_s:
                    self._track_rows = None
                    tr.held, tr.ts_s, tr.rx_s = False, -math.inf, -math.inf
                elif tr.rx_s < floor:
                    floor = tr.rx_s
                elif tr.rx_s != tr.rx_s:
                    nan = True
            self._v_rx_floor = math.nan if nan else floor  # (the held tracks' min, NaN-propagating as numpy's)
        for key in [k for k, r in self._events.items() if t_s - r["rx"] > self.event_timeout_s]:
            del self._events[key]
            self._event_rows = None

    def _held_signals(self) -> list[_SignalRow]:
        """The held groups as Python rows (group, phase, min end, green start, timestamp), in group order: the
        parts of the belief that do not depend on t, gathered once per change of the held state."""
        rows = self._signal_rows
        if rows is None:
            rows = self._signal_rows = [(g, sig[0], sig[1], sig[3], sig[4]) for g, sig in sorted(self._signals.items())]
        return rows

    def _held_signal_arrays(self) -> tuple[np.ndarray, ...]:
        """The held groups as read-only arrays (group, phase, min end, max end, green start, timestamp, hop,
        origin), made once per change of the held state."""
        arrays = self._signal_arrays
        if arrays is None:
            held = sorted(self._signals.items())
            cols = list(zip(*(sig for _, sig in held), strict=True)) or [()] * 8
            arrays = self._signal_arrays = _frozen(
                np.array([g for g, _ in held], np.int64), np.array(cols[0], np.int64), np.array(cols[1], np.float64),
                np.array(cols[2], np.float64), np.array(cols[3], np.float64), np.array(cols[4], np.float64),
                np.array(cols[5], np.int64), np.array(cols[6], np.int64))
        return arrays

    def signal_beliefs(self, t_s: float) -> list[tuple[int, int, float, float, float, bool]]:
        """(group key, phase, countdown_s, time_to_green_s, aoi_s, valid) of every held group at ``t_s``; the
        countdowns are dead-reckoned from the absolute end times and never negative. Plain Python: a
        receiver holds a handful of groups, for which numpy's per-call cost is most of the work."""
        budget = self.budget[SPAT_STREAM]
        out = []
        for g, phase, min_end, green, ts in self._held_signals():
            aoi = t_s - ts
            out.append((g, phase, _not_negative(min_end - t_s), _not_negative(green - t_s), aoi, aoi <= budget))
        return out

    def signals(self, t_s: float) -> SignalView:
        g, phase, mn, mx, green, ts, hop, origin = self._held_signal_arrays()
        beliefs = self.signal_beliefs(t_s)
        countdown, to_green, aoi = (np.array([b[i] for b in beliefs], np.float64) for i in (2, 3, 4))
        return SignalView(g, phase, mn, mx, green, countdown, to_green, aoi, ts,
                          np.array([b[5] for b in beliefs], bool), hop, origin)

    def _held_tracks(self) -> list[_TrackRow]:
        """The held tracks as Python rows (vehicle, timestamp, then :data:`_TrackData`), in vehicle order,
        gathered once per change of the held state."""
        rows = self._track_rows
        if rows is None:
            rows = self._track_rows = [(k, tr.ts_s, *tr.data) for k, tr in sorted(self._tracks.items()) if tr.held]
        return rows

    def track_beliefs(self, t_s: float) -> list[tuple[int, float, float, float, float, float, float, bool, bool, int, int]]:
        """(vehicle key, x, y, speed, heading, accel, aoi_s, valid, brake flag, event flags, msg count) of every
        held track, dead-reckoned to ``t_s`` (plain Python, as :meth:`signal_beliefs`)."""
        budget = self.budget[BSM_STREAM]
        out = []
        for k, ts, v0, a, h, t_stop, cos_h, sin_h, x, y, brake, flags, cnt in self._held_tracks():
            tau = min(_not_negative(t_s - ts), t_stop)
            s = v0 * tau + 0.5 * a * tau * tau
            aoi = t_s - ts
            out.append((k, x + s * cos_h, y + s * sin_h, _not_negative(v0 + a * tau), h, a, aoi, aoi <= budget, brake,
                        flags, cnt))
        return out

    def tracks(self, t_s: float) -> TrackView:
        beliefs = self.track_beliefs(t_s)
        if not beliefs:
            return _NO_TRACKS
        k, x, y, v, h, a, aoi, valid, brake, flags, cnt = (np.array(c) for c in zip(*beliefs, strict=True))
        return TrackView(k, x, y, v, h, a, brake, flags, aoi, valid, cnt)

    def events(self, t_s: float) -> EventView:
        rows = self._event_rows
        if rows is None:
            held = [(k, r) for k, r in self._events.items() if math.isfinite(r["ts"])]
            col = {n: np.array([r[n] for _, r in held], dtype=np.float64) for n in ("x", "y", "h", "v", "d", "ts")}
            rows = self._event_rows = _frozen(
                np.array([k[0] for k, _ in held], np.int64), np.array([k[1] for k, _ in held], np.int64),
                col["x"], col["y"], col["h"], col["v"], col["d"],
                np.array([r["hop"] for _, r in held], dtype=np.float64).astype(np.int64), col["ts"])
        o, e, x, y, h, v, d, hop, ts = rows
        if not o.shape[0]:
            return _NO_EVENTS
        aoi = t_s - ts
        return EventView(o, e, x, y, h, v, d, hop, aoi, aoi <= self.budget[EEBL_STREAM])

    def map(self, t_s: float) -> MapView:
        lane = np.nonzero(self._l_has)[0].astype(np.int64)
        aoi = t_s - self._l["ts"][lane]
        return MapView(lane, self._l_group[lane].copy(), self._l["sx"][lane].copy(), self._l["sy"][lane].copy(),
                       aoi, aoi <= self.budget[MAP_STREAM])

    def lane_group(self, lane_key: int) -> tuple[int, float]:
        """(signal group key the MAP in use gives the lane, MAP timestamp); NO_KEY if unknown. Read once per
        lane and MAP ingest (the ego asks every step; MAP changes at 1 Hz at most)."""
        row = self._lane_rows.get(lane_key)
        if row is None:
            if lane_key < 0 or lane_key >= self._l_has.shape[0] or not self._l_has[lane_key]:
                row = (NO_KEY, math.inf)
            else:
                row = (int(self._l_group[lane_key]), float(self._l["ts"][lane_key]))
            self._lane_rows[lane_key] = row
        return row

    def held_events(self) -> list[tuple[int, int, dict[str, float]]]:
        """(origin, event_id, row) of held events (for V2V rebroadcast)."""
        return [(k[0], k[1], r) for k, r in self._events.items() if math.isfinite(r["ts"])]
