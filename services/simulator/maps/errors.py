"""Typed errors of the road-map layer."""

from __future__ import annotations


class MapError(ValueError):
    """A map could not be loaded, or a request against a loaded map is invalid.

    ``name`` is the map (builtin name, file path or caller-given name) and
    ``reason`` a short human-readable cause, e.g. ``"DOCTYPE/ENTITY declarations
    are not allowed"``. The servicers map this to ``INVALID_ARGUMENT`` with the
    reason as field detail.
    """

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"map {name!r}: {reason}")
        self.name = name
        self.reason = reason

    def __reduce__(self):  # keep pickling (multiprocessing) working with two args
        return (type(self), (self.name, self.reason))
