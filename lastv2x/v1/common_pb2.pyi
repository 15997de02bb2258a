from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Application(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPLICATION_UNSPECIFIED: _ClassVar[Application]
    APPLICATION_RLVW: _ClassVar[Application]
    APPLICATION_GLOSA: _ClassVar[Application]
    APPLICATION_FCW: _ClassVar[Application]
    APPLICATION_EEBL: _ClassVar[Application]
    APPLICATION_IMA: _ClassVar[Application]
    APPLICATION_LTA: _ClassVar[Application]

class Stream(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STREAM_UNSPECIFIED: _ClassVar[Stream]
    STREAM_BSM: _ClassVar[Stream]
    STREAM_SPAT: _ClassVar[Stream]
    STREAM_MAP: _ClassVar[Stream]
    STREAM_EEBL: _ClassVar[Stream]

class Maneuver(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MANEUVER_UNSPECIFIED: _ClassVar[Maneuver]
    MANEUVER_STRAIGHT: _ClassVar[Maneuver]
    MANEUVER_LEFT: _ClassVar[Maneuver]
    MANEUVER_RIGHT: _ClassVar[Maneuver]

class DriverProfile(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DRIVER_PROFILE_UNSPECIFIED: _ClassVar[DriverProfile]
    DRIVER_PROFILE_CAUTIOUS: _ClassVar[DriverProfile]
    DRIVER_PROFILE_NORMAL: _ClassVar[DriverProfile]
    DRIVER_PROFILE_AGGRESSIVE: _ClassVar[DriverProfile]

class AgentRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AGENT_ROLE_UNSPECIFIED: _ClassVar[AgentRole]
    AGENT_ROLE_LEAD: _ClassVar[AgentRole]
    AGENT_ROLE_CROSS: _ClassVar[AgentRole]
    AGENT_ROLE_OPPOSING: _ClassVar[AgentRole]
    AGENT_ROLE_RELAY: _ClassVar[AgentRole]
    AGENT_ROLE_BACKGROUND: _ClassVar[AgentRole]
    AGENT_ROLE_FOLLOWER: _ClassVar[AgentRole]

class BehaviourKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BEHAVIOUR_KIND_UNSPECIFIED: _ClassVar[BehaviourKind]
    BEHAVIOUR_KIND_NONE: _ClassVar[BehaviourKind]
    BEHAVIOUR_KIND_HARD_BRAKE: _ClassVar[BehaviourKind]
    BEHAVIOUR_KIND_RED_LIGHT_RUNNER: _ClassVar[BehaviourKind]
    BEHAVIOUR_KIND_YIELD: _ClassVar[BehaviourKind]
    BEHAVIOUR_KIND_NO_YIELD: _ClassVar[BehaviourKind]

class FaultOperator(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAULT_OPERATOR_UNSPECIFIED: _ClassVar[FaultOperator]
    FAULT_OPERATOR_DROP: _ClassVar[FaultOperator]
    FAULT_OPERATOR_DELAY: _ClassVar[FaultOperator]
    FAULT_OPERATOR_FREEZE: _ClassVar[FaultOperator]
    FAULT_OPERATOR_TIMESTAMP_OFFSET: _ClassVar[FaultOperator]
    FAULT_OPERATOR_SPAT_PHASE_CORRUPT: _ClassVar[FaultOperator]
    FAULT_OPERATOR_SPAT_COUNTDOWN_OFFSET: _ClassVar[FaultOperator]
    FAULT_OPERATOR_BSM_POSITION_OFFSET: _ClassVar[FaultOperator]
    FAULT_OPERATOR_BSM_SPEED_OFFSET: _ClassVar[FaultOperator]
    FAULT_OPERATOR_MAP_MISASSOCIATION: _ClassVar[FaultOperator]
    FAULT_OPERATOR_SUPPRESS_SENDER: _ClassVar[FaultOperator]
    FAULT_OPERATOR_REPLAY: _ClassVar[FaultOperator]
    FAULT_OPERATOR_GHOST_SENDER: _ClassVar[FaultOperator]
    FAULT_OPERATOR_SPOOFED_RSU: _ClassVar[FaultOperator]

class AnchorKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ANCHOR_KIND_UNSPECIFIED: _ClassVar[AnchorKind]
    ANCHOR_KIND_SCENARIO_TIME: _ClassVar[AnchorKind]
    ANCHOR_KIND_SIGNAL_EVENT: _ClassVar[AnchorKind]
    ANCHOR_KIND_EGO_EVENT: _ClassVar[AnchorKind]

class AnchorEvent(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ANCHOR_EVENT_UNSPECIFIED: _ClassVar[AnchorEvent]
    ANCHOR_EVENT_NONE: _ClassVar[AnchorEvent]
    ANCHOR_EVENT_GREEN_ONSET: _ClassVar[AnchorEvent]
    ANCHOR_EVENT_AMBER_ONSET: _ClassVar[AnchorEvent]
    ANCHOR_EVENT_RED_ONSET: _ClassVar[AnchorEvent]
    ANCHOR_EVENT_STOP_BAR_DISTANCE: _ClassVar[AnchorEvent]
    ANCHOR_EVENT_DECISION_EPOCH: _ClassVar[AnchorEvent]

class Phase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PHASE_UNSPECIFIED: _ClassVar[Phase]
    PHASE_GREEN: _ClassVar[Phase]
    PHASE_AMBER: _ClassVar[Phase]
    PHASE_RED: _ClassVar[Phase]

class JunctionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JUNCTION_KIND_UNSPECIFIED: _ClassVar[JunctionKind]
    JUNCTION_KIND_ANY: _ClassVar[JunctionKind]
    JUNCTION_KIND_SIGNALIZED_4WAY: _ClassVar[JunctionKind]
    JUNCTION_KIND_T_JUNCTION: _ClassVar[JunctionKind]
    JUNCTION_KIND_CORRIDOR: _ClassVar[JunctionKind]
    JUNCTION_KIND_URBAN_CANYON: _ClassVar[JunctionKind]

class RsuPlacement(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RSU_PLACEMENT_UNSPECIFIED: _ClassVar[RsuPlacement]
    RSU_PLACEMENT_NONE: _ClassVar[RsuPlacement]
    RSU_PLACEMENT_JUNCTION: _ClassVar[RsuPlacement]
    RSU_PLACEMENT_CHAIN: _ClassVar[RsuPlacement]
    RSU_PLACEMENT_SINGLE: _ClassVar[RsuPlacement]

class ChannelModel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHANNEL_MODEL_UNSPECIFIED: _ClassVar[ChannelModel]
    CHANNEL_MODEL_LOG_DISTANCE: _ClassVar[ChannelModel]
    CHANNEL_MODEL_TR37885_HIGHWAY: _ClassVar[ChannelModel]
    CHANNEL_MODEL_TR37885_URBAN: _ClassVar[ChannelModel]
    CHANNEL_MODEL_WINNER_B1_80211P: _ClassVar[ChannelModel]

class RsuSite(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RSU_SITE_UNSPECIFIED: _ClassVar[RsuSite]
    RSU_SITE_BEST_VIEW: _ClassVar[RsuSite]
    RSU_SITE_NEAR_SIDE: _ClassVar[RsuSite]
    RSU_SITE_FAR_SIDE: _ClassVar[RsuSite]

class Coordination(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COORDINATION_UNSPECIFIED: _ClassVar[Coordination]
    COORDINATION_SAME: _ClassVar[Coordination]
    COORDINATION_GREEN_WAVE: _ClassVar[Coordination]
    COORDINATION_RANDOM: _ClassVar[Coordination]

class Severity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEVERITY_UNSPECIFIED: _ClassVar[Severity]
    SEVERITY_ERROR: _ClassVar[Severity]
    SEVERITY_WARNING: _ClassVar[Severity]
    SEVERITY_NOTE: _ClassVar[Severity]

class VehicleRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VEHICLE_ROLE_UNSPECIFIED: _ClassVar[VehicleRole]
    VEHICLE_ROLE_EGO: _ClassVar[VehicleRole]
    VEHICLE_ROLE_LEAD: _ClassVar[VehicleRole]
    VEHICLE_ROLE_CROSS: _ClassVar[VehicleRole]
    VEHICLE_ROLE_OPPOSING: _ClassVar[VehicleRole]
    VEHICLE_ROLE_RELAY: _ClassVar[VehicleRole]
    VEHICLE_ROLE_BACKGROUND: _ClassVar[VehicleRole]
    VEHICLE_ROLE_FOLLOWER: _ClassVar[VehicleRole]

class FailureClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAILURE_CLASS_UNSPECIFIED: _ClassVar[FailureClass]
    FAILURE_CLASS_STALE_BUT_DETECTABLE: _ClassVar[FailureClass]
    FAILURE_CLASS_FRESH_BUT_WRONG: _ClassVar[FailureClass]
    FAILURE_CLASS_SILENT_BY_ABSENCE: _ClassVar[FailureClass]

class CampaignState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CAMPAIGN_STATE_UNSPECIFIED: _ClassVar[CampaignState]
    CAMPAIGN_STATE_QUEUED: _ClassVar[CampaignState]
    CAMPAIGN_STATE_RUNNING: _ClassVar[CampaignState]
    CAMPAIGN_STATE_DONE: _ClassVar[CampaignState]
    CAMPAIGN_STATE_FAILED: _ClassVar[CampaignState]
    CAMPAIGN_STATE_CANCELLED: _ClassVar[CampaignState]
APPLICATION_UNSPECIFIED: Application
APPLICATION_RLVW: Application
APPLICATION_GLOSA: Application
APPLICATION_FCW: Application
APPLICATION_EEBL: Application
APPLICATION_IMA: Application
APPLICATION_LTA: Application
STREAM_UNSPECIFIED: Stream
STREAM_BSM: Stream
STREAM_SPAT: Stream
STREAM_MAP: Stream
STREAM_EEBL: Stream
MANEUVER_UNSPECIFIED: Maneuver
MANEUVER_STRAIGHT: Maneuver
MANEUVER_LEFT: Maneuver
MANEUVER_RIGHT: Maneuver
DRIVER_PROFILE_UNSPECIFIED: DriverProfile
DRIVER_PROFILE_CAUTIOUS: DriverProfile
DRIVER_PROFILE_NORMAL: DriverProfile
DRIVER_PROFILE_AGGRESSIVE: DriverProfile
AGENT_ROLE_UNSPECIFIED: AgentRole
AGENT_ROLE_LEAD: AgentRole
AGENT_ROLE_CROSS: AgentRole
AGENT_ROLE_OPPOSING: AgentRole
AGENT_ROLE_RELAY: AgentRole
AGENT_ROLE_BACKGROUND: AgentRole
AGENT_ROLE_FOLLOWER: AgentRole
BEHAVIOUR_KIND_UNSPECIFIED: BehaviourKind
BEHAVIOUR_KIND_NONE: BehaviourKind
BEHAVIOUR_KIND_HARD_BRAKE: BehaviourKind
BEHAVIOUR_KIND_RED_LIGHT_RUNNER: BehaviourKind
BEHAVIOUR_KIND_YIELD: BehaviourKind
BEHAVIOUR_KIND_NO_YIELD: BehaviourKind
FAULT_OPERATOR_UNSPECIFIED: FaultOperator
FAULT_OPERATOR_DROP: FaultOperator
FAULT_OPERATOR_DELAY: FaultOperator
FAULT_OPERATOR_FREEZE: FaultOperator
FAULT_OPERATOR_TIMESTAMP_OFFSET: FaultOperator
FAULT_OPERATOR_SPAT_PHASE_CORRUPT: FaultOperator
FAULT_OPERATOR_SPAT_COUNTDOWN_OFFSET: FaultOperator
FAULT_OPERATOR_BSM_POSITION_OFFSET: FaultOperator
FAULT_OPERATOR_BSM_SPEED_OFFSET: FaultOperator
FAULT_OPERATOR_MAP_MISASSOCIATION: FaultOperator
FAULT_OPERATOR_SUPPRESS_SENDER: FaultOperator
FAULT_OPERATOR_REPLAY: FaultOperator
FAULT_OPERATOR_GHOST_SENDER: FaultOperator
FAULT_OPERATOR_SPOOFED_RSU: FaultOperator
ANCHOR_KIND_UNSPECIFIED: AnchorKind
ANCHOR_KIND_SCENARIO_TIME: AnchorKind
ANCHOR_KIND_SIGNAL_EVENT: AnchorKind
ANCHOR_KIND_EGO_EVENT: AnchorKind
ANCHOR_EVENT_UNSPECIFIED: AnchorEvent
ANCHOR_EVENT_NONE: AnchorEvent
ANCHOR_EVENT_GREEN_ONSET: AnchorEvent
ANCHOR_EVENT_AMBER_ONSET: AnchorEvent
ANCHOR_EVENT_RED_ONSET: AnchorEvent
ANCHOR_EVENT_STOP_BAR_DISTANCE: AnchorEvent
ANCHOR_EVENT_DECISION_EPOCH: AnchorEvent
PHASE_UNSPECIFIED: Phase
PHASE_GREEN: Phase
PHASE_AMBER: Phase
PHASE_RED: Phase
JUNCTION_KIND_UNSPECIFIED: JunctionKind
JUNCTION_KIND_ANY: JunctionKind
JUNCTION_KIND_SIGNALIZED_4WAY: JunctionKind
JUNCTION_KIND_T_JUNCTION: JunctionKind
JUNCTION_KIND_CORRIDOR: JunctionKind
JUNCTION_KIND_URBAN_CANYON: JunctionKind
RSU_PLACEMENT_UNSPECIFIED: RsuPlacement
RSU_PLACEMENT_NONE: RsuPlacement
RSU_PLACEMENT_JUNCTION: RsuPlacement
RSU_PLACEMENT_CHAIN: RsuPlacement
RSU_PLACEMENT_SINGLE: RsuPlacement
CHANNEL_MODEL_UNSPECIFIED: ChannelModel
CHANNEL_MODEL_LOG_DISTANCE: ChannelModel
CHANNEL_MODEL_TR37885_HIGHWAY: ChannelModel
CHANNEL_MODEL_TR37885_URBAN: ChannelModel
CHANNEL_MODEL_WINNER_B1_80211P: ChannelModel
RSU_SITE_UNSPECIFIED: RsuSite
RSU_SITE_BEST_VIEW: RsuSite
RSU_SITE_NEAR_SIDE: RsuSite
RSU_SITE_FAR_SIDE: RsuSite
COORDINATION_UNSPECIFIED: Coordination
COORDINATION_SAME: Coordination
COORDINATION_GREEN_WAVE: Coordination
COORDINATION_RANDOM: Coordination
SEVERITY_UNSPECIFIED: Severity
SEVERITY_ERROR: Severity
SEVERITY_WARNING: Severity
SEVERITY_NOTE: Severity
VEHICLE_ROLE_UNSPECIFIED: VehicleRole
VEHICLE_ROLE_EGO: VehicleRole
VEHICLE_ROLE_LEAD: VehicleRole
VEHICLE_ROLE_CROSS: VehicleRole
VEHICLE_ROLE_OPPOSING: VehicleRole
VEHICLE_ROLE_RELAY: VehicleRole
VEHICLE_ROLE_BACKGROUND: VehicleRole
VEHICLE_ROLE_FOLLOWER: VehicleRole
FAILURE_CLASS_UNSPECIFIED: FailureClass
FAILURE_CLASS_STALE_BUT_DETECTABLE: FailureClass
FAILURE_CLASS_FRESH_BUT_WRONG: FailureClass
FAILURE_CLASS_SILENT_BY_ABSENCE: FailureClass
CAMPAIGN_STATE_UNSPECIFIED: CampaignState
CAMPAIGN_STATE_QUEUED: CampaignState
CAMPAIGN_STATE_RUNNING: CampaignState
CAMPAIGN_STATE_DONE: CampaignState
CAMPAIGN_STATE_FAILED: CampaignState
CAMPAIGN_STATE_CANCELLED: CampaignState

class MapQuery(_message.Message):
    __slots__ = ("town", "junction_kind", "signalized", "min_approaches", "busy", "junctions_ahead", "whole_corridor")
    TOWN_FIELD_NUMBER: _ClassVar[int]
    JUNCTION_KIND_FIELD_NUMBER: _ClassVar[int]
    SIGNALIZED_FIELD_NUMBER: _ClassVar[int]
    MIN_APPROACHES_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    JUNCTIONS_AHEAD_FIELD_NUMBER: _ClassVar[int]
    WHOLE_CORRIDOR_FIELD_NUMBER: _ClassVar[int]
    town: str
    junction_kind: JunctionKind
    signalized: bool
    min_approaches: int
    busy: bool
    junctions_ahead: int
    whole_corridor: bool
    def __init__(self, town: _Optional[str] = ..., junction_kind: _Optional[_Union[JunctionKind, str]] = ..., signalized: _Optional[bool] = ..., min_approaches: _Optional[int] = ..., busy: _Optional[bool] = ..., junctions_ahead: _Optional[int] = ..., whole_corridor: _Optional[bool] = ...) -> None: ...

class Ego(_message.Message):
    __slots__ = ("maneuver", "speed_mps", "profile", "start_distance_m", "equipped")
    MANEUVER_FIELD_NUMBER: _ClassVar[int]
    SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    START_DISTANCE_M_FIELD_NUMBER: _ClassVar[int]
    EQUIPPED_FIELD_NUMBER: _ClassVar[int]
    maneuver: Maneuver
    speed_mps: float
    profile: DriverProfile
    start_distance_m: float
    equipped: bool
    def __init__(self, maneuver: _Optional[_Union[Maneuver, str]] = ..., speed_mps: _Optional[float] = ..., profile: _Optional[_Union[DriverProfile, str]] = ..., start_distance_m: _Optional[float] = ..., equipped: _Optional[bool] = ...) -> None: ...

class Behaviour(_message.Message):
    __slots__ = ("kind", "at_time_s", "decel_mps2")
    KIND_FIELD_NUMBER: _ClassVar[int]
    AT_TIME_S_FIELD_NUMBER: _ClassVar[int]
    DECEL_MPS2_FIELD_NUMBER: _ClassVar[int]
    kind: BehaviourKind
    at_time_s: float
    decel_mps2: float
    def __init__(self, kind: _Optional[_Union[BehaviourKind, str]] = ..., at_time_s: _Optional[float] = ..., decel_mps2: _Optional[float] = ...) -> None: ...

class Agent(_message.Message):
    __slots__ = ("id", "role", "maneuver", "speed_mps", "profile", "equipped", "behaviour", "arrival_offset_s", "gap_m", "application")
    ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    MANEUVER_FIELD_NUMBER: _ClassVar[int]
    SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    EQUIPPED_FIELD_NUMBER: _ClassVar[int]
    BEHAVIOUR_FIELD_NUMBER: _ClassVar[int]
    ARRIVAL_OFFSET_S_FIELD_NUMBER: _ClassVar[int]
    GAP_M_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_FIELD_NUMBER: _ClassVar[int]
    id: str
    role: AgentRole
    maneuver: Maneuver
    speed_mps: float
    profile: DriverProfile
    equipped: bool
    behaviour: Behaviour
    arrival_offset_s: float
    gap_m: float
    application: Application
    def __init__(self, id: _Optional[str] = ..., role: _Optional[_Union[AgentRole, str]] = ..., maneuver: _Optional[_Union[Maneuver, str]] = ..., speed_mps: _Optional[float] = ..., profile: _Optional[_Union[DriverProfile, str]] = ..., equipped: _Optional[bool] = ..., behaviour: _Optional[_Union[Behaviour, _Mapping]] = ..., arrival_offset_s: _Optional[float] = ..., gap_m: _Optional[float] = ..., application: _Optional[_Union[Application, str]] = ...) -> None: ...

class Channel(_message.Message):
    __slots__ = ("range_m", "blockage_db_per_m", "model")
    RANGE_M_FIELD_NUMBER: _ClassVar[int]
    BLOCKAGE_DB_PER_M_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    range_m: float
    blockage_db_per_m: float
    model: ChannelModel
    def __init__(self, range_m: _Optional[float] = ..., blockage_db_per_m: _Optional[float] = ..., model: _Optional[_Union[ChannelModel, str]] = ...) -> None: ...

class V2X(_message.Message):
    __slots__ = ("penetration", "rsu_placement", "spat_relay", "eebl_rebroadcast", "channel", "backhaul", "rsu_site", "rsu_height_m")
    PENETRATION_FIELD_NUMBER: _ClassVar[int]
    RSU_PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    SPAT_RELAY_FIELD_NUMBER: _ClassVar[int]
    EEBL_REBROADCAST_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    BACKHAUL_FIELD_NUMBER: _ClassVar[int]
    RSU_SITE_FIELD_NUMBER: _ClassVar[int]
    RSU_HEIGHT_M_FIELD_NUMBER: _ClassVar[int]
    penetration: float
    rsu_placement: RsuPlacement
    spat_relay: bool
    eebl_rebroadcast: bool
    channel: Channel
    backhaul: Backhaul
    rsu_site: RsuSite
    rsu_height_m: float
    def __init__(self, penetration: _Optional[float] = ..., rsu_placement: _Optional[_Union[RsuPlacement, str]] = ..., spat_relay: _Optional[bool] = ..., eebl_rebroadcast: _Optional[bool] = ..., channel: _Optional[_Union[Channel, _Mapping]] = ..., backhaul: _Optional[_Union[Backhaul, _Mapping]] = ..., rsu_site: _Optional[_Union[RsuSite, str]] = ..., rsu_height_m: _Optional[float] = ...) -> None: ...

class Backhaul(_message.Message):
    __slots__ = ("latency_s", "loss", "links")
    LATENCY_S_FIELD_NUMBER: _ClassVar[int]
    LOSS_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    latency_s: float
    loss: float
    links: _containers.RepeatedCompositeFieldContainer[BackhaulLink]
    def __init__(self, latency_s: _Optional[float] = ..., loss: _Optional[float] = ..., links: _Optional[_Iterable[_Union[BackhaulLink, _Mapping]]] = ...) -> None: ...

class BackhaulLink(_message.Message):
    __slots__ = ("rsu_a", "rsu_b")
    RSU_A_FIELD_NUMBER: _ClassVar[int]
    RSU_B_FIELD_NUMBER: _ClassVar[int]
    rsu_a: str
    rsu_b: str
    def __init__(self, rsu_a: _Optional[str] = ..., rsu_b: _Optional[str] = ...) -> None: ...

class SignalPlan(_message.Message):
    __slots__ = ("cycle_s", "green_s", "amber_s", "all_red_s", "offset_s", "coordination", "progression_speed_mps")
    CYCLE_S_FIELD_NUMBER: _ClassVar[int]
    GREEN_S_FIELD_NUMBER: _ClassVar[int]
    AMBER_S_FIELD_NUMBER: _ClassVar[int]
    ALL_RED_S_FIELD_NUMBER: _ClassVar[int]
    OFFSET_S_FIELD_NUMBER: _ClassVar[int]
    COORDINATION_FIELD_NUMBER: _ClassVar[int]
    PROGRESSION_SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    cycle_s: float
    green_s: float
    amber_s: float
    all_red_s: float
    offset_s: float
    coordination: Coordination
    progression_speed_mps: float
    def __init__(self, cycle_s: _Optional[float] = ..., green_s: _Optional[float] = ..., amber_s: _Optional[float] = ..., all_red_s: _Optional[float] = ..., offset_s: _Optional[float] = ..., coordination: _Optional[_Union[Coordination, str]] = ..., progression_speed_mps: _Optional[float] = ...) -> None: ...

class Anchor(_message.Message):
    __slots__ = ("kind", "event", "group", "distance_m", "offset_s")
    KIND_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_M_FIELD_NUMBER: _ClassVar[int]
    OFFSET_S_FIELD_NUMBER: _ClassVar[int]
    kind: AnchorKind
    event: AnchorEvent
    group: str
    distance_m: float
    offset_s: float
    def __init__(self, kind: _Optional[_Union[AnchorKind, str]] = ..., event: _Optional[_Union[AnchorEvent, str]] = ..., group: _Optional[str] = ..., distance_m: _Optional[float] = ..., offset_s: _Optional[float] = ...) -> None: ...

class Fault(_message.Message):
    __slots__ = ("name", "operator", "stream", "field", "sender", "anchor", "duration_s", "magnitude", "probability", "burst_count", "target_phase", "target_group", "provenance", "ghost_speed_mps", "ghost_route")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    SENDER_FIELD_NUMBER: _ClassVar[int]
    ANCHOR_FIELD_NUMBER: _ClassVar[int]
    DURATION_S_FIELD_NUMBER: _ClassVar[int]
    MAGNITUDE_FIELD_NUMBER: _ClassVar[int]
    PROBABILITY_FIELD_NUMBER: _ClassVar[int]
    BURST_COUNT_FIELD_NUMBER: _ClassVar[int]
    TARGET_PHASE_FIELD_NUMBER: _ClassVar[int]
    TARGET_GROUP_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    GHOST_SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    GHOST_ROUTE_FIELD_NUMBER: _ClassVar[int]
    name: str
    operator: FaultOperator
    stream: Stream
    field: str
    sender: str
    anchor: Anchor
    duration_s: float
    magnitude: float
    probability: float
    burst_count: int
    target_phase: Phase
    target_group: str
    provenance: str
    ghost_speed_mps: float
    ghost_route: str
    def __init__(self, name: _Optional[str] = ..., operator: _Optional[_Union[FaultOperator, str]] = ..., stream: _Optional[_Union[Stream, str]] = ..., field: _Optional[str] = ..., sender: _Optional[str] = ..., anchor: _Optional[_Union[Anchor, _Mapping]] = ..., duration_s: _Optional[float] = ..., magnitude: _Optional[float] = ..., probability: _Optional[float] = ..., burst_count: _Optional[int] = ..., target_phase: _Optional[_Union[Phase, str]] = ..., target_group: _Optional[str] = ..., provenance: _Optional[str] = ..., ghost_speed_mps: _Optional[float] = ..., ghost_route: _Optional[str] = ...) -> None: ...

class ScenarioSpec(_message.Message):
    __slots__ = ("spec_version", "application", "intent", "seed", "duration_s", "map", "ego", "agents", "v2x", "signal", "faults", "variation", "perception")
    SPEC_VERSION_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    DURATION_S_FIELD_NUMBER: _ClassVar[int]
    MAP_FIELD_NUMBER: _ClassVar[int]
    EGO_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    V2X_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    VARIATION_FIELD_NUMBER: _ClassVar[int]
    PERCEPTION_FIELD_NUMBER: _ClassVar[int]
    spec_version: str
    application: Application
    intent: str
    seed: int
    duration_s: float
    map: MapQuery
    ego: Ego
    agents: _containers.RepeatedCompositeFieldContainer[Agent]
    v2x: V2X
    signal: SignalPlan
    faults: _containers.RepeatedCompositeFieldContainer[Fault]
    variation: Variation
    perception: Perception
    def __init__(self, spec_version: _Optional[str] = ..., application: _Optional[_Union[Application, str]] = ..., intent: _Optional[str] = ..., seed: _Optional[int] = ..., duration_s: _Optional[float] = ..., map: _Optional[_Union[MapQuery, _Mapping]] = ..., ego: _Optional[_Union[Ego, _Mapping]] = ..., agents: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ..., v2x: _Optional[_Union[V2X, _Mapping]] = ..., signal: _Optional[_Union[SignalPlan, _Mapping]] = ..., faults: _Optional[_Iterable[_Union[Fault, _Mapping]]] = ..., variation: _Optional[_Union[Variation, _Mapping]] = ..., perception: _Optional[_Union[Perception, _Mapping]] = ...) -> None: ...

class Perception(_message.Message):
    __slots__ = ("signal_sight_distance_m", "leader_range_m", "equipped_see_signals")
    SIGNAL_SIGHT_DISTANCE_M_FIELD_NUMBER: _ClassVar[int]
    LEADER_RANGE_M_FIELD_NUMBER: _ClassVar[int]
    EQUIPPED_SEE_SIGNALS_FIELD_NUMBER: _ClassVar[int]
    signal_sight_distance_m: float
    leader_range_m: float
    equipped_see_signals: bool
    def __init__(self, signal_sight_distance_m: _Optional[float] = ..., leader_range_m: _Optional[float] = ..., equipped_see_signals: _Optional[bool] = ...) -> None: ...

class Bounds(_message.Message):
    __slots__ = ("min", "max")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    min: float
    max: float
    def __init__(self, min: _Optional[float] = ..., max: _Optional[float] = ...) -> None: ...

class CountBounds(_message.Message):
    __slots__ = ("min", "max")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    min: int
    max: int
    def __init__(self, min: _Optional[int] = ..., max: _Optional[int] = ...) -> None: ...

class Variation(_message.Message):
    __slots__ = ("desired_speed_mps", "arrival_jitter_s", "reaction_time_s", "background_vehicles", "alerted_reaction_s")
    DESIRED_SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    ARRIVAL_JITTER_S_FIELD_NUMBER: _ClassVar[int]
    REACTION_TIME_S_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_VEHICLES_FIELD_NUMBER: _ClassVar[int]
    ALERTED_REACTION_S_FIELD_NUMBER: _ClassVar[int]
    desired_speed_mps: Bounds
    arrival_jitter_s: Bounds
    reaction_time_s: Bounds
    background_vehicles: CountBounds
    alerted_reaction_s: Bounds
    def __init__(self, desired_speed_mps: _Optional[_Union[Bounds, _Mapping]] = ..., arrival_jitter_s: _Optional[_Union[Bounds, _Mapping]] = ..., reaction_time_s: _Optional[_Union[Bounds, _Mapping]] = ..., background_vehicles: _Optional[_Union[CountBounds, _Mapping]] = ..., alerted_reaction_s: _Optional[_Union[Bounds, _Mapping]] = ...) -> None: ...

class FieldPatch(_message.Message):
    __slots__ = ("field", "value")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    field: str
    value: _struct_pb2.Value
    def __init__(self, field: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class Repair(_message.Message):
    __slots__ = ("description", "patch")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PATCH_FIELD_NUMBER: _ClassVar[int]
    description: str
    patch: _containers.RepeatedCompositeFieldContainer[FieldPatch]
    def __init__(self, description: _Optional[str] = ..., patch: _Optional[_Iterable[_Union[FieldPatch, _Mapping]]] = ...) -> None: ...

class Finding(_message.Message):
    __slots__ = ("check", "severity", "message", "fields", "repair")
    CHECK_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    check: str
    severity: Severity
    message: str
    fields: _containers.RepeatedScalarFieldContainer[str]
    repair: Repair
    def __init__(self, check: _Optional[str] = ..., severity: _Optional[_Union[Severity, str]] = ..., message: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., repair: _Optional[_Union[Repair, _Mapping]] = ...) -> None: ...

class VerificationReport(_message.Message):
    __slots__ = ("ok", "findings", "decision_epoch_s", "stop_bar_s")
    OK_FIELD_NUMBER: _ClassVar[int]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    DECISION_EPOCH_S_FIELD_NUMBER: _ClassVar[int]
    STOP_BAR_S_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    findings: _containers.RepeatedCompositeFieldContainer[Finding]
    decision_epoch_s: float
    stop_bar_s: float
    def __init__(self, ok: _Optional[bool] = ..., findings: _Optional[_Iterable[_Union[Finding, _Mapping]]] = ..., decision_epoch_s: _Optional[float] = ..., stop_bar_s: _Optional[float] = ...) -> None: ...

class RouteSegment(_message.Message):
    __slots__ = ("id", "start_s_m", "length_m")
    ID_FIELD_NUMBER: _ClassVar[int]
    START_S_M_FIELD_NUMBER: _ClassVar[int]
    LENGTH_M_FIELD_NUMBER: _ClassVar[int]
    id: str
    start_s_m: float
    length_m: float
    def __init__(self, id: _Optional[str] = ..., start_s_m: _Optional[float] = ..., length_m: _Optional[float] = ...) -> None: ...

class Crossing(_message.Message):
    __slots__ = ("junction_id", "approach_lane_id", "stop_bar_s_m", "stop_bar_xy_m", "signal_group_id", "conflict_s_m", "conflict_xy_m", "turn")
    JUNCTION_ID_FIELD_NUMBER: _ClassVar[int]
    APPROACH_LANE_ID_FIELD_NUMBER: _ClassVar[int]
    STOP_BAR_S_M_FIELD_NUMBER: _ClassVar[int]
    STOP_BAR_XY_M_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_S_M_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_XY_M_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    junction_id: str
    approach_lane_id: str
    stop_bar_s_m: float
    stop_bar_xy_m: _containers.RepeatedScalarFieldContainer[float]
    signal_group_id: str
    conflict_s_m: float
    conflict_xy_m: _containers.RepeatedScalarFieldContainer[float]
    turn: Maneuver
    def __init__(self, junction_id: _Optional[str] = ..., approach_lane_id: _Optional[str] = ..., stop_bar_s_m: _Optional[float] = ..., stop_bar_xy_m: _Optional[_Iterable[float]] = ..., signal_group_id: _Optional[str] = ..., conflict_s_m: _Optional[float] = ..., conflict_xy_m: _Optional[_Iterable[float]] = ..., turn: _Optional[_Union[Maneuver, str]] = ...) -> None: ...

class Route(_message.Message):
    __slots__ = ("points_xy_m", "segments", "crossings", "turn")
    POINTS_XY_M_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    CROSSINGS_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    points_xy_m: _containers.RepeatedScalarFieldContainer[float]
    segments: _containers.RepeatedCompositeFieldContainer[RouteSegment]
    crossings: _containers.RepeatedCompositeFieldContainer[Crossing]
    turn: Maneuver
    def __init__(self, points_xy_m: _Optional[_Iterable[float]] = ..., segments: _Optional[_Iterable[_Union[RouteSegment, _Mapping]]] = ..., crossings: _Optional[_Iterable[_Union[Crossing, _Mapping]]] = ..., turn: _Optional[_Union[Maneuver, str]] = ...) -> None: ...

class ProgramVehicle(_message.Message):
    __slots__ = ("id", "role", "route", "start_s_m", "initial_speed_mps", "desired_speed_mps", "profile", "equipped", "behaviour", "arrive_conflict_at_s", "length_m", "reaction_time_s", "sight_distance_m", "perception_range_m", "application", "alerted_reaction_s")
    ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    START_S_M_FIELD_NUMBER: _ClassVar[int]
    INITIAL_SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    DESIRED_SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    EQUIPPED_FIELD_NUMBER: _ClassVar[int]
    BEHAVIOUR_FIELD_NUMBER: _ClassVar[int]
    ARRIVE_CONFLICT_AT_S_FIELD_NUMBER: _ClassVar[int]
    LENGTH_M_FIELD_NUMBER: _ClassVar[int]
    REACTION_TIME_S_FIELD_NUMBER: _ClassVar[int]
    SIGHT_DISTANCE_M_FIELD_NUMBER: _ClassVar[int]
    PERCEPTION_RANGE_M_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_FIELD_NUMBER: _ClassVar[int]
    ALERTED_REACTION_S_FIELD_NUMBER: _ClassVar[int]
    id: str
    role: VehicleRole
    route: Route
    start_s_m: float
    initial_speed_mps: float
    desired_speed_mps: float
    profile: DriverProfile
    equipped: bool
    behaviour: Behaviour
    arrive_conflict_at_s: float
    length_m: float
    reaction_time_s: float
    sight_distance_m: float
    perception_range_m: float
    application: Application
    alerted_reaction_s: float
    def __init__(self, id: _Optional[str] = ..., role: _Optional[_Union[VehicleRole, str]] = ..., route: _Optional[_Union[Route, _Mapping]] = ..., start_s_m: _Optional[float] = ..., initial_speed_mps: _Optional[float] = ..., desired_speed_mps: _Optional[float] = ..., profile: _Optional[_Union[DriverProfile, str]] = ..., equipped: _Optional[bool] = ..., behaviour: _Optional[_Union[Behaviour, _Mapping]] = ..., arrive_conflict_at_s: _Optional[float] = ..., length_m: _Optional[float] = ..., reaction_time_s: _Optional[float] = ..., sight_distance_m: _Optional[float] = ..., perception_range_m: _Optional[float] = ..., application: _Optional[_Union[Application, str]] = ..., alerted_reaction_s: _Optional[float] = ...) -> None: ...

class SignalGroupPlan(_message.Message):
    __slots__ = ("id", "junction_id", "cycle_s", "green_s", "amber_s", "all_red_s", "offset_s")
    ID_FIELD_NUMBER: _ClassVar[int]
    JUNCTION_ID_FIELD_NUMBER: _ClassVar[int]
    CYCLE_S_FIELD_NUMBER: _ClassVar[int]
    GREEN_S_FIELD_NUMBER: _ClassVar[int]
    AMBER_S_FIELD_NUMBER: _ClassVar[int]
    ALL_RED_S_FIELD_NUMBER: _ClassVar[int]
    OFFSET_S_FIELD_NUMBER: _ClassVar[int]
    id: str
    junction_id: str
    cycle_s: float
    green_s: float
    amber_s: float
    all_red_s: float
    offset_s: float
    def __init__(self, id: _Optional[str] = ..., junction_id: _Optional[str] = ..., cycle_s: _Optional[float] = ..., green_s: _Optional[float] = ..., amber_s: _Optional[float] = ..., all_red_s: _Optional[float] = ..., offset_s: _Optional[float] = ...) -> None: ...

class Rsu(_message.Message):
    __slots__ = ("id", "xy_m", "height_m", "junction_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    XY_M_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_M_FIELD_NUMBER: _ClassVar[int]
    JUNCTION_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    xy_m: _containers.RepeatedScalarFieldContainer[float]
    height_m: float
    junction_id: str
    def __init__(self, id: _Optional[str] = ..., xy_m: _Optional[_Iterable[float]] = ..., height_m: _Optional[float] = ..., junction_id: _Optional[str] = ...) -> None: ...

class ResolvedFault(_message.Message):
    __slots__ = ("fault", "sender_id", "sender_ids", "target_group_id", "anchor_group_id", "nominal_window_s")
    FAULT_FIELD_NUMBER: _ClassVar[int]
    SENDER_ID_FIELD_NUMBER: _ClassVar[int]
    SENDER_IDS_FIELD_NUMBER: _ClassVar[int]
    TARGET_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    ANCHOR_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    NOMINAL_WINDOW_S_FIELD_NUMBER: _ClassVar[int]
    fault: Fault
    sender_id: str
    sender_ids: _containers.RepeatedScalarFieldContainer[str]
    target_group_id: str
    anchor_group_id: str
    nominal_window_s: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, fault: _Optional[_Union[Fault, _Mapping]] = ..., sender_id: _Optional[str] = ..., sender_ids: _Optional[_Iterable[str]] = ..., target_group_id: _Optional[str] = ..., anchor_group_id: _Optional[str] = ..., nominal_window_s: _Optional[_Iterable[float]] = ...) -> None: ...

class RetrievalHit(_message.Message):
    __slots__ = ("kind", "id", "score", "reason")
    KIND_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    kind: str
    id: str
    score: float
    reason: str
    def __init__(self, kind: _Optional[str] = ..., id: _Optional[str] = ..., score: _Optional[float] = ..., reason: _Optional[str] = ...) -> None: ...

class GroundingRecord(_message.Message):
    __slots__ = ("builder", "notes", "details")
    BUILDER_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    builder: str
    notes: _containers.RepeatedScalarFieldContainer[str]
    details: _struct_pb2.Struct
    def __init__(self, builder: _Optional[str] = ..., notes: _Optional[_Iterable[str]] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ScenarioProgram(_message.Message):
    __slots__ = ("program_version", "application", "seed", "duration_s", "dt_s", "map_name", "map_sha256", "ego", "agents", "signal_groups", "rsus", "v2x", "faults", "spec", "grounding")
    PROGRAM_VERSION_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    DURATION_S_FIELD_NUMBER: _ClassVar[int]
    DT_S_FIELD_NUMBER: _ClassVar[int]
    MAP_NAME_FIELD_NUMBER: _ClassVar[int]
    MAP_SHA256_FIELD_NUMBER: _ClassVar[int]
    EGO_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_GROUPS_FIELD_NUMBER: _ClassVar[int]
    RSUS_FIELD_NUMBER: _ClassVar[int]
    V2X_FIELD_NUMBER: _ClassVar[int]
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    GROUNDING_FIELD_NUMBER: _ClassVar[int]
    program_version: str
    application: Application
    seed: int
    duration_s: float
    dt_s: float
    map_name: str
    map_sha256: str
    ego: ProgramVehicle
    agents: _containers.RepeatedCompositeFieldContainer[ProgramVehicle]
    signal_groups: _containers.RepeatedCompositeFieldContainer[SignalGroupPlan]
    rsus: _containers.RepeatedCompositeFieldContainer[Rsu]
    v2x: V2X
    faults: _containers.RepeatedCompositeFieldContainer[ResolvedFault]
    spec: ScenarioSpec
    grounding: GroundingRecord
    def __init__(self, program_version: _Optional[str] = ..., application: _Optional[_Union[Application, str]] = ..., seed: _Optional[int] = ..., duration_s: _Optional[float] = ..., dt_s: _Optional[float] = ..., map_name: _Optional[str] = ..., map_sha256: _Optional[str] = ..., ego: _Optional[_Union[ProgramVehicle, _Mapping]] = ..., agents: _Optional[_Iterable[_Union[ProgramVehicle, _Mapping]]] = ..., signal_groups: _Optional[_Iterable[_Union[SignalGroupPlan, _Mapping]]] = ..., rsus: _Optional[_Iterable[_Union[Rsu, _Mapping]]] = ..., v2x: _Optional[_Union[V2X, _Mapping]] = ..., faults: _Optional[_Iterable[_Union[ResolvedFault, _Mapping]]] = ..., spec: _Optional[_Union[ScenarioSpec, _Mapping]] = ..., grounding: _Optional[_Union[GroundingRecord, _Mapping]] = ...) -> None: ...

class Violation(_message.Message):
    __slots__ = ("kind", "t_s", "other_id")
    KIND_FIELD_NUMBER: _ClassVar[int]
    T_S_FIELD_NUMBER: _ClassVar[int]
    OTHER_ID_FIELD_NUMBER: _ClassVar[int]
    kind: str
    t_s: float
    other_id: str
    def __init__(self, kind: _Optional[str] = ..., t_s: _Optional[float] = ..., other_id: _Optional[str] = ...) -> None: ...

class RolloutOutcome(_message.Message):
    __slots__ = ("failed", "violations", "stops", "travel_time_s", "closest_approach_m", "post_encroachment_time_s")
    FAILED_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    STOPS_FIELD_NUMBER: _ClassVar[int]
    TRAVEL_TIME_S_FIELD_NUMBER: _ClassVar[int]
    CLOSEST_APPROACH_M_FIELD_NUMBER: _ClassVar[int]
    POST_ENCROACHMENT_TIME_S_FIELD_NUMBER: _ClassVar[int]
    failed: bool
    violations: _containers.RepeatedCompositeFieldContainer[Violation]
    stops: int
    travel_time_s: float
    closest_approach_m: float
    post_encroachment_time_s: float
    def __init__(self, failed: _Optional[bool] = ..., violations: _Optional[_Iterable[_Union[Violation, _Mapping]]] = ..., stops: _Optional[int] = ..., travel_time_s: _Optional[float] = ..., closest_approach_m: _Optional[float] = ..., post_encroachment_time_s: _Optional[float] = ...) -> None: ...

class DecisionRecord(_message.Message):
    __slots__ = ("t_s", "action", "epoch", "reason", "aoi_s")
    T_S_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    AOI_S_FIELD_NUMBER: _ClassVar[int]
    t_s: float
    action: str
    epoch: bool
    reason: str
    aoi_s: float
    def __init__(self, t_s: _Optional[float] = ..., action: _Optional[str] = ..., epoch: _Optional[bool] = ..., reason: _Optional[str] = ..., aoi_s: _Optional[float] = ...) -> None: ...

class DivergenceEpisode(_message.Message):
    __slots__ = ("start_s", "end_s", "kind", "stream", "hazard_slack_s")
    START_S_FIELD_NUMBER: _ClassVar[int]
    END_S_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    HAZARD_SLACK_S_FIELD_NUMBER: _ClassVar[int]
    start_s: float
    end_s: float
    kind: str
    stream: Stream
    hazard_slack_s: float
    def __init__(self, start_s: _Optional[float] = ..., end_s: _Optional[float] = ..., kind: _Optional[str] = ..., stream: _Optional[_Union[Stream, str]] = ..., hazard_slack_s: _Optional[float] = ...) -> None: ...

class PairedOutcome(_message.Message):
    __slots__ = ("admitted", "md", "gt", "md_decisions", "gt_decisions", "episodes", "failure_margin", "failure_class", "divergence_alarm", "outcome_sha256", "trace_uri", "outcome_json", "seed", "app_error")
    ADMITTED_FIELD_NUMBER: _ClassVar[int]
    MD_FIELD_NUMBER: _ClassVar[int]
    GT_FIELD_NUMBER: _ClassVar[int]
    MD_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    GT_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    FAILURE_MARGIN_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CLASS_FIELD_NUMBER: _ClassVar[int]
    DIVERGENCE_ALARM_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_SHA256_FIELD_NUMBER: _ClassVar[int]
    TRACE_URI_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_JSON_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    APP_ERROR_FIELD_NUMBER: _ClassVar[int]
    admitted: bool
    md: RolloutOutcome
    gt: RolloutOutcome
    md_decisions: _containers.RepeatedCompositeFieldContainer[DecisionRecord]
    gt_decisions: _containers.RepeatedCompositeFieldContainer[DecisionRecord]
    episodes: _containers.RepeatedCompositeFieldContainer[DivergenceEpisode]
    failure_margin: float
    failure_class: FailureClass
    divergence_alarm: bool
    outcome_sha256: str
    trace_uri: str
    outcome_json: str
    seed: int
    app_error: str
    def __init__(self, admitted: _Optional[bool] = ..., md: _Optional[_Union[RolloutOutcome, _Mapping]] = ..., gt: _Optional[_Union[RolloutOutcome, _Mapping]] = ..., md_decisions: _Optional[_Iterable[_Union[DecisionRecord, _Mapping]]] = ..., gt_decisions: _Optional[_Iterable[_Union[DecisionRecord, _Mapping]]] = ..., episodes: _Optional[_Iterable[_Union[DivergenceEpisode, _Mapping]]] = ..., failure_margin: _Optional[float] = ..., failure_class: _Optional[_Union[FailureClass, str]] = ..., divergence_alarm: _Optional[bool] = ..., outcome_sha256: _Optional[str] = ..., trace_uri: _Optional[str] = ..., outcome_json: _Optional[str] = ..., seed: _Optional[int] = ..., app_error: _Optional[str] = ...) -> None: ...

class CatalogKey(_message.Message):
    __slots__ = ("application", "fault_family", "penetration_band", "conflict_geometry")
    APPLICATION_FIELD_NUMBER: _ClassVar[int]
    FAULT_FAMILY_FIELD_NUMBER: _ClassVar[int]
    PENETRATION_BAND_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_GEOMETRY_FIELD_NUMBER: _ClassVar[int]
    application: Application
    fault_family: str
    penetration_band: str
    conflict_geometry: str
    def __init__(self, application: _Optional[_Union[Application, str]] = ..., fault_family: _Optional[str] = ..., penetration_band: _Optional[str] = ..., conflict_geometry: _Optional[str] = ...) -> None: ...

class Witness(_message.Message):
    __slots__ = ("id", "spec", "program", "outcome", "catalog_key", "reduction_steps", "created_unix_s", "campaign_id", "seed", "intent", "found_spec", "certificate", "certificate_complete", "trace_uri", "grounding_json", "replicas")
    ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    CATALOG_KEY_FIELD_NUMBER: _ClassVar[int]
    REDUCTION_STEPS_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_S_FIELD_NUMBER: _ClassVar[int]
    CAMPAIGN_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    FOUND_SPEC_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    TRACE_URI_FIELD_NUMBER: _ClassVar[int]
    GROUNDING_JSON_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    id: str
    spec: ScenarioSpec
    program: ScenarioProgram
    outcome: PairedOutcome
    catalog_key: CatalogKey
    reduction_steps: int
    created_unix_s: int
    campaign_id: str
    seed: int
    intent: str
    found_spec: ScenarioSpec
    certificate: _containers.RepeatedCompositeFieldContainer[Weakening]
    certificate_complete: bool
    trace_uri: str
    grounding_json: str
    replicas: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., spec: _Optional[_Union[ScenarioSpec, _Mapping]] = ..., program: _Optional[_Union[ScenarioProgram, _Mapping]] = ..., outcome: _Optional[_Union[PairedOutcome, _Mapping]] = ..., catalog_key: _Optional[_Union[CatalogKey, _Mapping]] = ..., reduction_steps: _Optional[int] = ..., created_unix_s: _Optional[int] = ..., campaign_id: _Optional[str] = ..., seed: _Optional[int] = ..., intent: _Optional[str] = ..., found_spec: _Optional[_Union[ScenarioSpec, _Mapping]] = ..., certificate: _Optional[_Iterable[_Union[Weakening, _Mapping]]] = ..., certificate_complete: _Optional[bool] = ..., trace_uri: _Optional[str] = ..., grounding_json: _Optional[str] = ..., replicas: _Optional[_Iterable[str]] = ...) -> None: ...

class Weakening(_message.Message):
    __slots__ = ("pass_name", "description", "verdict")
    PASS_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    pass_name: str
    description: str
    verdict: str
    def __init__(self, pass_name: _Optional[str] = ..., description: _Optional[str] = ..., verdict: _Optional[str] = ...) -> None: ...

class Campaign(_message.Message):
    __slots__ = ("id", "state", "intents", "seed", "budget_per_scenario", "reflection_rounds", "executions", "admitted", "witness_ids", "reason", "scenarios", "candidates", "budget_total", "distinct_keys", "created_unix_s", "elapsed_s", "errored", "coverage_gaps", "distinct_failures")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    BUDGET_PER_SCENARIO_FIELD_NUMBER: _ClassVar[int]
    REFLECTION_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    ADMITTED_FIELD_NUMBER: _ClassVar[int]
    WITNESS_IDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SCENARIOS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    BUDGET_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DISTINCT_KEYS_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_S_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_S_FIELD_NUMBER: _ClassVar[int]
    ERRORED_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_GAPS_FIELD_NUMBER: _ClassVar[int]
    DISTINCT_FAILURES_FIELD_NUMBER: _ClassVar[int]
    id: str
    state: CampaignState
    intents: _containers.RepeatedScalarFieldContainer[str]
    seed: int
    budget_per_scenario: int
    reflection_rounds: int
    executions: int
    admitted: int
    witness_ids: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    scenarios: _containers.RepeatedCompositeFieldContainer[ScenarioProgress]
    candidates: int
    budget_total: int
    distinct_keys: int
    created_unix_s: float
    elapsed_s: float
    errored: int
    coverage_gaps: int
    distinct_failures: int
    def __init__(self, id: _Optional[str] = ..., state: _Optional[_Union[CampaignState, str]] = ..., intents: _Optional[_Iterable[str]] = ..., seed: _Optional[int] = ..., budget_per_scenario: _Optional[int] = ..., reflection_rounds: _Optional[int] = ..., executions: _Optional[int] = ..., admitted: _Optional[int] = ..., witness_ids: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ..., scenarios: _Optional[_Iterable[_Union[ScenarioProgress, _Mapping]]] = ..., candidates: _Optional[int] = ..., budget_total: _Optional[int] = ..., distinct_keys: _Optional[int] = ..., created_unix_s: _Optional[float] = ..., elapsed_s: _Optional[float] = ..., errored: _Optional[int] = ..., coverage_gaps: _Optional[int] = ..., distinct_failures: _Optional[int] = ...) -> None: ...

class ScenarioProgress(_message.Message):
    __slots__ = ("index", "source", "intent", "application", "stage", "candidates", "executions", "shrink_executions", "gated", "admitted_executions", "admitted_initially", "reflection_rounds", "witness_ids", "faults_left", "distinct_keys", "duplicate_keys", "flaky", "error", "best_margin", "first_admitted_at", "errored", "unparsed_clauses", "coverage_gaps", "repairs", "reflections")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    SHRINK_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    GATED_FIELD_NUMBER: _ClassVar[int]
    ADMITTED_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    ADMITTED_INITIALLY_FIELD_NUMBER: _ClassVar[int]
    REFLECTION_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    WITNESS_IDS_FIELD_NUMBER: _ClassVar[int]
    FAULTS_LEFT_FIELD_NUMBER: _ClassVar[int]
    DISTINCT_KEYS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_KEYS_FIELD_NUMBER: _ClassVar[int]
    FLAKY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    BEST_MARGIN_FIELD_NUMBER: _ClassVar[int]
    FIRST_ADMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    ERRORED_FIELD_NUMBER: _ClassVar[int]
    UNPARSED_CLAUSES_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_GAPS_FIELD_NUMBER: _ClassVar[int]
    REPAIRS_FIELD_NUMBER: _ClassVar[int]
    REFLECTIONS_FIELD_NUMBER: _ClassVar[int]
    index: int
    source: str
    intent: str
    application: Application
    stage: str
    candidates: int
    executions: int
    shrink_executions: int
    gated: int
    admitted_executions: int
    admitted_initially: bool
    reflection_rounds: int
    witness_ids: _containers.RepeatedScalarFieldContainer[str]
    faults_left: _containers.RepeatedScalarFieldContainer[int]
    distinct_keys: int
    duplicate_keys: int
    flaky: int
    error: str
    best_margin: float
    first_admitted_at: int
    errored: int
    unparsed_clauses: _containers.RepeatedScalarFieldContainer[str]
    coverage_gaps: int
    repairs: _containers.RepeatedCompositeFieldContainer[SpecRepair]
    reflections: _containers.RepeatedCompositeFieldContainer[ScenarioReflection]
    def __init__(self, index: _Optional[int] = ..., source: _Optional[str] = ..., intent: _Optional[str] = ..., application: _Optional[_Union[Application, str]] = ..., stage: _Optional[str] = ..., candidates: _Optional[int] = ..., executions: _Optional[int] = ..., shrink_executions: _Optional[int] = ..., gated: _Optional[int] = ..., admitted_executions: _Optional[int] = ..., admitted_initially: _Optional[bool] = ..., reflection_rounds: _Optional[int] = ..., witness_ids: _Optional[_Iterable[str]] = ..., faults_left: _Optional[_Iterable[int]] = ..., distinct_keys: _Optional[int] = ..., duplicate_keys: _Optional[int] = ..., flaky: _Optional[int] = ..., error: _Optional[str] = ..., best_margin: _Optional[float] = ..., first_admitted_at: _Optional[int] = ..., errored: _Optional[int] = ..., unparsed_clauses: _Optional[_Iterable[str]] = ..., coverage_gaps: _Optional[int] = ..., repairs: _Optional[_Iterable[_Union[SpecRepair, _Mapping]]] = ..., reflections: _Optional[_Iterable[_Union[ScenarioReflection, _Mapping]]] = ...) -> None: ...

class ScenarioReflection(_message.Message):
    __slots__ = ("round", "diagnosis", "rule_ids", "edits", "applied", "reason")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSIS_FIELD_NUMBER: _ClassVar[int]
    RULE_IDS_FIELD_NUMBER: _ClassVar[int]
    EDITS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    round: int
    diagnosis: str
    rule_ids: _containers.RepeatedScalarFieldContainer[str]
    edits: _containers.RepeatedCompositeFieldContainer[SpecEdit]
    applied: str
    reason: str
    def __init__(self, round: _Optional[int] = ..., diagnosis: _Optional[str] = ..., rule_ids: _Optional[_Iterable[str]] = ..., edits: _Optional[_Iterable[_Union[SpecEdit, _Mapping]]] = ..., applied: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class SpecEdit(_message.Message):
    __slots__ = ("path", "value_json", "rule")
    PATH_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    path: str
    value_json: str
    rule: str
    def __init__(self, path: _Optional[str] = ..., value_json: _Optional[str] = ..., rule: _Optional[str] = ...) -> None: ...

class SpecRepair(_message.Message):
    __slots__ = ("check", "message", "description", "changes", "applied", "reason", "origin")
    CHECK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    check: str
    message: str
    description: str
    changes: _containers.RepeatedCompositeFieldContainer[SpecRepairChange]
    applied: bool
    reason: str
    origin: str
    def __init__(self, check: _Optional[str] = ..., message: _Optional[str] = ..., description: _Optional[str] = ..., changes: _Optional[_Iterable[_Union[SpecRepairChange, _Mapping]]] = ..., applied: _Optional[bool] = ..., reason: _Optional[str] = ..., origin: _Optional[str] = ...) -> None: ...

class SpecRepairChange(_message.Message):
    __slots__ = ("field", "from_json", "value_json")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    FROM_JSON_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    field: str
    from_json: str
    value_json: str
    def __init__(self, field: _Optional[str] = ..., from_json: _Optional[str] = ..., value_json: _Optional[str] = ...) -> None: ...

class RecordingChannel(_message.Message):
    __slots__ = ("name", "encoding", "message_count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    encoding: str
    message_count: int
    def __init__(self, name: _Optional[str] = ..., encoding: _Optional[str] = ..., message_count: _Optional[int] = ...) -> None: ...

class Recording(_message.Message):
    __slots__ = ("id", "name", "format", "channels", "start_ns", "end_ns", "size_bytes")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    format: str
    channels: _containers.RepeatedCompositeFieldContainer[RecordingChannel]
    start_ns: int
    end_ns: int
    size_bytes: int
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., format: _Optional[str] = ..., channels: _Optional[_Iterable[_Union[RecordingChannel, _Mapping]]] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., size_bytes: _Optional[int] = ...) -> None: ...

class Segment(_message.Message):
    __slots__ = ("id", "recording_id", "start_ns", "end_ns", "preroll_start_ns", "frame_count", "vector", "score", "rank")
    ID_FIELD_NUMBER: _ClassVar[int]
    RECORDING_ID_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    END_NS_FIELD_NUMBER: _ClassVar[int]
    PREROLL_START_NS_FIELD_NUMBER: _ClassVar[int]
    FRAME_COUNT_FIELD_NUMBER: _ClassVar[int]
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    id: str
    recording_id: str
    start_ns: int
    end_ns: int
    preroll_start_ns: int
    frame_count: int
    vector: _containers.RepeatedScalarFieldContainer[int]
    score: float
    rank: int
    def __init__(self, id: _Optional[str] = ..., recording_id: _Optional[str] = ..., start_ns: _Optional[int] = ..., end_ns: _Optional[int] = ..., preroll_start_ns: _Optional[int] = ..., frame_count: _Optional[int] = ..., vector: _Optional[_Iterable[int]] = ..., score: _Optional[float] = ..., rank: _Optional[int] = ...) -> None: ...
