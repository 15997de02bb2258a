from lastv2x.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PrioritizationMethod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIORITIZATION_METHOD_UNSPECIFIED: _ClassVar[PrioritizationMethod]
    PRIORITIZATION_METHOD_RSC: _ClassVar[PrioritizationMethod]
    PRIORITIZATION_METHOD_SC: _ClassVar[PrioritizationMethod]
    PRIORITIZATION_METHOD_CH: _ClassVar[PrioritizationMethod]
    PRIORITIZATION_METHOD_RD: _ClassVar[PrioritizationMethod]
    PRIORITIZATION_METHOD_CC: _ClassVar[PrioritizationMethod]
PRIORITIZATION_METHOD_UNSPECIFIED: PrioritizationMethod
PRIORITIZATION_METHOD_RSC: PrioritizationMethod
PRIORITIZATION_METHOD_SC: PrioritizationMethod
PRIORITIZATION_METHOD_CH: PrioritizationMethod
PRIORITIZATION_METHOD_RD: PrioritizationMethod
PRIORITIZATION_METHOD_CC: PrioritizationMethod

class IngestRequest(_message.Message):
    __slots__ = ("name", "chunk", "channel_map")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_MAP_FIELD_NUMBER: _ClassVar[int]
    name: str
    chunk: bytes
    channel_map: str
    def __init__(self, name: _Optional[str] = ..., chunk: _Optional[bytes] = ..., channel_map: _Optional[str] = ...) -> None: ...

class IngestResponse(_message.Message):
    __slots__ = ("recording", "channel_map", "warnings")
    RECORDING_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_MAP_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    recording: _common_pb2.Recording
    channel_map: str
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, recording: _Optional[_Union[_common_pb2.Recording, _Mapping]] = ..., channel_map: _Optional[str] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class ReduceRequest(_message.Message):
    __slots__ = ("recording_id", "module", "smoothing_window", "clip_frames", "min_segment_s", "channel_map", "strict")
    RECORDING_ID_FIELD_NUMBER: _ClassVar[int]
    MODULE_FIELD_NUMBER: _ClassVar[int]
    SMOOTHING_WINDOW_FIELD_NUMBER: _ClassVar[int]
    CLIP_FRAMES_FIELD_NUMBER: _ClassVar[int]
    MIN_SEGMENT_S_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_MAP_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    recording_id: str
    module: str
    smoothing_window: int
    clip_frames: int
    min_segment_s: float
    channel_map: str
    strict: bool
    def __init__(self, recording_id: _Optional[str] = ..., module: _Optional[str] = ..., smoothing_window: _Optional[int] = ..., clip_frames: _Optional[int] = ..., min_segment_s: _Optional[float] = ..., channel_map: _Optional[str] = ..., strict: _Optional[bool] = ...) -> None: ...

class ReduceResponse(_message.Message):
    __slots__ = ("segments", "input_frames", "kept_frames", "reduction_ratio", "channel_map", "missing_channels", "zeroed_features", "warnings")
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    INPUT_FRAMES_FIELD_NUMBER: _ClassVar[int]
    KEPT_FRAMES_FIELD_NUMBER: _ClassVar[int]
    REDUCTION_RATIO_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_MAP_FIELD_NUMBER: _ClassVar[int]
    MISSING_CHANNELS_FIELD_NUMBER: _ClassVar[int]
    ZEROED_FEATURES_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    segments: _containers.RepeatedCompositeFieldContainer[_common_pb2.Segment]
    input_frames: int
    kept_frames: int
    reduction_ratio: float
    channel_map: str
    missing_channels: _containers.RepeatedScalarFieldContainer[str]
    zeroed_features: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, segments: _Optional[_Iterable[_Union[_common_pb2.Segment, _Mapping]]] = ..., input_frames: _Optional[int] = ..., kept_frames: _Optional[int] = ..., reduction_ratio: _Optional[float] = ..., channel_map: _Optional[str] = ..., missing_channels: _Optional[_Iterable[str]] = ..., zeroed_features: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class PrioritizeRequest(_message.Message):
    __slots__ = ("segments", "method", "call_counts", "seed")
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    CALL_COUNTS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    segments: _containers.RepeatedCompositeFieldContainer[_common_pb2.Segment]
    method: PrioritizationMethod
    call_counts: _containers.RepeatedScalarFieldContainer[int]
    seed: int
    def __init__(self, segments: _Optional[_Iterable[_Union[_common_pb2.Segment, _Mapping]]] = ..., method: _Optional[_Union[PrioritizationMethod, str]] = ..., call_counts: _Optional[_Iterable[int]] = ..., seed: _Optional[int] = ...) -> None: ...

class PrioritizeResponse(_message.Message):
    __slots__ = ("segments",)
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    segments: _containers.RepeatedCompositeFieldContainer[_common_pb2.Segment]
    def __init__(self, segments: _Optional[_Iterable[_Union[_common_pb2.Segment, _Mapping]]] = ...) -> None: ...

class FaultColumn(_message.Message):
    __slots__ = ("revealed",)
    REVEALED_FIELD_NUMBER: _ClassVar[int]
    revealed: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, revealed: _Optional[_Iterable[bool]] = ...) -> None: ...

class EvaluateRequest(_message.Message):
    __slots__ = ("faults",)
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    faults: _containers.RepeatedCompositeFieldContainer[FaultColumn]
    def __init__(self, faults: _Optional[_Iterable[_Union[FaultColumn, _Mapping]]] = ...) -> None: ...

class EvaluateResponse(_message.Message):
    __slots__ = ("apfd", "top_k", "faults_detected")
    APFD_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    FAULTS_DETECTED_FIELD_NUMBER: _ClassVar[int]
    apfd: float
    top_k: float
    faults_detected: int
    def __init__(self, apfd: _Optional[float] = ..., top_k: _Optional[float] = ..., faults_detected: _Optional[int] = ...) -> None: ...

class ExportSegmentsRequest(_message.Message):
    __slots__ = ("recording_id", "segment_ids")
    RECORDING_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    recording_id: str
    segment_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, recording_id: _Optional[str] = ..., segment_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ExportSegmentsResponse(_message.Message):
    __slots__ = ("chunk",)
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    chunk: bytes
    def __init__(self, chunk: _Optional[bytes] = ...) -> None: ...
