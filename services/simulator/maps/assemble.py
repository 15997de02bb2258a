"""Raw lane-segment network -> typed ``RoadMap`` (pure numpy, no carla).

The carla adapter (``opendrive.py``) samples every drivable OpenDRIVE lane
segment (road, lane section, lane) and reports the segment graph and the
traffic-light landmarks as a ``raw.RawNetwork``; everything structural happens here:

* lanes: non-junction segments chained within one road where the graph is linear
  (one successor whose only predecessor is this segment);
* movements: every path from a lane end through junction segments to the next
  lane (depth-first; chains of connecting roads / sections are one movement);
* approaches: a junction's incoming lanes grouped by (road, driving direction);
  stop bar = the end of each incoming lane;
* conflicts: first proper crossing of two connectors of one junction, or the
  merge point of two movements into the same exit lane (diverging pairs from the
  same lane are not conflicts);
* signal groups: see ``signals.py`` (one per OpenDRIVE signal head, merged
  where heads share a movement, never spanning junctions).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from services.simulator.maps import geometry as geo
from services.simulator.maps.errors import MapError
from services.simulator.maps.model import (
    Approach,
    Building,
    ConflictPoint,
    FrozenMap,
    Junction,
    Lane,
    Movement,
    RoadMap,
    StopBar,
    classify_turn,
)
from services.simulator.maps.raw import Key, RawNetwork
from services.simulator.maps.signals import build_groups, signal_control

MERGE_TOL_M = 0.5
MAX_JUNCTION_DEPTH = 64
MAX_MOVEMENTS_PER_JUNCTION = 2000  # CARLA towns: at most 18; conflicts are O(n^2)


def seg_id(key: Key) -> str:
    return f"r{key[0]}.s{key[1]}.l{key[2]}"


def _chains(net: RawNetwork) -> list[list[Key]]:
    segs, succ = net.segments, net.successors
    pred: dict[Key, list[Key]] = defaultdict(list)
    for a, bs in succ.items():
        for b in bs:
            pred[b].append(a)

    def linear(a: Key, b: Key) -> bool:
        return (segs[a].junction is None and segs[b].junction is None and a[0] == b[0]
                and len(succ.get(a, ())) == 1 and pred[b] == [a])

    out, seen = [], set()
    heads = [k for k in segs if segs[k].junction is None
             and not (len(pred[k]) == 1 and linear(pred[k][0], k))]
    rest = [k for k in segs if segs[k].junction is None]  # pure cycles have no head
    for head in heads + rest:
        if head in seen:
            continue
        chain = [head]
        seen.add(head)
        while True:
            nxt = succ.get(chain[-1], ())
            if len(nxt) != 1 or nxt[0] in seen or not linear(chain[-1], nxt[0]):
                break
            chain.append(nxt[0])
            seen.add(nxt[0])
        out.append(chain)
    return out


def _paths(net: RawNetwork, tail: Key, limit: int) -> list[tuple[list[Key], Key]]:
    """Junction paths from a lane's last segment to the next non-junction segment."""
    segs, succ = net.segments, net.successors
    found: list[tuple[list[Key], Key]] = []
    stack = [[n] for n in succ.get(tail, ()) if segs[n].junction is not None]
    while stack and len(found) < limit:
        path = stack.pop()
        for n in succ.get(path[-1], ()):
            if segs[n].junction is None:
                found.append((path, n))
            elif n not in path and len(path) < MAX_JUNCTION_DEPTH:
                stack.append(path + [n])
    return found


def _merge_point(a: Movement, b: Movement) -> tuple[float, float, float, float]:
    s_b, dist = b.project(a.polyline)
    close = np.nonzero(dist <= MERGE_TOL_M)[0]
    i = int(close[0]) if close.size else len(a.polyline) - 1
    x, y = a.polyline[i]
    return float(x), float(y), float(a.s_m[i]), float(s_b[i] if close.size else b.length_m)


def _conflicts(moves: list[Movement]) -> tuple[ConflictPoint, ...]:
    best: dict[tuple[int, int], geo.Crossing] = {}
    for c in geo.polyline_crossings([m.polyline for m in moves]):
        if (c.a, c.b) not in best or c.s_a < best[(c.a, c.b)].s_a:
            best[(c.a, c.b)] = c
    out = []
    for i, a in enumerate(moves):
        for j in range(i + 1, len(moves)):
            b = moves[j]
            if a.from_lane_id == b.from_lane_id:
                continue  # diverging from one lane
            if a.to_lane_id == b.to_lane_id:
                x, y, sa, sb = _merge_point(a, b)
                out.append(ConflictPoint(a.id, b.id, (x, y), sa, sb, "merging"))
            elif (i, j) in best:
                c = best[(i, j)]
                out.append(ConflictPoint(a.id, b.id, (c.x, c.y), c.s_a, c.s_b, "crossing"))
    return tuple(out)


def _build_lanes(net: RawNetwork) -> tuple[dict[str, dict], dict[Key, str]]:
    segs = net.segments
    lanes: dict[str, dict] = {}
    lane_of: dict[Key, str] = {}
    for chain in _chains(net):
        lid = seg_id(chain[0])
        parts = [segs[k] for k in chain]
        lens = [float(geo.cumulative_s(p.points)[-1]) for p in parts]
        offs = np.concatenate(([0.0], np.cumsum(lens)))
        lanes[lid] = {"chain": chain, "pts": np.vstack([p.points for p in parts]),
                      "width": float(np.median([p.width_m for p in parts])),
                      "speed": parts[0].speed_limit_mps, "succ": [], "pred": [],
                      "length": float(offs[-1]),
                      "seg_off": {k: (float(offs[i]), lens[i]) for i, k in enumerate(chain)}}
        lane_of.update(dict.fromkeys(chain, lid))
    return lanes, lane_of


def _build_movements(net: RawNetwork, name: str, lanes: dict[str, dict],
                     lane_of: dict[Key, str], limit: int) -> dict[int, dict[str, dict]]:
    """junction -> {movement id: record}; also fills lanes' successor/predecessor lists."""
    segs = net.segments
    found: dict[int, list[dict]] = defaultdict(list)
    for lid, lane in lanes.items():
        tail = lane["chain"][-1]
        for n in net.successors.get(tail, ()):
            if segs[n].junction is None and n in lane_of and lane_of[n] != lid:
                lane["succ"].append(lane_of[n])
        for path, exit_key in _paths(net, tail, limit):
            parts = [segs[k] for k in path]
            heads = np.concatenate([p.headings for p in parts])
            found[parts[0].junction].append({
                "from": lid, "to": lane_of[exit_key], "via": path,
                "pts": np.vstack([p.points for p in parts]),
                "dh": float(geo.wrap_angle(heads[-1] - heads[0])),
                "width": float(np.median([p.width_m for p in parts])),
                "speed": min(p.speed_limit_mps for p in parts)})
    per_junction: dict[int, dict[str, dict]] = {}
    for jid in sorted(found):
        if len(found[jid]) > MAX_MOVEMENTS_PER_JUNCTION:
            raise MapError(name, f"junction {jid} has {len(found[jid])} movements, "
                           f"over the cap of {MAX_MOVEMENTS_PER_JUNCTION}")
        items = sorted(found[jid], key=lambda m: (m["from"], m["to"],
                                                  [seg_id(k) for k in m["via"]]))
        per_junction[jid] = {}
        for k, m in enumerate(items):
            mid = f"j{jid}.m{k}"
            m["jid"] = jid
            per_junction[jid][mid] = m
            lanes[m["from"]]["succ"].append(mid)
    for lid, lane in lanes.items():
        for nxt in lane["succ"]:
            if nxt in lanes:
                lanes[nxt]["pred"].append(lid)
    for moves in per_junction.values():
        for mid, m in moves.items():
            lanes[m["to"]]["pred"].append(mid)
    return per_junction


def _build_junction(jid: int, moves: dict[str, dict], lanes: dict[str, dict],
                    lane_objs: dict[str, Lane], stop_bar: dict[str, StopBar],
                    group_of: dict[str, str], group_ids: tuple[str, ...]) -> Junction:
    jname = f"j{jid}"
    arms: dict[tuple[int, bool], set[str]] = defaultdict(set)
    for m in moves.values():  # an approach = the lanes of one road arm, one direction
        tail = lanes[m["from"]]["chain"][-1]
        arms[(tail[0], tail[2] > 0)].add(m["from"])
    approaches, approach_of = [], {}
    for n, arm in enumerate(sorted(arms)):
        aid = f"{jname}.a{n}"
        inc = tuple(sorted(arms[arm]))
        heads = [float(lane_objs[i].heading_at(lane_objs[i].length_m)) for i in inc]
        approaches.append(Approach(aid, jname, inc, geo.circular_mean(heads),
                                   tuple(stop_bar[i] for i in inc)))
        approach_of.update(dict.fromkeys(inc, aid))
    mov_objs = [Movement(
        id=mid, junction_id=jname, from_lane_id=m["from"], to_lane_id=m["to"],
        turn=classify_turn(m["dh"]), polyline=m["pts"], heading_change_rad=m["dh"],
        width_m=m["width"], speed_limit_mps=m["speed"], signal_group_id=group_of.get(mid),
        approach_id=approach_of[m["from"]], via=tuple(seg_id(k) for k in m["via"]))
        for mid, m in moves.items()]
    pts = np.vstack([m.polyline for m in mov_objs])  # centre of the connectors' box,
    lo, hi = pts.min(axis=0), pts.max(axis=0)  # as carla's junction bounding_box
    centre = (float((lo[0] + hi[0]) / 2), float((lo[1] + hi[1]) / 2))
    return Junction(jname, centre, tuple(approaches), tuple(mov_objs), _conflicts(mov_objs),
                    bool(group_ids), group_ids)


def assemble(net: RawNetwork, name: str, content_sha256: str, *,
             buildings: Sequence[Building] = (), source: str = "",
             max_movements_per_lane: int = 256) -> RoadMap:
    """Build the typed map (see the module docstring for the rules)."""
    if not net.segments:
        raise MapError(name, "no drivable lane segments")
    lanes, lane_of = _build_lanes(net)
    per_junction = _build_movements(net, name, lanes, lane_of, max_movements_per_lane)
    moves = {mid: m for ms in per_junction.values() for mid, m in ms.items()}
    control, idle = signal_control(net, moves, lane_of, lanes)
    lane_objs = {lid: Lane(id=lid, polyline=ln["pts"], width_m=ln["width"],
                           speed_limit_mps=ln["speed"], successor_ids=tuple(ln["succ"]),
                           predecessor_ids=tuple(dict.fromkeys(ln["pred"])),
                           road_id=str(ln["chain"][0][0]), xodr_lane_id=ln["chain"][0][2])
                 for lid, ln in lanes.items()}
    stop_bar = {lid: StopBar(lid, (float(ln.polyline[-1, 0]), float(ln.polyline[-1, 1])),
                             ln.length_m) for lid, ln in lane_objs.items()}
    groups = build_groups(moves, control, stop_bar)
    group_of = {mid: gid for gid, g in groups.items() for mid in g.movement_ids}
    groups_by_j: dict[str, list[str]] = defaultdict(list)
    for gid, g in groups.items():
        groups_by_j[g.junction_id].append(gid)
    junctions = {f"j{jid}": _build_junction(jid, ms, lanes, lane_objs, stop_bar, group_of,
                                            tuple(groups_by_j.get(f"j{jid}", ())))
                 for jid, ms in per_junction.items()}
    allpts = [ln.polyline for ln in lane_objs.values()] + [b.footprint for b in buildings]
    allpts += [m.polyline for j in junctions.values() for m in j.movements]
    stacked = np.vstack(allpts)
    lo, hi = stacked.min(axis=0), stacked.max(axis=0)
    notes = (f"{idle} traffic-light landmark(s) control no movement",) if idle else ()
    return RoadMap(name=name, content_sha256=content_sha256,
                   lanes=FrozenMap(lane_objs), junctions=FrozenMap(junctions),
                   signal_groups=FrozenMap(groups), buildings=tuple(buildings),
                   bounds=(float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])),
                   source=source, notes=notes, traffic_lights=len(net.signals))


def content_hash(xodr_bytes: bytes, buildings_json: bytes | None = None, variant: bytes = b"") -> str:
    """sha256 of the OpenDRIVE bytes, extended by the canonical buildings JSON if any and by
    the load options that change the map (``LoadOptions.variant``; none: the plain hash)."""
    h = hashlib.sha256(xodr_bytes)
    if buildings_json:
        h.update(b"\0buildings\0")
        h.update(buildings_json)
    if variant:
        h.update(b"\0variant\0")
        h.update(variant)
    return h.hexdigest()


def extend_hash(content_sha256: str, label: bytes, data: bytes) -> str:
    """A map's content hash extended by what was derived from it (e.g. generated buildings)."""
    h = hashlib.sha256(content_sha256.encode("ascii"))
    h.update(b"\0" + label + b"\0")
    h.update(data)
    return h.hexdigest()
