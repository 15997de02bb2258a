"""A tiny application-under-test server: what a team runs to put its V2X app under test.

    python -m lastv2x_app.example_app --port 50070 [--build minimal|reference|mutant:ID]
    lastv2x campaign "red-light warning when the SPaT feed freezes before amber" --app grpc://127.0.0.1:50070

It serves ``lastv2x.v1.ApplicationUnderTestService`` (``protos/lastv2x/v1/application.proto``):
``Describe`` (build and contract version), ``Open`` (one session per rollout), ``Step`` (every
running row of a batch: the ego's state and what its V2X stack reconstructed -> one decision
per row), ``Close``. Any language with gRPC can do the same. Builds:

* ``minimal`` — :class:`MinimalRlvw`, a red-light warning written straight against the
  messages (no platform code): at the stopping distance, stop on a fresh believed red or an
  amber that ends before the bar, else proceed; latched per session until the bar is passed;
* ``reference`` — the platform's six reference apps behind the wire (the same outcome bytes
  as in-process: ``tests/simulator/test_app_contract.py``);
* ``mutant:ID`` — a reference app with one of STRaP's mutants (``services.strap.mutants``):
  a deliberately broken build for regression runs.
"""

from __future__ import annotations

import argparse
import math
import signal
import threading
from collections.abc import Iterable
from concurrent import futures
from typing import Any

import grpc

from lastv2x.core.catalogue import Application
from lastv2x.v1 import application_pb2 as pb
from lastv2x.v1 import application_pb2_grpc as pb_grpc
from lastv2x.v1 import common_pb2
from services.simulator.apps.base import Decision
from services.simulator.apps.contract import (
    CONTRACT_VERSION,
    INPUT_RAW,
    AppBuild,
    ApplicationUnderTest,
    DecideFnApp,
    ReferenceApp,
    StepRow,
    input_mode,
)
from services.simulator.apps.remote import (
    application_to_proto,
    belief_from_proto,
    context_from_proto,
    decision_to_proto,
    ego_from_proto,
    messages_from_proto,
)

DECEL_MPS2, REACTION_S = 3.5, 1.0  # the stopping-distance model the minimal app assumes


class ContractServicer(pb_grpc.ApplicationUnderTestServiceServicer):
    """Serves any in-process :class:`ApplicationUnderTest` over the contract."""

    def __init__(self, app: ApplicationUnderTest, applications: Iterable[Application] = (),
                 contract_version: str = CONTRACT_VERSION):
        self.app, self.applications, self.contract_version = app, tuple(applications), contract_version

    def Describe(self, request: pb.DescribeRequest, context: Any) -> pb.DescribeResponse:
        b = self.app.build
        return pb.DescribeResponse(build=pb.AppBuild(name=b.name, version=b.version, digest=b.digest),
                                   contract_version=self.contract_version,
                                   applications=[application_to_proto(a) for a in self.applications],
                                   input_mode=pb.INPUT_MODE_RAW if input_mode(self.app) == INPUT_RAW
                                   else pb.INPUT_MODE_BELIEF)

    def Open(self, request: pb.OpenRequest, context: Any) -> pb.OpenResponse:
        self.app.open([(s.session_id, context_from_proto(s.context)) for s in request.sessions])
        return pb.OpenResponse()

    def Step(self, request: pb.StepRequest, context: Any) -> pb.StepResponse:
        rows = [StepRow(r.session_id, belief_from_proto(r.belief, r.ego.t_s), ego_from_proto(r.ego),
                        messages_from_proto(r.messages)) for r in request.rows]
        reply = pb.StepResponse()
        for r, dec in zip(rows, self.app.step(request.step, request.t_s, rows), strict=True):
            out = reply.decisions.add()
            if isinstance(dec, Decision):
                decision_to_proto(dec, r.session_id, out)
            else:
                out.session_id, out.error = r.session_id, dec.message
        return reply

    def Close(self, request: pb.CloseRequest, context: Any) -> pb.CloseResponse:
        self.app.close(list(request.session_ids))
        return pb.CloseResponse()


class MinimalRlvw(pb_grpc.ApplicationUnderTestServiceServicer):
    """A red-light violation warning written against the messages alone (what a team writes)."""

    def __init__(self) -> None:
        self.latched: dict[str, tuple[int, float]] = {}  # session -> (action, stop bar arc length it is about)
        self.budget_s: dict[str, float] = {}

    def Describe(self, request: pb.DescribeRequest, context: Any) -> pb.DescribeResponse:
        return pb.DescribeResponse(build=pb.AppBuild(name="example-minimal-rlvw", version="1.0", digest="sha256:-"),
                                   contract_version=CONTRACT_VERSION, applications=[common_pb2.APPLICATION_RLVW])

    def Open(self, request: pb.OpenRequest, context: Any) -> pb.OpenResponse:
        for s in request.sessions:
            self.budget_s[s.session_id] = 0.5  # SPaT older than this is no information
        return pb.OpenResponse()

    def Step(self, request: pb.StepRequest, context: Any) -> pb.StepResponse:
        reply = pb.StepResponse()
        for row in request.rows:
            reply.decisions.append(self._decide(row))
        return reply

    def _decide(self, row: pb.StepRow) -> pb.AppDecision:
        sid, ego, belief = row.session_id, row.ego, row.belief
        proceed = pb.AppDecision(session_id=sid, action=pb.APP_ACTION_PROCEED, reason="nominal")
        if not ego.HasField("stop_bar_distance_m"):
            return proceed
        d, v = ego.stop_bar_distance_m, max(ego.speed_mps, 0.1)
        bar = ego.s_m + d
        if sid in self.latched and abs(self.latched[sid][1] - bar) <= 1.0:
            return pb.AppDecision(session_id=sid, action=self.latched[sid][0], reason="latched", committed=True)
        if d > v * REACTION_S + v * v / (2 * DECEL_MPS2):
            return proceed
        sig = next((s for s in belief.signals if s.group_id == belief.ego_group_id), None)
        action, why = pb.APP_ACTION_PROCEED, "no fresh SPaT: nominal controller"
        if sig is not None and sig.valid and sig.aoi_s <= self.budget_s.get(sid, 0.5) and math.isfinite(belief.map_aoi_s):
            red = sig.phase == common_pb2.PHASE_RED
            late_amber = sig.phase == common_pb2.PHASE_AMBER and d / v >= sig.time_to_change_s
            action, why = ((pb.APP_ACTION_STOP, "believed red or amber ending before the bar") if red or late_amber
                           else (pb.APP_ACTION_PROCEED, "believed green"))
        self.latched[sid] = (action, bar)
        return pb.AppDecision(session_id=sid, action=action, reason=why, epoch=True, after_epoch=True, committed=True)

    def Close(self, request: pb.CloseRequest, context: Any) -> pb.CloseResponse:
        for sid in request.session_ids:
            self.latched.pop(sid, None)
            self.budget_s.pop(sid, None)
        return pb.CloseResponse()


def mutant_build(mutant_id: str) -> DecideFnApp:
    """The reference apps with one STRaP mutant in the application it changes (a broken build)."""
    from services.strap.mutants import affects, application_mutants

    found = [m for m in application_mutants() if m.id == mutant_id]
    if not found:
        raise SystemExit(f"no application mutant {mutant_id!r}")
    m = found[0]
    ref = ReferenceApp()
    fns = {a: ref.decide_for(a) for a in Application}
    mod = m.load()
    for a in Application:
        fn = fns[a]
        if fn is not None and fn.__module__ == m.module and affects(m, a):
            fns[a] = getattr(mod, fn.__name__)
    return DecideFnApp(AppBuild(f"mutant-{m.module.rsplit('.', 1)[-1]}", m.id, "", f"mutant:{m.id}"),
                       {a: f for a, f in fns.items() if f is not None})


def servicer_for(build: str) -> pb_grpc.ApplicationUnderTestServiceServicer:
    if build == "minimal":
        return MinimalRlvw()
    if build == "reference":
        ref = ReferenceApp()
        return ContractServicer(DecideFnApp(AppBuild("example-reference", CONTRACT_VERSION, ref.build.digest), {
            a: f for a in Application if (f := ref.decide_for(a)) is not None}))
    if build.startswith("mutant:"):
        return ContractServicer(mutant_build(build.removeprefix("mutant:")))
    raise SystemExit(f"unknown build {build!r}: minimal, reference or mutant:ID")


def serve(servicer: pb_grpc.ApplicationUnderTestServiceServicer, port: int = 0, host: str = "127.0.0.1"
          ) -> tuple[grpc.Server, int]:
    """Start a server (port 0 = any free port); returns it and its port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_ApplicationUnderTestServiceServicer_to_server(servicer, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    server.start()
    return server, bound


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lastv2x_app.example_app", description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=50070)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--build", default="minimal", help="minimal, reference or mutant:ID")
    args = ap.parse_args(argv)
    server, port = serve(servicer_for(args.build), args.port, args.host)
    print(f"application under test ({args.build}) on grpc://{args.host}:{port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.stop(1).wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
