"""Hostile-input guard and the few OpenDRIVE facts carla's API does not expose.

Runs *before* the text reaches carla's C++ parser: size cap, UTF-8 text, XML
with an ``<OpenDRIVE>`` root, no markup declarations at all (DOCTYPE, ENTITY,
ATTLIST, ELEMENT: entity-expansion attacks such as "billion laughs" need them),
finite numbers, at least one road with lanes and at least one driving lane.
Then it extracts what the loader needs beyond carla: lane-section s ranges,
road lengths and speed limits.
"""

from __future__ import annotations

import hashlib
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from services.simulator.maps.errors import MapError

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_DECL = re.compile(rb"<!(?!--|\[CDATA\[)")
_KMH = 1.0 / 3.6
_UNIT_TO_MPS = {"m/s": 1.0, "km/h": _KMH, "kmh": _KMH, "mph": 0.44704}
# Used where neither road type nor lane gives a limit (OpenDRIVE road type -> km/h).
DEFAULT_SPEED_KMH = {"motorway": 120.0, "rural": 80.0, "lowspeed": 30.0, "town": 50.0}
FALLBACK_SPEED_MPS = 50.0 * _KMH


@dataclass(frozen=True)
class Limits:
    """Caps applied before parsing; all configurable per call."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_roads: int = 200_000
    # Work bounds for carla sampling: the largest CARLA town (Town04) has 11 km of
    # road and 33 km of driving lanes; these caps are ~30-90x that (~20 s to load).
    max_total_road_length_m: float = 1_000_000.0
    max_total_lane_length_m: float = 1_000_000.0


@dataclass(frozen=True)
class SectionFacts:
    s0: float
    s1: float
    lane_types: dict[int, str] = field(default_factory=dict)
    lane_speed_mps: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RoadFacts:
    id: str
    length_m: float
    junction: str
    sections: tuple[SectionFacts, ...]
    speed_mps: tuple[tuple[float, float], ...]  # (s, limit) from <type><speed>

    def speed_at(self, s: float, lane: int, section: int) -> float:
        sec = self.sections[section] if 0 <= section < len(self.sections) else None
        if sec is not None and lane in sec.lane_speed_mps:
            return sec.lane_speed_mps[lane]
        best = FALLBACK_SPEED_MPS
        for s0, v in self.speed_mps:
            if s0 <= s + 1e-9:
                best = v
        return best


SegKey = tuple[int, int, int]  # (road, lane-section index, lane id)


@dataclass(frozen=True)
class XodrFacts:
    text: str
    sha256: str
    roads: dict[str, RoadFacts]
    junction_ids: tuple[str, ...]
    n_driving_lanes: int
    # lane-segment edges implied by <junction><connection><laneLink> (RHT sign rule)
    junction_edges: tuple[tuple[SegKey, SegKey], ...] = ()
    # (road id, signal id) of <signal>/<signalReference> carrying an explicit <validity>
    explicit_validity: frozenset[tuple[str, str]] = frozenset()


def _num(el: ET.Element, attr: str, name: str, default: float | None = None) -> float:
    raw = el.get(attr)
    if raw is None:
        if default is None:
            raise MapError(name, f"<{el.tag}> lacks required attribute {attr!r}")
        return default
    try:
        val = float(raw)
    except ValueError:
        raise MapError(name, f"<{el.tag} {attr}={raw!r}> is not a number") from None
    if not math.isfinite(val):
        raise MapError(name, f"<{el.tag} {attr}={raw!r}> is not finite")
    return val


def _speed(el: ET.Element | None, name: str) -> float | None:
    if el is None or el.get("max") is None:
        return None
    raw = el.get("max", "").strip().lower()
    if raw in ("no limit", "undefined", ""):
        return None
    factor = _UNIT_TO_MPS.get(el.get("unit", "m/s").strip().lower(), 1.0)
    val = _num(el, "max", name) * factor
    return val if val > 0 else None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def decode_guarded(data: bytes | str, name: str, limits: Limits) -> tuple[str, bytes]:
    """Size, encoding and declaration checks; returns (text, utf-8 bytes)."""
    if isinstance(data, str):
        if len(data) > limits.max_bytes:
            raise MapError(name, f"input is over the size cap of {limits.max_bytes} bytes")
        raw = data.encode("utf-8", errors="surrogatepass")
    else:
        raw = bytes(data)
    if len(raw) > limits.max_bytes:
        raise MapError(name, f"input is {len(raw)} bytes, over the cap of {limits.max_bytes}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MapError(name, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not text.lstrip().startswith("<"):
        raise MapError(name, "not XML: the input does not start with '<'")
    if _DECL.search(raw):
        raise MapError(name, "DOCTYPE/ENTITY (markup) declarations are not allowed")
    return text, raw


def inspect_xodr(data: bytes | str, name: str, limits: Limits | None = None) -> XodrFacts:
    """Validate untrusted OpenDRIVE text and extract the loader's facts (raises MapError)."""
    limits = limits or Limits()
    text, raw = decode_guarded(data, name, limits)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise MapError(name, f"not well-formed XML ({exc})") from None
    if _local(root.tag) != "OpenDRIVE":
        raise MapError(name, f"root element is <{_local(root.tag)}>, not <OpenDRIVE>")
    for el in root.iter():  # namespaced OpenDRIVE 1.8: work on local names
        el.tag = _local(el.tag)
    roads_el = root.findall("road")
    if not roads_el:
        raise MapError(name, "no <road> elements")
    if len(roads_el) > limits.max_roads:
        raise MapError(name, f"{len(roads_el)} roads, over the cap of {limits.max_roads}")
    roads: dict[str, RoadFacts] = {}
    total_len, lane_len, n_driving = 0.0, 0.0, 0
    for road in roads_el:
        rid = road.get("id")
        if rid is None or rid in roads:
            raise MapError(name, f"road id {rid!r} is missing or duplicated")
        length = _num(road, "length", name)
        if length < 0:
            raise MapError(name, f"road {rid} has negative length")
        total_len += length
        if total_len > limits.max_total_road_length_m:
            raise MapError(name, f"total road length over {limits.max_total_road_length_m} m")
        plan = road.find("planView")
        geoms = [] if plan is None else plan.findall("geometry")
        if not geoms:
            raise MapError(name, f"road {rid} has no planView geometry")
        for g in geoms:
            for attr in ("s", "x", "y", "hdg", "length"):
                _num(g, attr, name)
        lanes = road.find("lanes")
        secs_el = [] if lanes is None else lanes.findall("laneSection")
        if not secs_el:
            raise MapError(name, f"road {rid} has no lanes (no <laneSection>)")
        starts = [_num(sec, "s", name) for sec in secs_el]
        order = sorted(range(len(starts)), key=lambda i: starts[i])
        sections = []
        for k, i in enumerate(order):
            s1 = starts[order[k + 1]] if k + 1 < len(order) else length
            types, speeds = {}, {}
            for lane in secs_el[i].iter("lane"):
                lid = int(_num(lane, "id", name))
                types[lid] = lane.get("type", "none").strip().lower()
                v = _speed(lane.find("speed"), name)
                if v is not None:
                    speeds[lid] = v
            if not any(lid != 0 for lid in types):
                raise MapError(name, f"road {rid} section {k} has no lanes besides the centre")
            n_lanes = sum(1 for lid, t in types.items() if lid != 0 and t == "driving")
            n_driving += n_lanes
            lane_len += n_lanes * max(0.0, min(s1, length) - starts[i])
            if lane_len > limits.max_total_lane_length_m:
                raise MapError(name, "total driving-lane length over "
                               f"{limits.max_total_lane_length_m} m")
            sections.append(SectionFacts(starts[i], max(s1, starts[i]), types, speeds))
        speed_list = []
        for t in road.findall("type"):
            v = _speed(t.find("speed"), name)
            if v is None:
                kmh = DEFAULT_SPEED_KMH.get(t.get("type", "").strip().lower())
                v = None if kmh is None else kmh * _KMH
            if v is not None:
                speed_list.append((_num(t, "s", name, 0.0), v))
        speed_list.sort()
        roads[rid] = RoadFacts(rid, length, road.get("junction", "-1"), tuple(sections),
                               tuple(speed_list))
    if n_driving == 0:
        raise MapError(name, "no driving lanes (zero lane content)")
    junctions = tuple(j.get("id", "") for j in root.findall("junction"))
    explicit = frozenset(
        (road.get("id", ""), sig.get("id", ""))
        for road in roads_el for tag in ("signal", "signalReference")
        for sig in road.iter(tag) if sig.find("validity") is not None)
    return XodrFacts(text, hashlib.sha256(raw).hexdigest(), roads, junctions, n_driving,
                     _junction_edges(root, roads), explicit)


def _touch(road: ET.Element | None, jid: str, conn_road: str) -> str | None:
    """Which end ('start'/'end') of an incoming road touches junction ``jid``."""
    link = None if road is None else road.find("link")
    if link is None:
        return None
    for tag, end in (("successor", "end"), ("predecessor", "start")):
        el = link.find(tag)
        if el is None:
            continue
        kind, target = el.get("elementType", "road"), el.get("elementId")
        if (kind == "junction" and target == jid) or (kind == "road" and target == conn_road):
            return end
    return None


def _junction_edges(root: ET.Element, roads: dict[str, RoadFacts]) -> tuple:
    """Incoming-lane <-> connecting-lane edges from junction connections.

    carla's topology misses some of these (e.g. esmini's two-way connecting roads
    listed under two connections); the loader unions them with carla's graph.
    A connecting lane drives away from its contact point when (start, lane < 0)
    or (end, lane > 0); then the edge is incoming -> connecting, else the reverse.
    """
    by_id = {r.get("id"): r for r in root.findall("road")}
    edges = []
    for junction in root.findall("junction"):
        jid = junction.get("id", "")
        for conn in junction.findall("connection"):
            inc, con = conn.get("incomingRoad"), conn.get("connectingRoad")
            cp = conn.get("contactPoint", "start")
            if inc not in roads or con not in roads or not (inc + con).replace("-", "").isdigit():
                continue
            end = _touch(by_id.get(inc), jid, con)
            if end is None or cp not in ("start", "end"):
                continue
            sec_i = len(roads[inc].sections) - 1 if end == "end" else 0
            sec_c = 0 if cp == "start" else len(roads[con].sections) - 1
            for ll in conn.findall("laneLink"):
                try:
                    a, b = int(ll.get("from", "")), int(ll.get("to", ""))
                except ValueError:
                    continue
                entering = (cp == "start") == (b < 0)
                towards_junction = (end == "end") == (a < 0)
                if a == 0 or b == 0 or entering != towards_junction:
                    continue  # the incoming lane's direction contradicts the link
                ki, kc = (int(inc), sec_i, a), (int(con), sec_c, b)
                if not (_is_driving(roads[inc], ki) and _is_driving(roads[con], kc)):
                    continue
                edges.append((ki, kc) if entering else (kc, ki))
    return tuple(dict.fromkeys(edges))


def _is_driving(road: RoadFacts, key: tuple[int, int, int]) -> bool:
    return road.sections[key[1]].lane_types.get(key[2]) == "driving"
