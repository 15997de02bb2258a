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

The verifier is also the search's feasibility gate, so a fault may be blocked only where no
decision the application actually takes can see it (``DecisionEpochs``): the approach epoch
(GLOSA: wherever its advisory, or a fault that moves it, takes the ego), every instant an ego
stopped at its red waits for a believed green, junctions a corridor adds at times the spec
cannot tell, and the repeated checks of the conflict applications. Signal applications fail
by entering on red, so a fault matters where it lets go an ego the true phase stops: a
content fault by what it makes the ego believe, a stale feed (the fallback proceeds) only
where the truth stops it. Repairs are tried on a copy of the spec and the first that clears
the fault is returned; those that keep the fault as written (re-timing the signal, moving
the ego or the brake) come before those that move its window.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lastv2x.core import catalogue as cat
from lastv2x.core.catalogue import (
    APPLICATIONS,
    FAULT_OPERATORS,
    REACTION_TIME_S,
    STREAMS,
    AppKind,
    Registry,
    Stream,
    stopping_distance_m,
)
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.faults import operator_field_problems
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import (
    AgentRole,
    AnchorEvent,
    AnchorKind,
    BehaviourKind,
    FaultOperator,
    JunctionKind,
    Phase,
    RsuPlacement,
    ScenarioSpec,
    parse_spec,
    spec_to_dict,
)
from lastv2x.core.timeline import (
    CROSS_GROUP,
    EGO_GROUP_ALIASES,
    GLOSA_MIN_SPEED_MPS,
    GLOSA_RED_END_MARGIN_S,
    EgoTimeline,
    anchor_time_s,
    ego_timeline,
    epoch_rule_stops,
    epoch_travel_s,
    fault_window_s,
    glosa_timeline,
    green_release_s,
    phase_at,
    signal_rule_stops,
    stopped_at_s,
    time_to_change_s,
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
    ego: EgoTimeline  # the approach the ground-truth rollout drives (GLOSA: its advisory's)
    windows: list[tuple[float, float]] = field(default_factory=list)
    const: EgoTimeline | None = None  # the ego holding its own speed (GLOSA without an advisory); None = ego
    epochs: DecisionEpochs = field(default_factory=lambda: DecisionEpochs())
    reach: list[set[str]] = field(default_factory=list)  # per fault: the decision epochs it can reach
    search_repairs: bool = True  # try candidate repairs on a copy of the spec (off inside that trial)
    plain_errors: set[tuple[str, tuple[str, ...]]] | None = None  # (check, fields) of this spec's errors
    freshness: list[Finding] | None = None  # freshness_budget's findings, once computed

    @property
    def own_speed(self) -> EgoTimeline:
        return self.ego if self.const is None else self.const

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


_PERIODS = {s: STREAMS[s].period_s for s in Stream}


def _period(stream: Stream) -> float:
    return _PERIODS[stream]


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


def _absent_until_s(ctx: _Ctx, i: int) -> float:
    """A window that opens before the first message withholds the stream from the start: until when
    (its start when it withholds nothing for sure)."""
    fault = ctx.spec.faults[i]
    start, end = ctx.windows[i]
    period = _period(fault.stream)
    if start >= period + cat.NOMINAL_LATENCY_S:
        return start
    if fault.operator is FaultOperator.SUPPRESS_SENDER or (
            fault.operator is FaultOperator.DROP and fault.burst_count is None and fault.probability in (None, 1.0)):
        return end
    if fault.operator is FaultOperator.DROP and fault.burst_count is not None:
        return min(end, start + fault.burst_count * period)
    if fault.operator is FaultOperator.DELAY:
        return min(end, start + (fault.magnitude or 0.0))
    if fault.operator is FaultOperator.TIMESTAMP_OFFSET and \
            (fault.magnitude or 0.0) + cat.NOMINAL_LATENCY_S > _budget(ctx, fault.stream):
        return end  # the first message already arrives stale
    return start


def _absent_from_start(ctx: _Ctx, i: int) -> bool:
    """Does fault i keep its stream absent from the start until the first decision epoch?"""
    first = ctx.epochs.checks[0] if ctx.epochs.checks is not None else \
        ctx.epochs.approach[0] if ctx.epochs.approach is not None else math.inf
    absent = _absent_until_s(ctx, i)
    return absent > ctx.windows[i][0] and absent + _period(ctx.spec.faults[i].stream) + cat.NOMINAL_LATENCY_S >= first


@check("freshness_budget")
def _freshness_budget(ctx: _Ctx) -> Iterator[Finding]:
    if ctx.freshness is None:
        ctx.freshness = list(_freshness_findings(ctx))
    yield from ctx.freshness


def _freshness_findings(ctx: _Ctx) -> Iterator[Finding]:
    lat = cat.NOMINAL_LATENCY_S
    for i, fault in enumerate(ctx.spec.faults):
        if fault.stream not in ctx.app.consumes:
            continue
        budget, period = _budget(ctx, fault.stream), _period(fault.stream)
        start, end = ctx.windows[i]
        length = max(0.0, end - start)
        n_star = smallest_breaching_burst(budget, period, lat)
        if _absent_from_start(ctx, i):
            continue  # the stream is absent from the start (not stale) until a decision is taken
        if fault.operator is FaultOperator.DROP:
            n_window = math.ceil(length / period - 1e-9)  # the most messages a window this long can hold
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
        elif fault.operator is FaultOperator.SUPPRESS_SENDER and \
                (math.ceil(length / period - 1e-9) + 1) * period + lat <= budget:
            # a window of length D silences at most ceil(D / T) messages: AoI peak (n + 1) T + L
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
# Every decision epoch the applications take (services/simulator/apps), on the spec-level timeline:
#
# * signal applications decide on the approach when d <= ds(v) (GLOSA: somewhere between the
#   constant-speed approach and the slower one its advisory drives); an ego told to stop then
#   decides again at *every* instant while it stands at the bar -- a believed green releases it, so
#   until the true green onset a phase that reads green is causal; past the bar of its junction it
#   decides nothing more, unless the route runs on through junctions the spec cannot place (a
#   corridor, a chain of RSUs, SPaT relayed from junctions ahead), whose epochs may come at any time;
# * FCW / EEBL check their lead every step from the moment the gap closes (at the latest the hard
#   brake) until the ego has stopped behind it (a stopped lead is struck no less);
# * IMA / LTA check the conflict point every step from the decision epoch until the ego has crossed
#   its stop bar: at once when the point is clear, or after it yields to the last crossing agent or
#   waits for its own green.
DECISION_SLACK_S = 0.15  # an epoch falls on a simulation step just after its closed-form time [s]
INSTANT_STEP_S = 0.1  # decision instants are sampled this finely (a message period; the ends always) [s]
STOP_SLACK_S = 0.5  # the ego may stand (v < STOPPED_MPS) this much before the closed-form stop time [s]
FCW_RELEASE_TTC_S = 4.0  # services.simulator.apps.conflict: FCW starts caring when TTC falls to this [s]
CROSSING_CLEAR_S = 1.0  # an ego yielding to an agent at the conflict point moves on this soon after it [s]
CONFLICT_CHECKS_S = 8.0  # FCW / EEBL: checks this long after the brake (the ego may still strike the stopped lead) [s]


@dataclass(frozen=True)
class DecisionEpochs:
    """When the application decides (scenario seconds; None = never).

    ``approach``: first and last possible approach epoch of a signal application; ``wait``: an ego
    stopped at the bar, deciding at every instant on a believed green; ``beyond_s``: from here on
    junctions the spec cannot place may be decided (inf: none); ``checks``: the repeated checks of a
    conflict application; ``advised_mps``: GLOSA's advised approach speed on the true plan (the
    approach of the ground-truth rollout; a fault may move the ego off it, see ``_approach_range``).
    """

    approach: tuple[float, float] | None = None
    wait: tuple[float, float] | None = None
    beyond_s: float = math.inf
    checks: tuple[float, float] | None = None
    advised_mps: float | None = None


def _effective_end(ctx: _Ctx, i: int) -> float:
    """A message sent just before a window closes stays in use until the next one arrives."""
    stream = ctx.spec.faults[i].stream
    return ctx.windows[i][1] + _period(stream) + cat.NOMINAL_LATENCY_S


def _signal_epochs(ctx: _Ctx) -> DecisionEpochs:
    spec, plan = ctx.spec, ctx.spec.signal
    glosa = ctx.app.name is cat.Application.GLOSA
    # the ego's own speed; GLOSA: also the advised approach (the ground truth's), a fault may move it off
    timelines = (ctx.own_speed,) if ctx.own_speed is ctx.ego else (ctx.own_speed, ctx.ego)
    cands = [(e.decision_epoch_s, e.speed_mps) for e in timelines if math.isfinite(e.decision_epoch_s)]
    if not cands:
        return DecisionEpochs()
    advised = ctx.ego.speed_mps if glosa and math.isfinite(ctx.ego.decision_epoch_s) else None
    a0, a1 = min(t for t, _v in cands), max(t for t, _v in cands)
    # faults on the signal streams around the approach epoch may stop an ego the truth lets go
    inducing = []
    for i, f in enumerate(spec.faults):
        if f.stream in (Stream.SPAT, Stream.MAP) and ctx.windows[i][0] <= a1 + DECISION_SLACK_S:
            end = _effective_end(ctx, i)
            if end >= a0 - _budget(ctx, f.stream):
                inducing.append(end)
    stops = [(t, v) for t, v in cands if epoch_rule_stops(plan, t, epoch_travel_s(v), glosa)]
    wait = None
    if stops or inducing:
        t_stop = min(stopped_at_s(t, v) for t, v in (stops or cands)) - STOP_SLACK_S
        t_free = max([t_stop, *inducing]) if inducing else t_stop
        t_go = min(green_release_s(plan, t_free), spec.duration_s)
        if t_go > t_stop:
            wait = (t_stop, t_go)
    corridor = (spec.map.junction_kind is JunctionKind.CORRIDOR or spec.v2x.rsu_placement is RsuPlacement.CHAIN
                or spec.v2x.spat_relay)
    return DecisionEpochs(approach=(a0, a1), wait=wait, beyond_s=a1 if corridor else math.inf, advised_mps=advised)


def _conflict_epochs(ctx: _Ctx) -> DecisionEpochs:
    spec, ego = ctx.spec, ctx.ego
    if ctx.app.name in (cat.Application.FCW, cat.Application.EEBL):
        leads = [a for a in spec.agents if a.role in (AgentRole.LEAD, AgentRole.RELAY)]
        braking = [a for a in leads if a.behaviour.kind is BehaviourKind.HARD_BRAKE]
        t_b = min((a.behaviour.at_time_s or 0.0 for a in braking), default=0.0)
        start = t_b
        for a in leads:  # a lead slower than the ego closes the gap before any brake
            closing = ego.speed_mps - a.speed_mps
            if closing > 1e-6:
                bumper_gap = a.gap_m - 5.0  # less about a car length
                start = min(start, max(0.0, (bumper_gap - FCW_RELEASE_TTC_S * closing) / closing))
        # the ego strikes a stopped lead no less: checks matter until it has stopped behind it
        end = t_b + CONFLICT_CHECKS_S if braking else spec.duration_s
        return DecisionEpochs(checks=(start, min(spec.duration_s, end)))
    t_dec = 0.0 if math.isinf(ego.decision_epoch_s) else ego.decision_epoch_s
    t_conf = ctx.conflict_time_s()
    last = max(ego.stop_bar_s, t_conf)
    for a in spec.agents:
        if a.role in (AgentRole.CROSS, AgentRole.OPPOSING):
            last = max(last, t_conf + a.arrival_offset_s + CROSSING_CLEAR_S)
    if spec.map.signalized is not False and phase_at(spec.signal, ego.stop_bar_s) is not Phase.GREEN:
        # on a (possibly) signalized junction a conflict-application ego obeys its light: it checks
        # until it crosses its bar on the next green
        last = max(last, green_release_s(spec.signal, ego.stop_bar_s) + CROSSING_CLEAR_S)
    return DecisionEpochs(checks=(max(0.0, t_dec - ctx.app.freshness_budget_s), min(spec.duration_s, last)))


def decision_epochs(ctx: _Ctx) -> DecisionEpochs:
    return _signal_epochs(ctx) if ctx.signal_app else _conflict_epochs(ctx)


def decision_window_s(ctx: _Ctx) -> tuple[float, float]:
    """The approach decision's window (signal apps: the freshness budget before the epoch) or the
    interval of repeated conflict checks; ``decision_epochs`` has every epoch."""
    ep = ctx.epochs
    if ep.checks is not None:
        return ep.checks
    if ep.approach is None:
        return math.inf, math.inf
    return max(0.0, ep.approach[0] - ctx.app.freshness_budget_s), ep.approach[1]


def _reach(ctx: _Ctx, i: int) -> set[str]:
    """The decision epochs fault ``i`` can reach: 'approach', 'wait', 'beyond' (signal apps), 'checks'.

    Temporal faults on a signal stream reach only the approach (and junctions beyond): a stopped ego
    holds on stale information. Content faults reach the wait too; whether what they say releases the
    ego is ``semantic_corruption``'s question."""
    fault = ctx.spec.faults[i]
    start, _end = ctx.windows[i]
    eff_end = _effective_end(ctx, i)
    semantic = FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC
    ep, out = ctx.epochs, set()
    if ep.checks is not None:
        c0, c1 = ep.checks
        if start < c1 and eff_end > c0:
            out.add("checks")
        return out
    rng = _approach_range(ctx, i)
    if rng is not None:
        a0, a1 = rng
        lo = a0 - (0.0 if semantic else _budget(ctx, fault.stream)) - DECISION_SLACK_S
        if start <= a1 + DECISION_SLACK_S and eff_end >= lo:
            out.add("approach")
    if ep.wait is not None and semantic and start < ep.wait[1] and eff_end > ep.wait[0]:
        out.add("wait")
    if eff_end > ep.beyond_s and start < ctx.spec.duration_s:
        out.add("beyond")
    return out


@check("decision_window")
def _decision_window(ctx: _Ctx) -> Iterator[Finding]:
    ep = ctx.epochs
    if ep.approach is None and ep.checks is None:
        return  # reported by anchor_reachability / timing
    w0, w1 = decision_window_s(ctx)
    last = max(w1, ep.wait[1] if ep.wait is not None else w1)
    where = f"the decision window [{w0:.2f}, {w1:.2f}] s"
    if ep.wait is not None:
        where += f" and the wait at the red [{ep.wait[0]:.2f}, {ep.wait[1]:.2f}) s"
    for i, fault in enumerate(ctx.spec.faults):
        if fault.stream not in ctx.app.consumes or ctx.reach[i]:
            continue
        start, end = ctx.windows[i]
        semantic = FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC
        lead = 1.5 if ctx.signal_app else 0.5
        offset = round(-lead - (_budget(ctx, fault.stream) if not semantic else 0.0), 3)
        candidates = [*_scene_repairs(ctx, i),
                      Repair("re-anchor the window to the decision epoch",
                             ((_f(i, "anchor.kind"), "ego_event"), (_f(i, "anchor.event"), "decision_epoch"),
                              (_f(i, "anchor.offset_s"), offset), (_f(i, "duration_s"), None)))]
        if semantic and ctx.signal_app and fault.stream is Stream.SPAT:
            candidates.insert(-1, _before_amber_repair(ctx, i))
        elif ctx.signal_app:
            candidates.append(_go_on_red_repair(ctx, i, "keep the fault", (), offset=offset))
        repair = _pick_repair(ctx, i, "decision_window", candidates)
        when = "before" if start < w0 else "after" if start >= last else "outside"
        yield Finding("decision_window", Severity.ERROR,
                      f"the fault is active [{start:.2f}, {end:.2f}) s, {when} {where}"
                      f"{'' if semantic or ep.wait is None else ' (a stopped ego holds on stale information)'}; "
                      "magnitude cannot fix timing",
                      (_f(i, "anchor"), _f(i, "duration_s")), repair)
    if not ctx.signal_app or math.isinf(ctx.ego.decision_epoch_s):
        return
    stale_problems = {f.fields[0].split(".")[0] for f in _freshness_budget(ctx) if f.severity is Severity.ERROR}
    for i, fault in enumerate(ctx.spec.faults):
        if ctx.reach[i] != {"approach"} or FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC:
            continue
        stale = _stale_instants(ctx, i)
        if _f(i) in stale_problems or any(_truth_stops(ctx, i, t) for t in stale):
            continue  # it cannot make the feed stale (freshness_budget's finding), or it matters
        budget = _budget(ctx, fault.stream)
        earlier = Repair("open the window a budget before the decision epoch, active to the end",
                         ((_f(i, "anchor.kind"), "ego_event"), (_f(i, "anchor.event"), "decision_epoch"),
                          (_f(i, "anchor.group"), None), (_f(i, "anchor.distance_m"), None),
                          (_f(i, "anchor.offset_s"), round(-0.5 - budget, 3)), (_f(i, "duration_s"), None)))
        red = _go_on_red_repair(ctx, i, "keep the fault", (), offset=round(-0.5 - budget, 3))
        if stale:
            yield Finding("decision_window", Severity.ERROR,
                          f"the fault can leave the ego without fresh {fault.stream} only at approach epochs where the "
                          "true phase lets it go anyway (a stale feed falls back to proceeding)",
                          (_f(i, "anchor"), _f(i, "duration_s"), "signal.offset_s"),
                          _pick_repair(ctx, i, "decision_window", [*_scene_repairs(ctx, i), red]))
        else:
            yield Finding("decision_window", Severity.ERROR,
                          f"the fault cannot leave the ego without fresh {fault.stream} at its decision epoch: "
                          f"{fault.stream} turns stale only {budget:g} s into a gap",
                          (_f(i, "anchor"), _f(i, "duration_s")),
                          _pick_repair(ctx, i, "decision_window", [
                              *_scene_repairs(ctx, i), earlier, red,
                              Repair("drop every message, from a budget before the decision epoch",
                                     (*earlier.patch, (_f(i, "probability"), None), (_f(i, "burst_count"), None)))]))


def _stale_instants(ctx: _Ctx, i: int) -> list[float]:
    """Approach instants at which fault i (temporal) may leave the ego without fresh information
    (or, for a delay, with information from before a phase change): from a budget after the window
    opens (a delay: at once) until the next message after it closes has arrived."""
    fault, rng = ctx.spec.faults[i], _approach_range(ctx, i)
    if rng is None:
        return []
    start, end = ctx.windows[i]
    period, lat = _period(fault.stream), cat.NOMINAL_LATENCY_S
    lo = start if fault.operator is FaultOperator.DELAY else start + _budget(ctx, fault.stream) - period - lat
    if _absent_until_s(ctx, i) > start:
        lo = 0.0  # nothing arrived before the window: absent from the start
    if fault.operator is FaultOperator.DROP and fault.burst_count is not None:
        end = min(end, start + fault.burst_count * period)
    late = (fault.magnitude or 0.0) if fault.operator is FaultOperator.DELAY else 0.0
    a = max(lo, rng[0]) - DECISION_SLACK_S
    b = min(end + period + lat + late, rng[1]) + DECISION_SLACK_S
    if a > b:
        return []
    n = min(2000, int((b - a) / INSTANT_STEP_S) + 2)
    return [a + k * (b - a) / (n - 1) for k in range(n)]


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
                      (*window, ("signal.offset_s", round(_offset_for_amber_at(ctx.spec, t_ref - 1.0), 3))))
    t_dec = ctx.ego.decision_epoch_s
    return Repair("capture the feed just before amber onset, with amber onset 1 s before the decision epoch",
                  ((_f(i, "anchor.kind"), "signal_event"), (_f(i, "anchor.event"), "amber_onset"),
                   (_f(i, "anchor.group"), None), (_f(i, "anchor.offset_s"), -0.5), (_f(i, "duration_s"), None),
                   ("signal.offset_s", round(_offset_for_amber_at(ctx.spec, t_dec - 1.0), 3))))


# 8 ───────────────────────────────────────────────────────────────────────────
# A signal application fails by entering on red, so a content fault matters only where it lets an
# ego go that the true phase stops: at an approach epoch (believed go, true stop) or while the ego
# stands at the red (believed green). Each modelled fault's belief at t is (phase, countdown).
def _instants(ctx: _Ctx, i: int, lo: float, hi: float) -> list[float]:
    """Decision instants in [lo, hi] that fault i's effective window covers, every INSTANT_STEP_S or finer."""
    a, b = max(lo, ctx.windows[i][0]), min(hi, _effective_end(ctx, i))
    if a > b:
        return []
    n = min(2000, int((b - a) / INSTANT_STEP_S) + 2)
    return [a + k * (b - a) / (n - 1) for k in range(n)]


def _approach_instants(ctx: _Ctx, i: int, retimed: bool = False) -> list[float]:
    """Approach instants fault i covers; ``retimed``: every approach instant, as if its window covered them."""
    rng = _approach_range(ctx, i)
    if rng is None or ("approach" not in ctx.reach[i] and not retimed):
        return []
    a0, a1 = rng
    lo, hi = a0 - _period(ctx.spec.faults[i].stream) - cat.NOMINAL_LATENCY_S, a1 + DECISION_SLACK_S
    if retimed:
        n = min(2000, int((hi - lo) / INSTANT_STEP_S) + 2)
        return [lo + k * (hi - lo) / (n - 1) for k in range(n)]
    return _instants(ctx, i, lo, hi)


def _wait_instants(ctx: _Ctx, i: int) -> list[float]:
    wait = ctx.epochs.wait
    return _instants(ctx, i, wait[0], wait[1]) if wait is not None and "wait" in ctx.reach[i] else []


def _glosa_epoch_s(ctx: _Ctx, s: float, v: float) -> float:
    """GLOSA: the approach epoch of an ego that follows the true advisory until s, then holds v."""
    adv = ctx.epochs.advised_mps or ctx.spec.ego.speed_mps
    s = max(0.0, s)
    return s + (ctx.spec.ego.start_distance_m - adv * s - stopping_distance_m(v)) / v


def _approach_range(ctx: _Ctx, i: int) -> tuple[float, float] | None:
    """First and last approach epoch fault i may meet. GLOSA's depends on the fault: the truth drives
    the advised approach, a fault that opens before it may move the ego off it -- a stale feed ends
    the advisory (back to the ego's own speed), corrupted content may advise anything from the
    slowest advisory to the ego's own speed."""
    ep = ctx.epochs
    if ep.approach is None:
        return None
    if ep.advised_mps is None:
        return ep.approach
    fault, start = ctx.spec.faults[i], _influence_start_s(ctx, i)
    t_adv = ep.approach[1]
    if start >= t_adv:
        return t_adv, t_adv
    semantic = FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC
    v_max = ctx.spec.ego.speed_mps
    v_min = min(GLOSA_MIN_SPEED_MPS, v_max)
    a0 = min(t_adv, _glosa_epoch_s(ctx, start, v_max))
    a1 = max(t_adv, _glosa_epoch_s(ctx, start, v_min)) if semantic else t_adv
    return a0, a1


def _influence_start_s(ctx: _Ctx, i: int) -> float:
    """When fault i starts to change what the ego believes: at once for content and delay faults,
    a freshness budget into the window for the others (or at once when it withholds from the start)."""
    fault, start = ctx.spec.faults[i], ctx.windows[i][0]
    if FAULT_OPERATORS[fault.operator.value].kind is cat.FaultKind.SEMANTIC or fault.operator is FaultOperator.DELAY \
            or _absent_until_s(ctx, i) > start:
        return start
    return start + _budget(ctx, fault.stream) - _period(fault.stream) - cat.NOMINAL_LATENCY_S


def _epoch_speed(ctx: _Ctx, i: int, t: float) -> float:
    """The speed of an ego whose approach epoch falls at t (under fault i): its own, or (GLOSA) the
    speed it holds from the fault's start on to reach its decision distance at t."""
    v_max, ep = ctx.spec.ego.speed_mps, ctx.epochs
    if ep.advised_mps is None or ep.approach is None:
        return ctx.ego.speed_mps
    start = _influence_start_s(ctx, i)
    if start >= ep.approach[1]:
        return ep.advised_mps
    # t = s + (D - ds(v)) / v, ds(v) = v t_r + v^2 / (2 a): v^2 / (2 a) + (t - s + t_r) v - D = 0
    s0 = max(0.0, start)
    d = ctx.spec.ego.start_distance_m - ep.advised_mps * s0
    b = t - s0 + REACTION_TIME_S
    a = cat.COMFORT_DECEL_MPS2
    v = a * (-b + math.sqrt(b * b + 2.0 * max(d, 0.0) / a))
    return min(max(v, min(GLOSA_MIN_SPEED_MPS, v_max)), v_max)


def _truth_stops(ctx: _Ctx, i: int, t: float) -> bool:
    """The epoch rule on the true phase for an approach epoch at t (under fault i)."""
    return epoch_rule_stops(ctx.spec.signal, t, epoch_travel_s(_epoch_speed(ctx, i, t)),
                            ctx.app.name is cat.Application.GLOSA)


Belief = Callable[[float], tuple[Phase, float]]


def _belief(ctx: _Ctx, i: int) -> Belief | None:
    """What fault ``i`` alone makes the ego believe at t, as (phase, countdown); None = not modelled."""
    plan, fault = ctx.spec.signal, ctx.spec.faults[i]
    op = fault.operator
    if op is FaultOperator.SPAT_PHASE_CORRUPT and fault.target_phase is not None:
        target = fault.target_phase
        return lambda t: (target, time_to_change_s(plan, t))
    if op is FaultOperator.SPAT_COUNTDOWN_OFFSET and fault.magnitude is not None \
            and ctx.app.name is not cat.Application.GLOSA:  # GLOSA reads countdowns in every phase
        shift = fault.magnitude
        return lambda t: (phase_at(plan, t), max(0.0, time_to_change_s(plan, t) + shift))
    if op is FaultOperator.FREEZE and fault.stream is Stream.SPAT:
        c = max(0.0, ctx.windows[i][0] - _period(fault.stream))  # the last message before the window
        phase, end = phase_at(plan, c), c + time_to_change_s(plan, c)  # min_end_time is absolute
        return lambda t: (phase, max(0.0, end - t))
    if op is FaultOperator.MAP_MISASSOCIATION and fault.target_group in (None, CROSS_GROUP):
        return lambda t: (phase_at(plan, t, CROSS_GROUP), time_to_change_s(plan, t, CROSS_GROUP))
    return None


def _goes_on_red(ctx: _Ctx, i: int, belief: Belief, retimed: bool = False) -> bool:
    """Does the belief let the ego go where the true phase stops it, at an epoch fault i covers
    (``retimed``: at any approach epoch, wherever its window is)?"""
    plan, glosa = ctx.spec.signal, ctx.app.name is cat.Application.GLOSA
    for t in _approach_instants(ctx, i, retimed):
        phase, ttc = belief(t)
        if _truth_stops(ctx, i, t) and not signal_rule_stops(phase, ttc, epoch_travel_s(_epoch_speed(ctx, i, t)), glosa):
            return True
    return not retimed and any(belief(t)[0] is Phase.GREEN and phase_at(plan, t) is not Phase.GREEN
                               for t in _wait_instants(ctx, i))


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
                              (("signal.offset_s", round(_offset_for_amber_at(spec, t - 1.0), 3)),)))
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
    if ctx.app.name in (cat.Application.FCW, cat.Application.EEBL):
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
    if not ctx.search_repairs:
        return cands[0]
    if ctx.plain_errors is None:
        ctx.plain_errors = {(f.check, f.fields) for f in _verify(ctx.spec, search_repairs=False).findings
                            if f.severity is Severity.ERROR}
    base = spec_to_dict(ctx.spec)
    silencing = None
    for rep in cands:
        try:
            patched = parse_spec(apply_patch(base, rep.patch))
        except InvalidArgument:
            continue
        errors = [f for f in _verify(patched, search_repairs=False).findings if f.severity is Severity.ERROR]
        if not any(_about(f, i) for f in errors) and all((f.check, f.fields) in ctx.plain_errors for f in errors):
            return rep
        if silencing is None and not any(f.check == family and _about(f, i) for f in errors):
            silencing = rep
    return silencing or cands[0]


def _countdown_shifts(ctx: _Ctx, i: int, retimed: bool = False) -> list[float]:
    """Countdown shifts that let the ego go where the truth stops it, at an approach instant fault i
    covers (0.25 s past the margin): a longer amber it believes it clears, a red (GLOSA) it believes
    ends before it arrives."""
    plan, glosa, out = ctx.spec.signal, ctx.app.name is cat.Application.GLOSA, []
    for t in _approach_instants(ctx, i, retimed):
        if not _truth_stops(ctx, i, t):
            continue
        travel, phase, ttc = epoch_travel_s(_epoch_speed(ctx, i, t)), phase_at(plan, t), time_to_change_s(plan, t)
        if phase is Phase.AMBER:
            out.append(travel - ttc + 0.25)
        elif phase is Phase.RED and glosa:
            out.append(travel - GLOSA_RED_END_MARGIN_S - ttc - 0.25)
    return out


def _signal_content(ctx: _Ctx, i: int) -> Iterator[Finding]:
    """Content faults of a signal application that never let the ego go on red. A fault whose window
    meets no epoch (decision_window's finding) is judged as if it did: would what it says matter there?"""
    spec, fault = ctx.spec, ctx.spec.faults[i]
    reach = ctx.reach[i]
    if "beyond" in reach or math.isinf(ctx.ego.decision_epoch_s):
        return  # junctions the spec cannot place
    retimed = not reach
    belief = _belief(ctx, i)
    if belief is None or _goes_on_red(ctx, i, belief, retimed):
        return
    start = ctx.windows[i][0]
    op = fault.operator
    approach = bool(_approach_instants(ctx, i, retimed))
    scene = _scene_repairs(ctx, i)
    if op is FaultOperator.FREEZE:
        phase = belief(start)[0]
        yield Finding("semantic_corruption", Severity.ERROR,
                      f"the freeze captures {phase} at {start:.2f} s: at the decision epoch it lets no ego go that the "
                      "true phase stops" if approach else
                      f"the freeze opens at {start:.2f} s, after the approach decision: a stopped ego keeps "
                      "seeing the phase it stopped for", (_f(i, "anchor"),),
                      _pick_repair(ctx, i, "semantic_corruption", [*scene, _before_amber_repair(ctx, i)]))
    elif op is FaultOperator.SPAT_PHASE_CORRUPT:
        target = fault.target_phase
        green = Repair("report green", ((_f(i, "target_phase"), "green"),))
        composite = _go_on_red_repair(ctx, i, "report green", ((_f(i, "target_phase"), "green"),))
        if not approach and target is not Phase.GREEN:
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"reporting {target} to an ego stopped at the red releases nothing: only a believed "
                          "green does", (_f(i, "target_phase"),),
                          _pick_repair(ctx, i, "semantic_corruption", [green, *scene, composite]))
        elif approach and target is not Phase.GREEN and any(
                _truth_stops(ctx, i, t) for t in _approach_instants(ctx, i, retimed)):
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"reporting {target} stops the ego wherever the true phase does: nothing lets it go on red",
                          (_f(i, "target_phase"),), _pick_repair(ctx, i, "semantic_corruption", [green, *scene, composite]))
        else:
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"reporting {target} while the true phase lets the ego go corrupts nothing",
                          (_f(i, "target_phase"), _f(i, "anchor")),
                          _pick_repair(ctx, i, "semantic_corruption", [*scene, green, composite]))
    elif op is FaultOperator.SPAT_COUNTDOWN_OFFSET:
        lo, hi = FAULT_OPERATORS[op.value].magnitude_range or (-60.0, 60.0)
        shifts = [m for m in _countdown_shifts(ctx, i, retimed) if lo <= m <= hi]
        window, t_ref = _repair_window(ctx, i, -0.5)
        travel = epoch_travel_s(ctx.own_speed.speed_mps)
        amber = spec.signal.amber_s
        x = min(max(1.0, amber - travel + 0.5), max(amber - 0.25, 0.0))  # amber onset x s before the epoch
        need = round(max(0.5, travel - (amber - x)) + 0.25, 2)
        composite = Repair(f"time amber {x:.2f} s before the decision epoch and lengthen the believed amber",
                           (*window, (_f(i, "magnitude"), need),
                            ("signal.offset_s", round(_offset_for_amber_at(spec, t_ref - x), 3))))
        if shifts:
            current: float = fault.magnitude or 0.0
            shifts.sort(key=lambda shift: abs(shift - current))
            best = round(shifts[0], 2)
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"a {fault.magnitude} s countdown error does not let the ego go where the true phase stops "
                          f"it; {best} s would", (_f(i, "magnitude"),),
                          _pick_repair(ctx, i, "semantic_corruption",
                                       [*scene, Repair("shift the countdown past the margin",
                                                       ((_f(i, "magnitude"), best),)), composite]))
        else:
            yield Finding("semantic_corruption", Severity.ERROR,
                          "a countdown error matters only on an amber (GLOSA: a red) that stops the ego at the "
                          "decision epoch; the fault covers none", (_f(i, "magnitude"), _f(i, "anchor")),
                          _pick_repair(ctx, i, "semantic_corruption", [*scene, composite]))
    elif op is FaultOperator.MAP_MISASSOCIATION:
        yield Finding("semantic_corruption", Severity.ERROR,
                      "the cross group never lets the ego go where its own group stops it, nor shows green while "
                      "it stands at its red", (_f(i, "anchor"), _f(i, "target_group")),
                      _pick_repair(ctx, i, "semantic_corruption",
                                   [*scene, _go_on_red_repair(ctx, i, "keep the misassociation",
                                                              ((_f(i, "target_group"), None),))]))


@check("semantic_corruption")
def _semantic_corruption(ctx: _Ctx) -> Iterator[Finding]:
    spec = ctx.spec
    for i, fault in enumerate(spec.faults):
        if fault.stream not in ctx.app.consumes:
            continue
        start, end = ctx.windows[i]
        op = fault.operator
        if op is FaultOperator.FREEZE and fault.stream is Stream.MAP and ctx.signal_app and not any(
                f.operator is FaultOperator.MAP_MISASSOCIATION for f in spec.faults):
            yield Finding("semantic_corruption", Severity.ERROR,
                          "MAP does not change during a scenario: a frozen MAP repeats the truth",
                          (_f(i, "operator"),), Repair("drop the MAP instead", ((_f(i, "operator"), "drop"),)))
        elif op is FaultOperator.SPAT_COUNTDOWN_OFFSET and fault.magnitude is not None and \
                ctx.app.name is cat.Application.GLOSA:
            # its advisory reads the countdown in every phase and moves the epoch: only the tolerance
            if abs(fault.magnitude) <= cat.COUNTDOWN_DIVERGENCE_S:
                yield Finding("semantic_corruption", Severity.ERROR,
                              f"a {fault.magnitude} s countdown error is within the {cat.COUNTDOWN_DIVERGENCE_S} s tolerance",
                              (_f(i, "magnitude"),),
                              Repair("exceed the tolerance", ((_f(i, "magnitude"), math.copysign(
                                  cat.COUNTDOWN_DIVERGENCE_S + 0.5, fault.magnitude or 1.0)),)))
        elif ctx.signal_app and fault.stream in (Stream.SPAT, Stream.MAP):
            yield from _signal_content(ctx, i)
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
        elif op is FaultOperator.MAP_MISASSOCIATION and not ctx.signal_app:
            yield Finding("semantic_corruption", Severity.ERROR,
                          f"{ctx.app.name} does not read the lane -> signal-group association",
                          (_f(i, "operator"),), Repair("use a signal application or another operator", ()))


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
    return _verify(spec)


def _verify(spec: ScenarioSpec, search_repairs: bool = True) -> VerificationReport:
    const = ego_timeline(spec)
    # GLOSA's ego drives its advisory: ego events (and the ego's epoch) fall where the advisory takes it
    ego = glosa_timeline(spec) if spec.application is cat.Application.GLOSA else const
    ctx = _Ctx(spec, APPLICATIONS[spec.application], ego,
               [fault_window_s(spec, f, ego) for f in spec.faults], const=const, search_repairs=search_repairs)
    ctx.epochs = decision_epochs(ctx)
    ctx.reach = [_reach(ctx, i) for i in range(len(spec.faults))]
    findings = tuple(f for name in CHECKS for f in CHECKS[name](ctx))
    return VerificationReport(findings, ego.decision_epoch_s, ego.stop_bar_s)


__all__ = ["CHECKS", "Finding", "Repair", "Severity", "VerificationReport", "verify",
           "smallest_breaching_burst", "burst_breach_probability", "decision_window_s", "DecisionEpochs"]
