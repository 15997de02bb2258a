"""Protobuf <-> domain conversions.

Field names of ``lastv2x.v1`` messages equal the pydantic models' names, so one
generic walk converts any message: enum names lose their type prefix
(APPLICATION_RLVW -> "RLVW"; MANEUVER_LEFT -> "left"; the UNSPECIFIED zero means
"use the default") and unset optional fields are left out so defaults apply.
An enum number the schema does not know is reported as a field violation.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from typing import Any

from google.protobuf import json_format, struct_pb2
from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.spec import ScenarioSpec, parse_spec
from lastv2x.core.verifier import Finding, VerificationReport
from lastv2x.v1 import common_pb2

UPPER_CASE_ENUMS = {"Application", "Stream"}  # JSON values keep their case: "RLVW", "SPAT"
_JSON_TYPES = {"google.protobuf.Value", "google.protobuf.Struct"}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _prefix(enum: EnumDescriptor) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"


@functools.cache
def _enum_values(enum: EnumDescriptor) -> dict[int, str | None]:
    """number -> domain value (None for the UNSPECIFIED zero), computed once per enum."""
    cut = len(_prefix(enum))
    keep_case = enum.name in UPPER_CASE_ENUMS
    return {v.number: None if v.number == 0 else (v.name[cut:] if keep_case else v.name[cut:].lower())
            for v in enum.values}


def _enum_to_value(enum: EnumDescriptor, number: int, path: str) -> str | None:
    table = _enum_values(enum)
    if number not in table:
        known = [v for v in table.values() if v]
        raise InvalidArgument(FieldViolation(path, f"unknown enum value {number} for {enum.name}",
                                             f"use one of {known}"))
    return table[number]


@functools.cache
def _implicit_scalars(desc: Any) -> tuple[FieldDescriptor, ...]:
    """Singular scalar fields without presence: proto3 drops their zero, so it is added back."""
    return tuple(f for f in desc.fields
                 if not f.is_repeated and not f.has_presence and f.type != FieldDescriptor.TYPE_ENUM)


def message_to_dict(msg: Message, path: str = "") -> dict[str, Any]:
    """Proto message -> JSON-able dict in the domain's vocabulary.

    Fields with presence appear only when set (so domain defaults apply); scalars
    without presence always appear (their zero is a value); an UNSPECIFIED enum is
    left out; empty repeated fields are left out.
    """
    out: dict[str, Any] = {f.name: getattr(msg, f.name) for f in _implicit_scalars(msg.DESCRIPTOR)}
    for field, value in msg.ListFields():  # set fields, in field-number order
        fpath = f"{path}.{field.name}" if path else field.name
        if field.is_repeated:
            out[field.name] = [_value(field, v, f"{fpath}[{i}]") for i, v in enumerate(value)]
            continue
        converted = _value(field, value, fpath)
        if converted is None:
            continue
        out[field.name] = converted
    return out


def _value(field: FieldDescriptor, value: Any, path: str) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        if field.message_type.full_name in _JSON_TYPES:  # a protobuf map has no order: sort, so text is stable
            return _sorted_keys(json_format.MessageToDict(value))
        return message_to_dict(value, path)
    if field.type == FieldDescriptor.TYPE_ENUM:
        return _enum_to_value(field.enum_type, value, path)
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT) and not math.isfinite(value):
        raise InvalidArgument(FieldViolation(path, f"non-finite number {value}", "send a finite number"))
    return value


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def dict_to_message(data: dict[str, Any], msg: Message) -> Message:
    """Domain dict -> proto message (the inverse of ``message_to_dict``); fills ``msg`` in place."""
    desc = msg.DESCRIPTOR
    for key, value in data.items():
        field = desc.fields_by_name.get(key)
        if field is None:
            continue  # domain-only field; the proto contract does not carry it
        if value is None:
            if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.full_name == "google.protobuf.Value":
                getattr(msg, key).null_value = struct_pb2.NULL_VALUE
            continue
        if field.is_repeated:
            target = getattr(msg, key)
            for item in value:
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    dict_to_message(item, target.add())
                elif field.type == FieldDescriptor.TYPE_ENUM:
                    target.append(_value_to_enum(field.enum_type, item))
                else:
                    target.append(item)
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.message_type.full_name in _JSON_TYPES:
                target = getattr(msg, key)
                target.CopyFrom(json_format.ParseDict(_jsonable(value), type(target)()))
            else:
                dict_to_message(value, getattr(msg, key))
        elif field.type == FieldDescriptor.TYPE_ENUM:
            setattr(msg, key, _value_to_enum(field.enum_type, value))
        else:
            setattr(msg, key, value)
    return msg


def _value_to_enum(enum: EnumDescriptor, value: str) -> int:
    return enum.values_by_name[_prefix(enum) + str(value).upper()].number


def spec_from_proto(msg: common_pb2.ScenarioSpec, path: str = "spec") -> ScenarioSpec:
    data = message_to_dict(msg, path)
    try:
        return parse_spec(data)
    except InvalidArgument as exc:
        raise InvalidArgument([FieldViolation(f"{path}.{v.field}", v.description, v.hint)
                               for v in exc.violations]) from None


def spec_from_json(text: str, path: str = "spec_json") -> ScenarioSpec:
    try:
        return parse_spec(text)
    except InvalidArgument as exc:
        raise InvalidArgument([FieldViolation(f"{path}.{v.field}" if v.field != "<root>" else path,
                                              v.description, v.hint) for v in exc.violations]) from None


def spec_to_proto(spec: ScenarioSpec) -> common_pb2.ScenarioSpec:
    data = json.loads(spec.model_dump_json(exclude_none=True))
    return dict_to_message(data, common_pb2.ScenarioSpec())  # type: ignore[return-value]


def finding_to_proto(f: Finding) -> common_pb2.Finding:
    return dict_to_message(f.to_dict(), common_pb2.Finding())  # type: ignore[return-value]


def report_to_proto(report: VerificationReport) -> common_pb2.VerificationReport:
    return dict_to_message(report.to_dict(), common_pb2.VerificationReport())  # type: ignore[return-value]


def program_to_proto(program: Any) -> common_pb2.ScenarioProgram:
    """ScenarioProgram (lastv2x.core.program) -> proto; route polylines are flattened."""
    data = json.loads(program.model_dump_json(exclude_none=True))
    for vehicle in [data["ego"], *data.get("agents", [])]:
        route = vehicle["route"]
        route["points_xy_m"] = [c for xy in route["points_xy_m"] for c in xy]
    for fault in data.get("faults", []):
        fault["fault"] = {k: v for k, v in fault["fault"].items()}
    return dict_to_message(data, common_pb2.ScenarioProgram())  # type: ignore[return-value]


def program_from_proto(msg: common_pb2.ScenarioProgram, path: str = "program") -> Any:
    """Proto -> validated ScenarioProgram; bad fields raise InvalidArgument with their path."""
    from pydantic import ValidationError

    from lastv2x.core.program import ScenarioProgram
    from lastv2x.core.spec import violations_from

    data = message_to_dict(msg, path)
    for key in ("ego", "agents"):
        vehicles = data.get(key)
        for vehicle in ([vehicles] if key == "ego" and vehicles else vehicles or []):
            route = vehicle.get("route", {})
            flat = route.get("points_xy_m", [])
            if len(flat) % 2:
                raise InvalidArgument(FieldViolation(f"{path}.{key}.route.points_xy_m",
                                                     "odd number of coordinates", "send [x0, y0, x1, y1, ...]"))
            route["points_xy_m"] = [flat[i:i + 2] for i in range(0, len(flat), 2)]
    try:
        return ScenarioProgram.model_validate(data)
    except ValidationError as exc:
        raise InvalidArgument(violations_from(exc, prefix=f"{path}.")) from None


# ── paired outcomes ───────────────────────────────────────────────────────
_FAILURE_CLASS = {"stale_but_detectable": common_pb2.FAILURE_CLASS_STALE_BUT_DETECTABLE,
                  "fresh_but_wrong": common_pb2.FAILURE_CLASS_FRESH_BUT_WRONG,
                  "silent_by_absence": common_pb2.FAILURE_CLASS_SILENT_BY_ABSENCE}
_STREAM = {"BSM": common_pb2.STREAM_BSM, "SPAT": common_pb2.STREAM_SPAT, "MAP": common_pb2.STREAM_MAP,
           "EEBL": common_pb2.STREAM_EEBL}


def _rollout(d: dict[str, Any]) -> common_pb2.RolloutOutcome:
    out = common_pb2.RolloutOutcome(failed=d["failed"], stops=d["stops"],
                                    travel_time_s=d["travel_time_s"] or d["end_t_s"],
                                    closest_approach_m=d["closest_approach_m"] if d["closest_approach_m"]
                                    is not None else math.inf)
    if d.get("pet_s") is not None:
        out.post_encroachment_time_s = d["pet_s"]
    for r in d["red_entries"]:
        out.violations.add(kind="red_entry", t_s=r["t_s"], other_id=r.get("group_id", ""))
    if d.get("collision"):
        c = d["collision"]
        out.violations.add(kind="collision", t_s=c["t_s"], other_id=c["other_id"])
    return out


def _decisions(target: Any, decisions: list[dict[str, Any]], aoi: dict[float, float]) -> None:
    for dec in decisions:
        rec = target.add(t_s=dec["t_s"], action=dec["action"], epoch=bool(dec.get("epoch")),
                         reason=dec.get("reason", ""))
        if dec["t_s"] in aoi:
            rec.aoi_s = aoi[dec["t_s"]]


def outcome_json_to_proto(raw: bytes, trace_uri: str = "") -> common_pb2.PairedOutcome:
    """A PairedOutcome message from the simulator's canonical outcome bytes (``PairedOutcome.to_json_bytes``);
    the bytes travel unchanged in ``outcome_json``, so a client can compare them byte for byte."""
    d = json.loads(raw)
    extra = (d.get("monitor") or {}).get("extra") or {}
    aoi = {a["t_s"]: a.get("spat_aoi_s") if a.get("spat_aoi_s") is not None else a.get("bsm_aoi_s")
           for a in extra.get("aoi_at_decisions", []) if (a.get("spat_aoi_s") or a.get("bsm_aoi_s")) is not None}
    msg = common_pb2.PairedOutcome(admitted=d["admitted"], md=_rollout(d["md"]), gt=_rollout(d["gt"]),
                                   failure_margin=d["failure_margin"],
                                   divergence_alarm=bool(extra.get("divergence_alarm", False)),
                                   outcome_sha256=hashlib.sha256(raw).hexdigest(), trace_uri=trace_uri,
                                   outcome_json=raw.decode(), seed=d["seed"], app_error=d.get("app_error", ""))
    _decisions(msg.md_decisions, d["md"]["decisions"], aoi)
    _decisions(msg.gt_decisions, d["gt"]["decisions"], {})
    slack = extra.get("hazard_slack") or []
    for k, ep in enumerate((d.get("monitor") or {}).get("episodes", [])):
        e = msg.episodes.add(start_s=ep["start_s"], end_s=ep["end_s"] if ep["end_s"] is not None else math.inf,
                             kind=ep["kind"])
        if ep.get("stream") in _STREAM:
            e.stream = _STREAM[ep["stream"]]
        if k < len(slack) and isinstance(slack[k], int | float):
            e.hazard_slack_s = slack[k]
    if d["admitted"] and extra.get("failure_class") in _FAILURE_CLASS:
        msg.failure_class = _FAILURE_CLASS[extra["failure_class"]]
    return msg
