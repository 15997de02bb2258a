"""JSON payloads decoded into map-shaped structs (services/strap/json_structs.py) give the same
frame table as plain JSON dicts through the per-message reference rules (services/strap/extract.py),
on a user map with every rule kind and on payloads the structs do not fit."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.strap import json_structs
from services.strap.json_structs import StructDecoder, field_tree, struct_type
from services.strap.pipeline import ingest
from services.strap.readers import open_recording, write_trace
from services.strap.scene_schema import compile_channel_map, load_channel_map
from services.strap.synthetic import synthetic_platform_messages
from services.strap.vectorize import vectorize_recording
from tests.strap.test_columns import _per_message, _same

pytest.importorskip("msgspec")

ACTION_BANDS = [[-3.0, "brake"], [0.5, "cruise"], [None, "accelerate"]]

#: a user map using every rule form the language has, over JSON channels
EVERY_RULE = {
    "name": "every_rule",
    "context": {"grp": [{"channel": "/ctx", "path": "group"}, {"channel": "/light", "path": "grp"}]},
    "channels": {
        "/objs": {"rules": [
            {"classify": "objs[*]", "where": {"valid": True}, "by": "cls",
             "objects": {"car": "vehicle.car", "bus": "vehicle.bus"}, "default_object": "actor.unknown",
             "properties": {"action": [{"path": "a", "bands": ACTION_BANDS},
                                       {"path": "state", "map": {"stopped": "stop", "none": None}}]}},
            {"classify": "peds[1:]", "by": "kind.name", "objects": {"walker": "pedestrian"}, "presence": False,
             "properties": {"action": {"select": "legs[*]", "where": {"side": "$grp"}, "path": "act"}}},
            {"feature": "ego.motion", "path": "objs[0].v", "bands": [[0.3, "stopped"], [5.0, "slow"],
                                                                     [None, "moving"]]},
            {"feature": "ego.action", "path": "objs[-1].act", "default": "cruise"},
            {"feature": "static.unknown", "path": "?which", "op": "exists"},
            {"feature": "traffic_cone", "select": "cones[*]", "op": "exists"},
            {"feature": "v2x.tracks.count", "path": "cones[*]", "op": "count",
             "bands": [[1, None], [2, "one"], [6, "few"], [None, "many"]]},
            {"feature": "vehicle.truck.action", "select": "objs[*]", "where": {"cls": ["truck", "lorry"]},
             "path": "act", "reduce": "min"},
            {"feature": "vehicle.van.action", "select": "objs[:2]", "path": "act", "reduce": "first"},
            {"feature": "cyclist.bicyclist.action", "select": "objs[*]", "path": "act", "reduce": "last"},
            {"feature": "v2x.rx", "path": "things[*].class", "op": "exists"},
            {"feature": "v2x.rx.kind", "path": "flag", "map": {"true": "spat", "1": "map", "false": None}},
        ]},
        "/light": {"where": {"src": "md"}, "rules": [
            {"feature": "traffic_light", "select": "groups[*]", "where": {"id": "$grp"}, "path": "phase",
             "op": "exists"},
            {"feature": "traffic_light.color", "select": "groups[*]", "where": {"id": "$grp"}, "path": "phase",
             "map": {"0": "green", "1": "yellow", "2": "red", "-1": None}},
            {"feature": "crosswalk", "path": "meta", "op": "exists"},
            {"feature": "traffic_light.orientation", "path": "meta.orient", "map": {"h": "horizontal",
                                                                                    "v": "vertical"}},
            {"feature": "traffic_light.shape", "path": "meta.shape.kind"},
        ]},
        "/ctx": {"rules": [{"feature": "intersection", "path": "group", "op": "exists"}]},
        "/episodes": {"optional": True, "interval": {"start": "t0", "end": "t1"}, "rules": [
            {"feature": "monitor.divergence.kind", "path": "kind", "map": {"ghost": "ghost_track"}}]},
    },
}


def _messages(n: int, seed: int, odd: bool) -> list[tuple[str, int, Any]]:
    """Every channel of :data:`EVERY_RULE`, values of every JSON type; ``odd``: now and then a
    shape the structs do not fit (a scalar for an object, an object for a list)."""
    rng = np.random.default_rng(seed)
    pick = lambda pool: pool[int(rng.integers(len(pool)))]  # noqa: E731
    out = []
    for k in range(n):
        t = 50_000_000 * k
        objs = [{"valid": pick([True, False, 1, None]), "cls": pick(["car", "bus", "truck", "lorry", "tram", 3]),
                 "a": pick([-5.0, 0.0, 0.2, 2, 9.5, None, "fast"]), "state": pick(["stopped", "none", None, 1]),
                 "v": pick([0.0, 0.1, 3, 7.5]), "act": pick(["stop", "cruise", "BRAKE", "yield", None, True]),
                 "noise": [1, 2, {"deep": "x"}]}
                for _ in range(int(rng.integers(0, 5)))]
        if k % 9 == 0:
            objs.insert(0, None)
        peds = [{"kind": pick([{"name": "walker"}, {"name": "dog"}, {}, None]),
                 "legs": pick([[{"side": "g1", "act": "cross"}, {"side": "g2", "act": "stop"}], [], None])}
                for _ in range(int(rng.integers(0, 4)))]
        objs_msg = {"objs": objs, "peds": peds, "cones": pick([[{}, {"c": 1}], [{}], [0, 1], []]),
                    "things": pick([[{"class": 1}], [{"class": None}, {}], []]), "flag": pick([True, False, 1, 1.0]),
                    "which": "x"}
        if odd and k % 37 == 5:
            objs_msg["objs"] = pick(["scalar", {"valid": True, "cls": "car"}, 3])
        out.append(("/objs", t, objs_msg))
        light = {"src": pick(["md", "md", "gt"]), "grp": pick(["g1", "g2", None]),
                 "groups": [{"id": pick(["g1", "g2", 7]), "phase": pick([0, 1, 2, -1, 2.0, True])}
                            for _ in range(int(rng.integers(0, 3)))],
                 "meta": pick([{"orient": "h", "shape": {"kind": "round"}}, {"orient": "v"}, {"shape": {"kind": "square"}}, None])}
        if odd and k % 43 == 11:  # an object an exists reads with no key a rule reads (truthy or not)
            light["meta"] = pick([{}, {"other": 1}, {"orient": None}, "m", 0])
        if odd and k % 41 == 7:
            light["groups"] = pick([{"id": "g1"}, "g"])
        out.append(("/light", t + 1, light))
        if k % 3 == 0:
            out.append(("/ctx", t + 2, {"group": pick(["g1", "g2", None, 1])}))
        if k % 25 == 0:
            out.append(("/episodes", t + 3, {"t0": 0.0, "t1": pick([0.2, 1.0, None]), "kind": "ghost"}))
    return out


def _reference(cmap):
    """The straightforward path: plain JSON dicts, every rule message by message."""
    return dataclasses.replace(_per_message(cmap), struct_decoders={})


@pytest.mark.parametrize("odd", [False, True])
def test_every_rule_kind_structs_equal_json_dicts_per_message(tmp_path: Path, monkeypatch, odd: bool) -> None:
    cmap = compile_channel_map(EVERY_RULE)
    path = tmp_path / "every.mcap"
    write_trace(path, _messages(3000, 3, odd), chunk_size_bytes=16 << 10)
    declined: list[int] = []
    many = StructDecoder.many

    def counting(self, payloads):
        got = many(self, payloads)
        declined.append(got is None)
        return got
    monkeypatch.setattr(StructDecoder, "many", counting)
    fast = ingest(path, cmap)
    assert len(declined) > 20 and (any(declined) if odd else not any(declined)) and not all(declined)
    with open_recording(path) as rec:
        ref = vectorize_recording(rec, _reference(cmap))
        on_structs = vectorize_recording(rec, _per_message(cmap))  # the reference rules over structs
    _same(fast, ref)
    _same(on_structs, ref)
    lit = [f for k, f in enumerate(fast.feature_names) if fast.vectors[:, k].any()]
    assert len(lit) >= 20, lit


def test_platform_trace_structs_equal_json_dicts_per_message(tmp_path: Path) -> None:
    path = tmp_path / "t.mcap"
    write_trace(path, synthetic_platform_messages(150.0, rate_hz=20, n_channels=10))
    cmap = load_channel_map("platform")
    with open_recording(path) as rec:
        ref = vectorize_recording(rec, _reference(cmap))
    _same(ingest(path, "platform"), ref)


def test_the_struct_holds_only_what_the_map_reads() -> None:
    cmap = load_channel_map("platform")
    root = cmap.struct_decoders["/gt/vehicles"].root
    assert root.__struct_fields__ == ("vehicles",)
    vehicle = json_structs.msgspec.json.decode(b'{"vehicles": [{"kind": "car", "x": 1, "alive": true}]}',
                                               type=root).vehicles[0]
    assert vehicle.__struct_fields__ == ("accel_mps2", "alive", "kind", "speed_mps")
    assert (vehicle.kind, vehicle.alive, vehicle.speed_mps) == ("car", True, None)
    # where a path ends (exists / coded values) the node is decoded whole: {} stays falsy
    recon = cmap.struct_decoders["/recon/ego"]
    structs, kept = recon.many([b'{"rollout": "gt", "signal": 1}',
                                b'{"rollout": "md", "signal": {"phase": 1}, "tracks": [{"aoi_s": 1}], "x": 2}'])
    assert kept.tolist() == [False, True] and len(structs) == 1  # the channel's filter applied
    assert structs[0].signal.phase == 1 and structs[0].tracks[0].aoi_s == 1
    # an object an exists reads that has none of its struct's fields may be {} (falsy) or not: declined
    for unsure in (b'"signal": {}', b'"signal": {"x": 1}', b'"tracks": [{"aoi_s": 1}, {}]', b'"tracks": [{"aoi_s": null}]'):
        assert recon.many([b'{"rollout": "md", ' + unsure + b"}"]) is None, unsure
    assert recon.many([b'{"rollout": "md", "signal": null, "tracks": [null]}']) is not None
    # an object with a field a struct cannot carry as an attribute (a keyword, a dict attribute) is
    # decoded whole
    every = compile_channel_map(EVERY_RULE).struct_decoders["/objs"].root
    types = {f.name: f.type for f in json_structs.msgspec.structs.fields(every)}
    assert types["things"] is Any and types["flag"] is Any and types["objs"] is not Any
    assert struct_type({"rules": [{"feature": "f", "path": "items[*].x"}]}) is None
    assert field_tree({"rules": [{"feature": "f", "path": "a.b"}]}).fields["a"][1].fields["b"][1].leaf


def test_payloads_the_struct_does_not_fit_are_declined() -> None:
    dec = StructDecoder(struct_type({"rules": [{"feature": "f", "path": "a.b"}]}))
    assert dec.many([b'{"a": {"b": 1}}', b'{"a": null}', b"{}"])[1] is None  # no filter: all kept
    for bad in (b'{"a": 3}', b'{"a": {"b": NaN}}', b"[1]", b"{", b'{"a": {"b": 1e400}}'):
        assert dec.many([b'{"a": {"b": 1}}', bad]) is None, bad
    assert struct_type({"rules": [{"feature": "f", "path": ""}]}) is None  # the whole message is the value
