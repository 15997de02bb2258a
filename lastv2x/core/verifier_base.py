"""The verifier's vocabulary (``lastv2x.core.verifier``): severities, repairs, findings, the report,
the context one run builds (with the ``DecisionEpochs`` it carries), the check-family registry and
the small helpers every family shares (field paths, stream periods, freshness budgets).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lastv2x.core import catalogue as cat
from lastv2x.core.catalogue import STREAMS, AppKind, Registry, Stream
from lastv2x.core.spec import ScenarioSpec
from lastv2x.core.timeline import CONFLICT_BEYOND_BAR_M, EgoTimeline
from lastv2x.core.tolerance import freshness_budget_s


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


@dataclass
class _Ctx:
    spec: ScenarioSpec
    app: cat.ApplicationInfo
    ego: EgoTimeline  # the approach the ground-truth rollout drives (GLOSA: its advisory's)
    windows: list[tuple[float, float]] = field(default_factory=list)
    const: EgoTimeline | None = None  # the ego holding its own speed (GLOSA without an advisory); None = ego
    epochs: DecisionEpochs = field(default_factory=lambda: DecisionEpochs())
    reach: list[set[str]] = field(default_factory=list)  # per fault: the decision epochs it can reach
    # the whole verifier without repair search, to try candidate repairs on a copy of the spec;
    # None: do not try them (inside that trial). ``lastv2x.core.verifier`` passes it in, as the
    # families that propose repairs (``verifier_repairs``) sit below the module that runs them all.
    rerun: Callable[[ScenarioSpec], VerificationReport] | None = None
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
        return self.ego.stop_bar_s + CONFLICT_BEYOND_BAR_M / self.ego.speed_mps


Check = Callable[[_Ctx], Iterator[Finding]]
CHECKS: Registry[str, Check] = Registry("verifier check")


def _f(i: int, rest: str = "") -> str:
    return f"faults[{i}]" + (f".{rest}" if rest else "")


_PERIODS = {s: STREAMS[s].period_s for s in Stream}


def _period(stream: Stream) -> float:
    return _PERIODS[stream]


def _budget(ctx: _Ctx, stream: Stream) -> float:
    """B for the spec's application (``tolerance.freshness_budget_s``: MAP, ten periods whatever the application)."""
    return freshness_budget_s(ctx.app, stream)
