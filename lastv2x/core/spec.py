"""The typed ScenarioSpec: the schema-constrained output of the parser role.

One source of truth: these pydantic models validate input (reporting every bad field
with its dotted path) and export the JSON Schema the LLM backends use for structured
output (``spec_json_schema()``). The protobuf ``lastv2x.v1.ScenarioSpec`` mirrors the
same field names; ``lastv2x.rpc.convert`` maps between them.

Units are in the field names (``speed_mps``, ``duration_s``, ``range_m``). Times are
seconds of scenario time from t = 0 unless a field says otherwise.
"""

from __future__ import annotations

import json
import math
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lastv2x.core.catalogue import (
    APPLICATIONS,
    BACKHAUL_LATENCY_S,
    FAULT_OPERATORS,
    LEADER_RANGE_M,
    SIGNAL_SIGHT_DISTANCE_M,
    Application,
    Stream,
    extension_member,
)
from lastv2x.core.errors import FieldViolation, InvalidArgument

SPEC_VERSION = "1"
MAX_AGENTS = 16
MAX_FAULTS = 16


class Maneuver(StrEnum):
    STRAIGHT = "straight"
    LEFT = "left"
    RIGHT = "right"


class DriverProfile(StrEnum):
    CAUTIOUS = "cautious"
    NORMAL = "normal"
    AGGRESSIVE = "aggressive"


class AgentRole(StrEnum):
    LEAD = "lead"  # ahead of the ego on its lane
    CROSS = "cross"  # crosses the ego path at the junction
    OPPOSING = "opposing"  # oncoming, conflicts with an ego left turn
    RELAY = "relay"  # between a braking lead and the ego (EEBL rebroadcast)
    FOLLOWER = "follower"  # behind the ego on its lane and route (struck-from-behind failures)
    BACKGROUND = "background"  # other traffic


AHEAD_ROLES = frozenset({AgentRole.LEAD, AgentRole.RELAY})  # on the ego's lane, gap_m ahead of it
EGO_LANE_ROLES = AHEAD_ROLES | {AgentRole.FOLLOWER}  # on the ego's approach and lane (a follower: behind it)


def agent_maneuver(spec: ScenarioSpec, agent: Agent) -> Maneuver:
    """The movement ``agent`` takes at the junction: a follower takes the ego's (it follows the ego's route)."""
    return spec.ego.maneuver if agent.role is AgentRole.FOLLOWER else agent.maneuver


class BehaviourKind(StrEnum):
    NONE = "none"
    HARD_BRAKE = "hard_brake"
    RED_LIGHT_RUNNER = "red_light_runner"
    YIELD = "yield"
    NO_YIELD = "no_yield"


class FaultOperator(StrEnum):
    DROP = "drop"
    DELAY = "delay"
    FREEZE = "freeze"
    TIMESTAMP_OFFSET = "timestamp_offset"
    SPAT_PHASE_CORRUPT = "spat_phase_corrupt"
    SPAT_COUNTDOWN_OFFSET = "spat_countdown_offset"
    BSM_POSITION_OFFSET = "bsm_position_offset"
    BSM_SPEED_OFFSET = "bsm_speed_offset"
    MAP_MISASSOCIATION = "map_misassociation"
    SUPPRESS_SENDER = "suppress_sender"
    REPLAY = "replay"
    GHOST_SENDER = "ghost_sender"
    SPOOFED_RSU = "spoofed_rsu"

    @classmethod
    def _missing_(cls, value: object) -> FaultOperator | None:
        """An operator registered in the catalogue under a name of its own (a plug-in); the catalogue's
        ``FAULT_OPERATORS`` is the list of operators, this enum names the built-in ones."""
        return extension_member(cls, value) if isinstance(value, str) and value in FAULT_OPERATORS else None


class AnchorKind(StrEnum):
    SCENARIO_TIME = "scenario_time"  # offset_s from t = 0
    SIGNAL_EVENT = "signal_event"  # onset of a phase of a signal group
    EGO_EVENT = "ego_event"  # the ego reaching a distance to the stop bar, or its decision epoch


class AnchorEvent(StrEnum):
    NONE = "none"
    GREEN_ONSET = "green_onset"
    AMBER_ONSET = "amber_onset"
    RED_ONSET = "red_onset"
    STOP_BAR_DISTANCE = "stop_bar_distance"
    DECISION_EPOCH = "decision_epoch"


class Phase(StrEnum):
    GREEN = "green"
    AMBER = "amber"
    RED = "red"


class JunctionKind(StrEnum):
    ANY = "any"
    SIGNALIZED_4WAY = "signalized_4way"
    T_JUNCTION = "t_junction"
    CORRIDOR = "corridor"
    URBAN_CANYON = "urban_canyon"


class RsuPlacement(StrEnum):
    NONE = "none"
    JUNCTION = "junction"  # an RSU at the ego junction and at every signalized junction the ego route crosses
    CHAIN = "chain"  # one per junction along a corridor
    SINGLE = "single"  # one RSU at the ego junction only: the junctions ahead on its route are not covered


SIGNAL_EVENTS = (AnchorEvent.GREEN_ONSET, AnchorEvent.AMBER_ONSET, AnchorEvent.RED_ONSET)
EGO_EVENTS = (AnchorEvent.STOP_BAR_DISTANCE, AnchorEvent.DECISION_EPOCH)

Speed = Annotated[float, Field(gt=0.0, le=40.0, description="m/s")]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)


class MapQuery(_Model):
    """What kind of place the scenario needs; grounding retrieves a matching junction."""

    town: str | None = Field(None, max_length=64, description="map name (built-in or CARLA town); null = any")
    junction_kind: JunctionKind = JunctionKind.ANY
    signalized: bool | None = Field(None, description="null = as the application requires")
    min_approaches: int = Field(3, ge=3, le=6, description="approach count of the junction")
    busy: bool = Field(False, description="background traffic on the other approaches")
    # corridor traversal; left out of the JSON when unset: specs keep their bytes
    junctions_ahead: int = Field(0, ge=0, le=7, exclude_if=lambda v: v == 0,
                                 description="signalized junctions the ego route crosses after the scenario junction "
                                             "(a corridor traversal of junctions_ahead + 1); 0 = as the scenario needs")
    whole_corridor: bool = Field(False, exclude_if=lambda v: v is False,
                                 description="the ego starts at a corridor's first junction and crosses every one after it")


class Ego(_Model):
    maneuver: Maneuver = Maneuver.STRAIGHT
    speed_mps: Speed = 13.9
    profile: DriverProfile = DriverProfile.NORMAL
    start_distance_m: float = Field(120.0, ge=10.0, le=1000.0, description="route distance to the stop bar at t = 0, m")
    # left out of the JSON when true (the default): specs keep their bytes
    equipped: bool = Field(True, exclude_if=lambda v: v is True,
                           description="carries a V2X unit; false = drives by sight (see perception), runs no application")


class Behaviour(_Model):
    kind: BehaviourKind = BehaviourKind.NONE
    at_time_s: float | None = Field(None, ge=0.0, le=600.0, description="hard-brake onset, s")
    decel_mps2: float = Field(6.0, gt=0.0, le=10.0, description="hard-brake deceleration, m/s^2")


class Agent(_Model):
    id: str = Field(..., min_length=1, max_length=32, pattern=r"^[a-z][a-z0-9_]*$")
    role: AgentRole
    maneuver: Maneuver = Maneuver.STRAIGHT
    speed_mps: Speed = 13.9
    profile: DriverProfile = DriverProfile.NORMAL
    equipped: bool = True
    behaviour: Behaviour = Behaviour()
    arrival_offset_s: float = Field(
        0.0, ge=-30.0, le=30.0,
        description="cross/opposing: arrival at the conflict point minus the ego's arrival, s")
    gap_m: float = Field(30.0, ge=5.0, le=300.0,
                         description="lead/relay: distance ahead of the ego at t = 0; follower: behind it, m")
    # left out of the JSON when unset: specs keep their bytes
    application: Application | None = Field(
        None, exclude_if=lambda v: v is None,
        description="an equipped agent runs this reference application on its own V2X information; null = none")


class ChannelModel(StrEnum):
    LOG_DISTANCE = "log_distance"  # LAST-V2X Appendix B: log-distance path loss + height-aware building blockage
    TR37885_HIGHWAY = "tr37885_highway"  # 3GPP TR 37.885 V2V highway: LOS / NLOSv, vehicle blockage, shadowing
    TR37885_URBAN = "tr37885_urban"  # 3GPP TR 37.885 V2V urban: buildings make NLOS, else LOS / NLOSv
    # WINNER+ B1 LOS path loss, 3 dB shadowing and the 802.11p receiver of Sepulcre et al. 2022 (no interference)
    WINNER_B1_80211P = "winner_b1_80211p"


class Channel(_Model):
    range_m: float = Field(150.0, ge=10.0, le=2000.0, description="radio range R beyond which links get the noise floor, m")
    blockage_db_per_m: float = Field(5.0, ge=0.0, le=50.0, description="building blockage loss, dB per metre")
    # left out of the JSON when it is the default: specs keep their bytes
    model: ChannelModel = Field(ChannelModel.LOG_DISTANCE, exclude_if=lambda v: v is ChannelModel.LOG_DISTANCE,
                                description="path-loss model of the V2X links (docs/guides/simulator.md)")


RSU_ID_PATTERN = r"^rsu[0-9]+$"


class BackhaulLink(_Model):
    """Two RSUs joined by the backhaul (both directions). RSUs are ``rsu0``, ``rsu1``, ... in the
    order of the junctions they serve along the ego route (placement ``chain``)."""

    rsu_a: str = Field(..., max_length=16, pattern=RSU_ID_PATTERN)
    rsu_b: str = Field(..., max_length=16, pattern=RSU_ID_PATTERN)


class Backhaul(_Model):
    """RSU-to-RSU forwarding of SPaT over a wired backhaul: its own latency and loss, not the radio
    (next to ``spat_relay``, which forwards over the radio). RSUs rebroadcast what they receive."""

    latency_s: float = Field(BACKHAUL_LATENCY_S, ge=0.0, le=5.0, description="one-way latency of a forwarded message, s")
    loss: float = Field(0.0, ge=0.0, le=1.0, description="probability a forwarded message is lost")
    links: tuple[BackhaulLink, ...] = Field((), max_length=64, description="RSU pairs joined; empty = every pair")


class RsuSite(StrEnum):
    """Which corner of a junction its RSU stands on, seen from the ego's approach to that junction."""

    BEST_VIEW = "best_view"  # the corner whose antenna sees most approaches (ties: seeded)
    NEAR_SIDE = "near_side"  # a corner before the stop line
    FAR_SIDE = "far_side"  # a corner across the junction


class V2X(_Model):
    penetration: float = Field(1.0, ge=0.0, le=1.0, description="share of background vehicles equipped")
    rsu_placement: RsuPlacement = RsuPlacement.JUNCTION
    spat_relay: bool = Field(False, description="RSU-to-RSU relay of SPaT for junctions ahead")
    eebl_rebroadcast: bool = Field(False, description="V2V rebroadcast of EEBL events")
    channel: Channel = Channel()
    # left out of the JSON when unset: specs keep their bytes
    backhaul: Backhaul | None = Field(None, exclude_if=lambda v: v is None,
                                      description="RSUs share SPaT over a wired backhaul; null = none")
    rsu_site: RsuSite = Field(RsuSite.BEST_VIEW, exclude_if=lambda v: v is RsuSite.BEST_VIEW,
                              description="which corner of each junction its RSU stands on, seen from the ego's "
                                          "approach: best_view (the corner that sees most approaches), near_side "
                                          "(before the stop line), far_side (across the junction)")
    rsu_height_m: float | None = Field(None, ge=2.0, le=20.0, exclude_if=lambda v: v is None,
                                       description="antenna height of every RSU, m; null = the map's site height")


class Coordination(StrEnum):
    """How the plans of the junctions after the scenario junction relate to its plan."""

    SAME = "same"  # every junction runs the scenario junction's plan: green starts everywhere at once
    GREEN_WAVE = "green_wave"  # each junction's green starts when a car at progression_speed_mps from the first arrives
    RANDOM = "random"  # each junction its own offset, drawn from the seed (SIGNAL_OFFSETS substream)


class SignalPlan(_Model):
    """Fixed-time plan of the ego's signal group; other groups are derived from it."""

    cycle_s: float = Field(60.0, ge=10.0, le=300.0)
    green_s: float = Field(27.0, ge=2.0, le=290.0)
    amber_s: float = Field(3.0, ge=1.0, le=10.0)
    all_red_s: float = Field(2.0, ge=0.0, le=10.0)
    offset_s: float = Field(0.0, ge=0.0, le=300.0, description="phase offset: green starts at t = -offset_s")
    # left out of the JSON when unset: specs keep their bytes
    coordination: Coordination = Field(Coordination.SAME, exclude_if=lambda v: v is Coordination.SAME,
                                       description="the junctions after the scenario junction: same plan, green wave "
                                                   "or seeded random offsets")
    progression_speed_mps: float | None = Field(
        None, gt=0.0, le=40.0, exclude_if=lambda v: v is None,
        description="green wave design speed, m/s; null = the ego's speed")

    @model_validator(mode="after")
    def _fits_cycle(self) -> SignalPlan:
        if self.green_s + self.amber_s + self.all_red_s > self.cycle_s:
            raise ValueError("green_s + amber_s + all_red_s exceeds cycle_s")
        return self


class Anchor(_Model):
    kind: AnchorKind = AnchorKind.SCENARIO_TIME
    event: AnchorEvent = AnchorEvent.NONE
    group: str | None = Field(None, max_length=32, description="signal group; null = the ego's group")
    distance_m: float | None = Field(None, ge=0.0, le=1000.0, description="stop_bar_distance: metres before the stop bar")
    offset_s: float = Field(0.0, ge=-120.0, le=600.0, description="seconds after the event (negative = before)")

    @model_validator(mode="after")
    def _event_matches_kind(self) -> Anchor:
        if self.kind is AnchorKind.SCENARIO_TIME and self.event is not AnchorEvent.NONE:
            raise ValueError("a scenario_time anchor takes event 'none'")
        if self.kind is AnchorKind.SIGNAL_EVENT and self.event not in SIGNAL_EVENTS:
            raise ValueError(f"a signal_event anchor needs event in {[e.value for e in SIGNAL_EVENTS]}")
        if self.kind is AnchorKind.EGO_EVENT and self.event not in EGO_EVENTS:
            raise ValueError(f"an ego_event anchor needs event in {[e.value for e in EGO_EVENTS]}")
        if self.event is AnchorEvent.STOP_BAR_DISTANCE and self.distance_m is None:
            raise ValueError("stop_bar_distance needs distance_m")
        return self


class GhostRoute(StrEnum):
    """Where a ghost_sender's forged vehicle drives."""

    EGO = "ego"  # on the ego's route, ``magnitude`` m ahead of the ego when the window opens (negative: behind)
    CROSS = "cross"  # on the crossing route (IMA, LTA), ``magnitude`` m before the conflict point, heading for it


class Fault(_Model):
    name: str = Field(..., min_length=1, max_length=48, pattern=r"^[a-z][a-z0-9_\-]*$")
    operator: FaultOperator
    stream: Stream
    field: str | None = Field(None, max_length=32, description="null = the operator's default field")
    sender: str | None = Field(None, max_length=32, description="agent id, 'ego' or 'rsu'; null = every sender "
                                                                "(ghost_sender / spoofed_rsu: the forged id)")
    anchor: Anchor = Anchor()
    duration_s: float | None = Field(None, gt=0.0, le=600.0, description="null = active to the end")
    magnitude: float | None = Field(None, description="in the operator's unit (see catalogue)")
    probability: float | None = Field(None, ge=0.0, le=1.0, description="drop: per-message drop probability")
    burst_count: int | None = Field(None, ge=1, le=10000, description="drop: consecutive messages dropped")
    target_phase: Phase | None = None
    target_group: str | None = Field(None, max_length=32)
    provenance: str = Field("spec", max_length=128, description="where the magnitude came from")
    # ghost_sender: the forged vehicle's speed along the ego route (0 = stopped in the lane); left out of the JSON
    # when unset, so specs without a ghost keep their bytes
    ghost_speed_mps: float | None = Field(
        None, ge=0.0, le=40.0, allow_inf_nan=False, exclude_if=lambda v: v is None,
        description="ghost_sender: the forged vehicle's speed along the ego route, m/s, [0, 40]; null = 0 (stopped)")
    # ghost_sender: which route the forged vehicle drives (left out of the JSON when the ego's, the default)
    ghost_route: GhostRoute = Field(
        GhostRoute.EGO, exclude_if=lambda v: v is GhostRoute.EGO,
        description="ghost_sender: 'ego' (on the ego's route, magnitude m ahead of the ego) or 'cross' (IMA, LTA: on "
                    "the crossing route, magnitude m before the conflict point, heading for it)")


class Bounds(_Model):
    """Inclusive bounds of a value the scenario seed draws uniformly; ``min == max`` pins it.
    The verifier reports negative, inverted or out-of-range bounds (``variation`` in its
    consistency family) with a repair."""

    min: float = Field(..., allow_inf_nan=False, description="lower bound, in the quantity's unit")
    max: float = Field(..., allow_inf_nan=False, description="upper bound, in the quantity's unit")


class CountBounds(_Model):
    """Inclusive bounds of a count the scenario seed draws uniformly; ``min == max`` pins it."""

    min: int = Field(..., ge=-1000, le=1000)
    max: int = Field(..., ge=-1000, le=1000)


class Variation(_Model):
    """What the scenario seed varies, within these bounds, when a program is built from the spec
    (``lastv2x.core.variation``), so that seeds are different worlds. A quantity left unset keeps the
    spec's own values (pinned); with no variation at all nothing is drawn."""

    desired_speed_mps: Bounds | None = Field(
        None, description="each vehicle's desired (and initial) speed, m/s, in [1, 40]: ego, agents, background")
    arrival_jitter_s: Bounds | None = Field(
        None, description="added to each cross/opposing agent's arrival_offset_s, s, in [-30, 30]")
    reaction_time_s: Bounds | None = Field(
        None, description="each vehicle's leader-perception reaction time, s, in [0, 5]")
    background_vehicles: CountBounds | None = Field(
        None, description="how many background vehicles map.busy places, in [0, 16]")
    # left out of the JSON when unset: specs keep their bytes
    alerted_reaction_s: Bounds | None = Field(
        None, exclude_if=lambda v: v is None,
        description="each vehicle's reaction to an in-vehicle warning (STOP, BRAKE, YIELD), s, in [0, 3]")


class Perception(_Model):
    """What a vehicle without V2X sees (``lastv2x.core.perception``, which gives the defaults' sources).
    Set: every unequipped vehicle drives by it; unset: only an unequipped ego does, with the defaults.
    ``equipped_see_signals``: equipped drivers watch the signal face too."""

    signal_sight_distance_m: float = Field(
        SIGNAL_SIGHT_DISTANCE_M, ge=1.0, le=1000.0,
        description="a signal is acted on once its stop bar is this close (MUTCD Table 4D-2), m")
    leader_range_m: float = Field(LEADER_RANGE_M, ge=1.0, le=2000.0,
                                  description="a leader is perceived within this bumper gap, m")
    # left out of the JSON when unset: specs keep their bytes
    equipped_see_signals: bool = Field(
        False, exclude_if=lambda v: not v,
        description="equipped drivers act on a signal they see within signal_sight_distance_m as well as on their "
                    "application (a GLOSA driver who stops for a red it can see); false = an equipped ego of a "
                    "signal application acts on its application alone (RLVW's inattentive driver)")


class ScenarioSpec(_Model):
    """A test intent made precise: what application, where, who, which faults."""

    spec_version: str = SPEC_VERSION
    application: Application
    intent: str = Field("", max_length=4000)
    seed: int = Field(0, ge=0, le=2**63 - 1)
    duration_s: float = Field(30.0, gt=0.0, le=600.0)
    map: MapQuery = MapQuery()
    ego: Ego = Ego()
    agents: tuple[Agent, ...] = Field((), max_length=MAX_AGENTS)
    v2x: V2X = V2X()
    signal: SignalPlan = SignalPlan()
    faults: tuple[Fault, ...] = Field((), max_length=MAX_FAULTS)
    # left out of the JSON when unset: a spec (and the program, outcome and ledger ids hashed over it)
    # without variation keeps the bytes it had before the field existed
    variation: Variation | None = Field(None, exclude_if=lambda v: v is None,
                                        description="seed-drawn variation of the world; null = none")
    perception: Perception | None = Field(
        None, exclude_if=lambda v: v is None,
        description="what unequipped vehicles see; null = the defaults, for an unequipped ego only")


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<root>"


def _hint(err: Any) -> str:
    ctx = err.get("ctx") or {}
    kind = err["type"]
    if kind == "enum":
        return f"use one of {ctx.get('expected', '')}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = next(iter(ctx.values()), "")
        return f"bound is {bound}"
    if kind == "extra_forbidden":
        return "remove this field; see the ScenarioSpec JSON Schema"
    if kind == "missing":
        return "this field is required"
    return _LENGTH_HINT.get(kind, "").format(**ctx) or _TYPE_HINTS.get(kind.split("_")[0], "") or \
        "see the ScenarioSpec JSON Schema for this field's type and range"


# what a value of the wrong type should be, by pydantic's error kind (its first word: bool_parsing, bool_type, ...)
_TYPE_HINTS = {"bool": "use true or false", "int": "use a whole number", "float": "use a number",
               "string": "use a JSON string", "tuple": "use a JSON array", "list": "use a JSON array",
               "model": "use a JSON object", "dict": "use a JSON object", "literal": "use one of the listed values"}
_LENGTH_HINT = {"string_too_long": "at most {max_length} characters", "too_long": "at most {max_length} items",
                "too_short": "at least {min_length} items", "string_too_short": "at least {min_length} characters"}


def violations_from(exc: ValidationError, prefix: str = "") -> list[FieldViolation]:
    out = []
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if p not in ("function-after",))
        path = _path(loc)
        msg, hint = err["msg"], _hint(err)
        value = err.get("input")
        if isinstance(value, float) and not math.isfinite(value):  # NaN is not "more than 40": it is no number
            msg, hint = f"{value} is not a finite number", f"use a finite number{'; ' + hint if hint else ''}"
        out.append(FieldViolation(f"{prefix}{path}" if prefix else path, msg, hint))
    return out


def parse_spec(data: dict[str, Any] | str | bytes) -> ScenarioSpec:
    """Validate a JSON object (or text) into a ScenarioSpec; raise InvalidArgument with every bad path."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise InvalidArgument(FieldViolation("<root>", f"not JSON: {exc.msg} at char {exc.pos}",
                                                 "send one JSON object")) from None
        except RecursionError:
            raise InvalidArgument(FieldViolation("<root>", "JSON nested too deeply",
                                                 f"a spec nests at most {MAX_JSON_DEPTH} levels")) from None
        except ValueError as exc:  # an integer over Python's digit limit (4,300)
            raise InvalidArgument(FieldViolation("<root>", f"not usable JSON: {str(exc).split(';')[0]}",
                                                 "send numbers of at most 19 digits")) from None
    if not isinstance(data, dict):
        raise InvalidArgument(FieldViolation("<root>", "expected a JSON object", "wrap fields in {}"))
    if _depth(data) > MAX_JSON_DEPTH:
        raise InvalidArgument(FieldViolation("<root>", "JSON nested too deeply",
                                             f"a spec nests at most {MAX_JSON_DEPTH} levels"))
    try:
        return ScenarioSpec.model_validate(data)
    except ValidationError as exc:
        raise InvalidArgument(violations_from(exc)) from None


MAX_JSON_DEPTH = 32  # a ScenarioSpec nests 4 levels; anything deeper is not a spec


def _depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """Nesting depth of a JSON value, counted up to ``limit + 1`` (iterative: no recursion limit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, d)
            if d > limit:
                return d
            stack.extend((child, d + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def spec_to_dict(spec: ScenarioSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json")


def spec_json_schema() -> dict[str, Any]:
    """JSON Schema of ScenarioSpec, for LLM structured output and for docs. The ``FaultOperator`` and
    ``Application`` enums list every name registered in the catalogue when it is called (the built-in
    members first, in enum order, then any plug-in), not only the enums' own members."""
    schema = ScenarioSpec.model_json_schema()
    defs = schema.get("$defs", {})
    for name, registered in (("FaultOperator", [str(k) for k in FAULT_OPERATORS]),
                             ("Application", [str(k) for k in APPLICATIONS])):
        node = defs.get(name)
        if isinstance(node, dict) and isinstance(node.get("enum"), list):
            node["enum"] = node["enum"] + [v for v in registered if v not in node["enum"]]
    return schema
