"""The CARLA backend's decisions (services/simulator/backends/carla_logic.py), without a server:
frames against carla's own Transform maths, light-to-group matching on CARLA Town01's OpenDRIVE
through carla's offline parser, routes followed by the commanded velocities, seeded blueprints."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.errors import FailedPrecondition, InvalidArgument
from lastv2x.core.spec import MapQuery
from services.simulator.backends import carla_logic as logic
from services.simulator.backends.base import VehicleReading
from services.simulator.reference import reference_program, reference_spec

carla = pytest.importorskip("carla", reason="the carla extra is not installed (its offline parser reads Town01)")


# --- settings -------------------------------------------------------------------------------------

def test_settings_default_to_the_sidecar_and_read_the_three_variables() -> None:
    from services.simulator.execute import SimulatorLimits

    assert logic.CarlaSettings.from_env({}) == logic.CarlaSettings("127.0.0.1", 2000, 10.0)
    s = logic.CarlaSettings.from_env({"LASTV2X_CARLA_HOST": "carla.sim", "LASTV2X_CARLA_PORT": "2010",
                                      "LASTV2X_CARLA_TIMEOUT_S": "2.5"})
    assert (s.address, s.timeout_s) == ("carla.sim:2010", 2.5)
    assert SimulatorLimits.from_env({"LASTV2X_CARLA_PORT": "2010"}).carla.port == 2010


def test_bad_settings_name_each_variable() -> None:
    with pytest.raises(InvalidArgument) as e:
        logic.CarlaSettings.from_env({"LASTV2X_CARLA_PORT": "70000", "LASTV2X_CARLA_TIMEOUT_S": "-1",
                                      "LASTV2X_CARLA_HOST": " "})
    assert {v.field for v in e.value.violations} == {"LASTV2X_CARLA_PORT", "LASTV2X_CARLA_TIMEOUT_S",
                                                     "LASTV2X_CARLA_HOST"}
    assert all(v.hint for v in e.value.violations)


# --- frames -----------------------------------------------------------------------------------

def test_frames_round_trip() -> None:
    rng = np.random.default_rng(3)
    for x, y, h in rng.uniform([-500, -500, -math.pi], [500, 500, math.pi], size=(200, 3)):
        assert logic.from_carla_xy(*logic.to_carla_xy((x, y))) == pytest.approx((x, y))
        assert logic.from_carla_yaw_deg(logic.to_carla_yaw_deg(h)) == pytest.approx(h, abs=1e-9)
    assert logic.to_carla_xy((10.0, 5.0)) == (10.0, -5.0)
    assert logic.to_carla_yaw_deg(math.pi / 2) == pytest.approx(-90.0)  # north is CARLA's -y
    assert logic.from_carla_yaw_deg(180.0) == pytest.approx(-math.pi)  # wrapped to [-pi, pi)


@pytest.mark.parametrize("heading", [0.0, 0.4, math.pi / 2, 2.5, -1.2, -math.pi])
def test_our_heading_is_carlas_forward_vector(heading: float) -> None:
    """The sign conventions checked against carla's own Transform maths, not against themselves."""
    t = carla.Transform(carla.Location(x=3.0, y=-7.0, z=0.0),
                        carla.Rotation(pitch=0.0, yaw=logic.to_carla_yaw_deg(heading), roll=0.0))
    f = t.get_forward_vector()
    vx, vy, vz = logic.to_carla_velocity(2.0, heading, 0.5)
    assert (vx, vy, vz) == pytest.approx((2.0 * f.x, 2.0 * f.y, 0.5), abs=1e-5)
    # the bounding-box centre: carla's transform of the local offset, read back in our frame
    c = t.transform(carla.Location(x=1.5, y=0.2, z=0.0))
    r = logic.reading_from_carla((3.0, -7.0, 0.0), t.rotation.yaw, (vx, vy, 0.0), (1.5, 0.2))
    assert r.xy_m == pytest.approx((c.x, -c.y), abs=1e-4)
    assert r.heading_rad == pytest.approx(logic._wrap_rad(heading), abs=1e-6)
    assert r.speed_mps == pytest.approx(2.0) and r.present
    # spawning: the origin that puts that centre where the program wants it
    origin = logic.origin_for_centre((c.x, c.y), t.rotation.yaw, (1.5, 0.2))
    assert origin == pytest.approx((3.0, -7.0), abs=1e-4)


def test_readings_agree_with_the_map_loader_on_town01(town01_xodr: Path) -> None:
    """A CARLA waypoint converted by the backend lies on the lane the map loader built from it."""
    from services.simulator.maps import load_map

    road_map = load_map(town01_xodr)
    cmap = carla.Map("Town01", town01_xodr.read_text())
    lane = road_map.lanes["r0.s0.l-1"]
    wp = cmap.get_waypoint_xodr(0, -1, 5.0)
    r = logic.reading_from_carla((wp.transform.location.x, wp.transform.location.y, 0.0), wp.transform.rotation.yaw,
                                 (0.0, 0.0, 0.0))
    s, d = lane.project(r.xy_m)
    assert d[0] < 0.05
    p = lane.polyline
    k = min(int(np.searchsorted(lane.s_m, s[0])), len(p) - 1)
    assert abs(logic._wrap_rad(math.atan2(*(p[k] - p[k - 1])[::-1]) - r.heading_rad)) < 0.02


def test_world_settings_cover_the_step_with_substeps() -> None:
    for dt in (0.01, 0.05, 0.1, 0.2, 0.5):
        w = logic.world_settings_for(dt)
        assert w["synchronous_mode"] and w["no_rendering_mode"] and w["fixed_delta_seconds"] == dt
        assert 1 <= w["max_substeps"] <= logic.MAX_SUBSTEPS
        assert w["fixed_delta_seconds"] <= w["max_substep_delta_time"] * w["max_substeps"] + 1e-12
        settings = carla.WorldSettings()
        for key, value in w.items():  # every field exists on the installed carla's WorldSettings
            setattr(settings, key, value)
        assert settings.fixed_delta_seconds == pytest.approx(dt)
    assert logic.world_settings_for(0.05)["max_substep_delta_time"] == pytest.approx(0.01)


# --- world ---------------------------------------------------------------------------------------

def test_which_world() -> None:
    maps = ["/Game/Carla/Maps/Town01", "/Game/Carla/Maps/Town01_Opt", "/Game/Carla/Maps/Town10HD_Opt"]
    assert logic.world_plan("Town01", "Carla/Maps/Town01", maps, False).action == "keep"
    assert logic.world_plan("Town10HD", "Carla/Maps/Town10HD_Opt", maps, False).action == "keep"
    assert logic.world_plan("Town01", "Carla/Maps/Town10HD_Opt", maps, False) == logic.WorldPlan(
        "load", "/Game/Carla/Maps/Town01_Opt")
    assert logic.world_plan("signalized_4way", "Carla/Maps/Town01", maps, True) == logic.WorldPlan(
        "generate", "signalized_4way")
    with pytest.raises(FailedPrecondition, match=r"at 10\.0\.0\.9:2000 has no town 'Town07' \(it has: Town01, "
                                                 r"Town10HD\)"):
        logic.world_plan("Town07", "Carla/Maps/Town01", maps, False, "10.0.0.9:2000")


# --- actors --------------------------------------------------------------------------------------

def test_the_seed_picks_the_blueprints() -> None:
    library = list(logic.CAR_BLUEPRINTS) + list(logic.LONG_BLUEPRINTS) + ["vehicle.bh.crossbike"]
    p1 = reference_program(Application.EEBL, seed=1)
    a = logic.choose_blueprints(p1, library)
    assert a == logic.choose_blueprints(p1, reversed(library))  # the library's order does not matter
    assert set(a) == {v.id for v in p1.vehicles} and set(a.values()) <= set(logic.CAR_BLUEPRINTS)
    assert len(set(a.values())) == len(a)  # distinct cars while the list lasts
    draws = {tuple(logic.choose_blueprints(reference_program(Application.EEBL, seed=s), library).values())
             for s in range(8)}
    assert len(draws) > 1  # another seed, other cars
    only = ["vehicle.audi.tt", "vehicle.tesla.model3"]
    assert set(logic.choose_blueprints(p1, only).values()) <= set(only)  # what the server has
    bus = p1.model_copy(update={"agents": (p1.agents[0].model_copy(update={"length_m": 12.0}), *p1.agents[1:])})
    assert logic.choose_blueprints(bus, library)[p1.agents[0].id] in logic.LONG_BLUEPRINTS
    assert logic.choose_blueprints(bus, only)[p1.agents[0].id] in only  # no trucks there: a car
    with pytest.raises(FailedPrecondition, match="blueprint library has none"):
        logic.choose_blueprints(p1, ["vehicle.bh.crossbike"])


def test_spawn_at_the_route_start_facing_along_it() -> None:
    p = reference_program(Application.LTA, seed=2)
    for v in p.vehicles:
        x, y, yaw = logic.spawn_pose(v)
        r = logic.start_reading(v)
        assert (x, -y) == pytest.approx(r.xy_m) and logic.from_carla_yaw_deg(yaw) == pytest.approx(r.heading_rad)
        track = logic.Track.of(v)
        assert track.locate(r.xy_m) == pytest.approx(v.start_s_m, abs=1e-6)
        assert r.speed_mps == v.initial_speed_mps


def _follow(track: logic.Track, s0: float, speed_mps: float, dt_s: float, steps: int, offset_m: float = 0.0,
            drift: tuple[float, float] = (0.0, 0.0)):
    """A stand-in for CARLA's physics: the body takes the commanded velocity and yaw rate (plus a
    disturbance ``drift`` m/s) for one step. Returns the largest lateral error after ``settle`` m."""
    x, y = track.position(s0)
    h = track.heading(s0)
    x, y = x - offset_m * math.sin(h), y + offset_m * math.cos(h)  # start beside the route
    s, errors = s0, []
    for _ in range(steps):
        cmd = logic.drive_command(track, s, VehicleReading((x, y), h, speed_mps), speed_mps, dt_s)
        s = cmd.s_m
        x, y = x + (cmd.velocity[0] + drift[0]) * dt_s, y + (-cmd.velocity[1] + drift[1]) * dt_s
        h = logic._wrap_rad(h - math.radians(cmd.yaw_rate_deg_s) * dt_s)
        errors.append((float(track.locate((x, y), s - 5, s + 10)), _lateral(track, (x, y), s),
                       abs(logic._wrap_rad(h - track.heading(s)))))
    return errors


def _lateral(track: logic.Track, xy: tuple[float, float], s_hint: float) -> float:
    s = track.locate(xy, s_hint - 5, s_hint + 10)
    return math.dist(track.position(s), xy)


def test_commanded_velocities_follow_a_left_turn(town01_programs) -> None:
    lta = town01_programs["LTA"]
    track = logic.Track.of(lta.ego)
    dt, v = lta.dt_s, 8.0
    steps = int((track.length_m - lta.ego.start_s_m - 10.0) / (v * dt))
    errors = _follow(track, lta.ego.start_s_m, v, dt, steps)
    assert max(e[1] for e in errors) < 0.3  # on the route through the junction's left turn
    # the body points along it (a polyline's heading jumps at its vertices: the cap of one step's yaw)
    assert max(e[2] for e in errors[5:]) <= logic.MAX_YAW_RATE_RAD_S * dt + 1e-9
    assert np.mean([e[2] for e in errors[5:]]) < math.radians(2.0)
    assert errors[-1][0] == pytest.approx(lta.ego.start_s_m + steps * v * dt, abs=0.5)  # at the speed asked
    turned = abs(logic._wrap_rad(track.heading(errors[-1][0]) - track.heading(lta.ego.start_s_m)))
    assert turned > math.radians(60)  # the route really turns


def test_a_vehicle_off_its_route_steers_back_and_a_stopped_one_stays() -> None:
    p = reference_program(Application.FCW, seed=1)
    track = logic.Track.of(p.ego)
    errors = _follow(track, p.ego.start_s_m, 12.0, p.dt_s, 80, offset_m=1.5)
    assert errors[0][1] > 1.0 and max(e[1] for e in errors[40:]) < 0.05
    h = track.heading(p.ego.start_s_m)
    push = (-0.6 * math.sin(h), 0.6 * math.cos(h))  # 0.6 m/s sideways, e.g. a slope
    drifting = _follow(track, p.ego.start_s_m, 12.0, p.dt_s, 80, drift=push)
    assert 0.2 < max(e[1] for e in drifting) < 0.35  # held at push / LATERAL_GAIN_PER_S = 0.3 m
    stop = logic.drive_command(track, p.ego.start_s_m, logic.start_reading(p.ego), 0.0, p.dt_s, vz_mps=-0.1)
    assert stop.velocity == (0.0, 0.0, -0.1) and stop.yaw_rate_deg_s == 0.0


def test_arrival_is_the_front_bumper_at_the_route_end() -> None:
    p = reference_program(Application.FCW, seed=1)
    track = logic.Track.of(p.ego)
    assert not logic.arrived(track, track.length_m - p.ego.length_m / 2 - 0.01, p.ego.length_m)
    assert logic.arrived(track, track.length_m - p.ego.length_m / 2, p.ego.length_m)


def test_locating_a_route_stays_near_the_hint() -> None:
    """A route that comes back near itself (a U-turn) is located on the part the vehicle is on."""
    pts = [(0.0, 0.0), (50.0, 0.0), (50.0, 4.0), (0.0, 4.0)]
    track = logic.Track(np.asarray(pts), np.array([0.0, 50.0, 54.0, 104.0]))
    assert track.locate((10.0, 2.1)) == pytest.approx(94.0, abs=0.2)  # globally: the return leg
    assert track.locate((10.0, 2.1), 5.0, 20.0) == pytest.approx(10.0, abs=0.2)  # near where it was: the way out
    assert track.position(110.0) == pytest.approx((-6.0, 4.0))  # past the end: straight on


# --- traffic lights --------------------------------------------------------------------------------

def _landmark_sites(cmap) -> list[logic.LightSite]:
    """Town01's traffic lights as a server shows them: per OpenDRIVE signal, a waypoint on each lane it
    controls at the signal's s (carla's TrafficLight.get_affected_lane_waypoints does the same)."""
    points: dict[str, list[tuple[float, float, float]]] = {}
    for lm in cmap.get_all_landmarks_of_type("1000001"):
        for lo, hi in lm.get_lane_validities():
            for lane in range(lo, hi + 1):
                wp = cmap.get_waypoint_xodr(lm.road_id, lane, lm.s) if lane else None
                if wp is not None:
                    t = wp.transform
                    points.setdefault(lm.id, []).append(
                        (*logic.from_carla_xy(t.location.x, t.location.y), logic.from_carla_yaw_deg(t.rotation.yaw)))
    return [logic.LightSite(lid, tuple(p)) for lid, p in sorted(points.items())]


def test_every_town01_light_matches_the_group_of_its_signal(town01_xodr: Path) -> None:
    from services.simulator.maps import load_map

    road_map = load_map(town01_xodr)
    sites = _landmark_sites(carla.Map("Town01", town01_xodr.read_text()))
    bars = []
    for gid, g in road_map.signal_groups.items():
        for b in g.stop_bars:
            p = road_map.lanes[b.lane_id].polyline
            bars.append(logic.BarSite(gid, b.xy, math.atan2(p[-1, 1] - p[-2, 1], p[-1, 0] - p[-2, 0])))
    m = logic.match_lights(sites, bars)
    assert len(sites) == len(road_map.signal_groups) == 36 and m.unmatched_groups == ()
    by_signal = {sid: gid for gid, g in road_map.signal_groups.items() for sid in g.signal_ids}
    assert m.groups == {s.light_id: by_signal[str(s.light_id)] for s in sites}  # geometry agrees with the ids
    assert max(m.distances_m.values()) < 1.5


def test_a_grounded_town01_program_gets_its_lights(town01_programs, town01_xodr: Path) -> None:
    from services.simulator.maps import load_map

    road_map = load_map(town01_xodr)
    sites = _landmark_sites(carla.Map("Town01", town01_xodr.read_text()))
    for name, program in town01_programs.items():
        bars = logic.bar_sites(program)
        crossed = {c.signal_group_id for v in program.vehicles for c in v.route.crossings if c.signal_group_id}
        assert {b.group_id for b in bars} == crossed and crossed, name
        m = logic.match_lights(sites, bars)
        assert m.unmatched_groups == (), name
        for gid in crossed:  # the light of each crossed group's OpenDRIVE signal shows that group
            assert {lid for lid, g in m.groups.items() if g == gid} == set(road_map.signal_groups[gid].signal_ids)
        states = logic.light_states([s.light_id for s in sites], m.groups, {g: "amber" for g in crossed})
        assert sorted(set(states.values())) == ["Off", "Yellow"]  # lights of no crossed group are dark


def test_matching_needs_the_same_direction_and_a_near_stop_bar() -> None:
    bar = logic.BarSite("j0.sg0", (0.0, 0.0), 0.0)
    lights = [logic.LightSite(1, ((0.5, 0.2, 0.1),)),  # on it, same way
              logic.LightSite(2, ((0.5, 0.2, math.pi),)),  # on it, facing the other way (the opposite lane)
              logic.LightSite(3, ((9.0, 0.0, 0.0),)),  # too far
              logic.LightSite(4, ())]  # no stop waypoints at all
    m = logic.match_lights(lights, [bar, logic.BarSite("j0.sg1", (0.0, 30.0), 0.0)])
    assert m.groups == {1: "j0.sg0"} and m.unmatched_groups == ("j0.sg1",)
    near = logic.match_lights([logic.LightSite(5, ((1.0, 0.0, 0.0), (0.0, 29.0, 0.0)))],
                              [bar, logic.BarSite("j0.sg1", (0.0, 30.0), 0.0)])
    assert near.groups == {5: "j0.sg0"}  # the nearest of its stop waypoints decides


def test_light_states_follow_the_plan_and_change_only_when_needed() -> None:
    groups = {1: "a", 2: "b", 3: "a"}
    s = logic.light_states([1, 2, 3, 4], groups, {"a": "green", "b": "amber"})
    assert s == {1: "Green", 2: "Yellow", 3: "Green", 4: "Off"}
    s2 = logic.light_states([1, 2, 3, 4], groups, {"a": "amber"})  # b has no phase: red
    assert s2 == {1: "Yellow", 2: "Red", 3: "Yellow", 4: "Off"}
    assert logic.changed(s, s2) == {1: "Yellow", 2: "Red", 3: "Yellow"} and logic.changed(s2, s2) == {}
    for name in (*logic.CARLA_STATE.values(), logic.UNMATCHED_LIGHT_STATE):
        assert isinstance(getattr(carla.TrafficLightState, name), carla.TrafficLightState)


def test_versions() -> None:
    assert logic.versions_compatible("0.9.16", "0.9.16-dirty")
    assert not logic.versions_compatible("0.9.16", "0.9.15")


# --- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def town01_xodr(shared_data: Path) -> Path:
    path = shared_data / "opendrive" / "carla" / "Town01.xodr"
    if not path.is_file():
        pytest.skip(f"CARLA Town01 absent: {path}")
    return path


@pytest.fixture(scope="module")
def town01_programs(town01_xodr: Path, tmp_path_factory) -> dict:
    """RLVW and LTA grounded on CARLA Town01 (the reference specs, the town named)."""
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue
    from services.grounding.ground import Grounder
    from services.grounding.index import RetrievalIndex

    root = tmp_path_factory.mktemp("town01")
    catalogue = MapCatalogue(CatalogueConfig(cache_dir=root / "catalogue", include_builtins=False,
                                             map_paths=(town01_xodr,), map_cache_dir=root / "maps"))
    grounder = Grounder(catalogue, RetrievalIndex(catalogue))
    out = {}
    for app in (Application.RLVW, Application.LTA):
        spec = reference_spec(app, seed=1).model_copy(update={"map": MapQuery(town="Town01")})
        out[app.value] = grounder.ground(spec)
        assert out[app.value].map_name == "Town01"
    return out
