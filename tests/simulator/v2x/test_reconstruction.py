"""Per-receiver reconstruction: newest-wins, dead reckoning, AoI, timeouts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lastv2x.core.catalogue import Stream
from services.simulator.info import PHASE_GREEN, PHASE_RED
from services.simulator.v2x.messages import NO_KEY, MapBatch, SpatBatch, make_bsms
from services.simulator.v2x.reconstruction import TRACK_TIMEOUT_S, Receiver, freshness_budget_s


def bsm(t, x, v=10.0, a=0.0, sender=1, msg=0):
    return make_bsms(np.array([sender]), np.array([msg]), t, np.zeros(1), np.array([[x, 0.0]]), np.array([v]),
                     np.zeros(1), np.array([a]), np.zeros(1, bool), np.zeros(1, bool))


def spat(t, phase, end, group=0, hop=0):
    one = lambda v, dt=np.float64: np.array([v], dtype=dt)  # noqa: E731
    return SpatBatch(sender=one(9, np.int64), msg_id=one(int(t * 10), np.int64), msg_count=one(0, np.int64),
                     origin=one(9, np.int64), group=one(group, np.int64), phase=one(phase, np.int64),
                     min_end_time_s=one(end), max_end_time_s=one(end), green_start_time_s=one(end + 30.0),
                     tx_time_s=one(t), timestamp_s=one(t), hop_count=one(hop, np.int64))


def test_budgets_follow_the_catalogue_and_the_verifier():
    assert freshness_budget_s("FCW", Stream.BSM) == 0.5
    assert freshness_budget_s("RLVW", Stream.SPAT) == 1.0
    assert freshness_budget_s("RLVW", Stream.MAP) == 10.0


def test_countdown_is_dead_reckoned_from_min_end_time_and_aoi_marks_staleness():
    r = Receiver("RLVW")
    r.ingest_spat(spat(1.0, PHASE_GREEN, 5.0), np.array([1.01]))
    v = r.signals(3.0)
    assert v.countdown_s[0] == pytest.approx(2.0) and v.aoi_s[0] == pytest.approx(2.0) and not v.valid[0]
    v = r.signals(1.5)
    assert v.valid[0] and v.time_to_green_s[0] == pytest.approx(33.5)
    assert r.signals(9.0).countdown_s[0] == 0.0  # never negative


def test_older_spat_never_replaces_newer_and_direct_beats_relayed():
    r = Receiver("RLVW")
    r.ingest_spat(spat(2.0, PHASE_RED, 9.0), np.array([2.01]))
    r.ingest_spat(spat(1.0, PHASE_GREEN, 2.0), np.array([2.5]))  # delayed, older
    assert r.signals(2.6).phase[0] == PHASE_RED
    r.ingest_spat(spat(2.0, PHASE_GREEN, 9.0, hop=1), np.array([2.7]))  # same stamp, relayed
    assert r.signals(2.8).hop_count[0] == 0 and r.signals(2.8).phase[0] == PHASE_RED
    assert r.peaks.max(Stream.SPAT) == pytest.approx(0.0)  # no newer row replaced a held one yet


def test_track_dead_reckoning_constant_acceleration_never_reverses():
    r = Receiver("FCW")
    r.ingest_bsm(bsm(0.0, 100.0, v=10.0, a=-5.0), np.array([0.01]))
    tv = r.tracks(1.0)
    assert tv.x_m[0] == pytest.approx(100.0 + 10.0 - 2.5) and tv.speed_mps[0] == pytest.approx(5.0)
    assert r.tracks(1.2).aoi_s[0] == pytest.approx(1.2) and not r.tracks(1.2).valid[0]
    # 4 s of -5 m/s^2 from 10 m/s would reverse: the track stops after 2 s, 10 m on
    assert r.tracks(4.0).x_m[0] == pytest.approx(110.0) and r.tracks(4.0).speed_mps[0] == 0.0


def test_track_dropped_after_the_timeout_without_reception():
    r = Receiver("FCW")
    r.ingest_bsm(bsm(0.0, 0.0), np.array([0.01]))
    r.expire(0.01 + TRACK_TIMEOUT_S)
    assert r.tracks(1.0).vehicle.size == 1
    r.expire(0.02 + TRACK_TIMEOUT_S)
    assert r.tracks(2.0).vehicle.size == 0
    r.ingest_bsm(bsm(3.0, 30.0, msg=1), np.array([3.01]))
    assert r.tracks(3.1).vehicle.size == 1 and r.peaks.max(Stream.BSM) == 0.0  # a new track, no peak


def test_receiver_ignores_its_own_messages():
    r = Receiver("FCW", self_key=1)
    r.ingest_bsm(bsm(0.0, 0.0, sender=1), np.array([0.01]))
    assert r.tracks(0.1).vehicle.size == 0
    assert math.isinf(r.lane_group(0)[1])


def test_lane_group_follows_every_map_ingest():
    """lane_group keeps its answers between MAP ingests: a newer MAP, a new lane or an older one in between must
    still be seen (or not) as the arrays say."""
    def map_row(t, lane, group):
        one = lambda v, dt=np.float64: np.array([v], dtype=dt)  # noqa: E731
        return MapBatch(sender=one(9, np.int64), msg_id=one(int(t * 10), np.int64), msg_count=one(0, np.int64),
                        lane=one(lane, np.int64), group=one(group, np.int64), stop_x_m=one(1.0), stop_y_m=one(2.0),
                        tx_time_s=one(t), timestamp_s=one(t))
    r = Receiver("RLVW")
    assert r.lane_group(0) == (NO_KEY, math.inf) and r.lane_group(-1) == (NO_KEY, math.inf)
    r.ingest_map(map_row(1.0, 0, 3), np.array([1.01]))
    assert r.lane_group(0) == (3, 1.0) and r.lane_group(1) == (NO_KEY, math.inf)
    r.ingest_map(map_row(2.0, 0, 4), np.array([2.01]))  # newer: replaces
    assert r.lane_group(0) == (4, 2.0)
    r.ingest_map(map_row(1.5, 0, 5), np.array([2.5]))  # older: kept out
    assert r.lane_group(0) == (4, 2.0)
    r.ingest_map(map_row(3.0, 1, 6), np.array([3.01]))  # a new lane
    assert r.lane_group(1) == (6, 3.0) and r.lane_group(0) == (4, 2.0)


# ------------------------------------------------------------- tracks: Python rows == the numpy arrays they replaced
class _NumpyTracks:
    """The track state as numpy arrays by vehicle key (the implementation before the Python rows), as the oracle."""

    def __init__(self, self_key: int) -> None:
        from services.simulator.v2x.reconstruction import AoiPeaks
        self.self_key, self.peaks = self_key, AoiPeaks()
        self.has, self.brake = np.zeros(0, bool), np.zeros(0, bool)
        self.f = {n: np.zeros(0) for n in ("x", "y", "v", "h", "a", "ts", "rx")}
        self.i = {n: np.zeros(0, np.int64) for n in ("cnt", "flags")}
        self.floor = math.inf

    def ingest_bsm(self, b, rx):
        from services.simulator.v2x.reconstruction import _grow, _newest_per_key, _where
        if len(b) == 0:
            return
        if self.self_key in b.sender.tolist():
            mine = b.sender != self.self_key
            b, rx = b.take(mine), rx[mine]
            if len(b) == 0:
                return
        idx = _newest_per_key(b.sender, b.timestamp_s, rx)
        v = b.sender[idx]
        n = max(v.tolist()) + 1
        if n > self.has.shape[0]:
            self.has, self.brake = _grow(self.has, n, False), _grow(self.brake, n, False)
            for k in self.f:
                self.f[k] = _grow(self.f[k], n, -math.inf if k in ("ts", "rx") else 0.0)
            for k in self.i:
                self.i[k] = _grow(self.i[k], n, 0)
        self.f["rx"][v] = np.maximum(self.f["rx"][v], rx[idx])
        self.floor = min(self.floor, min(rx.tolist()))
        sel, vs = _where(idx, v, b.timestamp_s[idx] > self.f["ts"][v])
        had = self.has[vs]
        self.peaks.add(Stream.BSM, rx[sel][had], vs[had], rx[sel][had] - self.f["ts"][vs][had])
        self.has[v] = True
        for name, col in (("x", b.x_m), ("y", b.y_m), ("v", b.speed_mps), ("h", b.heading_rad), ("a", b.accel_mps2),
                          ("ts", b.timestamp_s)):
            self.f[name][vs] = col[sel]
        self.i["cnt"][vs], self.i["flags"][vs], self.brake[vs] = b.msg_count[sel], b.event_flags[sel], b.brake_flag[sel]

    def expire(self, t_s, timeout_s):
        if t_s - self.floor > timeout_s:
            gone = self.has & (t_s - self.f["rx"] > timeout_s)
            self.has[gone] = False
            self.f["ts"][gone] = -math.inf
            self.f["rx"][gone] = -math.inf
            held_rx = self.f["rx"][self.has]
            self.floor = float(held_rx.min()) if held_rx.size else math.inf

    def rows(self):
        k = np.nonzero(self.has)[0]
        h = self.f["h"][k]
        v0, a = self.f["v"][k].tolist(), self.f["a"][k].tolist()
        t_stop = [v / max(-acc, 1e-9) if acc < 0.0 else math.inf for v, acc in zip(v0, a, strict=True)]
        return list(zip(k.tolist(), self.f["ts"][k].tolist(), v0, a, h.tolist(), t_stop, np.cos(h).tolist(),
                        np.sin(h).tolist(), self.f["x"][k].tolist(), self.f["y"][k].tolist(), self.brake[k].tolist(),
                        self.i["flags"][k].tolist(), self.i["cnt"][k].tolist(), strict=True))


_odd_floats = st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, 1.5])
_times = st.one_of(st.floats(0.0, 5.0), _odd_floats)
_bsm_rows = st.lists(st.tuples(st.integers(0, 5), _times, _times, st.floats(-10.0, 10.0) | _odd_floats,
                               st.floats(-4.0, 4.0) | _odd_floats, st.booleans(), st.integers(0, 200)),
                     min_size=0, max_size=4)
_track_ops = st.lists(st.one_of(_bsm_rows, st.floats(0.0, 9.0) | _odd_floats), max_size=12)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # cos / sin of an infinite heading
@settings(max_examples=300, deadline=None)
@given(_track_ops)
def test_track_rows_match_the_numpy_arrays_bit_for_bit(ops):
    """Ingest (sender, timestamp, rx, speed/x, accel/heading, brake, msg) rows and expire at times (NaN, inf and
    signed zeros included): the held rows, AoI peaks and expiry floor equal those of the numpy arrays."""
    from services.simulator.v2x.messages import BsmBatch
    r, ref = Receiver("FCW", self_key=5), _NumpyTracks(5)
    for op in ops:
        if isinstance(op, float):
            r.expire(op)
            ref.expire(op, r.track_timeout_s)
        else:
            col = lambda j, dt=np.float64, op=op: np.array([row[j] for row in op], dtype=dt)  # noqa: E731
            snd, msg = col(0, np.int64), col(6, np.int64)
            b = BsmBatch(sender=snd, msg_id=msg, msg_count=msg % 128, tx_time_s=col(1), timestamp_s=col(1),
                         x_m=col(3), y_m=col(4), speed_mps=col(3), heading_rad=col(4), accel_mps2=col(4),
                         brake_flag=col(5, bool), event_flags=msg % 3)
            r.ingest_bsm(b, col(2))
            ref.ingest_bsm(b, col(2))
        assert repr(r._held_tracks()) == repr(ref.rows())
        assert repr(r.peaks.peaks) == repr(ref.peaks.peaks)
        assert repr(r._v_rx_floor) == repr(ref.floor)


class _NumpySignals:
    """The signal state as numpy arrays by group key (the implementation before the Python rows), as the oracle."""

    def __init__(self) -> None:
        from services.simulator.v2x.reconstruction import AoiPeaks
        self.peaks = AoiPeaks()
        self.has = np.zeros(0, bool)
        self.f = {n: np.zeros(0) for n in ("min_end", "max_end", "green", "ts", "rx")}
        self.i = {n: np.zeros(0, np.int64) for n in ("phase", "hop", "origin")}

    def ingest_spat(self, b, rx):
        from services.simulator.v2x.reconstruction import _grow, _newest_per_key, _where
        if len(b) == 0:
            return
        idx = _newest_per_key(b.group, b.timestamp_s, rx)
        g = b.group[idx]
        n = max(g.tolist()) + 1
        if n > self.has.shape[0]:
            self.has = _grow(self.has, n, False)
            for k in self.f:
                self.f[k] = _grow(self.f[k], n, -math.inf if k in ("ts", "rx") else 0.0)
            for k in self.i:
                self.i[k] = _grow(self.i[k], n, 0)
        ts, hop, held_ts = b.timestamp_s[idx], b.hop_count[idx], self.f["ts"][g]
        sel, gs = _where(idx, g, (ts > held_ts) | ((ts == held_ts) & (hop < self.i["hop"][g])))
        had = self.has[gs]
        self.peaks.add(Stream.SPAT, rx[sel][had], gs[had], rx[sel][had] - self.f["ts"][gs][had])
        self.has[gs] = True
        for name, col in (("min_end", b.min_end_time_s), ("max_end", b.max_end_time_s),
                          ("green", b.green_start_time_s), ("ts", b.timestamp_s), ("rx", rx)):
            self.f[name][gs] = col[sel]
        for name, col in (("phase", b.phase), ("hop", b.hop_count), ("origin", b.origin)):
            self.i[name][gs] = col[sel]

    def arrays(self):
        g = np.nonzero(self.has)[0].astype(np.int64)
        return (g, self.i["phase"][g], self.f["min_end"][g], self.f["max_end"][g], self.f["green"][g],
                self.f["ts"][g], self.i["hop"][g], self.i["origin"][g])


_spat_rows = st.lists(st.tuples(st.integers(0, 4), _times, _times, st.integers(0, 2), st.integers(0, 3),
                                st.floats(0.0, 60.0) | _odd_floats), min_size=0, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(_spat_rows, max_size=10))
def test_signal_rows_match_the_numpy_arrays_bit_for_bit(batches):
    """Ingest (group, timestamp, rx, hop, phase, end time) rows (NaN, inf and signed zeros included): the held
    rows and arrays and the AoI peaks equal those of the numpy arrays."""
    r, ref = Receiver("RLVW"), _NumpySignals()
    for op in batches:
        col = lambda j, dt=np.float64, op=op: np.array([row[j] for row in op], dtype=dt)  # noqa: E731
        grp = col(0, np.int64)
        b = SpatBatch(sender=grp + 7, msg_id=grp, msg_count=grp, origin=grp + 9, group=grp, phase=col(4, np.int64),
                      min_end_time_s=col(5), max_end_time_s=col(5) + 1.0, green_start_time_s=col(2),
                      tx_time_s=col(1), timestamp_s=col(1), hop_count=col(3, np.int64))
        r.ingest_spat(b, col(2))
        ref.ingest_spat(b, col(2))
        got, want = r._held_signal_arrays(), ref.arrays()
        assert [(a.dtype, repr(a.tolist())) for a in got] == [(a.dtype, repr(a.tolist())) for a in want]
        assert repr(r._held_signals()) == repr(list(zip(*(want[i].tolist() for i in (0, 1, 2, 4, 5)), strict=True)))
        assert repr(r.peaks.peaks) == repr(ref.peaks.peaks)
