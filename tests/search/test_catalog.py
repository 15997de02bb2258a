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


def _outcome(actions: list[str], **md: Any) -> dict[str, Any]:
    return {"application": "IMA", "md": {"decisions": [{"action": a} for a in actions], "collision": None,
                                         "red_entries": [], "amber_entries": 0, "closest_vehicle_id": "cross", **md}}


def test_failure_signature_is_the_decision_sequence_and_how_it_failed():
    a = _outcome(["proceed", "proceed", "yield", "proceed"])
    assert failure_signature(a) == "IMA|proceed>yield>proceed|near_miss|cross"
    assert failure_signature(_outcome(["proceed", "yield", "yield", "proceed"])) == failure_signature(a)
    assert failure_signature(_outcome(["proceed", "yield", "proceed"], collision={"t_s": 9.0})) != failure_signature(a)
    assert failure_signature(_outcome(["proceed"])) != failure_signature(a)
