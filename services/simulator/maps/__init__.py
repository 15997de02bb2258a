"""Road-map layer: OpenDRIVE -> typed lanes, junctions, movements, conflicts, signals.

``load_map(name_or_path)`` is the door: a built-in map name (generated
OpenDRIVE, no data needed) or a path to any ``.xodr`` (CARLA towns, esmini
roads) with an optional ``<stem>.buildings.json`` sidecar (without one, footprints are
derived from the roads: ``derived.py``); ``load_named`` resolves a map as a request names it
(built-in, or a stem under ``LASTV2X_MAP_PATHS``) with the ``LASTV2X_MAP_*`` settings. Only
``opendrive.py`` touches carla (imported on first parse); the model is numpy.
"""

from services.simulator.maps.builtin import (
    builtin_files,
    builtin_map_names,
    builtin_sources,
    default_cache_dir,
    find_named,
    load_builtin,
    load_map,
    load_named,
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
from services.simulator.maps.settings import MapSettings, fingerprint_variant
from services.simulator.maps.xodr_facts import Limits

__all__ = [
    "Approach", "Building", "ConflictPoint", "Junction", "Lane", "Limits", "LoadOptions",
    "MapError", "MapSettings", "Movement", "RoadMap", "Route", "SignalGroup", "StopBar", "Turn",
    "builtin_files", "builtin_map_names", "builtin_sources", "classify_turn",
    "default_cache_dir", "find_named", "fingerprint_variant", "load_builtin", "load_map", "load_named", "load_xodr",
]
