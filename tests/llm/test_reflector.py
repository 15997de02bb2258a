"""Reflection: diagnose from the evidence digest, revise the prompt, re-parse it."""

from __future__ import annotations

import json

import pytest

from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import AnchorEvent
from services.llm.errors import RoleFailed
from services.llm.evidence import EvidenceDigest
from services.llm.fake_openai_server import FakeOpenAIServer, offline_model
from services.llm.knowledge import load_notes
from services.llm.reflector import RULES, fault_cues
from services.llm.roles import LlmRoles
from tests.llm.conftest import openai_backend

FREEZE_RED = "Check that RLVW stays safe when the SPaT feed freezes at red onset at a busy intersection."


def digest(**fields: object) -> EvidenceDigest:
    base: dict[str, object] = {"application": "RLVW", "admitted": False, "decision_epoch_s": 5.6,
                               "failure_margin": 1e6}
    return EvidenceDigest.from_dict({**base, **fields})


def fault(**fields: object) -> dict[str, object]:
    return {"name": "f", "operator": "freeze", "stream": "SPAT", "window_start_s": 1.0, **fields}


def test_freeze_after_the_decision_is_realigned_not_amplified(roles: LlmRoles) -> None:
    ref = roles.reflect(FREEZE_RED, digest(faults=[fault(window_start_s=30.0, captured_phase="red")]))
    assert ref.rule_ids == ("window_after_decision",) and ref.backend == "offline"
    assert "no magnitude fixes timing" in ref.diagnosis
    assert "just before amber" in ref.revised_prompt and "red onset" not in ref.revised_prompt
    spec = roles.parse_intent(ref.revised_prompt, 1).spec  # re-enters parse -> verify
    assert spec.faults[0].anchor.event is AnchorEvent.AMBER_ONSET and spec.map.busy


def test_freeze_that_captured_amber(roles: LlmRoles) -> None:
    ref = roles.reflect("RLVW when the SPaT feed freezes at amber onset.",
                        digest(faults=[fault(window_start_s=2.0, captured_phase="amber")]))
    assert ref.rule_ids == ("freeze_captures_onset_phase",)
    assert roles.parse_intent(ref.revised_prompt, 1).spec.faults[0].anchor.offset_s == -0.5


def test_timing_before_magnitude(roles: LlmRoles) -> None:
    d = digest(faults=[fault(operator="delay", magnitude=0.2, window_start_s=9.0)])
    ref = roles.reflect("RLVW with SPaT delayed by 200 ms at 9 s.", d)
    assert ref.rule_ids == ("window_after_decision",)  # the magnitude rule is suppressed for this fault
    spec = roles.parse_intent(ref.revised_prompt, 1).spec
    assert spec.faults[0].anchor.event is AnchorEvent.DECISION_EPOCH


def test_magnitude_below_threshold_is_raised(roles: LlmRoles) -> None:
    d = digest(decision_epoch_s=6.0, decision_epoch_aoi_s={"SPAT": 0.4},
               faults=[fault(operator="delay", magnitude=0.3, window_start_s=4.0)])
    ref = roles.reflect("RLVW with SPaT delayed by 300 ms starting at 4 s.", d)
    assert ref.rule_ids == ("magnitude_below_threshold",)
    res = roles.parse_intent(ref.revised_prompt, 1)
    # a stale feed at the default plan's green falls back to what the truth does: the verifier times the
    # signal (one repair, the fault as the prompt says it)
    assert res.attempts_used <= 2 and res.spec.faults[0].magnitude == pytest.approx(1.2)
    assert res.spec.faults[0].anchor.offset_s == 4.0  # the window is kept


def test_a_random_drop_is_judged_by_its_runs_not_its_count(roles: LlmRoles) -> None:
    """40 % of EEBL lost: 60 messages in all but never more than 2 in a row. The count passes the burst
    tolerance; the run, which is what delays the information, does not: a burst past the tolerance is tried."""
    base = {"operator": "drop", "stream": "EEBL", "window_start_s": 0.0, "messages_affected": 60}
    prompt = "EEBL with 40 % of the braking car's EEBL messages lost from the start."
    spec = roles.parse_intent(prompt, 1).spec
    d = digest(application="EEBL", decision_epoch_s=None,
               faults=[fault(**base, name=spec.faults[0].name, longest_drop_run=2)])
    ref = roles.reflect(prompt, d, spec=spec)
    assert ref.rule_ids == ("magnitude_below_threshold",)
    assert "at most 2 EEBL message(s) in a row (60 in all)" in ref.diagnosis
    edits = {e.path: e.value for e in ref.edits}
    assert edits["faults[0].probability"] is None and edits["faults[0].burst_count"] > 2
    # the words say the burst in place of the rate, and parse to it
    assert "40 %" not in ref.revised_prompt
    (revised,) = roles.parse_intent(ref.revised_prompt, 1).spec.faults
    assert (revised.probability, revised.burst_count) == (None, edits["faults[0].burst_count"])
    # without the run (a burst drop, or evidence from before it), the count is the burst, as before
    assert roles.reflect(prompt, digest(application="EEBL", decision_epoch_s=None,
                                        faults=[fault(**base)])).rule_ids != ("magnitude_below_threshold",)


def test_unequipped_sender_and_conflict_timing(roles: LlmRoles) -> None:
    d = EvidenceDigest.from_dict({
        "application": "IMA", "admitted": False, "decision_epoch_s": 9.0, "conflict_arrival_gap_s": 12.0,
        "faults": [{"name": "delay_bsm", "operator": "delay", "stream": "BSM", "window_start_s": 0.0,
                    "magnitude": 1.0, "sender": "cross", "sender_equipped": False}]})
    prompt = "IMA with an unequipped cross vehicle whose BSMs are delayed by 1 s; the cross vehicle arrives 12 s after the ego."
    ref = roles.reflect(prompt, d)
    assert ref.rule_ids == ("unequipped_sender", "conflict_outside_window")
    (cross,) = roles.parse_intent(ref.revised_prompt, 1).spec.agents
    assert cross.equipped is True and cross.arrival_offset_s == 1.0


def test_no_exposure_extends_range_and_relays(roles: LlmRoles) -> None:
    d = digest(application="GLOSA", ego_in_range_fraction=0.2,
               faults=[fault(operator="delay", magnitude=3.0, window_start_s=0.0, delivered_in_window=0)])
    ref = roles.reflect("GLOSA with a 50 m radio range and SPaT delayed by 3 s.", d)
    assert ref.rule_ids == ("no_exposure",)
    v2x = roles.parse_intent(ref.revised_prompt, 1).spec.v2x
    assert v2x.channel.range_m == 300.0 and v2x.spat_relay


def test_ground_truth_unsafe_changes_traffic_not_faults(roles: LlmRoles) -> None:
    d = EvidenceDigest.from_dict({"application": "FCW", "admitted": False, "md_violations": ["collision"],
                                  "gt_violations": ["collision"]})
    ref = roles.reflect("FCW with a gap of 10 m and the lead's BSMs dropped; the lead brakes hard at 3 s.", d)
    assert ref.rule_ids == ("gt_unsafe",)
    assert roles.parse_intent(ref.revised_prompt, 1).spec.agents[0].gap_m == 60.0


def test_admitted_needs_no_revision(roles: LlmRoles) -> None:
    ref = roles.reflect(FREEZE_RED, digest(admitted=True, md_violations=["red_entry"]))
    assert ref.rule_ids == ("admitted",) and ref.revised_prompt == FREEZE_RED


def test_nothing_identifiable(roles: LlmRoles) -> None:
    ref = roles.reflect("IMA with cross BSMs delayed by 1 s.", EvidenceDigest.from_dict(
        {"application": "IMA", "admitted": False, "failure_margin": 3.2}))
    assert ref.rule_ids == ("no_diagnosis",)


def test_low_penetration(roles: LlmRoles) -> None:
    ref = roles.reflect("IMA with 10 % penetration.", EvidenceDigest.from_dict(
        {"application": "IMA", "admitted": False, "penetration": 0.1}))
    assert "low_penetration" in ref.rule_ids
    assert roles.parse_intent(ref.revised_prompt, 1).spec.v2x.penetration == pytest.approx(0.8)


def test_knowledge_base_is_one_data_file_for_every_scenario() -> None:
    notes = load_notes()
    assert load_notes() is notes  # loaded once, identical for every call
    ids = {n.id for n in notes}
    assert len(ids) == len(notes) >= 12
    assert len(RULES) >= 5


def test_llm_reflector_receives_identical_notes(fake_server: FakeOpenAIServer) -> None:
    fake_server.responder = offline_model
    roles = LlmRoles(openai_backend(fake_server))
    roles.reflect(FREEZE_RED, digest(faults=[fault(window_start_s=30.0)]))
    roles.reflect("IMA with cross BSMs delayed by 1 s.", EvidenceDigest.from_dict(
        {"application": "IMA", "admitted": False}))
    systems = [r["messages"][0]["content"] for r in fake_server.requests]
    assert systems[0] == systems[1] and "[window_after_decision]" in systems[0]
    rule_enum = fake_server.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["rule_ids"]
    assert set(rule_enum["items"]["enum"]) == {n.id for n in load_notes()}


def test_llm_reflection_citing_unknown_rules_is_rejected(fake_server: FakeOpenAIServer) -> None:
    bad = {"diagnosis": "d", "revised_prompt": "p", "rule_ids": ["made_up_rule"]}
    fake_server.enqueue(bad, bad)
    with pytest.raises(RoleFailed) as err:
        LlmRoles(openai_backend(fake_server)).reflect(FREEZE_RED, digest())
    assert "made_up_rule" in json.dumps(err.value.problems)


def test_evidence_digest_round_trip_and_validation() -> None:
    d = digest(faults=[fault(captured_phase="amber", delivered_in_window=3)], decision_epoch_aoi_s={"SPAT": 0.2},
               divergence_episodes=[{"kind": "signal_phase", "stream": "SPAT", "start_s": 1.0, "end_s": 7.0,
                                     "hazard_slack_s": -1.4}])
    assert EvidenceDigest.from_dict(d.to_json()) == d
    with pytest.raises(InvalidArgument) as err:
        EvidenceDigest.from_dict({"application": "XYZ", "admitted": "maybe", "ego_in_range_fraction": 3})
    fields = {v.field for v in err.value.violations}
    assert {"evidence_digest.application", "evidence_digest.ego_in_range_fraction"} <= fields


def test_reflect_input_limits(roles: LlmRoles) -> None:
    with pytest.raises(InvalidArgument) as err:
        roles.reflect("", digest())
    assert err.value.violations[0].field == "prompt"


def test_fault_cues_follow_the_parser_grouping() -> None:
    assert len(fault_cues("SPaT is delayed by 1 s and BSMs are dropped.")) == 2
    assert len(fault_cues("stale, frozen SPaT")) == 2
    assert len(fault_cues("stale BSMs, timestamps 1.5 s in the past")) == 1
    assert len(fault_cues("the SPaT feed freezes")) == 1


@pytest.mark.parametrize("prompt, evidence", [
    ("RLVW with a corrupted SPaT feed.", digest(faults=[fault(window_start_s=30.0, captured_phase="red")])),
    ("RLVW with SPaT delayed by 300 ms starting at 4 s.",
     digest(decision_epoch_s=6.0, decision_epoch_aoi_s={"SPAT": 0.4},
            faults=[fault(operator="delay", magnitude=0.3, window_start_s=4.0)])),
])
def test_rounds_of_reflection_revise_in_place_never_repeat(roles: LlmRoles, prompt: str,
                                                           evidence: EvidenceDigest) -> None:
    """Issue 31: each round used to append its sentence again ("The fault starts. The fault starts. ...")."""
    texts = [prompt]
    for _ in range(5):
        texts.append(roles.reflect(texts[-1], evidence).revised_prompt)
    final = texts[-1]
    sentences = [s.strip().lower() for s in final.split(".") if s.strip()]
    assert len(sentences) == len(set(sentences)), final
    assert len(final) <= len(texts[1]) + 40, texts  # no growth round after round


def test_a_prompt_without_fault_words_gets_one_revised_sentence_not_one_per_round() -> None:
    from services.llm.reflector import Rewriter

    r = Rewriter("Check that the warning stays safe at the crossing.")
    for phrase in ("just before amber", "at the decision epoch", "at the decision epoch"):
        r.set_anchor(0, phrase)
    assert r.text == "Check that the warning stays safe at the crossing. The fault starts at the decision epoch."
    r.append("The radio range is 300 m.")
    r.append("The radio range is 300 m.")
    assert r.text.count("The radio range is 300 m.") == 1


# ── field edits (issue 31, item 5): reflection edits the spec that ran, the prose is their record ──────────
def _edited(roles: LlmRoles, prompt: str, d: EvidenceDigest) -> tuple[object, object, object]:
    """(the spec that ran, the spec the edits give, the spec the revised words parse to)."""
    from lastv2x.core.repair import apply_patch
    from lastv2x.core.spec import parse_spec

    ran = roles.parse_intent(prompt, 1).spec
    ref = roles.reflect(prompt, d, spec=ran)
    edited = parse_spec(apply_patch(ran.model_dump(mode="json"), [(e.path, e.value) for e in ref.edits]))
    return ran, edited, roles.parse_intent(ref.revised_prompt, 1).spec


def test_a_misplaced_freeze_is_moved_by_a_field_edit_that_keeps_what_is_tested(roles: LlmRoles) -> None:
    d = digest(faults=[fault(window_start_s=30.0, captured_phase="red")])
    ran, edited, worded = _edited(roles, FREEZE_RED, d)
    ref = roles.reflect(FREEZE_RED, d, spec=ran)
    assert {e.path: e.rule for e in ref.edits} == {"faults[0].anchor": "window_after_decision",
                                                   "faults[0].duration_s": "window_after_decision"}
    (f,), (w,) = edited.faults, worded.faults  # type: ignore[attr-defined]
    assert (f.anchor.event, f.anchor.offset_s) == (AnchorEvent.AMBER_ONSET, -0.5) == (w.anchor.event, w.anchor.offset_s)
    assert edited.map == ran.map and edited.application is ran.application  # type: ignore[attr-defined]
    assert (f.operator, f.stream) == (ran.faults[0].operator, ran.faults[0].stream)  # type: ignore[attr-defined]


def test_edits_say_what_the_revised_words_say(roles: LlmRoles) -> None:
    cases = [
        ("RLVW with SPaT delayed by 200 ms at 9 s.", digest(faults=[fault(operator="delay", magnitude=0.2,
                                                                             window_start_s=9.0)])),
        ("RLVW with SPaT delayed by 300 ms starting at 4 s.",
         digest(decision_epoch_s=6.0, decision_epoch_aoi_s={"SPAT": 0.4},
                faults=[fault(operator="delay", magnitude=0.3, window_start_s=4.0)])),
        ("IMA with an unequipped cross vehicle whose BSMs are delayed by 1 s; the cross vehicle arrives 12 s after "
         "the ego.", EvidenceDigest.from_dict({
             "application": "IMA", "admitted": False, "decision_epoch_s": 9.0, "conflict_arrival_gap_s": 12.0,
             "faults": [{"name": "delay_bsm", "operator": "delay", "stream": "BSM", "window_start_s": 0.0,
                         "magnitude": 1.0, "sender": "cross", "sender_equipped": False}]})),
    ]
    for prompt, d in cases:
        ran, edited, worded = _edited(roles, prompt, d)
        for a, b in zip(edited.faults, worded.faults, strict=True):  # type: ignore[attr-defined]
            assert (a.anchor, a.magnitude, a.burst_count) == (b.anchor, b.magnitude, b.burst_count), prompt
        for a, b in zip(edited.agents, worded.agents, strict=True):  # type: ignore[attr-defined]
            assert (a.equipped, a.arrival_offset_s) == (b.equipped, b.arrival_offset_s), prompt
        assert edited.v2x.channel.range_m == worded.v2x.channel.range_m, prompt  # type: ignore[attr-defined]


def test_without_the_spec_there_are_no_edits_only_words(roles: LlmRoles) -> None:
    ref = roles.reflect(FREEZE_RED, digest(faults=[fault(window_start_s=30.0, captured_phase="red")]))
    assert ref.edits == () and "just before amber" in ref.revised_prompt


@pytest.mark.parametrize(("path", "why"), [("application", "what the test is about"),
                                           ("map.town", "what the test is about"),
                                           ("faults[0].operator", "what the test is about"),
                                           ("faults[0]", "what the test is about"),
                                           ("agents[1].role", "what the test is about"),
                                           ("faults[0]..anchor", "not a dotted spec path")])
def test_an_edit_of_what_is_tested_is_refused_naming_the_path(path: str, why: str) -> None:
    from services.llm.reflector import validate_reflection

    notes = load_notes()
    data = {"diagnosis": "d", "revised_prompt": "p", "rule_ids": ["no_diagnosis"],
            "edits": [{"path": path, "value": 1, "rule": "no_diagnosis"}]}
    with pytest.raises(InvalidArgument) as err:
        validate_reflection(data, notes, 4000, "offline")
    (v,) = err.value.violations
    assert v.field == "edits[0].path" and why in v.description


def test_the_openai_backend_answers_field_edits_too(fake_server: FakeOpenAIServer) -> None:
    """The spec goes to the model in the user message; the schema offers ``edits``; they come back validated."""
    fake_server.responder = offline_model
    ran = LlmRoles().parse_intent(FREEZE_RED, 1).spec
    ref = LlmRoles(openai_backend(fake_server)).reflect(
        FREEZE_RED, digest(faults=[fault(window_start_s=30.0, captured_phase="red")]), spec=ran)
    assert {e.path for e in ref.edits} == {"faults[0].anchor", "faults[0].duration_s"}
    assert ref.backend.startswith("openai:")
    (request,) = fake_server.requests
    assert json.loads(request["messages"][-1]["content"])["spec"] == ran.model_dump(mode="json")
    assert "edits" in request["response_format"]["json_schema"]["schema"]["properties"]


PHANTOM = "FCW with a phantom vehicle: someone spoofs safety messages from a nonexistent car stopped 30 m ahead."


def _phantom_digest(**fields: object) -> EvidenceDigest:
    return EvidenceDigest.from_dict({
        "application": "FCW", "admitted": False, "decision_epoch_s": 0.05, "md_decision": "brake",
        "gt_decision": "proceed", "failure_margin": 40.0,
        "faults": [{"name": "ghost_bsm", "operator": "ghost_sender", "stream": "BSM", "window_start_s": 0.0,
                    "magnitude": 30.0}], **fields})


def test_a_phantom_brake_with_nobody_behind_gets_a_tailgater(roles: LlmRoles) -> None:
    ref = roles.reflect(PHANTOM, _phantom_digest())
    assert ref.rule_ids == ("phantom_brake_nobody_behind",)
    spec = roles.parse_intent(ref.revised_prompt, 1).spec  # the fault as written, a follower added
    (f,) = spec.faults
    assert f.operator.value == "ghost_sender" and f.magnitude == 30.0
    assert [a.gap_m for a in spec.agents if a.role.value == "follower"] == [12.0]


@pytest.mark.parametrize(("prompt", "fields"), [
    (PHANTOM + " A tailgater follows 10 m behind.", {}),  # someone follows already: another mechanism is missing
    (PHANTOM, {"gt_decision": "brake"}),  # the twin braked too: the phantom changed nothing
    (PHANTOM, {"md_decision": "proceed"}),  # the ego never braked for it
])
def test_the_phantom_rule_fires_only_when_the_brake_was_the_phantom_s_and_nobody_followed(
        roles: LlmRoles, prompt: str, fields: dict[str, object]) -> None:
    assert "phantom_brake_nobody_behind" not in roles.reflect(prompt, _phantom_digest(**fields)).rule_ids


IMA_PHANTOM = "IMA with a phantom car on the cross street, 120 m before the intersection at 12 m/s."


def test_a_phantom_yield_with_nobody_behind_gets_a_tailgater(roles: LlmRoles) -> None:
    """IMA / LTA: a phantom on the crossing route made the ego yield and its twin not (issue 37 item 3)."""
    digest = EvidenceDigest.from_dict({
        "application": "IMA", "admitted": False, "decision_epoch_s": 5.7, "md_decision": "yield",
        "gt_decision": "proceed", "failure_margin": 30.0,
        "faults": [{"name": "ghost_bsm", "operator": "ghost_sender", "stream": "BSM", "window_start_s": 0.0,
                    "magnitude": 120.0}]})
    ref = roles.reflect(IMA_PHANTOM, digest)
    assert ref.rule_ids == ("phantom_brake_nobody_behind",) and "yielded" in ref.diagnosis
    spec = roles.parse_intent(ref.revised_prompt, 1).spec
    (f,) = spec.faults
    assert f.ghost_route.value == "cross" and f.magnitude == 120.0 and f.ghost_speed_mps == 12.0
    assert [a.gap_m for a in spec.agents if a.role.value == "follower"] == [12.0]


def test_a_phantom_masked_by_the_real_crossing_car_sends_the_car_away_and_adds_a_tailgater(roles: LlmRoles) -> None:
    """Both rollouts yielded, the twin to the real cross car: the revision sends the real car through 9 s before the
    ego (the crossing phantom is the conflict) and puts a tailgater behind the ego (issue 37 item 3)."""
    digest = EvidenceDigest.from_dict({
        "application": "IMA", "admitted": False, "decision_epoch_s": 5.7, "md_decision": "yield",
        "gt_decision": "yield", "failure_margin": 30.0, "conflict_arrival_gap_s": 0.0,
        "faults": [{"name": "ghost_bsm", "operator": "ghost_sender", "stream": "BSM", "window_start_s": 0.0,
                    "magnitude": 120.0}]})
    ref = roles.reflect(IMA_PHANTOM, digest)
    assert ref.rule_ids == ("phantom_masked_by_real_conflict", "phantom_brake_nobody_behind")
    spec = roles.parse_intent(ref.revised_prompt, 1).spec
    (early,) = [a.arrival_offset_s for a in spec.agents if a.role.value == "cross"]
    assert early <= -7.0  # (9 s before, or as early as the ego's own arrival allows: the verifier's repair)
    assert [a.gap_m for a in spec.agents if a.role.value == "follower"] == [12.0]
    assert spec.faults[0].ghost_route.value == "cross"
