"""Typed errors of the road-map layer."""

from __future__ import annotations

from lastv2x.core.errors import InvalidResource


class MapError(InvalidResource, ValueError):
    """A map could not be loaded, or a request against a loaded map is invalid.

    ``name`` is the map (builtin name, file path or caller-given name) and
    ``reason`` a short human-readable cause, e.g. ``"DOCTYPE/ENTITY declarations
    are not allowed"``. The servicers map this to ``INVALID_ARGUMENT`` with the
    reason as field detail.
    """

    field = "map_name"

    def __init__(self, name: str, reason: str) -> None:
        ValueError.__init__(self, f"map {name!r}: {reason}")
        self.name = name
        self.reason = reason

    def __reduce__(self):  # keep pickling (multiprocessing) working with two args
        return (type(self), (self.name, self.reason))
