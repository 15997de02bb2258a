"""The CARLA adapter (services/simulator/backends/carla_plant.py) against the installed carla module,
without a server: every carla attribute it names exists, a server that does not answer is
UNAVAILABLE within the timeout, and (only with ``CARLA_HOST`` set) a live run on a real server."""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.errors import FailedPrecondition, Unavailable
from lastv2x.core.spec import MapQuery
from services.simulator.backends import carla_logic as logic
from services.simulator.backends.base import BACKENDS, backend_info
from services.simulator.reference import reference_program

carla = pytest.importorskip("carla", reason="the carla extra is not installed")
ADAPTER = Path(__file__).resolve().parents[3] / "services" / "simulator" / "backends" / "carla_plant.py"
REPO = ADAPTER.parents[3]

# What the adapter's variables hold (the names it uses for carla objects) -> the carla class.
RECEIVERS = {
    "client": carla.Client, "self._client": carla.Client, "world": carla.World, "self._world": carla.World,
    "cmap": carla.Map, "self._map": carla.Map, "light": carla.TrafficLight, "actor": carla.Vehicle,
    "library": carla.BlueprintLibrary, "bp": carla.ActorBlueprint, "wp": carla.Waypoint,
    "settings": carla.WorldSettings, "transform": carla.Transform, "velocity": carla.Vector3D,
    "loc": carla.Location, "box": carla.Location, "params": carla.OpendriveGenerationParameters,
}
# Attribute chains below a receiver (``wp.transform.location.x``): (class, attribute) -> class.
CHAINS = {(carla.Waypoint, "transform"): carla.Transform, (carla.Transform, "location"): carla.Location,
          (carla.Transform, "rotation"): carla.Rotation, (carla.Vehicle, "bounding_box"): carla.BoundingBox,
          (carla.BoundingBox, "location"): carla.Location}
# The calls the brief names, each of which must appear in the adapter (so this list stays honest).
EXPECTED = {
    "carla.Client", "carla.Transform", "carla.Location", "carla.Rotation", "carla.Vector3D",
    "carla.TrafficLightState", "carla.OpendriveGenerationParameters", "carla.command.ApplyTargetVelocity",
    "carla.command.ApplyTargetAngularVelocity", "carla.command.DestroyActor",
    "Client.set_timeout", "Client.get_world", "Client.load_world", "Client.generate_opendrive_world",
    "Client.get_available_maps", "Client.get_server_version", "Client.get_client_version", "Client.apply_batch_sync",
    "World.get_settings", "World.apply_settings", "World.tick", "World.get_actors", "World.try_spawn_actor",
    "World.get_blueprint_library", "World.get_map", "World.id", "Map.name", "Map.get_waypoint",
    "TrafficLight.set_state", "TrafficLight.freeze", "TrafficLight.get_state", "TrafficLight.is_frozen",
    "TrafficLight.get_stop_waypoints", "TrafficLight.get_affected_lane_waypoints",
    "Vehicle.get_transform", "Vehicle.get_velocity", "Vehicle.is_alive", "Vehicle.bounding_box", "Vehicle.id",
    "Vehicle.set_transform",
    "BlueprintLibrary.filter", "BlueprintLibrary.find", "ActorBlueprint.has_attribute", "ActorBlueprint.set_attribute",
    "ActorBlueprint.id", "Waypoint.transform", "Transform.location", "Transform.rotation", "Rotation.yaw",
}


def _chain(node: ast.AST) -> list[str] | None:
    """``a.b.c`` -> ['a', 'b', 'c'] (``self._x.y`` -> ['self._x', 'y']); None for anything else."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    names.reverse()
    return ([f"self.{names[1]}"] + names[2:]) if names[0] == "self" and len(names) > 1 else names


def used_surface(source: str | None = None) -> tuple[set[str], list[str]]:
    """Every carla attribute the adapter names, checked against the installed module: (names, missing)."""
    used: set[str] = set()
    missing: list[str] = []
    tree = ast.parse(ADAPTER.read_text() if source is None else source)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):  # (prefixes of a chain are visited too: checked twice, harmless)
            continue
        chain = _chain(node)
        if not chain:
            continue
        if chain[0] == "carla":
            obj: object = carla
            for i, name in enumerate(chain[1:], 1):
                if not hasattr(obj, name):
                    missing.append(".".join(chain[: i + 1]))
                    break
                obj = getattr(obj, name)
                used.add(".".join(chain[: i + 1]))
        elif chain[0] in RECEIVERS:
            kind = RECEIVERS[chain[0]]
            for name in chain[1:]:
                if kind is None:
                    break
                if not hasattr(kind, name):
                    missing.append(f"{kind.__name__}.{name}")
                    break
                used.add(f"{kind.__name__}.{name}")
                kind = CHAINS.get((kind, name)) or (carla.Location if kind is carla.Location else None)
    return used, missing


def test_every_carla_attribute_the_adapter_uses_exists() -> None:
    used, missing = used_surface()
    assert missing == []
    assert EXPECTED - used == set(), "named here but no longer used by the adapter: update EXPECTED"
    # the check itself catches a slip
    _, slips = used_surface("def f(self, wp):\n    self._client.get_wrold()\n    carla.TrafficLightState.Amber\n"
                            "    wp.transform.location.q\n")
    assert sorted(slips) == ["Client.get_wrold", "Location.q", "carla.TrafficLightState.Amber"]


def test_the_adapter_builds_carla_values_the_way_the_module_accepts() -> None:
    """The constructors and enum names the adapter uses, called as it calls them."""
    t = carla.Transform(carla.Location(x=1.0, y=2.0, z=0.3), carla.Rotation(pitch=0.0, yaw=-90.0, roll=0.0))
    assert t.rotation.yaw == pytest.approx(-90.0)
    assert carla.command.ApplyTargetVelocity(7, carla.Vector3D(*logic.to_carla_velocity(3.0, 0.5))) is not None
    assert carla.command.ApplyTargetAngularVelocity(7, carla.Vector3D(0.0, 0.0, 12.0)) is not None
    assert carla.command.DestroyActor(7) is not None
    assert carla.OpendriveGenerationParameters() is not None
    assert hasattr(carla.ActorList, "filter")  # world.get_actors().filter(...): a call's result, not a name
    for name in (*logic.CARLA_STATE.values(), logic.UNMATCHED_LIGHT_STATE):
        assert getattr(carla.TrafficLightState, name) in carla.TrafficLightState.values.values()
    settings = carla.WorldSettings()
    for key, value in logic.world_settings_for(0.05).items():
        setattr(settings, key, value)
    assert settings.synchronous_mode and settings.no_rendering_mode


def test_carla_is_imported_only_inside_functions() -> None:
    """Importing the adapter imports no carla: the plant imports it when built (a missing extra is an
    ImportError there, which base.open_plant turns into a clear error)."""
    tree = ast.parse(ADAPTER.read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert not any("carla" == a.name.split(".")[0] for n in top if isinstance(n, ast.Import) for a in n.names)
    assert not any((n.module or "").split(".")[0] == "carla" for n in top if isinstance(n, ast.ImportFrom))


def test_registered_and_without_the_extra_a_clear_error() -> None:
    assert backend_info("carla").extra == "carla" and "carla" in BACKENDS
    code = ("import sys; sys.modules['carla'] = None\n"
            "from lastv2x.core.errors import FailedPrecondition\n"
            "from services.simulator.backends.base import open_plant\n"
            "try:\n    open_plant('carla')\nexcept FailedPrecondition as e:\n    print('REFUSED', e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "REFUSED" in out.stdout and "'carla' extra" in out.stdout, out.stderr


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_that_does_not_answer_is_unavailable_within_the_timeout() -> None:
    from services.simulator.backends.carla_plant import CarlaPlant

    program = reference_program(Application.RLVW, seed=1)
    port = _closed_port()
    plant = CarlaPlant(logic.CarlaSettings("127.0.0.1", port, 0.5))
    t0 = time.monotonic()
    with pytest.raises(Unavailable, match=rf"127\.0\.0\.1:{port} did not answer .* within 0\.5 s"):
        plant.start(program, "md", [v.id for v in program.vehicles])
    assert time.monotonic() - t0 < 10.0  # a hang guard, not a speed target: the time-out is 0.5 s
    plant.close()  # nothing was made: closing again is harmless
    assert plant.cleanup_failures == []
    with socket.socket() as silent:  # accepts the connection, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        plant = CarlaPlant(logic.CarlaSettings("127.0.0.1", silent.getsockname()[1], 0.5))
        with pytest.raises(Unavailable, match="within 0.5 s"):
            plant.start(program, "md", [])


def test_the_paired_runner_reports_the_unreachable_server() -> None:
    """Through the registry and the service's settings, as the service runs it: LASTV2X_CARLA_*
    read once into SimulatorLimits, handed to the plant."""
    from services.simulator.execute import SimulatorLimits, run_one

    port = _closed_port()
    limits = SimulatorLimits.from_env({"LASTV2X_CARLA_HOST": "127.0.0.1", "LASTV2X_CARLA_PORT": str(port),
                                       "LASTV2X_CARLA_TIMEOUT_S": "0.4"})
    with pytest.raises(Unavailable, match=rf"127\.0\.0\.1:{port}.*0\.4 s"):
        run_one(reference_program(Application.FCW, seed=1), None, limits, backend="carla")


CARLA_HOST = os.environ.get("CARLA_HOST", "")


@pytest.mark.skipif(not CARLA_HOST, reason="live CARLA test: set CARLA_HOST (and CARLA_PORT, default 2000) to a "
                    "CARLA 0.9.16 server; none can run on this machine")
def test_live_paired_execution_on_a_carla_server(tmp_path: Path, shared_data: Path) -> None:
    """On a real server: a program grounded on Town01 runs both rollouts; afterwards no actor of ours
    is left and the world's settings are what they were."""
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue
    from services.grounding.ground import Grounder
    from services.grounding.index import RetrievalIndex
    from services.simulator.backends.carla_plant import CarlaPlant
    from services.simulator.paired import execute_paired
    from services.simulator.reference import reference_spec

    settings = logic.CarlaSettings(CARLA_HOST, int(os.environ.get("CARLA_PORT", "2000")), 60.0)
    town = shared_data / "opendrive" / "carla" / "Town01.xodr"
    catalogue = MapCatalogue(CatalogueConfig(cache_dir=tmp_path / "c", include_builtins=False, map_paths=(town,),
                                             map_cache_dir=tmp_path / "m"))
    program = Grounder(catalogue, RetrievalIndex(catalogue)).ground(
        reference_spec(Application.RLVW, seed=1).model_copy(update={"map": MapQuery(town="Town01")}))
    client = carla.Client(settings.host, settings.port)
    client.set_timeout(settings.timeout_s)
    before = client.get_world().get_settings()
    vehicles_before = len(client.get_world().get_actors().filter("vehicle.*"))

    plant = CarlaPlant(settings)
    readings = plant.start(program, "gt", [v.id for v in program.vehicles])
    assert set(readings) == {v.id for v in program.vehicles}
    from services.simulator.backends.base import TickCommand

    for k in range(1, 41):
        out = plant.tick(TickCommand(k, k * program.dt_s, {v.id: v.initial_speed_mps for v in program.vehicles},
                                     {g.id: "red" for g in program.signal_groups}))
    ego = out[program.ego.id]
    assert ego.present and abs(ego.speed_mps - program.ego.initial_speed_mps) < 1.0
    moved = logic.Track.of(program.ego).locate(ego.xy_m) - program.ego.start_s_m
    assert abs(moved - 40 * program.dt_s * program.ego.initial_speed_mps) < 2.0
    plant.close()
    assert plant.cleanup_failures == []
    world = client.get_world()
    assert len(world.get_actors().filter("vehicle.*")) == vehicles_before
    after = world.get_settings()
    assert (after.synchronous_mode, after.fixed_delta_seconds, after.no_rendering_mode) == (
        before.synchronous_mode, before.fixed_delta_seconds, before.no_rendering_mode)

    import dataclasses

    from services.simulator.backends.plant import PlantOptions

    outcome = execute_paired(program, backend="carla", plant_options=PlantOptions(carla=settings))
    assert dataclasses.asdict(outcome) and not outcome.gt.failed
    with pytest.raises(FailedPrecondition, match="has no town"):
        CarlaPlant(settings).start(program.model_copy(update={"map_name": "NoSuchTown"}), "gt", [])
