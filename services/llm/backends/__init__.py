"""One interface for every backend of the three LLM roles.

A backend turns a role request into one JSON object (``RoleReply.data``); it does
not validate it. The role layer (``services.llm.roles``) validates every answer
against the role's schema, runs the verifier, and feeds problems back through
``repair``/retries, so a backend can never get an unchecked answer to a caller.

The request and reply types and the ``Backend`` protocol live in ``base`` (the
backends import them from there) and are re-exported here.
Backends come from a typed registry (``BACKENDS``) that refuses duplicate names;
``create_backend(config)`` builds the one ``LlmConfig.backend`` names.
"""

from __future__ import annotations

from collections.abc import Callable

from lastv2x.core.catalogue import Registry
from lastv2x.core.errors import FieldViolation, InvalidArgument
from services.llm.backends.base import (
    Backend,
    ParseRequest,
    PlanRequest,
    ReflectRequest,
    RepairRequest,
    RoleReply,
)
from services.llm.config import LlmConfig

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
