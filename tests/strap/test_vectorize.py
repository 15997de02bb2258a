"""Schema, channel maps, extraction rules and vectorization."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.strap.errors import MissingChannelsError, SchemaError
from services.strap.extract import compile_path, compile_value_rule
from services.strap.scene_schema import load_channel_map, load_schema
from services.strap.vectorize import vectorize_messages
from tests.strap.helpers import apollo_like_file, message_classes

SCHEMA = load_schema()
PLATFORM = load_channel_map("platform")


def test_schema_layout_follows_figure4_object_order():
    f = SCHEMA.features
    assert f[:4] == ("vehicle.truck", "vehicle.truck.action", "vehicle.car", "vehicle.car.action")
    i = f.index("traffic_light")
    assert f[i:i + 4] == ("traffic_light", "traffic_light.color", "traffic_light.shape",
                          "traffic_light.orientation")
    assert f.index("stop_sign") < f.index("crosswalk") < f.index("intersection") < f.index("ego")
    assert SCHEMA.always_kept == ("stop_sign", "intersection", "crosswalk")
    assert SCHEMA.vocab("traffic_light") == ("present",)
    assert SCHEMA.decode("traffic_light.color", 4) == "red" and SCHEMA.decode("traffic_light.color", 0) is None


def rule(spec, feature):
    return compile_value_rule(spec, SCHEMA.vocab(feature), "test")


def test_value_rules_map_bands_count_exists_where_and_reduce():
    color = rule({"path": "phase", "map": {"amber": "yellow"}}, "traffic_light.color")
    assert [color({"phase": p}) for p in ("red", "amber", "GREEN", "purple")] == [4, 3, 2, 0]
    assert color({}) == 0 and color({"phase": None}) == 0
    aoi = rule({"path": "aoi_s", "bands": [[0.3, "fresh"], [1.0, "aging"], [None, "stale"]]}, "v2x.aoi.band")
    assert [aoi({"aoi_s": x}) for x in (0.0, 0.3, 0.99, 7.0)] == [1, 2, 2, 3]
    tracks = rule({"path": "t[*]", "op": "count", "bands": [[1, None], [2, "one"], [6, "few"], [None, "many"]]},
                  "v2x.tracks.count")
    assert [tracks({"t": [0] * n}) for n in (0, 1, 3, 9)] == [0, 1, 2, 3]
    exists = rule({"path": "flag", "op": "exists"}, "intersection")
    assert [exists({"flag": v}) for v in (True, False, 0, "", [], [1])] == [1, 0, 1, 0, 0, 1]
    actions = [{"kind": "car", "action": "cruise"}, {"kind": "car", "action": "stop"},
               {"kind": "bus", "action": "cross"}]
    for red, expected in (("max", 10), ("min", 1), ("first", 1), ("last", 10)):
        fn = rule({"select": "v[*]", "where": {"kind": "car"}, "path": "action", "reduce": red},
                  "vehicle.car.action")
        assert fn({"v": actions}) == expected


def test_protobuf_paths_resolve_enum_names_and_skip_unset_fields():
    fdp = apollo_like_file()
    cls = message_classes(fdp)
    msg = cls["PerceptionObstacles"]()
    msg.perception_obstacle.add(id=1, sub_type=3)
    msg.perception_obstacle.add(id=2)  # sub_type unset (proto2): resolves to nothing
    assert compile_path("perception_obstacle[*].sub_type")(msg) == ["ST_CAR"]
    assert compile_path("perception_obstacle[*].id")(msg) == [1, 2]
    assert compile_path("nonexistent.field")(msg) == []
    tl = cls["TrafficLightDetection"]()
    assert compile_path("traffic_light[*]")(tl) == []


def write_map(tmp_path, body):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"name": "t", "schema": "driving_scene", **body}))
    return p


@pytest.mark.parametrize("body, words", [
    ({"channels": {"/a": {"rules": [{"feature": "no.such", "path": "x"}]}}},
     r'\$\.channels\["/a"\]\.rules\[0\]\.feature: unknown feature'),
    ({"channels": {"/a": {"rules": [{"feature": "traffic_light.color", "path": "x", "map": {"x": "pink"}}]}}},
     r'rules\[0\]: label .pink. not in vocabulary.*; fix:'),
    ({"channels": {"/a": {"rules": [{"feature": "crosswalk", "path": "x", "op": "exists"}]},
                   "/b": {"rules": [{"feature": "crosswalk", "path": "y", "op": "exists"}]}}}, "both"),
    ({"channels": {"/a": {"rules": [{"feature": "ego.action", "path": "x", "op": "exists"}]}}}, "presence"),
    ({"channels": {"/a": {"rules": [{"feature": "ego.action", "path": "x", "op": "sum"}]}}},
     r"rules\[0\]\.op: 'sum' is not one of"),
    ({"channels": {"/a": {"rules": [{"path": "x"}]}}}, "'feature' is a required property"),
    ({"channels": {"/a": {"rules": []}},
      "derived": [{"feature": "v2x.signal_mismatch", "op": "differ", "inputs": ["ego"]}]},
     r"\$\.derived\[0\]\.inputs: unproduced"),
    ({"channels": {"/a": {"rules": [{"feature": "ego.action", "path": 3}]}}}, r"\.path: 3 is of the wrong type"),
    ({"channels": {"/a": {"rules": [{"feature": "ego.action", "path": "x["}]}}}, "bad path segment.*; fix"),
])
def test_invalid_channel_maps_are_rejected_at_load(tmp_path, body, words):
    with pytest.raises(SchemaError, match=words):
        load_channel_map(str(write_map(tmp_path, body)))


def test_retention_by_updated_module():
    recon = PLATFORM.retained_features(["reconstruction"])
    assert "intersection" in recon  # always kept (the platform has no stop signs or crosswalks)
    assert {"v2x.rx.kind", "v2x.aoi.band", "v2x.signal_belief.color", "v2x.signal_mismatch"} <= set(recon)
    assert "app.decision" not in recon and "traffic_light.color" not in recon
    assert list(recon) == [f for f in SCHEMA.features if f in recon]  # schema order kept
    # the derived mismatch needs the true phase although /signals/true is not recon's channel
    assert "/signals/true" in PLATFORM.required_channels(recon)
    with pytest.raises(SchemaError, match="no module"):
        PLATFORM.retained_features(["planner"])
    apollo = load_channel_map("apollo")
    tl = apollo.retained_features(["perception_traffic_light"])
    assert set(tl) == {"traffic_light", "traffic_light.color", "stop_sign", "crosswalk", "intersection"}


CODE = {"green": 0, "amber": 1, "red": 2, "unknown": -1}


def tick(t, phase="green", believed="green", decision="proceed", vehicles=(), events=(), group="j0.sg0"):
    """One simulator step in the simulator's payloads; the gt rollout believes the truth."""
    out = [
        ("/gt/vehicles", t, {"vehicles": [{"id": "ego", "speed_mps": 8.0, "alive": True}, *vehicles]}),
        ("/signals/true", t, {"groups": [{"id": "j0.sg0", "phase": CODE[phase], "time_to_change_s": 4.0},
                                         {"id": "j0.sg1", "phase": 2, "time_to_change_s": 9.0}]}),
        ("/v2x/belief", t, {"ego_group_id": group, "phase": CODE[believed], "tracks": 0, "events": 0,
                            "map_aoi_s": 0.5}),
    ]
    for rollout, bel in (("md", believed), ("gt", phase)):
        out += [
            ("/recon/ego", t, {"rollout": rollout, "ego_group_id": group, "tracks": [],
                               "signal": {"phase": CODE[bel], "time_to_change_s": 4.0, "aoi_s": 0.1, "valid": True}}),
            ("/app/decision", t, {"rollout": rollout, "app": "RLVW", "action": decision if rollout == "md" else "stop",
                                  "committed": False}),
            ("/ctrl/ego", t, {"rollout": rollout, "stop_at_bar": False, "brake_mps2": 0.0}),
        ]
    return out + [("/monitor/events", t, dict(e, start_s=t / 1e9, end_s=(t + 10) / 1e9)) for e in events]


def test_platform_trace_vectorizes_with_mismatch_and_missing_channels():
    car = {"id": "v1", "speed_mps": 0.0, "accel_mps2": 0.0, "alive": True}
    msgs = tick(0) + tick(10, phase="red", believed="green", events=[{"kind": "signal_phase"}]) + \
        tick(20, phase="red", believed="red", decision="stop", vehicles=[car])
    auto = vectorize_messages(msgs, "platform", available_channels={c for c, _, _ in msgs})
    assert auto.reference_channel == "/app/decision"  # 3 md messages each after the rollout filter: first by name
    table = vectorize_messages(msgs, "platform", reference_channel="/gt/vehicles")
    assert table.n_frames == 3 and table.vectors.dtype.kind == "i"
    assert table.column("v2x.signal_mismatch").tolist() == [0, 1, 0]
    assert table.column("traffic_light.color").tolist() == [2, 4, 4]  # the ego group's, not j0.sg1's red
    assert table.column("v2x.signal_belief.color").tolist() == [2, 2, 4]  # md, not the gt twin
    assert table.column("monitor.divergence.kind").tolist() == [0, 4, 0]  # the episode ended at t = 20
    assert table.column("app.decision").tolist() == [1, 1, 3]  # proceed -> go, stop -> warn (md only)
    assert table.column("vehicle.car.action").tolist() == [0, 0, 10]  # the ego (vehicles[0]) is not a car
    assert table.column("intersection").tolist() == [1, 1, 1]
    with pytest.raises(MissingChannelsError) as err:
        vectorize_messages(msgs, "platform", available_channels={"/signals/true"}, modules=["reconstruction"])
    assert err.value.missing == ("/recon/ego", "/v2x/belief")
    lenient = vectorize_messages([m for m in msgs if m[0] != "/recon/ego"], "platform",
                                 available_channels={"/gt/vehicles", "/signals/true", "/v2x/belief"},
                                 modules=["reconstruction"], missing="none")
    assert lenient.missing_channels == ("/recon/ego",)
    assert not lenient.column("v2x.aoi.band").any()
    # no association anywhere: no true light can be chosen
    assert not vectorize_messages(tick(0, group=None), "platform").column("traffic_light").any()


def test_an_absent_episode_channel_means_no_episode():
    msgs = tick(0) + tick(10)
    table = vectorize_messages(msgs, "platform", available_channels={c for c, _, _ in msgs}, modules=["monitor"])
    assert "/monitor/events" not in {c for c, _, _ in msgs} and table.missing_channels == ()
    assert not table.column("monitor.divergence").any()


def test_context_prefers_the_true_group_when_signals_publish_it():
    msgs = [("/signals/true", 0, {"ego_group_id": "j0.sg1", "groups": [{"id": "j0.sg0", "phase": 0},
                                                                        {"id": "j0.sg1", "phase": 2}]}),
            ("/recon/ego", 0, {"rollout": "md", "ego_group_id": "j0.sg0"})]
    table = vectorize_messages(msgs, "platform", modules=["signals"])
    assert table.column("traffic_light.color").tolist() == [4]


def test_paths_index_and_slice():
    d = {"v": [{"a": 1}, {"a": 2}, {"a": 3}]}
    assert compile_path("v[0].a")(d) == [1] and compile_path("v[-1].a")(d) == [3]
    assert compile_path("v[1:].a")(d) == [2, 3] and compile_path("v[9].a")(d) == []
    with pytest.raises(SchemaError):
        compile_path("v[x]")


phases = st.sampled_from(["red", "amber", "green", "unknown"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(phases, phases, st.sampled_from(["proceed", "advise", "stop", "yield"])), min_size=1,
                max_size=12))
def test_vector_shape_and_code_ranges(rows):
    msgs = [m for k, (p, b, d) in enumerate(rows) for m in tick(10 * k, phase=p, believed=b, decision=d)]
    table = vectorize_messages(msgs, PLATFORM)
    ref_count = sum(1 for c, _, m in msgs if c == table.reference_channel and m.get("rollout", "md") == "md")
    assert table.vectors.shape == (ref_count, len(PLATFORM.retained_features()))
    assert np.all(table.vectors >= 0)
    for j, f in enumerate(table.feature_names):
        assert table.vectors[:, j].max() <= len(SCHEMA.vocab(f))
