"""Domain error -> gRPC status, with rich details (google.rpc.BadRequest field violations).

Only this module knows status codes; the cores raise ``lastv2x.core.errors`` types.
"""

from __future__ import annotations

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
)


def to_status(exc: E.LastV2XError) -> grpc.Status:
    """Build a rich status whose message lists the violations and whose details carry them."""
    code, rpc_code = grpc.StatusCode.INTERNAL, code_pb2.INTERNAL
    for kind, grpc_code, numeric in _CODES:
        if isinstance(exc, kind):
            code, rpc_code = grpc_code, numeric
            break
    status = status_pb2.Status(code=rpc_code, message=str(exc))
    detail = any_pb2.Any()
    if isinstance(exc, E.InvalidArgument):
        bad = error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(
                field=v.field, description=v.description + (f" (hint: {v.hint})" if v.hint else ""))
            for v in exc.violations])
        detail.Pack(bad)
        status.details.append(detail)
    elif isinstance(exc, E.InvalidResource):
        bad = error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=exc.field, description=f"{exc.name}: {exc.reason}")])
        detail.Pack(bad)
        status.details.append(detail)
    elif isinstance(exc, E.FailedPrecondition):
        pre = error_details_pb2.PreconditionFailure(violations=[
            error_details_pb2.PreconditionFailure.Violation(
                type="constraint", subject=exc.constraint, description=exc.alternative)])
        detail.Pack(pre)
        status.details.append(detail)
    result = rpc_status.to_status(status)
    assert result.code == code
    return result


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
