from lastv2x.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListMapsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MapSummary(_message.Message):
    __slots__ = ("name", "content_sha256", "junction_count", "signalized_junction_count", "building_count", "source")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    JUNCTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    SIGNALIZED_JUNCTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    BUILDING_COUNT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    content_sha256: str
    junction_count: int
    signalized_junction_count: int
    building_count: int
    source: str
    def __init__(self, name: _Optional[str] = ..., content_sha256: _Optional[str] = ..., junction_count: _Optional[int] = ..., signalized_junction_count: _Optional[int] = ..., building_count: _Optional[int] = ..., source: _Optional[str] = ...) -> None: ...

class ListMapsResponse(_message.Message):
    __slots__ = ("maps",)
    MAPS_FIELD_NUMBER: _ClassVar[int]
    maps: _containers.RepeatedCompositeFieldContainer[MapSummary]
    def __init__(self, maps: _Optional[_Iterable[_Union[MapSummary, _Mapping]]] = ...) -> None: ...

class RetrieveRequest(_message.Message):
    __slots__ = ("kind", "query", "k", "seed")
    KIND_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    kind: str
    query: str
    k: int
    seed: int
    def __init__(self, kind: _Optional[str] = ..., query: _Optional[str] = ..., k: _Optional[int] = ..., seed: _Optional[int] = ...) -> None: ...

class RetrieveResponse(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[_common_pb2.RetrievalHit]
    def __init__(self, hits: _Optional[_Iterable[_Union[_common_pb2.RetrievalHit, _Mapping]]] = ...) -> None: ...

class GroundRequest(_message.Message):
    __slots__ = ("spec",)
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: _common_pb2.ScenarioSpec
    def __init__(self, spec: _Optional[_Union[_common_pb2.ScenarioSpec, _Mapping]] = ...) -> None: ...

class GroundResponse(_message.Message):
    __slots__ = ("program",)
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    program: _common_pb2.ScenarioProgram
    def __init__(self, program: _Optional[_Union[_common_pb2.ScenarioProgram, _Mapping]] = ...) -> None: ...
