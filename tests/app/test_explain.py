"""The witness sentence (lastv2x_app.report.explain) on outcomes shaped as the simulator writes them."""

from __future__ import annotations

from lastv2x_app.report.explain import causal_chain, margin_clause


def _outcome(**md: object) -> dict:
    md_rollout = {"failed": True, "decisions": [{"t_s": 5.65, "action": "proceed", "epoch": True,
                                                 "reason": "conflict point clear"}],
                  "collision": None, "red_entries": [], "min_agent_distance_m": 1.2, "closest_vehicle_id": "cross", **md}
    return {"admitted": True, "failure_margin": 1e6, "md": md_rollout,
            "gt": {"failed": False, "decisions": [{"t_s": 5.65, "action": "yield", "epoch": True}],
                   "collision": None, "red_entries": [], "min_agent_distance_m": 15.3, "closest_vehicle_id": "cross"},
            "monitor": {"extra": {"faults": [{"operator": "drop", "stream": "BSM", "sender": "cross", "start_s": 3.65,
                                              "end_s": 6.65, "messages_affected": 30}],
                                  "aoi_at_decisions": [{"t_s": 5.65, "bsm_aoi_s": 2.0, "believed_phase": None,
                                                        "true_phase": None}]}}}


def test_a_conflict_witness_reads_as_one_causal_chain() -> None:
    text = causal_chain(_outcome(), {"admitted": False, "md": {"min_agent_distance_m": 15.3,
                                                               "closest_vehicle_id": "cross"}})
    assert text == ("drop on BSM from cross from 3.65 s to 6.65 s (30 messages) → at its decision epoch (5.65 s) its "
                    "last BSM of the other vehicle was 2 s old → it decided proceed (conflict point clear) → it came "
                    "within 1.2 m of cross. With every message true the ground-truth ego decided yield and came "
                    "within 15.3 m of cross; without the fault the same program's ego came within 15.3 m of cross "
                    "(not admitted).")


def test_contact_is_said_and_an_admitted_failure_has_no_margin_none() -> None:
    text = causal_chain(_outcome(collision={"t_s": 9.5, "vehicle_id": "cross"}))
    assert "made contact with cross at 9.50 s" in text and "without the fault" not in text
    assert margin_clause(_outcome()) == "crossed (the failure happened)"
    assert margin_clause({"admitted": False, "failure_margin": 1e6}).startswith("none")
