"""Search at scale (issue 15): executions/s with 1 and 2 simulator replicas, yield per execution
against sequential search, executions recomputed after a replica kill, and time to resume after
a search-service restart — real processes on loopback, ratios from one run.

    python bench/bench_scale.py [--budget 40]

On this 2-core machine the search, grounding and llm processes share the cores with the
simulators, so two replicas cannot reach 2x; the efficiency line says how close they get.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import urllib.request
from pathlib import Path

import grpc

from lastv2x.v1 import search_pb2, search_pb2_grpc
from lastv2x_app.chaos import INTENTS, Cluster, _free_port

INTENTS_SCALE = [*INTENTS, "Forward collision warning when the hard-braking lead's BSMs are delayed by 0.3 s"]


def _campaign(address: str, budget: int, concurrency: int, minimize: bool = False) -> tuple[str, float, object]:
    stub = search_pb2_grpc.SearchServiceStub(grpc.insecure_channel(address))
    t0 = time.perf_counter()
    cid = stub.StartCampaign(search_pb2.StartCampaignRequest(
        intents=INTENTS_SCALE, seed=3, budget_per_scenario=budget,
        options=search_pb2.CampaignOptions(reflection_rounds=0, concurrency=concurrency,
                                           skip_minimization=not minimize)), timeout=30).campaign.id
    for _ in stub.WatchCampaign(search_pb2.WatchCampaignRequest(campaign_id=cid), timeout=1800):
        pass
    wall = time.perf_counter() - t0
    return cid, wall, stub.GetCampaign(search_pb2.GetCampaignRequest(campaign_id=cid), timeout=30).campaign


def _metric(port: int, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return next(float(line.split()[1]) for line in text.splitlines() if line.startswith(name + " "))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=40)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    cluster = Cluster(root)
    try:
        for name in ("llm", "grounding", "sim0", "sim1"):
            cluster.start(name)
        rows = {}
        for label, targets, k in (("sequential (1 replica, K=1)", "sim0", 1), ("1 replica, K=4", "sim0", 4),
                                  ("2 replicas, K=4 each", "sim0,sim1", 4)):
            env = cluster.search_env(root / f"archive-{len(rows)}")
            env["LASTV2X_SEARCH_SIMULATOR_TARGETS"] = ",".join(cluster.address(t) for t in targets.split(","))
            cluster.start("search", env)
            _, wall, c = _campaign(cluster.address("search"), args.budget, k)
            cluster.kill("search")
            rows[label] = (c.executions / wall, c.admitted / max(1, c.executions), c.executions, wall)
            print(f"{label:<30} {c.executions:>4} executions in {wall:6.1f} s = {rows[label][0]:6.2f}/s; "
                  f"admitted per execution {rows[label][1]:.3f}")
        one, two = rows["1 replica, K=4"][0], rows["2 replicas, K=4 each"][0]
        seq = rows["sequential (1 replica, K=1)"]
        print(f"scaling: 2 replicas / 1 replica = {two / one:.2f}x (efficiency {two / (2 * one):.2f}); "
              f"yield per execution vs sequential: {rows['2 replicas, K=4 each'][1] / max(1e-9, seq[1]):.2f}x")

        # recovery: kill a replica with executions in flight; count what was sent again
        metrics_port = _free_port()
        env = cluster.search_env(root / "archive-recovery")
        env["LASTV2X_METRICS_PORT"] = str(metrics_port)
        cluster.start("search", env)
        stub = search_pb2_grpc.SearchServiceStub(grpc.insecure_channel(cluster.address("search")))
        cid = stub.StartCampaign(search_pb2.StartCampaignRequest(
            intents=INTENTS_SCALE, seed=3, budget_per_scenario=args.budget,
            options=search_pb2.CampaignOptions(reflection_rounds=0, concurrency=4)), timeout=30).campaign.id
        seen = 0
        for reply in stub.WatchCampaign(search_pb2.WatchCampaignRequest(campaign_id=cid), timeout=1800):
            if reply.progress.kind == "execution":
                seen += 1
                if seen == 5:
                    in_flight = _metric(metrics_port, "lastv2x_search_in_flight_executions")
                    cluster.kill("sim0")
                    kill_in_flight = in_flight
                if seen == 10:
                    break
        retries_after_kill = _metric(metrics_port, "lastv2x_search_retries_total")
        print(f"replica kill: {kill_in_flight:.0f} executions in flight when killed (up to K=4 on it); "
              f"{retries_after_kill:.0f} re-sent to the other replica")
        t_kill = time.perf_counter()
        cluster.kill("search")
        cluster.start("sim0")
        cluster.start("search", env)  # resumes the campaign from its journal
        started = time.perf_counter()
        first_event = None
        for _reply in stub.WatchCampaign(search_pb2.WatchCampaignRequest(campaign_id=cid), timeout=1800):
            if first_event is None:
                first_event = time.perf_counter()
        print(f"search restart: process up {started - t_kill:.2f} s after the kill (interpreter + imports); "
              f"campaign resumed and streaming {first_event - started if first_event else float('nan'):.2f} s later")
    finally:
        cluster.stop_all()


if __name__ == "__main__":
    main()
