"""What a simulator backend is (see base.py for the registry): a plant that moves the vehicles.

The builtin traffic core decides, for the vehicles we drive (the ego, scripted agents, and every
vehicle on plants without a traffic model of their own), the speed each should have at the end
of the step; a plant applies those speeds, sets the signal heads from our fixed-time plan, advances
one step with its own dynamics and junction model, and says where every vehicle really is
(:class:`VehicleReading`, in the scenario plane). One rollout at a time: ``start`` ... ``tick`` ...
``close``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lastv2x.core.program import ScenarioProgram


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
class PlantOptions:
    """What a plant takes from the simulator service's settings (``SimulatorLimits.plant_options``):
    plants read no environment of their own."""

    map_paths: tuple[Path, ...] = ()  # where user maps' .xodr are (LASTV2X_MAP_PATHS)
    carla: Any = None  # carla_logic.CarlaSettings (LASTV2X_CARLA_*); None = its defaults


__all__ = ["Plant", "PlantOptions", "TickCommand", "VehicleReading"]
