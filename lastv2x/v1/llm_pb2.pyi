from lastv2x.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ParseIntentRequest(_message.Message):
    __slots__ = ("text", "seed", "max_attempts")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    text: str
    seed: int
    max_attempts: int
    def __init__(self, text: _Optional[str] = ..., seed: _Optional[int] = ..., max_attempts: _Optional[int] = ...) -> None: ...

class ParseIntentResponse(_message.Message):
    __slots__ = ("spec", "attempts_used", "report", "backend", "notes", "unparsed_clauses")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_USED_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    UNPARSED_CLAUSES_FIELD_NUMBER: _ClassVar[int]
    spec: _common_pb2.ScenarioSpec
    attempts_used: int
    report: _common_pb2.VerificationReport
    backend: str
    notes: _containers.RepeatedScalarFieldContainer[str]
    unparsed_clauses: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, spec: _Optional[_Union[_common_pb2.ScenarioSpec, _Mapping]] = ..., attempts_used: _Optional[int] = ..., report: _Optional[_Union[_common_pb2.VerificationReport, _Mapping]] = ..., backend: _Optional[str] = ..., notes: _Optional[_Iterable[str]] = ..., unparsed_clauses: _Optional[_Iterable[str]] = ...) -> None: ...

class ApproachCandidate(_message.Message):
    __slots__ = ("candidate_id", "map_name", "junction_id", "approach_id", "heading_rad", "movements", "score", "lanes")
    CANDIDATE_ID_FIELD_NUMBER: _ClassVar[int]
    MAP_NAME_FIELD_NUMBER: _ClassVar[int]
    JUNCTION_ID_FIELD_NUMBER: _ClassVar[int]
    APPROACH_ID_FIELD_NUMBER: _ClassVar[int]
    HEADING_RAD_FIELD_NUMBER: _ClassVar[int]
    MOVEMENTS_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    LANES_FIELD_NUMBER: _ClassVar[int]
    candidate_id: str
    map_name: str
    junction_id: str
    approach_id: str
    heading_rad: float
    movements: _containers.RepeatedScalarFieldContainer[str]
    score: float
    lanes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, candidate_id: _Optional[str] = ..., map_name: _Optional[str] = ..., junction_id: _Optional[str] = ..., approach_id: _Optional[str] = ..., heading_rad: _Optional[float] = ..., movements: _Optional[_Iterable[str]] = ..., score: _Optional[float] = ..., lanes: _Optional[_Iterable[str]] = ...) -> None: ...

class PlanSceneRequest(_message.Message):
    __slots__ = ("spec", "candidates")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    spec: _common_pb2.ScenarioSpec
    candidates: _containers.RepeatedCompositeFieldContainer[ApproachCandidate]
    def __init__(self, spec: _Optional[_Union[_common_pb2.ScenarioSpec, _Mapping]] = ..., candidates: _Optional[_Iterable[_Union[ApproachCandidate, _Mapping]]] = ...) -> None: ...

class RoleAssignment(_message.Message):
    __slots__ = ("role", "candidate_id", "maneuver", "agent_id", "lane_id", "signal_group")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_ID_FIELD_NUMBER: _ClassVar[int]
    MANEUVER_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_GROUP_FIELD_NUMBER: _ClassVar[int]
    role: str
    candidate_id: str
    maneuver: _common_pb2.Maneuver
    agent_id: str
    lane_id: str
    signal_group: str
    def __init__(self, role: _Optional[str] = ..., candidate_id: _Optional[str] = ..., maneuver: _Optional[_Union[_common_pb2.Maneuver, str]] = ..., agent_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., signal_group: _Optional[str] = ...) -> None: ...

class PlanSceneResponse(_message.Message):
    __slots__ = ("assignments", "rationale", "backend", "map_name", "junction_id", "score")
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    RATIONALE_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    MAP_NAME_FIELD_NUMBER: _ClassVar[int]
    JUNCTION_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    assignments: _containers.RepeatedCompositeFieldContainer[RoleAssignment]
    rationale: str
    backend: str
    map_name: str
    junction_id: str
    score: float
    def __init__(self, assignments: _Optional[_Iterable[_Union[RoleAssignment, _Mapping]]] = ..., rationale: _Optional[str] = ..., backend: _Optional[str] = ..., map_name: _Optional[str] = ..., junction_id: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class ReflectRequest(_message.Message):
    __slots__ = ("prompt", "evidence_digest_json", "spec_json")
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_DIGEST_JSON_FIELD_NUMBER: _ClassVar[int]
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    prompt: str
    evidence_digest_json: str
    spec_json: str
    def __init__(self, prompt: _Optional[str] = ..., evidence_digest_json: _Optional[str] = ..., spec_json: _Optional[str] = ...) -> None: ...

class ReflectResponse(_message.Message):
    __slots__ = ("diagnosis", "revised_prompt", "rule_ids", "backend", "edits")
    DIAGNOSIS_FIELD_NUMBER: _ClassVar[int]
    REVISED_PROMPT_FIELD_NUMBER: _ClassVar[int]
    RULE_IDS_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    EDITS_FIELD_NUMBER: _ClassVar[int]
    diagnosis: str
    revised_prompt: str
    rule_ids: _containers.RepeatedScalarFieldContainer[str]
    backend: str
    edits: _containers.RepeatedCompositeFieldContainer[_common_pb2.SpecEdit]
    def __init__(self, diagnosis: _Optional[str] = ..., revised_prompt: _Optional[str] = ..., rule_ids: _Optional[_Iterable[str]] = ..., backend: _Optional[str] = ..., edits: _Optional[_Iterable[_Union[_common_pb2.SpecEdit, _Mapping]]] = ...) -> None: ...

class VerifyRequest(_message.Message):
    __slots__ = ("spec", "spec_json")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    spec: _common_pb2.ScenarioSpec
    spec_json: str
    def __init__(self, spec: _Optional[_Union[_common_pb2.ScenarioSpec, _Mapping]] = ..., spec_json: _Optional[str] = ...) -> None: ...

class VerifyResponse(_message.Message):
    __slots__ = ("report",)
    REPORT_FIELD_NUMBER: _ClassVar[int]
    report: _common_pb2.VerificationReport
    def __init__(self, report: _Optional[_Union[_common_pb2.VerificationReport, _Mapping]] = ...) -> None: ...
