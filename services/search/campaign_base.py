"""The campaign runner's plumbing (the base of :class:`~services.search.campaign.CampaignRunner`): its state and
bookkeeping, the journal (a deterministic replay on resume), events, the lease, and executions.

A candidate's program is grounded here (the last ``GROUND_CACHE`` specs remembered; an unexpected exception is
tried once more), dispatched to the simulators unless the ledger already holds its execution id, waited on (an
untyped transport error is ``Unavailable``, any other untyped exception is the candidate's:
``CandidateErrored``), recorded in the ledger and settled (journal ``result``, event ``execution``). The search
(``campaign.py``) and the admission -> witness half (``witness.py``) both run their executions through it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from lastv2x.core.catalogue import margin_text
from lastv2x.core.errors import FailedPrecondition, InvalidArgument, LastV2XError, Unavailable
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import ScenarioSpec, spec_to_dict
from services.search.campaign_types import (
    GATED_ALLOWANCE,
    NOT_A_CANDIDATE_ERROR,
    Cancelled,
    CandidateErrored,
    Event,
    LeaseLost,
    ReplayDiverged,
    ScenarioProgress,
)
from services.search.pipeline import Execution, ExecutionRequest, Pipeline, execution_id, submit_all
from services.search.settings import SearchSettings
from services.search.store import LedgerRow, Repository

if TYPE_CHECKING:  # annotations only
    from services.search.campaign_types import CampaignRequest, Candidate

LOG = logging.getLogger("services.search.campaign")  # the campaign's log, whichever part of the runner writes
GROUND_CACHE = 512  # grounded specs remembered (an LRU): a campaign's programs are not all kept in memory


class CampaignBase:
    """State, bookkeeping, journal, events, lease and executions of one campaign (see the module docstring)."""

    def __init__(self, campaign_id: str, request: CampaignRequest, pipeline: Pipeline, store: Repository,
                 settings: SearchSettings, emit: Callable[[Event], None], cancel: threading.Event,
                 resume: bool = False, holder: str = ""):
        self.id = campaign_id
        self.request = request
        self.pipeline = pipeline
        self.store = store
        self.settings = settings
        self._emit_cb = emit
        self.cancel = cancel
        sources: list[tuple[str, str, ScenarioSpec | None]] = [
            (f"intents[{i}]", t, None) for i, t in enumerate(request.intents)]
        sources += [(f"specs[{i}]", s.intent, s) for i, s in enumerate(request.specs)]
        self._specs: dict[int, ScenarioSpec | None] = {k: s for k, (_, _, s) in enumerate(sources)}
        self.scenarios = [ScenarioProgress(k, src, text) for k, (src, text, _) in enumerate(sources)]
        self._ground_cache: OrderedDict[str, ScenarioProgram | str] = OrderedDict()
        self._started = time.monotonic()
        self._exec_seconds = 0.0
        self._exec_count = 0
        # execution ids this process has counted: a second use of one (a later shrink trying a weakening an
        # earlier one ran; the ledger serves it) is not another execution. A resumed process counts each once.
        self._counted: set[str] = set()
        # resume: what the crashed run journaled, retraced entry by entry
        self._recorded = [(k, p) for _, k, p in store.journal(campaign_id)] if resume else []
        self._replayed = 0
        self._kept_keys: set[str] = set()
        self._reflection_spent: set[int] = set()  # scenarios whose reflector had nothing new to say
        self._holder = holder  # our name in the campaign's lease ("" = no lease: tests, single process)
        self._lease_renewed = time.monotonic()  # catalogue keys this run archived (or kept, on resume)
        self._signatures: dict[str, str] = {}  # failure_signature of each witness's minimized run -> its key
        # per scenario, the spec fields its intent's own words set (a given spec: all, repairs.GIVEN): what it
        # declares (catalog.admission_class); a scenario without an entry declares everything
        self._stated: dict[int, frozenset[str]] = {}
        # per scenario, the towns the parser chose map.town among when its intent names none (repairs.town_repaired)
        self._towns: dict[int, tuple[str, ...]] = {}

    # ── bookkeeping ───────────────────────────────────────────────────────
    @property
    def budget_total(self) -> int:
        return self.request.budget_per_scenario * len(self.scenarios)

    def budget_left(self, sc: ScenarioProgress) -> int:
        """Candidates scenario ``sc`` may still draw: its budget less the candidates charged to it (every one, or,
        with ``budget_in_executions``, those the gate did not block, within ``GATED_ALLOWANCE`` x the budget)."""
        budget = self.request.budget_per_scenario
        if not self.request.budget_in_executions:
            return max(0, budget - sc.candidates)
        return max(0, min(budget - (sc.candidates - sc.gated), GATED_ALLOWANCE * budget - sc.candidates))

    @property
    def executions_done(self) -> int:
        return sum(s.executions + s.shrink_executions for s in self.scenarios)

    @property
    def pending(self) -> int:
        """Candidates of the budget not yet settled: the work an autoscaler should provision for."""
        if self.cancel.is_set():
            return 0
        return sum(0 if s.stage in ("done", "failed", "cancelled") else
                   self.budget_left(s) + s.in_flight
                   for s in self.scenarios)

    @property
    def candidates_done(self) -> int:
        return sum(s.candidates for s in self.scenarios)

    @property
    def admitted(self) -> int:
        return sum(s.admitted_executions for s in self.scenarios)

    def summary(self) -> dict[str, Any]:
        return {"scenarios": [s.to_dict() for s in self.scenarios], "executions": self.executions_done,
                "candidates": self.candidates_done,
                "admitted": self.admitted, "budget_total": self.budget_total,
                "errored": sum(s.errored for s in self.scenarios),
                "coverage_gaps": sum(s.coverage_gaps for s in self.scenarios),
                "distinct_failures": len(self._signatures),
                "witness_ids": list(dict.fromkeys(w for s in self.scenarios for w in s.witness_ids)),
                "distinct_keys": len({k for s in self.scenarios for k in s.keys}),
                "elapsed_s": round(time.monotonic() - self._started, 3),
                "execution_s": round(self._exec_seconds, 3)}  # simulator time inside the executions

    def _eta(self) -> float | None:
        spent = self.candidates_done
        if not self._exec_count or spent == 0:
            return None
        left = max(0, self.budget_total - spent)
        return round(left * self._exec_seconds / self._exec_count, 1)

    def _emit(self, kind: str, scenario: int, message: str) -> None:
        self._emit_cb(Event(kind, scenario, message, self.candidates_done, self.budget_total, self.executions_done,
                            self.admitted, self._eta()))

    def _journal(self, kind: str, payload: dict[str, Any]) -> None:
        if self._replayed < len(self._recorded):  # resuming: this entry was written by the crashed run
            recorded_kind, recorded = self._recorded[self._replayed]
            self._replayed += 1
            if recorded_kind != kind or recorded.get("execution_id") != payload.get("execution_id"):
                raise ReplayDiverged(f"journal entry {self._replayed - 1} is {recorded_kind} "
                                     f"{recorded.get('execution_id', '')}, the replay made {kind} "
                                     f"{payload.get('execution_id', '')}")
            return
        self.store.append_journal(self.id, kind, payload)

    def _recorded_entry(self, kind: str, **match: Any) -> dict[str, Any] | None:
        """A journal entry of the crashed run (resume only), e.g. a parse or reflection answer."""
        return next((p for k, p in self._recorded if k == kind and all(p.get(f) == v for f, v in match.items())),
                    None)

    def _stage(self, sc: ScenarioProgress, stage: str, message: str = "") -> None:
        sc.stage = stage
        self._emit("stage", sc.index, f"{sc.source}: {stage}" + (f" ({message})" if message else ""))

    def _check_cancel(self) -> None:
        """Between executions: stop on cancel, and renew the lease (raise LeaseLost when another replica
        took the campaign over because we renewed too late)."""
        if self.cancel.is_set():
            raise Cancelled()
        ttl = self.settings.lease_ttl_s
        if self._holder and time.monotonic() - self._lease_renewed > ttl / 3:
            if not self.store.renew_lease(self.id, self._holder, ttl):
                raise LeaseLost(f"campaign {self.id} is driven by {self.store.lease_holder(self.id)} now")
            self._lease_renewed = time.monotonic()

    def _errored(self, sc: ScenarioProgress, cand: Candidate, exc: CandidateErrored) -> None:
        """``cand`` hit an unexpected exception: count it, journal it, log the traceback; nothing else stops."""
        sc.errored += 1
        cand.errored = str(exc)
        LOG.error("campaign %s %s: candidate %s errored at %s", self.id, sc.source, cand.execution_id or "-",
                  exc, exc_info=exc.__cause__ or exc)
        self._journal("errored", {"scenario": sc.index, "execution_id": cand.execution_id, "stage": exc.stage,
                                  "error_type": exc.error_type, "error": str(exc), "operators": list(cand.operators)})
        self._emit("errored", sc.index, f"{sc.source}: {cand.origin} candidate ERRORED ({exc}); the search goes on")

    # ── executions ────────────────────────────────────────────────────────
    def _ground(self, spec: ScenarioSpec) -> ScenarioProgram | str:
        """The spec's program (or why it has none); the last GROUND_CACHE specs are remembered, which
        covers delta debugging's repeated candidates without holding a whole campaign's programs."""
        text = spec.model_dump_json()
        if text in self._ground_cache:
            self._ground_cache.move_to_end(text)
            return self._ground_cache[text]
        found: ScenarioProgram | str
        for attempt in (1, 2):  # an unexpected exception is tried once more (a remote service may fail once)
            try:
                found = self.pipeline.ground(spec)
                break
            except (InvalidArgument, FailedPrecondition) as exc:
                found = str(exc)
                break
            except NOT_A_CANDIDATE_ERROR:
                raise
            except Exception as exc:  # noqa: BLE001 - not cached: the same spec may ground next time
                if attempt == 2:
                    raise CandidateErrored("ground", exc) from exc
                LOG.warning("campaign %s: grounding raised %s: %s; trying once more", self.id, type(exc).__name__, exc)
        self._ground_cache[text] = found
        if len(self._ground_cache) > GROUND_CACHE:
            self._ground_cache.popitem(last=False)
        return found

    def _journal_dispatch(self, sc: ScenarioProgress, cand: Candidate) -> None:
        assert cand.program is not None
        cand.execution_id = execution_id(cand.program, cand.program.seed, self.id)
        self._journal("dispatch", {"scenario": sc.index, "execution_id": cand.execution_id, "origin": cand.origin,
                                   "operators": list(cand.operators), "spec": spec_to_dict(cand.spec),
                                   "rng_state": cand.rng_state})

    def _submit_candidates(self, sc: ScenarioProgress, cands: list[Candidate]) -> None:
        """Dispatch ``cands`` together; those the ledger already holds (resume, duplicate) settle from it."""
        to_run: list[Candidate] = []
        for cand in cands:
            assert cand.program is not None
            sc.in_flight += 1
            cand.future = self._ledgered(cand.execution_id)
            if cand.future is None:
                to_run.append(cand)
        futures = submit_all(self.pipeline, [ExecutionRequest(c.program, c.program.seed, app=self.request.app)
                                             for c in to_run if c.program is not None])
        for cand, future in zip(to_run, futures, strict=True):
            cand.future = future

    def _ledgered(self, exec_id: str) -> Future[Execution] | None:
        """The ledger's result for ``exec_id`` as a settled future; None when it has none."""
        row = self.store.get_execution(exec_id)
        if row is None:
            return None
        f: Future[Execution] = Future()
        f.set_result(Execution(row.program_sha256, row.seed, row.admitted, row.failure_margin,
                               row.outcome_json, row.replica, refused=row.refused))
        return f

    def _submit(self, program: ScenarioProgram, exec_id: str, **kw: Any) -> Future[Execution]:
        """Submit unless the ledger already holds this execution id (resume, duplicate)."""
        if not kw and (f := self._ledgered(exec_id)) is not None:
            return f
        return self.pipeline.submit(ExecutionRequest(program, program.seed, app=self.request.app, **kw))

    def _wait(self, future: Future[Execution]) -> Execution:
        """The execution; a transport error the adapter did not type is Unavailable (the simulators are
        gone: every candidate would fail), any other untyped exception is this candidate's (CandidateErrored)."""
        try:
            return future.result()
        except LastV2XError:
            raise
        except OSError as exc:
            raise Unavailable(f"simulator: {exc}") from None
        except Exception as exc:  # noqa: BLE001
            raise CandidateErrored("execute", exc) from exc

    def _count_once(self, exec_id: str) -> bool:
        """True the first time this process counts ``exec_id``."""
        if exec_id in self._counted:
            return False
        self._counted.add(exec_id)
        return True

    def _record(self, sc: ScenarioProgress, exec_id: str, purpose: str, e: Execution) -> bool:
        """Put the execution in the ledger; True when it counts (the first use of ``exec_id`` in this process)."""
        if not self._count_once(exec_id):
            return False
        self.store.record_execution(LedgerRow(exec_id, self.id, sc.index, purpose, e.program_sha256, e.seed,
                                              e.admitted, e.failure_margin, e.refused, e.replica, e.outcome_json))
        self._exec_count += 1
        self._exec_seconds += e.wall_time_s
        return True

    def _settle(self, sc: ScenarioProgress, cand: Candidate) -> None:
        assert cand.future is not None
        try:
            e = self._wait(cand.future)
        except CandidateErrored as exc:
            self._errored(sc, cand, exc)
            return
        finally:
            sc.in_flight -= 1
        cand.execution = e
        if self._record(sc, cand.execution_id, cand.origin, e):
            sc.executions += 1
        if e.refused:
            sc.refused += 1
        elif not e.admitted and not e.app_error:  # an application error has no margin to learn from
            sc.best_margin = min(sc.best_margin, e.failure_margin)
        if e.app_error:
            self._emit("app_error", sc.index, f"{sc.source}: {cand.origin} run: APPLICATION ERROR: {e.app_error}")
        self._journal("result", {"scenario": sc.index, "execution_id": cand.execution_id, "admitted": e.admitted,
                                 "failure_margin": e.failure_margin, "refused": e.refused})
        self._emit("execution", sc.index, f"{sc.source}: {cand.origin} run "
                                          f"{'ADMITTED' if e.admitted else 'refused' if e.refused else 'not admitted'}"
                                          f" (margin {margin_text(e.failure_margin, admitted=e.admitted)})")


__all__ = ["GROUND_CACHE", "CampaignBase"]
