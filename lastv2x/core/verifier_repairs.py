"""Repairs of the verifier (``lastv2x.core.verifier``) shared by the decision_window and
semantic_corruption families: those that keep a fault as written and move the scene to it (time the
signal, move the ego or the brake), those that re-time its window with the signal, and the trial
that picks the first candidate clearing the fault on a copy of the spec.
"""

from __future__ import annotations

import math
from typing import Any

from lastv2x.core import catalogue as cat
from lastv2x.core.catalogue import FAULT_OPERATORS, stopping_distance_m
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import AnchorKind, BehaviourKind, ScenarioSpec, parse_spec, spec_to_dict
from lastv2x.core.timeline import offset_for_amber_at
from lastv2x.core.verifier_base import Finding, Repair, Severity, _budget, _Ctx, _f


def _repair_window(ctx: _Ctx, i: int, offset: float) -> tuple[tuple[tuple[str, Any], ...], float]:
    """(patch, t_ref): fault i active from ``-offset`` s before the decision epoch to the end, and the
    epoch a repaired signal plan is timed around. GLOSA: active from t = 0 around the epoch of the ego
    holding its own speed (where a fault that opens at once can take it: a fixed plan then moves the
    advisory, not that epoch)."""
    if ctx.const is not None and ctx.app.name is cat.Application.GLOSA:
        return ((_f(i, "anchor.kind"), "scenario_time"), (_f(i, "anchor.event"), "none"),
                (_f(i, "anchor.group"), None), (_f(i, "anchor.distance_m"), None),
                (_f(i, "anchor.offset_s"), 0.0), (_f(i, "duration_s"), None)), ctx.const.decision_epoch_s
    return ((_f(i, "anchor.kind"), "ego_event"), (_f(i, "anchor.event"), "decision_epoch"),
            (_f(i, "anchor.group"), None), (_f(i, "anchor.distance_m"), None),
            (_f(i, "anchor.offset_s"), offset), (_f(i, "duration_s"), None)), ctx.ego.decision_epoch_s


def _before_amber_repair(ctx: _Ctx, i: int) -> Repair:
    """Open the window 0.5 s before amber onset and time amber 1 s before the decision epoch."""
    if ctx.app.name is cat.Application.GLOSA:
        window, t_ref = _repair_window(ctx, i, -0.5)
        return Repair("capture the feed from the start, with amber onset 1 s before the decision epoch",
                      (*window, ("signal.offset_s", round(offset_for_amber_at(ctx.spec.signal, t_ref - 1.0), 3))))
    t_dec = ctx.ego.decision_epoch_s
    return Repair("capture the feed just before amber onset, with amber onset 1 s before the decision epoch",
                  ((_f(i, "anchor.kind"), "signal_event"), (_f(i, "anchor.event"), "amber_onset"),
                   (_f(i, "anchor.group"), None), (_f(i, "anchor.offset_s"), -0.5), (_f(i, "duration_s"), None),
                   ("signal.offset_s", round(offset_for_amber_at(ctx.spec.signal, t_dec - 1.0), 3))))


def _offset_for_red_at(spec: ScenarioSpec, t_s: float) -> float:
    """signal.offset_s that puts the ego group's red onset at scenario time t_s."""
    return (spec.signal.green_s + spec.signal.amber_s - t_s) % spec.signal.cycle_s


def _go_on_red_repair(ctx: _Ctx, i: int, what: str, extra: tuple[tuple[str, Any], ...],
                      offset: float = -0.5) -> Repair:
    """Red onset 1 s before the decision epoch (the truth stops the ego) and the fault active from
    ``-offset`` s before the epoch to the end, with the fault's fields ``extra``."""
    window, t_ref = _repair_window(ctx, i, offset)
    return Repair(f"time red onset 1 s before the decision epoch and {what} from before it to the end",
                  (*window, *extra, ("signal.offset_s", round(_offset_for_red_at(ctx.spec, t_ref - 1.0), 3))))


def _scene_repairs(ctx: _Ctx, i: int) -> list[Repair]:
    """Repairs that keep fault i as written and move the scene to it: time the signal so the truth
    stops the ego at its decision epoch (amber / red onset 1 s before it; GLOSA also a red from the
    start, longer than its slowest advisory), or move the ego so that it decides inside the window."""
    spec, out = ctx.spec, []
    if ctx.signal_app:
        refs = [ctx.ego.decision_epoch_s]
        if ctx.const is not None and ctx.const is not ctx.ego:
            refs.append(ctx.const.decision_epoch_s)
        for t in (t for t in refs if math.isfinite(t)):
            out.append(Repair("time amber onset 1 s before the decision epoch",
                              (("signal.offset_s", round(offset_for_amber_at(spec.signal, t - 1.0), 3)),)))
            out.append(Repair("time red onset 1 s before the decision epoch",
                              (("signal.offset_s", round(_offset_for_red_at(spec, t - 1.0), 3)),)))
        if ctx.app.name is cat.Application.GLOSA:
            out.append(Repair("a red from the start that outlasts the slowest advised approach",
                              (("signal.offset_s", round(_offset_for_red_at(spec, 0.0), 3)),)))
    fault = spec.faults[i]
    if fault.anchor.kind is AnchorKind.EGO_EVENT:
        return out  # its window moves with the ego
    start, end = ctx.windows[i]
    lead = 0.2 if FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC else \
        _budget(ctx, fault.stream) + 0.2
    t_target = start + lead if start + lead < end else (start + end) / 2.0
    if ctx.app.follows_lead:  # FCW, EEBL (the catalogue's required roles)
        for k, a in enumerate(spec.agents):
            if a.behaviour.kind is BehaviourKind.HARD_BRAKE:
                out.append(Repair("brake while the fault is active",
                                  ((f"agents[{k}].behaviour.at_time_s", round(max(0.0, t_target - 0.5), 2)),)))
        return out
    v = spec.ego.speed_mps
    d0 = round(stopping_distance_m(v) + v * t_target, 1)
    if 10.0 <= d0 <= 1000.0 and d0 != spec.ego.start_distance_m:
        out.append(Repair("start the ego where it decides while the fault is active", (("ego.start_distance_m", d0),)))
    return out


def _about(finding: Finding, i: int) -> bool:
    return any(f == f"faults[{i}]" or f.startswith(f"faults[{i}].") for f in finding.fields)


def _pick_repair(ctx: _Ctx, i: int, family: str, candidates: list[Repair]) -> Repair | None:
    """The first candidate after which fault i has no error left and the spec no new one (else the
    first that silences ``family`` on it, else the first): each is tried on a copy of the spec."""
    cands = [c for c in candidates if c.patch]
    if not cands:
        return candidates[0] if candidates else None
    if ctx.rerun is None:
        return cands[0]
    if ctx.plain_errors is None:
        ctx.plain_errors = {(f.check, f.fields) for f in ctx.rerun(ctx.spec).findings
                            if f.severity is Severity.ERROR}
    base = spec_to_dict(ctx.spec)
    silencing = None
    for rep in cands:
        try:
            patched = parse_spec(apply_patch(base, rep.patch))
        except InvalidArgument:
            continue
        errors = [f for f in ctx.rerun(patched).findings if f.severity is Severity.ERROR]
        if not any(_about(f, i) for f in errors) and all((f.check, f.fields) in ctx.plain_errors for f in errors):
            return rep
        if silencing is None and not any(f.check == family and _about(f, i) for f in errors):
            silencing = rep
    return silencing or cands[0]
