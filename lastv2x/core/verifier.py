"""Analytic verifier (LAST-V2X Appendix A): can this spec's faults matter at all?

Before any simulation, eleven check families read the spec and the closed-form
timeline (``lastv2x.core.timeline``) and return findings. Each finding names the
check, a severity, the responsible field paths and a minimal repair, a list of
(path, value) patches that the parser's repair loop can apply verbatim.

Severities: ``error`` blocks execution (and triggers parser revision or gates a
search mutant); ``warning`` flags a low-attribution or uninformative scenario;
``note`` records a property (for instance a deliberate silent-miss probe).

Age of information (AoI), closed form, for a stream of period T and latency L:
  burst of n drops      AoI_peak = (n + 1) * T + L      breach iff AoI_peak > B
  added delay d         AoI_peak = T + L + d
  timestamp offset o    perceived age = o + L (+ up to T)
  sender suppressed     AoI grows without bound from the window start
so the smallest breaching burst is n* = floor((B - L) / T) and the shortest
breaching episode is n* * T seconds.

The families, in order: consistency, roster, stream_consumption, operator_field,
anchor_reachability, freshness_budget, decision_window, semantic_corruption,
timing, penetration, channel_baseline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lastv2x.core import catalogue as cat
from lastv2x.core.catalogue import APPLICATIONS, FAULT_OPERATORS, STREAMS, AppKind, Registry, Stream
from lastv2x.core.faults import operator_field_problems
from lastv2x.core.spec import (
    AgentRole,
    AnchorEvent,
    AnchorKind,
    BehaviourKind,
    FaultOperator,
    Phase,
    RsuPlacement,
    ScenarioSpec,
)
from lastv2x.core.timeline import (
    CROSS_GROUP,
    EGO_GROUP_ALIASES,
    EgoTimeline,
    anchor_time_s,
    ego_timeline,
    fault_window_s,
    phase_at,
)


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Repair:
    description: str
    patch: tuple[tuple[str, Any], ...] = ()  # (dotted field path, new value)


@dataclass(frozen=True)
class Finding:
    check: str
    severity: Severity
    message: str
    fields: tuple[str, ...]
    repair: Repair | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.check, "severity": self.severity.value,
                               "message": self.message, "fields": list(self.fields)}
        if self.repair:
            out["repair"] = {"description": self.repair.description,
                             "patch": [{"field": p, "value": v} for p, v in self.repair.patch]}
        return out


@dataclass(frozen=True)
class VerificationReport:
    findings: tuple[Finding, ...]
    decision_epoch_s: float
    stop_bar_s: float

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def by_severity(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity is severity]

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if math.isinf(x) else round(x, 4)
        return {"ok": self.ok, "findings": [f.to_dict() for f in self.findings],
                "decision_epoch_s": num(self.decision_epoch_s), "stop_bar_s": num(self.stop_bar_s)}


@dataclass
class _Ctx:
    spec: ScenarioSpec
    app: cat.ApplicationInfo
    ego: EgoTimeline
    windows: list[tuple[float, float]] = field(default_factory=list)

    @property
    def signal_app(self) -> bool:
        return self.app.kind is AppKind.SIGNAL

    def conflict_time_s(self) -> float:
        """When the ego reaches the conflict zone: the stop bar plus ~one car length."""
        return self.ego.stop_bar_s + 5.0 / self.ego.speed_mps


Check = Callable[[_Ctx], Iterator[Finding]]
CHECKS: Registry[str, Check] = Registry("verifier check")


def check(name: str) -> Callable[[Check], Check]:
    def deco(fn: Check) -> Check:
        return CHECKS.register(name, fn)
    return deco


def _f(i: int, rest: str = "") -> str:
    return f"faults[{i}]" + (f".{rest}" if rest else "")


def _period(stream: Stream) -> float:
    return STREAMS[stream].period_s


def _budget(ctx: _Ctx, stream: Stream) -> float:
    # MAP changes rarely; its budget is ten periods whatever the application.
    return 10.0 * _period(stream) if stream is Stream.MAP else ctx.app.freshness_budget_s


# 1 ───────────────────────────────────────────────────────────────────────────
@check("consistency")
def _consistency(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    ids = [a.id for a in spec.agents]
    for i, a in enumerate(spec.agents):
        if a.id == "ego" or ids.index(a.id) != i:
            yield Finding("consistency", Severity.ERROR, f"agent id {a.id!r} is not unique",
                          (f"agents[{i}].id",), Repair("rename the agent", ((f"agents[{i}].id", f"{a.id}_{i}"),)))
    names = [f.name for f in spec.faults]
    agents = {a.id: a for a in spec.agents}
    for i, fault in enumerate(spec.faults):
        if names.index(fault.name) != i:
            yield Finding("consistency", Severity.ERROR, f"fault name {fault.name!r} is not unique",
                          (_f(i, "name"),), Repair("rename the fault", ((_f(i, "name"), f"{fault.name}_{i}"),)))
        sender = fault.sender
        if sender is None:
            continue
        kind = STREAMS[fault.stream].sender
        if sender == "rsu":
            if kind != "rsu":
                yield Finding("consistency", Severity.ERROR, f"RSUs do not send {fault.stream}",
                              (_f(i, "sender"),), Repair("restrict to a vehicle sender or none", ((_f(i, "sender"), None),)))
        elif sender == "ego":
            yield Finding("consistency", Severity.ERROR, "the ego does not receive its own messages",
                          (_f(i, "sender"),), Repair("restrict to another sender or none", ((_f(i, "sender"), None),)))
        elif sender not in agents:
            yield Finding("consistency", Severity.ERROR, f"sender {sender!r} is not an agent of this spec",
                          (_f(i, "sender"),), Repair(f"use one of {sorted(agents) or ['rsu']}", ((_f(i, "sender"), None),)))
        elif kind == "rsu":
            yield Finding("consistency", Severity.ERROR, f"vehicles do not send {fault.stream}",
                          (_f(i, "sender"),), Repair("use sender 'rsu'", ((_f(i, "sender"), "rsu"),)))
        elif not agents[sender].equipped:
            j = ids.index(sender)
            yield Finding("consistency", Severity.ERROR, f"sender {sender!r} is unequipped and sends nothing to fault",
                          (_f(i, "sender"), f"agents[{j}].equipped"),
                          Repair("equip the sender", ((f"agents[{j}].equipped", True),)))


# 2 ───────────────────────────────────────────────────────────────────────────
@check("roster")
def _roster(ctx: _Ctx) -> Iterator[Finding]:
    spec, app = ctx.spec, ctx.app
    roles = [a.role for a in spec.agents]
    for role in app.required_roles:
        if AgentRole(role) not in roles:
            yield Finding("roster", Severity.ERROR, f"{app.name} needs a '{role}' agent", ("agents",),
                          Repair(f"add a {role} agent", (("agents[+]", {"id": role, "role": role}),)))
    if spec.ego.maneuver.value not in app.ego_maneuvers:
        want = app.ego_maneuvers[0]
        yield Finding("roster", Severity.ERROR, f"{app.name} ego must go {'/'.join(app.ego_maneuvers)}",
                      ("ego.maneuver",), Repair(f"set the ego manoeuvre to {want}", (("ego.maneuver", want),)))
    if app.name is cat.Application.EEBL:
        leads = [i for i, a in enumerate(spec.agents) if a.role is AgentRole.LEAD]
        if leads and not any(spec.agents[i].behaviour.kind is BehaviourKind.HARD_BRAKE for i in leads):
            i = leads[0]
            yield Finding("roster", Severity.ERROR, "EEBL needs a hard-braking lead to raise the event",
                          (f"agents[{i}].behaviour.kind",),
                          Repair("make the lead brake hard", ((f"agents[{i}].behaviour.kind", "hard_brake"),)))
    if spec.v2x.eebl_rebroadcast and AgentRole.RELAY not in roles:
        yield Finding("roster", Severity.WARNING, "EEBL rebroadcast is on but no relay vehicle is placed",
                      ("v2x.eebl_rebroadcast", "agents"),
                      Repair("add a relay agent", (("agents[+]", {"id": "relay", "role": "relay"}),)))


# 3 ───────────────────────────────────────────────────────────────────────────
@check("stream_consumption")
def _stream_consumption(ctx: _Ctx) -> Iterator[Finding]:
    consumed = ctx.app.consumes
    for i, fault in enumerate(ctx.spec.faults):
        if fault.stream not in consumed:
            target = next(iter(consumed))
            yield Finding("stream_consumption", Severity.ERROR,
                          f"{ctx.app.name} never consumes {fault.stream}; the fault cannot reach the decision",
                          (_f(i, "stream"),), Repair(f"target a consumed stream ({', '.join(consumed)})",
                                                     ((_f(i, "stream"), target.value),)))
        elif fault.field not in (None, "*") and fault.field not in consumed[fault.stream]:
            yield Finding("stream_consumption", Severity.ERROR,
                          f"{ctx.app.name} does not read {fault.stream}.{fault.field}",
                          (_f(i, "field"),), Repair(f"target one of {', '.join(consumed[fault.stream])}",
                                                    ((_f(i, "field"), None),)))


# 4 ───────────────────────────────────────────────────────────────────────────
@check("operator_field")
def _operator_field(ctx: _Ctx) -> Iterator[Finding]:
    """The operator/field/magnitude rules of ``lastv2x.core.faults`` (the simulator refuses the same)."""
    for i, fault in enumerate(ctx.spec.faults):
        for p in operator_field_problems(fault, ctx.spec):
            yield Finding("operator_field", Severity.ERROR, p.message, tuple(_f(i, x) for x in p.fields),
                          Repair(p.repair, tuple((_f(i, x), v) for x, v in p.patch)))


# 5 ───────────────────────────────────────────────────────────────────────────
@check("anchor_reachability")
def _anchor_reachability(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    for i, fault in enumerate(spec.faults):
        anchor = fault.anchor
        if anchor.kind is AnchorKind.SIGNAL_EVENT:
            if spec.map.signalized is False:
                yield Finding("anchor_reachability", Severity.ERROR, "signal events never happen on an unsignalized map",
                              (_f(i, "anchor"), "map.signalized"),
                              Repair("anchor to scenario time", ((_f(i, "anchor.kind"), "scenario_time"),
                                                                 (_f(i, "anchor.event"), "none"))))
                continue
            if anchor.group not in EGO_GROUP_ALIASES and anchor.group != CROSS_GROUP:
                yield Finding("anchor_reachability", Severity.NOTE,
                              f"signal group {anchor.group!r} is resolved at grounding; timing assumes the ego group",
                              (_f(i, "anchor.group"),))
        if anchor.event is AnchorEvent.STOP_BAR_DISTANCE and (anchor.distance_m or 0.0) > spec.ego.start_distance_m:
            d = spec.ego.start_distance_m - 1.0
            yield Finding("anchor_reachability", Severity.ERROR,
                          f"the ego starts {spec.ego.start_distance_m} m from the stop bar, never {anchor.distance_m} m",
                          (_f(i, "anchor.distance_m"), "ego.start_distance_m"),
                          Repair("anchor inside the approach", ((_f(i, "anchor.distance_m"), d),)))
            continue
        if anchor.event is AnchorEvent.DECISION_EPOCH and math.isinf(ctx.ego.decision_epoch_s):
            need = math.ceil(ctx.ego.decision_distance_m + 20.0)
            yield Finding("anchor_reachability", Severity.ERROR,
                          f"the ego starts inside its decision distance ({ctx.ego.decision_distance_m:.1f} m)",
                          (_f(i, "anchor"), "ego.start_distance_m"),
                          Repair("start the ego farther out", (("ego.start_distance_m", float(need)),)))
            continue
        start, _end = ctx.windows[i]
        if start >= spec.duration_s:
            t_anchor = anchor_time_s(spec, fault, ctx.ego)
            yield Finding("anchor_reachability", Severity.ERROR,
                          f"the window opens at {start:.2f} s, after the scenario ends ({spec.duration_s} s)",
                          (_f(i, "anchor"), "duration_s"),
                          Repair("extend the scenario", (("duration_s", float(math.ceil(t_anchor + anchor.offset_s + 10))),)))


# 6 ───────────────────────────────────────────────────────────────────────────
def smallest_breaching_burst(budget_s: float, period_s: float, latency_s: float = cat.NOMINAL_LATENCY_S) -> int:
    """n* = floor((B - L) / T): the fewest consecutive drops whose AoI peak exceeds B."""
    return max(1, math.floor((budget_s - latency_s) / period_s + 1e-9))


def burst_breach_probability(p_drop: float, n_burst: int, n_messages: int) -> float:
    """Exact P(a run of >= n_burst drops among n_messages i.i.d. Bernoulli(p) drops).

    With q_k = P(no such run in the first k messages): q_k = 1 for k < n, q_n = 1 - p^n,
    and q_k = q_{k-1} - (1 - p) p^n q_{k-n-1} for k > n (the run ending at k starts
    after a delivered message at k - n).
    """
    if n_messages < n_burst or p_drop <= 0.0:
        return 0.0
    if p_drop >= 1.0:
        return 1.0
    pn = p_drop ** n_burst
    q = [1.0] * n_burst + [1.0 - pn]
    for k in range(n_burst + 1, n_messages + 1):
        q.append(q[k - 1] - (1.0 - p_drop) * pn * q[k - n_burst - 1])
    return min(1.0, max(0.0, 1.0 - q[n_messages]))


@check("freshness_budget")
def _freshness_budget(ctx: _Ctx) -> Iterator[Finding]:
    lat = cat.NOMINAL_LATENCY_S
    for i, fault in enumerate(ctx.spec.faults):
        if fault.stream not in ctx.app.consumes:
            continue
        budget, period = _budget(ctx, fault.stream), _period(fault.stream)
        start, end = ctx.windows[i]
        length = max(0.0, end - start)
        n_star = smallest_breaching_burst(budget, period, lat)
        if fault.operator is FaultOperator.DROP:
            n_window = math.floor(length / period + 1e-9)
            if fault.burst_count is not None:
                n = min(fault.burst_count, n_window)
                if (n + 1) * period + lat <= budget:
                    patch: list[tuple[str, Any]] = [(_f(i, "burst_count"), n_star)]
                    if n_window < n_star:
                        patch.append((_f(i, "duration_s"), round(n_star * period, 3)))
                    yield Finding("freshness_budget", Severity.ERROR,
                                  f"{n} dropped {fault.stream} messages give AoI {(n + 1) * period + lat:.2f} s, "
                                  f"within the {budget} s budget; {n_star} are needed",
                                  (_f(i, "burst_count"), _f(i, "duration_s")),
                                  Repair(f"drop at least {n_star} consecutive messages", tuple(patch)))
            else:
                p = 1.0 if fault.probability is None else fault.probability
                prob = burst_breach_probability(p, n_star, n_window)
                if prob < 0.5:
                    sev = Severity.ERROR if prob < 0.01 else Severity.WARNING
                    min_len = round(n_star * period, 3)
                    patch = [(_f(i, "duration_s"), max(min_len, fault.duration_s or 0.0))] if n_window < n_star else \
                        [(_f(i, "probability"), round(_min_probability(n_star, n_window), 3))]
                    yield Finding("freshness_budget", sev,
                                  f"drop p={p} over {length:.2f} s breaches the {budget} s budget with probability {prob:.3f}",
                                  (_f(i, "probability"), _f(i, "duration_s")),
                                  Repair(f"minimum episode {min_len} s at p=1, or raise p", tuple(patch)))
        elif fault.operator is FaultOperator.DELAY and fault.magnitude is not None:
            need = budget - period - lat
            if fault.magnitude <= need:
                yield Finding("freshness_budget", Severity.ERROR,
                              f"a {fault.magnitude} s delay keeps AoI at {period + lat + fault.magnitude:.2f} s, within {budget} s",
                              (_f(i, "magnitude"),), Repair("delay past the budget", ((_f(i, "magnitude"), round(need + 0.05, 3)),)))
        elif fault.operator is FaultOperator.TIMESTAMP_OFFSET and fault.magnitude is not None:
            need = budget - lat
            if fault.magnitude <= need:
                yield Finding("freshness_budget", Severity.ERROR,
                              f"a {fault.magnitude} s timestamp offset looks fresh under the {budget} s budget",
                              (_f(i, "magnitude"),), Repair("offset past the budget", ((_f(i, "magnitude"), round(need + 0.05, 3)),)))
        elif fault.operator is FaultOperator.SUPPRESS_SENDER and length <= budget:
            yield Finding("freshness_budget", Severity.ERROR,
                          f"a {length:.2f} s silence ends before the {budget} s budget is breached",
                          (_f(i, "duration_s"),), Repair("silence for longer", ((_f(i, "duration_s"), round(budget + 0.5, 3)),)))


def _min_probability(n_burst: int, n_messages: int, target: float = 0.5) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        if burst_breach_probability(mid, n_burst, n_messages) >= target:
            hi = mid
        else:
            lo = mid
    return hi


# 7 ───────────────────────────────────────────────────────────────────────────
def decision_window_s(ctx: _Ctx) -> tuple[float, float]:
    """Interval whose information can change the application's decision."""
    spec = ctx.spec
    if ctx.signal_app:
        t_dec = ctx.ego.decision_epoch_s
        return max(0.0, t_dec - ctx.app.freshness_budget_s), t_dec
    if ctx.app.name in (cat.Application.FCW, cat.Application.EEBL):
        brakes = [a.behaviour.at_time_s for a in spec.agents
                  if a.role is AgentRole.LEAD and a.behaviour.kind is BehaviourKind.HARD_BRAKE]
        t_b = min((b for b in brakes if b is not None), default=0.0)
        return t_b, min(spec.duration_s, t_b + 8.0)
    t_conf = ctx.conflict_time_s()
    return max(0.0, t_conf - cat.CONFLICT_WINDOW_S), t_conf


@check("decision_window")
def _decision_window(ctx: _Ctx) -> Iterator[Finding]:
    if math.isinf(ctx.ego.decision_epoch_s) and ctx.signal_app:
        return  # reported by anchor_reachability / timing
    w0, w1 = decision_window_s(ctx)
    for i, fault in enumerate(ctx.spec.faults):
        if fault.stream not in ctx.app.consumes:
            continue
        start, end = ctx.windows[i]
        semantic = FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC
        hits = (start <= w1 < end) if (semantic and ctx.signal_app) else (start < w1 and end > w0)
        if hits:
            continue
        when = "after" if start >= w1 else "before"
        if semantic and ctx.signal_app and fault.stream is Stream.SPAT:
            repair = _before_amber_repair(ctx, i)
        else:
            lead = 1.5 if ctx.signal_app else 0.5
            offset = round(-lead - (ctx.app.freshness_budget_s if not semantic else 0.0), 3)
            repair = Repair("re-anchor the window to the decision epoch",
                            ((_f(i, "anchor.kind"), "ego_event"), (_f(i, "anchor.event"), "decision_epoch"),
                             (_f(i, "anchor.offset_s"), offset), (_f(i, "duration_s"), None)))
        yield Finding("decision_window", Severity.ERROR,
                      f"the fault is active [{start:.2f}, {end:.2f}) s, {when} the decision window "
                      f"[{w0:.2f}, {w1:.2f}] s; magnitude cannot fix timing",
                      (_f(i, "anchor"), _f(i, "duration_s")), repair)


def _before_amber_repair(ctx: _Ctx, i: int) -> Repair:
    """Open the window 0.5 s before amber onset and time amber 1 s before the decision epoch."""
    t_dec = ctx.ego.decision_epoch_s
    return Repair("capture the feed just before amber onset, with amber onset 1 s before the decision epoch",
                  ((_f(i, "anchor.kind"), "signal_event"), (_f(i, "anchor.event"), "amber_onset"),
                   (_f(i, "anchor.group"), None), (_f(i, "anchor.offset_s"), -0.5), (_f(i, "duration_s"), None),
                   ("signal.offset_s", round(_offset_for_amber_at(ctx.spec, t_dec - 1.0), 3))))


# 8 ───────────────────────────────────────────────────────────────────────────
@check("semantic_corruption")
def _semantic_corruption(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    t_dec = ctx.ego.decision_epoch_s
    for i, fault in enumerate(spec.faults):
        if fault.stream not in ctx.app.consumes:
            continue
        start, end = ctx.windows[i]
        op = fault.operator
        if op is FaultOperator.FREEZE and fault.stream is Stream.SPAT and ctx.signal_app and math.isfinite(t_dec):
            captured, actual = phase_at(spec.signal, start), phase_at(spec.signal, t_dec)
            if captured is actual:
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"the freeze captures {captured} at {start:.2f} s and the true phase at the decision "
                              f"epoch ({t_dec:.2f} s) is also {actual}: nothing is corrupted",
                              (_f(i, "anchor"),), _before_amber_repair(ctx, i))
        elif op is FaultOperator.FREEZE and fault.stream in (Stream.BSM, Stream.EEBL):
            mover = max((a.speed_mps for a in spec.agents if a.role is not AgentRole.BACKGROUND), default=0.0)
            _w0, w1 = decision_window_s(ctx)
            shift = mover * max(0.0, min(end, w1) - start)
            if shift <= cat.POSITION_BUDGET_BASE_M:
                need = round(cat.POSITION_BUDGET_BASE_M / max(mover, 0.1) + 0.5, 3)
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"a frozen BSM drifts {shift:.2f} m before the decision, within the "
                              f"{cat.POSITION_BUDGET_BASE_M} m position budget",
                              (_f(i, "duration_s"),), Repair("freeze for longer", ((_f(i, "duration_s"), need),)))
        elif op is FaultOperator.SPAT_PHASE_CORRUPT and ctx.signal_app and math.isfinite(t_dec):
            if fault.target_phase is not None and fault.target_phase is phase_at(spec.signal, t_dec):
                other = Phase.GREEN if fault.target_phase is not Phase.GREEN else Phase.RED
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"reporting {fault.target_phase} while the light already is {fault.target_phase} corrupts nothing",
                              (_f(i, "target_phase"),), Repair(f"report {other}", ((_f(i, "target_phase"), other.value),)))
        elif op is FaultOperator.SPAT_COUNTDOWN_OFFSET and fault.magnitude is not None:
            if abs(fault.magnitude) <= cat.COUNTDOWN_DIVERGENCE_S:
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"a {fault.magnitude} s countdown error is within the {cat.COUNTDOWN_DIVERGENCE_S} s tolerance",
                              (_f(i, "magnitude"),),
                              Repair("exceed the tolerance", ((_f(i, "magnitude"), math.copysign(cat.COUNTDOWN_DIVERGENCE_S + 0.5, fault.magnitude or 1.0)),)))
        elif op is FaultOperator.BSM_POSITION_OFFSET and fault.magnitude is not None:
            budget = cat.POSITION_BUDGET_BASE_M + cat.POSITION_BUDGET_PER_S_M * _period(fault.stream)
            if fault.magnitude <= budget:
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"a {fault.magnitude} m offset is within the {budget:.2f} m position budget",
                              (_f(i, "magnitude"),), Repair("exceed the position budget", ((_f(i, "magnitude"), round(budget + 0.5, 2)),)))
        elif op is FaultOperator.BSM_SPEED_OFFSET and fault.magnitude is not None and abs(fault.magnitude) < 1.0:
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"a {fault.magnitude} m/s speed error barely moves the dead-reckoned track",
                          (_f(i, "magnitude"),), Repair("use at least 2 m/s", ((_f(i, "magnitude"), -2.0),)))
        elif op is FaultOperator.MAP_MISASSOCIATION:
            if not ctx.signal_app:
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"{ctx.app.name} does not read the lane -> signal-group association",
                              (_f(i, "operator"),), Repair("use a signal application or another operator", ()))
            elif math.isfinite(t_dec) and phase_at(spec.signal, t_dec) is phase_at(spec.signal, t_dec, CROSS_GROUP):
                yield Finding("semantic_corruption", Severity.ERROR,
                              "the wrong group shows the same phase as the ego group at the decision epoch",
                              (_f(i, "target_group"),), Repair("time the decision in the ego group's amber/red", ()))


def _offset_for_amber_at(spec: ScenarioSpec, t_s: float) -> float:
    """signal.offset_s that puts the ego group's amber onset at scenario time t_s."""
    return (spec.signal.green_s - t_s) % spec.signal.cycle_s


# 9 ───────────────────────────────────────────────────────────────────────────
@check("timing")
def _timing(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    if ctx.app.name in (cat.Application.FCW, cat.Application.EEBL):
        for i, a in enumerate(spec.agents):
            t_b = a.behaviour.at_time_s
            if a.behaviour.kind is BehaviourKind.HARD_BRAKE and t_b is not None and t_b >= spec.duration_s:
                yield Finding("timing", Severity.ERROR, f"the hard brake at {t_b} s is after the scenario ends",
                              (f"agents[{i}].behaviour.at_time_s", "duration_s"),
                              Repair("brake earlier", ((f"agents[{i}].behaviour.at_time_s", round(spec.duration_s / 3, 2)),)))
        return
    t_bar = ctx.ego.stop_bar_s
    if t_bar > spec.duration_s:
        yield Finding("timing", Severity.ERROR,
                      f"the ego reaches the stop bar at {t_bar:.2f} s, after the scenario ends",
                      ("duration_s", "ego.start_distance_m", "ego.speed_mps"),
                      Repair("extend the scenario", (("duration_s", float(math.ceil(t_bar + 10.0))),)))
    t_conf = ctx.conflict_time_s()
    for i, a in enumerate(spec.agents):
        if a.role not in (AgentRole.CROSS, AgentRole.OPPOSING):
            continue
        if abs(a.arrival_offset_s) > cat.CONFLICT_WINDOW_S:
            yield Finding("timing", Severity.ERROR,
                          f"{a.id} arrives {a.arrival_offset_s} s from the ego, outside the "
                          f"{cat.CONFLICT_WINDOW_S} s arrival-overlap window: no conflict",
                          (f"agents[{i}].arrival_offset_s",),
                          Repair("arrive within the window", ((f"agents[{i}].arrival_offset_s",
                                                               math.copysign(cat.CONFLICT_WINDOW_S, a.arrival_offset_s)),)))
        elif t_conf + a.arrival_offset_s < 0.0:
            yield Finding("timing", Severity.ERROR, f"{a.id} would have to reach the conflict point before t = 0",
                          (f"agents[{i}].arrival_offset_s",),
                          Repair("arrive later", ((f"agents[{i}].arrival_offset_s", round(-t_conf + 1.0, 2)),)))


# 10 ──────────────────────────────────────────────────────────────────────────
@check("penetration")
def _penetration(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    if spec.v2x.penetration < cat.PENETRATION_WARNING_BELOW:
        yield Finding("penetration", Severity.WARNING,
                      f"penetration {spec.v2x.penetration} < {cat.PENETRATION_WARNING_BELOW}: few senders, low attribution",
                      ("v2x.penetration",), Repair("raise penetration", (("v2x.penetration", cat.PENETRATION_WARNING_BELOW),)))
    key_roles = {AgentRole(r) for r in ctx.app.required_roles}
    unequipped = [i for i, a in enumerate(spec.agents) if a.role in key_roles and not a.equipped]
    if unequipped and not spec.faults:
        yield Finding("penetration", Severity.NOTE,
                      "silent-miss probe: the conflict agent is unequipped and no fault is injected",
                      tuple(f"agents[{i}].equipped" for i in unequipped))
    elif unequipped:
        yield Finding("penetration", Severity.WARNING,
                      "the conflict agent is unequipped: its absence, not the fault, drives the outcome",
                      tuple(f"agents[{i}].equipped" for i in unequipped),
                      Repair("equip the conflict agent", tuple((f"agents[{i}].equipped", True) for i in unequipped)))


# 11 ──────────────────────────────────────────────────────────────────────────
RSU_SETBACK_M = 10.0  # RSU mast distance beyond the stop bar


@check("channel_baseline")
def _channel_baseline(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    range_m = spec.v2x.channel.range_m
    if ctx.signal_app:
        if spec.v2x.rsu_placement is RsuPlacement.NONE:
            yield Finding("channel_baseline", Severity.WARNING,
                          "no RSU: SPaT never arrives, the pristine channel is already over budget",
                          ("v2x.rsu_placement",), Repair("place an RSU at the junction", (("v2x.rsu_placement", "junction"),)))
        elif range_m < ctx.ego.decision_distance_m + RSU_SETBACK_M:
            need = math.ceil(ctx.ego.decision_distance_m + RSU_SETBACK_M + 10.0)
            yield Finding("channel_baseline", Severity.WARNING,
                          f"at the decision epoch the ego is {ctx.ego.decision_distance_m + RSU_SETBACK_M:.0f} m from the RSU, "
                          f"beyond range {range_m} m: the pristine channel already breaches the budget",
                          ("v2x.channel.range_m",), Repair("extend the range or relay SPaT", (("v2x.channel.range_m", float(need)),)))
        return
    for i, a in enumerate(spec.agents):
        if a.role in (AgentRole.CROSS, AgentRole.OPPOSING):
            horizon = 4.0
            dist = math.hypot(spec.ego.speed_mps * horizon, a.speed_mps * horizon)
        elif a.role is AgentRole.LEAD:
            dist = a.gap_m
        else:
            continue
        if dist > range_m:
            yield Finding("channel_baseline", Severity.WARNING,
                          f"{a.id} is {dist:.0f} m from the ego when it matters, beyond range {range_m} m",
                          ("v2x.channel.range_m", f"agents[{i}]"),
                          Repair("extend the range", (("v2x.channel.range_m", float(math.ceil(dist + 10))),)))


def verify(spec: ScenarioSpec) -> VerificationReport:
    """Run every check family; pure, deterministic, no simulation."""
    ego = ego_timeline(spec)
    ctx = _Ctx(spec, APPLICATIONS[spec.application], ego,
               [fault_window_s(spec, f, ego) for f in spec.faults])
    findings = tuple(f for name in CHECKS for f in CHECKS[name](ctx))
    return VerificationReport(findings, ego.decision_epoch_s, ego.stop_bar_s)


__all__ = ["CHECKS", "Finding", "Repair", "Severity", "VerificationReport", "verify",
           "smallest_breaching_burst", "burst_breach_probability", "decision_window_s"]
