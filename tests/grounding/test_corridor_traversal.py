"""Corridors a test can steer (issue 37 item 2): a spec asks for a traversal (``map.junctions_ahead``,
``map.whole_corridor``) and for how the junctions after the scenario junction are timed
(``signal.coordination``: the same plan, a green wave at a design speed, or seeded random offsets)."""

from __future__ import annotations

import pytest

from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.spec import parse_spec


def _spec(**extra) -> dict:  # type: ignore[no-untyped-def]
    d: dict = {"application": "GLOSA", "seed": 2, "duration_s": 90.0,
               "map": {"town": "corridor", "junction_kind": "corridor"}}
    for key, value in extra.items():
        d[key] = {**d.get(key, {}), **value}
    return d


def _ego_offsets(program) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Junction -> the offset of the group the ego's crossing there belongs to."""
    plans = {g.id: g for g in program.signal_groups}
    return {c.junction_id: plans[c.signal_group_id].offset_s for c in program.ego.route.crossings}


def test_a_whole_corridor_starts_at_its_first_junction(builtin_grounder) -> None:
    plain, whole = [], []
    for seed in range(1, 7):
        plain.append(len(builtin_grounder.ground(parse_spec(_spec() | {"seed": seed, "duration_s": 30.0})).ego.route.crossings))
        program = builtin_grounder.ground(parse_spec(_spec(map={"whole_corridor": True}) | {"seed": seed}))
        assert program.ego.route.crossings[0].junction_id in ("j1", "j5")
        whole.append(len(program.ego.route.crossings))
    assert whole == [5] * 6 and max(plain) < 5  # the built-in corridor: 5 junctions; a 30 s scene crosses fewer


def test_junctions_ahead_is_a_floor_and_an_impossible_count_says_so(builtin_grounder) -> None:
    program = builtin_grounder.ground(parse_spec(_spec(map={"junctions_ahead": 3})))
    assert len(program.ego.route.crossings) >= 4
    with pytest.raises(FailedPrecondition, match="corridor") as info:
        builtin_grounder.ground(parse_spec(_spec(map={"junctions_ahead": 6})))
    # says how many were asked and what the longest road offers
    assert "6 junctions ahead along the road (7 in a row)" in str(info.value)
    assert "nearest feasible: map.junctions_ahead <= 4" in str(info.value)


def test_a_green_wave_starts_each_green_when_a_car_at_the_design_speed_arrives(builtin_grounder) -> None:
    v = 12.0
    program = builtin_grounder.ground(parse_spec(_spec(map={"whole_corridor": True},
                                                       signal={"coordination": "green_wave",
                                                               "progression_speed_mps": v, "offset_s": 7.0})))
    first, *later = program.ego.route.crossings
    offsets = _ego_offsets(program)
    cycle = program.signal_groups[0].cycle_s
    assert offsets[first.junction_id] == 7.0
    for c in later:  # green at t = -offset: d / v later than at the first junction, modulo the cycle
        lag = (offsets[first.junction_id] - offsets[c.junction_id]) % cycle
        assert lag == pytest.approx(((c.stop_bar_s_m - first.stop_bar_s_m) / v) % cycle, abs=1e-5)
    # a cross group keeps its place in its own junction's cycle
    for g in program.signal_groups:
        ego = next(h for h in program.signal_groups if h.junction_id == g.junction_id and h.green_s == 27.0)
        if g.green_s != 27.0:
            assert (ego.offset_s - g.offset_s) % cycle == pytest.approx(32.0)


def test_random_offsets_are_seeded_per_junction(builtin_grounder) -> None:
    def offsets(seed: int) -> dict[str, float]:
        return _ego_offsets(builtin_grounder.ground(parse_spec(_spec(
            map={"whole_corridor": True}, signal={"coordination": "random"}) | {"seed": seed})))

    a, again, other = offsets(2), offsets(2), offsets(3)
    assert a == again and a != other
    later = [v for j, v in a.items() if v != 0.0]
    assert len(set(later)) >= 3  # each junction its own draw
    same = _ego_offsets(builtin_grounder.ground(parse_spec(_spec(map={"whole_corridor": True}))))
    assert set(same.values()) == {0.0}  # the default: one plan everywhere


def test_each_rsu_stands_on_the_side_asked_for_at_the_height_asked_for(builtin_grounder) -> None:
    """Along the whole corridor, each junction's near-side RSU stands short of its far-side one along the ego's
    travel, measured from that junction's stop bar; both at the spec's antenna height; the default keeps the map's
    site height."""
    def ahead_of_bar(side: str) -> list[float]:
        program = builtin_grounder.ground(parse_spec(_spec(map={"whole_corridor": True},
                                                           v2x={"rsu_placement": "chain", "rsu_site": side,
                                                                "rsu_height_m": 8.0})))
        route = program.ego.route
        sign = 1.0 if route.points_xy_m[-1][0] > route.points_xy_m[0][0] else -1.0  # the corridor runs along x
        assert len(program.rsus) == 5 and all(r.height_m == 8.0 for r in program.rsus)
        return [(r.xy_m[0] - c.stop_bar_xy_m[0]) * sign for r, c in zip(program.rsus, route.crossings, strict=True)]

    near, far = ahead_of_bar("near_side"), ahead_of_bar("far_side")
    assert all(n < f for n, f in zip(near, far, strict=True))
    assert max(near) < min(far)  # every near-side site stands short of every far-side one, stop bar by stop bar
    default = builtin_grounder.ground(parse_spec(_spec(map={"whole_corridor": True}, v2x={"rsu_placement": "chain"})))
    assert all(r.height_m != 8.0 for r in default.rsus)
