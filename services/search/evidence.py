"""The evidence digest of one paired run, as the reflector reads it (LAST-V2X §2.5).

Built from what search already has — the spec, its verifier report and the canonical
outcome of the paired execution (both rollouts, the monitor report with divergence
episodes, hazard slack, decision-epoch AoI and what each fault did) — into the JSON
object the llm service validates as ``services.llm.evidence.EvidenceDigest``. Only
fields the outcome actually carries are filled; the rest stay absent.
"""

from __future__ import annotations

from typing import Any

from lastv2x.core.catalogue import Stream
from lastv2x.core.spec import AgentRole, FaultOperator, ScenarioSpec
from lastv2x.core.timeline import fault_window_s, phase_at
from lastv2x.core.verifier import VerificationReport

_EPISODE_KINDS = {"signal_phase", "countdown", "track_displaced", "ghost_track", "missing_track",
                  "map_association", "stale"}
_AOI_FIELDS = {"spat_aoi_s": Stream.SPAT, "map_aoi_s": Stream.MAP, "bsm_aoi_s": Stream.BSM}


def _violations(rollout: dict[str, Any]) -> list[str]:
    out = ["red_entry"] * bool(rollout.get("red_entries")) + ["collision"] * bool(rollout.get("collision"))
    return out


def _epoch_action(rollout: dict[str, Any]) -> str | None:
    return next((d["action"] for d in rollout.get("decisions", []) if d.get("epoch")), None)


def evidence_digest(spec: ScenarioSpec, report: VerificationReport, outcome: dict[str, Any]) -> dict[str, Any]:
    """The digest of one paired run of ``spec`` (``outcome`` = the parsed canonical outcome JSON)."""
    extra = (outcome.get("monitor") or {}).get("extra") or {}
    md, gt = outcome.get("md") or {}, outcome.get("gt") or {}
    digest: dict[str, Any] = {
        "application": spec.application.value, "admitted": bool(outcome.get("admitted")),
        "md_violations": _violations(md), "gt_violations": _violations(gt),
        "failure_margin": outcome.get("failure_margin"), "penetration": spec.v2x.penetration,
        "verifier_findings": [{"check": f.check, "severity": f.severity.value, "message": f.message,
                               "fields": list(f.fields)} for f in report.findings],
    }
    if (a := _epoch_action(md)) is not None:
        digest["md_decision"] = a
    if (a := _epoch_action(gt)) is not None:
        digest["gt_decision"] = a
    digest["divergence_episodes"] = [
        {"kind": e["kind"], "start_s": max(0.0, e["start_s"]), "end_s": max(0.0, e["end_s"]),
         "hazard_slack_s": e.get("slack_s")}
        for e in extra.get("hazard_slack") or [] if e.get("kind") in _EPISODE_KINDS and e.get("end_s") is not None]
    aoi = (extra.get("aoi_at_decisions") or [None])[0]
    if aoi:
        digest["decision_epoch_s"] = aoi["t_s"]
        digest["decision_epoch_aoi_s"] = {s.value: aoi[k] for k, s in _AOI_FIELDS.items() if aoi.get(k) is not None}
    elif report.decision_epoch_s != float("inf"):
        digest["decision_epoch_s"] = report.decision_epoch_s
    equipped = {a.id: a.equipped for a in spec.agents}
    affected = {f["name"]: f for f in extra.get("faults") or []}
    faults = []
    for fault in spec.faults:
        start, end = fault_window_s(spec, fault)
        if start == float("inf"):
            continue
        f: dict[str, Any] = {"name": fault.name, "operator": fault.operator.value, "stream": fault.stream.value,
                             "window_start_s": start, "window_end_s": None if fault.duration_s is None else end,
                             "magnitude": fault.magnitude, "sender": fault.sender}
        if fault.sender in equipped:
            f["sender_equipped"] = equipped[fault.sender]
        if fault.name in affected:
            f["messages_affected"] = affected[fault.name].get("messages_affected")
            f["longest_drop_run"] = affected[fault.name].get("longest_drop_run")
            f["delivered_in_window"] = affected[fault.name].get("messages_affected")
        # freeze's own behaviour: it replays the payload captured when its window opens (the phase then)
        if fault.operator is FaultOperator.FREEZE and fault.stream is Stream.SPAT:
            f["captured_phase"] = phase_at(spec.signal, start).value
        faults.append({k: v for k, v in f.items() if v is not None})
    digest["faults"] = faults
    conflict = [a for a in spec.agents if a.role in (AgentRole.CROSS, AgentRole.OPPOSING)]
    if conflict:
        digest["conflict_arrival_gap_s"] = conflict[0].arrival_offset_s
    return {k: v for k, v in digest.items() if v is not None}


__all__ = ["evidence_digest"]
