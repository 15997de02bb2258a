from lastv2x.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InputMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INPUT_MODE_UNSPECIFIED: _ClassVar[InputMode]
    INPUT_MODE_BELIEF: _ClassVar[InputMode]
    INPUT_MODE_RAW: _ClassVar[InputMode]

class AppAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APP_ACTION_UNSPECIFIED: _ClassVar[AppAction]
    APP_ACTION_PROCEED: _ClassVar[AppAction]
    APP_ACTION_STOP: _ClassVar[AppAction]
    APP_ACTION_BRAKE: _ClassVar[AppAction]
    APP_ACTION_YIELD: _ClassVar[AppAction]
    APP_ACTION_ADVISE: _ClassVar[AppAction]
    APP_ACTION_WARN: _ClassVar[AppAction]
INPUT_MODE_UNSPECIFIED: InputMode
INPUT_MODE_BELIEF: InputMode
INPUT_MODE_RAW: InputMode
APP_ACTION_UNSPECIFIED: AppAction
APP_ACTION_PROCEED: AppAction
APP_ACTION_STOP: AppAction
APP_ACTION_BRAKE: AppAction
APP_ACTION_YIELD: AppAction
APP_ACTION_ADVISE: AppAction
APP_ACTION_WARN: AppAction

class AppBuild(_message.Message):
    __slots__ = ("name", "version", "digest")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    digest: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., digest: _Optional[str] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ("build", "contract_version", "applications", "input_mode")
    BUILD_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_VERSION_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONS_FIELD_NUMBER: _ClassVar[int]
    INPUT_MODE_FIELD_NUMBER: _ClassVar[int]
    build: AppBuild
    contract_version: str
    applications: _containers.RepeatedScalarFieldContainer[_common_pb2.Application]
    input_mode: InputMode
    def __init__(self, build: _Optional[_Union[AppBuild, _Mapping]] = ..., contract_version: _Optional[str] = ..., applications: _Optional[_Iterable[_Union[_common_pb2.Application, str]]] = ..., input_mode: _Optional[_Union[InputMode, str]] = ...) -> None: ...

class Point2(_message.Message):
    __slots__ = ("x_m", "y_m")
    X_M_FIELD_NUMBER: _ClassVar[int]
    Y_M_FIELD_NUMBER: _ClassVar[int]
    x_m: float
    y_m: float
    def __init__(self, x_m: _Optional[float] = ..., y_m: _Optional[float] = ...) -> None: ...

class EgoContext(_message.Message):
    __slots__ = ("application", "route", "conflict_point", "amber_s", "desired_speed_mps", "ego_length_m")
    class AmberSEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    APPLICATION_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_POINT_FIELD_NUMBER: _ClassVar[int]
    AMBER_S_FIELD_NUMBER: _ClassVar[int]
    DESIRED_SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    EGO_LENGTH_M_FIELD_NUMBER: _ClassVar[int]
    application: _common_pb2.Application
    route: _containers.RepeatedCompositeFieldContainer[Point2]
    conflict_point: Point2
    amber_s: _containers.ScalarMap[str, float]
    desired_speed_mps: float
    ego_length_m: float
    def __init__(self, application: _Optional[_Union[_common_pb2.Application, str]] = ..., route: _Optional[_Iterable[_Union[Point2, _Mapping]]] = ..., conflict_point: _Optional[_Union[Point2, _Mapping]] = ..., amber_s: _Optional[_Mapping[str, float]] = ..., desired_speed_mps: _Optional[float] = ..., ego_length_m: _Optional[float] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("session_id", "context")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    context: EgoContext
    def __init__(self, session_id: _Optional[str] = ..., context: _Optional[_Union[EgoContext, _Mapping]] = ...) -> None: ...

class OpenRequest(_message.Message):
    __slots__ = ("sessions",)
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    def __init__(self, sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ...) -> None: ...

class OpenResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EgoState(_message.Message):
    __slots__ = ("t_s", "s_m", "speed_mps", "accel_mps2", "position", "heading_rad", "stop_bar_distance_m", "conflict_distance_m")
    T_S_FIELD_NUMBER: _ClassVar[int]
    S_M_FIELD_NUMBER: _ClassVar[int]
    SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    ACCEL_MPS2_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    HEADING_RAD_FIELD_NUMBER: _ClassVar[int]
    STOP_BAR_DISTANCE_M_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_DISTANCE_M_FIELD_NUMBER: _ClassVar[int]
    t_s: float
    s_m: float
    speed_mps: float
    accel_mps2: float
    position: Point2
    heading_rad: float
    stop_bar_distance_m: float
    conflict_distance_m: float
    def __init__(self, t_s: _Optional[float] = ..., s_m: _Optional[float] = ..., speed_mps: _Optional[float] = ..., accel_mps2: _Optional[float] = ..., position: _Optional[_Union[Point2, _Mapping]] = ..., heading_rad: _Optional[float] = ..., stop_bar_distance_m: _Optional[float] = ..., conflict_distance_m: _Optional[float] = ...) -> None: ...

class SignalBelief(_message.Message):
    __slots__ = ("group_id", "phase", "time_to_change_s", "aoi_s", "valid", "time_to_green_s")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    TIME_TO_CHANGE_S_FIELD_NUMBER: _ClassVar[int]
    AOI_S_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    TIME_TO_GREEN_S_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    phase: _common_pb2.Phase
    time_to_change_s: float
    aoi_s: float
    valid: bool
    time_to_green_s: float
    def __init__(self, group_id: _Optional[str] = ..., phase: _Optional[_Union[_common_pb2.Phase, str]] = ..., time_to_change_s: _Optional[float] = ..., aoi_s: _Optional[float] = ..., valid: _Optional[bool] = ..., time_to_green_s: _Optional[float] = ...) -> None: ...

class NeighbourTrack(_message.Message):
    __slots__ = ("vehicle_id", "position", "speed_mps", "heading_rad", "accel_mps2", "aoi_s", "hard_brake_event", "relayed", "valid")
    VEHICLE_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    HEADING_RAD_FIELD_NUMBER: _ClassVar[int]
    ACCEL_MPS2_FIELD_NUMBER: _ClassVar[int]
    AOI_S_FIELD_NUMBER: _ClassVar[int]
    HARD_BRAKE_EVENT_FIELD_NUMBER: _ClassVar[int]
    RELAYED_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    vehicle_id: str
    position: Point2
    speed_mps: float
    heading_rad: float
    accel_mps2: float
    aoi_s: float
    hard_brake_event: bool
    relayed: bool
    valid: bool
    def __init__(self, vehicle_id: _Optional[str] = ..., position: _Optional[_Union[Point2, _Mapping]] = ..., speed_mps: _Optional[float] = ..., heading_rad: _Optional[float] = ..., accel_mps2: _Optional[float] = ..., aoi_s: _Optional[float] = ..., hard_brake_event: _Optional[bool] = ..., relayed: _Optional[bool] = ..., valid: _Optional[bool] = ...) -> None: ...

class BrakingEvent(_message.Message):
    __slots__ = ("origin_id", "position", "decel_mps2", "aoi_s", "relayed", "hops", "valid")
    ORIGIN_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    DECEL_MPS2_FIELD_NUMBER: _ClassVar[int]
    AOI_S_FIELD_NUMBER: _ClassVar[int]
    RELAYED_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    origin_id: str
    position: Point2
    decel_mps2: float
    aoi_s: float
    relayed: bool
    hops: int
    valid: bool
    def __init__(self, origin_id: _Optional[str] = ..., position: _Optional[_Union[Point2, _Mapping]] = ..., decel_mps2: _Optional[float] = ..., aoi_s: _Optional[float] = ..., relayed: _Optional[bool] = ..., hops: _Optional[int] = ..., valid: _Optional[bool] = ...) -> None: ...

class Belief(_message.Message):
    __slots__ = ("signals", "ego_group_id", "map_aoi_s", "tracks", "braking_events")
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    EGO_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MAP_AOI_S_FIELD_NUMBER: _ClassVar[int]
    TRACKS_FIELD_NUMBER: _ClassVar[int]
    BRAKING_EVENTS_FIELD_NUMBER: _ClassVar[int]
    signals: _containers.RepeatedCompositeFieldContainer[SignalBelief]
    ego_group_id: str
    map_aoi_s: float
    tracks: _containers.RepeatedCompositeFieldContainer[NeighbourTrack]
    braking_events: _containers.RepeatedCompositeFieldContainer[BrakingEvent]
    def __init__(self, signals: _Optional[_Iterable[_Union[SignalBelief, _Mapping]]] = ..., ego_group_id: _Optional[str] = ..., map_aoi_s: _Optional[float] = ..., tracks: _Optional[_Iterable[_Union[NeighbourTrack, _Mapping]]] = ..., braking_events: _Optional[_Iterable[_Union[BrakingEvent, _Mapping]]] = ...) -> None: ...

class RawMessage(_message.Message):
    __slots__ = ("kind", "encoding", "payload", "rx_s", "sender_id", "hops")
    KIND_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    RX_S_FIELD_NUMBER: _ClassVar[int]
    SENDER_ID_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    kind: str
    encoding: str
    payload: bytes
    rx_s: float
    sender_id: str
    hops: int
    def __init__(self, kind: _Optional[str] = ..., encoding: _Optional[str] = ..., payload: _Optional[bytes] = ..., rx_s: _Optional[float] = ..., sender_id: _Optional[str] = ..., hops: _Optional[int] = ...) -> None: ...

class StepRow(_message.Message):
    __slots__ = ("session_id", "ego", "belief", "messages")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    EGO_FIELD_NUMBER: _ClassVar[int]
    BELIEF_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    ego: EgoState
    belief: Belief
    messages: _containers.RepeatedCompositeFieldContainer[RawMessage]
    def __init__(self, session_id: _Optional[str] = ..., ego: _Optional[_Union[EgoState, _Mapping]] = ..., belief: _Optional[_Union[Belief, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[RawMessage, _Mapping]]] = ...) -> None: ...

class StepRequest(_message.Message):
    __slots__ = ("step", "t_s", "rows")
    STEP_FIELD_NUMBER: _ClassVar[int]
    T_S_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    step: int
    t_s: float
    rows: _containers.RepeatedCompositeFieldContainer[StepRow]
    def __init__(self, step: _Optional[int] = ..., t_s: _Optional[float] = ..., rows: _Optional[_Iterable[_Union[StepRow, _Mapping]]] = ...) -> None: ...

class AppDecision(_message.Message):
    __slots__ = ("session_id", "action", "reason", "target_speed_mps", "brake_mps2", "epoch", "after_epoch", "committed", "aoi_s", "info_invalid", "error")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TARGET_SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    BRAKE_MPS2_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    AFTER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    AOI_S_FIELD_NUMBER: _ClassVar[int]
    INFO_INVALID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    action: AppAction
    reason: str
    target_speed_mps: float
    brake_mps2: float
    epoch: bool
    after_epoch: bool
    committed: bool
    aoi_s: float
    info_invalid: bool
    error: str
    def __init__(self, session_id: _Optional[str] = ..., action: _Optional[_Union[AppAction, str]] = ..., reason: _Optional[str] = ..., target_speed_mps: _Optional[float] = ..., brake_mps2: _Optional[float] = ..., epoch: _Optional[bool] = ..., after_epoch: _Optional[bool] = ..., committed: _Optional[bool] = ..., aoi_s: _Optional[float] = ..., info_invalid: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class StepResponse(_message.Message):
    __slots__ = ("decisions",)
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    decisions: _containers.RepeatedCompositeFieldContainer[AppDecision]
    def __init__(self, decisions: _Optional[_Iterable[_Union[AppDecision, _Mapping]]] = ...) -> None: ...

class CloseRequest(_message.Message):
    __slots__ = ("session_ids",)
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, session_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class CloseResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
