"""What a campaign is made of: its validated request, each scenario's progress, the events a watcher sees,
one search candidate, and the exceptions that end a candidate, a scenario or the driving of a campaign.

The runner that uses them is ``services.search.campaign``.
"""

from __future__ import annotations

import math
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from typing import Any

from lastv2x.core.errors import LastV2XError
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import ScenarioSpec, parse_spec, spec_to_dict
from lastv2x.core.verifier import VerificationReport
from services.search.pipeline import Execution

# with CampaignRequest.budget_in_executions, a scenario's candidates in all (gated ones included) stop at this many
# times its budget: a search the gate blocks almost always still ends
GATED_ALLOWANCE = 4


@dataclass(frozen=True)
class CampaignRequest:
    """A validated StartCampaign request (``core.validate_request`` builds it)."""

    intents: tuple[str, ...] = ()
    specs: tuple[ScenarioSpec, ...] = ()
    seed: int = 0
    budget_per_scenario: int = 120  # candidates per scenario, gated and reflected ones included (see budget_in_executions)
    reflection_rounds: int = 5
    in_flight: int = 4  # K per replica
    gate: bool = True
    stop_at_first_admission: bool = False
    minimize: bool = True
    app: str = ""  # application under test (ExecuteRequest.app): "" = the reference apps
    allow_partial: bool = False  # run intents the parser read in part (else such a scenario fails, naming the clause)
    # the budget counts executions: gated candidates are not charged (within GATED_ALLOWANCE x budget candidates)
    budget_in_executions: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["specs"] = [spec_to_dict(s) for s in self.specs]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CampaignRequest:
        """The request as stored with its campaign (``to_dict``), to resume it."""
        return cls(**{**d, "intents": tuple(d["intents"]), "specs": tuple(parse_spec(x) for x in d["specs"])})


@dataclass
class ScenarioProgress:
    """What a user sees of one scenario: its stage, counts and results."""

    index: int
    source: str  # "intents[0]" or "specs[0]"
    intent: str
    application: str = ""
    stage: str = "queued"  # queued, parse, search, reflect, shrink, done, failed, cancelled
    candidates: int = 0  # budget spent: executed + gated + ungroundable
    executions: int = 0  # search executions (initial, search, reflection)
    shrink_executions: int = 0  # delta-debugging and re-check executions
    gated: int = 0
    refused: int = 0
    admitted_executions: int = 0
    admitted_initially: bool | None = None  # the parsed spec's own run
    first_admitted_at: int | None = None  # candidate number of the first admission
    reflection_rounds: int = 0
    best_margin: float = math.inf
    witness_ids: list[str] = field(default_factory=list)
    duplicate_keys: int = 0  # admitted executions whose catalogue key was already archived
    flaky: int = 0
    errored: int = 0  # candidates an unexpected exception ended (journaled, logged); the search went on
    coverage_gaps: int = 0  # failures with no fault and nothing declared (catalog.admission_class): not witnesses
    keys: list[str] = field(default_factory=list)  # distinct catalogue keys admitted in this scenario
    faults_left: list[int] = field(default_factory=list)  # per witness: faults in the 1-minimal spec
    error: str = ""
    unparsed_clauses: list[str] = field(default_factory=list)  # what the parser could not read (allow_partial)
    # the verifier's repairs of the scenario's spec (``campaign.observability_repairs``): check, message,
    # description, patch [{field, from, value}], applied, reason (why not applied), origin (initial, reflection N)
    repairs: list[dict[str, Any]] = field(default_factory=list)
    # each reflection round: round, diagnosis, rule_ids, edits [{path, value, rule}], applied ("edits": the edited
    # spec ran, "revised_prompt": the revised intent was parsed and ran, "": nothing ran), reason
    reflections: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0  # executions dispatched and not yet settled

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["best_margin"] = None if math.isinf(self.best_margin) else self.best_margin
        return d


@dataclass(frozen=True)
class Event:
    """One progress event of a campaign."""

    kind: str  # stage, execution, admitted, witness, reflection, done, failed, cancelled
    scenario: int  # -1 = the campaign
    message: str
    candidates_done: int  # budget spent so far (executed, gated and ungroundable candidates)
    budget_total: int  # candidates per scenario x scenarios
    executions_done: int  # paired executions so far, delta debugging and re-checks included
    admitted: int  # admitted executions so far
    eta_s: float | None  # estimated seconds to the end of the budget


@dataclass
class Candidate:
    spec: ScenarioSpec
    origin: str  # initial, search, reflection
    operators: tuple[str, ...] = ()
    report: VerificationReport | None = None
    program: ScenarioProgram | None = None
    execution: Execution | None = None
    execution_id: str = ""
    rng_state: dict[str, Any] | None = None  # the search RNG before this child was drawn (journal)
    future: Future[Execution] | None = None
    errored: str = ""  # why an unexpected exception ended this candidate

    @property
    def priority(self) -> tuple[int, float]:
        e = self.execution
        if e is None:
            return (2, math.inf)
        return (0 if e.admitted else 1, e.failure_margin)


class Cancelled(Exception):
    pass


class CandidateErrored(Exception):
    """One candidate hit an unexpected (untyped) exception at ``stage``: that candidate is errored,
    the search goes on."""

    def __init__(self, stage: str, exc: BaseException):
        super().__init__(f"{stage}: {type(exc).__name__}: {exc}"[:500])
        self.stage = stage
        self.error_type = type(exc).__name__


# what ends more than one candidate: never turned into an errored candidate
NOT_A_CANDIDATE_ERROR = (LastV2XError, Cancelled, CandidateErrored)


class LeaseLost(Exception):
    """Another search replica holds this campaign's lease: stop driving it (it resumes from the journal)."""


class ReplayDiverged(Exception):
    """A resumed campaign did not retrace its journal (the code or a peer changed in between)."""


__all__ = ["NOT_A_CANDIDATE_ERROR", "CampaignRequest", "Cancelled", "Candidate", "CandidateErrored", "Event",
           "LeaseLost", "ReplayDiverged", "ScenarioProgress"]
