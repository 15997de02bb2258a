"""Simulator backends: what moves the vehicles under our V2X stack, applications and adjudication.

The builtin traffic core (services/simulator/traffic.py) is both the controller and the plant: it
decides every vehicle's acceleration and integrates it. Another simulator is a **plant**: the
builtin core still decides, for the vehicles we drive (the ego, scripted agents, and every vehicle
on plants without a traffic model of their own), the speed each should have at the end of the
step; the plant applies those speeds, sets the signal heads from our fixed-time plan, advances one
step with its own dynamics and junction model, and says where every vehicle really is. The
paired runner maps those readings back onto the program's routes and goes on from there
(:func:`services.simulator.paired.execute_paired` with ``backend=``).

A plant runs one rollout at a time (``start`` ... ``tick`` ... ``close``): the two rollouts of a
paired execution run one after the other on the same world, as a CARLA server or a libsumo
process (one simulation per process) need.

Registry: :data:`BACKENDS` names each backend; :func:`open_plant` builds one by name, with a
clear error naming the missing extra. ``builtin`` has no plant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lastv2x.core.errors import FailedPrecondition, FieldViolation, InvalidArgument
from services.simulator.backends.plant import Plant, PlantOptions, TickCommand, VehicleReading

BUILTIN = "builtin"


@dataclass(frozen=True)
class BackendInfo:
    name: str
    extra: str  # the pyproject extra that brings its packages
    summary: str
    factory: Callable[[PlantOptions], Plant] | None  # None: the builtin core moves the vehicles itself


def _sumo(options: PlantOptions) -> Plant:
    from services.simulator.backends.sumo_plant import SumoPlant

    return SumoPlant()


def _carla(options: PlantOptions) -> Plant:
    from services.simulator.backends.carla_plant import CarlaPlant

    return CarlaPlant(options.carla, options.map_paths)


BACKENDS: dict[str, BackendInfo] = {
    BUILTIN: BackendInfo(BUILTIN, "", "the builtin batched traffic core (default; the search runs on it)", None),
    "sumo": BackendInfo("sumo", "sumo", "SUMO through libsumo: netconvert network of the program, Krauss "
                        "background traffic, our controllers drive the ego and scripted agents", _sumo),
    "carla": BackendInfo("carla", "carla", "a CARLA 0.9.16 server (LASTV2X_CARLA_HOST:PORT), synchronous mode, "
                         "our controllers drive every vehicle", _carla),
}


def backend_info(name: str) -> BackendInfo:
    name = name or BUILTIN
    info = BACKENDS.get(name)
    if info is None:
        raise InvalidArgument(FieldViolation("backend", f"unknown simulator backend {name!r}",
                                             f"one of {', '.join(sorted(BACKENDS))}"))
    return info


def open_plant(name: str, options: PlantOptions | None = None) -> Plant | None:
    """A fresh plant of backend ``name`` (None for ``builtin``) on the simulator's ``options``; a
    missing package is a clear error."""
    info = backend_info(name)
    if info.factory is None:
        return None
    try:
        return info.factory(options or PlantOptions())
    except ImportError as exc:
        raise FailedPrecondition(f"simulator backend {info.name!r} needs the {info.extra!r} extra: {exc}",
                                 f"pip install 'lastv2x[{info.extra}]'") from None


__all__ = ["BACKENDS", "BUILTIN", "BackendInfo", "Plant", "PlantOptions", "TickCommand", "VehicleReading",
           "backend_info", "open_plant"]
