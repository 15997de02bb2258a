"""Domain error -> gRPC status, with rich details (google.rpc.BadRequest field violations).

Only this module knows status codes; the cores raise ``lastv2x.core.errors`` types.

What a client reads is bounded and says what, never where: the message is at most
``MAX_MESSAGE_CHARS`` (and ``MAX_MESSAGE_BYTES`` once percent-encoded on the wire), a field
path ``MAX_FIELD_CHARS``, a description ``MAX_DESCRIPTION_CHARS``, and violations travel
while their details fit ``MAX_DETAIL_BYTES`` (the rest are counted) -- so the whole trailer
stays under a default client's 8 KiB metadata limit; ``scrub`` removes server paths and
pydantic's input dumps from all of it.
"""

from __future__ import annotations

import os
import re

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from lastv2x.core import errors as E

_CODES: tuple[tuple[type[E.LastV2XError], grpc.StatusCode, int], ...] = (
    (E.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    (E.InvalidResource, grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    (E.NotFound, grpc.StatusCode.NOT_FOUND, code_pb2.NOT_FOUND),
    (E.FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION, code_pb2.FAILED_PRECONDITION),
    (E.ResourceExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED, code_pb2.RESOURCE_EXHAUSTED),
    (E.Unavailable, grpc.StatusCode.UNAVAILABLE, code_pb2.UNAVAILABLE),
    (E.Cancelled, grpc.StatusCode.CANCELLED, code_pb2.CANCELLED),
)


MAX_MESSAGE_CHARS = 1024  # status message a client sees
MAX_MESSAGE_BYTES = 1536  # the same, percent-encoded in grpc-message
MAX_FIELD_CHARS = 200  # one field path
MAX_DESCRIPTION_CHARS = 400  # one violation's description (with its hint)
MAX_DETAIL_BYTES = 3072  # serialized violations (base64 in grpc-status-details-bin: 4 KiB)

# an absolute path under a directory a server has (a file:// URI included); MCAP channel
# names such as /vehicle/pose stay: they are not under these roots
_ROOTS = ("home", "root", "work", "tmp", "var", "etc", "usr", "opt", "srv", "mnt", "data", "app", "proc",
          "sys", "dev", "run", "lib", "bin", "nix", "private", "Users", "Library", "workspace", "builds")
_PATH = re.compile(r"(?:file://)?(?<![\w.])/(?:" + "|".join(_ROOTS) + r")(?:/[^\s'\"`,;:()\[\]{}<>]*)+")
_PYDANTIC_INPUT = re.compile(r",?\s*input_value=.*?(?:, input_type=\w+)?\]", re.DOTALL)
_PYDANTIC_URL = re.compile(r"\s*For further information visit https?://errors\.pydantic\.dev\S*")


def _clip(text: str, limit: int) -> str:
    keep = limit - 32
    return text if len(text) <= limit else text[:keep] + f"... (+{len(text) - keep} chars)"


def _wire_cost(ch: str) -> int:
    """Bytes of one character in grpc-message (printable ASCII as is, the rest %XX per UTF-8 byte)."""
    return 1 if " " <= ch <= "~" and ch != "%" else 3 * len(ch.encode("utf-8", "replace"))


def _clip_wire(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    total = 0
    for i, ch in enumerate(text):
        total += _wire_cost(ch)
        if total > limit - 32:
            return text[:i] + f"... (+{len(text) - i} chars)"
    return text


def scrub(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` without server paths (each becomes ``.../<file name>``) or pydantic input dumps,
    clipped to ``limit`` characters."""
    text = text[: 64 * limit]  # bound the work on absurd inputs first
    text = _PATH.sub(lambda m: ".../" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)
    cwd = os.getcwd()
    if len(cwd) > 1:  # a working directory outside the usual roots
        text = text.replace(cwd + os.sep, ".../").replace(cwd, "...")
    text = _PYDANTIC_URL.sub("", _PYDANTIC_INPUT.sub("]", text))
    return _clip(text, limit)


def _violation(field: str, description: str) -> error_details_pb2.BadRequest.FieldViolation:
    return error_details_pb2.BadRequest.FieldViolation(field=scrub(field, MAX_FIELD_CHARS),
                                                       description=scrub(description, MAX_DESCRIPTION_CHARS))


def to_status(exc: E.LastV2XError) -> grpc.Status:
    """Build a rich status whose message lists the violations and whose details carry them
    (bounded and scrubbed: see the module docstring)."""
    code, rpc_code = grpc.StatusCode.INTERNAL, code_pb2.INTERNAL
    for kind, grpc_code, numeric in _CODES:
        if isinstance(exc, kind):
            code, rpc_code = grpc_code, numeric
            break
    status = status_pb2.Status(code=rpc_code, message=_clip_wire(scrub(str(exc))))
    detail = any_pb2.Any()
    if isinstance(exc, E.InvalidArgument):
        violations: list[error_details_pb2.BadRequest.FieldViolation] = []
        size = 0
        for v in exc.violations:
            one = _violation(v.field, v.description + (f" (hint: {v.hint})" if v.hint else ""))
            size += one.ByteSize() + 4
            if size > MAX_DETAIL_BYTES and violations:
                violations.append(_violation("<more>", f"{len(exc.violations) - len(violations)} more violations "
                                                       "not shown"))
                break
            violations.append(one)
        detail.Pack(error_details_pb2.BadRequest(field_violations=violations))
        status.details.append(detail)
    elif isinstance(exc, E.InvalidResource):
        bad = error_details_pb2.BadRequest(field_violations=[_violation(exc.field, f"{exc.name}: {exc.reason}")])
        detail.Pack(bad)
        status.details.append(detail)
    elif isinstance(exc, E.FailedPrecondition):
        pre = error_details_pb2.PreconditionFailure(violations=[
            error_details_pb2.PreconditionFailure.Violation(
                type="constraint", subject=scrub(exc.constraint, MAX_DESCRIPTION_CHARS),
                description=scrub(exc.alternative, MAX_DESCRIPTION_CHARS))])
        detail.Pack(pre)
        status.details.append(detail)
    result = rpc_status.to_status(status)
    assert result.code == code
    return result


def exhausted_status(message: str, retry_after_s: float) -> grpc.Status:
    """RESOURCE_EXHAUSTED with retry advice: a ``google.rpc.RetryInfo`` detail (retry after ``retry_after_s``)."""
    info = error_details_pb2.RetryInfo()
    info.retry_delay.FromNanoseconds(int(retry_after_s * 1e9))
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message=_clip_wire(scrub(message)), details=[detail])
    return rpc_status.to_status(status)


def retry_delay_s(err: grpc.RpcError) -> float | None:
    """Client side: the server's retry advice (``google.rpc.RetryInfo``) in seconds, None when it gave none."""
    try:
        status = rpc_status.from_call(err)  # type: ignore[arg-type]
    except ValueError:
        return None
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return float(info.retry_delay.ToNanoseconds()) / 1e9
    return None


def field_violations(err: grpc.RpcError) -> list[tuple[str, str]]:
    """Client side: the (field, description) pairs of an INVALID_ARGUMENT error."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    out: list[tuple[str, str]] = []
    if status is None:
        return out
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            out.extend((v.field, v.description) for v in bad.field_violations)
    return out
