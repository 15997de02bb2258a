"""Write OpenDRIVE 1.7 text for axis-aligned grid layouts (pure Python, no carla).

The header declares 1.7 (``revMinor="7"``): the files are valid against the OpenDRIVE 1.7
schema and pass every rule of ASAM's OpenDRIVE checker bundle at 1.7, and the rules for 1.8
too (``tests/app/test_asam_qc.py``). A tool or checker that switches on the declared version
then applies the 1.7 rules, not 1.4's.

A ``Layout`` is a set of junction nodes and arms (E/N/W/S). An arm either
links two nodes (one road, both directions) or is a dangling stub. Roads are
straight ``<line>`` geometry with ``n`` driving lanes per direction (right lanes
drive along +s, right-hand traffic). Every junction gets one single-lane
connecting road per movement: a line for straight, line + 90 degree ``<arc>``
+ line for left / right. Lane use with ``n`` incoming lanes: lane 1 (inner)
turns left; lane ``n`` turns right; lanes 2..n go straight (lane 1 when n = 1),
so a 2-lane approach has a dedicated left-turn lane and 3 movements.

A signalized junction gets one traffic light (type 1000001, explicit
``<validity>`` over the incoming lanes) per approach, 1 m before the stop bar on
the incoming road, plus one ``<controller>`` per light listed in the junction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

DIRS: dict[str, tuple[int, int]] = {"E": (1, 0), "N": (0, 1), "W": (-1, 0), "S": (0, -1)}
OPPOSITE = {"E": "W", "W": "E", "N": "S", "S": "N"}
REV_MAJOR, REV_MINOR = 1, 7  # the OpenDRIVE version the written files declare (and conform to)
GEO_REFERENCE = "+proj=tmerc +lat_0=0 +lon_0=0 +k=1 +x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs"


@dataclass(frozen=True)
class Arm:
    node: str
    direction: str  # E / N / W / S, leaving the node
    lanes: int = 1  # per direction
    to_node: str | None = None  # None: a stub of length_m
    length_m: float = 100.0


@dataclass(frozen=True)
class Layout:
    name: str
    nodes: Mapping[str, tuple[float, float]]
    arms: tuple[Arm, ...]
    signalized: frozenset[str] = field(default_factory=frozenset)
    lane_width_m: float = 3.5
    speed_limit_kmh: float = 50.0
    margin_m: float = 6.0  # junction radius = widest arm + margin


@dataclass
class RoadSpec:
    """One road as written: start pose, line/arc records, lanes per side, links."""

    id: int
    x: float
    y: float
    hdg: float
    geoms: list[tuple[str, float, float]]  # (kind, length, curvature)
    lanes: int
    junction: int = -1
    pred: tuple[str, int, str] | None = None  # (elementType, id, contactPoint)
    succ: tuple[str, int, str] | None = None
    lane_links: tuple[int, int] | None = None  # connecting road: (pred lane, succ lane)
    signals: list[str] = field(default_factory=list)

    @property
    def length(self) -> float:
        return sum(g[1] for g in self.geoms)


def _f(v: float) -> str:
    return f"{v:.9g}" if abs(v) > 1e-12 else "0"


def advance(x: float, y: float, h: float, kind: str, length: float, k: float):
    if kind == "line" or abs(k) < 1e-12:
        return x + length * math.cos(h), y + length * math.sin(h), h
    h2 = h + k * length
    return x + (math.sin(h2) - math.sin(h)) / k, y + (math.cos(h) - math.cos(h2)) / k, h2


def junction_radius(layout: Layout, node: str) -> float:
    widest = max((a.lanes for a in layout.arms if node in (a.node, a.to_node)), default=1)
    return widest * layout.lane_width_m + layout.margin_m


def _turn(a: str, b: str) -> str:
    din = (-DIRS[a][0], -DIRS[a][1])
    dout = DIRS[b]
    cross = din[0] * dout[1] - din[1] * dout[0]
    return "straight" if cross == 0 else ("left" if cross > 0 else "right")


def lane_plan(turn: str, n_in: int, n_out: int) -> list[tuple[int, int]]:
    """(incoming lane index, outgoing lane index), 1 = next to the centre line."""
    if turn == "left":
        return [(1, 1)]
    if turn == "right":
        return [(n_in, n_out)]
    ins = list(range(2, n_in + 1)) if n_in >= 2 else [1]
    return [(k, min(k, n_out)) for k in ins]


def _connector_geoms(turn: str, R: float, a: float, b: float):
    """Local reference line entering at (-R, -a) heading +x, leaving at offset b.

    Returns (geometry records, heading offset of a straight line).
    """
    if turn == "straight":
        dx, dy = 2 * R, a - b
        return [("line", math.hypot(dx, dy), 0.0)], math.atan2(dy, dx)
    sign = 1.0 if turn == "left" else -1.0
    ra, rb = R + sign * a, R + sign * b
    r = min(ra, rb)
    geoms = [("line", rb - r, 0.0), ("arc", r * math.pi / 2, sign / r), ("line", ra - r, 0.0)]
    return [g for g in geoms if g[1] > 1e-9], 0.0


def junction_ids(layout: Layout) -> dict[str, int]:
    """OpenDRIVE ids: junctions 1.., arm roads 101.., connecting roads 1001.. (never clash)."""
    return {n: i + 1 for i, n in enumerate(sorted(layout.nodes))}


def build_roads(layout: Layout) -> tuple[list[RoadSpec], dict[int, list[int]], dict]:
    """Roads (arms + connectors), junction -> connector ids, and signal records."""
    w = layout.lane_width_m
    if len(layout.arms) > 899:
        raise ValueError(f"{layout.name}: at most 899 arms")
    node_ids = junction_ids(layout)
    radius = {n: junction_radius(layout, n) for n in layout.nodes}
    roads: list[RoadSpec] = []
    ends: dict[tuple[str, str], tuple[int, str, int]] = {}  # (node, dir) -> (road, contact, n)
    for arm in layout.arms:
        ux, uy = DIRS[arm.direction]
        cx, cy = layout.nodes[arm.node]
        r0 = radius[arm.node]
        x0, y0 = cx + ux * r0, cy + uy * r0
        if arm.to_node is None:
            length = arm.length_m
        else:
            tx, ty = layout.nodes[arm.to_node]
            if abs((tx - cx) * uy - (ty - cy) * ux) > 1e-6:
                raise ValueError(f"{layout.name}: {arm.to_node} is not {arm.direction} of {arm.node}")
            length = (tx - cx) * ux + (ty - cy) * uy - r0 - radius[arm.to_node]
        if length <= 1.0:
            raise ValueError(f"{layout.name}: arm {arm} is too short ({length:.1f} m)")
        road = RoadSpec(len(roads) + 101, x0, y0, math.atan2(uy, ux), [("line", length, 0.0)],
                     arm.lanes, pred=("junction", node_ids[arm.node], ""))
        ends[(arm.node, arm.direction)] = (road.id, "start", arm.lanes)
        if arm.to_node is not None:
            road.succ = ("junction", node_ids[arm.to_node], "")
            ends[(arm.to_node, OPPOSITE[arm.direction])] = (road.id, "end", arm.lanes)
        roads.append(road)
    connectors: dict[int, list[int]] = {}
    signals: dict = {}
    next_id = 1001
    for node in sorted(layout.nodes):
        jid, R = node_ids[node], radius[node]
        cx, cy = layout.nodes[node]
        connectors[jid] = []
        arms = sorted(d for (n, d) in ends if n == node)
        for a in arms:
            rid_in, c_in, n_in = ends[(node, a)]
            theta = math.atan2(-DIRS[a][1], -DIRS[a][0])
            cos_t, sin_t = math.cos(theta), math.sin(theta)
            for b in arms:
                if b == a:
                    continue
                rid_out, c_out, n_out = ends[(node, b)]
                turn = _turn(a, b)
                for k_in, k_out in lane_plan(turn, n_in, n_out):
                    # the connector's reference line is its lane's left edge
                    ai, bo = (k_in - 1) * w, (k_out - 1) * w
                    geoms, dh = _connector_geoms(turn, R, ai, bo)
                    lx, ly = -R, -ai
                    x = cx + cos_t * lx - sin_t * ly
                    y = cy + sin_t * lx + cos_t * ly
                    lane_in = -k_in if c_in == "end" else k_in
                    lane_out = -k_out if c_out == "start" else k_out
                    road = RoadSpec(next_id, x, y, theta + dh, geoms, 1, junction=jid,
                                 pred=("road", rid_in, c_in), succ=("road", rid_out, c_out),
                                 lane_links=(lane_in, lane_out))
                    roads.append(road)
                    connectors[jid].append(road.id)
                    next_id += 1
            if node in layout.signalized:
                sid = 5000 + len(signals)
                signals[sid] = (jid, rid_in, c_in, n_in)
                roads[rid_in - 101].signals.append(str(sid))
    return roads, connectors, signals


def signal_placement(length: float, contact: str, n: int, w: float):
    """(s, t, orientation, validity) of a light 1 m before the stop bar of ``n`` lanes."""
    at_end = contact == "end"
    s_sig = max(length - 1.0, 0.0) if at_end else min(1.0, length)
    t_sig = -(n * w + 1.0) if at_end else n * w + 1.0
    return s_sig, t_sig, "+" if at_end else "-", (-n, -1) if at_end else (1, n)


def _lanes_xml(n: int, w: float, right_only: bool, links: tuple[int, int] | None) -> str:
    def lane(lid: int, mark: str) -> str:
        link = ""
        if links is not None:
            link = f'<link><predecessor id="{links[0]}"/><successor id="{links[1]}"/></link>'
        return (f'<lane id="{lid}" type="driving" level="false">{link}'
                f'<width sOffset="0" a="{_f(w)}" b="0" c="0" d="0"/>'
                f'<roadMark sOffset="0" type="{mark}" weight="standard" color="standard" '
                f'width="0.15"/></lane>')
    left = "" if right_only else "<left>" + "".join(
        lane(k, "solid" if k == n else "broken") for k in range(n, 0, -1)) + "</left>"
    centre_mark = "none" if right_only else "solid solid"
    centre = (f'<center><lane id="0" type="none" level="false"><roadMark sOffset="0" '
              f'type="{centre_mark}" weight="standard" color="standard" width="0.15"/>'
              f"</lane></center>")
    right = "<right>" + "".join(lane(-k, "solid" if k == n else "broken")
                                for k in range(1, n + 1)) + "</right>"
    return f'<lanes><laneSection s="0">{left}{centre}{right}</laneSection></lanes>'


def write_xodr(layout: Layout) -> str:
    roads, connectors, signals = build_roads(layout)
    w = layout.lane_width_m
    xs = [r.x for r in roads]
    ys = [r.y for r in roads]
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<OpenDRIVE>",
           f'<header revMajor="{REV_MAJOR}" revMinor="{REV_MINOR}" name={quoteattr(layout.name)} version="1" '
           f'north="{_f(max(ys))}" south="{_f(min(ys))}" east="{_f(max(xs))}" '
           f'west="{_f(min(xs))}" vendor="lastv2x-builtin">'
           f"<geoReference><![CDATA[{GEO_REFERENCE}]]></geoReference></header>"]
    for r in roads:
        link = ""
        for tag, el in (("predecessor", r.pred), ("successor", r.succ)):
            if el is not None:
                cp = f' contactPoint="{el[2]}"' if el[2] else ""
                link += f'<{tag} elementType="{el[0]}" elementId="{el[1]}"{cp}/>'
        geo, s, x, y, h = [], 0.0, r.x, r.y, r.hdg
        for kind, length, k in r.geoms:
            body = "<line/>" if kind == "line" else f'<arc curvature="{_f(k)}"/>'
            geo.append(f'<geometry s="{_f(s)}" x="{_f(x)}" y="{_f(y)}" hdg="{_f(h)}" '
                       f'length="{_f(length)}">{body}</geometry>')
            x, y, h = advance(x, y, h, kind, length, k)
            s += length
        sig_xml = ""
        for sid in r.signals:
            _, _, contact, n = signals[int(sid)]
            s_sig, t_sig, orient, (lo, hi) = signal_placement(r.length, contact, n, w)
            sig_xml += (f'<signal s="{_f(s_sig)}" t="{_f(t_sig)}" id="{sid}" '
                        f'name="Signal_3Light_Post01" dynamic="yes" '
                        f'orientation="{orient}" zOffset="0" country="OpenDRIVE" '
                        f'type="1000001" subtype="-1" value="-1" height="1.2" width="0.5" '
                        f'hOffset="0" pitch="0" roll="0"><validity fromLane="{lo}" '
                        f'toLane="{hi}"/></signal>')
        out.append(
            f'<road name="road{r.id}" length="{_f(r.length)}" id="{r.id}" junction="{r.junction}">'
            f"<link>{link}</link>"
            f'<type s="0" type="town"><speed max="{_f(layout.speed_limit_kmh)}" unit="km/h"/>'
            f"</type><planView>{''.join(geo)}</planView>"
            f'<elevationProfile><elevation s="0" a="0" b="0" c="0" d="0"/></elevationProfile>'
            f"<lateralProfile/>{_lanes_xml(r.lanes, w, r.junction >= 0, r.lane_links)}"
            f"<objects/><signals>{sig_xml}</signals></road>")
    by_junction: dict[int, list[int]] = {}
    for sid, (jid, *_rest) in sorted(signals.items()):
        by_junction.setdefault(jid, []).append(sid)
        out.append(f'<controller id="{sid + 1000}" name="ctrl{sid}" sequence="0">'
                   f'<control signalId="{sid}" type="0"/></controller>')
    road_by_id = {r.id: r for r in roads}
    for jid, conns in connectors.items():
        body = []
        for k, cid in enumerate(conns):
            c = road_by_id[cid]
            body.append(f'<connection id="{k}" incomingRoad="{c.pred[1]}" connectingRoad="{cid}" '
                        f'contactPoint="start"><laneLink from="{c.lane_links[0]}" to="-1"/>'
                        f"</connection>")
        for seq, sid in enumerate(by_junction.get(jid, [])):
            body.append(f'<controller id="{sid + 1000}" type="0" sequence="{seq}"/>')
        out.append(f'<junction id="{jid}" name="junction{jid}">{"".join(body)}</junction>')
    out.append("</OpenDRIVE>")
    return "\n".join(out) + "\n"
