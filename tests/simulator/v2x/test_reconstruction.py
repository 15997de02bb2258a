"""Per-receiver reconstruction: newest-wins, dead reckoning, AoI, timeouts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lastv2x.core.catalogue import Stream
from services.simulator.info import PHASE_GREEN, PHASE_RED
from services.simulator.v2x.messages import SpatBatch, make_bsms
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
