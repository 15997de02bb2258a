"""One interface for every backend of the three LLM roles.

A backend turns a role request into one JSON object (``RoleReply.data``); it does
not validate it. The role layer (``services.llm.roles``) validates every answer
against the role's schema, runs the verifier, and feeds problems back through
``repair``/retries, so a backend can never get an unchecked answer to a caller.

Backends come from a typed registry (``BACKENDS``) that refuses duplicate names;
``create_backend(config)`` builds the one ``LlmConfig.backend`` names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from lastv2x.core.catalogue import Registry
from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.spec import ScenarioSpec
from lastv2x.core.verifier import Finding
from services.llm.config import LlmConfig
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


BackendFactory = Callable[[LlmConfig], Backend]


class BackendRegistry(Registry[str, BackendFactory]):
    def create(self, config: LlmConfig) -> Backend:
        if config.backend not in self:
            raise InvalidArgument(FieldViolation("backend", f"unknown LLM backend {config.backend!r}",
                                                 f"known: {sorted(self)}"))
        backend = self[config.backend](config)
        if not isinstance(backend, Backend):
            raise TypeError(f"backend factory {config.backend!r} did not return a Backend")
        return backend


def _offline(config: LlmConfig) -> Backend:
    from services.llm.backends.offline import OfflineBackend

    return OfflineBackend()


def _openai(config: LlmConfig) -> Backend:
    from services.llm.backends.openai_compat import OpenAIBackend

    return OpenAIBackend(config.openai)


def default_registry() -> BackendRegistry:
    registry = BackendRegistry("LLM backend")
    registry.register("offline", _offline)
    registry.register("openai", _openai)
    return registry


BACKENDS = default_registry()


def create_backend(config: LlmConfig, registry: BackendRegistry = BACKENDS) -> Backend:
    return registry.create(config)


__all__ = ["BACKENDS", "Backend", "BackendFactory", "BackendRegistry", "ParseRequest", "PlanRequest",
           "ReflectRequest", "RepairRequest", "RoleReply", "create_backend", "default_registry"]
