"""OpenDRIVE -> ``RoadMap`` through carla's offline parser (the only carla import).

``load_xodr`` guards the input (``xodr_facts.inspect_xodr``: size cap, XML,
no DTD/ENTITY, lanes present) *before* carla's C++ parser sees it, then uses
``carla.Map(name, text)`` without a server for geometry and topology:

* segments: every driving lane of every lane section in the XML (carla's
  ``get_topology()`` silently omits lanes that lead nowhere, e.g. the outbound
  lanes of a dead-end arm), with driving direction from the topology;
* edges: ``get_topology()`` successors, united with the lane links of the XML
  ``<junction>`` connections (carla misses esmini's two-way connecting roads);
* ``get_waypoint_xodr(road, lane, s)`` -> points every ``lane_spacing_m``
  (``connector_spacing_m`` inside junctions) over the segment's exact s range
  (from the XML), 1 mm inside each end; sections carla cannot sample (1e-8 m
  long) are bridged over, lanes of zero width dropped;
* ``waypoint.junction_id`` -> junctions, cross-checked with
  ``junction.get_waypoints(Driving)`` (entry/exit pairs = movement lanes);
* ``get_all_landmarks_of_type('1000001')`` + ``get_lane_validities()`` -> which
  lanes each traffic light controls (see ``_validity`` for a carla quirk).

CARLA's Unreal frame is left-handed; points are returned in the OpenDRIVE frame
(y = -carla_y, heading = -yaw). Anything surprising is reported in
``RoadMap.notes`` rather than dropped silently.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from services.simulator.maps.assemble import assemble
from services.simulator.maps.assemble import content_hash as _content_hash
from services.simulator.maps.derived import signalize_four_way
from services.simulator.maps.errors import MapError
from services.simulator.maps.geometry import sample_stations
from services.simulator.maps.model import Building, RoadMap
from services.simulator.maps.raw import RawNetwork, RawSegment, RawSignal
from services.simulator.maps.xodr_facts import Limits, XodrFacts, inspect_xodr

TRAFFIC_LIGHT_TYPE = "1000001"


@dataclass(frozen=True)
class LoadOptions:
    lane_spacing_m: float = 2.0
    connector_spacing_m: float = 1.0
    limits: Limits = field(default_factory=Limits)
    max_movements_per_lane: int = 256
    generated_buildings: bool = True  # no sidecar: derive footprints from the roads (maps.derived)
    signalize_4way: bool = False  # unsignalized 4-approach junctions get a group per approach

    def variant(self) -> bytes:
        """What of these options changes the map itself (part of its content hash)."""
        return b"signalize_4way/1" if self.signalize_4way else b""


def read_source(source: str | bytes | os.PathLike[str], name: str | None,
                limits: Limits) -> tuple[bytes | str, str, str]:
    """(data, name, source label) from a path, XML text or bytes; size-capped before reading.

    ``bytes`` are content and ``os.PathLike`` a path; a ``str`` is a path when it
    names an existing file or ends in ``.xodr`` (and does not start with '<'),
    otherwise it is the document text itself.
    """
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), name or "<bytes>", "bytes"
    if isinstance(source, str):
        short = len(source) < 4096 and "\n" not in source and not source.lstrip().startswith("<")
        if not (short and (source.endswith(".xodr") or os.path.isfile(source))):
            return source, name or "<text>", "text"
    path = Path(source)
    label = name or path.stem
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise MapError(label, f"cannot read {path}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise MapError(label, f"{path} is not a regular file")
    if size > limits.max_bytes:
        raise MapError(label, f"file is {size} bytes, over the cap of {limits.max_bytes}")
    with path.open("rb") as fh:
        data = fh.read(limits.max_bytes + 1)  # the file may grow after stat
    return data, label, str(path)


def _carla():
    # carla 0.9.16 segfaults on import when HOME is unset (seen with `env -i`);
    # give it one rather than take the whole service down.
    os.environ.setdefault("HOME", tempfile.gettempdir())
    try:
        import carla  # noqa: PLC0415 - optional extra, imported on first use
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MapError("carla", f"the 'carla' extra is required to parse OpenDRIVE ({exc})") \
            from None
    return carla


def _sample(cmap, key, s0: float, s1: float, forward: bool, spacing: float):
    road, _, lane = key
    svals = sample_stations(s0, s1, spacing)
    if not forward:
        svals = svals[::-1]
    xs, ys, hs, ws, first = [], [], [], [], None
    for s in svals:
        wp = cmap.get_waypoint_xodr(road, lane, float(s))
        if wp is None or wp.section_id != key[1]:
            continue
        tr = wp.transform
        if not (math.isfinite(tr.location.x) and math.isfinite(tr.location.y)
                and math.isfinite(tr.rotation.yaw)):
            continue
        first = first or wp
        xs.append(tr.location.x)
        ys.append(-tr.location.y)
        hs.append(-math.radians(tr.rotation.yaw))
        ws.append(wp.lane_width)
    return xs, ys, hs, ws, first


def _width(ws: list[float]) -> float:
    """Typical width: median where the lane exists (tapers start at zero width)."""
    arr = np.asarray(ws)
    wide = arr[arr > 0.01]
    return float(np.median(wide)) if wide.size else float(arr.max(initial=0.0))


def _splice(succ: dict, dropped: set) -> dict:
    """Bridge edges over dropped (e.g. 1e-8 m long) segments so paths stay connected."""
    def through(k, depth=0):
        if k not in dropped:
            return [k]
        if depth > 16:
            return []
        return [x for n in succ.get(k, ()) for x in through(n, depth + 1)]
    return {k: tuple(dict.fromkeys(x for n in vs for x in through(n))) for k, vs in succ.items()
            if k not in dropped}


def _validity(lm, facts: XodrFacts, carla) -> tuple[tuple[int, int], ...]:
    """carla's validity if the XML gives one; else from orientation (OpenDRIVE rule).

    carla's default for a signal without <validity> points the wrong way
    ('+' -> positive lanes); OpenDRIVE's '+' means traffic in +s, i.e. the right
    (negative) lanes under right-hand traffic.
    """
    if (str(lm.road_id), str(lm.id)) in facts.explicit_validity:
        return tuple((int(a), int(b)) for a, b in lm.get_lane_validities())
    if lm.orientation == carla.LandmarkOrientation.Positive:
        return ((-1000, -1),)
    if lm.orientation == carla.LandmarkOrientation.Negative:
        return ((1, 1000),)
    return ((-1000, 1000),)


def _network(cmap, facts: XodrFacts, opts: LoadOptions) -> tuple[RawNetwork, list[str]]:
    carla = _carla()
    notes: list[str] = []
    starts, succ = {}, {}
    for a, b in cmap.get_topology():
        ka = (a.road_id, a.section_id, a.lane_id)
        kb = (b.road_id, b.section_id, b.lane_id)
        starts.setdefault(ka, a)
        starts.setdefault(kb, b)  # dead-end lanes only ever appear as successors
        if kb != ka:
            succ.setdefault(ka, []).append(kb)
    n_topo = sum(len(v) for v in succ.values())
    for ka, kb in facts.junction_edges:
        if kb not in succ.setdefault(ka, []):
            succ[ka].append(kb)
    extra = sum(len(v) for v in succ.values()) - n_topo
    if extra:
        notes.append(f"{extra} junction lane link(s) taken from the XML (absent in carla)")
    # carla's topology omits lanes that lead nowhere (and lanes it failed to link):
    # every driving lane of the XML is a segment, the topology only adds edges.
    xml_lanes = [(int(r.id), i, lane) for r in facts.roads.values() if r.id.lstrip("-").isdigit()
                 for i, sec in enumerate(r.sections)
                 for lane, kind in sec.lane_types.items() if lane != 0 and kind == "driving"]
    keys = dict.fromkeys(list(starts) + xml_lanes + [k for e in facts.junction_edges for k in e])
    segments: dict = {}
    seen_junctions: set[int] = set()
    listed: set = set()
    dropped: set = set()
    zero_width = 0
    for key in keys:
        road = facts.roads.get(str(key[0]))
        if road is None or not 0 <= key[1] < len(road.sections):
            dropped.add(key)
            continue
        sec = road.sections[key[1]]
        wp = starts.get(key)
        forward = abs(wp.s - sec.s0) <= abs(wp.s - sec.s1) if wp is not None else key[2] < 0
        in_junction = road.junction != "-1" if wp is None else wp.is_junction
        spacing = opts.connector_spacing_m if in_junction else opts.lane_spacing_m
        xs, ys, hs, ws, first = _sample(cmap, key, sec.s0, sec.s1, forward, spacing)
        if len(xs) < 2:
            dropped.add(key)
            continue
        if max(ws) < 0.01:  # a zero-width placeholder lane is not drivable
            dropped.add(key)
            zero_width += 1
            continue
        jid = first.junction_id if first.is_junction else None
        if jid is not None and jid not in seen_junctions:
            seen_junctions.add(jid)
            for entry, _exit in first.get_junction().get_waypoints(carla.LaneType.Driving):
                listed.add((entry.road_id, entry.section_id, entry.lane_id))
        s_ref = sec.s0 if forward else sec.s1
        segments[key] = RawSegment(
            key=key, junction=jid, points=np.column_stack([xs, ys]), headings=np.array(hs),
            width_m=_width(ws), speed_limit_mps=road.speed_at(s_ref, key[2], key[1]),
            forward=forward, s_range=(sec.s0, sec.s1))
    if zero_width:
        notes.append(f"{zero_width} zero-width lane segment(s) dropped")
    if len(dropped) > zero_width:
        notes.append(f"{len(dropped) - zero_width} degenerate lane segment(s) bridged over")
    missing = [k for k, s in segments.items() if s.junction is not None and k not in listed]
    if missing:
        notes.append(f"{len(missing)} junction lane(s) not listed by junction.get_waypoints")
    successors = {k: tuple(v for v in vs if v in segments)
                  for k, vs in _splice(succ, dropped).items() if k in segments}
    signals = [RawSignal(str(lm.id), int(lm.road_id), float(lm.s), _validity(lm, facts, carla))
               for lm in cmap.get_all_landmarks_of_type(TRAFFIC_LIGHT_TYPE)]
    ranges = {int(r.id): [(s.s0, s.s1) for s in r.sections] for r in facts.roads.values()
              if r.id.lstrip("-").isdigit()}
    return RawNetwork(segments, successors, signals, ranges), notes


def load_xodr(source: str | bytes | os.PathLike[str], name: str | None = None, *,
              buildings: tuple[Building, ...] = (), buildings_json: bytes | None = None,
              options: LoadOptions | None = None) -> RoadMap:
    """Parse OpenDRIVE (a path, XML text or bytes) into a ``RoadMap``; raises ``MapError``."""
    opts = options or LoadOptions()
    if not (opts.lane_spacing_m > 0 and opts.connector_spacing_m > 0):
        raise MapError(name or "<map>", "sample spacings must be > 0")
    data, label, src = read_source(source, name, opts.limits)
    facts = inspect_xodr(data, label, opts.limits)
    carla = _carla()
    try:
        cmap = carla.Map(label, facts.text)
    except Exception as exc:  # carla raises RuntimeError with the parser's message
        raise MapError(label, f"carla could not parse the OpenDRIVE: {exc}") from None
    net, notes = _network(cmap, facts, opts)
    sha = _content_hash(facts.text.encode("utf-8"), buildings_json, opts.variant())
    try:
        road_map = assemble(net, label, sha, buildings=buildings, source=src,
                            max_movements_per_lane=opts.max_movements_per_lane)
    except ValueError as exc:  # MapError is a ValueError too
        if isinstance(exc, MapError):
            raise
        raise MapError(label, f"inconsistent road geometry ({exc})") from None
    if notes:
        object.__setattr__(road_map, "notes", tuple(notes) + road_map.notes)
    if opts.signalize_4way:
        road_map = signalize_four_way(road_map)
    return road_map
