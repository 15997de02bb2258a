"""What the CARLA plant does, as pure functions (no carla import; testable without a server).

The adapter (``carla_plant.py``) only moves values between these functions and ``carla``:

* **settings** (:class:`CarlaSettings`): where the server is and how long to wait for it;
* **which world** (:func:`world_plan`): keep the loaded town, load a town the server has, or
  generate a world from the program map's OpenDRIVE (built-in and configured user maps);
* **which actors** (:func:`choose_blueprints`): one blueprint per program vehicle, drawn by the
  scenario seed from :data:`CAR_BLUEPRINTS` (vehicles up to :data:`CAR_MAX_LENGTH_M`) or
  :data:`LONG_BLUEPRINTS`, among those the server's library has, so both rollouts and every rerun
  get the same cars;
* **where they spawn** (:func:`spawn_pose`): each vehicle's route start in CARLA's frame;
* **which controls** (:func:`drive_command`): per tick, the velocity vector and yaw rate that move
  a driven vehicle at its commanded speed along its program route (the reading projected onto
  the route polyline near where it was last; the route's heading there, corrected towards the
  route by the lateral offset), so CARLA's physics moves the body and no Traffic Manager
  autopilot steers it;
* **which light states** (:func:`match_lights`, :func:`light_states`): each CARLA traffic light is
  matched to the program's signal group whose stop bar is nearest to the light's stop waypoints
  and points the same way; every tick each matched light shows its group's phase;
* **what the vehicles did** (:func:`reading_from_carla`): CARLA transforms and velocities back to
  :class:`~services.simulator.backends.base.VehicleReading` in our frame.

Frames: CARLA's (Unreal) frame is left-handed. Our scenario plane is the OpenDRIVE frame (x east,
y north, heading counter-clockwise from +x): ``y = -carla_y``, ``heading = -radians(yaw)``, and
angular velocities (CARLA: deg/s about +z, clockwise seen from above) change sign the same way
(one rule with ``services/simulator/maps/opendrive.py``, which reads maps through carla).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from lastv2x.core.errors import FailedPrecondition, FieldViolation, InvalidArgument
from services.simulator.backends.plant import VehicleReading

if TYPE_CHECKING:
    from lastv2x.core.program import ProgramVehicle, ScenarioProgram

XY = tuple[float, float]

# Blueprints (CARLA 0.9.16 vehicle library). Ordered; the seed draws from the ones the server has.
CAR_BLUEPRINTS: tuple[str, ...] = (
    "vehicle.lincoln.mkz_2020", "vehicle.tesla.model3", "vehicle.audi.a2", "vehicle.audi.tt",
    "vehicle.toyota.prius", "vehicle.nissan.micra", "vehicle.mini.cooper_s", "vehicle.citroen.c3",
    "vehicle.seat.leon", "vehicle.mercedes.coupe_2020", "vehicle.dodge.charger_2020",
    "vehicle.chevrolet.impala", "vehicle.ford.mustang", "vehicle.bmw.grandtourer",
)
LONG_BLUEPRINTS: tuple[str, ...] = (  # trucks and buses, for program vehicles longer than a car
    "vehicle.carlamotors.carlacola", "vehicle.carlamotors.european_hgv", "vehicle.mitsubishi.fusorosa",
    "vehicle.carlamotors.firetruck",
)
CAR_MAX_LENGTH_M = 6.0  # a program vehicle longer than this gets a LONG_BLUEPRINTS actor
_BLUEPRINT_STREAM = 0xCA41A  # the blueprint draw's own random stream under the scenario seed

SPAWN_Z_OFFSET_M = 0.3  # above the road surface, so a spawned body does not intersect it
LATERAL_GAIN_PER_S = 2.0  # a driven vehicle beside its route closes the gap at this rate (1/s)
LATERAL_SHARE = 0.5  # ... at most at this share of its speed
LOCATE_BEHIND_M = 5.0  # a reading is projected onto [s_last - this, s_last + step + LOCATE_AHEAD_M]
LOCATE_AHEAD_M = 10.0
MAX_YAW_RATE_RAD_S = 3.0  # the body yaw rate a tick may command
LIGHT_MATCH_RADIUS_M = 5.0  # a light's stop waypoint this close to a stop bar belongs to its group
LIGHT_MATCH_HEADING_RAD = math.radians(45.0)  # ... and pointing the same way within this

CARLA_STATE = {"green": "Green", "amber": "Yellow", "red": "Red"}  # our phase -> carla.TrafficLightState name
UNMATCHED_LIGHT_STATE = "Off"  # lights of no program group: frozen dark (no program vehicle is controlled by them)


# --- settings ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class CarlaSettings:
    """Where the CARLA server is (``LASTV2X_CARLA_HOST`` / ``_PORT``) and how long any call to it
    may take (``LASTV2X_CARLA_TIMEOUT_S``) before the backend answers UNAVAILABLE. The default is
    the ``carla-gpu`` sidecar beside the simulator pod."""

    host: str = "127.0.0.1"
    port: int = 2000
    timeout_s: float = 10.0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CarlaSettings:
        """From ``env`` (the simulator's settings pass theirs), else the process environment."""
        env = os.environ if env is None else env
        default = cls()
        bad: list[FieldViolation] = []
        host = env.get("LASTV2X_CARLA_HOST", default.host).strip()
        if not host:
            bad.append(FieldViolation("LASTV2X_CARLA_HOST", "empty host", "a host name or address"))
        port, timeout_s = default.port, default.timeout_s
        try:
            port = int(env.get("LASTV2X_CARLA_PORT", default.port))
            if not 0 < port < 65536:
                raise ValueError(port)
        except ValueError:
            bad.append(FieldViolation("LASTV2X_CARLA_PORT", f"not a TCP port: {env.get('LASTV2X_CARLA_PORT')!r}",
                                      "1 .. 65535 (CARLA's default RPC port is 2000)"))
        try:
            timeout_s = float(env.get("LASTV2X_CARLA_TIMEOUT_S", default.timeout_s))
            if not (math.isfinite(timeout_s) and timeout_s > 0.0):
                raise ValueError(timeout_s)
        except ValueError:
            bad.append(FieldViolation("LASTV2X_CARLA_TIMEOUT_S",
                                      f"not a positive number of seconds: {env.get('LASTV2X_CARLA_TIMEOUT_S')!r}",
                                      "e.g. 10 (loading a town takes longer: the load gets 6 times this)"))
        if bad:
            raise InvalidArgument(bad)
        return cls(host=host, port=port, timeout_s=timeout_s)


LOAD_TIMEOUT_FACTOR = 6.0  # loading or generating a town may take this many times the call timeout


# --- frames -----------------------------------------------------------------------------------

def _wrap_rad(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def to_carla_xy(xy: XY) -> XY:
    """Our (x east, y north) -> CARLA (x, y) (y flipped)."""
    return float(xy[0]), -float(xy[1])


def from_carla_xy(x: float, y: float) -> XY:
    return float(x), -float(y)


def to_carla_yaw_deg(heading_rad: float) -> float:
    """Our heading (CCW from +x) -> CARLA yaw in degrees, in [-180, 180)."""
    return math.degrees(_wrap_rad(-heading_rad))


def from_carla_yaw_deg(yaw_deg: float) -> float:
    """CARLA yaw (degrees) -> our heading in [-pi, pi)."""
    return _wrap_rad(-math.radians(yaw_deg))


def to_carla_velocity(speed_mps: float, heading_rad: float, vz_mps: float = 0.0) -> tuple[float, float, float]:
    """A velocity vector in CARLA's frame: ``speed`` along our ``heading``."""
    return speed_mps * math.cos(heading_rad), -speed_mps * math.sin(heading_rad), vz_mps


def reading_from_carla(location: tuple[float, float, float], yaw_deg: float,
                       velocity: tuple[float, float, float], centre_offset_m: XY = (0.0, 0.0),
                       present: bool = True) -> VehicleReading:
    """A CARLA actor's transform and velocity as our reading. ``centre_offset_m``: the bounding
    box centre in the actor's frame (``actor.bounding_box.location`` x, y), so the reading is the
    vehicle's centre as the program means it, not the actor's origin."""
    yaw = math.radians(yaw_deg)
    dx, dy = centre_offset_m
    cx = location[0] + dx * math.cos(yaw) - dy * math.sin(yaw)
    cy = location[1] + dx * math.sin(yaw) + dy * math.cos(yaw)
    return VehicleReading(xy_m=from_carla_xy(cx, cy), heading_rad=from_carla_yaw_deg(yaw_deg),
                          speed_mps=math.sqrt(velocity[0] ** 2 + velocity[1] ** 2 + velocity[2] ** 2),
                          present=present)


def origin_for_centre(centre: XY, yaw_deg: float, centre_offset_m: XY) -> XY:
    """Where an actor's origin goes (CARLA frame) so that its bounding-box centre, ``centre_offset_m``
    in its own frame, lies at ``centre`` (CARLA frame): the inverse of :func:`reading_from_carla`'s
    offset, so a spawned vehicle's centre is the program's."""
    yaw = math.radians(yaw_deg)
    dx, dy = centre_offset_m
    return centre[0] - (dx * math.cos(yaw) - dy * math.sin(yaw)), centre[1] - (dx * math.sin(yaw) + dy * math.cos(yaw))


# --- world settings ---------------------------------------------------------------------------

MAX_SUBSTEPS = 16  # CARLA's physics substepping accepts at most 16 substeps per tick
SUBSTEP_S = 0.01  # CARLA's default substep (max_substep_delta_time)


def world_settings_for(dt_s: float) -> dict[str, object]:
    """The ``carla.WorldSettings`` fields of a rollout: synchronous, fixed delta = the program's
    step, no rendering, physics substeps that cover the step (CARLA needs
    ``fixed_delta_seconds <= max_substep_delta_time * max_substeps``)."""
    substeps = min(MAX_SUBSTEPS, max(1, math.ceil(dt_s / SUBSTEP_S - 1e-9)))
    return {"synchronous_mode": True, "fixed_delta_seconds": float(dt_s), "no_rendering_mode": True,
            "substepping": True, "max_substep_delta_time": max(SUBSTEP_S, dt_s / substeps),
            "max_substeps": substeps}


def town_of(carla_map_name: str) -> str:
    """``/Game/Carla/Maps/Town10HD_Opt`` or ``Carla/Maps/Town01`` -> the town (``Town10HD``, ``Town01``)."""
    base = carla_map_name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return base[:-4] if base.endswith("_Opt") else base


@dataclass(frozen=True)
class WorldPlan:
    action: str  # "keep": the loaded world is the program's town; "load": load_world(town); "generate"
    town: str  # the server's map path to load ("load"), or the program's map name


def world_plan(map_name: str, current_map: str, available_maps: Sequence[str], has_opendrive: bool,
               address: str = "") -> WorldPlan:
    """Keep the loaded town, load a town the server has, or generate a world from the map's
    OpenDRIVE (``has_opendrive``: a built-in map, or a user map's ``.xodr`` the plant was given).
    A town neither the server has nor we can give as OpenDRIVE is a clear error naming what the
    server has."""
    if town_of(current_map) == map_name:
        return WorldPlan("keep", current_map)
    for path in sorted(available_maps, key=lambda p: (not p.endswith("_Opt"), p)):  # _Opt variants first
        if town_of(path) == map_name:
            return WorldPlan("load", path)
    if has_opendrive:
        return WorldPlan("generate", map_name)
    towns = sorted({town_of(p) for p in available_maps})
    raise FailedPrecondition(
        f"the CARLA server{' at ' + address if address else ''} has no town {map_name!r} "
        f"(it has: {', '.join(towns) or 'none'}), and {map_name!r} is neither a built-in map nor a user map "
        "whose .xodr the backend was given, so no OpenDRIVE world can be generated",
        "ground the scenario on one of the server's towns or on a built-in map")


# --- actors -----------------------------------------------------------------------------------

def choose_blueprints(program: ScenarioProgram, available: Iterable[str]) -> dict[str, str]:
    """Vehicle id -> blueprint id: drawn by ``program.seed`` (its own stream) among the documented
    blueprints the server has, cars for vehicles up to :data:`CAR_MAX_LENGTH_M`, trucks and buses
    above (cars when the server has none). The same program gets the same actors on every run."""
    have = set(available)
    cars = [b for b in CAR_BLUEPRINTS if b in have]
    long = [b for b in LONG_BLUEPRINTS if b in have] or cars
    if not cars:
        raise FailedPrecondition(
            f"the CARLA server's blueprint library has none of the vehicles the backend uses ({', '.join(CAR_BLUEPRINTS)})",
            "run a CARLA 0.9.16 server (the carla-gpu component's image)")
    rng = np.random.default_rng(np.random.SeedSequence([program.seed, _BLUEPRINT_STREAM]))
    car_order = rng.permutation(len(cars))
    long_order = rng.permutation(len(long))
    out: dict[str, str] = {}
    n_car = n_long = 0
    for v in program.vehicles:
        if v.length_m > CAR_MAX_LENGTH_M:
            out[v.id] = long[int(long_order[n_long % len(long)])]
            n_long += 1
        else:
            out[v.id] = cars[int(car_order[n_car % len(cars)])]
            n_car += 1
    return out


@dataclass(frozen=True, eq=False)
class Track:
    """A program route as arrays: vertices (P, 2) and their arc lengths (P,)."""

    points: np.ndarray
    s_cum: np.ndarray

    @classmethod
    def of(cls, vehicle: ProgramVehicle) -> Track:
        from services.simulator.maps import geometry as geo

        points = geo.as_polyline(vehicle.route.points_xy_m)
        return cls(points, geo.cumulative_s(points))

    @property
    def length_m(self) -> float:
        return float(self.s_cum[-1])

    def position(self, s_m: float) -> XY:
        """The point at ``s`` (beyond either end: extended along the end segment's heading)."""
        from services.simulator.maps import geometry as geo

        clipped = min(max(s_m, 0.0), self.length_m)
        p = geo.position_at(self.points, self.s_cum, clipped)
        over = s_m - clipped
        if over:
            h = self.heading(clipped)
            p = p + over * np.array([math.cos(h), math.sin(h)])
        return float(p[0]), float(p[1])

    def heading(self, s_m: float) -> float:
        from services.simulator.maps import geometry as geo

        return float(geo.heading_at(self.points, self.s_cum, min(max(s_m, 0.0), self.length_m)))

    def locate(self, xy: XY, s_lo: float = -math.inf, s_hi: float = math.inf) -> float:
        """Arc length of the route point nearest ``xy``, looked for only on ``[s_lo, s_hi]``
        (a route that passes near itself, e.g. a U-turn, is not confused with its other part)."""
        from services.simulator.routes import project_polyline

        lo, hi = max(0.0, s_lo), min(self.length_m, s_hi)
        if hi <= lo:
            return lo
        inner = (self.s_cum > lo) & (self.s_cum < hi)
        pts = np.vstack([self.position(lo), self.points[inner], self.position(hi)])
        s = np.concatenate([[lo], self.s_cum[inner], [hi]])
        return float(project_polyline(pts, s, np.asarray([xy], dtype=np.float64))[0][0])


def spawn_pose(vehicle: ProgramVehicle) -> tuple[float, float, float]:
    """(x, y, yaw degrees) in CARLA's frame of a vehicle's start: its centre at ``start_s_m`` on its
    route, facing along the route. z comes from the road under it plus :data:`SPAWN_Z_OFFSET_M`."""
    track = Track.of(vehicle)
    x, y = to_carla_xy(track.position(vehicle.start_s_m))
    return x, y, to_carla_yaw_deg(track.heading(vehicle.start_s_m))


def start_reading(vehicle: ProgramVehicle) -> VehicleReading:
    """The reading at t = 0: where :func:`spawn_pose` put the vehicle, at its initial speed (the
    plant gives each vehicle that velocity before the first tick)."""
    track = Track.of(vehicle)
    return VehicleReading(xy_m=track.position(vehicle.start_s_m), heading_rad=track.heading(vehicle.start_s_m),
                          speed_mps=vehicle.initial_speed_mps)


@dataclass(frozen=True)
class DriveCommand:
    """What one tick applies to a driven vehicle (CARLA frame)."""

    s_m: float  # where the vehicle was found on its route (the next tick's hint)
    velocity: tuple[float, float, float]  # m/s, set_target_velocity
    yaw_rate_deg_s: float  # about CARLA's +z, set_target_angular_velocity


def drive_command(track: Track, s_hint_m: float, reading: VehicleReading, speed_mps: float, dt_s: float,
                  vz_mps: float = 0.0) -> DriveCommand:
    """Move a vehicle at ``speed_mps`` along its route for one step of ``dt_s``.

    The reading is projected onto the route near ``s_hint_m``. The velocity has the commanded
    magnitude and points along the route's heading half a step ahead (the chord of the step on a
    curve), turned towards the route by the vehicle's signed lateral offset ``e`` (a correction of
    ``LATERAL_GAIN_PER_S * e``, at most ``LATERAL_SHARE`` of the speed), so a vehicle pushed off
    the route steers back onto it. The body turns to the route's heading one step ahead within the
    step (yaw rate capped at :data:`MAX_YAW_RATE_RAD_S`)."""
    speed = max(0.0, float(speed_mps))
    s = track.locate(reading.xy_m, s_hint_m - LOCATE_BEHIND_M, s_hint_m + speed * dt_s + LOCATE_AHEAD_M)
    if speed <= 0.0:
        return DriveCommand(s, (0.0, 0.0, vz_mps), 0.0)
    foot, h_foot = track.position(s), track.heading(s)
    lateral = -(reading.xy_m[0] - foot[0]) * math.sin(h_foot) + (reading.xy_m[1] - foot[1]) * math.cos(h_foot)
    limit = LATERAL_SHARE * speed
    correction = -max(-limit, min(limit, LATERAL_GAIN_PER_S * lateral))
    aim = track.heading(s + speed * dt_s / 2.0) + math.atan2(correction, speed)
    turn = _wrap_rad(track.heading(s + speed * dt_s) - reading.heading_rad)
    rate = max(-MAX_YAW_RATE_RAD_S, min(MAX_YAW_RATE_RAD_S, turn / dt_s))
    return DriveCommand(s, to_carla_velocity(speed, aim, vz_mps), -math.degrees(rate))


def arrived(track: Track, s_m: float, length_m: float) -> bool:
    """A vehicle whose front bumper reached its route's end leaves the simulation (the builtin core's
    rule, and SUMO's ``arrivalPos="max"``)."""
    return s_m + length_m / 2.0 >= track.length_m - 1e-6


# --- traffic lights ---------------------------------------------------------------------------

@dataclass(frozen=True)
class LightSite:
    """A CARLA traffic light as plain values: its id and the stop waypoints of the lanes it
    controls, ``(x, y, heading)`` in our frame (convert with :func:`from_carla_xy` /
    :func:`from_carla_yaw_deg`)."""

    light_id: int | str
    stop_points: tuple[tuple[float, float, float], ...]


@dataclass(frozen=True)
class BarSite:
    """A signalized stop bar of the program: its group, where it is, the travel direction there."""

    group_id: str
    xy_m: XY
    heading_rad: float


def bar_sites(program: ScenarioProgram) -> tuple[BarSite, ...]:
    """Every signalized stop bar the program's routes cross (one per group and place)."""
    seen: dict[tuple[str, float, float], BarSite] = {}
    for v in program.vehicles:
        track = None
        for c in v.route.crossings:
            if c.signal_group_id is None:
                continue
            track = track or Track.of(v)
            key = (c.signal_group_id, round(c.stop_bar_xy_m[0], 1), round(c.stop_bar_xy_m[1], 1))
            seen.setdefault(key, BarSite(c.signal_group_id, (float(c.stop_bar_xy_m[0]), float(c.stop_bar_xy_m[1])),
                                         track.heading(max(0.0, c.stop_bar_s_m - 0.5))))
    return tuple(seen.values())


@dataclass(frozen=True)
class LightMatch:
    groups: dict[int | str, str]  # light id -> our signal group id (matched lights only)
    unmatched_groups: tuple[str, ...]  # groups of the program's stop bars no light matched
    distances_m: dict[int | str, float] = field(default_factory=dict)  # light id -> its match distance


def match_lights(lights: Sequence[LightSite], bars: Sequence[BarSite], radius_m: float = LIGHT_MATCH_RADIUS_M,
                 heading_tol_rad: float = LIGHT_MATCH_HEADING_RAD) -> LightMatch:
    """Each light to the group of the nearest stop bar that one of its stop waypoints lies within
    ``radius_m`` of, facing the same way within ``heading_tol_rad``; ties go to the smaller group
    id. A light near no stop bar of the program matches nothing (it shows
    :data:`UNMATCHED_LIGHT_STATE`)."""
    groups: dict[int | str, str] = {}
    dist: dict[int | str, float] = {}
    for light in lights:
        best: tuple[float, str] | None = None
        for x, y, h in light.stop_points:
            for bar in bars:
                d = math.hypot(x - bar.xy_m[0], y - bar.xy_m[1])
                if d <= radius_m and abs(_wrap_rad(h - bar.heading_rad)) <= heading_tol_rad:
                    if best is None or (d, bar.group_id) < best:
                        best = (d, bar.group_id)
        if best is not None:
            groups[light.light_id], dist[light.light_id] = best[1], best[0]
    matched = set(groups.values())
    return LightMatch(groups, tuple(sorted({b.group_id for b in bars} - matched)), dist)


def light_states(light_ids: Iterable[int | str], groups: Mapping[int | str, str],
                 group_phases: Mapping[str, str]) -> dict[int | str, str]:
    """Light id -> ``carla.TrafficLightState`` name for this tick: a matched light shows its
    group's phase (a group without a phase this tick shows red), any other light
    :data:`UNMATCHED_LIGHT_STATE`."""
    out: dict[int | str, str] = {}
    for lid in light_ids:
        gid = groups.get(lid)
        out[lid] = UNMATCHED_LIGHT_STATE if gid is None else CARLA_STATE.get(group_phases.get(gid, "red"), "Red")
    return out


def changed(previous: Mapping[int | str, str], now: Mapping[int | str, str]) -> dict[int | str, str]:
    """The lights whose state differs from the last tick (only those are sent to the server)."""
    return {lid: s for lid, s in now.items() if previous.get(lid) != s}


def versions_compatible(client_version: str, server_version: str) -> bool:
    """Same major.minor.patch (CARLA's client and server must match; '0.9.16-dirty' ~ '0.9.16')."""
    def core(v: str) -> str:
        return v.strip().lstrip("v").split("-", 1)[0]

    return core(client_version) == core(server_version)


__all__ = ["CAR_BLUEPRINTS", "LONG_BLUEPRINTS", "BarSite", "arrived", "CarlaSettings", "DriveCommand", "LightMatch",
           "LightSite", "Track", "WorldPlan", "bar_sites", "changed", "choose_blueprints", "drive_command",
           "from_carla_xy", "from_carla_yaw_deg", "light_states", "match_lights", "origin_for_centre", "reading_from_carla",
           "spawn_pose", "start_reading", "to_carla_velocity", "to_carla_xy", "to_carla_yaw_deg",
           "town_of", "versions_compatible", "world_plan", "world_settings_for"]
