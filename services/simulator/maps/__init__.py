"""Road-map layer: OpenDRIVE -> typed lanes, junctions, movements, conflicts, signals.

``load_map(name_or_path)`` is the door: a built-in map name (generated
OpenDRIVE, no data needed) or a path to any ``.xodr`` (CARLA towns, esmini
roads) with an optional ``<stem>.buildings.json`` sidecar. Only
``opendrive.py`` touches carla (imported on first parse); the model is numpy.
"""

from services.simulator.maps.builtin import (
    builtin_files,
    builtin_map_names,
    builtin_sources,
    default_cache_dir,
    load_builtin,
    load_map,
)
from services.simulator.maps.errors import MapError
from services.simulator.maps.model import (
    Approach,
    Building,
    ConflictPoint,
    Junction,
    Lane,
    Movement,
    RoadMap,
    Route,
    SignalGroup,
    StopBar,
    Turn,
    classify_turn,
)
from services.simulator.maps.opendrive import LoadOptions, load_xodr
from services.simulator.maps.xodr_facts import Limits

__all__ = [
    "Approach", "Building", "ConflictPoint", "Junction", "Lane", "Limits", "LoadOptions",
    "MapError", "Movement", "RoadMap", "Route", "SignalGroup", "StopBar", "Turn",
    "builtin_files", "builtin_map_names", "builtin_sources", "classify_turn",
    "default_cache_dir", "load_builtin", "load_map", "load_xodr",
]
