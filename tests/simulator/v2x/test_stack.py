"""The V2X information source end to end on a scripted world: rates, relays, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lastv2x.core.catalogue import Application, Stream
from lastv2x.core.program import (
    Crossing,
    ProgramVehicle,
    Route,
    RouteSegment,
    Rsu,
    ScenarioProgram,
    SignalGroupPlan,
    VehicleRole,
)
from lastv2x.core.rng import counter_uniform, equipage, stable_hash64
from lastv2x.core.spec import V2X, parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.info import InformationSource, MonitoredSource
from services.simulator.v2x.messages import (
    MSG_COUNT_MOD,
    BusJitter,
    KeyTable,
    due_mask,
    quiet_until_s,
)
from services.simulator.v2x.stack import V2XConfig, V2XInformationSource
from tests.simulator.v2x.world import MiniWorld, rlvw_spec, run


def straight(length: float, crossings=()) -> Route:
    return Route(points_xy_m=((0.0, 0.0), (length, 0.0)),
                 segments=(RouteSegment(id="road", start_s_m=0.0, length_m=length),), crossings=tuple(crossings))


def vehicle(vid: str, role: VehicleRole, s: float, v: float, route: Route, equipped: bool = True) -> ProgramVehicle:
    return ProgramVehicle(id=vid, role=role, route=route, start_s_m=s, initial_speed_mps=v,
                          desired_speed_mps=max(v, 0.1), equipped=equipped)


def corridor_program(relay: bool, duration: float = 3.0) -> ScenarioProgram:
    xs = (300.0, 480.0)
    crossings = [Crossing(junction_id=f"j{k}", approach_lane_id=f"j{k}.in", stop_bar_s_m=x,
                          stop_bar_xy_m=(x, 0.0), signal_group_id=f"j{k}.sg0") for k, x in enumerate(xs)]
    route = straight(700.0, crossings)
    groups = tuple(SignalGroupPlan(id=f"j{k}.sg0", junction_id=f"j{k}", cycle_s=60.0, green_s=27.0, amber_s=3.0,
                                   offset_s=10.0 * k) for k in range(2))
    rsus = tuple(Rsu(id=f"rsu{k}", xy_m=(x + 5.0, 6.0), junction_id=f"j{k}") for k, x in enumerate(xs))
    v2x = V2X(spat_relay=relay, channel={"range_m": 200.0})
    return ScenarioProgram(application=Application.GLOSA, duration_s=duration, map_name="test_corridor",
                           ego=vehicle("ego", VehicleRole.EGO, 150.0, 14.0, route), signal_groups=groups,
                           rsus=rsus, v2x=v2x)


def eebl_program(relay: bool, relay_equipped: bool = True) -> ScenarioProgram:
    route = straight(800.0)
    return ScenarioProgram(
        application=Application.EEBL, duration_s=4.0, map_name="test_road",
        ego=vehicle("ego", VehicleRole.EGO, 10.0, 10.0, route),
        agents=(vehicle("cv1", VehicleRole.RELAY, 130.0, 10.0, route, relay_equipped),
                vehicle("lead", VehicleRole.LEAD, 260.0, 10.0, route)),
        v2x=V2X(eebl_rebroadcast=relay, channel={"range_m": 150.0}))


def lead_brakes(vid: str, t: float, v: float) -> float:
    return v - 6.0 * 0.05 if vid == "lead" and t >= 1.0 else v


def test_implements_the_seam_protocols():
    src = V2XInformationSource()
    assert isinstance(src, InformationSource) and isinstance(src, MonitoredSource)


# ── message rates and counters ──────────────────────────────────────────────────
def test_rates_bsm_spat_10hz_map_1hz():
    prog = program_from_spec_on_straight_roads(parse_spec(rlvw_spec(
        t_dec=5.0, duration_s=20.0, agents=[{"id": "lead", "role": "lead", "gap_m": 30.0}])))
    src = V2XInformationSource()
    counts: list[int] = []

    def every(snap, info):
        tv = src.ego.tracks(snap.t_s)
        counts.extend(tv.msg_count.tolist())

    run(prog, src, 4, until_s=19.99, every=every)  # 400 steps of 0.05 s
    assert src.stats.tx[Stream.BSM] == 200  # one equipped sender (the lead), 10 Hz over 20 s
    assert src.stats.tx[Stream.SPAT] == 200
    assert src.stats.tx[Stream.MAP] == 20
    # msgCnt: +1 per message, wrapping at 128
    distinct = [c for k, c in enumerate(counts) if k == 0 or c != counts[k - 1]]
    assert max(distinct) == MSG_COUNT_MOD - 1 and distinct[distinct.index(MSG_COUNT_MOD - 1) + 1] == 0
    assert all((b - a) % MSG_COUNT_MOD == 1 for a, b in zip(distinct, distinct[1:], strict=False))


def test_due_mask_is_periodic_per_sender_phase():
    phase = np.array([0.0, 0.03, 0.07])
    ticks = np.zeros(3, int)
    t_prev = -0.05
    for k in range(200):
        t = k * 0.05
        ticks += due_mask(t_prev, t, phase, 0.1)
        t_prev = t
    assert list(ticks) == [100, 100, 100]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=1, max_size=40),
       st.sampled_from([0.1, 1.0]), st.sampled_from([0.05, 0.1, 0.02]), st.integers(0, 20_000))
def test_quiet_until_skips_only_steps_where_nobody_is_due(phase_frac, period, dt, k0):
    """The transmitters skip their due check before quiet_until_s: that must never skip a due slot, and
    (not to skip nothing) the quiet time lies within one period ahead."""
    phase = np.array(phase_frac) * period
    t_check = k0 * dt
    quiet = quiet_until_s(t_check, phase, period)
    assert t_check < quiet + 1e-6 <= t_check + period + 1e-6
    t_prev = t_check
    for k in range(k0 + 1, k0 + 1 + int(round(period / dt)) + 2):
        t = k * dt
        if t < quiet:
            assert not due_mask(t_prev, t, phase, period).any()
        t_prev = t


def test_quiet_until_is_minus_inf_for_a_non_finite_phase():
    assert quiet_until_s(1.0, np.array([0.01, np.inf]), 0.1) == -np.inf
    assert quiet_until_s(1.0, np.full(40, np.nan), 0.1) == -np.inf
    assert quiet_until_s(1.0, np.zeros(0), 0.1) == np.inf


def test_bus_jitter_is_per_sender_and_order_independent():
    keys = KeyTable(["a", "b", "c"])
    j = BusJitter.from_seed(7)
    h = keys.hashes(np.array([0, 1, 2]))
    p1 = j.phase_s(h, Stream.BSM, 0.1)
    p2 = j.phase_s(h[::-1], Stream.BSM, 0.1)[::-1]
    assert np.array_equal(p1, p2) and len(set(p1.tolist())) == 3
    assert np.all((0 <= p1) & (p1 < 0.1))
    assert not np.array_equal(p1, BusJitter.from_seed(8).phase_s(h, Stream.BSM, 0.1))
    d = j.bus_delay_s(h, Stream.BSM, np.array([5, 5, 5]))
    assert np.all((0 <= d) & (d < j.bus_delay_max_s))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31), st.lists(st.tuples(st.integers(0, 2**63), st.integers(0, 5000)), min_size=1,
                                        max_size=40))
def test_bus_delays_from_blocks_equal_the_per_message_hash(seed, msgs):
    """A few senders' delays come from per-sender blocks (cached): the same bits as hashing each counter."""
    j = BusJitter.from_seed(seed)
    h = np.array([m[0] for m in msgs], np.uint64)
    idx = np.array([m[1] for m in msgs], np.int64)
    for _ in range(2):  # the second call reads the blocks the first one kept
        got = j.bus_delay_s(h, Stream.BSM, idx)
        want = j.bus_delay_max_s * counter_uniform(j.base ^ stable_hash64(f"stream:{Stream.BSM}"), h, idx + 1)
        assert got.dtype == np.float64 and np.array_equal(got, want)


def test_equipage_by_penetration_is_seeded_and_per_vehicle():
    ids = [f"bg{i}" for i in range(2000)]
    eq = equipage(3, ids, 0.3, always=["ego"])
    share = sum(eq.values()) / len(ids)
    assert abs(share - 0.3) < 0.04
    assert equipage(3, ids[::-1], 0.3) == eq  # order does not matter
    sub = equipage(3, ids[:10], 0.3)
    assert all(sub[v] == eq[v] for v in sub)  # adding vehicles never flips another's draw
    assert equipage(4, ids, 0.3) != eq
    assert equipage(3, ["ego"], 0.0, always=["ego"]) == {"ego": True}


def test_unequipped_vehicles_send_nothing():
    prog = program_from_spec_on_straight_roads(parse_spec({
        "application": "FCW", "duration_s": 3.0,
        "agents": [{"id": "lead", "role": "lead", "gap_m": 30.0, "equipped": False}]}))
    src = V2XInformationSource()
    steps = run(prog, src, 1)
    assert src.stats.tx[Stream.BSM] == 0 and all(not i.tracks for _, i in steps)
    assert any(e.kind == "track_missing" for e in src.summary().episodes)


# ── healthy reconstruction ──────────────────────────────────────────────────────
def test_healthy_belief_matches_the_truth():
    prog = program_from_spec_on_straight_roads(parse_spec(rlvw_spec(
        t_dec=8.0, duration_s=12.0, agents=[{"id": "lead", "role": "lead", "gap_m": 30.0}], map={"busy": True})))
    src = V2XInformationSource()
    steps = run(prog, src, 9)
    for snap, info in steps[40:]:
        if info.ego_group_id is None:
            continue
        g = snap.group_index(info.ego_group_id)
        sig = info.ego_signal()
        assert info.ego_group_id == snap.ego_group_id
        assert sig.phase == snap.true_phase[g] and sig.valid
        assert sig.time_to_change_s == pytest.approx(snap.time_to_change_s[g], abs=1e-6)
        for vid, tr in info.tracks.items():
            j = snap.index_of(vid)
            assert np.hypot(*(np.array(tr.xy_m) - snap.xy_m[j])) < 0.2
            assert 0 < tr.aoi_s <= 0.1 + 0.05 + 0.005 + 0.003
    s = src.summary()
    assert not s.divergence_alarm and s.failure_class is None


def test_determinism_same_seed_same_run_other_seed_other_timing():
    prog = program_from_spec_on_straight_roads(parse_spec(rlvw_spec(
        t_dec=6.0, duration_s=8.0, agents=[{"id": "lead", "role": "lead", "gap_m": 30.0}], map={"busy": True},
        faults=[{"name": "p", "operator": "drop", "stream": "BSM", "probability": 0.3}])))

    def trace(seed):
        src = V2XInformationSource()
        out = []
        for _, info in run(prog, src, seed):
            sig = info.ego_signal()
            out.append((None if sig is None else (sig.phase, sig.aoi_s),
                        tuple(sorted((k, t.aoi_s, t.xy_m) for k, t in info.tracks.items()))))
        return out, src.stats.to_dict()

    a = trace(5)
    assert trace(5) == a
    assert trace(6)[0] != a[0]


# ── relays ──────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("relay", [False, True])
def test_rsu_relay_brings_spat_of_the_junction_ahead(relay):
    src = V2XInformationSource()
    steps = run(corridor_program(relay), src, 1)
    last = steps[-1][1]
    assert "j0.sg0" in last.signals
    assert ("j1.sg0" in last.signals) is relay
    if relay:
        snap = steps[-1][0]
        view = src.ego.signals(snap.t_s)
        hop = dict(zip(src.groups.names(view.group.tolist()), view.hop_count.tolist(), strict=True))
        assert hop == {"j0.sg0": 0, "j1.sg0": 1}
        sig = last.signals["j1.sg0"]
        g = snap.group_index("j1.sg0")
        assert sig.phase == snap.true_phase[g]
        assert sig.time_to_change_s == pytest.approx(snap.time_to_change_s[g], abs=1e-6)  # absolute end times


@pytest.mark.parametrize("relay,equipped,expect", [(False, True, False), (True, True, True), (True, False, False)])
def test_eebl_rebroadcast_reaches_the_ego_beyond_range(relay, equipped, expect):
    src = V2XInformationSource()
    steps = run(eebl_program(relay, equipped), src, 2, speed_fn=lead_brakes)
    events = [e for _, i in steps for e in i.eebl_events]
    assert bool(events) is expect
    if expect:
        assert {e.origin_id for e in events} == {"lead"}
        assert all(e.relayed and e.hops == 1 for e in events)
        first = min(i.t_s for _, i in steps if i.eebl_events)
        assert first < 1.0 + 0.4  # the rebroadcast adds about one BSM period per hop
    assert all("lead" not in i.tracks for _, i in steps)  # the lead itself is out of range


def test_own_eebl_reception_is_hop_zero():
    src = V2XInformationSource()
    prog = eebl_program(False)
    prog = prog.model_copy(update={"v2x": V2X(channel={"range_m": 400.0})})
    steps = run(prog, src, 2, speed_fn=lead_brakes)
    events = [e for _, i in steps for e in i.eebl_events]
    assert events and all(not e.relayed and e.hops == 0 for e in events)
    assert events[0].decel_mps2 == pytest.approx(6.0, abs=1e-6)


def test_trace_sink_receives_belief_summaries():
    class Sink:
        def __init__(self):
            self.rows = []

        def publish(self, channel, t_s, message):
            self.rows.append((channel, t_s, message))

    prog = program_from_spec_on_straight_roads(parse_spec(rlvw_spec(t_dec=3.0, duration_s=4.0)))
    src = V2XInformationSource(config=V2XConfig(trace_every_s=1.0))
    sink = Sink()
    src.reset(prog, 0, trace=sink)
    for snap in MiniWorld(prog).run():
        src.observe(snap)
    belief = [t for ch, t, _ in sink.rows if ch == "/v2x/belief"]
    assert [round(t, 6) for t in belief] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert {ch for ch, _, _ in sink.rows} == {"/v2x/belief", "/v2x/tx", "/v2x/rx"}
    tx = [m for ch, _, m in sink.rows if ch == "/v2x/tx"]
    rx = [m for ch, _, m in sink.rows if ch == "/v2x/rx"]
    sent = {(r["stream"], r["sender"], r["msg_id"]) for m in tx for r in m["messages"]}
    got = [(r["stream"], r["sender"], r["msg_id"]) for m in rx for r in m["messages"]]
    assert {s for s, _, _ in sent} >= {"SPAT", "MAP"} and got, "the RSU's SPaT and MAP are sent and received"
    assert set(got) <= sent, "the ego receives only what was transmitted"
    assert all(r["rx_s"] >= r["timestamp_s"] for m in rx for r in m["messages"])


def test_a_maps_sources_share_one_building_set() -> None:
    """The channel's footprints are prepared once per map object, not per source (per paired run)."""
    from services.simulator.maps import load_map
    from services.simulator.v2x.stack import V2XInformationSource, buildings_from_map

    canyon, four_way = load_map("urban_canyon"), load_map("signalized_4way")
    shared = buildings_from_map(canyon)
    assert shared is not None and len(shared) == len(canyon.buildings)
    assert V2XInformationSource(road_map=canyon).buildings is shared
    assert V2XInformationSource(road_map=canyon).buildings is shared
    assert buildings_from_map(four_way) is not shared and buildings_from_map(None) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(0.0, 1.0, exclude_max=True), st.just(math.nan), st.just(math.inf)),
                min_size=0, max_size=40),
       st.sampled_from([0.1, 1.0]), st.floats(0.0, 600.0), st.floats(0.0, 0.2))
def test_the_schedule_kernels_are_one_body_compiled_or_not(phase_frac, period, t_prev, dt):
    """issue 32 stage 2: due_mask and quiet_until_s run one kernel body (services/simulator/kernels/schedule.py)
    for every sender count; compiled it gives its Python's bits, and the arithmetic numpy did before."""
    from services.simulator.kernels import schedule

    phase = np.array(phase_frac, dtype=np.float64) * period
    t_now = t_prev + dt
    due = schedule.due_slots(t_prev, t_now, phase, period)
    with np.errstate(invalid="ignore"):
        assert due.tolist() == (np.floor((t_now - phase) / period + 1e-9)
                                > np.floor((t_prev - phase) / period + 1e-9)).tolist()
    quiet = schedule.quiet_until(t_now, phase, period, 1e-6)
    py_due = getattr(schedule.due_slots, "py_func", schedule.due_slots)(t_prev, t_now, phase, period)
    py_quiet = getattr(schedule.quiet_until, "py_func", schedule.quiet_until)(t_now, phase, period, 1e-6)
    assert py_due.tolist() == due.tolist() and (py_quiet == quiet or (math.isnan(py_quiet) and math.isnan(quiet)))
    if not phase.size:
        assert quiet == math.inf
    elif not np.isfinite(phase).all():
        assert quiet == -math.inf
    else:
        k = np.floor((t_now - phase) / period + 1e-9)
        assert quiet == float(np.min(phase + (k + 1 - 1e-9) * period)) - 1e-6


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-400.0, 400.0), st.floats(-400.0, 400.0)), min_size=1, max_size=12),
       st.lists(st.integers(-1, 11), min_size=0, max_size=6), st.sampled_from([0.0, 50.0, 150.0, 300.0]),
       st.integers(0, 11))
def test_relay_pairs_are_one_body_compiled_or_not(xy, carriers, range_m, ego):
    """issue 32 stage 2: the EEBL rebroadcast's (record, candidate) pairs come from one kernel
    (services/simulator/kernels/links.py) for every count (the vectorized path and its float twin for a few pairs
    are gone): record-major, every equipped row but the ego and the carrier, np.hypot(gap) <= R; compiled it gives
    its Python's pairs."""
    from services.simulator.kernels import links

    n = len(xy)
    x = np.array([p[0] for p in xy], np.float64)
    y = np.array([p[1] for p in xy], np.float64)
    carrier = np.array([c if c < n else -1 for c in carriers], np.int64)
    candidates = np.array([i for i in range(n) if i != ego], np.int64)
    got = links.relay_pairs(carrier, candidates, x, y, range_m)
    want = [(r, int(c)) for r, ci in enumerate(carrier.tolist()) if ci >= 0 for c in candidates
            if c != ci and np.hypot(x[ci] - x[c], y[ci] - y[c]) <= range_m]
    assert [tuple(p) for p in got.tolist()] == want
    py = getattr(links.relay_pairs, "py_func", links.relay_pairs)(carrier, candidates, x, y, range_m)
    assert py.tolist() == got.tolist()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0, exclude_max=True), st.booleans()), min_size=1, max_size=12),
       st.integers(0, 11), st.floats(0.0, 60.0), st.sampled_from([0.0, 0.002]), st.integers(0, 2**62))
def test_bsm_slots_are_the_schedule_the_counters_and_the_bus_delays(rows, ego, t_prev, delay_max, seed):
    """issue 32 stage 2: a step's BSM senders, message numbers and bus delays come from one kernel
    (services/simulator/kernels/transmit.py): the senders due_mask gives (equipped and alive, not the ego), each
    sender's counter advanced once, BusJitter.bus_delay_s's delays; compiled it gives its Python's bits."""
    from services.simulator.kernels import transmit
    from services.simulator.v2x.messages import (
        BSM_PERIOD_S,
        QUIET_GUARD_S,
        BusJitter,
        due_mask,
        quiet_until_s,
    )

    n = len(rows)
    ego = ego % n
    keys = np.arange(n, dtype=np.int64)[::-1].copy()  # sender keys are not the rows
    phase = np.array([r[0] for r in rows]) * BSM_PERIOD_S
    sends = np.array([r[1] for r in rows], bool)
    cand = np.array([i for i in range(n) if i != ego], np.int64)
    hashes = np.array([(k * 0x9E3779B97F4A7C15 + 7) % 2**64 for k in range(n)], np.uint64)
    jitter = BusJitter(seed, delay_max)
    t_now = t_prev + 0.05
    outs = []
    for fn in (transmit.bsm_slots, getattr(transmit.bsm_slots, "py_func", transmit.bsm_slots)):
        count = np.arange(n, dtype=np.int64) * 3
        vi, msg_id, delay, quiet = fn(t_prev, t_now, BSM_PERIOD_S, QUIET_GUARD_S, cand, phase[cand], sends, keys,
                                      count, hashes, jitter.delay_key(Stream.BSM), delay_max)
        outs.append((vi.tolist(), msg_id.tolist(), delay.tolist(), quiet, count.tolist()))
    assert outs[0] == outs[1]
    vi, msg_id, delay, quiet, count = outs[0]
    want = cand[due_mask(t_prev, t_now, phase[cand], BSM_PERIOD_S) & sends[cand]]
    assert vi == want.tolist() and quiet == quiet_until_s(t_now, phase[cand], BSM_PERIOD_S)
    assert msg_id == (keys[want] * 3).tolist()
    assert count == [3 * k + (1 if k in keys[want].tolist() else 0) for k in range(n)]
    assert delay == jitter.bus_delay_s(hashes[keys[want]], Stream.BSM, np.array(msg_id, np.int64)).tolist()


def test_relay_pairs_near_the_subnormals_use_hypot() -> None:
    """A 1e-169 m gap squares to 0: the range test falls back to np.hypot there (found by the property test)."""
    from services.simulator.kernels import links

    x, y = np.zeros(2), np.array([0.0, 2.5816523807925442e-169])
    for fn in (links.relay_pairs, getattr(links.relay_pairs, "py_func", links.relay_pairs)):
        assert fn(np.array([0], np.int64), np.array([1], np.int64), x, y, 0.0).shape == (0, 2)
        assert fn(np.array([0], np.int64), np.array([1], np.int64), x, y, 1e-168).tolist() == [[0, 1]]
