"""What a backend of the three LLM roles is: its requests, its reply, its protocol.

Apart from the registry (``services.llm.backends``) so that the backends
themselves (``offline``, ``openai_compat``) can import these without importing
the registry that builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from lastv2x.core.spec import ScenarioSpec
from lastv2x.core.verifier import Finding
from services.llm.evidence import EvidenceDigest
from services.llm.knowledge import KnowledgeNote
from services.llm.maps import MapView
from services.llm.planner import ApproachCandidate


@dataclass(frozen=True)
class ParseRequest:
    text: str
    seed: int
    assignment: dict[str, Any]  # seed-drawn values for fields the intent leaves open
    maps: MapView = field(default_factory=MapView)
    campaign: str = "default"


@dataclass(frozen=True)
class RepairRequest:
    """Attempt ``attempt`` of a parse: the previous answer and what was wrong with it.

    ``problems`` are JSON dicts: schema violations ``{"field", "description", "hint"}``
    or verifier findings (``Finding.to_dict()``, with ``repair.patch`` when the
    verifier knows a minimal repair).
    """

    text: str
    seed: int
    assignment: dict[str, Any]
    previous: dict[str, Any] | None
    raw: str | None
    problems: tuple[dict[str, Any], ...]
    attempt: int
    maps: MapView = field(default_factory=MapView)
    campaign: str = "default"


@dataclass(frozen=True)
class PlanRequest:
    spec: ScenarioSpec
    candidates: tuple[ApproachCandidate, ...]
    previous: dict[str, Any] | None = None
    problems: tuple[dict[str, Any], ...] = ()
    campaign: str = "default"


@dataclass(frozen=True)
class ReflectRequest:
    prompt: str
    digest: EvidenceDigest
    notes: tuple[KnowledgeNote, ...]
    previous: dict[str, Any] | None = None
    problems: tuple[dict[str, Any], ...] = ()
    campaign: str = "default"
    spec: dict[str, Any] | None = None  # the spec that ran (JSON data): what the edits apply to


@dataclass(frozen=True)
class RoleReply:
    data: dict[str, Any]
    notes: tuple[str, ...] = ()  # explanation (offline) or transport facts (LLM)
    findings: tuple[Finding, ...] = ()  # backend observations, e.g. a language warning
    tokens: int = 0


@runtime_checkable
class Backend(Protocol):
    """What every backend implements; one method per role step."""

    name: str

    def parse(self, request: ParseRequest) -> RoleReply: ...

    def repair(self, request: RepairRequest) -> RoleReply: ...

    def plan(self, request: PlanRequest) -> RoleReply: ...

    def reflect(self, request: ReflectRequest) -> RoleReply: ...


__all__ = ["Backend", "ParseRequest", "PlanRequest", "ReflectRequest", "RepairRequest", "RoleReply"]
