"""Campaigns that neither die of one candidate nor depend on how many run at once (issue 42).

The search proceeds in generations, so a seeded campaign runs, admits and archives the same things
at K = 1, 4 or 16 in flight and on 1 or 3 simulator replicas answering out of order, also when
replicas come and go mid-campaign. An unexpected exception in one candidate marks it errored and
the search goes on.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lastv2x.core.spec import ScenarioSpec
from services.search.core import SearchCore, validate_request
from services.search.pipeline import Execution, ExecutionRequest, InProcessPipeline
from services.search.settings import SearchSettings
from services.simulator.reference import faulted_reference_spec
from tests.search.conftest import rlvw_failing_spec


class ScaledPipeline(InProcessPipeline):
    """The real in-process cores behind ``replicas()`` named replicas that answer after random delays,
    so results arrive out of dispatch order; ``replicas`` may change from call to call."""

    def __init__(self, replicas: Callable[[], int], **kw: Any):
        super().__init__(synthetic_grounding=True, **kw)
        self._replica_count = replicas
        self._delay = random.Random()  # deliberately unseeded: arrival order must not matter

    @property
    def replicas(self) -> tuple[str, ...]:
        return tuple(f"sim-{i}" for i in range(self._replica_count()))

    def submit(self, request: ExecutionRequest) -> Future[Execution]:
        return self.submit_batch([request])[0]

    def submit_batch(self, requests: list[ExecutionRequest]) -> list[Future[Execution]]:  # type: ignore[override]
        return [self._relayed(f) for f in super().submit_batch(requests)]

    def _relayed(self, inner: Future[Execution]) -> Future[Execution]:
        out: Future[Execution] = Future()
        names = self.replicas

        def relay(inner: Future[Execution]) -> None:
            exc = inner.exception()
            if exc is not None:
                out.set_exception(exc)
            else:
                out.set_result(replace(inner.result(), replica=names[self._delay.randrange(len(names))]))

        inner.add_done_callback(lambda f: threading.Timer(self._delay.uniform(0.0, 0.01), relay, (f,)).start())
        return out


def _campaign(tmp: Path, pipeline: InProcessPipeline, specs: list[ScenarioSpec], *, k: int,
              budget: int = 24, seed: int = 3) -> dict[str, Any]:
    core = SearchCore(pipeline, SearchSettings(data_dir=tmp / "search", stall_candidates=6))
    try:
        req = validate_request(settings=core.settings, specs=specs, seed=seed, budget_per_scenario=budget,
                               in_flight=k, reflection_rounds=0)
        view = core.wait(core.start(req).id, timeout_s=300)
        ids: dict[str, int] = {}  # execution ids hash the campaign id: compare them by first appearance

        def norm(payload: dict[str, Any]) -> dict[str, Any]:
            d = dict(payload)
            if d.get("execution_id"):
                d["execution_id"] = ids.setdefault(d["execution_id"], len(ids))
            if "members" in d:
                d["members"] = [{**m, "execution_id": ids.setdefault(m["execution_id"], len(ids))}
                                for m in d["members"]]
            return d

        journal = [(kind, norm(p)) for _, kind, p in core.store.journal(view.id)]
        witnesses = sorted((w.id, w.outcome_json, w.key) for w in core.witnesses(view.id))
        catalogue = sorted((e["key"], e["count"]) for e in core.store.catalogue())
        s = view.summary
        return {"state": view.state, "reason": view.reason, "journal": journal, "witnesses": witnesses,
                "catalogue": catalogue, "witness_ids": s["witness_ids"], "executions": s["executions"],
                "admitted": s["admitted"], "errored": s["errored"],
                "scenarios": [{k: v for k, v in sc.items() if k != "in_flight"} for sc in s["scenarios"]]}
    finally:
        core.close()


def _specs() -> list[ScenarioSpec]:
    from lastv2x.core.catalogue import Application

    return [rlvw_failing_spec(1), faulted_reference_spec(Application.IMA, seed=5)]


def test_same_campaign_at_any_k_and_replica_count(tmp_path: Path) -> None:
    calls = {"n": 0}

    def coming_and_going() -> int:  # 1, 3, 2, 1, 3, ... replicas, changing at every look
        calls["n"] += 1
        return (1, 3, 2)[calls["n"] % 3]

    runs = {
        "K=1, 1 replica": _campaign(tmp_path / "a", ScaledPipeline(lambda: 1), _specs(), k=1),
        "K=4, 3 replicas": _campaign(tmp_path / "b", ScaledPipeline(lambda: 3), _specs(), k=4),
        "K=16, 1 replica": _campaign(tmp_path / "c", ScaledPipeline(lambda: 1), _specs(), k=16),
        "K=4, replicas come and go": _campaign(tmp_path / "d", ScaledPipeline(coming_and_going), _specs(), k=4),
    }
    first = runs["K=1, 1 replica"]
    assert first["state"] == "done" and first["witnesses"], first["reason"]
    assert len(first["witness_ids"]) == len(set(first["witness_ids"]))  # each witness listed once
    for name, run in runs.items():
        for part in ("journal", "witnesses", "catalogue", "witness_ids", "executions", "admitted", "scenarios"):
            assert run[part] == first[part], f"{name}: {part} differs from K=1 on one replica"


class FlakyGrounding(InProcessPipeline):
    """Grounding that raises an untyped exception on every ``every``-th call (a transient bug), and always
    for specs ``poisoned`` says so (a deterministic bug)."""

    def __init__(self, every: int = 0, poisoned: Callable[[ScenarioSpec], bool] = lambda s: False, **kw: Any):
        super().__init__(synthetic_grounding=True, **kw)
        self.every, self.poisoned, self.calls = every, poisoned, 0

    def ground(self, spec: ScenarioSpec) -> Any:
        self.calls += 1
        if (self.every and self.calls % self.every == 0) or self.poisoned(spec):
            raise KeyError("cross")
        return super().ground(spec)


def test_grounding_that_raises_on_every_7th_call_changes_nothing(tmp_path: Path) -> None:
    clean = _campaign(tmp_path / "clean", InProcessPipeline(synthetic_grounding=True), _specs(), k=4)
    chaos = _campaign(tmp_path / "chaos", FlakyGrounding(every=7), _specs(), k=4)
    assert chaos["state"] == "done", chaos["reason"]
    for part in ("journal", "witnesses", "catalogue", "witness_ids", "executions"):
        assert chaos[part] == clean[part], part
    assert chaos["errored"] == 0  # each raised once: the retry grounded it


def test_a_candidate_that_always_raises_is_errored_and_the_search_goes_on(tmp_path: Path) -> None:
    initial = _specs()

    def poison(spec: ScenarioSpec) -> bool:  # one mutant in five, by its content: a deterministic bug
        return spec not in initial and hashlib.sha256(spec.model_dump_json().encode()).digest()[0] % 5 == 0

    pipeline = FlakyGrounding(poisoned=poison)
    run = _campaign(tmp_path / "p", pipeline, _specs(), k=4, budget=30)
    assert run["state"] == "done", run["reason"]
    assert run["errored"] > 0 and run["witnesses"]
    errored = [p for kind, p in run["journal"] if kind == "errored"]
    assert len(errored) == run["errored"]
    assert all(p["stage"] == "ground" and p["error_type"] == "KeyError" for p in errored)
    assert sum(sc["errored"] for sc in run["scenarios"]) == run["errored"]
    assert sum(sc["candidates"] for sc in run["scenarios"]) == 60  # the budget was spent, not abandoned


def test_an_errored_initial_run_fails_only_its_scenario(tmp_path: Path) -> None:
    ima = _specs()[1]
    run = _campaign(tmp_path / "i", FlakyGrounding(poisoned=lambda s: s == ima), _specs(), k=4)
    assert run["state"] == "done"
    assert run["reason"].startswith("1 of 2 scenarios failed: specs[1]") and "KeyError" in run["reason"]
    assert [sc["stage"] for sc in run["scenarios"]] == ["done", "failed"]
    assert run["witnesses"]  # the RLVW scenario's witness


def test_an_exception_while_shrinking_keeps_the_search_and_earlier_witnesses(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from services.search import campaign

    real = campaign.CampaignRunner._shrink
    calls = {"n": 0}

    def second_shrink_raises(self, sc, spec):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise ZeroDivisionError("a shrinker bug")
        return real(self, sc, spec)

    monkeypatch.setattr(campaign.CampaignRunner, "_shrink", second_shrink_raises)
    run = _campaign(tmp_path / "s", InProcessPipeline(synthetic_grounding=True), _specs(), k=4)
    assert run["state"] == "done", run["reason"]
    assert calls["n"] >= 2 and run["errored"] == 1 and run["witnesses"]
    (errored,) = [p for kind, p in run["journal"] if kind == "errored"]
    assert errored["stage"] == "shrink" and errored["error_type"] == "ZeroDivisionError"


def test_a_generation_is_the_setting_but_a_budget_spans_eight_of_at_least_four() -> None:
    """Issue 32: a generation goes to the simulator as one batch (16 by default), yet a short search keeps
    the adaptivity of small generations (make run's 16 candidates: 4 generations of 4)."""
    from services.search.campaign import generation_size

    assert [generation_size(16, b) for b in (9, 16, 40, 120, 150, 2000)] == [4, 4, 5, 15, 16, 16]
    assert generation_size(4, 150) == 4 and generation_size(1, 150) == 1 and generation_size(2, 3) == 2
