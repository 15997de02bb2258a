from lastv2x.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CampaignOptions(_message.Message):
    __slots__ = ("disable_gate", "reflection_rounds", "concurrency", "stop_at_first_admission", "skip_minimization", "app", "allow_partial", "budget_in_executions")
    DISABLE_GATE_FIELD_NUMBER: _ClassVar[int]
    REFLECTION_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    STOP_AT_FIRST_ADMISSION_FIELD_NUMBER: _ClassVar[int]
    SKIP_MINIMIZATION_FIELD_NUMBER: _ClassVar[int]
    APP_FIELD_NUMBER: _ClassVar[int]
    ALLOW_PARTIAL_FIELD_NUMBER: _ClassVar[int]
    BUDGET_IN_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    disable_gate: bool
    reflection_rounds: int
    concurrency: int
    stop_at_first_admission: bool
    skip_minimization: bool
    app: str
    allow_partial: bool
    budget_in_executions: bool
    def __init__(self, disable_gate: _Optional[bool] = ..., reflection_rounds: _Optional[int] = ..., concurrency: _Optional[int] = ..., stop_at_first_admission: _Optional[bool] = ..., skip_minimization: _Optional[bool] = ..., app: _Optional[str] = ..., allow_partial: _Optional[bool] = ..., budget_in_executions: _Optional[bool] = ...) -> None: ...

class StartCampaignRequest(_message.Message):
    __slots__ = ("intents", "seed", "budget_per_scenario", "specs", "options")
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    BUDGET_PER_SCENARIO_FIELD_NUMBER: _ClassVar[int]
    SPECS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    intents: _containers.RepeatedScalarFieldContainer[str]
    seed: int
    budget_per_scenario: int
    specs: _containers.RepeatedCompositeFieldContainer[_common_pb2.ScenarioSpec]
    options: CampaignOptions
    def __init__(self, intents: _Optional[_Iterable[str]] = ..., seed: _Optional[int] = ..., budget_per_scenario: _Optional[int] = ..., specs: _Optional[_Iterable[_Union[_common_pb2.ScenarioSpec, _Mapping]]] = ..., options: _Optional[_Union[CampaignOptions, _Mapping]] = ...) -> None: ...

class StartCampaignResponse(_message.Message):
    __slots__ = ("campaign",)
    CAMPAIGN_FIELD_NUMBER: _ClassVar[int]
    campaign: _common_pb2.Campaign
    def __init__(self, campaign: _Optional[_Union[_common_pb2.Campaign, _Mapping]] = ...) -> None: ...

class WatchCampaignRequest(_message.Message):
    __slots__ = ("campaign_id",)
    CAMPAIGN_ID_FIELD_NUMBER: _ClassVar[int]
    campaign_id: str
    def __init__(self, campaign_id: _Optional[str] = ...) -> None: ...

class WatchCampaignResponse(_message.Message):
    __slots__ = ("campaign", "event", "progress")
    CAMPAIGN_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    campaign: _common_pb2.Campaign
    event: str
    progress: ProgressEvent
    def __init__(self, campaign: _Optional[_Union[_common_pb2.Campaign, _Mapping]] = ..., event: _Optional[str] = ..., progress: _Optional[_Union[ProgressEvent, _Mapping]] = ...) -> None: ...

class ProgressEvent(_message.Message):
    __slots__ = ("kind", "scenario", "candidates_done", "budget_total", "executions_done", "admitted", "eta_s")
    KIND_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_DONE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_TOTAL_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONS_DONE_FIELD_NUMBER: _ClassVar[int]
    ADMITTED_FIELD_NUMBER: _ClassVar[int]
    ETA_S_FIELD_NUMBER: _ClassVar[int]
    kind: str
    scenario: int
    candidates_done: int
    budget_total: int
    executions_done: int
    admitted: int
    eta_s: float
    def __init__(self, kind: _Optional[str] = ..., scenario: _Optional[int] = ..., candidates_done: _Optional[int] = ..., budget_total: _Optional[int] = ..., executions_done: _Optional[int] = ..., admitted: _Optional[int] = ..., eta_s: _Optional[float] = ...) -> None: ...

class GetCampaignRequest(_message.Message):
    __slots__ = ("campaign_id",)
    CAMPAIGN_ID_FIELD_NUMBER: _ClassVar[int]
    campaign_id: str
    def __init__(self, campaign_id: _Optional[str] = ...) -> None: ...

class GetCampaignResponse(_message.Message):
    __slots__ = ("campaign",)
    CAMPAIGN_FIELD_NUMBER: _ClassVar[int]
    campaign: _common_pb2.Campaign
    def __init__(self, campaign: _Optional[_Union[_common_pb2.Campaign, _Mapping]] = ...) -> None: ...

class CancelCampaignRequest(_message.Message):
    __slots__ = ("campaign_id",)
    CAMPAIGN_ID_FIELD_NUMBER: _ClassVar[int]
    campaign_id: str
    def __init__(self, campaign_id: _Optional[str] = ...) -> None: ...

class CancelCampaignResponse(_message.Message):
    __slots__ = ("campaign",)
    CAMPAIGN_FIELD_NUMBER: _ClassVar[int]
    campaign: _common_pb2.Campaign
    def __init__(self, campaign: _Optional[_Union[_common_pb2.Campaign, _Mapping]] = ...) -> None: ...

class ResumeCampaignRequest(_message.Message):
    __slots__ = ("campaign_id",)
    CAMPAIGN_ID_FIELD_NUMBER: _ClassVar[int]
    campaign_id: str
    def __init__(self, campaign_id: _Optional[str] = ...) -> None: ...

class ResumeCampaignResponse(_message.Message):
    __slots__ = ("campaign",)
    CAMPAIGN_FIELD_NUMBER: _ClassVar[int]
    campaign: _common_pb2.Campaign
    def __init__(self, campaign: _Optional[_Union[_common_pb2.Campaign, _Mapping]] = ...) -> None: ...

class ListCampaignsRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListCampaignsResponse(_message.Message):
    __slots__ = ("campaigns",)
    CAMPAIGNS_FIELD_NUMBER: _ClassVar[int]
    campaigns: _containers.RepeatedCompositeFieldContainer[_common_pb2.Campaign]
    def __init__(self, campaigns: _Optional[_Iterable[_Union[_common_pb2.Campaign, _Mapping]]] = ...) -> None: ...

class ListWitnessesRequest(_message.Message):
    __slots__ = ("campaign_id", "application")
    CAMPAIGN_ID_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_FIELD_NUMBER: _ClassVar[int]
    campaign_id: str
    application: _common_pb2.Application
    def __init__(self, campaign_id: _Optional[str] = ..., application: _Optional[_Union[_common_pb2.Application, str]] = ...) -> None: ...

class ListWitnessesResponse(_message.Message):
    __slots__ = ("witnesses",)
    WITNESSES_FIELD_NUMBER: _ClassVar[int]
    witnesses: _containers.RepeatedCompositeFieldContainer[_common_pb2.Witness]
    def __init__(self, witnesses: _Optional[_Iterable[_Union[_common_pb2.Witness, _Mapping]]] = ...) -> None: ...

class GetWitnessRequest(_message.Message):
    __slots__ = ("witness_id",)
    WITNESS_ID_FIELD_NUMBER: _ClassVar[int]
    witness_id: str
    def __init__(self, witness_id: _Optional[str] = ...) -> None: ...

class GetWitnessResponse(_message.Message):
    __slots__ = ("witness",)
    WITNESS_FIELD_NUMBER: _ClassVar[int]
    witness: _common_pb2.Witness
    def __init__(self, witness: _Optional[_Union[_common_pb2.Witness, _Mapping]] = ...) -> None: ...

class ReplayWitnessRequest(_message.Message):
    __slots__ = ("witness_id", "backend")
    WITNESS_ID_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    witness_id: str
    backend: str
    def __init__(self, witness_id: _Optional[str] = ..., backend: _Optional[str] = ...) -> None: ...

class ReplayWitnessResponse(_message.Message):
    __slots__ = ("outcome", "identical", "admitted", "archived_outcome_sha256", "archived", "backend")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    IDENTICAL_FIELD_NUMBER: _ClassVar[int]
    ADMITTED_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_OUTCOME_SHA256_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    outcome: _common_pb2.PairedOutcome
    identical: bool
    admitted: bool
    archived_outcome_sha256: str
    archived: _common_pb2.PairedOutcome
    backend: str
    def __init__(self, outcome: _Optional[_Union[_common_pb2.PairedOutcome, _Mapping]] = ..., identical: _Optional[bool] = ..., admitted: _Optional[bool] = ..., archived_outcome_sha256: _Optional[str] = ..., archived: _Optional[_Union[_common_pb2.PairedOutcome, _Mapping]] = ..., backend: _Optional[str] = ...) -> None: ...
