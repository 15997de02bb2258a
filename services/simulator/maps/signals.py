"""Traffic lights -> signal groups (pure Python over the raw segment network).

Which movements a light controls:

* a light on a junction's connecting road (CARLA towns put ``<signalReference>``s
  there) controls the movements whose connector uses a lane of that road inside
  the light's lane validity;
* a light on an ordinary road controls the movements leaving the lane(s) it is
  valid for, at the junction that lane (or its plain continuation) ends in, if it
  stands at most ``MAX_SIGNAL_UPSTREAM_M`` before that stop bar.

Grouping rule: one group per OpenDRIVE signal id (a ``<signal>`` and every
``<signalReference>`` to it are one head); ids that control a common movement
are merged (union-find), so a movement has at most one group; a group never
spans junctions (it is split per junction).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from services.simulator.maps.model import SignalGroup, StopBar
from services.simulator.maps.raw import Key, RawNetwork

# A light on an ordinary road controls a lane only if it stands at most this far
# upstream of the lane's stop bar (guards against lights facing the other way).
MAX_SIGNAL_UPSTREAM_M = 100.0


def mid_order(mid: str) -> tuple[str, int]:
    """Sort key of movement ids ``j{junction}.m{k}`` (numeric k)."""
    head, _, num = mid.rpartition(".m")
    return head, int(num)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def _in_validity(lane: int, vals: tuple[tuple[int, int], ...]) -> bool:
    return not vals or any(min(a, b) <= lane <= max(a, b) for a, b in vals)


def signal_control(net: RawNetwork, moves: dict[str, dict], lane_of: dict[Key, str],
                   lanes: dict[str, dict]) -> tuple[dict[str, set[str]], int]:
    """signal id -> controlled movement ids; also how many landmarks control nothing."""
    by_via: dict[int, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    by_from: dict[str, set[str]] = defaultdict(set)
    for mid, m in moves.items():
        by_from[m["from"]].add(mid)
        for k in m["via"]:
            by_via[k[0]][k[2]].add(mid)
    junction_roads = {k[0] for k, s in net.segments.items() if s.junction is not None}
    keys_by_road: dict[int, list[Key]] = defaultdict(list)
    for k in lane_of:
        keys_by_road[k[0]].append(k)
    control: dict[str, set[str]] = defaultdict(set)
    idle = 0
    for sig in net.signals:
        got: set[str] = set()
        if sig.road in junction_roads:
            for lane, mids in by_via.get(sig.road, {}).items():
                if _in_validity(lane, sig.validities):
                    got |= mids
        else:
            ranges = net.section_ranges.get(sig.road, ())
            for k in keys_by_road.get(sig.road, ()):
                lid = lane_of[k]
                if not _in_validity(k[2], sig.validities):
                    continue
                s0, s1 = ranges[k[1]] if k[1] < len(ranges) else (-np.inf, np.inf)
                if not s0 - 1e-6 <= sig.s <= s1 + 1e-6:
                    continue
                seg = net.segments[k]
                frac = (sig.s - s0) / (s1 - s0) if s1 > s0 else 0.0
                frac = float(np.clip(frac if seg.forward else 1.0 - frac, 0.0, 1.0))
                off, seg_len = lanes[lid]["seg_off"][k]
                remaining = lanes[lid]["length"] - (off + frac * seg_len)
                for _ in range(4):  # follow a plain continuation to the junction
                    if remaining > MAX_SIGNAL_UPSTREAM_M:
                        break
                    if by_from.get(lid):
                        got |= by_from[lid]
                        break
                    nxt = lanes[lid]["succ"]
                    if len(nxt) != 1 or nxt[0] not in lanes:
                        break
                    lid = nxt[0]
                    remaining += lanes[lid]["length"]
        if got:
            control[sig.signal_id] |= got
        else:
            idle += 1
    return control, idle


def build_groups(moves: dict[str, dict], control: dict[str, set[str]],
                 stop_bar: dict[str, StopBar]) -> dict[str, SignalGroup]:
    """Union signal ids sharing a movement; one group per (junction, component)."""
    uf = _UnionFind()
    owners: dict[str, list[str]] = defaultdict(list)
    for sig_id in sorted(control):
        for mid in control[sig_id]:
            owners[mid].append(sig_id)
    for sig_ids in owners.values():
        for other in sig_ids[1:]:
            uf.union(sig_ids[0], other)
    comp: dict[tuple[int, str], list[str]] = defaultdict(list)
    for mid, sig_ids in owners.items():
        comp[(moves[mid]["jid"], uf.find(sig_ids[0]))].append(mid)
    by_j: dict[int, list[list[str]]] = defaultdict(list)
    for (jid, _root), mids in comp.items():
        by_j[jid].append(sorted(mids, key=mid_order))
    groups: dict[str, SignalGroup] = {}
    for jid in sorted(by_j):
        for n, mids in enumerate(sorted(by_j[jid], key=lambda ms: mid_order(ms[0]))):
            gid = f"j{jid}.sg{n}"
            froms = sorted({moves[m]["from"] for m in mids})
            sig_ids = tuple(sorted({s for m in mids for s in owners[m]}))
            groups[gid] = SignalGroup(gid, f"j{jid}", tuple(mids),
                                      tuple(stop_bar[f] for f in froms), sig_ids)
    return groups
