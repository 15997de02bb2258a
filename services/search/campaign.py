"""One campaign: for each scenario, parse -> verify -> ground -> paired execute -> admitted, else refine.

Per scenario (an intent or a spec) the runner

1. compiles the intent into a verified spec (parser role; its repair loop runs the verifier), then
   applies the verifier's repairs that make the fault's mechanism observable without touching it
   (``observability_repairs``: e.g. a radio range short enough that the relay of a relay chain matters),
   as ``make run`` applies its repairs; each is recorded (journal, scenario summary, witness records), and
   one that would change what was asked (the fault, a field the intent states) is reported, not applied;
2. runs it once (the *initial* execution): admitted here = found before refinement;
3. searches the specification space (Appendix E): an elite set of the best
   candidates by (admitted first, then smallest failure margin); parents sampled by
   rank priority (smaller margin = more descendants); each child moves fault,
   timing, vehicle or penetration parameters (``mutate.py``) and must pass the
   verifier gate before it may run (gated children count toward the budget).
   The search proceeds in **generations** of ``generation_size`` children, drawn
   from the elite set as the previous generations left it, in a fixed order; a
   generation is dispatched in slices of up to K executions per simulator replica, each
   slice together (one ``ExecuteBatch`` per replica, one vectorized batch in process),
   and its results are consumed in dispatch order. So what a seeded campaign runs,
   admits and archives does not depend on K, on the replica count, or on replicas
   coming and going mid-campaign: only how fast it gets there does;
4. when the search stalls (``stall_candidates`` executions in a row without a better
   margin, and nothing admitted yet) it reflects: the evidence digest of the current
   root's run and the root's spec go to the reflector, whose **field edits** (anchor,
   magnitude, range, arrival, ...) are applied to that spec, which re-enters verify ->
   ground -> execute under the same admission test (at most ``reflection_rounds``). The
   edited spec keeps the root's application, map query and each fault's operator and
   stream (reflection changes how hard and when, never what or where); only a
   reflector that gives words alone, or edits that do not verify, has its revised
   prompt parsed instead (with the root's map kept);
5. for every admitted execution whose catalogue key is new, it shrinks the spec to a
   1-minimal witness (``shrink.py``), re-checks the witness's admission on another
   replica (a flip is recorded as flaky, not archived), and archives it with its
   trace and 1-minimality certificate.

Near misses steer the search (the elite set) but never replace the paired admission
test: only an admitted execution becomes a witness.

**One candidate never ends a campaign.** An unexpected exception (not one of the platform's
typed errors) while verifying, grounding, executing or shrinking one candidate marks that
candidate *errored* (journaled with the exception's type; the traceback goes to the service
log; counted in the summary) and the search goes on; grounding is tried twice first, as a
remote grounding service may fail once. A scenario fails only when it cannot go on at all
(its own spec does not parse, ground or run), a campaign only when every scenario failed or
the simulators are gone; witnesses archived before stay archived.

Every state change goes to the campaign's journal (dispatches with the RNG state,
results, elite snapshots, parses, reflection rounds, witnesses) and every execution to
the ledger under its idempotent execution id.

**Resume** after a crash is a deterministic replay: the runner starts the campaign over
with the same id, and everything the crashed run recorded is served instead of redone —
executions from the ledger (so only what was in flight runs again), parser and
reflector answers from the journal (an LLM backend need not be deterministic), journal
entries already written are checked against the replay instead of written twice, and a
witness already archived is kept. Because the loop is deterministic for a seed and K,
the resumed campaign ends with the same journal and the same archive as an
uninterrupted one.

The request, progress, event and candidate types live in ``services.search.campaign_types``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import numpy as np

from lastv2x.core.catalogue import margin_text
from lastv2x.core.errors import FailedPrecondition, InvalidArgument, LastV2XError, Unavailable
from lastv2x.core.program import ScenarioProgram, program_sha256
from lastv2x.core.repair import apply_patch
from lastv2x.core.rng import Substream, substream
from lastv2x.core.spec import ScenarioSpec, parse_spec, spec_to_dict
from lastv2x.core.verifier import Severity, verify
from services.search.campaign_types import (
    NOT_A_CANDIDATE_ERROR,
    CampaignRequest,
    Cancelled,
    Candidate,
    CandidateErrored,
    Event,
    LeaseLost,
    ReplayDiverged,
    ScenarioProgress,
)
from services.search.catalog import admission_class, catalog_key, failure_signature
from services.search.evidence import evidence_digest
from services.search.mutate import mutate
from services.search.pipeline import (
    Execution,
    ExecutionRequest,
    Pipeline,
    Reflected,
    execution_id,
    submit_all,
)
from services.search.repairs import (
    GIVEN,
    OBSERVABILITY_CHECKS,
    observability_repairs,
    repair_text,
    verifier_repaired,
)
from services.search.settings import SearchSettings
from services.search.shrink import CachedPredicate, Shrinker, Ungroundable, Verdict
from services.search.store import LedgerRow, Repository, WitnessRow

LOG = logging.getLogger(__name__)
MAX_REDRAWS = 8  # a child already tried in this scenario is redrawn at most this often
GROUND_CACHE = 512  # grounded specs remembered (an LRU): a campaign's programs are not all kept in memory

class CampaignRunner:
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
        # resume: what the crashed run journaled, retraced entry by entry
        self._recorded = [(k, p) for _, k, p in store.journal(campaign_id)] if resume else []
        self._replayed = 0
        self._kept_keys: set[str] = set()
        self._reflection_spent: set[int] = set()  # scenarios whose reflector had nothing new to say
        self._holder = holder  # our name in the campaign's lease ("" = no lease: tests, single process)
        self._lease_renewed = time.monotonic()  # catalogue keys this run archived (or kept, on resume)
        self._signatures: dict[str, str] = {}  # failure_signature of each witness's minimized run -> its key

    # ── bookkeeping ───────────────────────────────────────────────────────
    @property
    def budget_total(self) -> int:
        return self.request.budget_per_scenario * len(self.scenarios)

    @property
    def executions_done(self) -> int:
        return sum(s.executions + s.shrink_executions for s in self.scenarios)

    @property
    def pending(self) -> int:
        """Candidates of the budget not yet settled: the work an autoscaler should provision for."""
        if self.cancel.is_set():
            return 0
        return sum(0 if s.stage in ("done", "failed", "cancelled") else
                   max(0, self.request.budget_per_scenario - s.candidates) + s.in_flight
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

    def _parse(self, sc: ScenarioProgress, prompt: str, seed: int, origin: str = "initial"
               ) -> tuple[ScenarioSpec, tuple[str, ...]]:
        """The parser role, answered from the journal when the crashed run already asked: the spec, with the
        verifier's observability repairs applied (``_repaired``), and the clauses of the prompt it does not
        hold (``parser.unparsed_fault``)."""
        recorded = self._recorded_entry("parsed", scenario=sc.index, prompt=prompt, seed=seed)
        if recorded:
            spec, unparsed = parse_spec(recorded["spec"]), tuple(recorded.get("unparsed", ()))
            stated = tuple(recorded.get("stated", ()))
        else:
            parsed = self.pipeline.parse(prompt, seed, self.id)
            spec, unparsed, stated = parsed.spec, tuple(parsed.unparsed), tuple(parsed.stated)
        self._journal("parsed", {"scenario": sc.index, "prompt": prompt, "seed": seed, "spec": spec_to_dict(spec),
                                 "unparsed": list(unparsed), "stated": list(stated)})
        return self._repaired(sc, spec, frozenset(stated), origin), unparsed

    def _repaired(self, sc: ScenarioProgress, spec: ScenarioSpec, stated: frozenset[str], origin: str
                  ) -> ScenarioSpec:
        """``observability_repairs`` of a scenario's spec, each journaled, kept with the scenario (the summary,
        the results table and its witness records show them) and announced (event ``repair``)."""
        spec, records = observability_repairs(spec, stated)
        if not records:
            return spec
        for r in records:
            r["origin"] = origin
        self._journal("repairs", {"scenario": sc.index, "origin": origin, "repairs": records})
        for r in records:
            if any({**r, "origin": ""} == {**k, "origin": ""} for k in sc.repairs):
                continue  # a reflected spec repaired as the initial one was: recorded once
            sc.repairs.append(r)
            self._emit("repair", sc.index, f"{sc.source}: {repair_text(r)}")
        return spec

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

    # ── the campaign ──────────────────────────────────────────────────────
    def run(self) -> tuple[str, str]:
        """Run every scenario; returns (final state, reason)."""
        # ResumeCampaign of a failed or cancelled campaign: how it ended (and the resume marks) is no step to retrace
        self._recorded = [(k, p) for k, p in self._recorded if k not in ("failed", "cancelled", "resumed")]
        failures: list[str] = []
        try:
            for sc in self.scenarios:
                self._check_cancel()
                try:
                    self._scenario(sc)
                except (InvalidArgument, FailedPrecondition) as exc:
                    self._scenario_failed(sc, str(exc), failures)
                except (Cancelled, LeaseLost, ReplayDiverged, Unavailable):
                    raise
                except Exception as exc:  # noqa: BLE001 - a bug in this scenario's driving: the others still run
                    LOG.exception("campaign %s %s: internal error", self.id, sc.source)
                    self._scenario_failed(sc, f"internal error: {type(exc).__name__}: {exc}"[:500], failures)
        except ReplayDiverged as exc:
            return "failed", f"resume diverged from the journal: {exc}"
        except Cancelled:
            for sc in self.scenarios:
                if sc.stage not in ("done", "failed"):
                    sc.stage = "cancelled"
            self._journal("cancelled", {})
            return "cancelled", "cancelled by request"
        except Unavailable as exc:
            for sc in self.scenarios:
                if sc.stage not in ("done", "failed"):
                    sc.stage, sc.error = "failed", str(exc)
            self._journal("failed", {"reason": str(exc)})
            return "failed", str(exc)
        if failures and len(failures) == len(self.scenarios):
            return "failed", "; ".join(failures)
        ran = sum(s.executions for s in self.scenarios)
        if ran and sum(s.refused for s in self.scenarios) == ran:  # a campaign that tested nothing did not succeed
            self._journal("failed", {"reason": "every execution was refused"})
            return "failed", (f"the simulator refused all {ran} executions (the ledger's 'refused' column says why): "
                              "nothing was tested" + ("; " + "; ".join(failures) if failures else ""))
        if failures:  # the others ran: the campaign is done, and says which scenarios could not
            return "done", f"{len(failures)} of {len(self.scenarios)} scenarios failed: " + "; ".join(failures)
        return "done", ""

    def _scenario_failed(self, sc: ScenarioProgress, reason: str, failures: list[str]) -> None:
        sc.stage, sc.error = "failed", reason
        failures.append(f"{sc.source}: {reason}")
        self._journal("scenario_failed", {"scenario": sc.index, "reason": reason})
        self._emit("failed", sc.index, f"{sc.source}: {reason}")

    def _scenario(self, sc: ScenarioProgress) -> None:
        seed = int(substream(self.request.seed, Substream.SEARCH, sc.index).integers(0, 2**62))
        rng = substream(self.request.seed, Substream.SEARCH, sc.index, 1)
        prompt = sc.intent
        self._stage(sc, "parse")
        given = self._specs[sc.index]
        if given is None:
            spec, unparsed = self._parse(sc, prompt, seed)
            if unparsed and not self.request.allow_partial:  # never a run of something else than was asked
                quoted = "; ".join(repr(c) for c in unparsed)
                raise FailedPrecondition(f"{sc.source}: the parser could not read {quoted}, so the spec would test "
                                         "less than the intent asks", "rephrase that clause (e.g. name the "
                                         "message, the fault and its size), or allow_partial (--allow-partial) to "
                                         "run the rest")
            sc.unparsed_clauses = list(unparsed)
        else:
            spec = self._repaired(sc, given, frozenset({GIVEN}), "initial")  # reported, never applied
        sc.application = spec.application.value
        self._journal("scenario", {"scenario": sc.index, "seed": seed, "spec": spec_to_dict(spec)})
        root = self._run_candidates(sc, [Candidate(spec, "initial")])[0]
        sc.admitted_initially = bool(root.execution and root.execution.admitted)
        self._stage(sc, "search", f"initial run {'ADMITTED' if sc.admitted_initially else 'not admitted'}")
        if not sc.admitted_initially:
            root = self._verifier_step(sc, root)
        self._search(sc, root, rng, prompt)
        sc.stage = "done"
        self._emit("stage", sc.index, f"{sc.source}: done ({sc.admitted_executions} admitted, "
                                      f"{len(sc.witness_ids)} witness(es))")

    def _verifier_step(self, sc: ScenarioProgress, root: Candidate) -> Candidate:
        """When the spec as stated does not meet the verifier (the parser keeps what the intent states), the first
        search step is the verifier's own repair of it (``verifier_repaired``): recorded like any repair (origin
        ``search``) and run; the search then starts from it."""
        if root.report is None or root.report.ok or sc.candidates >= self.request.budget_per_scenario:
            return root
        variant, records = verifier_repaired(root.spec)
        if variant is None:
            return root
        for r in records:
            r["origin"] = "search"
        self._journal("repairs", {"scenario": sc.index, "origin": "search", "repairs": records})
        for r in records:
            sc.repairs.append(r)
            self._emit("repair", sc.index, f"{sc.source}: {repair_text(r)}")
        try:
            cand = self._run_candidates(sc, [Candidate(variant, "verifier repair")])[0]
        except FailedPrecondition as exc:  # the repaired spec does not ground or run: the search goes on as stated
            self._journal("repairs", {"scenario": sc.index, "origin": "search", "error": str(exc)[:300]})
            return root
        # the search goes on from the verified spec: the one as stated ran and answered the intent's question, and its
        # mutants would mostly keep what makes it ineffective (the gate would spend the budget on them)
        return cand if cand.execution is not None else root

    # ── search ────────────────────────────────────────────────────────────
    def _search(self, sc: ScenarioProgress, root: Candidate, rng: np.random.Generator, prompt: str) -> None:
        budget = self.request.budget_per_scenario
        elite: list[Candidate] = [root] if root.execution else []
        self._journal_elite(sc, elite)
        tried = {root.spec.model_dump_json()}
        since_improvement = 0

        def done() -> bool:
            return sc.candidates >= budget or (self.request.stop_at_first_admission and sc.admitted_executions > 0)

        def stalled() -> bool:  # nothing admitted, no better margin for a while, a reflection round left
            return (sc.admitted_executions == 0 and bool(prompt) and not done()
                    and since_improvement >= self.settings.stall_candidates
                    and sc.reflection_rounds < self.request.reflection_rounds
                    and sc.index not in self._reflection_spent)

        while True:
            self._check_cancel()
            if stalled():
                new_root, prompt = self._reflect(sc, root, prompt, rng)
                since_improvement = 0
                if new_root is not None:
                    root = new_root
                    tried.add(root.spec.model_dump_json())
                    elite = [root] if root.execution else elite
                    self._journal_elite(sc, elite)
                continue
            if done() or not elite:
                return
            # one generation: children of the elite as the previous generations left it, in draw order
            generation: list[Candidate] = []
            exhausted = False
            while len(generation) < self.settings.generation_size and sc.candidates < budget:
                child = self._child(elite, rng, tried)
                if child is None:
                    exhausted = True
                    break
                if self._prepare(sc, child):  # else gated, ungroundable or errored: budget spent, nothing to run
                    generation.append(child)
            for cand in self._run_generation(sc, generation):
                if cand.execution is None:  # errored
                    continue
                best = min((c.priority for c in elite), default=(2, math.inf))
                if not cand.execution.refused:
                    elite.append(cand)
                    elite.sort(key=lambda c: c.priority)
                    del elite[self.settings.elite_size:]
                    self._journal_elite(sc, elite)
                since_improvement = 0 if cand.priority < best else since_improvement + 1
                if cand.execution.admitted:
                    self._admitted(sc, cand)
            if exhausted and not generation:  # mutants exhausted: reflect if a round is left, else the search ends
                since_improvement = max(since_improvement, self.settings.stall_candidates)
                if not stalled():
                    return

    def _run_generation(self, sc: ScenarioProgress, generation: list[Candidate]) -> Iterator[Candidate]:
        """Journal every dispatch of the generation first (so the journal's order does not depend on K),
        then dispatch it in slices of up to K per replica, each slice together (``submit_all``: the simulator
        steps it as one batch), and yield the candidates settled, in dispatch order."""
        for cand in generation:
            self._journal_dispatch(sc, cand)
        waiting = deque(generation)
        while waiting:
            k = self.request.in_flight * max(1, len(self.pipeline.replicas))  # replicas come and go
            part = [waiting.popleft() for _ in range(min(k, len(waiting)))]
            self._submit_candidates(sc, part)
            for cand in part:
                self._settle(sc, cand)
                yield cand

    def _journal_elite(self, sc: ScenarioProgress, elite: list[Candidate]) -> None:
        self._journal("elite", {"scenario": sc.index, "members": [
            {"execution_id": c.execution_id, "priority": list(c.priority)} for c in elite]})

    def _child(self, elite: list[Candidate], rng: np.random.Generator, tried: set[str]) -> Candidate | None:
        """Sample a parent by rank priority (weight elite_size - rank) and mutate it."""
        weights = np.arange(len(elite), 0, -1, dtype=float)
        for _ in range(MAX_REDRAWS):
            state = rng.bit_generator.state
            parent = elite[int(rng.choice(len(elite), p=weights / weights.sum()))]
            out = mutate(parent.spec, rng, self.settings.mutations_per_child)
            if out is None:
                continue
            child, ops = out
            text = child.model_dump_json()
            if text in tried:
                continue
            tried.add(text)
            return Candidate(child, "search", ops, rng_state=dict(state))
        return None

    def _prepare(self, sc: ScenarioProgress, cand: Candidate) -> bool:
        """Spend one candidate of the budget: verify and ground it. True = ready to run; False = the gate
        blocked it, it has no program, or it errored."""
        sc.candidates += 1
        try:
            cand.report = verify(cand.spec)
            program = self._ground(cand.spec) if not (self.request.gate and not cand.report.ok) else None
        except NOT_A_CANDIDATE_ERROR as exc:
            if not isinstance(exc, CandidateErrored):
                raise
            self._errored(sc, cand, exc)
            return False
        except Exception as exc:  # noqa: BLE001 - one candidate's bug: that candidate only
            self._errored(sc, cand, CandidateErrored("verify", exc))
            return False
        assert cand.report is not None
        if self.request.gate and not cand.report.ok:
            sc.gated += 1
            self._journal("gated", {"scenario": sc.index, "operators": list(cand.operators),
                                    "checks": sorted({f.check for f in cand.report.findings
                                                      if f.severity.value == "error"})})
            return False
        if isinstance(program, str):
            self._journal("ungroundable", {"scenario": sc.index, "reason": program})
            return False
        cand.program = program
        return True

    def _errored(self, sc: ScenarioProgress, cand: Candidate, exc: CandidateErrored) -> None:
        """``cand`` hit an unexpected exception: count it, journal it, log the traceback; nothing else stops."""
        sc.errored += 1
        cand.errored = str(exc)
        LOG.error("campaign %s %s: candidate %s errored at %s", self.id, sc.source, cand.execution_id or "-",
                  exc, exc_info=exc.__cause__ or exc)
        self._journal("errored", {"scenario": sc.index, "execution_id": cand.execution_id, "stage": exc.stage,
                                  "error_type": exc.error_type, "error": str(exc), "operators": list(cand.operators)})
        self._emit("errored", sc.index, f"{sc.source}: {cand.origin} candidate ERRORED ({exc}); the search goes on")

    def _run_candidates(self, sc: ScenarioProgress, cands: list[Candidate]) -> list[Candidate]:
        """Ground, dispatch and settle candidates that are not gated (initial and reflected roots)."""
        for c in cands:
            sc.candidates += 1
            try:
                c.report = verify(c.spec)
                program = self._ground(c.spec)
            except NOT_A_CANDIDATE_ERROR as exc:
                if not isinstance(exc, CandidateErrored):
                    raise
                self._errored(sc, c, exc)
                raise FailedPrecondition(f"{sc.source}: its {c.origin} spec errored ({exc})",
                                         "the service log has the traceback; report it with the spec") from None
            except Exception as exc:  # noqa: BLE001
                self._errored(sc, c, CandidateErrored("verify", exc))
                raise FailedPrecondition(f"{sc.source}: its {c.origin} spec errored in the verifier "
                                         f"({type(exc).__name__}: {exc})",
                                         "the service log has the traceback; report it with the spec") from None
            if isinstance(program, str):
                raise FailedPrecondition(f"{sc.source}: grounding failed: {program}",
                                         "name another map or junction kind in the intent")
            c.program = program
        for c in self._run_generation(sc, cands):
            if c.execution is None:
                raise FailedPrecondition(f"{sc.source}: its {c.origin} run errored ({c.errored})",
                                         "the service log has the traceback; report it with the spec")
            if c.execution.admitted:
                self._admitted(sc, c)
        return cands

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

    def _record(self, sc: ScenarioProgress, exec_id: str, purpose: str, e: Execution) -> None:
        self.store.record_execution(LedgerRow(exec_id, self.id, sc.index, purpose, e.program_sha256, e.seed,
                                              e.admitted, e.failure_margin, e.refused, e.replica, e.outcome_json))
        self._exec_count += 1
        self._exec_seconds += e.wall_time_s

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
        self._record(sc, cand.execution_id, cand.origin, e)
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

    # ── admission -> witness ──────────────────────────────────────────────
    def _coverage_gap(self, sc: ScenarioProgress, cand: Candidate, when: str) -> None:
        """A failure with no fault injected and no coverage taken away: the scene's own radio, reported apart."""
        sc.coverage_gaps += 1
        self._journal("coverage_gap", {"scenario": sc.index, "execution_id": cand.execution_id, "when": when})
        self._emit("coverage_gap", sc.index, f"{sc.source}: a failure with no fault injected and no coverage taken "
                                             f"away ({when}): a coverage gap of the scene, reported apart (not a "
                                             "fault witness)")

    def _admitted(self, sc: ScenarioProgress, cand: Candidate) -> None:
        if admission_class(cand.spec) == "coverage_gap":  # no fault, nothing declared: the world's own radio
            self._coverage_gap(sc, cand, "as run")
            return
        sc.admitted_executions += 1
        if sc.first_admitted_at is None:
            sc.first_admitted_at = sc.candidates
        key = catalog_key(cand.spec)
        if key.text not in sc.keys:
            sc.keys.append(key.text)
        self._emit("admitted", sc.index, f"{sc.source}: admitted failure ({key.text})")
        self._journal("admitted", {"scenario": sc.index, "execution_id": cand.execution_id, "key": key.to_dict()})
        if not self.request.minimize:
            return
        if self._catalogued(key.text):
            sc.duplicate_keys += 1
            self.store.count_in_catalogue(key.text, cand.execution_id)  # once, also when a resume retraces it
            return
        self._stage(sc, "shrink", key.text)
        try:
            witness_spec, result = self._shrink(sc, cand.spec)
            if admission_class(witness_spec) == "coverage_gap":  # every fault shrank away: it never needed one
                self._coverage_gap(sc, cand, "its faults shrank away")
            elif (signature := self._new_failure(sc, cand, witness_spec, key.text)) is not None:
                self._archive(sc, cand, witness_spec, result, signature)
        except NOT_A_CANDIDATE_ERROR as exc:
            if not isinstance(exc, CandidateErrored):
                raise
            self._errored(sc, cand, exc)
        except Exception as exc:  # noqa: BLE001 - this witness is lost; the ones archived and the search are not
            self._errored(sc, cand, CandidateErrored("shrink", exc))
        self._stage(sc, "search")

    def _new_failure(self, sc: ScenarioProgress, cand: Candidate, spec: ScenarioSpec, key: str) -> str | None:
        """The failure signature of the minimized run (``failure_signature``: decisions, how, against whom), or
        None when it is the same failure as a witness this campaign holds under another key, or as one another
        campaign archived (the catalogue keeps each witness's signature): then it is counted there, not archived.
        "" when the run is not in the ledger: nothing to compare."""
        program = self._ground(spec)
        row = None if isinstance(program, str) else self.store.get_execution(
            execution_id(program, program.seed, self.id))
        row = row or self.store.get_execution(cand.execution_id)
        if row is None or not row.outcome_json:
            return ""
        signature = failure_signature(json.loads(row.outcome_json))
        first = self._signatures.get(signature)
        if first is None:
            elsewhere = self.store.catalogue_entry_for_failure(signature)
            first = elsewhere["key"] if elsewhere is not None and elsewhere["first_campaign"] != self.id else key
            self._signatures[signature] = first
        if first == key:
            return signature
        sc.duplicate_keys += 1
        self.store.count_in_catalogue(first, cand.execution_id)  # once, also when a resume retraces it
        self._journal("same_failure", {"scenario": sc.index, "execution_id": cand.execution_id, "key": key,
                                       "as_key": first})
        self._emit("same_failure", sc.index, f"{sc.source}: the same failure as the witness of {first}: counted, "
                                             "not archived again")
        return None

    def _catalogued(self, key: str) -> bool:
        """Is an equivalent failure archived already: by another campaign, or by this one earlier in
        this run (on resume the catalogue also holds what the crashed run archived later on)."""
        entry = self.store.catalogue_entry(key)
        return entry is not None and (entry["first_campaign"] != self.id or key in self._kept_keys)

    def _shrink(self, sc: ScenarioProgress, spec: ScenarioSpec) -> tuple[ScenarioSpec, Any]:
        def key(s: ScenarioSpec) -> tuple[str, int]:
            try:
                program = self._ground(s)
            except CandidateErrored as exc:  # a weakening that failed to ground twice: not a witness, the
                # shrink goes on (the admitted spec itself grounded before it got here)
                self._journal("shrink_ground_error", {"scenario": sc.index, "error": str(exc)[:300]})
                raise Ungroundable(str(exc)) from exc
            if isinstance(program, str):
                raise Ungroundable(program)
            return execution_id(program, program.seed, self.id), program.seed

        def run(s: ScenarioSpec, k: Any) -> Verdict:
            self._check_cancel()
            program = self._ground(s)
            assert not isinstance(program, str)
            e = self._wait(self._submit(program, k[0]))
            self._record(sc, k[0], "shrink", e)
            sc.shrink_executions += 1
            if e.refused:
                return Verdict.REFUSED
            return Verdict.ADMITTED if e.admitted else Verdict.NOT_ADMITTED

        predicate = CachedPredicate(key, run)
        result = Shrinker(predicate, max_calls=self.settings.shrink_max_calls, bisect=self.settings.shrink_bisect).run(spec)
        return result.spec, result

    def _archive(self, sc: ScenarioProgress, found: Candidate, spec: ScenarioSpec, result: Any,
                 signature: str) -> None:
        program = self._ground(spec)
        assert not isinstance(program, str)
        exec_id = execution_id(program, program.seed, self.id)
        archived = self.store.get_execution(exec_id)
        first = archived or self.store.get_execution(found.execution_id)
        assert first is not None
        key = catalog_key(spec)
        witness_id = "w-" + hashlib.sha256(f"{program_sha256(program)}|{program.seed}".encode()).hexdigest()[:16]
        if self.store.has_witness(witness_id, self.id):  # resuming: archived before the crash
            # its re-check (and cross-check) ran then and are in the ledger: count them as the first run did
            sc.shrink_executions += sum(self.store.get_execution(exec_id + s) is not None
                                        for s in (":recheck", ":cross_check"))
            self._witness_kept(sc, witness_id, key.text, spec, result)
            return
        # re-check on another replica where one exists; this run also writes the trace
        replicas = self.pipeline.replicas
        other = (replicas.index(first.replica) + 1) % len(replicas) if first.replica in replicas else 0
        recheck = self._wait(self.pipeline.submit(ExecutionRequest(
            program, program.seed, replica=other, write_trace=True, trace_dir=self.store.staging_dir,
            app=self.request.app)))
        sc.shrink_executions += 1
        self._record(sc, exec_id + ":recheck", "recheck", recheck)
        admitted_before = archived.admitted if archived else True
        if recheck.admitted != admitted_before or recheck.refused:
            sc.flaky += 1
            self.store.record_flaky(recheck.program_sha256, program.seed, self.id,
                                    {"spec": spec_to_dict(spec), "first_replica": first.replica,
                                     "recheck_replica": recheck.replica, "first_admitted": admitted_before,
                                     "recheck_admitted": recheck.admitted})
            self._journal("flaky", {"scenario": sc.index, "execution_id": exec_id})
            self._emit("flaky", sc.index, f"{sc.source}: admission flipped on re-check; recorded as flaky")
            return
        outcome_json = recheck.outcome_json
        cross_check = self._cross_check(sc, exec_id, program) if self.settings.verify_backend else None
        record = {
            "witness_id": witness_id, "campaign_id": self.id, "scenario": sc.index, "source": sc.source,
            "intent": sc.intent, "unparsed_clauses": list(sc.unparsed_clauses), "key": key.to_dict(),
            "repairs": [dict(r) for r in sc.repairs],  # the verifier's repairs of the scenario's spec
            "spec": spec_to_dict(spec),
            "found_spec": spec_to_dict(found.spec), "program": json.loads(program.model_dump_json()),
            # the exact text: the outcome's program hash is over it, and the record's JSON sorts keys
            "program_json": program.model_dump_json(),
            "grounding": json.loads(program.grounding.model_dump_json()) if program.grounding else None,
            "seed": program.seed, "outcome_sha256": recheck.outcome_sha256,
            "identical_on_recheck": archived is None or archived.outcome_json == outcome_json,
            "replicas": [first.replica, recheck.replica], "certificate": result.certificate_dict(),
            "trace_uri": "",  # the archive's own copy: trace_path, archive-relative (never a replica's path)
            # the application build it was found on (name, version, digest; how it was plugged in)
            "app": {**recheck.app_build, "target": recheck.app_build.get("target") or self.request.app or "reference"},
        }
        if cross_check is not None:
            record["cross_check"] = cross_check
        staged = None
        if recheck.trace_uri.startswith("file://"):
            from pathlib import Path
            from urllib.parse import unquote, urlparse
            staged = Path(unquote(urlparse(recheck.trace_uri).path))
            staged = staged if staged.parent == self.store.staging_dir.resolve() else None
        if staged is None:  # written on a remote replica, in its own folder: write the archive's copy here
            from services.search.traces import write_witness_trace

            staged, why = write_witness_trace(program, program.seed, self.request.app, self.store.staging_dir,
                                              outcome_json)
            if why:
                record["trace_error"] = why
        row = WitnessRow(witness_id, self.id, key.text, spec.application.value, time.time(), outcome_json, record, "")
        if self.store.archive_witness(row, key.to_dict(), staged, hit=found.execution_id, signature=signature):
            self._witness_kept(sc, witness_id, key.text, spec, result)
        else:
            sc.duplicate_keys += 1

    def _cross_check(self, sc: ScenarioProgress, exec_id: str, program: ScenarioProgram) -> dict[str, Any]:
        """The witness re-run on a second simulator (``settings.verify_backend``): does admission hold there?
        A verdict, never a reason to drop the witness: a backend that fails says so in ``error``."""
        backend = self.settings.verify_backend
        try:
            e = self._wait(self.pipeline.submit(ExecutionRequest(program, program.seed, app=self.request.app,
                                                                 backend=backend)))
        except (LastV2XError, OSError) as exc:
            return {"backend": backend, "admitted": False, "error": f"{type(exc).__name__}: {exc}"}
        sc.shrink_executions += 1
        self._record(sc, exec_id + ":cross_check", "cross_check", e)
        if e.refused:
            return {"backend": backend, "admitted": False, "error": e.refused}
        o = e.outcome
        return {"backend": backend, "admitted": e.admitted, "outcome_sha256": e.outcome_sha256,
                "md_failed": bool(o.get("md", {}).get("failed")), "gt_failed": bool(o.get("gt", {}).get("failed")),
                "failure_margin": e.failure_margin}

    def _witness_kept(self, sc: ScenarioProgress, witness_id: str, key: str, spec: ScenarioSpec, result: Any) -> None:
        self._kept_keys.add(key)
        if any(witness_id in other.witness_ids for other in self.scenarios):
            sc.duplicate_keys += 1  # another admitted candidate shrank to the same witness: listed once
            return
        sc.witness_ids.append(witness_id)
        sc.faults_left.append(len(spec.faults))
        if key not in sc.keys:
            sc.keys.append(key)
        self._journal("witness", {"scenario": sc.index, "witness_id": witness_id, "key": key,
                                  "steps": result.steps, "complete": result.complete})
        self._emit("witness", sc.index, f"{sc.source}: witness {witness_id}: {len(spec.faults)} fault(s) left "
                                        f"after {result.steps} weakening(s), {result.runs} run(s)")

    # ── reflection ────────────────────────────────────────────────────────
    def _reflect(self, sc: ScenarioProgress, root: Candidate, prompt: str, rng: np.random.Generator
                 ) -> tuple[Candidate | None, str]:
        sc.reflection_rounds += 1
        self._stage(sc, "reflect", f"round {sc.reflection_rounds}")
        report = root.report or verify(root.spec)
        outcome = root.execution.outcome if root.execution else {}
        digest = evidence_digest(root.spec, report, outcome)
        recorded = self._recorded_entry("reflection", scenario=sc.index, round=sc.reflection_rounds)
        try:
            reflected = (Reflected(recorded["diagnosis"], recorded["revised_prompt"], tuple(recorded["rule_ids"]),
                                   tuple((e["path"], e["value"], e["rule"]) for e in recorded.get("edits", ())))
                         if recorded and "revised_prompt" in recorded else
                         self.pipeline.reflect(prompt, digest, self.id, root.spec))
        except (InvalidArgument, FailedPrecondition) as exc:
            self._journal("reflection", {"scenario": sc.index, "round": sc.reflection_rounds, "error": str(exc)})
            return None, prompt
        except (Cancelled, LeaseLost, ReplayDiverged, Unavailable):
            raise
        except Exception as exc:  # noqa: BLE001 - a reflector bug costs this round, not the scenario
            LOG.exception("campaign %s %s: reflection raised", self.id, sc.source)
            self._journal("reflection", {"scenario": sc.index, "round": sc.reflection_rounds,
                                         "error": f"{type(exc).__name__}: {exc}"[:500]})
            return None, prompt
        entry = {"scenario": sc.index, "round": sc.reflection_rounds, "prompt": prompt,
                 "diagnosis": reflected.diagnosis, "revised_prompt": reflected.revised_prompt,
                 "rule_ids": list(reflected.rule_ids)}
        if reflected.edits:
            entry["edits"] = [{"path": p, "value": v, "rule": r} for p, v, r in reflected.edits]
        self._journal("reflection", entry)
        self._emit("reflection", sc.index, f"{sc.source}: reflection {sc.reflection_rounds}: {reflected.diagnosis}"
                   + "".join(f"; {p} -> {json.dumps(v)}" for p, v, _r in reflected.edits))
        if (reflected.revised_prompt.strip() == prompt.strip() and not reflected.edits) \
                or sc.candidates >= self.request.budget_per_scenario:
            self._reflection_spent.add(sc.index)  # nothing new to try: stop reflecting
            return None, prompt
        seed = int(rng.integers(0, 2**62))  # drawn in both cases: the search's draws do not depend on the path
        spec = self._edited(sc, root.spec, reflected.edits) if reflected.edits else None
        if spec is None:  # words only (or edits that do not verify): the revised prompt, parsed
            try:
                spec, _ = self._parse(sc, reflected.revised_prompt, seed, f"reflection {sc.reflection_rounds}")
            except (InvalidArgument, FailedPrecondition) as exc:
                self._journal("reflection", {"scenario": sc.index, "round": sc.reflection_rounds,
                                             "parse_error": str(exc)})
                return None, reflected.revised_prompt
        if spec.application.value != sc.application:
            return None, prompt  # reflection may not change what is tested
        if spec.map != root.spec.map:  # nor where: it edits how hard and when (a re-parse may draw another town)
            spec = parse_spec({**spec_to_dict(spec), "map": root.spec.map.model_dump(mode="json")})
        try:
            cand = self._run_candidates(sc, [Candidate(spec, "reflection")])[0]
        except FailedPrecondition:
            return None, reflected.revised_prompt
        self._stage(sc, "search", f"after reflection {sc.reflection_rounds}")
        return cand, reflected.revised_prompt


    def _edited(self, sc: ScenarioProgress, spec: ScenarioSpec, edits: tuple[tuple[str, Any, str], ...]
                ) -> ScenarioSpec | None:
        """The root spec with the reflector's field edits, when it is the same test (application, map, each
        fault's operator and stream) and verifies without an error; else None (journaled: the words are parsed
        instead)."""
        why = ""
        try:
            edited = parse_spec(apply_patch(spec_to_dict(spec), [(p, v) for p, v, _r in edits]))
        except InvalidArgument as exc:
            edited, why = None, f"the edited spec is invalid: {exc}"
        except (IndexError, KeyError, TypeError) as exc:  # a path the spec does not have (faults[3] of one fault)
            edited, why = None, f"an edit names a field the spec does not have ({type(exc).__name__}: {exc})"
        if edited is not None and ((edited.application, edited.map) != (spec.application, spec.map) or
                                   [(f.operator, f.stream) for f in edited.faults]
                                   != [(f.operator, f.stream) for f in spec.faults]):
            edited, why = None, "the edits change what is tested (application, map or a fault's operator/stream)"
        if edited is not None:
            errors = [f for f in verify(edited).findings if f.severity is Severity.ERROR]
            if errors:
                edited, why = None, "the edited spec does not verify: " + "; ".join(
                    f"{f.check}: {f.message}" for f in errors[:3])
        if edited is None:
            self._journal("reflection", {"scenario": sc.index, "round": sc.reflection_rounds, "edits_refused": why})
        return edited


__all__ = ["OBSERVABILITY_CHECKS", "CampaignRequest", "CampaignRunner", "CandidateErrored", "Event", "LeaseLost",
           "ScenarioProgress", "observability_repairs", "repair_text", "verifier_repaired"]
