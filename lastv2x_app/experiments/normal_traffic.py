"""LAST-V2X §3.2, scenario generation at scale: the 100 normal-traffic intents (``bench/data/parse_intents.jsonl``,
kind ``normal``: they describe the application only and leave application and town to the pipeline) through
the offline parser (compile rate, parse attempts), grounding on the built-in maps, and paired execution with
the V2X stack as message source under healthy communication (no fault): vehicles on route, admitted failures."""

from __future__ import annotations

import json
from collections import Counter

from lastv2x_app.experiments import ROOT, Progress, Row, carla_town_dir, command, table

SECTION = "LAST-V2X §3.2"
TITLE = "normal-traffic benchmark: compile, attempts, on route, admitted"
PAPER = "100/100 compile within ≤ 2 attempts; 253/254 vehicles on route; 0 admitted"
INTENTS = ROOT / "bench" / "data" / "parse_intents.jsonl"


def intents(quick: bool, tiny: bool = False) -> list[dict]:
    rows = [json.loads(x) for x in INTENTS.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r["kind"] == "normal"]
    return rows[:1] if tiny else rows  # cheap (~20 s for all 100): --quick runs them all too


def run(quick: bool, progress: Progress, *, tiny: bool = False) -> Row:
    from services.grounding.core import GroundingConfig, GroundingCore
    from services.llm.config import LlmConfig
    from services.llm.roles import LlmRoles
    from services.simulator.execute import SimulatorLimits, run_one

    roles = LlmRoles(config=LlmConfig())
    # the built-in maps, and the CARLA towns where LASTV2X_MAP_PATHS holds them (an intent that names a town
    # grounds there; the parser assigns open towns among the built-in maps)
    town_dir, no_towns = carla_town_dir()
    grounding = GroundingCore(GroundingConfig(map_paths=(town_dir,) if town_dir else ()))
    limits = SimulatorLimits.from_env()  # user maps (LASTV2X_MAP_PATHS) as the simulator service reads them
    items = intents(quick, tiny)
    attempts: Counter[int] = Counter()
    apps: Counter[str] = Counter()
    towns: Counter[str] = Counter()
    compiled = within2 = grounded = executed = admitted = vehicles = gaps = 0
    problems: list[tuple[str, str, str]] = []
    for i, item in enumerate(items):
        if i % 10 == 0:
            progress(f"intent {i + 1}/{len(items)}")
        try:
            res = roles.parse_intent(item["text"], item["seed"])
        except Exception as e:  # a refusal counts as not compiled, with its reason
            attempts[0] += 1
            problems.append((item["id"], "parse", f"{type(e).__name__}: {e}"[:120]))
            continue
        compiled += 1
        within2 += res.attempts_used <= 2
        attempts[res.attempts_used] += 1
        apps[res.spec.application.value] += 1
        try:
            program = grounding.ground(res.spec)
        except Exception as e:
            problems.append((item["id"], "ground", f"{type(e).__name__}: {e}"[:120]))
            continue
        grounded += 1
        towns[program.map_name] += 1
        outcome, _ = run_one(program, None, limits)
        executed += 1
        admitted += outcome.admitted
        vehicles += len(program.vehicles)
        if outcome.admitted:
            gaps += 1  # no fault injected: what a campaign reports as a coverage gap, not a fault witness
            problems.append((item["id"], "admitted", f"{res.spec.application.value} on {program.map_name}: MD "
                             f"{', '.join(outcome.md.violations)}, GT safe; no fault injected (what a campaign "
                             f"reports as a coverage gap)"))
    n = len(items)
    ours = (f"{compiled}/{n} compile, {within2}/{n} within ≤ 2 attempts (attempts {dict(sorted(attempts.items()))}); "
            f"{grounded} grounded, {executed} executed; {vehicles}/{vehicles} vehicles on route; {admitted} admitted")
    why = (f"{n - grounded} of {n} intents do not ground on our maps (listed below: the run-up an agent needs is "
           "longer than the built-in road, or the junction lacks the movement), where all the paper's scenes compiled "
           "and executed. Admitted under healthy communication: every one is an IMA scene on the unsignalized 4-way "
           "between 25-45 m buildings where the message-driven ego collides and its twin does not with no fault "
           "injected; the search reports these as coverage gaps, never as fault witnesses, but they are admissions "
           "by the paired rule, so they are counted here, not tuned away. "
           "Vehicles on route: our traffic core moves every vehicle along its grounded route's polyline (no lateral "
           "dynamics, no physics), so none can leave it: the figure is by construction, where the paper's 1 of 254 "
           "left its route in CARLA's physics. Maps: the parser assigns open towns among the built-in maps (an intent "
           "naming a CARLA town grounds there), not over the paper's eight CARLA towns. Parser: the offline grammar "
           "parser, not an LLM." + (f" CARLA towns not loaded: {no_towns}." if no_towns else ""))
    details = table(("what", "count"), [
        ("intents", n), ("applications assigned", ", ".join(f"{k} {v}" for k, v in sorted(apps.items()))),
        ("maps grounded on", ", ".join(f"{k} {v}" for k, v in sorted(towns.items()))),
        ("vehicles (ego, agents, background)", vehicles)])
    if problems:
        details += "\n\n" + table(("intent", "stage", "what"), problems)
    return Row("normal-traffic", SECTION, TITLE, PAPER, ours,
               f"{n} intents, one seed each (the intent's own)",
               command("normal-traffic", quick), why=why, details=details,
               extra={"n": n, "compiled": compiled, "within2": within2, "admitted": admitted, "executed": executed})
