"""The CARLA plant (see base.py): a thin adapter between ``carla_logic`` and a CARLA 0.9.16 server.

Per rollout (``start`` ... ``tick`` ... ``close``; the two rollouts of a paired execution run one
after the other on the same world):

* connect (``LASTV2X_CARLA_HOST`` / ``_PORT``), every call bounded by ``LASTV2X_CARLA_TIMEOUT_S``
  (loading a town by :data:`~carla_logic.LOAD_TIMEOUT_FACTOR` times it); a server that does not
  answer is :class:`~lastv2x.core.errors.Unavailable` naming the address and the timeout;
* keep, load or generate the program's town (:func:`~carla_logic.world_plan`);
* synchronous mode, ``fixed_delta_seconds = dt``, no rendering (the original settings are kept
  and put back on close);
* every traffic light frozen; each light matched to our signal group by its stop waypoints
  (:func:`~carla_logic.match_lights`) shows that group's phase every tick, the others are off;
* one actor per program vehicle (blueprints by the seed), at its route start with its initial
  velocity; each tick every driven vehicle gets a target velocity and yaw rate along its route
  (:func:`~carla_logic.drive_command`), in one batch; no Traffic Manager, no autopilot;
* ``world.tick()``, then every actor's transform and velocity are read back into our frame;
* on close, and on any error in ``start`` or ``tick``: every actor this plant spawned is
  destroyed, the lights get their state and frozen flag back, the world its settings.

``drives_background`` is False: CARLA has no traffic model of ours, so the paired runner drives
every program vehicle (background ones included) by speed. Nothing here runs without a server; the
decisions are in ``carla_logic.py`` and tested there (docs/guides/backends.md, "CARLA backend").
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from lastv2x.core.errors import FailedPrecondition, LastV2XError, Unavailable
from lastv2x.core.program import ScenarioProgram
from services.simulator.backends import carla_logic as logic
from services.simulator.backends.plant import TickCommand, VehicleReading

log = logging.getLogger(__name__)
T = TypeVar("T")
_GENERATED: dict[str, tuple[int, str]] = {}  # server address -> (world id, map name) of the world we generated last


def _carla() -> Any:
    """The ``carla`` module (imported the one way the map loader does: HOME guarded), or ImportError."""
    from services.simulator.maps.errors import MapError
    from services.simulator.maps.opendrive import _carla as import_carla

    try:
        return import_carla()
    except MapError as exc:
        raise ImportError(str(exc)) from None


class CarlaPlant:
    """A :class:`~services.simulator.backends.base.Plant` on a CARLA server."""

    name = "carla"
    drives_background = False

    def __init__(self, settings: logic.CarlaSettings | None = None, map_paths: Sequence[Path] = ()):
        """``settings``: the service's ``LASTV2X_CARLA_*`` (``SimulatorLimits.carla``, through
        base.py's factory); None = the defaults. ``map_paths``:
        where user maps' ``.xodr`` are found for towns the server lacks (built-in maps need none).
        Without the ``carla`` extra this is an ImportError (open_plant names the extra)."""
        _carla()
        self.settings = settings or logic.CarlaSettings()
        self.map_paths = tuple(map_paths)
        self.cleanup_failures: list[str] = []  # what the last close could not undo (logged too)
        self._client: Any = None
        self._world: Any = None
        self._reset()

    def _reset(self) -> None:
        self._original_settings: Any = None
        self._actors: dict[str, Any] = {}
        self._offsets: dict[str, tuple[float, float]] = {}
        self._tracks: dict[str, logic.Track] = {}
        self._s: dict[str, float] = {}
        self._vz: dict[str, float] = {}
        self._readings: dict[str, VehicleReading] = {}
        self._lengths: dict[str, float] = {}
        self._gone: set[str] = set()  # vehicles that arrived at their route's end (actor destroyed)
        self._lights: dict[int | str, Any] = {}
        self._map: Any = None
        self._light_groups: dict[int | str, str] = {}
        self._light_state: dict[int | str, str] = {}
        self._light_restore: list[tuple[Any, Any, bool]] = []
        self._dt_s = 0.05

    # --- calls to the server ------------------------------------------------------------------

    def _call(self, what: str, fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
        """One call to the server; its time-out (or a dropped connection) is Unavailable."""
        try:
            return fn(*args)
        except RuntimeError as exc:
            raise self._server_error(what, exc, timeout_s) from None

    def _server_error(self, what: str, exc: RuntimeError, timeout_s: float | None = None) -> LastV2XError:
        """carla raises RuntimeError for everything: a time-out or lost connection is Unavailable,
        anything else the server refused a FailedPrecondition naming the call."""
        text = str(exc)
        if "time-out" in text or "timeout" in text.lower() or "connect" in text.lower():
            return Unavailable(f"CARLA server at {self.settings.address} did not answer ({what}) within "
                               f"{timeout_s or self.settings.timeout_s:g} s: {text}; start it (the carla-gpu "
                               "component) or point LASTV2X_CARLA_HOST / LASTV2X_CARLA_PORT at one")
        return FailedPrecondition(f"CARLA server at {self.settings.address} refused {what}: {text}")

    def _connect(self, carla: Any) -> Any:
        if self._client is None:
            client = carla.Client(self.settings.host, self.settings.port)
            client.set_timeout(self.settings.timeout_s)
            server = self._call("get_server_version", client.get_server_version)
            if not logic.versions_compatible(client.get_client_version(), server):
                raise FailedPrecondition(f"the CARLA server at {self.settings.address} runs {server}, the client is "
                                         f"{client.get_client_version()}", "run a server of the client's version "
                                         "(carla-gpu component: carlasim/carla:0.9.16)")
            self._client = client
        return self._client

    def _opendrive(self, map_name: str) -> str | None:
        """The OpenDRIVE of a built-in map or a configured user map (else None)."""
        from services.simulator.maps import builtin_map_names
        from services.simulator.maps.builtin import builtin_sources, find_named

        if map_name in builtin_map_names():
            return builtin_sources(map_name)[0]
        path = find_named(map_name, self.map_paths)
        return path.read_text(encoding="utf-8") if path is not None else None

    def _load_world(self, carla: Any, client: Any, program: ScenarioProgram) -> Any:
        world = self._call("get_world", client.get_world)
        if _GENERATED.get(self.settings.address) == (world.id, program.map_name):
            return world  # the paired runner's second rollout: the world generated for the first
        current = self._call("get_map", world.get_map).name
        available = self._call("get_available_maps", client.get_available_maps)
        xodr = self._opendrive(program.map_name)
        plan = logic.world_plan(program.map_name, current, available, xodr is not None, self.settings.address)
        if plan.action == "keep":
            return world
        slow = self.settings.timeout_s * logic.LOAD_TIMEOUT_FACTOR
        client.set_timeout(slow)
        try:
            if plan.action == "load":
                world = self._call(f"load_world({plan.town})", client.load_world, plan.town, False, timeout_s=slow)
            else:
                assert xodr is not None
                params = carla.OpendriveGenerationParameters()
                world = self._call(f"generate_opendrive_world({program.map_name})", client.generate_opendrive_world,
                                   xodr, params, False, timeout_s=slow)
                _GENERATED[self.settings.address] = (world.id, program.map_name)
                log.info("generated a CARLA world from %s (sha256 %s)", program.map_name,
                         hashlib.sha256(xodr.encode("utf-8")).hexdigest()[:12])
        finally:
            client.set_timeout(self.settings.timeout_s)
        return world

    # --- the plant ------------------------------------------------------------------------------

    def start(self, program: ScenarioProgram, rollout: str, driven: Sequence[str]) -> Mapping[str, VehicleReading]:
        carla = _carla()
        self._reset()
        self._dt_s = program.dt_s
        try:
            client = self._connect(carla)
            world = self._world = self._load_world(carla, client, program)
            self._map = self._call("get_map", world.get_map)
            self._original_settings = world.get_settings()
            settings = world.get_settings()
            for key, value in logic.world_settings_for(program.dt_s).items():
                setattr(settings, key, value)
            self._call("apply_settings", world.apply_settings, settings)
            self._setup_lights(world, program)
            self._spawn(carla, world, program)
            self._readings = {v.id: logic.start_reading(v) for v in program.vehicles}
            return dict(self._readings)
        except RuntimeError as exc:  # a carla call not made through _call
            self.close()
            raise self._server_error(f"starting the {rollout} rollout", exc) from None
        except BaseException:
            self.close()
            raise

    def _setup_lights(self, world: Any, program: ScenarioProgram) -> None:
        sites = []
        for light in world.get_actors().filter("traffic.traffic_light"):
            self._lights[light.id] = light
            self._light_restore.append((light, light.get_state(), light.is_frozen()))
            light.freeze(True)
            points = light.get_stop_waypoints() or light.get_affected_lane_waypoints()
            sites.append(logic.LightSite(light.id, tuple(
                (*logic.from_carla_xy(wp.transform.location.x, wp.transform.location.y),
                 logic.from_carla_yaw_deg(wp.transform.rotation.yaw)) for wp in points)))
        match = logic.match_lights(sites, logic.bar_sites(program))
        if match.unmatched_groups:
            raise FailedPrecondition(
                f"no traffic light of the CARLA world {self._map.name!r} stops the program's signal group(s) "
                f"{', '.join(match.unmatched_groups)} at their stop bars (within {logic.LIGHT_MATCH_RADIUS_M:g} m): "
                "the world is not the program's map", "ground the scenario on the town the server runs")
        self._light_groups = match.groups

    def _spawn(self, carla: Any, world: Any, program: ScenarioProgram) -> None:
        library = world.get_blueprint_library()
        chosen = logic.choose_blueprints(program, [bp.id for bp in library.filter("vehicle.*")])
        cmap = self._map
        batch = []
        for v in program.vehicles:
            bp = library.find(chosen[v.id])
            if bp.has_attribute("role_name"):
                bp.set_attribute("role_name", "hero" if v.id == program.ego.id else v.id)
            x, y, yaw = logic.spawn_pose(v)
            wp = cmap.get_waypoint(carla.Location(x=x, y=y, z=0.0))
            z = (wp.transform.location.z if wp is not None else 0.0) + logic.SPAWN_Z_OFFSET_M
            transform = carla.Transform(carla.Location(x=x, y=y, z=z), carla.Rotation(pitch=0.0, yaw=yaw, roll=0.0))
            actor = world.try_spawn_actor(bp, transform)
            if actor is None:
                raise FailedPrecondition(f"CARLA could not spawn {v.id!r} ({chosen[v.id]}) at x={x:.1f}, y={y:.1f} "
                                         f"(CARLA frame): something occupies its start",
                                         "move the vehicle's start, or clear the world of other actors")
            self._actors[v.id] = actor
            box = actor.bounding_box.location
            self._offsets[v.id] = (box.x, box.y)
            if abs(box.x) > 0.01 or abs(box.y) > 0.01:  # put the body's centre, not its origin, on the start
                ox, oy = logic.origin_for_centre((x, y), yaw, (box.x, box.y))
                actor.set_transform(carla.Transform(carla.Location(x=ox, y=oy, z=z), transform.rotation))
            self._tracks[v.id] = logic.Track.of(v)
            self._s[v.id] = v.start_s_m
            self._lengths[v.id] = v.length_m
            start = logic.start_reading(v)
            batch.append(carla.command.ApplyTargetVelocity(
                actor.id, carla.Vector3D(*logic.to_carla_velocity(v.initial_speed_mps, start.heading_rad))))
        self._call("apply_batch_sync(initial velocities)", self._client.apply_batch_sync, batch, False)

    def tick(self, command: TickCommand) -> Mapping[str, VehicleReading]:
        carla = _carla()
        world = self._world
        assert world is not None, "tick before start"
        try:
            states = logic.light_states(self._lights, self._light_groups, command.group_phases)
            for lid, state in logic.changed(self._light_state, states).items():
                self._lights[lid].set_state(getattr(carla.TrafficLightState, state))
            self._light_state = states
            batch = []
            for vid, speed in command.speeds_mps.items():
                actor, reading = self._actors.get(vid), self._readings.get(vid)
                if actor is None or reading is None or not reading.present:
                    continue
                drive = logic.drive_command(self._tracks[vid], self._s[vid], reading, speed, self._dt_s,
                                            self._vz.get(vid, 0.0))
                self._s[vid] = drive.s_m
                batch.append(carla.command.ApplyTargetVelocity(actor.id, carla.Vector3D(*drive.velocity)))
                batch.append(carla.command.ApplyTargetAngularVelocity(
                    actor.id, carla.Vector3D(0.0, 0.0, drive.yaw_rate_deg_s)))
            self._call("apply_batch_sync(target velocities)", self._client.apply_batch_sync, batch, False)
            self._call(f"tick at step {command.step}", world.tick)
            self._readings = self._read()
            self._retire(carla)
            return dict(self._readings)
        except RuntimeError as exc:
            self.close()
            raise self._server_error(f"step {command.step}", exc) from None
        except BaseException:
            self.close()
            raise

    def _retire(self, carla: Any) -> None:
        """Destroy the actors whose vehicles reached their route's end; they read as absent from now on."""
        done = []
        for vid, reading in self._readings.items():
            if vid in self._gone or not reading.present:
                continue
            track = self._tracks[vid]
            s = track.locate(reading.xy_m, self._s[vid] - logic.LOCATE_BEHIND_M,
                             self._s[vid] + reading.speed_mps * self._dt_s + logic.LOCATE_AHEAD_M)
            if logic.arrived(track, s, self._lengths[vid]):
                done.append(vid)
        if done:
            self._call("apply_batch_sync(destroy arrived)", self._client.apply_batch_sync,
                       [carla.command.DestroyActor(self._actors[vid].id) for vid in done], False)
            for vid in done:
                self._gone.add(vid)
                self._readings[vid] = VehicleReading(self._readings[vid].xy_m, self._readings[vid].heading_rad,
                                                     0.0, present=False)

    def _read(self) -> dict[str, VehicleReading]:
        out: dict[str, VehicleReading] = {}
        for vid, actor in self._actors.items():
            if vid in self._gone:
                out[vid] = self._readings[vid]
                continue
            transform, velocity = actor.get_transform(), actor.get_velocity()
            loc = transform.location
            self._vz[vid] = velocity.z
            out[vid] = logic.reading_from_carla((loc.x, loc.y, loc.z), transform.rotation.yaw,
                                                (velocity.x, velocity.y, velocity.z), self._offsets[vid],
                                                present=actor.is_alive)
        return out

    def close(self) -> None:
        """Destroy what this rollout spawned, give the lights and the world their settings back.
        Never raises (it runs on error paths); what it could not undo is logged and kept in
        :attr:`cleanup_failures`."""
        self.cleanup_failures = []
        carla = None
        try:
            carla = _carla()
        except ImportError:
            pass
        world, client = self._world, self._client
        steps: list[tuple[str, Callable[[], object]]] = []
        ids = [actor.id for vid, actor in self._actors.items() if vid not in self._gone]
        if client is not None and carla is not None and ids:
            steps.append((f"destroy actors {ids}", lambda: client.apply_batch_sync(
                [carla.command.DestroyActor(i) for i in ids], False)))
        for light, state, frozen in self._light_restore:
            steps.append((f"restore light {light.id}", lambda light=light, state=state, frozen=frozen: (
                light.set_state(state), light.freeze(frozen))))
        if world is not None and self._original_settings is not None:
            original = self._original_settings
            steps.append(("restore world settings", lambda: world.apply_settings(original)))
        gone = False
        for what, step in steps:
            if gone:  # the server stopped answering: each further step would wait out the time-out too
                self.cleanup_failures.append(f"{what}: skipped, the server no longer answers")
                continue
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - a cleanup step must not stop the next one
                self.cleanup_failures.append(f"{what}: {exc}")
                gone = "time-out" in str(exc)
        if self.cleanup_failures:
            log.warning("CARLA cleanup at %s left: %s", self.settings.address, "; ".join(self.cleanup_failures))
        self._reset()
        self._world = None


__all__ = ["CarlaPlant"]
