"""LLM service core: the three LAST-V2X LLM roles behind one backend interface.

* ``roles.LlmRoles`` (``core.LlmCore``, the service's entry core) - ``parse_intent``,
  ``plan_scene``, ``reflect``, ``verify``: what the gRPC servicer calls; owns
  validation, the parse-repair loop and budgets;
* ``backends`` - the ``Backend`` protocol and its registry (``offline``, ``openai``);
* ``grammar``/``lexicon`` - the offline parser; before it, the readers that say an intent's form as text
  (``payload`` + ``payload_words``: structured payloads; ``table_rows``; ``text_forms``; ``dialogue``: chats and
  corrections); ``stated`` - what the words state, kept through repairs; ``planner``; ``reflector`` +
  ``knowledge/`` notes; ``evidence`` (the reflector's input); ``prompts/`` (versioned);
* ``fake_openai_server`` - a Chat Completions test peer.

No module here imports grpc; names are re-exported lazily to keep imports cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "LlmCore": "services.llm.core", "LlmRoles": "services.llm.roles", "ParseResult": "services.llm.roles", "parse_intent": "services.llm.roles",
    "plan_scene": "services.llm.roles", "reflect": "services.llm.roles",
    "LlmConfig": "services.llm.config", "OpenAIConfig": "services.llm.config",
    "Backend": "services.llm.backends", "BACKENDS": "services.llm.backends", "create_backend": "services.llm.backends",
    "ApproachCandidate": "services.llm.planner", "MovementOption": "services.llm.planner",
    "ScenePlan": "services.llm.planner", "RoleAssignment": "services.llm.planner",
    "Reflection": "services.llm.reflector", "EvidenceDigest": "services.llm.evidence",
    "ParseFailed": "services.llm.errors", "RoleFailed": "services.llm.errors", "MapView": "services.llm.maps",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'services.llm' has no attribute {name!r}")
