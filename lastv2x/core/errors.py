"""Typed domain errors.

The core raises these; only the rpc layer maps them to gRPC status codes
(see ``lastv2x.rpc.errors``). Each error carries enough structure for a client to
repair its request: field paths and hints for invalid input, the failed constraint
and the nearest feasible alternative for infeasible requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FieldViolation:
    """One bad field: a dotted path into the request (``faults[0].magnitude``)."""

    field: str
    description: str
    hint: str = ""

    def __str__(self) -> str:
        return f"{self.field}: {self.description}" + (f" (hint: {self.hint})" if self.hint else "")


class LastV2XError(Exception):
    """Base class of every domain error."""


class InvalidArgument(LastV2XError):
    """The request is malformed or out of range; maps to INVALID_ARGUMENT."""

    def __init__(self, violations: list[FieldViolation] | FieldViolation, message: str = ""):
        if isinstance(violations, FieldViolation):
            violations = [violations]
        self.violations: list[FieldViolation] = list(violations)
        summary = "; ".join(str(v) for v in self.violations[:5])
        more = f" (+{len(self.violations) - 5} more)" if len(self.violations) > 5 else ""
        super().__init__(message or f"invalid request: {summary}{more}")


class InvalidResource(LastV2XError):
    """A named input the caller supplied (a map, a recording) is unusable; maps to INVALID_ARGUMENT.

    ``field`` is the request field that named it; ``reason`` says what is wrong.
    """

    field = "name"

    def __init__(self, name: str, reason: str):
        self.name = name
        self.reason = reason
        super().__init__(f"{name!r}: {reason}")


class NotFound(LastV2XError):
    """A named resource (map, campaign, witness, recording) does not exist."""


class FailedPrecondition(LastV2XError):
    """Well-formed but infeasible: names the failed constraint and an alternative."""

    def __init__(self, constraint: str, alternative: str = ""):
        self.constraint = constraint
        self.alternative = alternative
        super().__init__(constraint + (f"; nearest feasible: {alternative}" if alternative else ""))


class ResourceExhausted(LastV2XError):
    """A size or budget cap was exceeded (message size, token budget, recording cap)."""


class Unavailable(LastV2XError):
    """A dependency (LLM endpoint, simulator replica) cannot be reached."""


class Cancelled(LastV2XError):
    """The caller's deadline passed or it went away: a long handler stopped between units of work."""


@dataclass
class ErrorCollector:
    """Accumulates violations so a validator reports every bad field at once."""

    violations: list[FieldViolation] = field(default_factory=list)

    def add(self, path: str, description: str, hint: str = "") -> None:
        self.violations.append(FieldViolation(path, description, hint))

    def raise_if_any(self) -> None:
        if self.violations:
            raise InvalidArgument(self.violations)
