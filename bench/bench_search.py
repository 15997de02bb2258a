"""Search benchmarks (issue 12): yield per budget with the gate on and off, minimization cost against the
paper's greedy delta debugging, and the campaign loop's execution rate against the simulator's own.

    python bench/bench_search.py [--budget 150] [--apps IMA,RLVW] [--witnesses 6] [--seed 1]

Everything runs in one process on the real cores (parser, verifier, paired simulator with the V2X
stack), with the reference scenes of ``services/simulator/reference.py`` plus one fault, on the
synthetic crossing (the paper's search ran on its stub backend). Figures printed side by side:

1. yield: admitted executions and distinct catalogue keys per ``--budget`` candidates, gate on vs
   off (paper, Appendix E: IMA 29.0 vs 15.3 admitted executions per 150), and how many candidates
   the gated search needs to reach the paper's count;
2. minimization: predicate calls per witness (median, p90), executions, cache hit rate, for our
   shrinker and for the paper's greedy one-at-a-time weakening on the same admitted specs; our calls
   with and without the refinement steps, and witnesses the refinement changed, before and after;
3. overhead: executions/s through the campaign loop vs ``run_batch`` (what ExecuteBatch runs) on the
   same programs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import ScenarioSpec, parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.core.timeline import fault_window_s
from services.search.core import SearchCore, validate_request
from services.search.pipeline import InProcessPipeline
from services.search.settings import SearchSettings
from services.search.shrink import CachedPredicate, Shrinker, Verdict, greedy_minimize
from services.simulator.execute import SimulatorLimits, run_batch, run_batch_on_workers, run_one
from services.simulator.reference import faulted_reference_spec

PAPER_YIELD = {"IMA": (29.0, 15.3)}  # admitted executions per 150 candidates, gate on / off (Appendix E)

def seed_spec(app: str, seed: int) -> ScenarioSpec:
    return faulted_reference_spec(Application(app), seed=seed)


def campaign(core: SearchCore, spec: ScenarioSpec, budget: int, gate: bool, seed: int) -> tuple[dict[str, Any], float]:
    req = validate_request(settings=core.settings, specs=[spec], seed=seed, budget_per_scenario=budget, gate=gate,
                           minimize=False, reflection_rounds=0)
    t0 = time.perf_counter()
    view = core.wait(core.start(req).id)
    return view.summary | {"id": view.id}, time.perf_counter() - t0


def admitted_specs(core: SearchCore, campaign_id: str) -> tuple[list[ScenarioSpec], list[int], list[ScenarioSpec]]:
    """(admitted specs, candidate index of each admission, every dispatched spec) from the journal."""
    dispatched: dict[str, ScenarioSpec] = {}
    order: list[ScenarioSpec] = []
    admitted, at = [], []
    n = 0
    for _, kind, p in core.store.journal(campaign_id):
        if kind == "dispatch":
            dispatched[p["execution_id"]] = parse_spec(p["spec"])
            order.append(dispatched[p["execution_id"]])
        if kind in ("dispatch", "gated", "ungroundable"):
            n += 1
        if kind == "admitted":
            admitted.append(dispatched[p["execution_id"]])
            at.append(n)
    return admitted, at, order


def shrink_costs(specs: list[ScenarioSpec], bisect: bool, refine: bool = True,
                 witnesses: list[ScenarioSpec] | None = None) -> list[tuple[int, int, int]]:
    """(predicate calls, executions, cache hits) of our shrinker on each spec (real paired runs); the witnesses
    are appended to ``witnesses`` when given."""
    out = []
    for spec in specs:
        def key(s: ScenarioSpec) -> Any:
            p = program_from_spec_on_straight_roads(s)
            return p.model_dump_json(), p.seed

        def run(s: ScenarioSpec, k: Any) -> Verdict:
            o, _ = run_one(program_from_spec_on_straight_roads(s), None, SimulatorLimits())
            return Verdict.ADMITTED if o.admitted else Verdict.NOT_ADMITTED

        r = Shrinker(CachedPredicate(key, run), bisect=bisect, refine=refine).run(spec)
        out.append((r.calls, r.runs, r.hits))
        if witnesses is not None:
            witnesses.append(r.spec)
    return out


def greedy_costs(specs: list[ScenarioSpec]) -> list[int]:
    def admits(s: ScenarioSpec) -> bool:
        try:
            return run_one(program_from_spec_on_straight_roads(s), None, SimulatorLimits())[0].admitted
        except Exception:
            return False
    return [greedy_minimize(spec, admits)[1] for spec in specs]


DISTRACTOR = {"name": "drop_map_blip", "operator": "drop", "stream": "MAP", "probability": 0.1, "duration_s": 1.0}


def with_distractor(spec: ScenarioSpec) -> ScenarioSpec:
    d = spec.model_dump(mode="json")
    d["faults"] = [*d["faults"], DISTRACTOR]
    return parse_spec(d)


def admitted(spec: ScenarioSpec) -> bool:
    return run_one(program_from_spec_on_straight_roads(spec), None, SimulatorLimits())[0].admitted


def fault_text(spec: ScenarioSpec) -> str:
    """A witness's faults as people read them: operator, strength, window (scenario seconds)."""
    out = []
    for f in spec.faults:
        start, end = fault_window_s(spec, f)
        strength = next((f"{k}={getattr(f, k)}" for k in ("magnitude", "probability", "burst_count")
                         if getattr(f, k) is not None), "")
        out.append(f"{f.operator.value} {strength} [{start:.3g}, {end:.3g}) s "
                   f"({f.anchor.event.value} {f.anchor.offset_s:+g} s)")
    return "; ".join(out)


def p90(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(round(0.9 * len(xs))) - 1)] if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=150)
    ap.add_argument("--apps", default="IMA,RLVW")
    ap.add_argument("--witnesses", type=int, default=6, help="admitted specs per app to minimize")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-search-"))
    core = SearchCore(InProcessPipeline(synthetic_grounding=True, trace_dir=tmp / "t"),
                      SearchSettings(data_dir=tmp / "s", max_campaigns_running=1))
    # the worker pool starts here (spawn, imports: ~1 s), not in the first campaign's first generation: the loop's
    # rate below is steady state, as the pool it is compared with
    warm = [program_from_spec_on_straight_roads(seed_spec(a, 0)) for a in ("IMA", "RLVW")] * 8
    run_batch_on_workers(warm, [None] * len(warm), SimulatorLimits())
    print(f"== yield per {args.budget} candidates (reference scene + one fault, synthetic crossing, V2X source)")
    print(f"{'app':<6} {'gate':<5} {'admitted':>8} {'keys':>5} {'gated':>6} {'runs':>5} {'wall s':>7} "
          f"{'runs/s':>7}  first admission at / paper's count reached at")
    to_shrink: dict[str, list[ScenarioSpec]] = {}
    loop_rates: list[tuple[float, list[ScenarioSpec]]] = []
    for app in args.apps.split(","):
        spec = seed_spec(app, args.seed)
        rows = {}
        for gate in (True, False):
            s, wall = campaign(core, spec, args.budget, gate, args.seed)
            (sc,) = s["scenarios"]
            adm, at, order = admitted_specs(core, s["id"])
            paper = PAPER_YIELD.get(app, (None, None))[0 if gate else 1]
            reach = at[int(paper) - 1] if paper is not None and len(at) >= paper else None
            rows[gate] = sc["admitted_executions"]
            print(f"{app:<6} {'on' if gate else 'off':<5} {sc['admitted_executions']:>8} {len(sc['keys']):>5} "
                  f"{sc['gated']:>6} {sc['executions']:>5} {wall:>7.1f} {sc['executions'] / wall:>7.2f}  "
                  f"{at[0] if at else '-'} / {reach if reach else '-'}"
                  + (f" (paper {paper:g} per 150)" if paper is not None else ""))
            if gate:
                seen, picked = set(), []
                for a in adm:
                    k = a.model_dump_json()
                    if k not in seen:
                        seen.add(k)
                        picked.append(a)
                to_shrink[app] = picked[: args.witnesses]
                loop_rates.append((sc["executions"] / wall, order, s["execution_s"] / wall))
        print(f"{'':<6} gate on/off admitted ratio: {rows[True] / max(1, rows[False]):.2f}x")

    print("\n== minimization cost per witness (same admitted specs; real paired runs; cost = executions)")
    print("   'ours' = cached shrinker (paper's weakenings + dropping behaviours); '+bisect' adds the binary search;")
    print("   'greedy' = the paper's one-at-a-time weakening, no cache; '+distractor' = the same failures with one")
    print("   more (harmless) fault, as a parsed intent often carries")
    print(f"{'app':<6} {'variant':<12} {'n':>3} {'ours runs med/p90':>18} {'calls med':>10} {'hit rate':>9} "
          f"{'+bisect runs med':>17} {'greedy runs med/p90':>20} {'ours/greedy':>12}")
    calls_of: list[tuple[str, str, list[int], list[int], list[int]]] = []
    examples: list[tuple[str, ScenarioSpec, ScenarioSpec]] = []
    for app, specs in to_shrink.items():
        if not specs:
            print(f"{app:<6} (no admitted failure to minimize)")
            continue
        variants = {"as found": specs, "+distractor": [s for s in (with_distractor(x) for x in specs) if admitted(s)]}
        for name, group in variants.items():
            if not group:
                continue
            fine: list[ScenarioSpec] = []
            coarse: list[ScenarioSpec] = []
            ours = shrink_costs(group, bisect=False, witnesses=fine)
            unrefined = shrink_costs(group, bisect=False, refine=False, witnesses=coarse)
            bis = shrink_costs(group, bisect=True)
            greedy = greedy_costs(group)
            runs = [r for _, r, _ in ours]
            hit = sum(h for _, _, h in ours) / max(1, sum(c for c, _, _ in ours))
            print(f"{app:<6} {name:<12} {len(group):>3} {statistics.median(runs):>10.1f} / {p90(runs):<5.0f} "
                  f"{statistics.median([c for c, _, _ in ours]):>10.1f} {hit:>9.2f} "
                  f"{statistics.median([r for _, r, _ in bis]):>17.1f} "
                  f"{statistics.median(greedy):>12.1f} / {p90(greedy):<5.0f} "
                  f"{statistics.median(runs) / max(1e-9, statistics.median(greedy)):>11.2f}x")
            calls_of.append((app, name, [c for c, _, _ in ours], [c for c, _, _ in unrefined],
                             [c for c, _, _ in bis]))
            examples += [(app, a, b) for a, b in zip(coarse, fine, strict=True) if a != b][:2]
    print("\n== predicate calls per witness (issue 39: must not rise when the shrinker changes; 'ours' refines by "
          "default, '-refine' without the refinement steps)")
    for app, name, calls, coarse_calls, bis_calls in calls_of:
        print(f"{app:<6} {name:<12} ours {calls} (total {sum(calls)}, mean {statistics.mean(calls):.2f}); "
              f"-refine {coarse_calls} (total {sum(coarse_calls)}, mean {statistics.mean(coarse_calls):.2f}); "
              f"+bisect {bis_calls} (total {sum(bis_calls)})")
    for app, coarse_w, fine_w in examples:
        print(f"{app:<6} witness -refine: {fault_text(coarse_w)}\n{'':<6} witness  refined: {fault_text(fine_w)}")

    print("\n== orchestration overhead: campaign loop vs the simulator's batch on the same programs")
    for rate, order, busy in loop_rates:
        programs = [program_from_spec_on_straight_roads(s) for s in order[:64]]
        t0 = time.perf_counter()
        run_batch(programs, [None] * len(programs), SimulatorLimits())
        batch_rate = len(programs) / (time.perf_counter() - t0)
        t0 = time.perf_counter()  # what ExecuteBatch runs, and the loop's pipeline: the worker pool (CPU limit)
        run_batch_on_workers(programs, [None] * len(programs), SimulatorLimits())
        pool_rate = len(programs) / (time.perf_counter() - t0)
        print(f"campaign loop {rate:.2f} executions/s ({busy:.0%} of its wall time inside the simulator) on "
              f"{len(programs)} of its programs vs run_batch in one process {batch_rate:.2f} paired/s: loop/batch = "
              f"{rate / batch_rate:.2f}x; vs run_batch_on_workers ({SimulatorLimits().worker_count()} workers, as "
              f"the loop) {pool_rate:.2f} paired/s: loop/pool = {rate / pool_rate:.2f}x")
    core.close()


if __name__ == "__main__":
    main()
