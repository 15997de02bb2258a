"""A scenario program as a SUMO network: plain XML from the program's routes, through netconvert.

Why from the program and not from the whole town: the builtin backend moves vehicles along the
program's route polylines, so the independent simulator gets exactly the roads the scene uses
(every vehicle route, its approach / junction / exit segments, the stop bars and signal groups),
and a vehicle's SUMO position maps back onto its route by projection. SUMO then brings what is
its own: the junction geometry and internal lanes netconvert builds, Krauss car-following and
junction right-of-way for every vehicle our controllers do not drive, and its own integration.
(:func:`convert_opendrive` converts a whole OpenDRIVE map the same cached way, for looking at a
town in SUMO; the backend does not map programs onto it.)

Layout of the network:

* one SUMO **edge per route segment** that is a lane (segment id = edge id), one lane wide, shaped
  by the route's polyline over the segment; segments of several vehicles with one id are one
  edge (the longest variant's geometry), so a lead and its follower share a lane;
* a segment that starts at a crossing's stop bar is that junction's **movement**: not an edge
  but a connection (approach edge -> exit edge) through the junction node, which sits at the
  centroid of its movements' end points; netconvert builds the internal lane;
* a junction with a signalized crossing is a **traffic light** ``tl = junction id``; its links are
  mapped to our signal groups by (approach edge, exit edge) -> the crossing's group
  (:attr:`SumoNetwork.link_groups`); the backend sets every link's state each step from our plan.

Built networks are cached by the SHA-256 of their plain XML (netconvert runs once per layout).
Needs the ``sumo`` extra (``eclipse-sumo`` ships netconvert, ``sumolib`` reads the result).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.program import ProgramVehicle, ScenarioProgram

EDGE_SPEED_MPS = 40.0  # edges allow the program's fastest desired speed; each vehicle type caps its own
_EPS_M = 1e-6


class SumoUnavailable(FailedPrecondition):
    """netconvert / sumolib / libsumo missing, or netconvert refused the network."""


def netconvert_binary() -> str:
    """The netconvert of the ``eclipse-sumo`` wheel, else the one on PATH."""
    try:
        import sumo  # the eclipse-sumo wheel

        exe = Path(sumo.SUMO_HOME) / "bin" / "netconvert"
        if exe.is_file():
            return str(exe)
    except ImportError:
        pass
    import shutil

    found = shutil.which("netconvert")
    if not found:
        raise SumoUnavailable("the SUMO backend needs netconvert: pip install 'lastv2x[sumo]' (eclipse-sumo, libsumo)")
    return found


def default_cache_dir() -> Path:
    """Beside the built-in maps' generated OpenDRIVE (one cache folder for map artefacts)."""
    from services.simulator.maps.builtin import default_cache_dir as maps_cache

    return maps_cache() / "sumo"


@dataclass(frozen=True)
class VehicleRoute:
    """Where a program vehicle drives in SUMO: its edges and its departure on the first one."""

    edges: tuple[str, ...]
    depart_pos_m: float  # front bumper on the first edge, SUMO's departPos
    depart_speed_mps: float


@dataclass
class SumoNetwork:
    """A built network: the ``.net.xml`` and how the program's parts map onto it."""

    net_path: Path
    routes: dict[str, VehicleRoute]  # vehicle id -> route
    junction_tls: dict[str, str]  # our junction id -> SUMO traffic light id (only signalized ones)
    movement_groups: dict[tuple[str, str], str]  # (approach edge, exit edge) -> our signal group id
    link_groups: dict[str, tuple[str | None, ...]] = field(default_factory=dict)  # tls -> group per link index

    def tls_state(self, tls: str, phase_of_group: dict[str, str]) -> str:
        """The ``setRedYellowGreenState`` string of one light: each link takes its group's phase
        (``green`` G, ``amber`` y, ``red`` r); a link no route uses stays red."""
        char = {"green": "G", "amber": "y", "red": "r"}
        return "".join(char.get(phase_of_group.get(g, "red") if g else "red", "r") for g in self.link_groups[tls])


def _segments(v: ProgramVehicle) -> list[tuple[str, float, float, bool]]:
    """(segment id, start s, end s, is a junction movement) of a vehicle's route."""
    bars = [c.stop_bar_s_m for c in v.route.crossings]
    return [(s.id, s.start_s_m, s.start_s_m + s.length_m, any(abs(s.start_s_m - b) < 1e-3 for b in bars))
            for s in v.route.segments]


def _slice(points: np.ndarray, s_cum: np.ndarray, s0: float, s1: float) -> np.ndarray:
    inside = points[(s_cum > s0 + _EPS_M) & (s_cum < s1 - _EPS_M)]
    ends = [np.array([np.interp(s, s_cum, points[:, 0]), np.interp(s, s_cum, points[:, 1])]) for s in (s0, s1)]
    return np.vstack([ends[0], inside, ends[1]])


def plain_xml(program: ScenarioProgram) -> tuple[str, str, str, dict[str, VehicleRoute],
                                                 dict[tuple[str, str], str], dict[str, str]]:
    """The program's network as netconvert plain XML: (nodes, edges, connections) and the maps
    (vehicle routes, movement -> group, junction -> traffic light)."""
    shapes: dict[str, np.ndarray] = {}
    edge_ends: dict[str, tuple[str, str]] = {}
    movement_groups: dict[tuple[str, str], str] = {}
    junction_pts: dict[str, list[np.ndarray]] = {}
    signalized: set[str] = set()
    routes: dict[str, VehicleRoute] = {}
    lane_chains: list[list[str]] = []  # each vehicle's lane segments in route order
    for v in (program.ego, *program.agents):
        pts = np.asarray(v.route.points_xy_m, dtype=np.float64)
        s_cum = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(pts, axis=0).T))])
        segs = _segments(v)
        crossing_at = {round(c.stop_bar_s_m, 3): c for c in v.route.crossings}
        for i, (sid, s0, s1, movement) in enumerate(segs):
            if movement:
                c = crossing_at[min(crossing_at, key=lambda b: abs(b - s0))]
                junction_pts.setdefault(c.junction_id, []).extend(_slice(pts, s_cum, s0, s1)[[0, -1]])
                if c.signal_group_id:
                    signalized.add(c.junction_id)
                    if 0 < i < len(segs) - 1:
                        movement_groups[(segs[i - 1][0], segs[i + 1][0])] = c.signal_group_id
                continue
            shape = _slice(pts, s_cum, s0, s1)
            if sid not in shapes or len(shape) > len(shapes[sid]) or s1 - s0 > _length(shapes[sid]) + _EPS_M:
                shapes[sid] = shape
        edges = [sid for sid, _, _, movement in segs if not movement]
        first = next((seg for seg in segs if seg[1] <= v.start_s_m < seg[2]), segs[-1])
        if first[3]:
            raise FailedPrecondition(f"program vehicle {v.id!r} starts inside junction movement {first[0]!r}; "
                                     "the SUMO backend places vehicles on lanes (move its start_s_m before the bar)")
        start_index = edges.index(first[0])
        front = v.start_s_m + v.length_m / 2.0 - first[1]
        routes[v.id] = VehicleRoute(tuple(edges[start_index:]), front, v.initial_speed_mps)
        lane_chains.append(edges)
    # nodes: a junction node per junction; other segment ends by position (shared ends coincide)
    junction_xy = {j: np.mean(np.array(p), axis=0) for j, p in junction_pts.items()}
    node_xy: dict[str, np.ndarray] = {f"J{j}": xy for j, xy in junction_xy.items()}

    def end_node(xy: np.ndarray) -> str:
        for j in junction_xy:
            if any(np.hypot(*(xy - q)) < 0.05 for q in junction_pts[j]):
                return f"J{j}"
        key = f"n{xy[0]:.1f}_{xy[1]:.1f}".replace("-", "m")
        node_xy.setdefault(key, xy)
        return key

    for sid, shape in shapes.items():
        edge_ends[sid] = (end_node(shape[0]), end_node(shape[-1]))
    connections: set[tuple[str, str]] = set()
    for lanes in lane_chains:
        connections.update(zip(lanes, lanes[1:], strict=False))
    tls = {j: j for j in sorted(signalized)}
    nodes = ["<nodes>"] + [
        f'  <node id={quoteattr(n)} x="{xy[0]:.3f}" y="{xy[1]:.3f}"'
        + (f' type="traffic_light" tl={quoteattr(tls[n[1:]])}' if n.startswith("J") and n[1:] in tls else "")
        + "/>" for n, xy in sorted(node_xy.items())] + ["</nodes>"]
    edges_xml = ["<edges>"] + [
        f'  <edge id={quoteattr(sid)} from={quoteattr(a)} to={quoteattr(b)} numLanes="1" speed="{EDGE_SPEED_MPS}" spreadType="center" width="3.5" '
        f'shape="{" ".join(f"{x:.3f},{y:.3f}" for x, y in shapes[sid])}"/>'
        for sid, (a, b) in sorted(edge_ends.items())] + ["</edges>"]
    conns = ["<connections>"] + [f'  <connection from={quoteattr(a)} to={quoteattr(b)} fromLane="0" toLane="0"/>'
                                 for a, b in sorted(connections)] + ["</connections>"]
    return "\n".join(nodes), "\n".join(edges_xml), "\n".join(conns), routes, movement_groups, tls


def _length(shape: np.ndarray) -> float:
    return float(np.hypot(*np.diff(shape, axis=0).T).sum())


def _netconvert(args: Sequence[str], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp.xml")
    proc = subprocess.run([netconvert_binary(), *args, "-o", str(tmp), "--no-warnings"],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise SumoUnavailable(f"netconvert refused the network: {(proc.stderr or proc.stdout).strip()[-400:]}")
    os.replace(tmp, out)  # atomic: a cached network is never half written


def build_network(program: ScenarioProgram, cache_dir: Path | str | None = None) -> SumoNetwork:
    """The program's SUMO network (built once per layout, cached by content hash)."""
    nodes, edges, conns, routes, movement_groups, tls = plain_xml(program)
    digest = hashlib.sha256("\0".join((nodes, edges, conns)).encode()).hexdigest()[:24]
    net_path = Path(cache_dir or default_cache_dir()) / f"{digest}.net.xml"
    if not net_path.is_file():
        with tempfile.TemporaryDirectory(prefix="lastv2x-sumo-") as tmp:
            files = {}
            for name, text in (("nod", nodes), ("edg", edges), ("con", conns)):
                files[name] = Path(tmp) / f"net.{name}.xml"
                files[name].write_text(text)
            _netconvert(["--node-files", str(files["nod"]), "--edge-files", str(files["edg"]),
                         "--connection-files", str(files["con"]), "--no-turnarounds", "true",
                         "--tls.default-type", "static", "--offset.disable-normalization", "true",
                         "--junctions.corner-detail", "0"], net_path)
    net = SumoNetwork(net_path, routes, tls, movement_groups)
    net.link_groups = _link_groups(net)
    return net


def _link_groups(net: SumoNetwork) -> dict[str, tuple[str | None, ...]]:
    """Per traffic light, the signal group of each link index (from its approach and exit edges);
    a link no route uses takes the group its approach has when that is unique, else none (red)."""
    try:
        import sumolib
    except ImportError:
        raise SumoUnavailable("the SUMO backend needs sumolib: pip install 'lastv2x[sumo]'") from None
    sn = sumolib.net.readNet(str(net.net_path), withPrograms=True)
    out: dict[str, tuple[str | None, ...]] = {}
    by_approach: dict[str, set[str]] = {}
    for (a, _), g in net.movement_groups.items():
        by_approach.setdefault(a, set()).add(g)
    for tl in net.junction_tls.values():
        links: dict[int, str | None] = {}
        for in_lane, out_lane, index in sn.getTLS(tl).getConnections():
            a, b = in_lane.getEdge().getID(), out_lane.getEdge().getID()
            g = net.movement_groups.get((a, b))
            if g is None and len(by_approach.get(a, ())) == 1:
                g = next(iter(by_approach[a]))
            links[index] = g
        out[tl] = tuple(links.get(i) for i in range(max(links, default=-1) + 1))
    return out


def convert_opendrive(xodr_path: Path | str, cache_dir: Path | str | None = None) -> Path:
    """A whole OpenDRIVE map converted by netconvert (cached by the file's SHA-256)."""
    data = Path(xodr_path).read_bytes()
    out = Path(cache_dir or default_cache_dir()) / f"{hashlib.sha256(data).hexdigest()[:24]}.xodr.net.xml"
    if not out.is_file():
        _netconvert(["--opendrive-files", str(xodr_path), "--offset.disable-normalization", "true"], out)
    return out


__all__ = ["SumoNetwork", "SumoUnavailable", "VehicleRoute", "build_network", "convert_opendrive",
           "default_cache_dir", "netconvert_binary", "plain_xml"]
