"""Errors of the LLM service core (subclasses of the domain errors, so the rpc layer
maps them without knowing this package)."""

from __future__ import annotations

from typing import Any

from lastv2x.core.errors import FailedPrecondition, LastV2XError
from lastv2x.core.verifier import Finding


class MalformedOutput(LastV2XError):
    """A backend answered with something that is not one JSON object.

    Raised by a backend, caught by the role loop, which feeds the problem back as a
    repair request; it reaches a caller only inside ``ParseFailed``/``RoleFailed``.
    """

    def __init__(self, description: str, raw: str = ""):
        self.description = description
        self.raw = raw[:4000]
        super().__init__(description)


class RoleFailed(FailedPrecondition):
    """A role did not produce a valid answer within its attempt budget."""

    def __init__(self, role: str, attempts_used: int, problems: list[dict[str, Any]], alternative: str = ""):
        self.role = role
        self.attempts_used = attempts_used
        self.problems = problems
        summary = "; ".join(f"{p.get('field') or ','.join(p.get('fields', []))}: "
                            f"{p.get('description') or p.get('message')}" for p in problems[:3])
        super().__init__(f"{role} gave no valid answer after {attempts_used} attempt(s): {summary}", alternative)


class ParseFailed(RoleFailed):
    """The intent did not compile into a verified spec within ``max_attempts``.

    ``findings`` are the last verifier findings (empty when the last answer did not
    even validate); ``last_data`` is the last JSON the backend produced.
    """

    def __init__(self, attempts_used: int, problems: list[dict[str, Any]], findings: tuple[Finding, ...] = (),
                 last_data: dict[str, Any] | None = None):
        alternative = "; ".join(p["repair"]["description"] for p in problems if p.get("repair"))
        super().__init__("parser", attempts_used, problems, alternative)
        self.findings = findings
        self.last_data = last_data
