"""What a catalogue key and an admission depend on (issue 31, items 3 and 4)."""

from __future__ import annotations

from typing import Any

from lastv2x.core.catalogue import Application
from lastv2x.core.spec import parse_spec
from services.search.catalog import NO_BACKGROUND, admission_class, catalog_key, failure_signature
from services.simulator.reference import faulted_reference_spec, reference_spec


def _with(spec: Any, **fields: Any) -> Any:
    d = spec.model_dump(mode="json")
    for path, value in fields.items():
        node = d
        *parents, leaf = path.split("__")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return parse_spec(d)


def test_penetration_is_in_the_key_only_where_background_traffic_can_be_equipped():
    quiet = faulted_reference_spec(Application.RLVW)
    assert catalog_key(quiet).penetration_band == NO_BACKGROUND
    assert catalog_key(_with(quiet, v2x__penetration=0.1)) == catalog_key(quiet)  # no vehicle to act on
    busy = _with(quiet, map__busy=True)
    assert catalog_key(busy).penetration_band == "[0.8,1.0]"
    assert catalog_key(_with(busy, v2x__penetration=0.1)).penetration_band == "[0.0,0.2)"
    none_drawn = _with(busy, variation={"background_vehicles": {"min": 0, "max": 0}})
    assert catalog_key(none_drawn).penetration_band == NO_BACKGROUND


def test_admission_class_separates_faults_declared_gaps_and_coverage_gaps():
    assert admission_class(faulted_reference_spec(Application.IMA)) == "fault"
    healthy = reference_spec(Application.IMA)
    assert admission_class(healthy) == "coverage_gap"  # nothing injected, nothing taken away: the world's radio
    assert admission_class(_with(healthy, v2x__rsu_placement="none")) == "declared_gap"
    assert admission_class(_with(healthy, ego__equipped=False)) == "declared_gap"
    unequipped = healthy.model_dump(mode="json")
    unequipped["agents"][0]["equipped"] = False
    assert admission_class(parse_spec(unequipped)) == "declared_gap"
    assert admission_class(_with(healthy, v2x__channel__range_m=80.0)) == "declared_gap"


def test_a_gap_is_declared_only_where_the_intent_said_it():
    """A channel the campaign's observability repair shortened (an EEBL relay chain: 150 -> 45 m), or the search
    mutated, is not the user's declaration: a fault-free failure there is a coverage gap, never a witness."""
    short = _with(reference_spec(Application.EEBL), v2x__channel__range_m=45.0)
    assert admission_class(short, frozenset()) == "coverage_gap"  # the intent said nothing of the radio
    assert admission_class(short, frozenset({"v2x.channel.range_m"})) == "declared_gap"  # "a 45 m radio range"
    assert admission_class(short, frozenset({"*"})) == "declared_gap"  # a given spec states every field
    off = _with(reference_spec(Application.IMA), ego__equipped=False)
    assert admission_class(off, frozenset({"ego.equipped"})) == "declared_gap"
    assert admission_class(off, frozenset({"ego.speed_mps"})) == "coverage_gap"


def _outcome(actions: list[str], **md: Any) -> dict[str, Any]:
    return {"application": "IMA", "md": {"decisions": [{"action": a} for a in actions], "collision": None,
                                         "red_entries": [], "amber_entries": 0, "closest_vehicle_id": "cross", **md}}


def test_failure_signature_is_the_decision_sequence_and_how_it_failed():
    a = _outcome(["proceed", "proceed", "yield", "proceed"])
    assert failure_signature(a) == "IMA|proceed>yield>proceed|near_miss|cross"
    assert failure_signature(_outcome(["proceed", "yield", "yield", "proceed"])) == failure_signature(a)
    assert failure_signature(_outcome(["proceed", "yield", "proceed"], collision={"t_s": 9.0})) != failure_signature(a)
    assert failure_signature(_outcome(["proceed"])) != failure_signature(a)


def _core(tmp_path, pipeline=None):  # type: ignore[no-untyped-def]
    from services.search.core import SearchCore
    from services.search.pipeline import InProcessPipeline
    from services.search.settings import SearchSettings

    return SearchCore(pipeline or InProcessPipeline(synthetic_grounding=True, trace_dir=tmp_path / "t"),
                      SearchSettings(data_dir=tmp_path / "s", stall_candidates=3))


def _run(core, **kw):  # type: ignore[no-untyped-def]
    from services.search.core import validate_request

    return core.wait(core.start(validate_request(settings=core.settings, **kw)).id, timeout_s=300)


def _every_run_fails(tmp_path):  # type: ignore[no-untyped-def]
    """The real in-process pipeline, every run reported admitted."""
    from concurrent.futures import Future
    from dataclasses import replace

    from services.search.pipeline import Execution, ExecutionRequest, InProcessPipeline

    class EveryRunFails(InProcessPipeline):
        def submit(self, request: ExecutionRequest) -> Future[Execution]:
            out: Future[Execution] = Future()
            super().submit(request).add_done_callback(lambda f: out.set_result(replace(f.result(), admitted=True)))
            return out

        def submit_batch(self, requests: list[ExecutionRequest]) -> list[Future[Execution]]:  # type: ignore[override]
            return [self.submit(r) for r in requests]  # one by one, through this fake's submit

    return EveryRunFails(synthetic_grounding=True, trace_dir=tmp_path / "t")


def test_a_failure_with_no_fault_and_nothing_declared_is_a_coverage_gap_not_a_witness(tmp_path):
    """Issue 31, item 3: on a healthy spec every admission is the scene's own radio: reported apart."""
    core = _core(tmp_path, _every_run_fails(tmp_path))
    try:
        view = _run(core, specs=[reference_spec(Application.RLVW, seed=3)], seed=1, budget_per_scenario=5)
        (sc,) = view.summary["scenarios"]
        assert view.summary["admitted"] == 0 and sc["coverage_gaps"] == sc["executions"] == 5
        assert not core.witnesses(view.id) and view.summary["coverage_gaps"] == 5
        kinds = [k for _, k, _ in core.store.journal(view.id)]
        assert kinds.count("coverage_gap") == 5 and "admitted" not in kinds
    finally:
        core.close()


def test_a_failure_whose_faults_all_shrink_away_is_a_coverage_gap_not_a_witness(tmp_path):
    """A witness with 0 faults left never needed one: the scene's own radio failed (issue 31, item 3)."""
    core = _core(tmp_path, _every_run_fails(tmp_path))
    try:
        view = _run(core, specs=[faulted_reference_spec(Application.RLVW, seed=3)], seed=1, budget_per_scenario=1)
        (sc,) = view.summary["scenarios"]
        # not a fault admission either: the count is taken back, so stop_at_first_admission and reflection go on
        assert sc["admitted_executions"] == 0 and sc["first_admitted_at"] is None
        assert sc["coverage_gaps"] == 1 and not core.witnesses(view.id)
        (gap,) = [p for _, k, p in core.store.journal(view.id) if k == "coverage_gap"]
        assert gap["when"] == "its faults shrank away"
    finally:
        core.close()


def test_two_keys_that_shrink_to_the_same_failure_are_one_witness(tmp_path):
    """Issue 31, item 4: the same failure found under two keys (an extra harmless fault, another window)."""
    from tests.search.conftest import FREEZE_BEFORE_AMBER, HARMLESS_MAP_DROP

    base = reference_spec(Application.RLVW, seed=7).model_dump(mode="json")
    first = parse_spec({**base, "faults": [FREEZE_BEFORE_AMBER]})
    later = {**FREEZE_BEFORE_AMBER, "anchor": {**FREEZE_BEFORE_AMBER["anchor"], "offset_s": -0.6}}
    second = parse_spec({**base, "faults": [later, HARMLESS_MAP_DROP]})
    assert catalog_key(first) != catalog_key(second)
    core = _core(tmp_path)
    try:
        view = _run(core, specs=[first, second], seed=3, budget_per_scenario=1)
        assert view.state == "done", view.reason
        assert len(core.witnesses(view.id)) == 1 and view.summary["distinct_failures"] == 1
        (same,) = [p for _, k, p in core.store.journal(view.id) if k == "same_failure"]
        assert same["key"] == catalog_key(second).text and same["as_key"] == catalog_key(first).text
        assert view.summary["scenarios"][1]["duplicate_keys"] == 1
    finally:
        core.close()


def test_the_same_failure_found_by_a_later_campaign_is_counted_under_the_first_witness(tmp_path):
    """Issue 31, item 4, across campaigns: the catalogue keeps each witness's failure signature, so a later
    campaign that finds the same failure under another key counts it there instead of archiving it again."""
    from tests.search.conftest import FREEZE_BEFORE_AMBER, HARMLESS_MAP_DROP

    base = reference_spec(Application.RLVW, seed=7).model_dump(mode="json")
    first = parse_spec({**base, "faults": [FREEZE_BEFORE_AMBER]})
    later = {**FREEZE_BEFORE_AMBER, "anchor": {**FREEZE_BEFORE_AMBER["anchor"], "offset_s": -0.6}}
    second = parse_spec({**base, "faults": [later, HARMLESS_MAP_DROP]})
    core = _core(tmp_path)
    try:
        one = _run(core, specs=[first], seed=3, budget_per_scenario=1)
        two = _run(core, specs=[second], seed=3, budget_per_scenario=1)
        assert (one.state, two.state) == ("done", "done"), (one.reason, two.reason)
        assert len(core.witnesses(one.id)) == 1 and not core.witnesses(two.id)
        (same,) = [p for _, k, p in core.store.journal(two.id) if k == "same_failure"]
        assert same["key"] == catalog_key(second).text and same["as_key"] == catalog_key(first).text
        entry = core.store.catalogue_entry(catalog_key(first).text)
        assert entry is not None and entry["count"] == 2 and entry["first_campaign"] == one.id
        assert core.store.catalogue_entry(catalog_key(second).text) is None
    finally:
        core.close()


def test_stop_at_first_admission_goes_on_past_a_failure_whose_faults_shrink_away(tmp_path):
    """A coverage gap found by shrinking is no fault admission: a campaign told to stop at its first admission
    keeps searching for one (here every run fails, so it spends its whole budget and archives nothing)."""
    core = _core(tmp_path, _every_run_fails(tmp_path))
    try:
        view = _run(core, specs=[faulted_reference_spec(Application.RLVW, seed=3)], seed=1, budget_per_scenario=3,
                    stop_at_first_admission=True)
        (sc,) = view.summary["scenarios"]
        assert sc["candidates"] == 3 and sc["admitted_executions"] == 0 and not core.witnesses(view.id)
        assert sc["coverage_gaps"] >= 1
    finally:
        core.close()
