"""What happens to an admitted execution: admission -> witness (step 5 of ``services.search.campaign``).

An admitted execution is classified first (``admission_class``): a failure with no fault injected and no
coverage taken away is the scene's own radio, a *coverage gap*, reported apart and never a witness. Otherwise it
counts under its catalogue key; when the campaign minimizes and no equivalent failure is catalogued yet
(``_catalogued``), the spec is shrunk to a 1-minimal witness (``shrink.py``; every weakening runs like any
execution), the minimized run's failure signature is compared with the witnesses this campaign and the catalogue
hold (``_new_failure``: the same failure under another key is counted there, not archived again), and the witness
is re-checked on another replica (a flip is recorded as flaky, not archived), cross-checked on a second simulator
where ``settings.verify_backend`` names one, and archived with its trace and 1-minimality certificate.

:class:`WitnessKeeper` is a mixin of :class:`~services.search.campaign.CampaignRunner` over its plumbing
(:class:`~services.search.campaign_base.CampaignBase`).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from lastv2x.core.errors import LastV2XError
from lastv2x.core.program import ScenarioProgram, program_sha256
from lastv2x.core.spec import ScenarioSpec, spec_to_dict
from services.search.campaign_base import CampaignBase
from services.search.campaign_types import (
    NOT_A_CANDIDATE_ERROR,
    Candidate,
    CandidateErrored,
    ScenarioProgress,
)
from services.search.catalog import admission_class, catalog_key, failure_signature
from services.search.pipeline import ExecutionRequest, execution_id
from services.search.shrink import CachedPredicate, Shrinker, Ungroundable, Verdict
from services.search.store import WitnessRow


class WitnessKeeper(CampaignBase):
    """The admission -> witness half of the campaign runner (see the module docstring)."""

    def _coverage_gap(self, sc: ScenarioProgress, cand: Candidate, when: str) -> None:
        """A failure with no fault injected and no coverage taken away: the scene's own radio, reported apart."""
        sc.coverage_gaps += 1
        self._journal("coverage_gap", {"scenario": sc.index, "execution_id": cand.execution_id, "when": when})
        self._emit("coverage_gap", sc.index, f"{sc.source}: a failure with no fault injected and no coverage taken "
                                             f"away ({when}): a coverage gap of the scene, reported apart (not a "
                                             "fault witness)")

    def _admitted(self, sc: ScenarioProgress, cand: Candidate) -> None:
        declared = self._stated.get(sc.index)
        if admission_class(cand.spec, declared) == "coverage_gap":  # no fault, nothing declared: the world's radio
            self._coverage_gap(sc, cand, "as run")
            return
        sc.admitted_executions += 1
        first = sc.first_admitted_at is None
        if first:
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
            if admission_class(witness_spec, declared) == "coverage_gap":  # every fault shrank away: it never needed one
                self._coverage_gap(sc, cand, "its faults shrank away")
                # not a fault admission: the search goes on (stop_at_first_admission, reflection) as if never admitted
                sc.admitted_executions -= 1
                if first:
                    sc.first_admitted_at = None
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
            if self._record(sc, k[0], "shrink", e):
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
            # its re-check (and cross-check) ran then and are in the ledger: count them as the first run did (once:
            # a second candidate of this run that shrinks to the same witness lands here too)
            sc.shrink_executions += sum(self.store.get_execution(exec_id + s) is not None
                                        and self._count_once(exec_id + s) for s in (":recheck", ":cross_check"))
            self._witness_kept(sc, witness_id, key.text, spec, result)
            return
        # re-check on another replica where one exists; this run also writes the trace
        replicas = self.pipeline.replicas
        other = (replicas.index(first.replica) + 1) % len(replicas) if first.replica in replicas else 0
        recheck = self._wait(self.pipeline.submit(ExecutionRequest(
            program, program.seed, replica=other, write_trace=True, trace_dir=self.store.staging_dir,
            app=self.request.app)))
        if self._record(sc, exec_id + ":recheck", "recheck", recheck):
            sc.shrink_executions += 1
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
        if self._record(sc, exec_id + ":cross_check", "cross_check", e):
            sc.shrink_executions += 1
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


__all__ = ["WitnessKeeper"]
