"""Campaigns on a user's own words: the held-out campaign intents run as campaigns (issue 31's targets).

    .venv/bin/python bench/bench_campaigns.py [--budget 150] [--limit N] [--every K] [--seed 1]

Each intent of ``bench/data/parse_campaign_heldout.jsonl`` (written from a test engineer's side,
apart from the parser's dev set) runs as its own in-process campaign on embedded defaults
(offline parser, built-in maps, reference applications, stop at the first admission). Printed:
per intent, how the parse went (whole / partial: the scenario fails naming the clause), whether a
failure was admitted as written or after search and at which candidate, witnesses, coverage
gaps; then the targets: the share of fault intents that admit a witness within the budget, fault
witnesses on healthy intents (the bar: 0), and distinct failures per 1,000 executions. Slow
(a campaign per intent): not part of ``make bench``; ``--limit`` / ``--every`` take a subset.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELDOUT = ROOT / "bench" / "data" / "parse_campaign_heldout.jsonl"


def stated_ineffective(text: str) -> str:
    """Why the intent describes no effective mechanism, else '': every fault it states is one the verifier shows
    ineffective (an ERROR) with no version of the same operator in the same direction that passes (the campaign's
    repaired search step, ``services.search.repairs.verifier_repaired``: a 0.25 s delay is a weak version of an
    effective mechanism, a crossing car reported behind where it is is the safe side of one)."""
    from lastv2x.core.verifier import Severity, verify
    from services.llm.config import LlmConfig
    from services.llm.roles import LlmRoles
    from services.search.repairs import verifier_repaired

    try:
        spec = LlmRoles(config=LlmConfig()).parse_intent(text, 1).spec
    except Exception:  # an intent the parser refuses: the campaign reports it
        return ""
    why = []
    for fault in spec.faults:
        alone = spec.model_copy(update={"faults": (fault,)})
        errors = [f.message for f in verify(alone).findings if f.severity is Severity.ERROR]
        if not errors or verifier_repaired(alone)[0] is not None:
            return ""
        why.append(errors[0])
    return "; ".join(why)[:160]


def run(intents: list[dict], budget: int, seed: int) -> list[dict]:
    from lastv2x_app.campaigns import local_core
    from services.search.core import validate_request

    rows = []
    for item in intents:
        tmp = Path(tempfile.mkdtemp(prefix="bench-campaign-"))
        core = local_core(tmp)
        start = time.perf_counter()
        try:
            req = validate_request(settings=core.settings, intents=[item["text"]], seed=seed,
                                   budget_per_scenario=budget, stop_at_first_admission=True, reflection_rounds=2)
            view = core.wait(core.start(req).id, timeout_s=1800)
            (sc,) = view.summary["scenarios"]
            rows.append({"id": item["id"], "kind": item["kind"], "expected_app": item["labels"].get("application"),
                         "state": sc["stage"], "error": sc["error"][:120], "app": sc["application"],
                         "admitted_initially": sc["admitted_initially"], "first_admitted_at": sc["first_admitted_at"],
                         "witnesses": len(sc["witness_ids"]), "coverage_gaps": sc.get("coverage_gaps", 0),
                         "errored": sc.get("errored", 0),
                         "executions": sc["executions"] + sc["shrink_executions"],
                         "distinct_failures": view.summary.get("distinct_failures", 0),
                    "stated_ineffective": stated_ineffective(item["text"]),
                         "seconds": round(time.perf_counter() - start, 1)})
        finally:
            core.close()
            shutil.rmtree(tmp, ignore_errors=True)
        r = rows[-1]
        found = ("as written" if r["admitted_initially"] else f"at candidate {r['first_admitted_at']}") \
            if r["witnesses"] else ("no (coverage gap)" if r["admitted_initially"] else "no")
        print(f"{r['id']} {r['kind']:<11} {r['app'] or '?':<5} {r['state']:<6} admitted: {found:<16} "
              f"witnesses {r['witnesses']}, coverage gaps {r['coverage_gaps']}, {r['executions']} runs, "
              f"{(str(r['errored']) + ' errored, ') if r['errored'] else ''}"
              f"{r['seconds']} s {('| ' + r['error']) if r['error'] else ''}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=150)
    ap.add_argument("--limit", type=int, default=0, help="first N intents of the subset (0 = all)")
    ap.add_argument("--every", type=int, default=1, help="every K-th intent (a spread subset)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None, help="write the rows here")
    ap.add_argument("--data", type=Path, default=HELDOUT,
                    help="intents (JSONL); bench/data/parse_campaign_fresh.jsonl was written after the parser fixes "
                         "and the campaign defaults, and tuned on by neither: the out-of-sample figure")
    args = ap.parse_args()
    intents = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()][::args.every]
    if args.limit:
        intents = intents[:args.limit]
    rows = run(intents, args.budget, args.seed)
    faults = [r for r in rows if r["kind"] == "fault"]
    healthy = [r for r in rows if r["kind"] == "healthy"]
    admitted = [r for r in faults if r["witnesses"]]
    partial = [r for r in faults if r["state"] == "failed" and "could not read" in r["error"]]
    executions = sum(r["executions"] for r in rows)
    distinct = sum(r["distinct_failures"] for r in rows)
    print(f"\n{len(rows)} campaigns, budget {args.budget}, seed {args.seed}:")
    print(f"  fault intents admitting a witness: {len(admitted)} / {len(faults)}"
          f" ({100 * len(admitted) / max(1, len(faults)):.0f} %; target >= 80 % of those with an effective mechanism);"
          f" stopped on a clause the parser could not read: {len(partial)}")
    # the target's denominator: intents that describe an effective mechanism, i.e. the parser read the whole
    # intent (a clause it could not read names no operator we have) and the verifier does not show the fault
    # as stated to be ineffective. The verifier judges the stated values in the world the spec describes, with
    # its defaults for what the intent leaves open: a verdict of "ineffective" on an intent admitted as written
    # would be a verifier error; one admitted after the search moved an unstated value (an arrival, a speed)
    # is the search doing its job, the stated values kept
    for r in faults:  # the parser refused a fault on a stream or field the application never reads
        if r["state"] == "failed" and any(w in r["error"] for w in ("never consumes", "does not read")):
            r["stated_ineffective"] = r["stated_ineffective"] or r["error"]
    effective = [r for r in faults if r not in partial and not r["stated_ineffective"]]
    ineffective = [r for r in faults if r["stated_ineffective"]]
    print(f"  of those describing an effective mechanism: {sum(1 for r in effective if r['witnesses'])} / "
          f"{len(effective)} ({100 * sum(1 for r in effective if r['witnesses']) / max(1, len(effective)):.0f} %; "
          f"target >= 80 %); the verifier shows {len(ineffective)} ineffective as stated, of which "
          f"{sum(1 for r in ineffective if r['witnesses'] and r['admitted_initially'])} admitted as written "
          f"(must be 0) and {sum(1 for r in ineffective if r['witnesses'] and not r['admitted_initially'])} after "
          "the search moved what the intent leaves open")
    for r in ineffective:
        print(f"    {r['id']} {r['expected_app']}: {r['stated_ineffective']}")
    by_app: dict[str, list[int]] = {}
    for r in faults:
        tally = by_app.setdefault(r["expected_app"] or "?", [0, 0])
        tally[0] += bool(r["witnesses"])
        tally[1] += 1
    print("  per application: " + ", ".join(f"{a} {n}/{m}" for a, (n, m) in by_app.items()))
    print(f"  healthy intents with a fault witness: {sum(1 for r in healthy if r['witnesses'])} / {len(healthy)}"
          f" (bar 0); their coverage gaps: {sum(r['coverage_gaps'] for r in healthy)}")
    print(f"  candidates that errored (a simulator or grounding bug; bar 0): {sum(r['errored'] for r in rows)}")
    print(f"  distinct failures per 1,000 executions: {1000 * distinct / max(1, executions):.1f}"
          f" ({distinct} in {executions} executions)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
