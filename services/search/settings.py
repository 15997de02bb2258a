"""Search settings: every knob of a campaign, with its unit, default and source.

One frozen dataclass, read once (``SearchSettings.from_env``) and passed down; each
field's metadata carries its unit and where the default comes from (LAST-V2X
Appendix E for the search constants), and a test enforces that every field has both.
A campaign request may lower the per-scenario budget, the reflection rounds and the
concurrency; it may never exceed the caps here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from lastv2x.core.settings import fields_from_env
from services.search.discovery import parse_service_ref


def _param(default: Any, unit: str, source: str) -> Any:
    return field(default=default, metadata={"unit": unit, "source": source})


ENV_PREFIX = "LASTV2X_SEARCH_"


@dataclass(frozen=True)
class SearchSettings:
    elite_size: int = _param(8, "scenarios", "LAST-V2X Appendix E, Table 7: elite set of eight")
    candidates_per_scenario: int = _param(
        120, "candidates", "LAST-V2X Appendix E: up to 120 candidates per scenario, gated mutants included")
    max_candidates_per_scenario: int = _param(
        2000, "candidates", "cap on a request's budget: keeps one campaign from holding the simulators for hours")
    reflection_rounds: int = _param(5, "rounds", "LAST-V2X Appendix E: up to five LLM-reflection rounds per scenario")
    max_reflection_rounds: int = _param(10, "rounds", "cap on a request's reflection rounds")
    stall_candidates: int = _param(
        16, "candidates",
        "reflect when this many executed candidates in a row did not improve the best failure margin; "
        "chosen so that five rounds fit in the paper's 120-candidate budget")
    mutations_per_child: int = _param(2, "operators", "at most this many mutation operators per child (1..n, uniform)")
    generation_size: int = _param(
        16, "candidates", "children drawn per generation, from the elite set the previous generations left: what a "
        "seeded campaign runs depends on it, not on K or the replica count. A generation goes to the simulator as "
        "one batch; a scenario's budget still spans at least 8 generations of at least 4 (campaign.generation_size: "
        "4 at a budget of 16, 15-16 at 120-150). 16 vs 4: 1.4x the executions/s on the held-out campaigns at "
        "budget 150, admissions 61 vs 62 of 102")
    in_flight_per_replica: int = _param(
        16, "executions", "K: executions sent together to one simulator replica within a generation, as one "
        "ExecuteBatch (speed only: results are consumed in dispatch order); K x replicas >= generation_size "
        "sends a whole generation at once")
    max_intents: int = _param(64, "scenarios", "cap on intents + specs in one campaign request")
    max_campaigns_running: int = _param(4, "campaigns", "campaigns executed at once by one search replica")
    max_campaign_candidates: int = _param(
        4000, "candidates", "cap on one campaign's total budget, scenarios x budget_per_scenario (each is capped on "
        "its own, the product was not: 64 x 120 = 7,680 executions); 4000 = 33 intents at the paper's 120")
    max_caller_candidates: int = _param(
        8000, "candidates", "cap on the total budget of one caller's queued and running campaigns on a search "
        "replica (the caller: its mTLS certificate's common name, else its address); a request past it is "
        "RESOURCE_EXHAUSTED naming this limit until one ends")
    shrink_max_calls: int = _param(
        200, "predicate calls", "stall budget of delta debugging per witness (the result is 1-minimal only if "
        "it finishes below it; the certificate says which)")
    shrink_bisect: bool = _param(
        False, "-", "after the paper's weakenings reach a fixed point, binary-search magnitudes and windows for the "
        "smallest value that still admits: smaller witnesses for more executions (bench/bench_search.py measures it)")
    gate: bool = _param(True, "-", "LAST-V2X §2.5: every mutant passes the analytic verifier before it may run; "
                        "off only for the ablation")
    data_dir: Path = _param(Path(".lastv2x/search"), "-",
                            "one directory: SQLite (WAL) database, witness traces written to a temp name then renamed")
    db: str = field(default="", repr=False, metadata={  # repr=False: the URL may carry a password
        "unit": "URL", "source": "postgresql://user:password@host:port/dbname (psycopg 3, extra 'postgres'): "
        "campaigns, journal, ledger, catalogue, witnesses and leases in PostgreSQL, shared by search replicas; "
        "traces stay under data_dir/traces (a shared volume); empty = SQLite under data_dir"})
    lease_ttl_s: int = _param(30, "s", "a campaign's lease lasts this long unless its search replica renews it; "
                              "then another replica takes the campaign over (renew every ttl/3)")
    llm_target: str = _param("", "host:port", "LlmService (ParseIntent, Reflect); empty = the llm core in-process")
    grounding_target: str = _param("", "host:port", "GroundingService (Ground); empty = the grounding core in-process")
    simulator_targets: str = _param(
        "", "host:port,...", "SimulatorService replicas, comma-separated, or one dns:/// name resolved with "
        "round_robin (a headless Service); empty = the simulator core in-process")
    simulator_endpointslices: str = _param(
        "", "namespace/service", "in a cluster: watch this Service's EndpointSlices (kubernetes client, extra 'k8s', "
        "in-cluster service account allowed get/list/watch on endpointslices) and add / drain a channel per ready "
        "simulator pod as pods come and go; SIMULATOR_TARGETS serves while none is ready; empty = off")
    execution_retry_s: int = _param(
        60, "s", "an execution whose replica is unavailable, past the deadline or full is re-sent to the next "
        "replica (doubling backoff from 0.25 s, at most 2 s apart) while less than this has passed since it was "
        "submitted: a killed simulator restarted within it (a supervisor, a Deployment) costs the campaign "
        "nothing; bounded by time, not by a count of attempts")
    rpc_timeout_s: int = _param(120, "s", "deadline of each call to another service; an execution past it is "
                                "UNAVAILABLE (retried within execution_retry_s, then it fails the campaign with the reason)")
    verify_backend: str = _param("", "backend name", "re-verify every new witness on this simulator backend "
                                 "(ExecuteRequest.backend, e.g. sumo) and store the verdict with it "
                                 "(record cross_check); empty = off")

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, int) and not isinstance(value, bool) and value < 1:
                raise ValueError(f"{ENV_PREFIX}{f.name.upper()} must be >= 1, got {value}")
        if self.candidates_per_scenario > self.max_candidates_per_scenario:
            raise ValueError("candidates_per_scenario exceeds max_candidates_per_scenario")
        if self.db and not self.db.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"{ENV_PREFIX}DB must be a postgresql:// URL or empty (SQLite under "
                             f"{ENV_PREFIX}DATA_DIR), got a value starting {self.db.split(':', 1)[0]!r}")
        targets = {"LLM_TARGET": self.llm_target, "GROUNDING_TARGET": self.grounding_target,
                   "SIMULATOR_TARGETS": self.simulator_targets}
        if any(targets.values()) and not all(targets.values()):
            missing = [ENV_PREFIX + k for k, v in targets.items() if not v]
            raise ValueError(f"set {', '.join(missing)} too: the search service calls all of its peers over gRPC "
                             "or none (all unset = the cores in-process)")

        if self.simulator_endpointslices:
            try:
                parse_service_ref(self.simulator_endpointslices)
            except ValueError as exc:
                raise ValueError(f"{ENV_PREFIX}SIMULATOR_ENDPOINTSLICES: {exc}") from None
            if not self.simulator_targets:
                raise ValueError(f"{ENV_PREFIX}SIMULATOR_ENDPOINTSLICES needs {ENV_PREFIX}SIMULATOR_TARGETS (and the "
                                 "other peers): the replicas used while discovery has found none")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> SearchSettings:
        """``LASTV2X_SEARCH_<FIELD>`` variables (e.g. ``LASTV2X_SEARCH_DATA_DIR``), then ``overrides``."""
        kwargs = fields_from_env(cls, os.environ if env is None else env, ENV_PREFIX)
        kwargs.update(overrides)
        return cls(**kwargs)

    def with_(self, **changes: Any) -> SearchSettings:
        return replace(self, **changes)


__all__ = ["ENV_PREFIX", "SearchSettings"]
