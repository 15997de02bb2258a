"""Which application is under test: one string, three ways to plug in.

* ``""`` or ``"reference"`` — the six built-in reference applications (:data:`REFERENCE`);
  ``"reference:freshness=0.3"`` — the same with their plausibility option on (information older than
  0.3 s by its own timestamps is not trusted: a replayed message is caught; ``ReferenceApp``);
  ``"reference:appearance=60"`` — a sender first heard within 60 m of the ego is not trusted (a forged vehicle
  is caught); both options together: ``"reference:freshness=0.3,appearance=60"``;
* ``"grpc://host:port"`` — a server of ``lastv2x.v1.ApplicationUnderTestService``, any language
  (:class:`services.simulator.apps.remote.RemoteApp`; ``Describe`` is called here, so an
  address that does not answer or speaks another contract version fails before any run);
* any other name — an entry point of the ``lastv2x.apps`` group installed in this Python
  environment (in-process, for speed): its object is an :class:`ApplicationUnderTest` or a
  factory called with no arguments that returns one. A package registers one with::

      [project.entry-points."lastv2x.apps"]
      acme-rlvw = "acme_rlvw.lastv2x:AcmeRlvw"

Bad input raises :class:`~lastv2x.core.errors.InvalidArgument` naming ``field`` (default ``app``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

from lastv2x.core.errors import FieldViolation, InvalidArgument
from services.simulator.apps.access import AppAccess
from services.simulator.apps.contract import (
    APPEARANCE_OPTION,
    FRESHNESS_OPTION,
    REFERENCE,
    REFERENCE_TARGET,
    ApplicationUnderTest,
    ReferenceApp,
)

ENTRY_POINT_GROUP = "lastv2x.apps"
MAX_FRESHNESS_BOUND_S = 60.0  # the reference build's plausibility bound: an age up to a minute
MAX_APPEARANCE_BOUND_M = 1000.0  # and its appearance bound: a distance up to a kilometre
_GRPC = re.compile(r"^grpcs?://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")

EntryPoints = Callable[[], Iterable[Any]]  # () -> entry points of the group (tests pass their own)


def _group_entry_points() -> Iterable[Any]:
    return metadata.entry_points(group=ENTRY_POINT_GROUP)


def entry_point_names(entry_points: EntryPoints = _group_entry_points) -> list[str]:
    return sorted({ep.name for ep in entry_points()})


def _reference_with_options(spec: str, field: str) -> ApplicationUnderTest:
    """``reference:freshness=<s>``, ``reference:appearance=<m>`` or both, comma-separated: the reference build with
    its plausibility options on (``contract.ReferenceApp``): information older than ``<s>`` seconds by its own
    timestamps is not trusted; a sender first heard within ``<m>`` metres of the ego is not trusted."""
    hint = (f"{REFERENCE_TARGET}:{FRESHNESS_OPTION}=<seconds>, {REFERENCE_TARGET}:{APPEARANCE_OPTION}=<metres>, or "
            f"both: {REFERENCE_TARGET}:{FRESHNESS_OPTION}=0.3,{APPEARANCE_OPTION}=60")
    limits = {FRESHNESS_OPTION: (MAX_FRESHNESS_BOUND_S, "an age", "s"),
              APPEARANCE_OPTION: (MAX_APPEARANCE_BOUND_M, "a distance", "m")}
    values: dict[str, float] = {}
    for item in spec[len(REFERENCE_TARGET) + 1:].split(","):
        option, _, value = item.partition("=")
        option = option.strip()
        if option not in limits or option in values:
            what = "twice" if option in values else "no option"
            raise InvalidArgument(FieldViolation(field, f"the reference build has {what} {option!r}", hint))
        try:
            bound = float(value)
        except ValueError:
            bound = math.nan
        most, kind, unit = limits[option]
        if not (math.isfinite(bound) and 0.0 < bound <= most):
            raise InvalidArgument(FieldViolation(field, f"{option}={value.strip()!r} is not {kind} in "
                                                        f"(0, {most:g}] {unit}", hint))
        values[option] = bound
    return ReferenceApp(values.get(FRESHNESS_OPTION), values.get(APPEARANCE_OPTION))


def resolve_app(spec: str | None, *, step_timeout_s: float = 1.0, connect_timeout_s: float = 5.0,
                field: str = "app", entry_points: EntryPoints = _group_entry_points,
                access: AppAccess | None = None) -> ApplicationUnderTest:
    """The application named by ``spec`` (see the module docstring); an address outside ``access``'s
    allow-list (None: the default, loopback) is refused before any connection
    (``services.simulator.apps.access``)."""
    access = access or AppAccess()
    spec = (spec or "").strip()
    if spec in ("", REFERENCE_TARGET):
        return REFERENCE
    if spec.startswith(REFERENCE_TARGET + ":"):
        return _reference_with_options(spec, field)
    if spec.startswith(("grpc://", "grpcs://")):  # grpcs://: TLS with the app's own credentials (access)
        if not _GRPC.match(spec) or not 0 < int(spec.rsplit(":", 1)[1]) < 65536:
            raise InvalidArgument(FieldViolation(field, f"{spec!r} is not grpc://host:port or grpcs://host:port",
                                                 "e.g. grpc://127.0.0.1:50070"))
        access.check(spec, field)
        from services.simulator.apps.remote import RemoteApp

        security = access.security_for(spec) if spec.startswith("grpcs://") else None
        return RemoteApp(spec, step_timeout_s=step_timeout_s, connect_timeout_s=connect_timeout_s, security=security)
    found = [ep for ep in entry_points() if ep.name == spec]
    if not found:
        known = entry_point_names(entry_points)
        raise InvalidArgument(FieldViolation(
            field, f"no application {spec!r}: not 'reference', not grpc://host:port, and no entry point of that "
                   f"name in the {ENTRY_POINT_GROUP!r} group", f"installed: {', '.join(known) or 'none'}"))
    try:
        obj = found[0].load()
        app = obj if isinstance(obj, ApplicationUnderTest) and not isinstance(obj, type) else obj()
    except Exception as exc:
        raise InvalidArgument(FieldViolation(field, f"entry point {spec!r} failed to load: "
                                                    f"{type(exc).__name__}: {exc}")) from None
    if not isinstance(app, ApplicationUnderTest):
        raise InvalidArgument(FieldViolation(field, f"entry point {spec!r} gives {type(app).__name__}, not an "
                                                    "ApplicationUnderTest (build, open, step, close)"))
    return app


__all__ = ["ENTRY_POINT_GROUP", "entry_point_names", "resolve_app"]
