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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from lastv2x.core.errors import FailedPrecondition, FieldViolation, InvalidArgument
from lastv2x.core.program import ScenarioProgram

BUILTIN = "builtin"


@dataclass(frozen=True, slots=True)
class VehicleReading:
    """Where a plant says a vehicle is after a tick (the scenario plane: x east, y north, metres)."""

    xy_m: tuple[float, float]  # centre of the vehicle
    heading_rad: float  # CCW from +x
    speed_mps: float
    present: bool = True  # False: not (any more) in the simulation, e.g. arrived at its route's end


@dataclass(frozen=True, slots=True)
class TickCommand:
    """One step for a plant: the speeds our controllers want at its end, and the signal heads."""

    step: int  # the step the tick ends at (t_s = step * dt_s)
    t_s: float
    speeds_mps: Mapping[str, float]  # vehicle id -> speed at the end of the step (the vehicles we drive)
    group_phases: Mapping[str, str]  # signal group id -> "green" / "amber" / "red"


class Plant(Protocol):
    """A simulator that moves the vehicles (see the module docstring)."""

    name: str
    drives_background: bool  # True: background vehicles follow the plant's own traffic model

    def start(self, program: ScenarioProgram, rollout: str, driven: Sequence[str]) -> Mapping[str, VehicleReading]:
        """Load the map, spawn every program vehicle at its start, and return the readings at t = 0.
        ``driven``: the vehicles whose speed :meth:`tick` commands."""

    def tick(self, command: TickCommand) -> Mapping[str, VehicleReading]:
        """Apply the command, advance one step of ``program.dt_s``, return every vehicle's reading."""

    def close(self) -> None:
        """Remove what :meth:`start` made and restore the simulator's settings (also after an error)."""


@dataclass(frozen=True)
class BackendInfo:
    name: str
    extra: str  # the pyproject extra that brings its packages
    summary: str
    factory: Callable[[], Plant] | None  # None: the builtin core moves the vehicles itself


def _sumo() -> Plant:
    from services.simulator.backends.sumo_plant import SumoPlant

    return SumoPlant()


BACKENDS: dict[str, BackendInfo] = {
    BUILTIN: BackendInfo(BUILTIN, "", "the builtin batched traffic core (default; the search runs on it)", None),
    "sumo": BackendInfo("sumo", "sumo", "SUMO through libsumo: netconvert network of the program, Krauss "
                        "background traffic, our controllers drive the ego and scripted agents", _sumo),
}


def register(info: BackendInfo) -> None:
    """Add a backend (e.g. CARLA, from its module) to the registry."""
    BACKENDS[info.name] = info


def backend_info(name: str) -> BackendInfo:
    name = name or BUILTIN
    if name not in BACKENDS:
        _load_optional()
    info = BACKENDS.get(name)
    if info is None:
        raise InvalidArgument(FieldViolation("backend", f"unknown simulator backend {name!r}",
                                             f"one of {', '.join(sorted(BACKENDS))}"))
    return info


def open_plant(name: str) -> Plant | None:
    """A fresh plant of backend ``name`` (None for ``builtin``); a missing package is a clear error."""
    info = backend_info(name)
    if info.factory is None:
        return None
    try:
        return info.factory()
    except ImportError as exc:
        raise FailedPrecondition(f"simulator backend {info.name!r} needs the {info.extra!r} extra: {exc}",
                                 f"pip install 'lastv2x[{info.extra}]'") from None


def _load_optional() -> None:
    """Backends that register themselves on import (kept out of the import path of the builtin)."""
    import importlib

    for module in ("services.simulator.backends.carla_plant",):
        try:
            importlib.import_module(module)
        except ImportError:
            pass


__all__ = ["BACKENDS", "BUILTIN", "BackendInfo", "Plant", "TickCommand", "VehicleReading", "backend_info",
           "open_plant", "register"]
