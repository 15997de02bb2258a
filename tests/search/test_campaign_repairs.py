"""Issue 31, item 2: a campaign applies the verifier's repairs that make a fault's mechanism observable
(radio range, geometry) to the parsed spec, as ``make run``'s parse-repair loop applies its repairs,
and records each one (journal, scenario summary, results table, witness record); a repair that would
change what the user asked for (the fault, a field the intent states, a given spec) is reported, never
applied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import parse_spec, spec_to_dict
from services.search.core import SearchCore, validate_request
from services.search.pipeline import InProcessPipeline, Parsed, stated_fields
from services.search.repairs import observability_repairs
from services.search.settings import SearchSettings
from services.simulator.reference import reference_spec
from tests.search.conftest import rlvw_failing_spec

RELAY_INTENT = ("A car brakes hard three vehicles ahead; the middle car relays the EEBL warning. "
                "Check the ego still stops safely when the relay's messages are lost.")


def _run(core: SearchCore, **kw: Any) -> Any:
    return core.wait(core.start(validate_request(settings=core.settings, **kw)).id, timeout_s=300)


def test_the_relay_range_repair_is_applied_recorded_and_run(search_core: SearchCore) -> None:
    from lastv2x_app.campaigns import results_table

    view = _run(search_core, intents=[RELAY_INTENT], seed=1, budget_per_scenario=2)
    assert view.state == "done", view.reason
    (sc,) = view.summary["scenarios"]
    (rep,) = sc["repairs"]
    assert rep["applied"] and rep["check"] == "channel_baseline" and rep["origin"] == "initial"
    assert rep["patch"] == [{"field": "v2x.channel.range_m", "from": 150.0, "value": 45.0}]
    journal = search_core.store.journal(view.id)
    parsed = next(p for _, k, p in journal if k == "parsed")
    assert parsed["spec"]["v2x"]["channel"]["range_m"] == 150.0  # what the parser gave, journaled as it was
    assert next(p for _, k, p in journal if k == "repairs")["repairs"] == sc["repairs"]
    # the scenario ran the repaired spec: its initial dispatch holds the 45 m range
    initial = next(p for _, k, p in journal if k == "dispatch" and p["origin"] == "initial")
    assert initial["spec"]["v2x"]["channel"]["range_m"] == 45.0
    table = results_table(view.summary, [], "archive")
    assert "intents[0] repaired (channel_baseline): shorten the range" in table
    assert "v2x.channel.range_m 150.0 -> 45.0" in table


def test_repairs_are_deterministic_and_never_touch_the_fault() -> None:
    d = reference_spec(Application.RLVW, seed=7).model_dump(mode="json")
    # a probabilistic drop that breaches the budget with probability < 0.5: freshness_budget WARNING whose
    # repair lengthens or strengthens the fault the user asked for
    d["faults"] = [{"name": "drop_spat", "operator": "drop", "stream": "SPAT", "probability": 0.5,
                    "duration_s": 8.0}]
    spec = parse_spec(d)
    out, records = observability_repairs(spec)
    assert out == spec  # nothing applied
    (rep,) = records
    assert rep["check"] == "freshness_budget" and not rep["applied"]
    assert "fault" in rep["reason"] and rep["patch"][0]["field"].startswith("faults[0].")
    assert observability_repairs(spec) == (out, records)


def test_a_range_the_intent_states_is_reported_not_changed() -> None:
    spec = reference_spec(Application.EEBL, seed=7)
    repaired, applied = observability_repairs(spec)
    assert applied and applied[0]["applied"] and repaired.v2x.channel.range_m != spec.v2x.channel.range_m
    out, records = observability_repairs(spec, stated=frozenset({"v2x.channel.range_m"}))
    assert out == spec
    (rep,) = records
    assert not rep["applied"] and "v2x.channel.range_m" in rep["reason"]


def test_stated_fields_come_from_the_parser_notes() -> None:
    spec = reference_spec(Application.EEBL, seed=7)
    lead = next(i for i, a in enumerate(spec.agents) if a.id == "lead")
    notes = ("v2x.channel.range_m 150.0", "lead.behaviour.at_time_s 4 s (default)", "ego.speed_mps 13.4 assigned "
             "from seed", "relay chain: relay.gap_m 30, lead.gap_m 60 (default chain)", "lead.gap_m 60.0 from '60 m'")
    assert stated_fields(notes, spec) == ("v2x.channel.range_m", f"agents[{lead}].gap_m")


def test_a_given_spec_is_run_as_given_and_its_repairs_reported(search_core: SearchCore) -> None:
    """A spec file states every field: its observability finding is reported (summary, journal, witness
    record), never applied."""
    view = _run(search_core, specs=[rlvw_failing_spec(extra_faults=0)], seed=3, budget_per_scenario=1)
    (sc,) = view.summary["scenarios"]
    assert sc["repairs"] == []
    for w in search_core.witnesses(view.id):
        assert w.record["repairs"] == []
    eebl = reference_spec(Application.EEBL, seed=7)
    view = _run(search_core, specs=[eebl], seed=3, budget_per_scenario=1)
    (sc,) = view.summary["scenarios"]
    (rep,) = sc["repairs"]
    assert not rep["applied"] and "given spec" in rep["reason"]
    initial = next(p for _, k, p in search_core.store.journal(view.id) if k == "dispatch")
    assert initial["spec"]["v2x"]["channel"]["range_m"] == eebl.v2x.channel.range_m


class ShortRangeParser(InProcessPipeline):
    """A parser that answers every intent with the admitted RLVW freeze, its RSU out of the ego's range at the
    decision epoch (channel_baseline: the pristine channel already breaches the budget)."""

    def parse(self, intent: str, seed: int, campaign: str) -> Parsed:
        d = spec_to_dict(rlvw_failing_spec(extra_faults=0))
        d["v2x"]["channel"]["range_m"] = 40.0
        return Parsed(parse_spec(d), 1, "test")


def test_the_witness_record_and_report_carry_the_applied_repair(tmp_path: Path) -> None:
    core = SearchCore(ShortRangeParser(synthetic_grounding=True, trace_dir=tmp_path / "traces"),
                      SearchSettings(data_dir=tmp_path / "search", stall_candidates=3))
    try:
        view = _run(core, intents=["RLVW when SPaT freezes before amber"], seed=3, budget_per_scenario=1,
                    stop_at_first_admission=True)
        assert view.state == "done", view.reason
        (sc,) = view.summary["scenarios"]
        (rep,) = sc["repairs"]
        assert rep["applied"] and rep["patch"][0]["field"] == "v2x.channel.range_m" and rep["patch"][0]["from"] == 40.0
        (w,) = core.witnesses(view.id)
        assert w.record["repairs"] == sc["repairs"]
        assert w.record["found_spec"]["v2x"]["channel"]["range_m"] == rep["patch"][0]["value"]
    finally:
        core.close()


def test_a_stated_fault_runs_as_stated_then_the_verifiers_repair_is_a_visible_search_step(
        search_core: SearchCore) -> None:
    """The parser keeps a stated 0.2 s delay (the verifier says LTA tolerates it); the campaign runs it as stated
    (the intent's own question), then the verifier's repair (0.44 s) as its first search step, recorded with
    origin ``search`` like any repair, and the search goes on from there."""
    view = _run(search_core, intents=["Left turn assist when the opposing vehicle's BSMs are delayed by 0.2 s"],
                seed=11, budget_per_scenario=3)
    assert view.state == "done", view.reason
    (sc,) = view.summary["scenarios"]
    dispatched = [p for _, k, p in search_core.store.journal(view.id) if k == "dispatch"]
    assert [d["origin"] for d in dispatched[:2]] == ["initial", "verifier repair"]
    assert dispatched[0]["spec"]["faults"][0]["magnitude"] == 0.2  # as the intent states it
    assert dispatched[1]["spec"]["faults"][0]["magnitude"] == 0.44
    (rep,) = [r for r in sc["repairs"] if r["origin"] == "search"]
    assert rep["applied"] and rep["check"] == "freshness_budget"
    assert rep["patch"] == [{"field": "faults[0].magnitude", "from": 0.2, "value": 0.44}]



def _grounds_on_builtin_maps(tmp_path: Path) -> Any:
    """(a grounding core on the built-in maps, its cache under ``tmp_path``; ``spec -> bool``: does the spec ground on
    them?)"""
    from lastv2x.core.errors import FailedPrecondition
    from services.grounding.core import GroundingConfig, GroundingCore

    grounding = GroundingCore(GroundingConfig(cache_dir=tmp_path))

    def grounds(s: Any) -> bool:
        try:
            grounding.ground(s)
        except FailedPrecondition:
            return False
        return True
    return grounding, grounds


IMA_FAST_CROSSER = ("IMA at an unsignalized 4-way: the ego at 30 km/h, a car crossing from the right at 40 km/h, 30 % of its "
                    "BSMs lost.")


def test_a_scene_too_long_for_its_map_starts_the_ego_nearer_when_the_intent_states_no_start(tmp_path: Path) -> None:
    """A crossing car at 40 km/h that must meet an ego approaching from the parser's default 120 m needs ~180 m of
    side road, more than a built-in map has: the nearest shorter start that grounds is taken, recorded with its
    reason; a start the intent states is never moved; another grounding failure is not this repair's."""
    from lastv2x.core.errors import FailedPrecondition
    from services.llm.roles import LlmRoles
    from services.search.repairs import FIT_START_DISTANCES_M, run_up_repaired

    grounding, grounds = _grounds_on_builtin_maps(tmp_path)
    parsed = LlmRoles().parse_intent(IMA_FAST_CROSSER, 1)
    spec, stated = parsed.spec, frozenset(stated_fields(parsed.notes, parsed.spec))
    assert spec.ego.start_distance_m == 120.0 and "ego.start_distance_m" not in stated
    try:
        grounding.ground(spec)
        raise AssertionError("the scene was expected not to fit the built-in maps at a 120 m start")
    except FailedPrecondition as exc:
        why = str(exc)
    fitted, record = run_up_repaired(spec, why, stated, grounds)
    assert fitted is not None and record["applied"] and grounds(fitted)
    distance = fitted.ego.start_distance_m
    assert distance in FIT_START_DISTANCES_M and record["patch"] == [
        {"field": "ego.start_distance_m", "from": 120.0, "value": distance}]
    assert fitted.model_copy(update={"ego": spec.ego}) == spec  # nothing else moved: the fault, the speeds stay
    nearer = [d for d in FIT_START_DISTANCES_M if d > distance]
    assert not any(grounds(spec.model_copy(update={"ego": spec.ego.model_copy(update={"start_distance_m": d})}))
                   for d in nearer)  # the nearest start that fits, not any
    assert run_up_repaired(spec, why, stated, grounds) == (fitted, record)  # a pure function
    kept, said = run_up_repaired(spec, why, stated | {"ego.start_distance_m"}, grounds)
    assert kept is None and not said["applied"] and "states the ego's start distance" in said["reason"]
    other, none = run_up_repaired(spec, "roles: no junction with 5 approaches", stated, grounds)
    assert other is None and not none["reason"] and not none["patch"]


def test_a_campaign_runs_the_fitted_scene_and_says_so(tmp_path: Path) -> None:
    from lastv2x_app.campaigns import local_core, results_table

    core = local_core(tmp_path / "data", stall_candidates=3)
    try:
        view = _run(core, intents=[IMA_FAST_CROSSER], seed=1, budget_per_scenario=2)
        assert view.state == "done", view.reason
        (sc,) = view.summary["scenarios"]
        (rep,) = [r for r in sc["repairs"] if r["origin"] == "grounding"]
        assert rep["applied"] and rep["check"] == "grounding.run_up"
        initial = next(p for _, k, p in core.store.journal(view.id) if k == "dispatch" and p["origin"] == "initial")
        assert initial["spec"]["ego"]["start_distance_m"] == rep["patch"][0]["value"] < 120.0
        assert "repaired (grounding.run_up): start the ego nearer the junction" in results_table(view.summary, [],
                                                                                                 "archive")
    finally:
        core.close()


FAST_FCW = ("Forward collision warning on a highway: the ego drives at 65 mph, the lead is 45 m ahead and brakes hard "
            "at t=8 s; freeze the lead's BSMs for 1.5 s at the decision epoch.")


def test_a_scene_that_does_not_fit_the_town_drawn_for_it_moves_to_an_open_town_it_fits(tmp_path: Path) -> None:
    """The intent names no town, so the parser draws one from the seed among the maps able to host FCW (its note
    says which). At 65 mph the ego starts 170 m out, more straight road than the T-junction map has: the scene
    moves to the first other town of that pool it grounds on, every number kept; a town the intent names, or a
    pool of one, is never moved."""
    from lastv2x.core.parse_notes import assigned_towns
    from services.llm.roles import LlmRoles
    from services.search.repairs import town_repaired

    _grounding, grounds = _grounds_on_builtin_maps(tmp_path)
    parsed = LlmRoles().parse_intent(FAST_FCW, 3)
    spec, towns = parsed.spec, assigned_towns(parsed.notes)
    stated = frozenset(stated_fields(parsed.notes, spec))
    assert spec.map.town == "t_junction" and spec.map.town in towns and len(towns) > 2 and "map.town" not in stated
    assert not grounds(spec)
    fitted, record = town_repaired(spec, "run_up: ...", stated, towns, grounds)
    assert fitted is not None and grounds(fitted) and record["applied"] and record["check"] == "grounding.town"
    new = fitted.map.town
    assert record["patch"] == [{"field": "map.town", "from": "t_junction", "value": new}]
    assert fitted.model_copy(update={"map": spec.map}) == spec  # nothing else moved
    before = towns[:towns.index(new)]
    assert not any(grounds(spec.model_copy(update={"map": spec.map.model_copy(update={"town": t})}))
                   for t in before if t != "t_junction")  # the first that fits, in the parser's order
    assert town_repaired(spec, "run_up: ...", stated, towns, grounds) == (fitted, record)  # a pure function
    for kept in (town_repaired(spec, "x", stated | {"map.town"}, towns, grounds),
                 town_repaired(spec, "x", stated, ("t_junction",), grounds), town_repaired(spec, "x", stated, (), grounds)):
        assert kept[0] is None and not kept[1]["patch"] and not kept[1]["reason"]
    nowhere, said = town_repaired(spec, "x", stated, towns, lambda s: False)
    assert nowhere is None and not said["applied"] and "fits none of the other towns" in said["reason"]
    named = LlmRoles().parse_intent(FAST_FCW + " Use the t_junction map.", 3)
    assert named.spec.map.town == "t_junction" and assigned_towns(named.notes) == ()


def test_a_campaign_runs_a_scene_on_a_town_it_fits_and_says_so(tmp_path: Path) -> None:
    from lastv2x_app.campaigns import local_core, results_table

    core = local_core(tmp_path / "data", stall_candidates=3)
    try:
        for seed in range(1, 9):  # a campaign seed whose parse draws a town the scene does not fit
            view = _run(core, intents=[FAST_FCW], seed=seed, budget_per_scenario=1)
            assert view.state == "done", view.reason
            (sc,) = view.summary["scenarios"]
            moved = [r for r in sc["repairs"] if r["check"] == "grounding.town"]
            if moved:
                break
        else:
            raise AssertionError("no campaign seed drew a town the scene does not fit")
        (rep,) = moved
        journal = core.store.journal(view.id)
        parsed = next(p for _, k, p in journal if k == "parsed")
        assert rep["applied"] and rep["patch"][0]["from"] == parsed["spec"]["map"]["town"] in parsed["towns"]
        initial = next(p for _, k, p in journal if k == "dispatch" and p["origin"] == "initial")
        assert initial["spec"]["map"]["town"] == rep["patch"][0]["value"] != rep["patch"][0]["from"]
        assert "repaired (grounding.town): place the scene on another town" in results_table(view.summary, [],
                                                                                                "archive")
    finally:
        core.close()
