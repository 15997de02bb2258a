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
   verifier gate before it may run (gated children count toward the budget, unless the request's
   ``budget_in_executions`` says the budget counts executions, the paper's unit).
   The search proceeds in **generations** of ``generation_size(...)`` children (the setting, but at
   least ``MIN_GENERATIONS`` generations per budget and never under ``MIN_GENERATION``), drawn
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
5. for every admitted execution whose catalogue key is new (``witness.py``), it shrinks the spec
   to a 1-minimal witness (``shrink.py``), re-checks the witness's admission on another
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

The runner is split by responsibility: this module drives the search (steps 1-4: parse -> verify ->
ground -> initial run -> generations -> reflection); what happens to an admitted execution (step 5: admission
class and coverage gaps, catalogue key and failure-signature dedupe, shrinking, re-check, cross-check,
archiving) is ``services.search.witness`` (``WitnessKeeper``); the state, journal (and its replay), events,
lease and the executions both run through are ``services.search.campaign_base`` (``CampaignBase``). The
request, progress, event and candidate types live in ``services.search.campaign_types``.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np

from lastv2x.core.errors import FailedPrecondition, InvalidArgument, Unavailable
from lastv2x.core.repair import apply_patch
from lastv2x.core.rng import Substream, substream
from lastv2x.core.spec import ScenarioSpec, parse_spec, spec_to_dict
from lastv2x.core.verifier import Severity, verify
from services.search.campaign_base import LOG, CampaignBase
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
from services.search.evidence import evidence_digest
from services.search.mutate import mutate
from services.search.pipeline import Reflected
from services.search.repairs import (
    GIVEN,
    OBSERVABILITY_CHECKS,
    observability_repairs,
    repair_text,
    run_up_repaired,
    town_repaired,
    verifier_repaired,
)
from services.search.witness import WitnessKeeper

MIN_GENERATIONS = 8  # a scenario's budget spans at least this many generations: a short search stays adaptive
MIN_GENERATION = 4  # ... but a generation is never smaller than this (the size before issue 32)


def generation_size(setting: int, budget: int) -> int:
    """Children per generation for a scenario of ``budget`` candidates: ``setting`` (the batch the simulator steps
    together), capped so that the budget spans ``MIN_GENERATIONS`` generations, and at least ``MIN_GENERATION``
    (at most ``setting``): 15-16 at the paper's 120-150, 4 at make run's 16. Deterministic in both."""
    return max(min(setting, MIN_GENERATION), min(setting, budget // MIN_GENERATIONS))


MAX_REDRAWS = 8  # a child already tried in this scenario is redrawn at most this often


class CampaignRunner(WitnessKeeper, CampaignBase):
    """One campaign, driven: parse -> verify -> ground -> initial run -> generations -> reflection (this module).
    What an admitted execution becomes is ``WitnessKeeper``'s (``witness.py``); state, journal, events and
    executions are ``CampaignBase``'s (``campaign_base.py``)."""

    def _parse(self, sc: ScenarioProgress, prompt: str, seed: int, origin: str = "initial"
               ) -> tuple[ScenarioSpec, tuple[str, ...]]:
        """The parser role, answered from the journal when the crashed run already asked: the spec, with the
        verifier's observability repairs applied (``_repaired``), and the clauses of the prompt it does not
        hold (``parser.unparsed_fault``)."""
        recorded = self._recorded_entry("parsed", scenario=sc.index, prompt=prompt, seed=seed)
        if recorded:
            spec, unparsed = parse_spec(recorded["spec"]), tuple(recorded.get("unparsed", ()))
            stated, towns = tuple(recorded.get("stated", ())), tuple(recorded.get("towns", ()))
        else:
            parsed = self.pipeline.parse(prompt, seed, self.id)
            spec, unparsed, stated, towns = parsed.spec, tuple(parsed.unparsed), tuple(parsed.stated), parsed.towns
        self._journal("parsed", {"scenario": sc.index, "prompt": prompt, "seed": seed, "spec": spec_to_dict(spec),
                                 "unparsed": list(unparsed), "stated": list(stated), "towns": list(towns)})
        self._towns.setdefault(sc.index, towns)  # the first parse's, as _stated
        return self._repaired(sc, spec, frozenset(stated), origin), unparsed

    def _repaired(self, sc: ScenarioProgress, spec: ScenarioSpec, stated: frozenset[str], origin: str
                  ) -> ScenarioSpec:
        """``observability_repairs`` of a scenario's spec, each journaled, kept with the scenario (the summary,
        the results table and its witness records show them) and announced (event ``repair``)."""
        self._stated.setdefault(sc.index, stated)  # the user's words (the first parse), not a reflected prompt's
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

    def _fitted(self, sc: ScenarioProgress, spec: ScenarioSpec) -> ScenarioSpec:
        """The spec, or, when it does not ground, the spec on another town the intent leaves open
        (``town_repaired``), else, for want of road before the junction when the intent states no start distance,
        with the ego started nearer (``run_up_repaired``); each repair tried is journaled and announced."""
        found = self._ground(spec)
        if not isinstance(found, str):
            return spec
        stated = self._stated.get(sc.index, frozenset())

        def grounds(s: ScenarioSpec) -> bool:
            return not isinstance(self._ground(s), str)

        for repair in (lambda: town_repaired(spec, found, stated, self._towns.get(sc.index, ()), grounds),
                       lambda: run_up_repaired(spec, found, stated, grounds)):
            fitted, record = repair()
            if not record["patch"] and not record["reason"]:
                continue  # not this repair's case
            record["origin"] = "grounding"
            self._journal("repairs", {"scenario": sc.index, "origin": "grounding", "repairs": [record]})
            sc.repairs.append(record)
            self._emit("repair", sc.index, f"{sc.source}: {repair_text(record)}")
            if fitted is not None:
                return fitted
        return spec  # the root candidate reports why it does not ground

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
        spec = self._fitted(sc, spec)
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
        if root.report is None or root.report.ok or not self.budget_left(sc):
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
        size = generation_size(self.settings.generation_size, budget)
        elite: list[Candidate] = [root] if root.execution else []
        self._journal_elite(sc, elite)
        tried = {root.spec.model_dump_json()}
        since_improvement = 0

        def done() -> bool:
            return not self.budget_left(sc) or (self.request.stop_at_first_admission and sc.admitted_executions > 0)

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
            while len(generation) < size and self.budget_left(sc):
                child = self._child(elite, rng, tried)
                if child is None:
                    exhausted = True
                    break
                if self._prepare(sc, child):  # else gated, ungroundable or errored: nothing to run
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
            gated = self.request.gate and not cand.report.ok
            program = self._ground(cand.spec) if not gated else None
        except NOT_A_CANDIDATE_ERROR as exc:
            if not isinstance(exc, CandidateErrored):
                raise
            self._errored(sc, cand, exc)
            return False
        except Exception as exc:  # noqa: BLE001 - one candidate's bug: that candidate only
            self._errored(sc, cand, CandidateErrored("verify", exc))
            return False
        assert cand.report is not None
        if gated:
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
            self._reflection_record(sc, None, f"the reflector refused: {exc}")
            return None, prompt
        except (Cancelled, LeaseLost, ReplayDiverged, Unavailable):
            raise
        except Exception as exc:  # noqa: BLE001 - a reflector bug costs this round, not the scenario
            LOG.exception("campaign %s %s: reflection raised", self.id, sc.source)
            error = f"{type(exc).__name__}: {exc}"[:500]
            self._journal("reflection", {"scenario": sc.index, "round": sc.reflection_rounds, "error": error})
            self._reflection_record(sc, None, f"the reflector raised {error}")
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
                or not self.budget_left(sc):
            self._reflection_spent.add(sc.index)  # nothing new to try: stop reflecting
            self._reflection_record(sc, reflected, "the budget is spent" if reflected.edits or
                                    reflected.revised_prompt.strip() != prompt.strip() else "nothing new to try")
            return None, prompt
        seed = int(rng.integers(0, 2**62))  # drawn in both cases: the search's draws do not depend on the path
        spec, refused = self._edited(sc, root.spec, reflected.edits) if reflected.edits else (None, "")
        if refused:
            refused += "; the revised intent was parsed instead"
        applied = "edits" if spec is not None else "revised_prompt"
        if spec is None:  # words only (or edits that do not verify): the revised prompt, parsed
            try:
                spec, _ = self._parse(sc, reflected.revised_prompt, seed, f"reflection {sc.reflection_rounds}")
            except (InvalidArgument, FailedPrecondition) as exc:
                self._journal("reflection", {"scenario": sc.index, "round": sc.reflection_rounds,
                                             "parse_error": str(exc)})
                self._reflection_record(sc, reflected, f"the revised intent did not parse: {exc}")
                return None, reflected.revised_prompt
        if spec.application.value != sc.application:
            self._reflection_record(sc, reflected, "the revised intent tests another application")
            return None, prompt  # reflection may not change what is tested
        if spec.map != root.spec.map:  # nor where: it edits how hard and when (a re-parse may draw another town)
            spec = parse_spec({**spec_to_dict(spec), "map": root.spec.map.model_dump(mode="json")})
        try:
            cand = self._run_candidates(sc, [Candidate(spec, "reflection")])[0]
        except FailedPrecondition as exc:
            self._reflection_record(sc, reflected, str(exc))
            return None, reflected.revised_prompt
        self._reflection_record(sc, reflected, refused, applied)
        self._stage(sc, "search", f"after reflection {sc.reflection_rounds}")
        return cand, reflected.revised_prompt

    def _reflection_record(self, sc: ScenarioProgress, reflected: Reflected | None, reason: str,
                           applied: str = "") -> None:
        """This round in ``sc.reflections`` (GetCampaign's ScenarioProgress.reflections): what the reflector
        answered, what ran from it ("edits", "revised_prompt", or "" = nothing) and why not the edits."""
        sc.reflections.append({
            "round": sc.reflection_rounds, "diagnosis": reflected.diagnosis if reflected else "",
            "rule_ids": list(reflected.rule_ids) if reflected else [],
            "edits": [{"path": p, "value": v, "rule": r} for p, v, r in reflected.edits] if reflected else [],
            "applied": applied, "reason": reason})


    def _edited(self, sc: ScenarioProgress, spec: ScenarioSpec, edits: tuple[tuple[str, Any, str], ...]
                ) -> tuple[ScenarioSpec | None, str]:
        """The root spec with the reflector's field edits, when it is the same test (application, map, each
        fault's operator and stream) and verifies without an error, and ""; else None and why (journaled: the
        words are parsed instead)."""
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
        return edited, why


__all__ = ["OBSERVABILITY_CHECKS", "CampaignRequest", "CampaignRunner", "CandidateErrored", "Event", "LeaseLost",
           "ScenarioProgress", "observability_repairs", "repair_text", "verifier_repaired"]
