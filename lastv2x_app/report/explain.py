"""One sentence per witness: fault -> what the ego received and believed -> its decision -> the unsafe
outcome, beside the two counterfactuals (the ground-truth ego, and the same program without the fault).

Pure: it reads a paired outcome (``services.simulator`` canonical outcome JSON, parsed) and, when the
report could run it, the outcome of the same program with its faults removed.
"""

from __future__ import annotations

from typing import Any

from lastv2x.core.catalogue import margin_text


def _s(x: Any) -> str:
    return f"{float(x):.2f} s"


def fault_clause(faults: list[dict[str, Any]]) -> str:
    """'freeze on SPAT from 4.50 to 15.80 s (113 messages)' for each fault the run applied."""
    parts = []
    for f in faults:
        window = (f"from {_s(f['start_s'])}" + (f" to {_s(f['end_s'])}" if f.get("end_s") is not None else " on")
                  if f.get("start_s") is not None else "")
        size = f" by {f['magnitude']:g}" if isinstance(f.get("magnitude"), int | float) else ""
        sender = f" from {f['sender']}" if f.get("sender") else ""
        hit = f" ({f['messages_affected']} messages)" if f.get("messages_affected") else ""
        parts.append(f"{f['operator']}{size} on {f['stream']}{sender} {window}{hit}".replace("  ", " ").strip())
    return "; ".join(parts) or "no fault"


def belief_clause(at_decision: dict[str, Any] | None) -> str:
    """What the message-driven ego believed at its decision epoch, beside the truth."""
    if not at_decision:
        return "it decided without a decision epoch on record"
    t = _s(at_decision["t_s"])
    if at_decision.get("believed_phase") is not None or at_decision.get("true_phase") is not None:
        age = at_decision.get("spat_aoi_s")
        aged = f", its SPaT {age:g} s old" if isinstance(age, int | float) else ", with no SPaT"
        return (f"at its decision epoch ({t}) the ego believed {at_decision.get('believed_phase') or 'nothing'} while "
                f"the light was {at_decision.get('true_phase') or 'unknown'}{aged}")
    age = at_decision.get("bsm_aoi_s")
    heard = f"its last BSM of the other vehicle was {age:g} s old" if isinstance(age, int | float) else \
        "it had no BSM of the other vehicle"
    return f"at its decision epoch ({t}) {heard}"


def outcome_clause(rollout: dict[str, Any]) -> str:
    if rollout.get("collision"):
        c = rollout["collision"]
        who = c.get("vehicle_id") or c.get("other") or rollout.get("closest_vehicle_id") or "another vehicle"
        when = f" at {_s(c['t_s'])}" if isinstance(c, dict) and c.get("t_s") is not None else ""
        return f"made contact with {who}{when}"
    if rollout.get("red_entries"):
        return f"entered on red at {_s(rollout['red_entries'][0]['t_s'])}"
    if rollout.get("amber_entries"):
        return "entered on amber"
    gap = rollout.get("min_agent_distance_m")
    if gap is not None:
        return f"came within {gap:.1f} m of {rollout.get('closest_vehicle_id') or 'another vehicle'}"
    return "failed" if rollout.get("failed") else "stayed safe"


def _epoch_decision(rollout: dict[str, Any]) -> dict[str, Any] | None:
    return next((d for d in rollout.get("decisions") or () if d.get("epoch")), None)


def causal_chain(outcome: dict[str, Any], without_fault: dict[str, Any] | None = None) -> str:
    """The witness's failure as one sentence (see the module docstring)."""
    md, gt = outcome.get("md") or {}, outcome.get("gt") or {}
    extra = (outcome.get("monitor") or {}).get("extra") or {}
    faults = list(extra.get("faults") or [])
    at = next(iter(extra.get("aoi_at_decisions") or ()), None)
    md_dec, gt_dec = _epoch_decision(md), _epoch_decision(gt)
    decided = (f"it decided {md_dec['action']} ({md_dec.get('reason') or 'no reason given'})" if md_dec
               else "it took no epoch decision")
    sentence = (f"{fault_clause(faults)} → {belief_clause(at)} → {decided} → it {outcome_clause(md)}. "
                f"With every message true the ground-truth ego decided {gt_dec['action'] if gt_dec else 'nothing'}"
                f" and {outcome_clause(gt)}")
    if without_fault is not None:
        wf = without_fault.get("md") or {}
        sentence += (f"; without the fault the same program's ego {outcome_clause(wf)}"
                     f" ({'admitted' if without_fault.get('admitted') else 'not admitted'})")
    return sentence + "."


def margin_clause(outcome: dict[str, Any]) -> str:
    """The failure margin as a page says it: never 'none' on an admitted failure (the failure happened)."""
    return margin_text(outcome.get("failure_margin", 1e6), ".2f", admitted=bool(outcome.get("admitted")))


__all__ = ["belief_clause", "causal_chain", "fault_clause", "margin_clause", "outcome_clause"]
