from lastv2x.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StartCampaignRequest(_message.Message):
    __slots__ = ("intents", "seed", "max_candidates_per_scenario", "max_reflection_rounds")
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    MAX_CANDIDATES_PER_SCENARIO_FIELD_NUMBER: _ClassVar[int]
    MAX_REFLECTION_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    intents: _containers.RepeatedScalarFieldContainer[str]
    seed: int
    max_candidates_per_scenario: int
    max_reflection_rounds: int
    def __init__(self, intents: _Optional[_Iterable[str]] = ..., seed: _Optional[int] = ..., max_candidates_per_scenario: _Optional[int] = ..., max_reflection_rounds: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("campaign", "event")
    CAMPAIGN_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    campaign: _common_pb2.Campaign
    event: str
    def __init__(self, campaign: _Optional[_Union[_common_pb2.Campaign, _Mapping]] = ..., event: _Optional[str] = ...) -> None: ...

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

class ReplayWitnessRequest(_message.Message):
    __slots__ = ("witness_id",)
    WITNESS_ID_FIELD_NUMBER: _ClassVar[int]
    witness_id: str
    def __init__(self, witness_id: _Optional[str] = ...) -> None: ...

class ReplayWitnessResponse(_message.Message):
    __slots__ = ("outcome", "identical")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    IDENTICAL_FIELD_NUMBER: _ClassVar[int]
    outcome: _common_pb2.PairedOutcome
    identical: bool
    def __init__(self, outcome: _Optional[_Union[_common_pb2.PairedOutcome, _Mapping]] = ..., identical: _Optional[bool] = ...) -> None: ...
