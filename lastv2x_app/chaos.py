"""``make chaos``: a campaign survives every service killed in turn; a simulator killed
mid-ExecuteBatch and STRaP killed mid-Ingest lose nothing and leave nothing half-written.

Real processes on loopback: llm, grounding, two simulator replicas and the search service
(composing them over gRPC). A clean campaign runs first with its own archive. Then the same
campaign runs against a second archive while this harness SIGKILLs and restarts, one after the
other, the llm service, the grounding service, simulator replica 0, replica 1, and the search
service (which resumes the campaign from its journal); then a third archive runs it on **one**
simulator replica, killed and restarted 3 s later (the campaign waits for it). Each archive is
compared with the clean one (issue 41): witnesses (ids, outcome bytes), their traces (content
hashes), the ledger and the journal (campaign ids aside), catalogue counts and the campaign
summary; plus 0 lost results and 0 duplicates. The harness's temp folder is removed at the end.

    python -m lastv2x_app.chaos [--budget 24] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc

from lastv2x.v1 import common_pb2, search_pb2, search_pb2_grpc
from lastv2x_app.stack import health_status

INTENTS = ["Check that red-light violation warning stays safe when the SPaT feed freezes just before amber at a "
           "signalized intersection.", "Left turn assist when the opposing vehicle's BSMs are delayed by 0.2 s"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """Service processes on loopback; each can be killed and restarted."""

    def __init__(self, root: Path):
        self.root = root
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports = {n: _free_port() for n in ("llm", "grounding", "sim0", "sim1", "search", "strap")}
        (root / "logs").mkdir(parents=True, exist_ok=True)

    def address(self, name: str) -> str:
        return f"127.0.0.1:{self.ports[name]}"

    def start(self, name: str, extra: dict[str, str] | None = None) -> None:
        module = "simulator" if name.startswith("sim") else name
        env = dict(os.environ, LASTV2X_PORT=str(self.ports[name]), LASTV2X_HOST="127.0.0.1", LASTV2X_LOG_JSON="0",
                   LASTV2X_GROUNDING_CACHE_DIR=str(self.root / "catalogue"),
                   LASTV2X_SIMULATOR_TRACE_DIR=str(self.root / f"traces-{name}"), **(extra or {}))
        log = open(self.root / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        self.procs[name] = subprocess.Popen([sys.executable, "-m", f"services.{module}"], env=env, stdout=log,
                                            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while health_status(self.address(name)) != "SERVING":
            if time.monotonic() > deadline or self.procs[name].poll() is not None:
                raise RuntimeError(f"{name} did not start; see {self.root / 'logs' / (name + '.log')}")
            time.sleep(0.1)

    def kill(self, name: str) -> None:
        p = self.procs.pop(name)
        p.send_signal(signal.SIGKILL)
        p.wait(10)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.kill(name)

    def search_env(self, data_dir: Path) -> dict[str, str]:
        return {"LASTV2X_SEARCH_LLM_TARGET": self.address("llm"),
                "LASTV2X_SEARCH_GROUNDING_TARGET": self.address("grounding"),
                "LASTV2X_SEARCH_SIMULATOR_TARGETS": f"{self.address('sim0')},{self.address('sim1')}",
                "LASTV2X_SEARCH_DATA_DIR": str(data_dir), "LASTV2X_SEARCH_RPC_TIMEOUT_S": "30",
                "LASTV2X_SEARCH_EXECUTION_RETRY_S": "120"}


def _stub(address: str) -> search_pb2_grpc.SearchServiceStub:
    return search_pb2_grpc.SearchServiceStub(grpc.insecure_channel(address))


def _start(address: str, budget: int) -> str:
    request = search_pb2.StartCampaignRequest(intents=INTENTS, seed=5, budget_per_scenario=budget,
                                              options=search_pb2.CampaignOptions(reflection_rounds=0, concurrency=2))
    return str(_stub(address).StartCampaign(request, timeout=30).campaign.id)


def _wait(address: str, campaign_id: str, on_event: Any = None, timeout_s: float = 900) -> Any:
    """Watch until the campaign ends (or ``on_event`` returns True to stop watching); its final state."""
    stub = _stub(address)
    for reply in stub.WatchCampaign(search_pb2.WatchCampaignRequest(campaign_id=campaign_id), timeout=timeout_s):
        if on_event is not None and on_event(reply):
            return None
    return stub.GetCampaign(search_pb2.GetCampaignRequest(campaign_id=campaign_id), timeout=30).campaign


def _archive(data_dir: Path) -> dict[str, str]:
    db = sqlite3.connect(data_dir / "search.db")
    try:
        return {wid: hashlib.sha256(outcome.encode()).hexdigest()
                for wid, outcome in db.execute("SELECT id, outcome_json FROM witnesses")}
    finally:
        db.close()


def _ledger_check(data_dir: Path, campaign_id: str) -> dict[str, int]:
    db = sqlite3.connect(data_dir / "search.db")
    try:
        ledger = {r[0] for r in db.execute("SELECT execution_id FROM ledger WHERE campaign_id = ?", (campaign_id,))}
        results = [json.loads(r[0])["execution_id"] for r in db.execute(
            "SELECT payload_json FROM journal WHERE campaign_id = ? AND kind = 'result' ORDER BY seq", (campaign_id,))]
    finally:
        db.close()
    return {"results": len(results), "duplicate_results": len(results) - len(set(results)),
            "lost_results": len(set(results) - ledger), "ledger_rows": len(ledger)}


def archive_state(data_dir: Path, campaign_id: str) -> dict[str, Any]:
    """What must equal a clean run's: witnesses, traces, ledger, journal, catalogue counts, summary (execution
    ids hash the campaign id, so the ledger and journal are compared by what they record, not their ids)."""
    db = sqlite3.connect(data_dir / "search.db")
    try:
        witnesses = sorted((wid, hashlib.sha256(o.encode()).hexdigest()) for wid, o in db.execute(
            "SELECT id, outcome_json FROM witnesses WHERE campaign_id = ?", (campaign_id,)))
        traces = sorted((wid, Path(t).name if t else "") for wid, t in db.execute(
            "SELECT id, trace_path FROM witnesses WHERE campaign_id = ?", (campaign_id,)))
        ledger = sorted((p, sha, seed, adm, hashlib.sha256(o.encode()).hexdigest())
                        for p, sha, seed, adm, o in db.execute(
                            "SELECT purpose, program_sha256, seed, admitted, outcome_json FROM ledger "
                            "WHERE campaign_id = ?", (campaign_id,)))
        journal = []
        for kind, payload in db.execute("SELECT kind, payload_json FROM journal WHERE campaign_id = ? ORDER BY seq",
                                        (campaign_id,)):
            if kind in ("resumed", "failed", "cancelled"):
                continue
            d = json.loads(payload)
            journal.append((kind, json.dumps({k: v for k, v in d.items() if k not in ("execution_id", "members")},
                                             sort_keys=True)))
        catalogue = sorted(db.execute("SELECT key, count FROM catalogue"))
        (summary_json,) = db.execute("SELECT summary_json FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
    finally:
        db.close()
    s = json.loads(summary_json)
    summary = {k: s.get(k) for k in ("executions", "admitted", "candidates", "distinct_keys", "witness_ids",
                                     "errored", "budget_total")}
    return {"witnesses": witnesses, "traces": traces, "ledger": ledger, "journal": journal,
            "catalogue": catalogue, "summary": summary}


def _differences(clean: dict[str, Any], other: dict[str, Any]) -> list[str]:
    return [k for k in clean if clean[k] != other.get(k)]


def run_chaos(budget: int = 24, root: Path | None = None) -> dict[str, Any]:
    made = root is None
    root = root or Path(tempfile.mkdtemp(prefix="lastv2x-chaos-"))
    try:
        return _run_chaos(budget, root)
    finally:
        if made:
            shutil.rmtree(root, ignore_errors=True)  # chaos leaves no temp folders


def _run_chaos(budget: int, root: Path) -> dict[str, Any]:
    cluster = Cluster(root)
    try:
        for name in ("llm", "grounding", "sim0", "sim1"):
            cluster.start(name)
        clean_dir, chaos_dir = root / "clean", root / "chaos"
        cluster.start("search", cluster.search_env(clean_dir))
        t0 = time.monotonic()
        clean_id = _start(cluster.address("search"), budget)
        clean = _wait(cluster.address("search"), clean_id)
        clean_s = time.monotonic() - t0
        cluster.kill("search")

        cluster.start("search", cluster.search_env(chaos_dir))
        campaign_id = _start(cluster.address("search"), budget)
        events = {"n": 0}
        kills: list[str] = []

        order = ["llm", "grounding", "sim0", "sim1"]  # then the search service itself

        def disrupt(reply: Any) -> bool:
            if reply.progress.kind != "execution":
                return False
            events["n"] += 1
            if events["n"] <= len(order):
                name = order[events["n"] - 1]
                cluster.kill(name)
                kills.append(name)
                cluster.start(name)
                return False
            return True  # time to kill the search service itself

        t0 = time.monotonic()
        final = _wait(cluster.address("search"), campaign_id, disrupt)
        if final is None:
            cluster.kill("search")
            kills.append("search")
            cluster.start("search", cluster.search_env(chaos_dir))  # resumes its unfinished campaigns
            final = _wait(cluster.address("search"), campaign_id)
        chaos_s = time.monotonic() - t0
        cluster.kill("search")

        # one simulator replica, killed and restarted 3 s later: the campaign waits for it
        single_dir = root / "single"
        cluster.start("search", {**cluster.search_env(single_dir),
                                 "LASTV2X_SEARCH_SIMULATOR_TARGETS": cluster.address("sim0")})
        single_id = _start(cluster.address("search"), budget)
        seen = {"n": 0}

        def kill_only_replica(reply: Any) -> bool:
            if reply.progress.kind == "execution":
                seen["n"] += 1
                if seen["n"] == 2:
                    cluster.kill("sim0")
                    kills.append("sim0 (the only replica)")
                    threading.Timer(3.0, lambda: cluster.start("sim0")).start()
            return False

        single = _wait(cluster.address("search"), single_id, kill_only_replica)
        clean_state = archive_state(clean_dir, clean_id)
        chaos_state, single_state = archive_state(chaos_dir, campaign_id), archive_state(single_dir, single_id)
        report = {"budget_per_scenario": budget, "kills": kills,
                  "clean": {"state": clean.state, "executions": clean.executions, "seconds": round(clean_s, 1)},
                  "chaos": {"state": final.state, "reason": final.reason, "executions": final.executions,
                            "seconds": round(chaos_s, 1)},
                  "ledger": _ledger_check(chaos_dir, campaign_id),
                  "clean_witnesses": sorted(_archive(clean_dir)), "chaos_witnesses": sorted(_archive(chaos_dir))}
        report["single_replica"] = {"state": single.state, "reason": single.reason,
                                    "differs_in": _differences(clean_state, single_state)}
        report["differs_in"] = _differences(clean_state, chaos_state)
        report["catalogue"] = {"clean": clean_state["catalogue"], "chaos": chaos_state["catalogue"]}
        report["archive_identical"] = (not report["differs_in"] and not report["single_replica"]["differs_in"]
                                       and final.state == single.state == clean.state == common_pb2.CAMPAIGN_STATE_DONE)
        return report
    finally:
        cluster.stop_all()


def run_service_kills(root: Path | None = None) -> dict[str, Any]:
    """kill -9 a simulator mid-ExecuteBatch and STRaP mid-Ingest, restart them, and check that nothing
    computed or ingested is lost and nothing is half-written."""
    from lastv2x.core.catalogue import Application
    from lastv2x.rpc.convert import program_to_proto
    from lastv2x.v1 import simulator_pb2, simulator_pb2_grpc, strap_pb2, strap_pb2_grpc
    from services.simulator.execute import SimulatorLimits, run_one
    from services.simulator.reference import reference_program

    made = root is None
    root = root or Path(tempfile.mkdtemp(prefix="lastv2x-chaos-"))
    cluster = Cluster(root)
    report: dict[str, Any] = {}
    try:
        # simulator: a batch cut off by the kill is re-asked after the restart; outcomes are the same bytes
        cluster.start("sim0")
        programs = [reference_program(app, seed=s) for s in range(3) for app in Application]
        request = simulator_pb2.ExecuteBatchRequest(
            requests=[simulator_pb2.ExecuteRequest(program=program_to_proto(p)) for p in programs])
        sim = simulator_pb2_grpc.SimulatorServiceStub(grpc.insecure_channel(cluster.address("sim0")))
        before: dict[int, str] = {}
        try:
            for reply in sim.ExecuteBatch(request, timeout=120):
                before[reply.index] = reply.outcome.outcome_json
                if len(before) == 2:
                    cluster.kill("sim0")
        except grpc.RpcError:
            pass  # the replica died under the stream
        cluster.start("sim0")
        sim = simulator_pb2_grpc.SimulatorServiceStub(grpc.insecure_channel(cluster.address("sim0")))
        after = {r.index: r.outcome.outcome_json for r in sim.ExecuteBatch(request, timeout=300)}
        report["simulator"] = {"streamed_before_kill": len(before), "rerun": len(after),
                               "identical": all(after[i] == v for i, v in before.items()),
                               "half_written": sorted(str(p) for p in root.glob("traces-sim0/**/*.part"))}
        # STRaP: a recording ingested before the kill survives it; the upload cut off leaves nothing
        trace_dir = root / "recording"
        _, uri = run_one(reference_program(Application.RLVW), None, SimulatorLimits(trace_dir=trace_dir),
                         write_trace=True)
        data = Path(uri.removeprefix("file://")).read_bytes()
        strap_dir = root / "strap"
        cluster.start("strap", {"LASTV2X_STRAP_DIR": str(strap_dir)})
        strap = strap_pb2_grpc.StrapServiceStub(grpc.insecure_channel(cluster.address("strap")))

        def upload(name: str, payload: bytes, slow: bool = False) -> Any:
            yield strap_pb2.IngestRequest(name=name)
            for k in range(0, len(payload), 4096):
                if slow:
                    time.sleep(0.01)
                yield strap_pb2.IngestRequest(chunk=payload[k:k + 4096])

        kept = strap.Ingest(upload("kept.mcap", data), timeout=60).recording.id
        big = data * 8
        stream = strap.Ingest.future(upload("cut.mcap", big, slow=True), timeout=60)
        time.sleep(0.3)
        cluster.kill("strap")
        try:
            stream.result()
        except grpc.RpcError:
            pass
        staged_before_restart = sorted(p.name for p in (strap_dir / ".incoming").glob("*"))
        cluster.start("strap", {"LASTV2X_STRAP_DIR": str(strap_dir)})
        strap = strap_pb2_grpc.StrapServiceStub(grpc.insecure_channel(cluster.address("strap")))
        reduced = strap.Reduce(strap_pb2.ReduceRequest(recording_id=kept, module="application"), timeout=120)
        report["strap"] = {"kept_recording_reduces": len(reduced.segments) > 0,
                           "staged_before_restart": staged_before_restart,
                           "staged_after_restart": sorted(p.name for p in (strap_dir / ".incoming").glob("*")),
                           "cut_upload_stored": any(p.name.startswith(hashlib.sha256(big).hexdigest()[:16])
                                                    for p in strap_dir.glob("*"))}
        return report
    finally:
        cluster.stop_all()
        if made:
            shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    r = run_chaos(args.budget)
    kills = run_service_kills()
    r["service_kills"] = kills
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        led = r["ledger"]
        print(f"killed: {', '.join(r['kills'])}\nclean run: {r['clean']}\nchaos run: {r['chaos']}\n"
              f"one replica: {r['single_replica']}\ndiffers from the clean archive in: {r['differs_in'] or 'nothing'}\n"
              f"results {led['results']}, lost {led['lost_results']}, duplicates {led['duplicate_results']}; "
              f"archive identical to the clean run: {r['archive_identical']} ({len(r['chaos_witnesses'])} witnesses)")
        sim, strap = kills["simulator"], kills["strap"]
        print(f"simulator killed mid-ExecuteBatch after {sim['streamed_before_kill']} results: re-run identical "
              f"{sim['identical']}, half-written files {len(sim['half_written'])}\n"
              f"STRaP killed mid-Ingest: the earlier recording still reduces {strap['kept_recording_reduces']}, "
              f"staging {len(strap['staged_before_restart'])} file(s) before restart, "
              f"{len(strap['staged_after_restart'])} after; the cut upload stored: {strap['cut_upload_stored']}")
    ok = r["archive_identical"] and not r["ledger"]["lost_results"] and not r["ledger"]["duplicate_results"]
    ok = ok and kills["simulator"]["identical"] and not kills["simulator"]["half_written"]
    ok = ok and kills["strap"]["kept_recording_reduces"] and not kills["strap"]["staged_after_restart"]
    ok = ok and not kills["strap"]["cut_upload_stored"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
