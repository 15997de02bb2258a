"""Raw-message mode (issue 13, item 3): an app asks for the messages as they arrived; V2V messages
travel as ETSI CAM / DENM in UPER (asn1tools, the ETSI ASN.1 read from the shared data, ../shared/data or LASTV2X_SHARED_DATA), checked by
round trips and against the published sample messages; SPaT / MAP in our encoding, or as SPATEM /
MAPEM from a DSRC ASN.1 directory (a subset we wrote for the tests)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from lastv2x.core.catalogue import Application
from lastv2x_app.example_app import ContractServicer
from services.simulator.apps.base import AppContext, Decision
from services.simulator.apps.contract import (
    INPUT_RAW,
    AppBuild,
    AppFault,
    ReferenceApp,
    StepRow,
)
from services.simulator.apps.plugin import resolve_app
from services.simulator.paired import execute_paired
from services.simulator.reference import reference_program
from services.simulator.v2x import wire
from services.simulator.v2x.stack import v2x_source_factory
from tests.conftest import shared_data_dir

asn1tools = pytest.importorskip("asn1tools", reason="raw-message mode needs asn1tools (extra 'asn1')")
ETSI = shared_data_dir() / "v2x_asn1" / "etsi"
SAMPLES = ETSI.parents[1] / "v2x_json" / "orange_its_client" / "samples"
pytestmark = pytest.mark.skipif(not ETSI.is_dir(), reason=f"ETSI ASN.1 absent: {ETSI} (set LASTV2X_SHARED_DATA)")


@pytest.fixture(scope="module", autouse=True)
def _etsi_configured() -> Iterator[None]:
    """The simulator's raw-message mode reads the ETSI ASN.1 from the tests' shared data (as the service would
    with LASTV2X_SIMULATOR_ETSI_ASN1_DIR set to it)."""
    wire.configure(ETSI, None)
    yield
    wire.configure(None, None)


@pytest.fixture(scope="module")
def codec() -> wire.WireCodec:
    return wire.WireCodec(ETSI)


def test_cam_round_trip_within_quantization(codec: wire.WireCodec) -> None:
    spec = codec.cam()
    for x, y, v, h, a, brake, flags in [(0.0, 0.0, 0.0, 0.0, 0.0, False, 0), (12.3, -40.1, 13.4, 0.3, -5.2, True, 128),
                                        (-250.7, 399.9, 30.0, -2.9, 2.5, False, 0), (5.0, 5.0, 8.0, math.pi, -9.0, True, 0)]:
        payload = spec.encode("CAM", wire.cam_of_bsm("veh-1", 3.25, x, y, v, h, a, brake, flags))
        got = wire.bsm_of_cam(spec.decode("CAM", payload))
        assert got["station_id"] == wire.station_id("veh-1") and got["generation_delta_time_ms"] == 3250
        assert abs(got["x_m"] - x) < 0.01 and abs(got["y_m"] - y) < 0.01
        assert abs(got["speed_mps"] - v) <= 0.005 and abs(got["accel_mps2"] - a) <= 0.05
        assert abs(math.remainder(got["heading_rad"] - h, 2 * math.pi)) <= math.radians(0.05) + 1e-12
        assert got["brake"] is brake and got["hard_brake"] is bool(flags & 128)
        assert spec.encode("CAM", spec.decode("CAM", payload)) == payload


def test_denm_round_trip(codec: wire.WireCodec) -> None:
    spec = codec.denm()
    payload = spec.encode("DENM", wire.denm_of_eebl("relay-3", "veh-1", 70000, 4.2, 15.0, -3.0, 11.0, 1.2))
    got = wire.eebl_of_denm(spec.decode("DENM", payload))
    assert got["station_id"] == wire.station_id("relay-3") and got["origin_station_id"] == wire.station_id("veh-1")
    assert got["event_id"] == 70000 % 65536 and got["timestamp_s"] == 4.2 and got["cause"] == (99, 1)
    assert abs(got["x_m"] - 15.0) < 0.01 and abs(got["y_m"] + 3.0) < 0.01 and abs(got["speed_mps"] - 11.0) < 0.005


def _sample(name: str) -> dict:
    path = SAMPLES / name
    if not path.is_file():
        pytest.skip(f"published sample absent: {path}")
    return json.loads(path.read_text())["message"]


def test_the_published_sample_cam_encodes_and_our_encoder_agrees(codec: wire.WireCodec) -> None:
    m = _sample("Cam.json")  # Orange its-client, CAM 1.1.3 (EN 302 637-2)
    bc, hf = m["basic_container"], m["high_frequency_container"]
    pos, conf = bc["reference_position"], bc["confidence"]
    value = {"header": {"protocolVersion": m["protocol_version"], "messageID": 2, "stationID": m["station_id"]},
             "cam": {"generationDeltaTime": m["generation_delta_time"], "camParameters": {
                 "basicContainer": {"stationType": bc["station_type"], "referencePosition": {
                     "latitude": pos["latitude"], "longitude": pos["longitude"],
                     "positionConfidenceEllipse": {
                         "semiMajorConfidence": conf["position_confidence_ellipse"]["semi_major_confidence"],
                         "semiMinorConfidence": conf["position_confidence_ellipse"]["semi_minor_confidence"],
                         "semiMajorOrientation": conf["position_confidence_ellipse"]["semi_major_orientation"]},
                     "altitude": {"altitudeValue": pos["altitude"], "altitudeConfidence": "alt-000-01"}}},
                 "highFrequencyContainer": ("basicVehicleContainerHighFrequency", {
                     "heading": {"headingValue": hf["heading"], "headingConfidence": hf["confidence"]["heading"]},
                     "speed": {"speedValue": hf["speed"], "speedConfidence": hf["confidence"]["speed"]},
                     "driveDirection": "forward",
                     "vehicleLength": {"vehicleLengthValue": hf["vehicle_length"],
                                       "vehicleLengthConfidenceIndication": "noTrailerPresent"},
                     "vehicleWidth": hf["vehicle_width"],
                     "longitudinalAcceleration": {"longitudinalAccelerationValue": hf["longitudinal_acceleration"],
                                                  "longitudinalAccelerationConfidence": 102},
                     "curvature": {"curvatureValue": 1023, "curvatureConfidence": "unavailable"},
                     "curvatureCalculationMode": "unavailable",
                     "yawRate": {"yawRateValue": 32767, "yawRateConfidence": "unavailable"}})}}}
    spec = codec.cam()
    assert spec.decode("CAM", spec.encode("CAM", value)) == value
    # our encoder, fed the sample's physical values, writes the sample's field values
    x, y = wire.xy(pos["latitude"], pos["longitude"])
    ours = spec.decode("CAM", spec.encode("CAM", wire.cam_of_bsm(
        "s", m["generation_delta_time"] / 1000.0, x, y, hf["speed"] / 100.0, wire.heading_rad(hf["heading"]), 0.0)))
    got_pos = ours["cam"]["camParameters"]["basicContainer"]["referencePosition"]
    got_hf = ours["cam"]["camParameters"]["highFrequencyContainer"][1]
    assert (got_pos["latitude"], got_pos["longitude"]) == (pos["latitude"], pos["longitude"])
    assert got_hf["heading"]["headingValue"] == hf["heading"] and got_hf["speed"]["speedValue"] == hf["speed"]
    assert ours["cam"]["generationDeltaTime"] == m["generation_delta_time"]


def test_the_published_sample_denm_needs_one_trace_as_its_schema_says(codec: wire.WireCodec) -> None:
    m = _sample("Denm.json")  # Orange its-client, DENM 1.1.1 (EN 302 637-3)
    mc, loc = m["management_container"], m["location_container"]
    pos = mc["event_position"]

    def value(traces: list) -> dict:
        return {"header": {"protocolVersion": m["protocol_version"], "messageID": 1, "stationID": m["station_id"]},
                "denm": {"management": {
                    "actionID": {"originatingStationID": mc["action_id"]["originating_station_id"],
                                 "sequenceNumber": mc["action_id"]["sequence_number"]},
                    "detectionTime": mc["detection_time"], "referenceTime": mc["reference_time"],
                    "eventPosition": {"latitude": pos["latitude"], "longitude": pos["longitude"],
                                      "positionConfidenceEllipse": {"semiMajorConfidence": 4095,
                                                                    "semiMinorConfidence": 4095,
                                                                    "semiMajorOrientation": 3601},
                                      "altitude": {"altitudeValue": pos["altitude"],
                                                   "altitudeConfidence": "unavailable"}},
                    "relevanceDistance": "lessThan50m", "relevanceTrafficDirection": "upstreamTraffic",
                    "validityDuration": mc["validity_duration"], "transmissionInterval": mc["transmission_interval"],
                    "stationType": mc["station_type"]},
                    "situation": {"informationQuality": 0, "eventType": {
                        "causeCode": m["situation_container"]["event_type"]["cause"],
                        "subCauseCode": m["situation_container"]["event_type"]["subcause"]}},
                    "location": {"eventSpeed": {"speedValue": loc["event_speed"], "speedConfidence": 127},
                                 "eventPositionHeading": {"headingValue": loc["event_position_heading"],
                                                          "headingConfidence": 127},
                                 "traces": traces}}}
    spec = codec.denm()
    with pytest.raises((asn1tools.EncodeError, ValueError)):  # traces is SIZE(1..7): the sample's [] is refused
        spec.encode("DENM", value(loc["traces"]))
    v = value([[]])
    assert spec.decode("DENM", spec.encode("DENM", v)) == v
    x, y = wire.xy(pos["latitude"], pos["longitude"])
    ours = wire.eebl_of_denm(spec.decode("DENM", spec.encode("DENM", wire.denm_of_eebl(
        "a", "b", 1, mc["reference_time"] / 1000.0, x, y, loc["event_speed"] / 100.0,
        wire.heading_rad(loc["event_position_heading"])))))
    assert ours["timestamp_s"] * 1000 == mc["reference_time"]
    assert wire.latlon(ours["x_m"], ours["y_m"]) == (pos["latitude"], pos["longitude"])


class RawRecorder:
    """Asks for raw messages and records what it is given; decides as the reference apps on the empty
    belief it gets (a generic ApplicationUnderTest, not a DecideFnApp: the contract's step path)."""

    input_mode = INPUT_RAW

    def __init__(self) -> None:
        self.inner = ReferenceApp()
        self.seen: list[tuple[float, StepRow]] = []

    @property
    def build(self) -> AppBuild:
        return AppBuild("raw-recorder", "1")

    def open(self, sessions: Sequence[tuple[str, AppContext]]) -> None:
        self.inner.open(sessions)

    def step(self, k: int, t_s: float, rows: Sequence[StepRow]) -> Sequence[Decision | AppFault]:
        self.seen.extend((t_s, r) for r in rows)
        return self.inner.step(k, t_s, rows)

    def close(self, session_ids: Sequence[str]) -> None:
        self.inner.close(session_ids)


def _run_raw(app, application: Application = Application.EEBL):  # type: ignore[no-untyped-def]
    return execute_paired(reference_program(application, seed=1), md_source_factory=v2x_source_factory(), app=app)


def test_a_raw_app_gets_the_arrivals_of_the_message_driven_ego_and_ideal_messages_for_the_ground_truth() -> None:
    app = RawRecorder()
    out = _run_raw(app, Application.RLVW)
    assert not out.app_error
    md = [(t, r) for t, r in app.seen if r.session_id.endswith("-md")]
    gt = [(t, r) for t, r in app.seen if r.session_id.endswith("-gt")]
    assert md and gt
    kinds: set[str] = set()
    prev_t = -math.inf
    for t, r in md:
        assert not r.info.signals and not r.info.tracks  # no belief in raw mode
        for m in r.messages:
            assert prev_t - 1e-9 < m.rx_s <= t + 1e-9, (m.kind, m.rx_s, t)
            kinds.add(m.kind)
            wire.decode(m)  # every payload decodes
        prev_t = t
    assert {"SPAT", "MAP"} <= kinds  # (the RLVW reference scene has no other vehicle: no CAM)
    for t, r in gt:  # no radio: the ideal messages of the step, all arrived at t
        assert "SPAT" in {m.kind for m in r.messages} and all(m.rx_s == t for m in r.messages)
    assert "MAP" in {m.kind for m in gt[0][1].messages}  # the ego's association while it approaches
    spat = next(m for _, r in md for m in r.messages if m.kind == "SPAT")
    body = wire.decode(spat)
    assert body["groups"] and body["groups"][0]["phase"] in ("green", "amber", "red", "unknown")


def test_eebl_events_arrive_as_denms_over_grpc(served) -> None:  # type: ignore[no-untyped-def]
    inner = RawRecorder()
    app = resolve_app(served(ContractServicer(inner)))
    assert app.input_mode == INPUT_RAW  # type: ignore[attr-defined]
    out = _run_raw(app, Application.EEBL)
    assert not out.app_error
    md = [r for _, r in inner.seen if r.session_id.endswith("-md")]
    assert any(m.kind == "CAM" for r in md for m in r.messages)
    denms = [m for r in md for m in r.messages if m.kind == "DENM"]
    assert denms and wire.eebl_of_denm(wire.decode(denms[0]))["cause"] == (99, 1)
    assert all(not r.info.tracks for _, r in inner.seen)


def test_missing_asn1_is_an_application_error_naming_the_directory(tmp_path: Path) -> None:
    wire.configure(tmp_path / "nowhere", None)
    try:
        out = _run_raw(RawRecorder())
    finally:
        wire.configure(ETSI, None)
    assert "not found" in out.app_error and "nowhere" in out.app_error and not out.admitted


def test_a_dsrc_directory_that_is_not_one_is_named(tmp_path: Path) -> None:
    with pytest.raises(wire.Asn1Unavailable, match="not a directory"):
        wire.WireCodec(ETSI, tmp_path / "absent").check()
    (tmp_path / "empty").mkdir()
    with pytest.raises(wire.Asn1Unavailable, match="no .asn file"):
        wire.WireCodec(ETSI, tmp_path / "empty").check()


def test_belief_mode_stays_the_default(codec: wire.WireCodec) -> None:
    p = reference_program(Application.EEBL, seed=1)
    assert execute_paired(p, md_source_factory=v2x_source_factory(), app=ReferenceApp()).to_json_bytes() == \
        execute_paired(p, md_source_factory=v2x_source_factory()).to_json_bytes()


# ----------------------------------------------------------------------------- SPATEM / MAPEM
DSRC_SUBSET = Path(__file__).parent / "data" / "dsrc_subset"  # our own subset of ISO TS 19091 (see its header)


@pytest.fixture(scope="module")
def dsrc_codec() -> wire.WireCodec:
    return wire.WireCodec(ETSI, DSRC_SUBSET)


def _spat_body(groups: list[dict], sender: str = "rsu0", t_s: float = 12.34, msg_count: int = 130) -> dict:
    return {"kind": "SPAT", "sender": sender, "timestamp_s": t_s, "msg_count": msg_count, "groups": groups}


def test_spatem_round_trip_keeps_names_numbers_phases_and_times_to_a_tenth(dsrc_codec: wire.WireCodec) -> None:
    spec = dsrc_codec.dsrc()
    groups = [{"group_id": "j3.sg0", "phase": "green", "min_end_time_s": 17.26, "max_end_time_s": 19.0,
               "green_start_time_s": 2.0},
              {"group_id": "j3.sg1", "phase": "red", "min_end_time_s": 17.3, "max_end_time_s": None,
               "green_start_time_s": 22.31},
              {"group_id": "j4.sg2", "phase": "amber", "min_end_time_s": None, "max_end_time_s": None,
               "green_start_time_s": None}]
    value = wire.spatem_of_spat(_spat_body(groups))
    payload = spec.encode("SPATEM", value)
    decoded = spec.decode("SPATEM", payload)
    assert spec.encode("SPATEM", decoded) == payload
    assert decoded["header"] == {"protocolVersion": 2, "messageID": 4, "stationID": wire.station_id("rsu0")}
    states = decoded["spat"]["intersections"]
    assert [(s["name"], s["id"]["id"], s["revision"], s["timeStamp"]) for s in states] == \
        [("j3", 3, 2, 12340), ("j4", 4, 2, 12340)]
    assert [m["signalGroup"] for s in states for m in s["states"]] == [1, 2, 3]
    got = wire.spat_of_spatem(decoded)["groups"]
    for want, g in zip(groups, got, strict=True):
        assert g["group_id"] == want["group_id"] and g["phase"] == want["phase"]
        for f in ("min_end_time_s", "max_end_time_s", "green_start_time_s"):
            assert (g[f] is None) == (want[f] is None), f
            if want[f] is not None:
                assert abs(g[f] - want[f]) <= 0.05 + 1e-9, (f, g[f], want[f])
    red = states[0]["states"][1]["state-time-speed"]
    assert [e["eventState"] for e in red] == ["stop-And-Remain", "protected-Movement-Allowed"]  # the next green


def test_mapem_round_trip_keeps_stop_bars_to_a_centimetre_and_says_when_one_is_unknown(
        dsrc_codec: wire.WireCodec) -> None:
    spec = dsrc_codec.dsrc()
    body = {"kind": "MAP", "sender": "rsu1", "timestamp_s": 0.7, "msg_count": 3,
            "lanes": [{"lane_id": "S.in", "signal_group_id": "j0.sg0", "stop_bar_xy_m": [1.75, -10.0]},
                      {"lane_id": "W.in", "signal_group_id": "j0.sg1", "stop_bar_xy_m": [-10.0, -1.75]},
                      {"lane_id": "ego-approach", "signal_group_id": "j1.sg0", "stop_bar_xy_m": None}]}
    decoded = spec.decode("MAPEM", spec.encode("MAPEM", wire.mapem_of_map(body)))
    assert decoded["header"]["messageID"] == 5 and decoded["map"]["msgIssueRevision"] == 3
    got = wire.map_of_mapem(decoded)["lanes"]
    assert [(ln["lane_id"], ln["signal_group_id"], ln["intersection_id"], ln["signal_group"]) for ln in got] == \
        [("S.in", "j0.sg0", 0, 1), ("W.in", "j0.sg1", 0, 2), ("ego-approach", "j1.sg0", 1, 1)]
    for want, g in zip(body["lanes"], got, strict=True):
        if want["stop_bar_xy_m"] is None:
            assert g["stop_bar_xy_m"] is None
        else:
            assert math.dist(g["stop_bar_xy_m"], want["stop_bar_xy_m"]) < 0.01


def test_two_groups_on_one_dsrc_number_are_refused_naming_both() -> None:
    clash = next(f"j0.{i}" for i in range(100_000) if wire.signal_group_number(f"j0.{i}") == 1)  # j0.sg0 is 1
    body = _spat_body([{"group_id": "j0.sg0", "phase": "red"}, {"group_id": clash, "phase": "green"}])
    with pytest.raises(wire.WireError, match=f"'{clash}' and 'j0.sg0' .* both number 1"):
        wire.spatem_of_spat(body)


def _spat_arrivals(app: RawRecorder, codec: wire.WireCodec) -> list[tuple[str, float, list[dict]]]:
    out = []
    for _, r in app.seen:
        for m in r.messages:
            if m.kind == "SPAT":
                body = wire.decode(m, codec)
                groups = wire.spat_of_spatem(body)["groups"] if m.encoding == wire.SPATEM_ENCODING else body["groups"]
                out.append((r.session_id.rsplit("-", 1)[1], m.rx_s, groups))
    return out


def test_with_a_dsrc_directory_spat_and_map_travel_as_spatem_and_mapem_and_say_what_the_json_said(
        codec: wire.WireCodec, dsrc_codec: wire.WireCodec) -> None:
    json_app, dsrc_app = RawRecorder(), RawRecorder()
    _run_raw(json_app, Application.RLVW)
    wire.configure(None, DSRC_SUBSET)
    try:
        out = _run_raw(dsrc_app, Application.RLVW)
    finally:
        wire.configure(None, None)
    assert not out.app_error
    encodings = {(m.kind, m.encoding) for _, r in dsrc_app.seen for m in r.messages}
    assert encodings == {("SPAT", wire.SPATEM_ENCODING), ("MAP", wire.MAPEM_ENCODING)}
    md_map = next(m for _, r in dsrc_app.seen if r.session_id.endswith("-md") for m in r.messages if m.kind == "MAP")
    lane = wire.map_of_mapem(wire.decode(md_map, dsrc_codec))["lanes"][0]
    assert lane["lane_id"] == "S.in" and lane["signal_group_id"] == "j0.sg0"
    assert math.dist(lane["stop_bar_xy_m"], [1.75, -10.0]) < 0.01
    ours, theirs = _spat_arrivals(json_app, codec), _spat_arrivals(dsrc_app, dsrc_codec)
    assert len(ours) == len(theirs) > 10
    for (rollout, rx, want), (rollout2, rx2, got) in zip(ours, theirs, strict=True):
        assert (rollout, rx) == (rollout2, rx2)
        assert [(g["group_id"], g["phase"]) for g in want] == [(g["group_id"], g["phase"]) for g in got]
        for w, g in zip(want, got, strict=True):
            if w["min_end_time_s"] is not None:
                assert abs(g["min_end_time_s"] - w["min_end_time_s"]) <= 0.05 + 1e-9
