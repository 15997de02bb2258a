"""Campaigns against a team's application: over loopback gRPC (the example server), witnesses
record the build; an app that fails a step is an application error and the campaign goes on;
an app that does not answer is refused at StartCampaign naming it."""

from __future__ import annotations

import pytest

from lastv2x.core.errors import InvalidArgument
from lastv2x_app.example_app import ContractServicer, MinimalRlvw
from services.search.core import SearchCore, validate_request
from services.simulator.apps.contract import ReferenceApp
from tests.search.conftest import rlvw_failing_spec


def _run(core: SearchCore, **kw):  # type: ignore[no-untyped-def]
    return core.wait(core.start(validate_request(settings=core.settings, **kw)).id, timeout_s=300)


def test_a_campaign_against_the_example_server_archives_witnesses_with_its_build(search_core, served) -> None:
    target = served(MinimalRlvw())
    view = _run(search_core, specs=[rlvw_failing_spec()], seed=3, budget_per_scenario=3, app=target)
    assert view.state == "done", view.reason
    (w,) = search_core.witnesses(view.id)
    assert w.record["app"] == {"name": "example-minimal-rlvw", "version": "1.0", "digest": "sha256:-",
                               "target": target}
    assert [f["name"] for f in w.record["spec"]["faults"]] == ["freeze_spat"]
    replay = search_core.replay(w.id)  # replays on the build it was found on, where it is plugged in
    assert replay.admitted and replay.identical


def test_reference_witnesses_record_the_reference_build(search_core) -> None:
    view = _run(search_core, specs=[rlvw_failing_spec(0)], seed=3, budget_per_scenario=2)
    (w,) = search_core.witnesses(view.id)
    assert w.record["app"]["name"] == "lastv2x-reference" and w.record["app"]["digest"].startswith("sha256:")


class _FailsOnRlvw(ContractServicer):
    def Step(self, request, context):  # type: ignore[no-untyped-def, override]
        reply = super().Step(request, context)
        if request.step == 30:
            for d in reply.decisions:
                d.error = "division by zero in decide()"
        return reply


def test_application_errors_are_outcomes_and_the_campaign_goes_on(search_core, served) -> None:
    target = served(_FailsOnRlvw(ReferenceApp()))
    view = _run(search_core, specs=[rlvw_failing_spec(0), rlvw_failing_spec(1)], seed=1, budget_per_scenario=3,
                reflection_rounds=0, app=target)
    assert view.state == "done", view.reason
    assert [sc["stage"] for sc in view.summary["scenarios"]] == ["done", "done"]
    assert view.summary["admitted"] == 0 and not search_core.witnesses(view.id)


def test_an_app_that_does_not_answer_is_refused_at_start_naming_it(search_core) -> None:
    with pytest.raises(InvalidArgument) as err:
        _run(search_core, specs=[rlvw_failing_spec(0)], seed=1, budget_per_scenario=2, app="grpc://127.0.0.1:1")
    (v,) = err.value.violations
    assert v.field == "options.app" and "grpc://127.0.0.1:1" in v.description
    assert search_core.list_campaigns() == []  # nothing stored, nothing run


def test_a_malformed_app_is_refused_before_anything_is_stored(search_core) -> None:
    with pytest.raises(InvalidArgument) as err:
        validate_request(settings=search_core.settings, specs=[rlvw_failing_spec(0)], app="grpc://a b")
    assert err.value.violations[0].field == "options.app"
