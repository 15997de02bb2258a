"""An archived witness as OpenSCENARIO 1.x + OpenDRIVE (``lastv2x witness export ID --xosc``).

What is written, per witness ``W`` into one folder:

``W.xodr``      the OpenDRIVE of the map the witness ran on (a built-in map is generated, a
                user map copied), checked against the OpenDRIVE 1.7 schema;
``W.xosc``      OpenSCENARIO 1.x (default 1.2) written with ``scenariogeneration``: one
                vehicle per program vehicle (ego first), each teleported to its start pose
                at its initial speed, following its route as a polyline trajectory at its
                desired speed; a hard-braking agent's braking as a speed action on a
                simulation-time trigger; the fixed-time signal plans as
                ``TrafficSignalController`` phases over the map's OpenDRIVE signal ids; the
                stop trigger at the scenario's duration. Checked against the schema of the
                minor version it declares, before it is put in place;
``W.v2x.json``  the sidecar: what OpenSCENARIO has no element for (and, as ``asam_qc``, the
                verdict of ASAM's checker bundles when ``--check`` ran them: ``qc.py``).

The V2X faults (and the V2X settings: penetration, channel, RSUs) have no OpenSCENARIO form.
They are carried as ``ParameterDeclarations`` named ``V2X_*`` (``V2X_fault<i>_operator``,
``_stream``, ``_window_start_s``, ``_window_end_s``, ...) so a tool sees them, and in full in
the sidecar JSON; the file header's description says so. A tool that replays the ``.xosc``
alone replays the traffic and the signals, not the communication failure: replay the
witness with ``lastv2x witness replay`` for that.

Every file goes to a temporary name first and is renamed into place only when complete and
valid, the ``.xosc`` last: a folder with a ``W.xosc`` holds the whole export.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lastv2x.core.errors import FailedPrecondition, FieldViolation, InvalidArgument
from lastv2x.core.program import ProgramVehicle, ScenarioProgram, SignalGroupPlan

DEFAULT_OSC_MINOR = 2  # OpenSCENARIO 1.2: what esmini and CARLA's ScenarioRunner read
VEHICLE_WIDTH_M = 1.9
VEHICLE_HEIGHT_M = 1.5
TRAJECTORY_SPACING_M = 5.0  # polyline vertex spacing of the exported routes (straight parts need fewer)
ACCEL_MPS2 = 1.5  # speed-up to the desired speed (the platform's "normal" profile)
LAMPS = {0: "off;off;on", 1: "off;on;off", 2: "on;off;off"}  # red;amber;green lamp states per phase code
PHASE_NAMES = {0: "green", 1: "amber", 2: "red"}


@dataclass(frozen=True)
class ExportResult:
    witness_id: str
    xosc: Path
    xodr: Path
    sidecar: Path
    xosc_schema: str  # the ASAM schema file it was validated against
    xodr_valid: bool  # against OpenDRIVE 1.7 (a user map may not be)
    xodr_errors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"witness_id": self.witness_id, "xosc": str(self.xosc), "xodr": str(self.xodr),
                "sidecar": str(self.sidecar), "xosc_schema": self.xosc_schema, "xodr_valid": self.xodr_valid,
                "xodr_errors": list(self.xodr_errors)}


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the export from other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def program_road_map(program: ScenarioProgram) -> Any:
    """The map the program ran on, found as the simulator finds it (built-in name, or a user map
    under ``LASTV2X_MAP_PATHS``); None for the synthetic straight crossing."""
    from services.simulator.execute import SimulatorLimits, validate_program

    return validate_program(program, SimulatorLimits.from_env())


def map_xodr(program: ScenarioProgram, road_map: Any) -> bytes:
    """The OpenDRIVE text of the program's map: generated for a built-in map, read for a user map."""
    from services.simulator.maps import builtin_map_names
    from services.simulator.maps.builtin import builtin_sources

    if program.map_name in builtin_map_names():
        return builtin_sources(program.map_name)[0].encode("utf-8")
    if road_map is None:
        raise FailedPrecondition(f"the witness runs on {program.map_name!r}, the synthetic straight crossing, "
                                 "which has no OpenDRIVE", "ground the spec on a map (lastv2x ground) to export it")
    path = Path(str(road_map.source))
    if path.is_file():
        return path.read_bytes()
    raise FailedPrecondition(f"the OpenDRIVE of map {program.map_name!r} is not readable here ({road_map.source})",
                             "export on the machine holding the map file")


def _phases(plan: SignalGroupPlan) -> list[tuple[int, float]]:
    """(phase code, duration) covering one cycle starting at t = 0.

    The platform's plan starts the cycle ``offset_s`` before t = 0; OpenSCENARIO runs a
    controller's phase list from the scenario start, cyclically. So the list starts with the
    rest of the phase running at t = 0, goes round the cycle and ends with the part of that
    phase already elapsed at t = 0: the same lamp at every time, one cycle long."""
    g, a, c = plan.green_s, plan.amber_s, plan.cycle_s
    bounds = [(0, 0.0, g), (1, g, g + a), (2, g + a, c)]
    bounds = [b for b in bounds if b[2] - b[1] > 1e-9]
    u0 = plan.offset_s % c
    k = next(i for i, (_, lo, hi) in enumerate(bounds) if lo - 1e-9 <= u0 < hi - 1e-9 or i == len(bounds) - 1)
    code, lo, hi = bounds[k]
    out = [(code, hi - u0)]
    out += [(b[0], b[2] - b[1]) for b in bounds[k + 1:] + bounds[:k]]
    if u0 - lo > 1e-6:
        out.append((code, u0 - lo))
    return [(p, round(d, 6)) for p, d in out if d > 1e-6]


def _route_samples(v: ProgramVehicle) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, headings and nominal times (at the desired speed) along the route from the start
    pose on, every TRAJECTORY_SPACING_M (vertices where the route turns are always included)."""
    from services.simulator.maps.geometry import cumulative_s, heading_at, position_at

    pts = np.asarray(v.route.points_xy_m, dtype=float)
    s_cum = cumulative_s(pts)
    s_end = float(s_cum[-1])
    start = min(max(v.start_s_m, 0.0), s_end)
    seg = np.diff(pts, axis=0)
    hdg = np.arctan2(seg[:, 1], seg[:, 0])
    turns = np.nonzero(np.abs(np.angle(np.exp(1j * np.diff(hdg)))) > 1e-3)[0] + 1  # corner vertices
    stations = set(np.arange(start, s_end, TRAJECTORY_SPACING_M).tolist()) | {s_end}
    stations |= {float(s_cum[i]) for i in turns if s_cum[i] > start}
    s = np.array(sorted(stations))
    return position_at(pts, s_cum, s), heading_at(pts, s_cum, s), (s - start) / v.desired_speed_mps


def _vehicle(xosc: Any, v: ProgramVehicle) -> Any:
    bb = xosc.BoundingBox(VEHICLE_WIDTH_M, v.length_m, VEHICLE_HEIGHT_M, 0.0, 0.0, VEHICLE_HEIGHT_M / 2)
    front = xosc.Axle(0.5, 0.65, 1.6, v.length_m * 0.3, 0.325)
    rear = xosc.Axle(0.0, 0.65, 1.6, 0.0, 0.325)
    veh = xosc.Vehicle(v.id, xosc.VehicleCategory.car, bb, front, rear, 40.0, 4.0, 9.0)
    veh.add_property("lastv2x:role", str(v.role.value if hasattr(v.role, "value") else v.role))
    veh.add_property("lastv2x:v2x_equipped", "true" if v.equipped else "false")
    veh.add_property("lastv2x:profile", str(v.profile))
    if v.behaviour.kind.value != "none":
        veh.add_property("lastv2x:behaviour", v.behaviour.kind.value)
    return veh


def _number(x: float) -> str:
    return repr(round(float(x), 6))


def _parameters(xosc: Any, program: ScenarioProgram, sidecar_name: str, osc_minor: int) -> Any:
    P, T = xosc.Parameter, xosc.ParameterType
    integer = T.int if osc_minor >= 2 else T.integer  # "integer" until 1.1, "int" from 1.2
    params = xosc.ParameterDeclarations()
    params.add_parameter(P("V2X_sidecar", T.string, sidecar_name))
    params.add_parameter(P("V2X_penetration", T.double, _number(program.v2x.penetration)))
    params.add_parameter(P("V2X_range_m", T.double, _number(program.v2x.channel.range_m)))
    params.add_parameter(P("V2X_blockage_db_per_m", T.double, _number(program.v2x.channel.blockage_db_per_m)))
    params.add_parameter(P("V2X_faults", integer, str(len(program.faults))))
    for i, rf in enumerate(program.faults):
        f = rf.fault
        pre = f"V2X_fault{i}_"
        params.add_parameter(P(pre + "name", T.string, f.name or f"fault{i}"))
        params.add_parameter(P(pre + "operator", T.string, f.operator.value))
        params.add_parameter(P(pre + "stream", T.string, f.stream.value))
        start, end = rf.nominal_window_s
        params.add_parameter(P(pre + "window_start_s", T.double, _number(start)))
        params.add_parameter(P(pre + "window_end_s", T.double,
                               _number(program.duration_s if end is None or not math.isfinite(end) else end)))
        if f.magnitude is not None:
            params.add_parameter(P(pre + "magnitude", T.double, _number(f.magnitude)))
        if f.probability is not None:
            params.add_parameter(P(pre + "probability", T.double, _number(f.probability)))
        if f.field is not None:
            params.add_parameter(P(pre + "field", T.string, str(f.field.value if hasattr(f.field, "value")
                                                                else f.field)))
        sender = rf.sender_id or ",".join(rf.sender_ids)
        if sender:
            params.add_parameter(P(pre + "sender", T.string, sender))
    return params


def _time_trigger(xosc: Any, name: str, t_s: float, point: str = "start") -> Any:
    return xosc.ValueTrigger(name, 0, xosc.ConditionEdge.none,
                             xosc.SimulationTimeCondition(round(t_s, 6), xosc.Rule.greaterThan), point)


def build_xosc(program: ScenarioProgram, *, witness_id: str, xodr_name: str, sidecar_name: str,
               created_unix_s: float, osc_minor: int = DEFAULT_OSC_MINOR,
               signal_ids: dict[str, tuple[str, ...]] | None = None) -> bytes:
    """The OpenSCENARIO document of ``program`` (pure: same inputs, same bytes)."""
    from scenariogeneration import xosc

    signal_ids = signal_ids if signal_ids is not None else {}
    vehicles = [program.ego, *program.agents]
    entities = xosc.Entities()
    for v in vehicles:
        entities.add_scenario_object(v.id, _vehicle(xosc, v))

    init = xosc.Init()
    story = xosc.Story("witness")
    act = xosc.Act("traffic", _time_trigger(xosc, "act_start", 0.0))
    for v in vehicles:
        xy, hdg, times = _route_samples(v)
        init.add_init_action(v.id, xosc.TeleportAction(
            xosc.WorldPosition(float(xy[0, 0]), float(xy[0, 1]), 0.0, float(hdg[0]))))
        init.add_init_action(v.id, xosc.AbsoluteSpeedAction(
            float(v.initial_speed_mps), xosc.TransitionDynamics(xosc.DynamicsShapes.step,
                                                                xosc.DynamicsDimension.time, 0)))
        group = xosc.ManeuverGroup(f"{v.id}_group")
        group.add_actor(v.id)
        man = xosc.Maneuver(f"{v.id}_route")
        traj = xosc.Trajectory(f"{v.id}_route", False)
        # vertex times: nominal, at the desired speed (OpenSCENARIO 1.0 requires them; the
        # following mode ignores them: TimeReference none)
        traj.add_shape(xosc.Polyline([round(float(t), 3) for t in times],
                                     [xosc.WorldPosition(float(x), float(y), 0.0, float(h))
                                      for (x, y), h in zip(xy, hdg, strict=True)]))
        ev = xosc.Event(f"{v.id}_follow_route", xosc.Priority.parallel)
        ev.add_action("follow_route", xosc.FollowTrajectoryAction(
            traj, xosc.FollowingMode.position, xosc.ReferenceContext.relative, 1, 0))
        ev.add_trigger(_time_trigger(xosc, f"{v.id}_route_start", 0.0))
        man.add_event(ev)
        if abs(v.desired_speed_mps - v.initial_speed_mps) > 1e-6:
            ev = xosc.Event(f"{v.id}_desired_speed", xosc.Priority.parallel)
            ev.add_action("desired_speed", xosc.AbsoluteSpeedAction(float(v.desired_speed_mps), xosc.TransitionDynamics(
                xosc.DynamicsShapes.linear, xosc.DynamicsDimension.rate, ACCEL_MPS2)))
            ev.add_trigger(_time_trigger(xosc, f"{v.id}_speed_start", 0.0))
            man.add_event(ev)
        b = v.behaviour
        if b.kind.value == "hard_brake" and b.at_time_s is not None:
            ev = xosc.Event(f"{v.id}_hard_brake", xosc.Priority.override)
            ev.add_action("hard_brake", xosc.AbsoluteSpeedAction(0.0, xosc.TransitionDynamics(
                xosc.DynamicsShapes.linear, xosc.DynamicsDimension.rate, float(b.decel_mps2))))
            ev.add_trigger(_time_trigger(xosc, f"{v.id}_brake_onset", float(b.at_time_s)))
            man.add_event(ev)
        group.add_maneuver(man)
        act.add_maneuver_group(group)
    story.add_act(act)

    road = xosc.RoadNetwork(roadfile=xodr_name)
    for plan in program.signal_groups:
        ids = signal_ids.get(plan.id, ())
        ctrl = xosc.TrafficSignalController(f"{plan.id}")
        for k, (code, dur) in enumerate(_phases(plan)):
            phase = xosc.Phase(f"{PHASE_NAMES[code]}_{k}", dur)
            for sid in ids:
                phase.add_signal_state(sid, LAMPS[code])
            ctrl.add_phase(phase)
        road.add_traffic_signal_controller(ctrl)

    board = xosc.StoryBoard(init, _time_trigger(xosc, "end_of_scenario", program.duration_s, "stop"))
    board.add_story(story)
    description = (f"LAST-V2X witness {witness_id}: {program.application.value} on {program.map_name}, "
                   f"seed {program.seed}. The V2X faults and settings have no OpenSCENARIO form: they are the "
                   f"ParameterDeclarations V2X_* of this file and, in full, the sidecar {sidecar_name}; "
                   f"replaying this file alone replays traffic and signals, not the communication failure "
                   f"(lastv2x witness replay {witness_id}).")
    created = dt.datetime.fromtimestamp(created_unix_s, tz=dt.UTC).replace(microsecond=0, tzinfo=None)
    scenario = xosc.Scenario(description, "lastv2x", _parameters(xosc, program, sidecar_name, osc_minor), entities, board,
                             road, xosc.Catalog(), osc_minor_version=osc_minor, creation_date=created)
    from xml.etree import ElementTree as ET

    element = scenario.get_element()
    ET.indent(element)
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(element, encoding="utf-8") + b"\n"


REPLAY_IN = "the witness archive folder (the campaign's --out): the commands name paths relative to it"


def archive_ref(archive: str | Path, folder: str | Path) -> str:
    """Where the archive lies as seen from ``folder`` (the folder of the file that names it): a
    relative path, never an absolute one (issue 41); just the archive folder's name when the two share
    nothing below the filesystem root."""
    a, f = os.path.abspath(archive), os.path.abspath(folder)
    if os.path.commonpath([a, f]) != os.sep:
        return Path(os.path.relpath(a, f)).as_posix()
    return Path(a).name


def sidecar(program: ScenarioProgram, record: dict[str, Any], outcome_json: bytes, xosc_name: str,
            archive: str = "") -> dict[str, Any]:
    """What the ``.xosc`` cannot hold: the faults as the platform resolved them, the V2X settings,
    the RSUs, and how to replay the communication failure: ``replay`` is archive-relative (run in
    the archive folder, ``replay_in``); ``archive``: where that folder lies from this file's folder
    (``archive_ref``), when the export knows it."""
    wid = record.get("witness_id", "")
    return {
        "format": "lastv2x.witness-v2x/1",
        "note": "V2X faults and settings have no OpenSCENARIO form; the .xosc carries them as "
                "ParameterDeclarations V2X_* and this file in full.",
        "witness_id": wid, "campaign_id": record.get("campaign_id", ""), "application": program.application.value,
        "xosc": xosc_name, "map": program.map_name, "map_sha256": program.map_sha256, "seed": program.seed,
        "duration_s": program.duration_s, "dt_s": program.dt_s,
        "v2x": json.loads(program.v2x.model_dump_json()),
        "rsus": [json.loads(r.model_dump_json()) for r in program.rsus],
        "equipped": {v.id: v.equipped for v in [program.ego, *program.agents]},
        "faults": [json.loads(f.model_dump_json()) for f in program.faults],
        "certificate": {k: record.get("certificate", {}).get(k) for k in ("complete", "steps", "executions")},
        "outcome_sha256": hashlib.sha256(outcome_json).hexdigest(),
        "replay": f"lastv2x witness replay {wid} --out .", "replay_in": REPLAY_IN,
        **({"archive": archive} if archive else {}),
    }


def export_witness(witness: Any, out_dir: Path, *, osc_minor: int = DEFAULT_OSC_MINOR,
                   archive: str = "", out_field: str = "--dest") -> ExportResult:
    """Write ``<id>.xodr``, ``<id>.v2x.json`` and ``<id>.xosc`` (last) of an archived witness
    (a ``services.search.store.WitnessRow``) into ``out_dir``; both XML files are validated."""
    from lastv2x_app.export.asam import XOSC_SCHEMAS, validate_xodr, validate_xosc
    from lastv2x_app.export.qc import UNCHECKED

    if osc_minor not in XOSC_SCHEMAS:
        raise InvalidArgument(FieldViolation("--osc-minor", f"OpenSCENARIO 1.{osc_minor} is not supported",
                                             f"one of {sorted(XOSC_SCHEMAS)}"))
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out_dir, prefix=".probe.", delete=True)  # noqa: SIM115
        probe.close()
    except OSError as exc:
        raise InvalidArgument(FieldViolation(out_field, f"cannot write to {out_dir}: {exc.strerror or exc}",
                                             "choose a writable folder")) from None
    program = ScenarioProgram.model_validate_json(witness.record["program_json"])
    wid = witness.id
    names = {"xosc": f"{wid}.xosc", "xodr": f"{wid}.xodr", "sidecar": f"{wid}.v2x.json"}
    road_map = program_road_map(program)
    xodr = map_xodr(program, road_map)
    xodr_errors = validate_xodr(xodr)
    xml = build_xosc(program, witness_id=wid, xodr_name=names["xodr"], sidecar_name=names["sidecar"],
                     created_unix_s=witness.created_unix_s, osc_minor=osc_minor,
                     signal_ids={gid: tuple(g.signal_ids) for gid, g in road_map.signal_groups.items()})
    schema, errors = validate_xosc(xml)
    if errors:  # our writer's bug, never the user's: nothing is written
        raise FailedPrecondition(f"the OpenSCENARIO export of {wid} does not validate against {schema}: "
                                 + "; ".join(errors[:5]))
    side = sidecar(program, witness.record, witness.outcome_json, names["xosc"],
                   archive_ref(archive, out_dir) if archive else "")
    side["opendrive"] = {"file": names["xodr"], "valid_1_7": not xodr_errors, "errors": xodr_errors[:20]}
    side["openscenario"] = {"file": names["xosc"], "schema": schema}
    side["asam_qc"] = dict(UNCHECKED)  # export --check: ASAM's checker bundles' verdict (lastv2x_app.export.qc)
    _atomic_write(out_dir / names["xodr"], xodr)
    _atomic_write(out_dir / names["sidecar"], (json.dumps(side, indent=1) + "\n").encode())
    _atomic_write(out_dir / names["xosc"], xml)
    return ExportResult(wid, out_dir / names["xosc"], out_dir / names["xodr"], out_dir / names["sidecar"],
                        schema, not xodr_errors, tuple(xodr_errors[:20]))


__all__ = ["DEFAULT_OSC_MINOR", "ExportResult", "build_xosc", "export_witness", "map_xodr", "program_road_map",
           "sidecar"]
