"""gRPC servicer of the search service: parse request -> call ``SearchCore`` -> build reply.

The pipeline behind the core is chosen from the settings: with ``llm_target``,
``grounding_target`` and ``simulator_targets`` set (as the local stack and the
Kubernetes manifests do) every stage is a gRPC call to its service; with none set,
the service cores run in this process (one pod does everything: handy for a laptop).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import grpc

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.spec import parse_spec
from lastv2x.rpc.convert import (
    outcome_json_to_proto,
    program_to_proto,
    spec_from_proto,
    spec_to_proto,
)
from lastv2x.rpc.server import call_ended
from lastv2x.v1 import common_pb2, search_pb2, search_pb2_grpc
from services.search.campaign import Event
from services.search.core import CampaignView, SearchCore, validate_request, witness_program
from services.search.pipeline import InProcessPipeline, Pipeline
from services.search.settings import SearchSettings
from services.search.store import WitnessRow

if TYPE_CHECKING:
    from services.search.discovery import EndpointSliceWatcher
    from services.search.remote import GrpcPipeline

_STATES = {"queued": common_pb2.CAMPAIGN_STATE_QUEUED, "running": common_pb2.CAMPAIGN_STATE_RUNNING,
           "done": common_pb2.CAMPAIGN_STATE_DONE, "failed": common_pb2.CAMPAIGN_STATE_FAILED,
           "cancelled": common_pb2.CAMPAIGN_STATE_CANCELLED}


def _app(name: str) -> int:
    return common_pb2.Application.Value(f"APPLICATION_{name}") if name else 0


def repair_to_proto(r: dict[str, Any]) -> common_pb2.SpecRepair:
    """A repair record of a scenario (``campaign.observability_repairs``) as its message; values as JSON."""
    return common_pb2.SpecRepair(
        check=r["check"], message=r.get("message", ""), description=r["description"], applied=bool(r["applied"]),
        reason=r.get("reason", ""), origin=r.get("origin", ""),
        changes=[common_pb2.SpecRepairChange(field=p["field"], from_json=json.dumps(p.get("from")),
                                             value_json=json.dumps(p["value"])) for p in r["patch"]])


def reflection_to_proto(r: dict[str, Any]) -> common_pb2.ScenarioReflection:
    """A reflection record of a scenario (``ScenarioProgress.reflections``) as its message; values as JSON."""
    return common_pb2.ScenarioReflection(
        round=r["round"], diagnosis=r.get("diagnosis", ""), rule_ids=r.get("rule_ids", []),
        applied=r.get("applied", ""), reason=r.get("reason", ""),
        edits=[common_pb2.SpecEdit(path=e["path"], value_json=json.dumps(e["value"]), rule=e.get("rule", ""))
               for e in r.get("edits", [])])


def reflection_from_proto(m: common_pb2.ScenarioReflection) -> dict[str, Any]:
    """The reflection record ``reflection_to_proto`` sent."""
    return {"round": m.round, "diagnosis": m.diagnosis, "rule_ids": list(m.rule_ids),
            "edits": [{"path": e.path, "value": json.loads(e.value_json or "null"), "rule": e.rule} for e in m.edits],
            "applied": m.applied, "reason": m.reason}


def repair_from_proto(m: common_pb2.SpecRepair) -> dict[str, Any]:
    """The repair record ``repair_to_proto`` sent: what ``campaign.repair_text`` and the tables read."""
    return {"check": m.check, "message": m.message, "description": m.description,
            "patch": [{"field": c.field, "from": json.loads(c.from_json or "null"),
                       "value": json.loads(c.value_json or "null")} for c in m.changes],
            "applied": m.applied, "reason": m.reason, "origin": m.origin}


def campaign_to_proto(view: CampaignView) -> common_pb2.Campaign:
    req, s = view.request, view.summary
    msg = common_pb2.Campaign(
        id=view.id, state=_STATES[view.state], intents=req.get("intents", []), seed=req.get("seed", 0),
        budget_per_scenario=req.get("budget_per_scenario", 0), reflection_rounds=req.get("reflection_rounds", 0),
        executions=s.get("executions", 0), admitted=s.get("admitted", 0), witness_ids=s.get("witness_ids", []),
        reason=view.reason, candidates=s.get("candidates", 0), budget_total=s.get("budget_total", 0),
        distinct_keys=s.get("distinct_keys", 0), created_unix_s=view.created_unix_s,
        elapsed_s=s.get("elapsed_s", 0.0), errored=s.get("errored", 0), coverage_gaps=s.get("coverage_gaps", 0),
        distinct_failures=s.get("distinct_failures", 0))
    for sc in s.get("scenarios", []):
        p = msg.scenarios.add(
            index=sc["index"], source=sc["source"], intent=sc["intent"], application=_app(sc["application"]),
            stage=sc["stage"], candidates=sc["candidates"], executions=sc["executions"],
            shrink_executions=sc["shrink_executions"], gated=sc["gated"],
            admitted_executions=sc["admitted_executions"], reflection_rounds=sc["reflection_rounds"],
            witness_ids=sc["witness_ids"], faults_left=sc["faults_left"], distinct_keys=len(sc["keys"]),
            duplicate_keys=sc["duplicate_keys"], flaky=sc["flaky"], error=sc["error"], errored=sc.get("errored", 0),
            unparsed_clauses=sc.get("unparsed_clauses", []), coverage_gaps=sc.get("coverage_gaps", 0),
            repairs=[repair_to_proto(r) for r in sc.get("repairs", [])],
            reflections=[reflection_to_proto(r) for r in sc.get("reflections", [])])
        if sc["admitted_initially"] is not None:
            p.admitted_initially = sc["admitted_initially"]
        if sc["best_margin"] is not None and math.isfinite(sc["best_margin"]):
            p.best_margin = sc["best_margin"]
        if sc["first_admitted_at"] is not None:
            p.first_admitted_at = sc["first_admitted_at"]
    return msg


def witness_to_proto(w: WitnessRow) -> common_pb2.Witness:
    r = w.record
    key = r["key"]
    cert = r["certificate"]
    msg = common_pb2.Witness(
        id=w.id, spec=spec_to_proto(parse_spec(r["spec"])),
        program=program_to_proto(witness_program(w)),
        outcome=outcome_json_to_proto(w.outcome_json, _archive_id(w.trace_path)),
        catalog_key=common_pb2.CatalogKey(application=_app(key["application"]),  # type: ignore[arg-type]
                                          fault_family=key["fault_family"],
                                          penetration_band=key["penetration_band"],
                                          conflict_geometry=key["conflict_geometry"]),
        reduction_steps=cert["steps"], created_unix_s=int(w.created_unix_s), campaign_id=w.campaign_id,
        seed=r["seed"], intent=r.get("intent", ""), found_spec=spec_to_proto(parse_spec(r["found_spec"])),
        certificate_complete=cert["complete"],
        trace_uri=_archive_id(w.trace_path),
        grounding_json=json.dumps(r.get("grounding")), replicas=r.get("replicas", []))
    for e in cert["weakenings"]:
        msg.certificate.add(pass_name=e["pass"], description=e["weakening"], verdict=e["verdict"])
    return msg


def _archive_id(trace_path: str) -> str:
    """A witness trace as replies name it: its id in the archive (``traces/<sha256>.mcap``), never a path on
    the server (``lastv2x report`` / ``regress`` resolve it under the archive folder)."""
    return f"traces/{PurePosixPath(trace_path.replace(chr(92), '/')).name}" if trace_path else ""


def _event(e: Event) -> search_pb2.ProgressEvent:
    msg = search_pb2.ProgressEvent(kind=e.kind, scenario=e.scenario, candidates_done=e.candidates_done,
                                   budget_total=e.budget_total, executions_done=e.executions_done,
                                   admitted=e.admitted)
    if e.eta_s is not None:
        msg.eta_s = e.eta_s
    return msg


class SearchServicer(search_pb2_grpc.SearchServiceServicer):
    def __init__(self, core: SearchCore):
        self._core = core

    def StartCampaign(self, request: search_pb2.StartCampaignRequest, context: grpc.ServicerContext
                      ) -> search_pb2.StartCampaignResponse:
        specs = [spec_from_proto(s, f"specs[{i}]") for i, s in enumerate(request.specs)]
        o = request.options
        req = validate_request(
            intents=list(request.intents), specs=specs, seed=request.seed,
            budget_per_scenario=request.budget_per_scenario,
            reflection_rounds=o.reflection_rounds if o.HasField("reflection_rounds") else None,
            in_flight=o.concurrency, gate=not o.disable_gate, stop_at_first_admission=o.stop_at_first_admission,
            minimize=not o.skip_minimization, app=o.app, allow_partial=o.allow_partial,
            budget_in_executions=o.budget_in_executions, settings=self._core.settings)
        return search_pb2.StartCampaignResponse(campaign=campaign_to_proto(self._core.start(req, _caller(context))))

    def WatchCampaign(self, request: search_pb2.WatchCampaignRequest, context: grpc.ServicerContext
                      ) -> Iterator[search_pb2.WatchCampaignResponse]:
        for event, view in self._core.watch(_id(request.campaign_id), stop=lambda: call_ended(context)):
            if call_ended(context):
                return
            yield search_pb2.WatchCampaignResponse(campaign=campaign_to_proto(view), event=event.message,
                                                   progress=_event(event))

    def GetCampaign(self, request: search_pb2.GetCampaignRequest, context: grpc.ServicerContext
                    ) -> search_pb2.GetCampaignResponse:
        return search_pb2.GetCampaignResponse(campaign=campaign_to_proto(self._core.get(_id(request.campaign_id))))

    def CancelCampaign(self, request: search_pb2.CancelCampaignRequest, context: grpc.ServicerContext
                       ) -> search_pb2.CancelCampaignResponse:
        return search_pb2.CancelCampaignResponse(
            campaign=campaign_to_proto(self._core.cancel(_id(request.campaign_id))))

    def ResumeCampaign(self, request: search_pb2.ResumeCampaignRequest, context: grpc.ServicerContext
                       ) -> search_pb2.ResumeCampaignResponse:
        return search_pb2.ResumeCampaignResponse(
            campaign=campaign_to_proto(self._core.resume(_id(request.campaign_id))))

    def ListCampaigns(self, request: search_pb2.ListCampaignsRequest, context: grpc.ServicerContext
                      ) -> search_pb2.ListCampaignsResponse:
        if request.limit < 0:
            raise InvalidArgument(FieldViolation("limit", "negative limit", "0 = 100"))
        return search_pb2.ListCampaignsResponse(
            campaigns=[campaign_to_proto(v) for v in self._core.list_campaigns(request.limit or 100)])

    def ListWitnesses(self, request: search_pb2.ListWitnessesRequest, context: grpc.ServicerContext
                      ) -> search_pb2.ListWitnessesResponse:
        app = _application(request.application)
        return search_pb2.ListWitnessesResponse(
            witnesses=[witness_to_proto(w) for w in self._core.witnesses(request.campaign_id, app)])

    def GetWitness(self, request: search_pb2.GetWitnessRequest, context: grpc.ServicerContext
                   ) -> search_pb2.GetWitnessResponse:
        return search_pb2.GetWitnessResponse(
            witness=witness_to_proto(self._core.witness(_id(request.witness_id, "witness_id"))))

    def ReplayWitness(self, request: search_pb2.ReplayWitnessRequest, context: grpc.ServicerContext
                      ) -> search_pb2.ReplayWitnessResponse:
        r = self._core.replay(_id(request.witness_id, "witness_id"), request.backend)
        return search_pb2.ReplayWitnessResponse(outcome=outcome_json_to_proto(r.outcome_json), identical=r.identical,
                                                admitted=r.admitted, archived_outcome_sha256=r.archived_sha256,
                                                archived=outcome_json_to_proto(r.archived_json), backend=r.backend)


def _caller(context: grpc.ServicerContext) -> str:
    """Who asks, for the per-caller cap: the mTLS client certificate's common name, else the peer's host."""
    try:
        names = context.auth_context().get("x509_common_name") or []
    except Exception:  # noqa: BLE001 - a context without an auth context (tests' fakes)
        names = []
    if names:
        return "cn:" + names[0].decode(errors="replace")
    peer = context.peer() or ""
    return peer.rsplit(":", 1)[0] if peer.startswith(("ipv4:", "ipv6:")) else peer


def _application(value: int) -> str:
    """A ListWitnesses filter: "" for unset, else the application's name; an unknown number is the client's."""
    if not value:
        return ""
    if value not in common_pb2.Application.values():
        known = ", ".join(n for n in common_pb2.Application.keys() if not n.endswith("UNSPECIFIED"))
        raise InvalidArgument(FieldViolation("application", f"unknown application {value}", f"one of {known}"))
    return common_pb2.Application.Name(value).removeprefix("APPLICATION_")


def _id(value: str, name: str = "campaign_id") -> str:
    if not value.strip():
        raise InvalidArgument(FieldViolation(name, "empty id", f"take it from StartCampaign / List{'Witnesses' if 'witness' in name else 'Campaigns'}"))
    return value.strip()


class SearchCollector:
    """Prometheus view of the search core, read at each scrape: what the simulator autoscaler
    (HPA on an external metric, or KEDA) scales on, and what an operator watches."""

    GAUGES = {"campaigns_running": "campaigns being run by this replica",
              "pending_executions": "candidates not yet settled in running campaigns (the autoscaling signal)",
              "in_flight_executions": "executions dispatched to simulators and not yet answered"}
    COUNTERS = {"executions": "paired executions run by campaigns of this replica",
                "admitted": "admitted executions",
                "retries": "executions re-sent to another simulator replica"}

    def __init__(self, core: SearchCore):
        self._core = core

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        stats = self._core.stats()
        for name, doc in self.GAUGES.items():
            yield GaugeMetricFamily(f"lastv2x_search_{name}", doc, value=stats[name])
        for name, doc in self.COUNTERS.items():
            yield CounterMetricFamily(f"lastv2x_search_{name}", doc, value=stats[name])


def pipeline_for(settings: SearchSettings) -> Pipeline:
    """gRPC peers when targets are configured, else the cores in-process."""
    if settings.llm_target or settings.grounding_target or settings.simulator_targets:
        from services.search.remote import GrpcPipeline

        pipeline = GrpcPipeline(settings.llm_target, settings.grounding_target, settings.simulator_targets,
                                timeout_s=settings.rpc_timeout_s, retry_window_s=settings.execution_retry_s)
        if settings.simulator_endpointslices:
            watch_simulator_replicas(pipeline, settings)
        return pipeline
    return InProcessPipeline(trace_dir=settings.data_dir / "staging")


def watch_simulator_replicas(pipeline: GrpcPipeline, settings: SearchSettings, api: Any = None
                             ) -> EndpointSliceWatcher:
    """Feed ``pipeline`` the ready simulator pods of ``settings.simulator_endpointslices`` as they come and
    go (a started watcher, stopped by ``pipeline.close()``); while none is ready, the static
    ``simulator_targets`` serve. ``api``: a ``DiscoveryV1Api`` (tests); None = in-cluster config."""
    from services.search.discovery import EndpointSliceWatcher, parse_service_ref
    from services.search.remote import split_targets

    namespace, service = parse_service_ref(settings.simulator_endpointslices)
    fallback = split_targets(settings.simulator_targets)
    pipeline.replica_server_name = service  # under TLS a pod address is verified as its Service's name

    def on_change(added: frozenset[str], removed: frozenset[str]) -> None:
        pipeline.set_replicas(sorted(watcher.endpoints) or fallback)

    watcher = (EndpointSliceWatcher.in_cluster(namespace, service, on_change) if api is None
               else EndpointSliceWatcher(api, namespace, service, on_change))
    pipeline.on_close(watcher.stop)
    return watcher.start()


def register(server: grpc.Server, settings: SearchSettings | None = None, core: SearchCore | None = None
             ) -> list[str]:
    """Add the search service; ``settings`` are read once in ``main`` (None: the defaults), ``core`` a ready
    one (tests)."""
    if core is None:
        settings = settings or SearchSettings()
        core = SearchCore(pipeline_for(settings), settings)
        core.resume_unfinished(at_start=True)  # campaigns this replica was running when it stopped
        core.take_over_periodically()  # and those another replica stops renewing (a shared archive)
    metrics = getattr(server, "metrics", None)
    if metrics is not None:
        metrics.registry.register(SearchCollector(core))
    search_pb2_grpc.add_SearchServiceServicer_to_server(SearchServicer(core), server)
    return [search_pb2.DESCRIPTOR.services_by_name["SearchService"].full_name]
