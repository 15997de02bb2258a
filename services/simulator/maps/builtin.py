"""Built-in maps the project generates itself as OpenDRIVE + a buildings sidecar.

A fresh machine needs no data: each map is an axis-aligned ``Layout`` written
by ``xodr_writer`` and parsed back through ``load_xodr`` (carla), with
deterministic building footprints (numpy RNG seeded from the map name).

* ``signalized_4way`` / ``signalized_4way_1lane``: one signalized 4-arm junction
  (2 resp. 1 lanes per direction), 12 movements, one signal group per approach;
* ``t_junction``: an unsignalized 3-arm junction (priority / stop control), 6
  movements;
* ``unsignalized_4way``: an all-way-stop 4-arm junction, 1 lane per direction,
  between 25-45 m buildings at the kerb (cross traffic is out of sight and
  out of radio line of sight: where IMA and LTA need V2X);
* ``corridor``: 5 signalized junctions 250 m apart on a 2+2-lane arterial with
  1+1-lane side streets (an RSU chain along the arterial);
* ``urban_canyon``: a 3 x 3 signalized grid, 160 m blocks, 30-90 m towers.

Without the carla extra the network is built natively from the same layout
(``native.py``); with it, the generated OpenDRIVE is parsed back by carla.
Generated files are cached as ``<cache>/<name>.v<GENERATOR_VERSION>.xodr`` with
the sibling ``.buildings.json`` (default cache ``~/.cache/lastv2x/maps``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from services.simulator.maps.assemble import assemble, content_hash, extend_hash
from services.simulator.maps.buildings import (
    MAX_JSON_BYTES,
    buildings_from_json,
    buildings_to_json,
    fill_block,
)
from services.simulator.maps.derived import SIDEWALK_M, derive_buildings
from services.simulator.maps.errors import MapError
from services.simulator.maps.model import Building, RoadMap
from services.simulator.maps.native import layout_network
from services.simulator.maps.opendrive import LoadOptions, load_xodr
from services.simulator.maps.settings import MapSettings
from services.simulator.maps.xodr_writer import Arm, Layout, write_xodr

GENERATOR_VERSION = 1
LANE_WIDTH_M = 3.5


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "lastv2x" / "maps"


@dataclass(frozen=True)
class BuiltinMap:
    name: str
    description: str
    build: Callable[[], tuple[Layout, list[Building]]]


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big"))


def _clear(lanes: int) -> float:
    return lanes * LANE_WIDTH_M + SIDEWALK_M


def _four_way(name: str, lanes: int, *, signalized: bool = True, far_m: float = 80.0, alley_m: float = 6.0,
              heights_m: tuple[float, float] = (12.0, 30.0)) -> tuple[Layout, list[Building]]:
    """One 4-arm junction with a 2 x 2 block of buildings in each corner, from the sidewalk to ``far_m``."""
    arms = tuple(Arm("c", d, lanes, None, 150.0) for d in "ENWS")
    layout = Layout(name, {"c": (0.0, 0.0)}, arms, frozenset({"c"}) if signalized else frozenset(), LANE_WIDTH_M)
    rng, c = _rng(name), _clear(lanes)
    out: list[Building] = []
    for sx, sy, tag in ((1, 1, "ne"), (-1, 1, "nw"), (-1, -1, "sw"), (1, -1, "se")):
        xs, ys = sorted((sx * c, sx * far_m)), sorted((sy * c, sy * far_m))
        out += fill_block(rng, xs[0], ys[0], xs[1], ys[1], nx=2, ny=2, alley_m=alley_m,
                          heights_m=heights_m, prefix=f"{tag}-")
    return layout, out


def signalized_4way() -> tuple[Layout, list[Building]]:
    return _four_way("signalized_4way", 2)


def signalized_4way_1lane() -> tuple[Layout, list[Building]]:
    return _four_way("signalized_4way_1lane", 1)


def unsignalized_4way() -> tuple[Layout, list[Building]]:
    """An all-way-stop crossroads between tall buildings: the four corner blocks reach the sidewalk
    and rise 25-45 m, so the junction's catalogue entry is tagged ``unsignalized_4way`` and
    ``urban_canyon`` (built-up share and mean height within 60 m of the centre)."""
    return _four_way("unsignalized_4way", 1, signalized=False, far_m=90.0, alley_m=4.0, heights_m=(25.0, 45.0))


def t_junction() -> tuple[Layout, list[Building]]:
    name = "t_junction"
    arms = (Arm("c", "E", 1, None, 150.0), Arm("c", "W", 1, None, 150.0),
            Arm("c", "S", 1, None, 150.0))
    layout = Layout(name, {"c": (0.0, 0.0)}, arms, frozenset(), LANE_WIDTH_M)
    rng, c = _rng(name), _clear(1)
    out = fill_block(rng, -120.0, c, 120.0, 60.0, nx=5, ny=1, alley_m=8.0,
                     heights_m=(6.0, 12.0), prefix="n-")
    out += fill_block(rng, c, -100.0, 100.0, -c, nx=2, ny=2, alley_m=6.0,
                      heights_m=(6.0, 12.0), prefix="se-")
    out += fill_block(rng, -100.0, -100.0, -c, -c, nx=2, ny=2, alley_m=6.0,
                      heights_m=(6.0, 12.0), prefix="sw-")
    return layout, out


def corridor(n_junctions: int = 5, spacing_m: float = 250.0) -> tuple[Layout, list[Building]]:
    name = "corridor"
    nodes = {f"n{i}": (i * spacing_m, 0.0) for i in range(n_junctions)}
    arms = [Arm("n0", "W", 2, None, 200.0), Arm(f"n{n_junctions - 1}", "E", 2, None, 200.0)]
    arms += [Arm(f"n{i}", "E", 2, f"n{i + 1}") for i in range(n_junctions - 1)]
    arms += [Arm(f"n{i}", d, 1, None, 120.0) for i in range(n_junctions) for d in "NS"]
    layout = Layout(name, nodes, tuple(arms), frozenset(nodes), LANE_WIDTH_M)
    rng, cm, cs = _rng(name), _clear(2), _clear(1)
    edges = [-200.0] + [x for i in range(n_junctions) for x in (i * spacing_m,) * 2]
    edges += [(n_junctions - 1) * spacing_m + 200.0]
    out: list[Building] = []
    for k in range(0, len(edges), 2):
        x0 = edges[k] + (cs if k else 0.0)
        x1 = edges[k + 1] - (cs if k + 1 < len(edges) - 1 else 0.0)
        nx = max(1, int((x1 - x0) // 55))
        for sy, tag in ((1, "n"), (-1, "s")):
            y0, y1 = sorted((sy * cm, sy * 60.0))
            out += fill_block(rng, x0, y0, x1, y1, nx=nx, ny=1, alley_m=12.0,
                              heights_m=(8.0, 20.0), prefix=f"{tag}{k // 2}-")
    return layout, out


def urban_canyon(n: int = 3, block_m: float = 160.0) -> tuple[Layout, list[Building]]:
    name = "urban_canyon"
    nodes = {f"g{i}{j}": (i * block_m, j * block_m) for i in range(n) for j in range(n)}
    arms = [Arm(f"g{i}{j}", "E", 1, f"g{i + 1}{j}") for i in range(n - 1) for j in range(n)]
    arms += [Arm(f"g{i}{j}", "N", 1, f"g{i}{j + 1}") for i in range(n) for j in range(n - 1)]
    stub = 120.0
    for k in range(n):
        arms += [Arm(f"g0{k}", "W", 1, None, stub), Arm(f"g{n - 1}{k}", "E", 1, None, stub),
                 Arm(f"g{k}0", "S", 1, None, stub), Arm(f"g{k}{n - 1}", "N", 1, None, stub)]
    layout = Layout(name, nodes, tuple(arms), frozenset(nodes), LANE_WIDTH_M)
    rng, c = _rng(name), _clear(1)
    lines = [-stub] + [k * block_m for k in range(n)] + [(n - 1) * block_m + stub]
    out: list[Building] = []
    for i in range(len(lines) - 1):
        for j in range(len(lines) - 1):
            x0 = lines[i] + (c if i else 0.0)
            x1 = lines[i + 1] - (c if i + 1 < len(lines) - 1 else 0.0)
            y0 = lines[j] + (c if j else 0.0)
            y1 = lines[j + 1] - (c if j + 1 < len(lines) - 1 else 0.0)
            out += fill_block(rng, x0, y0, x1, y1, nx=2, ny=2, alley_m=8.0,
                              heights_m=(30.0, 90.0), prefix=f"k{i}{j}-")
    return layout, out


_BUILTINS: dict[str, BuiltinMap] = {m.name: m for m in (
    BuiltinMap("signalized_4way", "signalized 4-way, 2 lanes per direction", signalized_4way),
    BuiltinMap("signalized_4way_1lane", "signalized 4-way, 1 lane per direction",
               signalized_4way_1lane),
    BuiltinMap("t_junction", "unsignalized T-junction, 1 lane per direction", t_junction),
    BuiltinMap("unsignalized_4way", "all-way-stop 4-way between tall buildings, 1 lane per direction",
               unsignalized_4way),
    BuiltinMap("corridor", "5 signalized junctions, 250 m apart", corridor),
    BuiltinMap("urban_canyon", "3x3 signalized grid with towers", urban_canyon),
)}


def builtin_map_names() -> tuple[str, ...]:
    return tuple(_BUILTINS)


def builtin_sources(name: str) -> tuple[str, bytes]:
    """(OpenDRIVE text, buildings JSON) of a built-in map, generated in memory."""
    spec = _BUILTINS.get(name)
    if spec is None:
        raise MapError(name, f"unknown built-in map (known: {', '.join(_BUILTINS)})")
    layout, buildings = spec.build()
    return write_xodr(layout), buildings_to_json(name, buildings)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def builtin_files(name: str, cache_dir: Path | str | None = None) -> Path:
    """Path of the cached ``.xodr`` (sidecar beside it), generating it if absent."""
    xodr, bjson = builtin_sources(name)  # validates the name; generation takes ~ms
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = root / f"{name}.v{GENERATOR_VERSION}.xodr"
    side = sidecar_path(path)
    root.mkdir(parents=True, exist_ok=True)
    for target, data in ((path, xodr.encode("utf-8")), (side, bjson)):
        if not target.is_file() or target.read_bytes() != data:
            _atomic_write(target, data)
    return path


def sidecar_path(xodr_path: Path) -> Path:
    return xodr_path.with_name(xodr_path.stem + ".buildings.json")


def carla_available() -> bool:
    return importlib.util.find_spec("carla") is not None


def load_builtin(name: str, *, cache_dir: Path | str | None = None,
                 options: LoadOptions | None = None, parser: str = "auto") -> RoadMap:
    """Generate (or reuse from the cache) and load a built-in map.

    ``parser``: ``"carla"`` parses the generated OpenDRIVE through ``load_xodr``
    (the path every user map takes); ``"native"`` builds the same network from
    the layout without carla; ``"auto"`` (default) uses carla when installed.
    Both give the same ids, movements, signal groups and ``content_sha256``.
    """
    if parser not in ("auto", "carla", "native"):
        raise MapError(name, f"unknown parser {parser!r} (auto, carla, native)")
    if parser == "native" or (parser == "auto" and not carla_available()):
        return _load_native(name, cache_dir, options or LoadOptions())
    try:
        path = builtin_files(name, cache_dir)
    except OSError:  # read-only or full cache: load from memory instead
        xodr, bjson = builtin_sources(name)
        return load_xodr(xodr, name, buildings=buildings_from_json(bjson, name),
                         buildings_json=bjson, options=options)
    return _load_path(path, name, options)


def _load_native(name: str, cache_dir: Path | str | None, options: LoadOptions) -> RoadMap:
    spec = _BUILTINS.get(name)
    if spec is None:
        raise MapError(name, f"unknown built-in map (known: {', '.join(_BUILTINS)})")
    layout, buildings = spec.build()
    xodr, bjson = write_xodr(layout), buildings_to_json(name, buildings)
    try:  # keep the files available (CARLA server, export) even without carla here
        path = builtin_files(name, cache_dir)
        source = str(path)
    except OSError:
        source = f"builtin:{name}"
    net = layout_network(layout, lane_spacing_m=options.lane_spacing_m,
                         connector_spacing_m=options.connector_spacing_m)
    return assemble(net, name, content_hash(xodr.encode("utf-8"), bjson),
                    buildings=buildings_from_json(bjson, name), source=source,
                    max_movements_per_lane=options.max_movements_per_lane)


def _load_path(path: Path, name: str | None, options: LoadOptions | None) -> RoadMap:
    opts = options or LoadOptions()
    side = sidecar_path(path)
    if side.is_file():
        if side.stat().st_size > MAX_JSON_BYTES:
            raise MapError(str(side), f"buildings JSON over the cap of {MAX_JSON_BYTES} bytes")
        bjson = side.read_bytes()
        return load_xodr(path, name, buildings=buildings_from_json(bjson, str(side)), buildings_json=bjson,
                         options=opts)
    road_map = load_xodr(path, name, options=opts)
    if not opts.generated_buildings:
        return road_map
    generated = derive_buildings(road_map, road_map.content_sha256.encode("ascii"))
    if not generated:
        return road_map
    return dataclasses.replace(road_map, buildings=generated, content_sha256=extend_hash(
        road_map.content_sha256, b"generated_buildings", buildings_to_json(road_map.name, generated)))


def load_map(name_or_path: str | os.PathLike[str], *, cache_dir: Path | str | None = None,
             options: LoadOptions | None = None, parser: str = "auto") -> RoadMap:
    """A built-in map by name, or a ``.xodr`` path (optional ``<stem>.buildings.json``; without
    one, footprints are derived from the roads unless ``options.generated_buildings`` is off).

    Paths always go through carla (``load_xodr``); ``parser`` applies to built-ins.
    """
    if isinstance(name_or_path, str) and name_or_path in _BUILTINS:
        return load_builtin(name_or_path, cache_dir=cache_dir, options=options, parser=parser)
    path = Path(name_or_path)
    if not path.is_file():
        raise MapError(str(name_or_path), "neither a built-in map "
                       f"({', '.join(_BUILTINS)}) nor an existing file")
    return _load_path(path, None, options)


def find_named(name: str, map_paths: Sequence[Path | str]) -> Path | None:
    """``<name>.xodr`` under the configured map paths (a directory holding it, or a configured
    file whose stem is ``name``); None when no path has it. Never a path the name spells."""
    for root in map_paths:
        root = Path(root)
        candidate = root if root.is_file() and root.stem == name else root / f"{name}.xodr"
        if candidate.is_file():
            return candidate
    return None


def load_named(name: str, map_paths: Sequence[Path | str] = (), settings: MapSettings | None = None, *,
               cache_dir: Path | str | None = None) -> RoadMap:
    """A map by name, as a request names it: a built-in, else ``<name>.xodr`` under ``map_paths``
    (``LASTV2X_MAP_PATHS``), loaded with ``settings`` (``LASTV2X_MAP_*``)."""
    if name in _BUILTINS:
        return load_builtin(name, cache_dir=cache_dir)
    found = find_named(name, map_paths) if "/" not in name and "\\" not in name else None
    if found is None:
        raise MapError(name, f"neither a built-in map ({', '.join(_BUILTINS)}) nor a map under the "
                       "configured map directories (LASTV2X_MAP_PATHS)")
    return _load_path(found, None, (settings or MapSettings()).load_options(name))
