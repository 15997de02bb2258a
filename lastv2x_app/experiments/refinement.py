"""LAST-V2X §3.5, scenario refinement at scale: the fault intents of ``bench/data/parse_intents.jsonl`` as one
in-process campaign (``lastv2x_app.campaigns.local_core`` + ``services.search.core.validate_request``: offline
parser, built-in maps, V2X stack, stop at the first admission, reflection after a fruitless search, delta
debugging): admitted as written (before) and after refinement, split by what found the admission (the bounded
search before any reflection, or a reflected prompt), and the faults left in each 1-minimal witness."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from lastv2x_app.experiments import ROOT, Progress, Row, command, table

SECTION = "LAST-V2X §3.5"
TITLE = "refinement: admitted before / after, by search and by reflection"
PAPER = "50-scene fault suite: admitted 7 → 32; search finds 23 of 43 targets, reflection rescues 8; witnesses 1-minimal, one fault"
INTENTS = ROOT / "bench" / "data" / "parse_intents.jsonl"


def run(quick: bool, progress: Progress, *, tiny: bool = False) -> Row:
    from lastv2x_app.campaigns import local_core
    from services.search.core import validate_request

    items = [json.loads(x) for x in INTENTS.read_text().splitlines() if x.strip()]
    items = [i for i in items if i["kind"] == "fault"]
    items = items[:1] if tiny else items[::5] if quick else items[:50]
    budget = 4 if tiny else 30 if quick else 60
    rounds = 0 if tiny else 2
    tmp = Path(tempfile.mkdtemp(prefix="experiments-refine-"))
    core = local_core(tmp)
    try:
        req = validate_request(settings=core.settings, intents=[i["text"] for i in items], seed=1,
                               budget_per_scenario=budget, stop_at_first_admission=True, reflection_rounds=rounds)
        cid = core.start(req).id
        progress(f"campaign over {len(items)} fault intents, budget {budget} each, {rounds} reflection round(s)")
        view = core.wait(cid, timeout_s=3600)
        scenarios = view.summary["scenarios"]
        sizes = Counter(len(w.record["spec"]["faults"]) for w in core.witnesses(cid))
    finally:
        core.close()
        shutil.rmtree(tmp, ignore_errors=True)
    before = sum(1 for s in scenarios if s["admitted_initially"])
    after = sum(1 for s in scenarios if s["admitted_executions"] > 0 or s["admitted_initially"])
    targets = [s for s in scenarios if s["admitted_initially"] is False and s["stage"] != "failed"]
    by_search = sum(1 for s in targets if s["admitted_executions"] > 0 and s["reflection_rounds"] == 0)
    by_reflection = sum(1 for s in targets if s["admitted_executions"] > 0 and s["reflection_rounds"] > 0)
    failed = [s for s in scenarios if s["stage"] == "failed"]
    ours = (f"{len(items)} fault intents: admitted {before} → {after}; search finds {by_search} of {len(targets)} "
            f"targets, reflection rescues {by_reflection}; witness faults left {dict(sorted(sizes.items()))}"
            + (f"; {len(failed)} intent(s) did not ground (not targets)" if failed else ""))
    why = ("Our suite is the parse benchmark's fault intents (written for the offline parser, many already "
           "effective as written), not the paper's 50 initially ineffective tests, and our search budget per "
           f"scenario is {budget} candidates; reflection is the offline reflector's rules, not an LLM. Intents that do "
           "not ground on our maps (table) fail before any run and are not counted as refinement targets.")
    rows = [(item["id"], s["application"] or "?", "yes" if s["admitted_initially"] else "no",
             "yes" if s["admitted_executions"] > 0 else "no", s["reflection_rounds"], s["executions"],
             (s["error"] or "")[:80]) for item, s in zip(items, scenarios, strict=True)]
    details = table(("intent", "app", "admitted as written", "admitted (any)", "reflection rounds", "executions",
                     "error"), rows)
    return Row("refinement", SECTION, TITLE, PAPER, ours,
               f"{len(items)} fault intents{' (every 5th)' if quick and not tiny else ''}, budget {budget}, seed 1",
               command("refinement", quick), why=why, details=details,
               extra={"before": before, "after": after, "by_search": by_search, "by_reflection": by_reflection})
