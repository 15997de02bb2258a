"""User channel maps (issue 18, items 1-2): the published JSON Schema, the one selection
rule, maps given as a file (CLI) or inline / by name (gRPC on loopback), partial
recordings with their warning, --strict / strict, and bad maps named by JSON path."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from lastv2x.rpc.errors import field_violations
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import strap_pb2, strap_pb2_grpc
from services.strap.errors import MissingChannelsError, SchemaError
from services.strap.map_schema import channel_map_json_schema
from services.strap.pipeline import ingest
from services.strap.scene_schema import (
    BUILTIN_MAPS,
    SCHEMA_DIR,
    load_channel_map,
    load_schema,
    select_channel_map,
)
from services.strap.servicer import register
from services.strap.store import StrapStore

TURTLESIM = SCHEMA_DIR / "examples" / "turtlesim.json"


def _recording(shared_data: Path, *parts: str) -> Path:
    path = shared_data.joinpath("recordings", *parts)
    if not path.exists():
        pytest.skip(f"{path} absent")
    return path


def test_the_published_json_schema_is_the_generated_one() -> None:
    published = json.loads((SCHEMA_DIR / "channel_map.schema.json").read_text())
    assert published == channel_map_json_schema(load_schema()), "regenerate: lastv2x strap schema > ..."
    assert "ego.motion" in published["$defs"]["feature"]["enum"]


def test_builtin_and_example_maps_validate_and_declare_formats() -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(channel_map_json_schema(load_schema()))
    for path in [SCHEMA_DIR / f"channels_{n}.json" for n in BUILTIN_MAPS] + [TURTLESIM]:
        validator.validate(json.loads(path.read_text()))
    assert all(load_channel_map(n).formats for n in BUILTIN_MAPS)


def test_the_selection_rule() -> None:
    # explicit wins, even over a recording that another map covers completely
    assert select_channel_map("apollo", "platform_trace", load_channel_map("platform").channels).name == "apollo"
    # else the built-in map covering the largest share of its channels
    assert select_channel_map(None, "mcap", ["/gt/vehicles", "/recon/ego", "/apollo/planning"]).name == "platform"
    assert select_channel_map(None, "mcap", ["/apollo/planning", "/apollo/canbus/chassis"]).name == "apollo"
    # else an error listing every built-in map and what it reads, and how to give one
    with pytest.raises(SchemaError) as err:
        select_channel_map(None, "ros1", ["/turtle1/pose"])
    text = str(err.value)
    assert "/turtle1/pose" in text and "--channel-map" in text
    for name in BUILTIN_MAPS:
        assert f"{name} (" in text
    assert "/apollo/canbus/chassis" in text and "/ctrl/ego" in text


def test_the_service_accepts_no_map_files() -> None:
    with pytest.raises(SchemaError, match="unknown channel map"):
        select_channel_map(str(TURTLESIM), "ros1", [], allow_files=False)
    assert select_channel_map(str(TURTLESIM), "ros1", []).name == "turtlesim"


def test_a_partial_recording_reduces_with_a_warning_and_strict_refuses(shared_data: Path) -> None:
    record = _recording(shared_data, "apollo_cyber", "example.record.00000")
    table = ingest(record, None, missing="none")
    assert table.channel_map == "apollo" and table.n_frames == 15
    assert table.missing_channels == ("/apollo/perception/obstacles", "/apollo/perception/traffic_light")
    assert {"vehicle.car", "traffic_light.color", "traffic_cone"} <= set(table.zeroed_features)
    assert "vehicle.car.action" not in table.zeroed_features  # /apollo/prediction carries it
    assert not table.vectors[:, [table.feature_names.index(f) for f in table.zeroed_features]].any()
    (warning,) = table.warnings
    assert "/apollo/perception/obstacles" in warning and "traffic_light.color" in warning
    assert table.column("ego.motion").any()  # what is there is read
    with pytest.raises(MissingChannelsError):
        ingest(record, None, missing="error")


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from lastv2x_app.cli import main

    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_channel_map_file_on_a_ros1_bag(shared_data: Path, capsys) -> None:
    bag = _recording(shared_data, "ros1_bag", "example.bag")
    rc, out, _err = _cli(capsys, "strap", "reduce", str(bag), "--json")
    assert rc != 0 and "match no built-in map" in out + _err
    rc, out, err = _cli(capsys, "strap", "reduce", str(bag), "--channel-map", str(TURTLESIM), "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["channel_map"] == "turtlesim" and data["frames"] == 1344
    assert len(data["segments"]) > 1 and data["kept_frames"] < data["frames"]
    assert data["missing_channels"] == [] and data["warnings"] == []


def test_cli_schema_and_bad_maps(tmp_path: Path, capsys, shared_data: Path) -> None:
    rc, out, _ = _cli(capsys, "strap", "schema")
    assert rc == 0 and json.loads(out)["$defs"]["feature"]["enum"]
    bag = _recording(shared_data, "ros1_bag", "example.bag")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "b", "channels": {"/turtle1/pose": {"rules": [
        {"feature": "ego.moton", "path": "linear_velocity"}]}}}))
    rc, out, err = _cli(capsys, "strap", "reduce", str(bag), "--channel-map", str(bad))
    text = out + err
    assert rc != 0 and str(bad) in text and '$.channels["/turtle1/pose"].rules[0].feature' in text
    assert "'ego.motion'" in text  # the suggestion
    bad.write_text("{\"name\": ")
    rc, out, err = _cli(capsys, "strap", "reduce", str(bag), "--channel-map", str(bad))
    assert rc != 0 and "line 1 column" in out + err


def test_cli_names_an_undecodable_channel_and_how_to_fix_it(shared_data: Path, tmp_path: Path, capsys) -> None:
    bag = _recording(shared_data, "ros2_bag", "mcap", "bag_with_topics_and_service_events")
    m = tmp_path / "svc.json"
    m.write_text(json.dumps({"name": "svc", "channels": {
        "/test_service1/_service_event": {"rules": [{"feature": "ego", "path": "x", "op": "exists"}]},
        "/test_topic1": {"rules": [{"feature": "crosswalk", "path": "string_value", "op": "exists"}]}}}))
    rc, out, err = _cli(capsys, "strap", "reduce", str(bag), "--channel-map", str(m))
    text = out + err
    assert rc != 0 and "--channel-map" in text and "/test_service1/_service_event" in text
    assert "drop '/test_service1/_service_event' from the channel map" in text


# -- over gRPC ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def strap(tmp_path_factory):
    store = StrapStore(tmp_path_factory.mktemp("strap_maps"), max_bytes=8 * 1024 * 1024)
    server, port = create_server(ServerConfig("strap", log_json=False), lambda s: register(s, store=store))
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield strap_pb2_grpc.StrapServiceStub(channel)
    server.stop(0)


def _upload(stub, path: Path, channel_map: str = ""):
    return stub.Ingest(iter([strap_pb2.IngestRequest(name=path.name, chunk=path.read_bytes(),
                                                     channel_map=channel_map)]), timeout=60)


def test_grpc_partial_apollo_recording_and_strict(strap, shared_data: Path) -> None:
    record = _recording(shared_data, "apollo_cyber", "example.record.00000")
    up = _upload(strap, record)
    assert up.channel_map == "apollo" and "/apollo/perception/obstacles" in up.warnings[0]
    red = strap.Reduce(strap_pb2.ReduceRequest(recording_id=up.recording.id), timeout=60)
    assert red.channel_map == "apollo" and red.input_frames == 15 and red.segments
    assert list(red.missing_channels) == ["/apollo/perception/obstacles", "/apollo/perception/traffic_light"]
    assert "traffic_light.color" in red.zeroed_features and red.warnings
    with pytest.raises(grpc.RpcError) as info:
        strap.Reduce(strap_pb2.ReduceRequest(recording_id=up.recording.id, strict=True), timeout=60)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "/apollo/perception/traffic_light" in info.value.details()


def test_grpc_inline_map_at_ingest_and_reduce(strap, shared_data: Path) -> None:
    bag = _recording(shared_data, "ros1_bag", "example.bag")
    inline = TURTLESIM.read_text()
    up = _upload(strap, bag, channel_map=inline)
    assert up.channel_map == "turtlesim" and not up.warnings
    red = strap.Reduce(strap_pb2.ReduceRequest(recording_id=up.recording.id, module="turtle1_teleop"), timeout=60)
    assert red.channel_map == "turtlesim" and red.input_frames > 1000 and len(red.segments) > 1
    assert not red.missing_channels
    # a map given at Reduce overrides the one given at Ingest
    only_pose = json.dumps({"name": "pose_only", "channels": {"/turtle2/pose": {"rules": [
        {"feature": "vehicle.car", "path": "x", "op": "exists"}]}}})
    red2 = strap.Reduce(strap_pb2.ReduceRequest(recording_id=up.recording.id, channel_map=only_pose), timeout=60)
    assert red2.channel_map == "pose_only" and len(red2.segments) == 1


@pytest.mark.parametrize("channel_map, field_path", [
    (json.dumps({"name": "x", "channels": {"/turtle1/pose": {"rules": [{"feature": "ego", "op": "exist"}]}}}),
     '$.channels["/turtle1/pose"].rules[0].op'),
    (json.dumps({"name": "x", "channels": {"/turtle1/pose": {"rules": [
        {"feature": "ego.motion", "path": "v", "map": {"1": "warp"}}]}}}), '$.channels["/turtle1/pose"].rules[0]'),
    (json.dumps({"name": "x", "channels": {"/turtle1/pose": {"rules": [{"feature": "ego", "path": 7}]}}}),
     '$.channels["/turtle1/pose"].rules[0].path'),
    ("{not json", "line 1 column 2"),
    ("planner", "unknown channel map 'planner'"),
    ("/etc/passwd.json", "unknown channel map"),
])
def test_grpc_bad_maps_are_invalid_argument_with_the_json_path(strap, shared_data: Path, channel_map: str,
                                                                field_path: str) -> None:
    bag = _recording(shared_data, "ros1_bag", "example.bag")
    rid = _upload(strap, bag, channel_map=TURTLESIM.read_text()).recording.id
    for call in (lambda: strap.Reduce(strap_pb2.ReduceRequest(recording_id=rid, channel_map=channel_map),
                                      timeout=30),
                 lambda: _upload(strap, bag, channel_map=channel_map)):
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        (field, description), *_ = field_violations(info.value)
        assert field == "channel_map" and field_path in description and "hint:" in description


def test_grpc_a_map_matching_none_of_the_recordings_channels_is_refused_at_ingest(strap, shared_data: Path) -> None:
    bag = _recording(shared_data, "ros1_bag", "example.bag")
    with pytest.raises(grpc.RpcError) as info:
        _upload(strap, bag, channel_map="apollo")
    (field, description), *_ = field_violations(info.value)
    assert field == "channel_map" and "/apollo/planning" in description and "/turtle1/pose" in description


def test_a_deeply_nested_inline_map_is_refused_not_crashed() -> None:
    from services.strap.scene_schema import resolve_channel_map

    for text in ('{"a":' * 5000 + "1" + "}" * 5000,
                 '{"name": "x", "channels": {"/a": {"rules": [' + "[" * 3000 + "]" * 3000 + "]}}}"):
        with pytest.raises(SchemaError, match="nested deeper than the channel map limit of 32 levels"):
            resolve_channel_map(text)


def test_a_map_of_none_of_the_recordings_channels_names_the_map(strap, shared_data: Path, capsys) -> None:
    record = _recording(shared_data, "apollo_cyber", "example.record.00000")
    rc, out, err = _cli(capsys, "strap", "reduce", str(record), "--channel-map", "autoware")
    assert rc != 0 and "--channel-map" in out + err and "/control/command/control_cmd" in out + err
    rid = _upload(strap, record).recording.id
    with pytest.raises(grpc.RpcError) as info:
        strap.Reduce(strap_pb2.ReduceRequest(recording_id=rid, channel_map="autoware"), timeout=30)
    (field, description), *_ = field_violations(info.value)
    assert field == "channel_map" and "/apollo/canbus/chassis" in description
