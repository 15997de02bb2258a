"""The search service core: campaigns as background jobs, their events, the witness archive.

``SearchCore`` is what the servicer and the in-process CLI call: ``start`` validates a
request (INVALID_ARGUMENT naming the field, before anything is stored) and queues a
campaign; at most ``max_campaigns_running`` run at once, each on its own thread;
``watch`` yields a campaign's events from its first one until it ends (late watchers
replay the history); ``cancel`` is safe at any moment (the runner stops between
executions; witnesses already archived stay); ``replay`` re-executes a witness and
compares outcome bytes with the archived ones.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lastv2x.core.errors import (
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    ResourceExhausted,
    Unavailable,
)
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import ScenarioSpec, parse_spec
from services.search.campaign import CampaignRequest, CampaignRunner, Event, LeaseLost
from services.search.campaign_types import GATED_ALLOWANCE
from services.search.pipeline import ExecutionRequest, Pipeline
from services.search.settings import SearchSettings
from services.search.store import CampaignRow, Repository, WitnessRow
from services.search.stores import open_store

TERMINAL = ("done", "failed", "cancelled")
MAX_IN_FLIGHT = 64
MAX_INTENT_CHARS = 4000
MAX_APP_CHARS = 256  # CampaignOptions.app (resolved by the simulator: reference, grpc://host:port, entry point)


def validate_request(*, intents: Sequence[str] = (), specs: Sequence[ScenarioSpec | dict[str, Any] | str] = (),
                     seed: int = 0, budget_per_scenario: int = 0, reflection_rounds: int | None = None,
                     in_flight: int = 0, gate: bool = True, stop_at_first_admission: bool = False,
                     minimize: bool = True, app: str = "", allow_partial: bool = False,
                     budget_in_executions: bool = False, settings: SearchSettings) -> CampaignRequest:
    """Build a CampaignRequest or raise InvalidArgument naming every bad field (0 = the default)."""
    bad: list[FieldViolation] = []
    if not intents and not specs:
        bad.append(FieldViolation("intents", "no intents and no specs", "give at least one test intent or spec"))
    if len(intents) + len(specs) > settings.max_intents:
        bad.append(FieldViolation("intents", f"{len(intents) + len(specs)} scenarios exceed the cap of "
                                             f"{settings.max_intents}", "split the campaign"))
    cleaned = []
    for i, text in enumerate(intents):
        # as written, but for trailing white space and blank lines: the parser reads a line's indentation (a YAML
        # block's nesting), the runs of spaces between a keyword's cells and the tabs between a spreadsheet row's, and
        # folds the rest itself (LlmRoles.check_text)
        t = "\n".join(filter(str.strip, (line.rstrip() for line in str(text).splitlines())))
        if not t:
            bad.append(FieldViolation(f"intents[{i}]", "empty intent", "say what to test in a sentence"))
        elif len(t) > MAX_INTENT_CHARS:
            bad.append(FieldViolation(f"intents[{i}]", f"{len(t)} characters exceed {MAX_INTENT_CHARS}",
                                      "shorten the intent"))
        cleaned.append(t)
    parsed: list[ScenarioSpec] = []
    for i, s in enumerate(specs):
        if isinstance(s, ScenarioSpec):
            parsed.append(s)
            continue
        try:
            parsed.append(parse_spec(s))
        except InvalidArgument as exc:
            bad += [FieldViolation(f"specs[{i}].{v.field}", v.description, v.hint) for v in exc.violations]
    if isinstance(seed, bool) or not 0 <= seed <= 2**63 - 1:
        bad.append(FieldViolation("seed", f"{seed} is not in [0, 2^63-1]"))
    cap = settings.max_candidates_per_scenario
    if not 0 <= budget_per_scenario <= cap:
        bad.append(FieldViolation("budget_per_scenario", f"{budget_per_scenario} is outside [1, {cap}]",
                                  f"0 = the default ({settings.candidates_per_scenario}); at most {cap}"))
    rounds = settings.reflection_rounds if reflection_rounds is None else reflection_rounds
    if not 0 <= rounds <= settings.max_reflection_rounds:
        bad.append(FieldViolation("reflection_rounds", f"{rounds} is outside [0, {settings.max_reflection_rounds}]"))
    if not 0 <= in_flight <= MAX_IN_FLIGHT:
        bad.append(FieldViolation("concurrency", f"{in_flight} is outside [1, {MAX_IN_FLIGHT}]",
                                  f"0 = the default ({settings.in_flight_per_replica} per replica)"))
    app = (app or "").strip()
    if app in ("reference",):
        app = ""
    if len(app) > MAX_APP_CHARS or any(c.isspace() or not c.isprintable() for c in app):
        bad.append(FieldViolation("options.app", f"{app[:40]!r}... is not an application name or grpc://host:port",
                                  "reference, grpc://host:port or a lastv2x.apps entry point name"))
    # with budget_in_executions a scenario may draw up to GATED_ALLOWANCE x its budget in candidates
    total = ((budget_per_scenario or settings.candidates_per_scenario) * (len(intents) + len(specs))
             * (GATED_ALLOWANCE if budget_in_executions else 1))
    if total > settings.max_campaign_candidates and not any(v.field in ("intents", "budget_per_scenario") for v in bad):
        allowance = f" x {GATED_ALLOWANCE} (budget_in_executions)" if budget_in_executions else ""
        bad.append(FieldViolation(
            "budget_per_scenario", f"{len(intents) + len(specs)} scenarios x {budget_per_scenario or settings.candidates_per_scenario} "
            f"candidates{allowance} = {total} executions exceed the campaign cap LASTV2X_SEARCH_MAX_CAMPAIGN_CANDIDATES = "
            f"{settings.max_campaign_candidates}", "lower the budget or split the intents over several campaigns"))
    if bad:
        raise InvalidArgument(bad)
    return CampaignRequest(tuple(cleaned), tuple(parsed), int(seed),
                           budget_per_scenario or settings.candidates_per_scenario, rounds,
                           in_flight or settings.in_flight_per_replica, bool(gate), bool(stop_at_first_admission),
                           bool(minimize), app, bool(allow_partial), bool(budget_in_executions))


@dataclass
class _Live:
    """A campaign this process runs: its runner, events and watchers."""

    runner: CampaignRunner
    cancel: threading.Event
    events: list[Event] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)
    state: str = "queued"
    reason: str = ""
    thread: threading.Thread | None = None


@dataclass(frozen=True)
class CampaignView:
    """A campaign as GetCampaign / ListCampaigns report it."""

    id: str
    state: str
    reason: str
    request: dict[str, Any]
    summary: dict[str, Any]
    created_unix_s: float

    @classmethod
    def from_row(cls, row: CampaignRow) -> CampaignView:
        return cls(row.id, row.state, row.reason, row.request, row.summary, row.created_unix_s)


@dataclass(frozen=True)
class Replay:
    witness_id: str
    admitted: bool
    identical: bool  # outcome bytes equal the archived ones
    outcome_json: bytes
    archived_sha256: str
    replay_sha256: str
    archived_json: bytes = b""  # the archived outcome, for a side-by-side view
    backend: str = ""  # the backend asked for ("" = the simulator's default)


def witness_program(w: WitnessRow) -> ScenarioProgram:
    """The archived program, byte for byte as it ran (its key order is part of the outcome's program hash)."""
    return ScenarioProgram.model_validate_json(w.record["program_json"])


class SearchCore:
    def __init__(self, pipeline: Pipeline, settings: SearchSettings | None = None, store: Repository | None = None):
        self.settings = settings or SearchSettings()
        self.pipeline = pipeline
        self.store = store or open_store(self.settings)
        # who drives a campaign: one replica at a time, by a lease it renews while it runs
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stopping = threading.Event()
        self._live: dict[str, _Live] = {}
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(self.settings.max_campaigns_running)
        self._callers: dict[str, str] = {}  # campaign id -> who started it (the per-caller cap)

    # ── campaigns ─────────────────────────────────────────────────────────
    def start(self, request: CampaignRequest, caller: str = "") -> CampaignView:
        """Queue a validated campaign: refused first (nothing stored, nothing run) when ``caller``'s queued and
        running campaigns would hold more than ``max_caller_candidates`` (RESOURCE_EXHAUSTED naming it), or
        when the application it names is unknown, not allowed or does not answer (INVALID_ARGUMENT at
        ``options.app``)."""
        total = request.budget_per_scenario * (len(request.intents) + len(request.specs))
        with self._lock:
            held = sum(x.runner.budget_total for cid, x in self._live.items()
                       if x.state not in TERMINAL and self._callers.get(cid) == caller)
        cap = self.settings.max_caller_candidates
        if held + total > cap:
            raise ResourceExhausted(f"caller {caller or '(in-process)'} has campaigns of {held} candidates queued or "
                                    f"running; {total} more exceed LASTV2X_SEARCH_MAX_CALLER_CANDIDATES = {cap} "
                                    "(wait for one to end, or cancel one)")
        if request.app:
            self.check_app(request.app)
        campaign_id = "c-" + uuid.uuid4().hex[:12]
        with self._lock:
            self._callers[campaign_id] = caller
        self.store.create_campaign(campaign_id, request.to_dict())
        self.store.acquire_lease(campaign_id, self.holder, self.settings.lease_ttl_s)
        self._launch(campaign_id, request)
        return self.get(campaign_id)

    def check_app(self, app: str) -> None:
        """The application a campaign names must resolve where it will run, before anything is stored or
        run: an unknown entry point, an address outside the simulator's allow-list
        (``LASTV2X_SIMULATOR_APP_ALLOW``), a scheme that is none of ours (``file:///etc/passwd``) or a server
        that does not answer is INVALID_ARGUMENT at ``options.app``. Over gRPC the simulator resolves it
        (``GrpcPipeline.check_app``: nothing runs); in-process it is resolved here, as the simulator core would."""
        check = getattr(self.pipeline, "check_app", None)
        if check is not None:
            check(app, "options.app")
            return
        from services.simulator.execute import SimulatorLimits, app_under_test

        hint = "reference, grpc://host:port on LASTV2X_SIMULATOR_APP_ALLOW, or an installed lastv2x.apps entry point"
        try:
            resolved = app_under_test(app, SimulatorLimits.from_env(), field="options.app")
        except InvalidArgument as exc:
            raise InvalidArgument([FieldViolation("options.app", v.description, v.hint or hint)
                                   for v in exc.violations]) from None
        except (Unavailable, FailedPrecondition) as exc:
            raise InvalidArgument(FieldViolation("options.app", f"application {app!r} cannot be used: {exc}",
                                                 "start the application server first, or check its address")) from None
        shutdown = getattr(resolved, "shutdown", None)
        if shutdown is not None:
            shutdown()

    def resume_unfinished(self, *, at_start: bool = False) -> list[str]:
        """Take over every campaign the store says is queued or running whose lease is free or expired
        (its replica crashed, was killed, or stopped renewing); each resumes from its journal and ledger.
        ``at_start`` on SQLite (one search replica per archive by design) takes them at once: their
        holder can only be this replica's previous life. Returns their ids."""
        resumed = []
        for row in self.store.list_campaigns(limit=10_000):
            if row.state not in ("queued", "running") or row.id in self._live:
                continue
            if at_start and self.store.engine == "sqlite":
                previous = self.store.lease_holder(row.id)
                if previous is not None:
                    self.store.release_lease(row.id, previous)
            if not self.store.acquire_lease(row.id, self.holder, self.settings.lease_ttl_s):
                continue  # another replica drives it
            self._launch(row.id, CampaignRequest.from_dict(row.request), resume=True)
            resumed.append(row.id)
        return resumed

    def resume(self, campaign_id: str) -> CampaignView:
        """Run a FAILED or CANCELLED campaign on (``ResumeCampaign``): the runner retraces its journal and
        serves what the ledger holds, so only what it had not done runs; witnesses archived stay archived.
        FAILED_PRECONDITION for a campaign that is not failed or cancelled, or that another replica drives."""
        row = self.store.get_campaign(campaign_id)  # NotFound for an unknown id
        live = self._live.get(campaign_id)
        state = live.state if live is not None else row.state
        if state not in ("failed", "cancelled") or (live is not None and live.thread is not None
                                                    and live.thread.is_alive()):
            raise FailedPrecondition(f"campaign {campaign_id} is {state}: only a failed or cancelled campaign "
                                     "resumes", "watch it with WatchCampaign" if state not in TERMINAL else
                                     "start a new campaign to search again")
        if not self.store.acquire_lease(campaign_id, self.holder, self.settings.lease_ttl_s):
            raise FailedPrecondition(f"campaign {campaign_id} is driven by {self.store.lease_holder(campaign_id)}",
                                     "ask that search replica, or wait for its lease to expire")
        self.store.append_journal(campaign_id, "resumed", {"from": state, "reason": row.reason})
        self.store.update_campaign(campaign_id, state="queued", reason="")
        self._launch(campaign_id, CampaignRequest.from_dict(row.request), resume=True)
        return self.get(campaign_id)

    def take_over_periodically(self) -> threading.Thread:
        """Every lease TTL, resume campaigns whose driving replica stopped renewing (several search
        replicas sharing one PostgreSQL archive)."""
        def loop() -> None:
            while not self._stopping.wait(self.settings.lease_ttl_s):
                try:
                    self.resume_unfinished()
                except Exception:  # noqa: BLE001 - a store hiccup must not end the loop
                    continue
        t = threading.Thread(target=loop, name="search-takeover", daemon=True)
        t.start()
        return t

    def _launch(self, campaign_id: str, request: CampaignRequest, resume: bool = False) -> None:
        cancel = threading.Event()
        live = _Live(CampaignRunner(campaign_id, request, self.pipeline, self.store, self.settings,
                                    lambda e: self._publish(campaign_id, e), cancel, resume=resume,
                                    holder=self.holder), cancel)
        with self._lock:
            self._live[campaign_id] = live
        live.thread = threading.Thread(target=self._run, args=(campaign_id,), name=f"campaign-{campaign_id}",
                                       daemon=True)
        live.thread.start()

    def _run(self, campaign_id: str) -> None:
        live = self._live[campaign_id]
        with self._slots:
            if live.cancel.is_set():
                self._finish(campaign_id, "cancelled", "cancelled before it started")
                return
            self._set_state(campaign_id, "running", "")
            try:
                state, reason = live.runner.run()
            except LeaseLost:  # another replica took the campaign over: it writes the ending, not us
                with self._lock:
                    self._live.pop(campaign_id, None)
                return
            except Exception as exc:  # a bug must not leave the campaign 'running' forever
                state, reason = "failed", f"internal error: {type(exc).__name__}: {exc}"
            self._finish(campaign_id, state, reason)
            self.store.release_lease(campaign_id, self.holder)

    def _set_state(self, campaign_id: str, state: str, reason: str) -> None:
        live = self._live[campaign_id]
        self.store.update_campaign(campaign_id, state=state, reason=reason, summary=live.runner.summary())
        with live.changed:
            live.state, live.reason = state, reason
            live.changed.notify_all()

    def _finish(self, campaign_id: str, state: str, reason: str) -> None:
        """Store the final state, then publish the final event and the state together, so a watcher
        sees the terminal state on the terminal event and never misses it."""
        live = self._live[campaign_id]
        r = live.runner
        self.store.update_campaign(campaign_id, state=state, reason=reason, summary=r.summary())
        final = Event(state, -1, f"campaign {state}" + (f": {reason}" if reason else ""),
                      r.candidates_done, r.budget_total, r.executions_done, r.admitted, 0.0)
        with live.changed:
            live.state, live.reason = state, reason
            live.events.append(final)
            live.changed.notify_all()

    def _publish(self, campaign_id: str, event: Event) -> None:
        live = self._live[campaign_id]
        if event.kind in ("witness", "admitted", "failed", "reflection"):
            self.store.update_campaign(campaign_id, summary=live.runner.summary())
        with live.changed:
            live.events.append(event)
            live.changed.notify_all()

    def get(self, campaign_id: str) -> CampaignView:
        row = self.store.get_campaign(campaign_id)
        live = self._live.get(campaign_id)
        view = CampaignView.from_row(row)
        if live is not None:  # fresher than the row while running
            view = CampaignView(row.id, live.state, live.reason, row.request, live.runner.summary(),
                                row.created_unix_s)
        return view

    def list_campaigns(self, limit: int = 100) -> list[CampaignView]:
        return [self.get(r.id) if r.id in self._live else CampaignView.from_row(r)
                for r in self.store.list_campaigns(limit)]

    def cancel(self, campaign_id: str) -> CampaignView:
        self.store.get_campaign(campaign_id)  # NotFound for an unknown id
        live = self._live.get(campaign_id)
        if live is not None:
            live.cancel.set()
        return self.get(campaign_id)

    def watch(self, campaign_id: str, timeout_s: float | None = None, stop: Callable[[], bool] | None = None,
              poll_s: float = 0.5) -> Iterator[tuple[Event, CampaignView]]:
        """Every event of the campaign from the first, then new ones as they happen, until it ends
        (or ``stop()``, asked every ``poll_s`` while no event comes: the watcher went away; ``timeout_s``
        applies without ``stop``)."""
        row = self.store.get_campaign(campaign_id)
        live = self._live.get(campaign_id)
        if live is None:  # ended in an earlier process: one event with its final state
            view = CampaignView.from_row(row)
            s = view.summary
            yield Event(row.state, -1, f"campaign {row.state}", s.get("candidates", 0), s.get("budget_total", 0),
                        s.get("executions", 0), s.get("admitted", 0), 0.0), view
            return
        sent = 0
        while True:
            with live.changed:
                while sent >= len(live.events) and live.state not in TERMINAL:
                    if stop is None:
                        if not live.changed.wait(timeout_s):
                            return
                    elif stop() or not live.changed.wait(poll_s) and stop():
                        return
                batch = live.events[sent:]
                ended = live.state in TERMINAL
            for e in batch:
                yield e, self.get(campaign_id)
            sent += len(batch)
            if ended and sent >= len(live.events):
                return

    def wait(self, campaign_id: str, timeout_s: float | None = None) -> CampaignView:
        live = self._live.get(campaign_id)
        if live is not None and live.thread is not None:
            live.thread.join(timeout_s)
        return self.get(campaign_id)

    def stats(self) -> dict[str, float]:
        """What the search service exports to Prometheus (read at scrape time)."""
        live = list(self._live.values())
        running = [x for x in live if x.state not in TERMINAL]
        return {"campaigns_running": len(running),
                "pending_executions": sum(x.runner.pending for x in running),
                "in_flight_executions": sum(s.in_flight for x in running for s in x.runner.scenarios),
                "executions": sum(x.runner.executions_done for x in live),
                "admitted": sum(x.runner.admitted for x in live),
                "retries": float(getattr(self.pipeline, "retries", 0))}

    # ── witnesses ─────────────────────────────────────────────────────────
    def witnesses(self, campaign_id: str = "", application: str = "") -> list[WitnessRow]:
        if campaign_id:
            self.store.get_campaign(campaign_id)
        return self.store.list_witnesses(campaign_id, application)

    def witness(self, witness_id: str) -> WitnessRow:
        return self.store.get_witness(witness_id)

    def replay(self, witness_id: str, backend: str = "") -> Replay:
        """Re-execute an archived witness; ``identical`` = the outcome bytes equal the archived ones.
        ``backend``: re-verify on another simulator (then only ``admitted`` is expected to hold)."""
        w = self.store.get_witness(witness_id)
        program = witness_program(w)
        app = (w.record.get("app") or {}).get("target", "")  # the build it was found on, where it is plugged in
        e = self.pipeline.submit(ExecutionRequest(program, int(w.record["seed"]), app="" if app == "reference" else app,
                                                  backend=backend.strip())).result()
        backend_refused = [v for v in e.refused_violations if v.field == "backend"]
        if backend_refused:  # the simulator has no such backend: the request's fault, not the witness's
            raise InvalidArgument(backend_refused)
        if e.refused:
            raise FailedPrecondition(f"witness {witness_id!r} no longer runs: {e.refused}",
                                     "the simulator's limits or maps changed since it was archived")
        return Replay(witness_id, e.admitted, e.outcome_json == w.outcome_json, e.outcome_json,
                      hashlib.sha256(w.outcome_json).hexdigest(), e.outcome_sha256, w.outcome_json, backend.strip())

    def close(self) -> None:
        self._stopping.set()
        for live in list(self._live.values()):
            live.cancel.set()
        for live in list(self._live.values()):
            if live.thread is not None:
                live.thread.join(30)
        self.pipeline.close()
        self.store.close()


__all__ = ["CampaignView", "Replay", "SearchCore", "TERMINAL", "validate_request", "witness_program"]
