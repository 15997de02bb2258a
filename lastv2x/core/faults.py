"""The rules of a fault, in one place: what an operator accepts, and how its names resolve.

Two rules every consumer of a spec's faults shares:

* :func:`operator_field_problems` — is the fault well-formed for its operator? The
  operator acts on the stream; the field exists on the stream; a magnitude is given
  and in range when the operator takes one; a drop takes a probability or a burst
  count, not both; a phase corruption names the phase it reports; a sender
  suppression names the sender it silences; a replay re-sends whole messages at least one
  period of its stream back; a ghost forges whole BSMs under an id no vehicle or RSU has, not
  inside the ego; a spoofed RSU forges whole SPaTs for one signal group under an id no vehicle
  or RSU has. The verifier's ``operator_field`` check
  turns each problem into a finding with a repair, the simulator refuses a program
  that has one (``services.simulator.execute.validate_faults``).
* :func:`resolve_faults` — the spec's names become the scene's ids: ``sender`` ``rsu``
  is every RSU (the first is the primary sender), any other sender must be a vehicle
  or RSU of the scene; signal groups ``ego`` / ``""`` / null and ``cross`` become the
  ego's and the crossing group's ids, any other must be a group of the scene; a map
  misassociation without a target associates with the cross group; a SPaT or MAP
  fault whose sender is no RSU keeps every sender. A name that is not in the scene
  raises :class:`~lastv2x.core.errors.InvalidArgument` naming the field
  (``faults[0].target_group``). Both grounders (``services.grounding`` on a map,
  :mod:`lastv2x.core.synthetic` on straight roads) call it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from lastv2x.core.catalogue import FAULT_OPERATORS, STREAMS, Application, Stream
from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.program import ResolvedFault
from lastv2x.core.spec import AgentRole, AnchorKind, Fault, FaultOperator, GhostRoute, ScenarioSpec
from lastv2x.core.timeline import CROSS_GROUP, EGO_GROUP_ALIASES, fault_window_s

RSU_SENDER = "rsu"  # the spec's name for every RSU of the scene


@dataclass(frozen=True)
class FaultProblem:
    """One broken operator/field/magnitude rule.

    ``fields`` are the fault's own fields involved (``magnitude``), the one to change
    first; ``repair`` describes the minimal repair and ``patch`` applies it as
    ``(field, value)`` pairs relative to the fault.
    """

    fields: tuple[str, ...]
    message: str
    repair: str
    patch: tuple[tuple[str, Any], ...] = ()


def default_sender(fault: Fault, spec: ScenarioSpec | None = None) -> str:
    """The sender a fault without one is repaired to: ``rsu`` on an RSU's stream, else the
    spec's first agent that is not background traffic (``rsu`` when there is none)."""
    if STREAMS[fault.stream].sender == RSU_SENDER or spec is None:
        return RSU_SENDER
    return next((a.id for a in spec.agents if a.role is not AgentRole.BACKGROUND), RSU_SENDER)


def operator_field_problems(fault: Fault, spec: ScenarioSpec | None = None) -> list[FaultProblem]:
    """What is wrong with ``fault`` for its operator (empty when nothing is).

    ``spec`` (the fault's own) only chooses the sender a suppression without one is
    repaired to (:func:`default_sender`).
    """
    out: list[FaultProblem] = []
    op = FAULT_OPERATORS[fault.operator.value]
    if fault.stream not in op.streams:
        out.append(FaultProblem(("operator", "stream"), f"{op.name} acts on {'/'.join(op.streams)}, not {fault.stream}",
                                f"target {op.streams[0]}", (("stream", op.streams[0].value),)))
    if fault.field not in (None, "*") and fault.field not in STREAMS[fault.stream].fields:
        out.append(FaultProblem(("field",), f"{fault.stream} has no field {fault.field!r}",
                                "use the operator's default field", (("field", None),)))
    if op.magnitude_range is not None:
        lo, hi = op.magnitude_range
        if fault.magnitude is None:
            out.append(FaultProblem(("magnitude",), f"{op.name} needs a magnitude in {op.magnitude_unit}",
                                    f"set a magnitude in [{lo}, {hi}] {op.magnitude_unit}",
                                    (("magnitude", hi if lo < 0 else lo),)))
        elif not (lo <= fault.magnitude <= hi) or not math.isfinite(fault.magnitude):
            clamped = min(max(fault.magnitude, lo), hi) if math.isfinite(fault.magnitude) else hi
            out.append(FaultProblem(("magnitude",),
                                    f"{op.name} magnitude {fault.magnitude} {op.magnitude_unit} is outside [{lo}, {hi}]",
                                    "clamp into range", (("magnitude", clamped),)))
    if fault.operator is FaultOperator.DROP and fault.probability is not None and fault.burst_count is not None:
        out.append(FaultProblem(("probability", "burst_count"), "drop takes a probability or a burst count, not both",
                                "keep the burst count", (("probability", None),)))
    if fault.operator is FaultOperator.SPAT_PHASE_CORRUPT and fault.target_phase is None:
        out.append(FaultProblem(("target_phase",), "spat_phase_corrupt needs target_phase", "report green",
                                (("target_phase", "green"),)))
    if fault.operator is FaultOperator.REPLAY:
        if fault.field not in (None, "*"):
            out.append(FaultProblem(("field",), f"replay re-sends whole messages, not the field {fault.field!r}",
                                    "replay the whole message", (("field", None),)))
        period = STREAMS[fault.stream].period_s
        if fault.magnitude is not None and math.isfinite(fault.magnitude) and fault.magnitude < period - 1e-9:
            # the newest message at least that old is the previous one: a lag of one period, whatever is asked
            out.append(FaultProblem(("magnitude",),
                                    f"a replay lag of {fault.magnitude} s is shorter than the {fault.stream} period "
                                    f"({period:g} s): it re-sends the previous message, as a {period:g} s lag does",
                                    f"replay at least one period back ({period:g} s)", (("magnitude", period),)))
    if fault.operator is FaultOperator.GHOST_SENDER:
        out += _ghost_problems(fault, spec)
    elif fault.operator is FaultOperator.SPOOFED_RSU:
        out += _spoof_problems(fault, spec)
    else:
        if fault.ghost_speed_mps is not None:
            out.append(FaultProblem(("ghost_speed_mps",), f"ghost_speed_mps is the speed of a ghost_sender's forged "
                                    f"vehicle; {op.name} has none", "unset it", (("ghost_speed_mps", None),)))
        if fault.ghost_route is not GhostRoute.EGO:
            out.append(FaultProblem(("ghost_route",), f"ghost_route is the route of a ghost_sender's forged vehicle; "
                                    f"{op.name} has none", "unset it", (("ghost_route", None),)))
    if op.requires_sender and fault.sender is None:
        out.append(FaultProblem(("sender",), f"{op.name} needs a sender to silence", "name the sender",
                                (("sender", default_sender(fault, spec)),)))
    return out


GHOST_SENDER_DEFAULT = "ghost"  # the forged vehicle's id when a ghost_sender names none
CROSS_GHOST_APPS = frozenset((Application.IMA, Application.LTA))  # the applications with a crossing route
GHOST_MIN_DISTANCE_M = 5.0  # closer than this the ghost's centre lies inside the ego (4.5 m cars)


def ghost_id(fault: Fault) -> str:
    """The id a ghost_sender's forged vehicle transmits as (its ``sender``, else ``ghost``)."""
    return fault.sender or GHOST_SENDER_DEFAULT


def scene_names(spec: ScenarioSpec) -> set[str]:
    """The ids the spec itself gives its vehicles and RSUs (``ego``, its agents, ``rsu``); grounding adds
    background vehicles and RSU ids that :func:`resolve_faults` checks against."""
    return {"ego", RSU_SENDER, *(a.id for a in spec.agents)}


def free_id(default: str, taken: Collection[str]) -> str:
    """``default``, else ``default1``, ``default2``, ...: the first id none of ``taken`` has (a forged sender's
    repair: ``ghost``, ``rsu_spoof``)."""
    name, k = default, 0
    while name in taken:
        k += 1
        name = f"{default}{k}"
    return name


def _ghost_problems(fault: Fault, spec: ScenarioSpec | None) -> list[FaultProblem]:
    """A ghost_sender forges a whole vehicle: no single field; an id no vehicle or RSU of the scenario has (a
    forged sender that collides with a real one would be another fault, a second source of that vehicle's BSMs);
    not inside the ego."""
    out: list[FaultProblem] = []
    if fault.field not in (None, "*"):
        out.append(FaultProblem(("field",), f"ghost_sender forges whole BSMs, not the field {fault.field!r}",
                                "forge the whole message", (("field", None),)))
    if spec is not None and ghost_id(fault) in scene_names(spec):
        taken = scene_names(spec) | {ghost_id(f) for f in spec.faults if f.operator is FaultOperator.GHOST_SENDER}
        out.append(FaultProblem(("sender",), f"the ghost's sender {ghost_id(fault)!r} is a real "
                                f"{'RSU' if ghost_id(fault) == RSU_SENDER else 'vehicle'} of the scenario: a ghost "
                                "needs an id nobody has (to falsify a real sender's BSMs use bsm_position_offset)",
                                "give the ghost an id of its own", (("sender", free_id(GHOST_SENDER_DEFAULT, taken)),)))
    m = fault.magnitude
    if fault.ghost_route is GhostRoute.CROSS:
        if spec is not None and spec.application not in CROSS_GHOST_APPS:
            out.append(FaultProblem(("ghost_route",), f"{spec.application.value} has no crossing route for a ghost to "
                                    "drive (only IMA and LTA watch crossing traffic)", "put the ghost on the ego's route",
                                    (("ghost_route", None),)))
        if m is not None and math.isfinite(m) and m < 0.0:
            out.append(FaultProblem(("magnitude",), f"a ghost {-m:g} m past the conflict point is never heading for it",
                                    "place it before the conflict point", (("magnitude", -m),)))
        return out  # (the ego is on another route: no overlap with it to rule out)
    if m is not None and math.isfinite(m) and abs(m) < GHOST_MIN_DISTANCE_M:
        out.append(FaultProblem(("magnitude",), f"a ghost {m:g} m from the ego lies inside it (closer than "
                                f"{GHOST_MIN_DISTANCE_M:g} m, centre to centre)", "place it in front of the ego",
                                (("magnitude", 2.0 * GHOST_MIN_DISTANCE_M),)))
    return out


SPOOFED_RSU_DEFAULT = "rsu_spoof"  # the forged roadside unit's id when a spoofed_rsu names none


def rewires_lanes(fault: Fault) -> bool:
    """Does the fault tie the ego's lanes to another signal group (map_misassociation, or a forged MAP:
    spoofed_rsu on MAP)?"""
    return fault.operator is FaultOperator.MAP_MISASSOCIATION or (
        fault.operator is FaultOperator.SPOOFED_RSU and fault.stream is Stream.MAP)


def ties_lanes_to_cross(fault: Fault) -> bool:
    """A lane rewiring with no target group named: the ego's lanes go to the cross group (the default)."""
    return rewires_lanes(fault) and fault.target_group is None
SPOOF_DEFAULT_PHASE = "green"  # the phase a spoofed_rsu's SPaT shows when the spec names none


def spoof_id(fault: Fault) -> str:
    """The id a spoofed_rsu's forged roadside unit transmits as (its ``sender``, else ``rsu_spoof``)."""
    return fault.sender or SPOOFED_RSU_DEFAULT


def forged_id(fault: Fault) -> str | None:
    """The id a forging operator (ghost_sender, spoofed_rsu) transmits as; None for every other operator."""
    if fault.operator is FaultOperator.GHOST_SENDER:
        return ghost_id(fault)
    if fault.operator is FaultOperator.SPOOFED_RSU:
        return spoof_id(fault)
    return None


def free_forged_id(fault: Fault, taken: Collection[str]) -> str:
    """The first id a forging operator's sender may take that none of ``taken`` has (:func:`free_id` from its
    default: ``ghost`` or ``rsu_spoof``)."""
    return free_id(GHOST_SENDER_DEFAULT if fault.operator is FaultOperator.GHOST_SENDER else SPOOFED_RSU_DEFAULT, taken)


def _spoof_problems(fault: Fault, spec: ScenarioSpec | None) -> list[FaultProblem]:
    """A spoofed_rsu forges whole SPaT messages (no single field) from a roadside unit that is not the junction's:
    its id must be nobody's (a forged sender colliding with a real RSU or vehicle would be a second source of that
    sender's messages, which no operator models). ``rsu`` is every real RSU; a map's RSUs are ``rsu0``, ``rsu1``...
    (grounding checks those, :func:`resolve_faults`)."""
    out: list[FaultProblem] = []
    kind = fault.stream.value
    if fault.field not in (None, "*"):
        out.append(FaultProblem(("field",), f"spoofed_rsu forges whole {kind} messages, not the field {fault.field!r}",
                                "forge the whole message", (("field", None),)))
    if fault.magnitude is not None:
        out.append(FaultProblem(("magnitude",), "spoofed_rsu takes no magnitude: its SPaT shows target_phase, its MAP "
                                "ties the ego's lanes to target_group, until the window ends (to make a countdown lie "
                                "use spat_countdown_offset)", "unset the magnitude", (("magnitude", None),)))
    if fault.stream is Stream.MAP and fault.target_phase is not None:
        out.append(FaultProblem(("target_phase",), "a forged MAP shows no phase: it ties the ego's lanes to "
                                "target_group (a forged phase is spoofed_rsu on SPAT)", "unset target_phase",
                                (("target_phase", None),)))
    if spec is not None and spoof_id(fault) in scene_names(spec):
        taken = scene_names(spec) | {forged_id(f) or "" for f in spec.faults}
        out.append(FaultProblem(("sender",), f"the spoofed RSU's sender {spoof_id(fault)!r} is a real "
                                f"{'RSU' if spoof_id(fault) == RSU_SENDER else 'vehicle'} of the scenario: a forged "
                                "roadside unit needs an id nobody has (to falsify the real RSU's SPaT use "
                                "spat_phase_corrupt)", "give the forged RSU an id of its own",
                                (("sender", free_id(SPOOFED_RSU_DEFAULT, taken)),)))
    return out


def resolve_faults(spec: ScenarioSpec, *, groups: Collection[str], ego_group: str | None, cross_group: str | None,
                   rsu_ids: Sequence[str], vehicle_ids: Collection[str]) -> tuple[ResolvedFault, ...]:
    """The spec's faults with their senders and signal groups resolved to the scene's ids.

    ``groups``: every signal-group id of the scene (empty when unsignalized);
    ``ego_group`` / ``cross_group``: the ids ``ego`` and ``cross`` stand for (None when
    there is none); ``rsu_ids`` in order (the first is the primary sender of ``rsu``);
    ``vehicle_ids``: every vehicle of the scene (the ego included).
    Raises InvalidArgument naming ``faults[i].<field>`` for a name not in the scene.
    """
    known = set(groups)
    rsus = tuple(rsu_ids)
    out = []
    for i, f in enumerate(spec.faults):
        def group(name: str | None, path: str, i: int = i) -> str | None:
            if name in EGO_GROUP_ALIASES:
                return ego_group
            if name == CROSS_GROUP:
                return cross_group
            if name in known:
                return name
            raise InvalidArgument(FieldViolation(
                f"faults[{i}].{path}", f"signal group {name!r} is not in the scene",
                f"use 'ego', 'cross' or one of {sorted(known)}" if known else "the scene has no signal groups"))

        sender_ids: tuple[str, ...] = ()
        sender_id = f.sender
        if f.sender == RSU_SENDER:
            sender_ids = rsus
            sender_id = rsus[0] if rsus else None
        elif (forged := forged_id(f)) is not None:  # ghost_sender, spoofed_rsu: an id nobody of the scene has
            real = set(vehicle_ids) | set(rsus) | {RSU_SENDER}
            if forged in real:
                raise InvalidArgument(FieldViolation(
                    f"faults[{i}].sender", f"the forged sender {forged!r} of {f.operator.value} is a real vehicle or "
                    "RSU of the scene", f"an id no vehicle or RSU has, e.g. {free_forged_id(f, real)!r}"))
            sender_id, sender_ids = forged, (forged,)
        elif f.sender is not None:
            if f.sender not in vehicle_ids and f.sender not in rsus:
                raise InvalidArgument(FieldViolation(
                    f"faults[{i}].sender", f"{f.sender!r} is no vehicle or RSU of the scene",
                    f"one of {sorted(set(vehicle_ids) | set(rsus) | {RSU_SENDER})}"))
            sender_ids = (f.sender,)
        target = group(f.target_group, "target_group")
        if ties_lanes_to_cross(f):
            target = cross_group
        anchor_group = group(f.anchor.group, "anchor.group") if f.anchor.kind is AnchorKind.SIGNAL_EVENT else None
        start, end = fault_window_s(spec, f)
        window = (start, end) if math.isfinite(start) else None
        if f.stream in (Stream.SPAT, Stream.MAP) and sender_id is not None and sender_id not in rsus \
                and f.operator is not FaultOperator.SPOOFED_RSU:
            sender_id, sender_ids = None, ()
        out.append(ResolvedFault(fault=f, sender_id=sender_id, sender_ids=sender_ids, target_group_id=target,
                                 anchor_group_id=anchor_group, nominal_window_s=window))
    return tuple(out)


__all__ = ["rewires_lanes", "ties_lanes_to_cross", "CROSS_GHOST_APPS", "GHOST_MIN_DISTANCE_M", "GHOST_SENDER_DEFAULT", "RSU_SENDER", "SPOOFED_RSU_DEFAULT", "SPOOF_DEFAULT_PHASE",
           "FaultProblem", "default_sender", "forged_id", "free_forged_id", "free_id", "ghost_id",
           "operator_field_problems", "resolve_faults", "scene_names", "spoof_id"]
