"""The application-under-test contract: the reference apps are implementations of it (same bytes
through the batched ``step`` path, in-process and over gRPC), and a broken app is an application
error naming the app and the step, never a pass or an admitted failure."""

from __future__ import annotations

import math
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from dataclasses import replace

import grpc
import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.errors import FailedPrecondition, InvalidArgument, Unavailable
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.v1 import application_pb2 as pb
from lastv2x.v1 import simulator_pb2, simulator_pb2_grpc
from lastv2x_app.example_app import ContractServicer, MinimalRlvw, mutant_build, servicer_for
from services.simulator.apps.base import Action, AppContext, Decision
from services.simulator.apps.contract import (
    REFERENCE,
    AppBuild,
    AppFault,
    ApplicationUnderTest,
    DecideFnApp,
    ReferenceApp,
    StepRow,
    decision_problem,
)
from services.simulator.apps.plugin import resolve_app
from services.simulator.execute import SimulatorLimits
from services.simulator.paired import execute_batch, execute_paired
from services.simulator.reference import reference_program
from services.simulator.servicer import register
from services.simulator.v2x.stack import v2x_source_factory

FREEZE_BEFORE_AMBER = {
    "application": "RLVW", "seed": 7, "signal": {"offset_s": 22.353},
    "faults": [{"name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
                "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}],
}


class Batched:
    """The reference apps behind the contract's batched ``step`` only (not a DecideFnApp)."""

    def __init__(self, inner: ApplicationUnderTest | None = None):
        self.inner = inner or ReferenceApp()
        self.calls: list[int] = []  # rows per step call

    @property
    def build(self) -> AppBuild:
        return AppBuild("batched-reference", "1")

    def open(self, sessions: Sequence[tuple[str, AppContext]]) -> None:
        self.inner.open(sessions)

    def step(self, k: int, t_s: float, rows: Sequence[StepRow]) -> Sequence[Decision | AppFault]:
        self.calls.append(len(rows))
        return self.inner.step(k, t_s, rows)

    def close(self, session_ids: Sequence[str]) -> None:
        self.inner.close(session_ids)


def _freeze():
    return program_from_spec_on_straight_roads(parse_spec(FREEZE_BEFORE_AMBER))


def test_reference_apps_give_the_same_bytes_through_the_batched_contract() -> None:
    programs = [reference_program(a, seed=1) for a in Application] + [_freeze()]
    for p in programs:
        for factory in (None, v2x_source_factory()):
            kw = {} if factory is None else {"md_source_factory": factory}
            want = execute_paired(p, **kw).to_json_bytes()
            app = Batched()
            assert execute_paired(p, app=app, **kw).to_json_bytes() == want, p.application
            assert app.calls and max(app.calls) == 2  # both rollouts of the pair in one call
    app = Batched()
    batch = execute_batch(programs, app=app)
    assert [o.to_json_bytes() for o in batch] == [o.to_json_bytes() for o in execute_batch(programs)]
    assert max(app.calls) == 2 * len(programs)  # every row of the batch in one step call


def test_a_freeze_is_still_admitted_against_the_reference_app_object() -> None:
    out = execute_paired(_freeze(), md_source_factory=v2x_source_factory(), app=REFERENCE)
    assert out.admitted and not out.app_error and "app_error" not in out.to_dict()


def _failing(after_steps: int, answer) -> Batched:  # type: ignore[no-untyped-def]
    class Broken(Batched):
        def step(self, k, t_s, rows):  # type: ignore[no-untyped-def, override]
            good = super().step(k, t_s, rows)
            return good if k < after_steps else [answer(d) for d in good]
    return Broken()


@pytest.mark.parametrize("answer, says", [
    (lambda d: replace(d, action=Action.ADVISE, target_speed_mps=math.nan), "target_speed_mps nan"),
    (lambda d: replace(d, action="fly"), "unknown action 'fly'"),
    (lambda d: AppFault("segfault in decide()"), "segfault in decide()"),
    (lambda d: 42, "answered int"),
])
def test_a_decision_outside_the_contract_is_an_application_error_naming_app_and_step(answer, says) -> None:
    out = execute_paired(_freeze(), md_source_factory=v2x_source_factory(), app=_failing(50, answer))
    assert not out.admitted
    assert "batched-reference" in out.app_error and "step 50" in out.app_error and says in out.app_error
    assert '"app_error"' in out.to_json_bytes().decode()


def test_decision_problem_accepts_the_reference_decisions_and_names_what_is_wrong() -> None:
    ok = Decision(Application.GLOSA, Action.ADVISE, 1.0, "x", target_speed_mps=8.0)
    assert decision_problem(ok) is None
    assert "without target_speed_mps" in decision_problem(replace(ok, target_speed_mps=None))
    assert "brake_mps2" in decision_problem(replace(ok, action=Action.BRAKE, brake_mps2=99.0))
    assert "brake_mps2" in decision_problem(replace(ok, action=Action.BRAKE, brake_mps2=-1.0))
    assert "finite" in decision_problem(replace(ok, aoi_s=math.inf))


def test_an_in_process_build_that_raises_is_an_application_error_and_a_batch_goes_on() -> None:
    ref = ReferenceApp()

    def boom(info, ego, ctx, prev):  # type: ignore[no-untyped-def]
        if ego.t_s > 3.0:
            raise ZeroDivisionError("bad build")
        return ref.decide_for(Application.RLVW)(info, ego, ctx, prev)  # type: ignore[misc]

    fns = {a: ref.decide_for(a) for a in Application}
    app = DecideFnApp(AppBuild("team-rlvw", "0.9"), {**fns, Application.RLVW: boom})  # type: ignore[dict-item]
    programs = [_freeze(), reference_program(Application.FCW, seed=0)]
    outs = execute_batch(programs, app=app)
    assert "team-rlvw 0.9" in outs[0].app_error and "ZeroDivisionError: bad build" in outs[0].app_error
    assert not outs[0].admitted
    assert not outs[1].app_error  # the other program of the batch is unaffected
    assert outs[1].to_json_bytes() == execute_paired(programs[1]).to_json_bytes()
    missing = DecideFnApp(AppBuild("glosa-only"), {Application.GLOSA: fns[Application.GLOSA]})  # type: ignore[dict-item]
    assert "does not implement RLVW" in execute_paired(_freeze(), app=missing).app_error


def test_a_mutant_build_changes_decisions_of_its_application() -> None:
    app = mutant_build("signal:_epoch_rule:L55C4:if")  # believed red -> not a stop
    out = execute_paired(_freeze(), app=app)
    assert not out.app_error and app.build.target == "mutant:signal:_epoch_rule:L55C4:if"
    assert out.to_json_bytes() != execute_paired(_freeze()).to_json_bytes()


# ── over gRPC ───────────────────────────────────────────────────────────────
def test_reference_apps_over_grpc_give_the_in_process_bytes(served) -> None:
    target = served(servicer_for("reference"))
    app = resolve_app(target)
    assert app.build.name == "example-reference" and app.build.digest == REFERENCE.build.digest
    p = _freeze()
    factory = v2x_source_factory()
    assert (execute_paired(p, md_source_factory=factory, app=app).to_json_bytes()
            == execute_paired(p, md_source_factory=factory).to_json_bytes())
    programs = [reference_program(a, seed=2) for a in (Application.FCW, Application.GLOSA)]
    assert ([o.to_json_bytes() for o in execute_batch(programs, app=app)]
            == [o.to_json_bytes() for o in execute_batch(programs)])


def test_the_minimal_example_app_finds_the_freeze_failure_and_refuses_other_applications(served) -> None:
    app = resolve_app(served(MinimalRlvw()))
    out = execute_paired(_freeze(), md_source_factory=v2x_source_factory(), app=app)
    assert out.admitted and not out.app_error
    other = execute_paired(reference_program(Application.FCW, seed=0), app=app)
    assert "does not implement FCW" in other.app_error and "open" in other.app_error


class _Hang(ContractServicer):
    def __init__(self, after: int):
        super().__init__(ReferenceApp())
        self.after, self.release = after, threading.Event()

    def Step(self, request, context):  # type: ignore[no-untyped-def, override]
        if request.step >= self.after:
            self.release.wait(5.0)
        return super().Step(request, context)


def test_an_app_that_hangs_is_an_application_error_at_its_step(served) -> None:
    hang = _Hang(after=20)
    app = resolve_app(served(hang), step_timeout_s=0.2)
    start = time.perf_counter()
    out = execute_paired(_freeze(), app=app)
    hang.release.set()
    assert time.perf_counter() - start < 3.0
    assert "step 20" in out.app_error and "DEADLINE_EXCEEDED" in out.app_error and not out.admitted


class _Unknown(ContractServicer):
    def Step(self, request, context):  # type: ignore[no-untyped-def, override]
        reply = super().Step(request, context)
        if request.step == 7:
            reply.decisions[0].action = 42  # type: ignore[assignment]
        return reply


def test_an_unknown_action_number_is_outside_the_contract(served) -> None:
    out = execute_paired(_freeze(), app=resolve_app(served(_Unknown(ReferenceApp()))))
    assert "step 7" in out.app_error and "unknown action 42" in out.app_error and "md rollout" in out.app_error


def test_version_mismatch_and_silent_address_are_refused_before_any_run(served) -> None:
    with pytest.raises(FailedPrecondition, match="contract version '0'"):
        resolve_app(served(ContractServicer(ReferenceApp(), contract_version="0")))
    with grpc.insecure_channel("127.0.0.1:1"):
        pass
    with pytest.raises(Unavailable, match=r"grpc://127\.0\.0\.1:1 does not answer"):
        resolve_app("grpc://127.0.0.1:1", connect_timeout_s=0.3)
    with pytest.raises(InvalidArgument, match="not grpc://host:port"):
        resolve_app("grpc://nohost")
    with pytest.raises(InvalidArgument, match="no application 'acme'"):
        resolve_app("acme")


def test_a_lastv2x_apps_entry_point_is_plugged_in_process(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "acme_app.py"
    pkg.write_text(textwrap.dedent("""
        from services.simulator.apps.contract import AppBuild, ReferenceApp
        class Acme(ReferenceApp):
            @property
            def build(self):
                return AppBuild("acme-rlvw", "2.0", "sha256:acme", "acme")
    """))
    dist = tmp_path / "acme_app-2.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-app\nVersion: 2.0\n")
    (dist / "entry_points.txt").write_text("[lastv2x.apps]\nacme = acme_app:Acme\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    app = resolve_app("acme")
    assert app.build.name == "acme-rlvw"
    out = execute_paired(_freeze(), app=app)  # a DecideFnApp: the fast path
    assert out.to_json_bytes() == execute_paired(_freeze()).to_json_bytes()
    sys.modules.pop("acme_app", None)


def test_the_simulator_service_runs_a_requested_app_and_names_a_bad_one(served, tmp_path) -> None:
    target = served(servicer_for("reference"))
    limits = SimulatorLimits(trace_dir=tmp_path)
    server, port = create_server(ServerConfig("simulator", log_json=False), lambda s: register(s, limits))
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = simulator_pb2_grpc.SimulatorServiceStub(ch)
            from lastv2x.rpc.convert import program_to_proto

            req = simulator_pb2.ExecuteRequest(program=program_to_proto(_freeze()), app=target)
            reply = stub.Execute(req)
            base = stub.Execute(simulator_pb2.ExecuteRequest(program=program_to_proto(_freeze())))
            assert reply.outcome.outcome_json == base.outcome.outcome_json
            assert reply.app_build.name == "example-reference" and base.app_build.name == "lastv2x-reference"
            with pytest.raises(grpc.RpcError) as err:
                stub.Execute(simulator_pb2.ExecuteRequest(program=program_to_proto(_freeze()), app="acme"))
            assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "acme" in err.value.details()
            with pytest.raises(grpc.RpcError) as err:
                stub.Execute(simulator_pb2.ExecuteRequest(program=program_to_proto(_freeze()),
                                                          app="grpc://127.0.0.1:1"))
            assert err.value.code() is grpc.StatusCode.UNAVAILABLE and "127.0.0.1:1" in err.value.details()
            batch = simulator_pb2.ExecuteBatchRequest(requests=[
                simulator_pb2.ExecuteRequest(program=program_to_proto(_freeze()), app=target),
                simulator_pb2.ExecuteRequest(program=program_to_proto(_freeze()))])
            with pytest.raises(grpc.RpcError) as err:
                list(stub.ExecuteBatch(batch))
            assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "requests[1].app" in err.value.details()
    finally:
        server.stop(0)
    assert pb.AppBuild  # the contract's messages are importable from lastv2x.v1
