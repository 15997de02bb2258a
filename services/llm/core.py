"""The LLM service's pure core: what the servicer calls (no grpc here).

``LlmCore(config=...)`` is the three LAST-V2X LLM roles over the configured backend
(``services.llm.roles``, where they are written as ``LlmRoles``; the in-process callers
— grounding's scene planner, the search service, the CLI — use them by that name);
its methods are the four RPCs:

* ``parse_intent(text, seed) -> ParseResult`` (ParseIntent: the parse-repair loop with
  the verifier, attempt budget and seed-drawn open fields);
* ``plan_scene(spec, candidates) -> ScenePlan`` (PlanScene: only given candidate ids);
* ``reflect(prompt, evidence_digest) -> Reflection`` (Reflect);
* ``verify(spec) -> VerificationReport`` (Verify: ``lastv2x.core.verifier``).

Every service names its entry core ``services/<name>/core.py:<Name>Core``.
"""

from __future__ import annotations

from services.llm.roles import LlmRoles, ParseResult

LlmCore = LlmRoles

__all__ = ["LlmCore", "ParseResult"]
