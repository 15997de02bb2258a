"""Raw-message mode (issue 13, item 3): the messages an ego received, encoded as they travel.

An application under test that asks for ``INPUT_MODE_RAW`` gets, per step, the messages that
arrived since the previous step with their arrival times, instead of the belief the V2X stack
reconstructed:

* V2V messages in ETSI encodings, UPER through ``asn1tools`` (extra ``asn1``) from the ETSI ASN.1
  read at run time from ``LASTV2X_SIMULATOR_ETSI_ASN1_DIR`` (default ``../shared/data/v2x_asn1/etsi``
  beside the repository; never copied into it) and compiled once per process: a BSM becomes a
  **CAM** (EN 302 637-2 v1.4.1), an EEBL event a **DENM** (EN 302 637-3 v1.3.1, cause 99
  dangerousSituation / 1 emergencyElectronicBrakeEngaged);
* SPaT and MAP in **our encoding** (sorted-key UTF-8 JSON, ``json:lastv2x-spat-1`` /
  ``json:lastv2x-map-1``): their ASN.1 (ISO TS 19091 DSRC) is not public.
  ``LASTV2X_SIMULATOR_DSRC_ASN1_DIR`` points at a user-supplied directory of it; it is then compiled
  with the ETSI SPATEM/MAPEM wrappers (TS 103 301) and must define ``SPATEM`` and ``MAPEM``, or raw
  mode is refused naming the directory. With it, SPaT travels as a **SPATEM** and MAP as a
  **MAPEM** (UPER), built by :func:`spatem_of_spat` / :func:`mapem_of_map` (see there for the
  numbering of intersections, signal groups and lanes, and what our MAP cannot say).

Positions: the scenario plane (x east, y north, metres) is laid on a local tangent plane at
:data:`ORIGIN_LAT_DEG`, :data:`ORIGIN_LON_DEG` (spherical, radius :data:`EARTH_RADIUS_M`);
headings are converted from rad CCW from +x to ETSI's 0.1 degree clockwise from north. Times:
``generationDeltaTime`` is the sample time in ms mod 65536; DENM times (``TimestampIts``) are
scenario milliseconds. Station ids are the CRC-32 of the sender's id.
"""

from __future__ import annotations

import functools
import json
import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ORIGIN_LAT_DEG = 48.0  # where the scenario plane's (0, 0) lies on the globe
ORIGIN_LON_DEG = 11.0
EARTH_RADIUS_M = 6_371_000.0
CAM_ENCODING = "uper:etsi-cam-en302637-2"
DENM_ENCODING = "uper:etsi-denm-en302637-3"
SPAT_ENCODING = "json:lastv2x-spat-1"
MAP_ENCODING = "json:lastv2x-map-1"
SPATEM_ENCODING = "uper:etsi-spatem-ts103301"
MAPEM_ENCODING = "uper:etsi-mapem-ts103301"
MESSAGE_ID_SPATEM = 4  # ItsPduHeader messageID (ITS-Container v2)
MESSAGE_ID_MAPEM = 5
TIME_MARK_UNKNOWN = 36001  # ISO TS 19091 TimeMark: "unknown"
LATITUDE_UNAVAILABLE = 900_000_001  # Latitude / Longitude "unavailable"
LONGITUDE_UNAVAILABLE = 1_800_000_001
STATION_PASSENGER_CAR = 5
CAUSE_DANGEROUS_SITUATION = 99
SUBCAUSE_EMERGENCY_BRAKE = 1  # DangerousSituationSubCauseCode emergencyElectronicBrakeEngaged
HARD_BRAKE_FLAG = 1 << 7  # BSM event flag (J2735 eventHardBraking), as the V2X stack sets it
_CAM_FILES = ("cam_en302637_2/CAM-PDU-Descriptions.asn", "cam_en302637_2/cdd/ITS-Container.asn")
_DENM_FILES = ("denm_en302637_3/DENM-PDU-Descriptions.asn", "denm_en302637_3/cdd/ITS-Container.asn")
_IS_FILES = ("is_ts103301/SPATEM-PDU-Descriptions.asn", "is_ts103301/MAPEM-PDU-Descriptions.asn",
             "is_ts103301/cdd/ITS-Container.asn")


def default_etsi_dir() -> Path:
    """``../shared/data/v2x_asn1/etsi`` beside the repository (this file is services/simulator/v2x/)."""
    return Path(__file__).resolve().parents[3].parent / "shared" / "data" / "v2x_asn1" / "etsi"


class Asn1Unavailable(RuntimeError):
    """Raw-message mode cannot encode: asn1tools missing, or the ASN.1 absent / not compiling."""


@dataclass(frozen=True, slots=True)
class RawMessage:
    """One received message, encoded (``lastv2x.v1.RawMessage``)."""

    kind: str  # "CAM", "DENM", "SPAT", "MAP"
    encoding: str
    payload: bytes
    rx_s: float
    sender_id: str
    hops: int = 0


@functools.lru_cache(maxsize=8)
def _compile(files: tuple[str, ...]) -> Any:
    try:
        import asn1tools
    except ImportError:
        raise Asn1Unavailable("raw-message mode needs asn1tools (pip install 'lastv2x[asn1]')") from None
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise Asn1Unavailable(f"ASN.1 file(s) not found: {', '.join(missing)} (set LASTV2X_SIMULATOR_ETSI_ASN1_DIR "
                              "to a directory holding the ETSI ITS ASN.1, e.g. ../shared/data/v2x_asn1/etsi)")
    try:
        return asn1tools.compile_files(list(files), "uper")
    except Exception as exc:
        raise Asn1Unavailable(f"the ASN.1 in {Path(files[0]).parent} does not compile: {type(exc).__name__}: "
                              f"{exc}") from None


def station_id(name: str) -> int:
    return zlib.crc32(name.encode()) & 0xFFFFFFFF


# ----------------------------------------------------------------------------- units
_M_PER_DEG_LAT = EARTH_RADIUS_M * math.pi / 180.0
_M_PER_DEG_LON = _M_PER_DEG_LAT * math.cos(math.radians(ORIGIN_LAT_DEG))


def _clamp(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


def latlon(x_m: float, y_m: float) -> tuple[int, int]:
    """ETSI Latitude / Longitude (0.1 microdegree) of a scenario point."""
    return (round((ORIGIN_LAT_DEG + y_m / _M_PER_DEG_LAT) * 1e7), round((ORIGIN_LON_DEG + x_m / _M_PER_DEG_LON) * 1e7))


def xy(lat: int, lon: int) -> tuple[float, float]:
    return ((lon / 1e7 - ORIGIN_LON_DEG) * _M_PER_DEG_LON, (lat / 1e7 - ORIGIN_LAT_DEG) * _M_PER_DEG_LAT)


def heading_value(heading_rad: float) -> int:
    """ETSI HeadingValue (0.1 degree clockwise from north) of a heading in rad CCW from +x (east)."""
    return round((90.0 - math.degrees(heading_rad)) * 10.0) % 3600


def heading_rad(value: int) -> float:
    h = math.radians(90.0 - value / 10.0)
    return math.atan2(math.sin(h), math.cos(h))


def _position(x_m: float, y_m: float) -> dict[str, Any]:
    lat, lon = latlon(x_m, y_m)
    return {"latitude": lat, "longitude": lon,
            "positionConfidenceEllipse": {"semiMajorConfidence": 4095, "semiMinorConfidence": 4095,
                                          "semiMajorOrientation": 3601},
            "altitude": {"altitudeValue": 800001, "altitudeConfidence": "unavailable"}}


def _speed(v: float) -> int:
    return _clamp(round(v * 100.0), 0, 16382)


# ----------------------------------------------------------------------------- V2V -> ETSI
def cam_of_bsm(sender: str, timestamp_s: float, x_m: float, y_m: float, speed_mps: float, heading: float,
               accel_mps2: float, brake: bool = False, event_flags: int = 0, length_m: float = 4.5,
               width_m: float = 1.8) -> dict[str, Any]:
    """The CAM (asn1tools value) carrying a BSM's Part I."""
    bits = (0x80 if brake else 0) | (0x20 if event_flags & HARD_BRAKE_FLAG else 0)  # brakePedal(0), emergencyBrake(2)
    hf = {"heading": {"headingValue": heading_value(heading), "headingConfidence": 127},
          "speed": {"speedValue": _speed(speed_mps), "speedConfidence": 127},
          "driveDirection": "forward",
          "vehicleLength": {"vehicleLengthValue": _clamp(round(length_m * 10), 1, 1022),
                            "vehicleLengthConfidenceIndication": "unavailable"},
          "vehicleWidth": _clamp(round(width_m * 10), 1, 61),
          "longitudinalAcceleration": {"longitudinalAccelerationValue": _clamp(round(accel_mps2 * 10), -160, 160),
                                       "longitudinalAccelerationConfidence": 102},
          "curvature": {"curvatureValue": 1023, "curvatureConfidence": "unavailable"},
          "curvatureCalculationMode": "unavailable",
          "yawRate": {"yawRateValue": 32767, "yawRateConfidence": "unavailable"},
          "accelerationControl": (bytes([bits]), 7)}
    return {"header": {"protocolVersion": 2, "messageID": 2, "stationID": station_id(sender)},
            "cam": {"generationDeltaTime": round(timestamp_s * 1000.0) % 65536,
                    "camParameters": {"basicContainer": {"stationType": STATION_PASSENGER_CAR,
                                                         "referencePosition": _position(x_m, y_m)},
                                      "highFrequencyContainer": ("basicVehicleContainerHighFrequency", hf)}}}


def bsm_of_cam(cam: Mapping[str, Any]) -> dict[str, Any]:
    """What a CAM says, back in the simulator's units (positions to ~1 cm, speed 0.01 m/s,
    heading 0.1 degree, acceleration 0.1 m/s^2, time in ms mod 65.536 s)."""
    p = cam["cam"]["camParameters"]
    pos = p["basicContainer"]["referencePosition"]
    kind, hf = p["highFrequencyContainer"]
    x, y = xy(pos["latitude"], pos["longitude"])
    bits = hf.get("accelerationControl", (b"\x00", 7))[0][0]
    return {"station_id": cam["header"]["stationID"], "generation_delta_time_ms": cam["cam"]["generationDeltaTime"],
            "x_m": x, "y_m": y, "speed_mps": hf["speed"]["speedValue"] / 100.0,
            "heading_rad": heading_rad(hf["heading"]["headingValue"]),
            "accel_mps2": hf["longitudinalAcceleration"]["longitudinalAccelerationValue"] / 10.0,
            "brake": bool(bits & 0x80), "hard_brake": bool(bits & 0x20)}


def denm_of_eebl(sender: str, origin: str, event_id: int, timestamp_s: float, x_m: float, y_m: float,
                 speed_mps: float, heading: float) -> dict[str, Any]:
    """The DENM (asn1tools value) of a hard-braking event (EEBL), sent by ``sender`` (the origin
    itself, or a relay) about ``origin``'s event ``event_id``."""
    ms = max(0, round(timestamp_s * 1000.0))
    return {"header": {"protocolVersion": 1, "messageID": 1, "stationID": station_id(sender)},
            "denm": {"management": {"actionID": {"originatingStationID": station_id(origin),
                                                 "sequenceNumber": event_id % 65536},
                                    "detectionTime": ms, "referenceTime": ms,
                                    "eventPosition": _position(x_m, y_m), "validityDuration": 10,
                                    "stationType": STATION_PASSENGER_CAR},
                     "situation": {"informationQuality": 1,
                                   "eventType": {"causeCode": CAUSE_DANGEROUS_SITUATION,
                                                 "subCauseCode": SUBCAUSE_EMERGENCY_BRAKE}},
                     "location": {"eventSpeed": {"speedValue": _speed(speed_mps), "speedConfidence": 127},
                                  "eventPositionHeading": {"headingValue": heading_value(heading),
                                                           "headingConfidence": 127},
                                  "traces": [[]]}}}


def eebl_of_denm(denm: Mapping[str, Any]) -> dict[str, Any]:
    m, loc = denm["denm"]["management"], denm["denm"].get("location", {})
    x, y = xy(m["eventPosition"]["latitude"], m["eventPosition"]["longitude"])
    ev = denm["denm"].get("situation", {}).get("eventType", {})
    return {"station_id": denm["header"]["stationID"], "origin_station_id": m["actionID"]["originatingStationID"],
            "event_id": m["actionID"]["sequenceNumber"], "timestamp_s": m["referenceTime"] / 1000.0,
            "x_m": x, "y_m": y, "cause": (ev.get("causeCode"), ev.get("subCauseCode")),
            "speed_mps": loc["eventSpeed"]["speedValue"] / 100.0 if "eventSpeed" in loc else None,
            "heading_rad": heading_rad(loc["eventPositionHeading"]["headingValue"])
            if "eventPositionHeading" in loc else None}


def _json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


# ----------------------------------------------------------------------------- SPaT / MAP -> DSRC
# Numbering. DSRC names intersections, signal groups and lanes by small integers; ours are strings.
# Grounded maps name a junction ``j<n>`` and its groups ``j<n>.sg<k>`` (maps/model.py): those become
# IntersectionID n and SignalGroupID k + 1 (0 means "none" in DSRC). Other names, and every lane, get
# the CRC-32 of the name in the type's range; two names of one intersection that land on one number
# are refused (:class:`WireError`). The names themselves travel too, in the optional
# ``DescriptiveName`` fields (``name`` / ``movementName``), so a decoder gets them back exactly.
_JUNCTION_NAME = re.compile(r"^j(\d+)$")
_GROUP_NAME = re.compile(r"\.sg(\d+)$")
_PHASE_STATE = {"green": "protected-Movement-Allowed", "amber": "protected-clearance", "red": "stop-And-Remain",
                "unknown": "unavailable"}
_STATE_PHASE = {"protected-Movement-Allowed": "green", "permissive-Movement-Allowed": "green",
                "protected-clearance": "amber", "permissive-clearance": "amber", "stop-And-Remain": "red",
                "stop-Then-Proceed": "red", "pre-Movement": "red"}  # anything else (dark, unavailable, caution): unknown
_STATUS_FIXED_TIME = (bytes([0x04, 0x00]), 16)  # IntersectionStatusObject bit 5 fixedTimeOperation
_INGRESS = (bytes([0x80]), 2)  # LaneDirection ingressPath
_NOT_SHARED = (bytes(2), 10)
_VEHICLE_LANE = ("vehicle", (bytes(1), 8))


class WireError(ValueError):
    """A message our numbering cannot put into DSRC (two names on one number)."""


def junction_of(group_id: str, sender: str) -> str:
    """The junction a signal group belongs to: ``j3`` for ``j3.sg1``; the sender for other names."""
    head, dot, _ = group_id.rpartition(".")
    return head if dot else sender


def intersection_number(junction: str) -> int:
    m = _JUNCTION_NAME.match(junction)
    return int(m[1]) if m and int(m[1]) <= 0xFFFF else zlib.crc32(junction.encode()) & 0xFFFF


def signal_group_number(group_id: str) -> int:
    m = _GROUP_NAME.search(group_id)
    return int(m[1]) + 1 if m and int(m[1]) < 255 else zlib.crc32(group_id.encode()) % 255 + 1


def lane_number(lane_id: str) -> int:
    return zlib.crc32(lane_id.encode()) % 255 + 1


def _name(text: str) -> dict[str, str]:
    """``{"name": text}`` when it fits a DescriptiveName (IA5String of 1..63), else nothing."""
    return {"name": text} if 0 < len(text) <= 63 and text.isascii() else {}


def _distinct(numbers: Mapping[str, int], what: str, junction: str) -> None:
    seen: dict[int, str] = {}
    for name, n in sorted(numbers.items()):
        if n in seen:
            raise WireError(f"{what} {seen[n]!r} and {name!r} of junction {junction!r} both number {n} in DSRC; "
                            f"rename one (grounded maps use j<n>.sg<k>)")
        seen[n] = name


def time_mark(t_s: float | None) -> int:
    """TimeMark of a scenario time: tenths of a second within the hour (the scenario starts at the
    top of an hour, so runs under an hour read back exactly to 0.1 s); None -> unknown."""
    return TIME_MARK_UNKNOWN if t_s is None else round(t_s * 10.0) % 36000


def _seconds(mark: int | None) -> float | None:
    return None if mark is None or mark >= 36000 else mark / 10.0


def _by_junction(rows: Iterable[Mapping[str, Any]], group_key: str, sender: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in rows:
        g = r.get(group_key)
        out.setdefault(junction_of(g, sender) if g else sender, []).append(r)
    return dict(sorted(out.items()))


def spatem_of_spat(body: Mapping[str, Any]) -> dict[str, Any]:
    """The SPATEM (asn1tools value) of one of our SPaT messages: an IntersectionState per junction,
    a MovementState per signal group whose first MovementEvent is the current phase (minEndTime /
    maxEndTime; startTime when green) and, when not green, a second one for the next green
    (startTime = green start). Fixed-time operation; revision = msg_count mod 128."""
    revision = int(body.get("msg_count", 0)) % 128
    ms_in_minute = round(body["timestamp_s"] * 1000.0) % 60000
    intersections = []
    for junction, groups in _by_junction(body["groups"], "group_id", body["sender"]).items():
        numbers = {g["group_id"]: signal_group_number(g["group_id"]) for g in groups}
        _distinct(numbers, "signal groups", junction)
        states = []
        for g in groups:
            phase, green_at = g["phase"], g.get("green_start_time_s")
            timing: dict[str, int] = {"minEndTime": time_mark(g.get("min_end_time_s"))}
            if g.get("max_end_time_s") is not None:
                timing["maxEndTime"] = time_mark(g["max_end_time_s"])
            if phase == "green" and green_at is not None:
                timing["startTime"] = time_mark(green_at)
            events = [{"eventState": _PHASE_STATE.get(phase, "unavailable"), "timing": timing}]
            if phase != "green" and green_at is not None:
                events.append({"eventState": _PHASE_STATE["green"],
                               "timing": {"startTime": time_mark(green_at), "minEndTime": TIME_MARK_UNKNOWN}})
            states.append({**({"movementName": g["group_id"]} if _name(g["group_id"]) else {}),
                           "signalGroup": numbers[g["group_id"]], "state-time-speed": events})
        intersections.append({**_name(junction), "id": {"id": intersection_number(junction)}, "revision": revision,
                              "status": _STATUS_FIXED_TIME, "timeStamp": ms_in_minute, "states": states})
    return {"header": {"protocolVersion": 2, "messageID": MESSAGE_ID_SPATEM, "stationID": station_id(body["sender"])},
            "spat": {"intersections": intersections}}


def spat_of_spatem(spatem: Mapping[str, Any]) -> dict[str, Any]:
    """What a SPATEM says, in our SPaT's terms (times to 0.1 s; unknown times None); each group also
    carries its DSRC numbers (``intersection_id``, ``signal_group``)."""
    groups = []
    for st in spatem["spat"]["intersections"]:
        junction = st.get("name", f"j{st['id']['id']}")
        for ms in st["states"]:
            now, *later = ms["state-time-speed"]
            timing = now.get("timing", {})
            phase = _STATE_PHASE.get(now["eventState"], "unknown")
            green_at = timing.get("startTime") if phase == "green" else next(
                (e.get("timing", {}).get("startTime") for e in later if _STATE_PHASE.get(e["eventState"]) == "green"),
                None)
            groups.append({"group_id": ms.get("movementName", f"{junction}.sg{ms['signalGroup'] - 1}"),
                           "intersection_id": st["id"]["id"], "signal_group": ms["signalGroup"], "phase": phase,
                           "min_end_time_s": _seconds(timing.get("minEndTime")),
                           "max_end_time_s": _seconds(timing.get("maxEndTime")),
                           "green_start_time_s": _seconds(green_at)})
    return {"station_id": spatem["header"]["stationID"], "groups": groups}


def mapem_of_map(body: Mapping[str, Any]) -> dict[str, Any]:
    """The MAPEM (asn1tools value) of one of our MAP messages: an IntersectionGeometry per junction,
    a GenericLane per lane (an ingress vehicle lane) with a Connection to its signal group.

    Our MAP knows of a lane only its stop bar: the node list is the stop bar as an absolute
    ``node-LatLon`` followed by a zero offset (NodeSetXY needs two nodes), the connection's egress
    lane is 0 ("not known"), and refPoint is the junction's first stop bar. A lane whose stop bar is
    not known (the ground-truth rollout's ideal MAP) carries Latitude / Longitude "unavailable"."""
    revision = int(body.get("msg_count", 0)) % 128
    intersections = []
    for junction, lanes in _by_junction(body["lanes"], "signal_group_id", body["sender"]).items():
        numbers = {ln["lane_id"]: lane_number(ln["lane_id"]) for ln in lanes}
        _distinct(numbers, "lanes", junction)
        points = [latlon(*ln["stop_bar_xy_m"]) if ln.get("stop_bar_xy_m") else
                  (LATITUDE_UNAVAILABLE, LONGITUDE_UNAVAILABLE) for ln in lanes]
        lane_set = []
        for ln, (lat, lon) in zip(lanes, points, strict=True):
            group = ln.get("signal_group_id")
            lane_set.append({"laneID": numbers[ln["lane_id"]], **_name(ln["lane_id"]),
                             "laneAttributes": {"directionalUse": _INGRESS, "sharedWith": _NOT_SHARED,
                                                "laneType": _VEHICLE_LANE},
                             "nodeList": ("nodes", [{"delta": ("node-LatLon", {"lon": lon, "lat": lat})},
                                                    {"delta": ("node-XY1", {"x": 0, "y": 0})}]),
                             **({"connectsTo": [{"connectingLane": {"lane": 0},
                                                 "signalGroup": signal_group_number(group)}]} if group else {})})
        intersections.append({**_name(junction), "id": {"id": intersection_number(junction)}, "revision": revision,
                              "refPoint": {"lat": points[0][0], "long": points[0][1]}, "laneSet": lane_set})
    return {"header": {"protocolVersion": 2, "messageID": MESSAGE_ID_MAPEM, "stationID": station_id(body["sender"])},
            "map": {"msgIssueRevision": revision, "intersections": intersections}}


def map_of_mapem(mapem: Mapping[str, Any]) -> dict[str, Any]:
    """What a MAPEM says, in our MAP's terms: each lane's id, stop bar (None when unavailable) and
    signal group (its name rebuilt as ``<junction>.sg<k>`` from the number), with the DSRC numbers."""
    lanes = []
    for geo in mapem["map"].get("intersections", []):
        junction = geo.get("name", f"j{geo['id']['id']}")
        for ln in geo["laneSet"]:
            _, nodes = ln["nodeList"]
            kind, point = nodes[0]["delta"]
            known = kind == "node-LatLon" and point["lat"] != LATITUDE_UNAVAILABLE
            sg = next((c["signalGroup"] for c in ln.get("connectsTo", []) if "signalGroup" in c), None)
            lanes.append({"lane_id": ln.get("name", str(ln["laneID"])), "lane_number": ln["laneID"],
                          "intersection_id": geo["id"]["id"], "signal_group": sg,
                          "signal_group_id": None if sg is None else f"{junction}.sg{sg - 1}",
                          "stop_bar_xy_m": list(xy(point["lat"], point["lon"])) if known else None})
    return {"station_id": mapem["header"]["stationID"], "lanes": lanes}


# ----------------------------------------------------------------------------- the codec
class WireCodec:
    """Encodes an ego's arrivals (see the module docstring); the ASN.1 is compiled on first use,
    once per process and directory."""

    def __init__(self, etsi_dir: Path | str | None = None, dsrc_dir: Path | str | None = None):
        self.etsi_dir = Path(etsi_dir) if etsi_dir else default_etsi_dir()
        self.dsrc_dir = Path(dsrc_dir) if dsrc_dir else None
        self._dsrc: Any | None = None

    def _files(self, names: Iterable[str]) -> tuple[str, ...]:
        return tuple(str(self.etsi_dir / n) for n in names)

    def cam(self) -> Any:
        return _compile(self._files(_CAM_FILES))

    def denm(self) -> Any:
        return _compile(self._files(_DENM_FILES))

    def dsrc(self) -> Any | None:
        """The user's DSRC ASN.1 with the SPATEM/MAPEM wrappers, or None when no directory is set."""
        if self.dsrc_dir is None:
            return None
        if self._dsrc is not None:
            return self._dsrc
        if not self.dsrc_dir.is_dir():
            raise Asn1Unavailable(f"LASTV2X_SIMULATOR_DSRC_ASN1_DIR {self.dsrc_dir} is not a directory")
        own = sorted(str(p) for p in self.dsrc_dir.glob("*.asn"))
        if not own:
            raise Asn1Unavailable(f"LASTV2X_SIMULATOR_DSRC_ASN1_DIR {self.dsrc_dir} holds no .asn file")
        spec = _compile(self._files(_IS_FILES) + tuple(own))
        for t in ("SPATEM", "MAPEM"):
            if t not in spec.types:
                raise Asn1Unavailable(f"the DSRC ASN.1 in {self.dsrc_dir} with the ETSI wrappers defines no {t}")
        self._dsrc = spec
        return spec

    def check(self) -> None:
        """Raise :class:`Asn1Unavailable` (naming what is missing) unless raw mode can encode."""
        self.cam()
        self.denm()
        self.dsrc()

    def encode(self, arrivals: Sequence[Mapping[str, Any]]) -> list[RawMessage]:
        """The :meth:`V2XInformationSource.arrivals` of one step, encoded, in arrival order."""
        cam, denm, dsrc = self.cam(), self.denm(), self.dsrc()
        out = []
        for a in arrivals:
            k = a["kind"]
            if k == "BSM":
                payload = cam.encode("CAM", cam_of_bsm(a["sender"], a["timestamp_s"], a["x_m"], a["y_m"], a["speed_mps"],
                                                       a["heading_rad"], a["accel_mps2"], a["brake_flag"],
                                                       a["event_flags"]))
                out.append(RawMessage("CAM", CAM_ENCODING, payload, a["rx_s"], a["sender"], 0))
            elif k == "EEBL":
                payload = denm.encode("DENM", denm_of_eebl(a["sender"], a["origin"], a["event_id"], a["timestamp_s"],
                                                           a["x_m"], a["y_m"], a["speed_mps"], a["heading_rad"]))
                out.append(RawMessage("DENM", DENM_ENCODING, payload, a["rx_s"], a["sender"], a["hops"]))
            elif dsrc is not None:
                spat = k == "SPAT"
                payload = dsrc.encode("SPATEM", spatem_of_spat(a)) if spat else dsrc.encode("MAPEM", mapem_of_map(a))
                out.append(RawMessage(k, SPATEM_ENCODING if spat else MAPEM_ENCODING, payload, a["rx_s"], a["sender"],
                                      int(a.get("hops", 0))))
            else:
                body = {key: v for key, v in a.items() if key not in ("kind", "rx_s")}
                out.append(RawMessage(k, SPAT_ENCODING if k == "SPAT" else MAP_ENCODING, _json(body), a["rx_s"],
                                      a["sender"], int(a.get("hops", 0))))
        return out

    def ideal(self, info: Any, t_s: float) -> list[RawMessage]:
        """The ideal messages of a step for a ground-truth ego (no radio): every neighbour's CAM, each
        braking event's DENM, the true SPaT and the ego's MAP association, all with ``rx_s = t_s``."""
        from services.simulator.info import PHASE_NAME

        arrivals: list[dict[str, Any]] = []
        if info.ego_group_id is not None:
            arrivals.append({"kind": "MAP", "sender": "ground-truth", "timestamp_s": t_s, "rx_s": t_s, "hops": 0,
                             "lanes": [{"lane_id": "ego-approach", "signal_group_id": info.ego_group_id,
                                        "stop_bar_xy_m": None}]})
        if info.signals:
            arrivals.append({"kind": "SPAT", "sender": "ground-truth", "timestamp_s": t_s, "rx_s": t_s, "hops": 0,
                             "groups": [{"group_id": g, "phase": PHASE_NAME.get(s.phase, "unknown"),
                                         "min_end_time_s": t_s + s.time_to_change_s if math.isfinite(
                                             s.time_to_change_s) else None,
                                         "max_end_time_s": None,
                                         "green_start_time_s": None if s.time_to_green_s is None
                                         or not math.isfinite(s.time_to_green_s) else t_s + s.time_to_green_s}
                                        for g, s in sorted(info.signals.items())]})
        for vid, tr in info.tracks.items():
            arrivals.append({"kind": "BSM", "sender": vid, "timestamp_s": t_s - tr.aoi_s, "rx_s": t_s,
                             "x_m": tr.xy_m[0], "y_m": tr.xy_m[1], "speed_mps": tr.speed_mps,
                             "heading_rad": tr.heading_rad, "accel_mps2": tr.accel_mps2,
                             "brake_flag": tr.accel_mps2 < 0.0,
                             "event_flags": HARD_BRAKE_FLAG if tr.hard_brake_event else 0})
        for e in info.eebl_events:
            arrivals.append({"kind": "EEBL", "sender": e.origin_id, "origin": e.origin_id, "event_id": 0,
                             "timestamp_s": t_s - e.aoi_s, "rx_s": t_s, "hops": 0, "x_m": e.xy_m[0],
                             "y_m": e.xy_m[1], "speed_mps": 0.0, "heading_rad": 0.0})
        return self.encode(arrivals)


@functools.lru_cache(maxsize=4)
def codec(etsi_dir: str = "", dsrc_dir: str = "") -> WireCodec:
    """One codec per (ETSI dir, DSRC dir) in a process."""
    return WireCodec(etsi_dir or None, dsrc_dir or None)


_configured: tuple[str, str] = ("", "")


def configure(etsi_dir: Path | str | None, dsrc_dir: Path | str | None) -> None:
    """Set the directories :func:`active_codec` uses (the simulator's settings; see execute.py)."""
    global _configured
    _configured = (str(etsi_dir or ""), str(dsrc_dir or ""))


def active_codec() -> WireCodec:
    return codec(*_configured)


def decode(msg: RawMessage, wire: WireCodec | None = None) -> dict[str, Any]:
    """A received message back as a plain dict: CAM / DENM / SPATEM / MAPEM as the ASN.1 value
    (see :func:`bsm_of_cam`, :func:`spat_of_spatem`, ...), our SPaT / MAP from JSON."""
    wire = wire or active_codec()
    if msg.encoding == CAM_ENCODING:
        return dict(wire.cam().decode("CAM", msg.payload))
    if msg.encoding == DENM_ENCODING:
        return dict(wire.denm().decode("DENM", msg.payload))
    if msg.encoding in (SPATEM_ENCODING, MAPEM_ENCODING):
        dsrc = wire.dsrc()
        if dsrc is None:
            raise Asn1Unavailable(f"a {msg.encoding} message needs the DSRC ASN.1 (LASTV2X_SIMULATOR_DSRC_ASN1_DIR)")
        return dict(dsrc.decode("SPATEM" if msg.encoding == SPATEM_ENCODING else "MAPEM", msg.payload))
    return dict(json.loads(msg.payload))


__all__ = ["CAM_ENCODING", "DENM_ENCODING", "MAPEM_ENCODING", "MAP_ENCODING", "ORIGIN_LAT_DEG", "ORIGIN_LON_DEG",
           "SPATEM_ENCODING", "SPAT_ENCODING", "Asn1Unavailable", "RawMessage", "WireCodec", "WireError",
           "active_codec", "bsm_of_cam", "cam_of_bsm", "codec", "configure", "decode", "default_etsi_dir",
           "denm_of_eebl", "eebl_of_denm", "heading_rad", "heading_value", "intersection_number", "junction_of",
           "lane_number", "latlon", "map_of_mapem", "mapem_of_map", "signal_group_number", "spat_of_spatem",
           "spatem_of_spat", "station_id", "time_mark", "xy"]
