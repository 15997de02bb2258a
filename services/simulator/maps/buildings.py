"""Building footprints: JSON sidecar format, block filling, containment tests.

Sidecar ``<stem>.buildings.json`` next to ``<stem>.xodr``::

    {"schema": "lastv2x.buildings/1", "map": "urban_canyon",
     "buildings": [{"id": "b0", "height_m": 42.0,
                    "footprint": [[x, y], ...]}]}

Footprints are polygons in the map's OpenDRIVE frame (metres, counter-clockwise,
not closed). The channel model uses them for building blockage.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from services.simulator.maps.errors import MapError
from services.simulator.maps.model import Building

SCHEMA = "lastv2x.buildings/1"
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_BUILDINGS = 100_000


def buildings_to_json(map_name: str, buildings: Sequence[Building]) -> bytes:
    """Canonical JSON (sorted keys, millimetre rounding): stable bytes for hashing."""
    doc = {"schema": SCHEMA, "map": map_name, "buildings": [
        {"id": b.id, "height_m": round(float(b.height_m), 3),
         "footprint": [[round(float(x), 3), round(float(y), 3)] for x, y in b.footprint]}
        for b in buildings]}
    return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def buildings_from_json(data: bytes | str, name: str) -> tuple[Building, ...]:
    """Parse a sidecar; any malformed content raises ``MapError(name, reason)``."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_JSON_BYTES:
        raise MapError(name, f"buildings JSON over the cap of {MAX_JSON_BYTES} bytes")
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MapError(name, f"buildings JSON is not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise MapError(name, f"buildings JSON must be an object with schema {SCHEMA!r}")
    items = doc.get("buildings")
    if not isinstance(items, list) or len(items) > MAX_BUILDINGS:
        raise MapError(name, f"'buildings' must be a list of at most {MAX_BUILDINGS}")
    out = []
    for k, item in enumerate(items):
        try:
            out.append(Building(id=str(item.get("id", f"b{k}")),
                                footprint=np.asarray(item["footprint"], dtype=np.float64),
                                height_m=float(item["height_m"])))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise MapError(name, f"building #{k} is malformed ({exc})") from None
    return tuple(out)


def rectangle(x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    """Counter-clockwise axis-aligned rectangle."""
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float64)


def fill_block(rng: np.random.Generator, x0: float, y0: float, x1: float, y1: float, *,
               nx: int, ny: int, alley_m: float, heights_m: tuple[float, float],
               prefix: str) -> list[Building]:
    """Split a block into an nx x ny grid of buildings separated by alleys."""
    if x1 - x0 <= alley_m * nx or y1 - y0 <= alley_m * ny:
        return []
    xs = np.linspace(x0, x1, nx + 1)
    ys = np.linspace(y0, y1, ny + 1)
    out = []
    for i in range(nx):
        for j in range(ny):
            h = float(np.round(rng.uniform(*heights_m), 1))
            fp = rectangle(xs[i] + (alley_m / 2 if i else 0.0), ys[j] + (alley_m / 2 if j else 0.0),
                           xs[i + 1] - (alley_m / 2 if i < nx - 1 else 0.0),
                           ys[j + 1] - (alley_m / 2 if j < ny - 1 else 0.0))
            out.append(Building(f"{prefix}{len(out)}", fp, h))
    return out


def points_in_polygon(points: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """Even-odd rule, vectorized over points: (K,) bool."""
    p = np.atleast_2d(points)
    x, y = p[:, 0:1], p[:, 1:2]
    a = polygon
    b = np.roll(polygon, -1, axis=0)
    cond = (a[None, :, 1] > y) != (b[None, :, 1] > y)
    dy = np.where(b[:, 1] - a[:, 1] == 0, 1e-12, b[:, 1] - a[:, 1])
    x_cross = a[None, :, 0] + (y - a[None, :, 1]) * (b[None, :, 0] - a[None, :, 0]) / dy[None]
    return (np.count_nonzero(cond & (x < x_cross), axis=1) % 2) == 1
