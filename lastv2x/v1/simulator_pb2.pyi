from lastv2x.v1 import application_pb2 as _application_pb2
from lastv2x.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecuteRequest(_message.Message):
    __slots__ = ("program", "spec", "seed", "write_trace", "app", "backend")
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    WRITE_TRACE_FIELD_NUMBER: _ClassVar[int]
    APP_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    program: _common_pb2.ScenarioProgram
    spec: _common_pb2.ScenarioSpec
    seed: int
    write_trace: bool
    app: str
    backend: str
    def __init__(self, program: _Optional[_Union[_common_pb2.ScenarioProgram, _Mapping]] = ..., spec: _Optional[_Union[_common_pb2.ScenarioSpec, _Mapping]] = ..., seed: _Optional[int] = ..., write_trace: _Optional[bool] = ..., app: _Optional[str] = ..., backend: _Optional[str] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ("outcome", "wall_time_s", "app_build")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    WALL_TIME_S_FIELD_NUMBER: _ClassVar[int]
    APP_BUILD_FIELD_NUMBER: _ClassVar[int]
    outcome: _common_pb2.PairedOutcome
    wall_time_s: float
    app_build: _application_pb2.AppBuild
    def __init__(self, outcome: _Optional[_Union[_common_pb2.PairedOutcome, _Mapping]] = ..., wall_time_s: _Optional[float] = ..., app_build: _Optional[_Union[_application_pb2.AppBuild, _Mapping]] = ...) -> None: ...

class ExecuteBatchRequest(_message.Message):
    __slots__ = ("requests",)
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[ExecuteRequest]
    def __init__(self, requests: _Optional[_Iterable[_Union[ExecuteRequest, _Mapping]]] = ...) -> None: ...

class ExecuteBatchResponse(_message.Message):
    __slots__ = ("index", "outcome", "wall_time_s", "app_build", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    WALL_TIME_S_FIELD_NUMBER: _ClassVar[int]
    APP_BUILD_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: int
    outcome: _common_pb2.PairedOutcome
    wall_time_s: float
    app_build: _application_pb2.AppBuild
    error: str
    def __init__(self, index: _Optional[int] = ..., outcome: _Optional[_Union[_common_pb2.PairedOutcome, _Mapping]] = ..., wall_time_s: _Optional[float] = ..., app_build: _Optional[_Union[_application_pb2.AppBuild, _Mapping]] = ..., error: _Optional[str] = ...) -> None: ...

class CoverageMapRequest(_message.Message):
    __slots__ = ("map_name", "rsus", "blockage_db_per_m", "range_m", "cell_m")
    MAP_NAME_FIELD_NUMBER: _ClassVar[int]
    RSUS_FIELD_NUMBER: _ClassVar[int]
    BLOCKAGE_DB_PER_M_FIELD_NUMBER: _ClassVar[int]
    RANGE_M_FIELD_NUMBER: _ClassVar[int]
    CELL_M_FIELD_NUMBER: _ClassVar[int]
    map_name: str
    rsus: _containers.RepeatedCompositeFieldContainer[_common_pb2.Rsu]
    blockage_db_per_m: float
    range_m: float
    cell_m: float
    def __init__(self, map_name: _Optional[str] = ..., rsus: _Optional[_Iterable[_Union[_common_pb2.Rsu, _Mapping]]] = ..., blockage_db_per_m: _Optional[float] = ..., range_m: _Optional[float] = ..., cell_m: _Optional[float] = ...) -> None: ...

class CoverageMapResponse(_message.Message):
    __slots__ = ("coverage_fraction", "width", "height", "origin_x_m", "origin_y_m", "cell_m", "best_rssi_dbm", "in_range_fraction", "road_points", "rsus")
    COVERAGE_FRACTION_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_X_M_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_Y_M_FIELD_NUMBER: _ClassVar[int]
    CELL_M_FIELD_NUMBER: _ClassVar[int]
    BEST_RSSI_DBM_FIELD_NUMBER: _ClassVar[int]
    IN_RANGE_FRACTION_FIELD_NUMBER: _ClassVar[int]
    ROAD_POINTS_FIELD_NUMBER: _ClassVar[int]
    RSUS_FIELD_NUMBER: _ClassVar[int]
    coverage_fraction: float
    width: int
    height: int
    origin_x_m: float
    origin_y_m: float
    cell_m: float
    best_rssi_dbm: _containers.RepeatedScalarFieldContainer[float]
    in_range_fraction: float
    road_points: int
    rsus: _containers.RepeatedCompositeFieldContainer[_common_pb2.Rsu]
    def __init__(self, coverage_fraction: _Optional[float] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., origin_x_m: _Optional[float] = ..., origin_y_m: _Optional[float] = ..., cell_m: _Optional[float] = ..., best_rssi_dbm: _Optional[_Iterable[float]] = ..., in_range_fraction: _Optional[float] = ..., road_points: _Optional[int] = ..., rsus: _Optional[_Iterable[_Union[_common_pb2.Rsu, _Mapping]]] = ...) -> None: ...
