"""Typed errors of the STRaP core.

Every failure a caller can act on has its own class so that a servicer can map it
to a status code without parsing messages:

* :class:`RecordingError` and its subclasses name the *file* and, where the
  format lets us know it, the *byte offset* at which reading failed
  (``offset is None`` when a third-party library hides the position, e.g.
  rosbags).  ``str(err)`` reads ``"<path>: byte <offset>: <reason>"``.
* :class:`MissingChannelsError` is raised when a channel map asks for channels a
  recording does not contain; it lists them all at once.
* :class:`SchemaError` reports an invalid driving-scene schema or channel map
  (these are data files, so they are validated when loaded, not when used).

Every class is a ``lastv2x.core.errors`` type, so the one status table
(``lastv2x.rpc.errors``) maps any that escapes a handler: ``RecordingError`` is an
``InvalidResource`` (INVALID_ARGUMENT, field ``chunk``), ``MissingChannelsError`` a
``FailedPrecondition`` (FAILED_PRECONDITION), ``SchemaError`` a plain ``LastV2XError``
(INTERNAL: the schemas are our own data files). The store catches the ones an upload
or a reduction raises and answers INVALID_ARGUMENT naming the request field (``chunk``
or ``module``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lastv2x.core.errors import FailedPrecondition, InvalidResource, LastV2XError, ResourceExhausted


class StrapError(LastV2XError):
    """Base class of every error raised by ``services.strap``."""


class RecordingError(StrapError, InvalidResource):
    """A recording could not be read.

    Attributes:
        path: the file (or bag directory) being read.
        offset: byte offset of the failing record/section, or ``None`` if unknown.
        reason: human-readable cause, stable enough to show to a user.
    """

    field = "chunk"  # InvalidResource: the request field that carried the recording

    def __init__(self, path: str | Path, offset: int | None, reason: str) -> None:
        self.path = self.name = str(path)
        self.offset = offset
        self.reason = reason
        where = f"{self.path}: byte {offset}" if offset is not None else self.path
        Exception.__init__(self, f"{where}: {reason}")

    def __reduce__(self):  # keep pickling (multiprocessing) working with our signature
        return (self.__class__, (self.path, self.offset, self.reason))


class RecordingLimitError(StrapError, ResourceExhausted):
    """Reading a recording would exceed a decompression limit (``limit`` names the setting).

    Not a :class:`RecordingError` (the file may be well formed): it maps to
    RESOURCE_EXHAUSTED. Raised while streaming, before the offending chunk is inflated
    where its declared size tells, else as soon as the inflated bytes pass the limit.
    """

    def __init__(self, path: str | Path, limit: str, value: int, what: str) -> None:
        self.path = str(path)
        self.limit = limit
        self.value = value
        self.what = what
        Exception.__init__(self, f"{self.path}: {what} exceeds {limit} = {value}")

    def __reduce__(self):
        return (self.__class__, (self.path, self.limit, self.value, self.what))


class TruncatedRecordingError(RecordingError):
    """The file ends in the middle of a record/section (e.g. a recorder crashed)."""


class CorruptRecordingError(RecordingError):
    """A record is malformed: bad magic, impossible size, CRC mismatch, bad protobuf."""


class UnsupportedRecordingError(RecordingError):
    """A well-formed recording uses a feature we do not read (format, compression,
    a message definition rosbags cannot parse such as ROS 2 service events)."""


class UnsupportedEncodingError(UnsupportedRecordingError):
    """A channel's message encoding (or schema encoding) has no decoder here."""

    def __init__(
        self, path: str | Path, offset: int | None, reason: str, channel: str | None = None
    ) -> None:
        self.channel = channel
        super().__init__(path, offset, reason)

    def __reduce__(self):
        return (self.__class__, (self.path, self.offset, self.reason, self.channel))


class MessageDecodeError(RecordingError):
    """One message's payload could not be decoded with its channel's schema."""

    def __init__(
        self, path: str | Path, offset: int | None, reason: str, channel: str | None = None
    ) -> None:
        self.channel = channel
        super().__init__(path, offset, reason)

    def __reduce__(self):
        return (self.__class__, (self.path, self.offset, self.reason, self.channel))


class OutOfOrderError(RecordingError):
    """A backend could not deliver messages in timestamp order (checked on the fly)."""


class MissingChannelsError(StrapError, FailedPrecondition):
    """A channel map names channels that the recording lacks."""

    def __init__(self, missing: Iterable[str], source: str | None = None) -> None:
        self.missing = tuple(sorted(set(missing)))
        self.source = source
        where = f" in {source}" if source else ""
        self.constraint = f"channel map needs {len(self.missing)} channel(s) absent{where}: " + ", ".join(self.missing)
        self.alternative = "a module whose channels the recording has"
        Exception.__init__(self, self.constraint)

    def __reduce__(self):
        return (self.__class__, (self.missing, self.source))


class SchemaError(StrapError):
    """An invalid driving-scene schema or channel map (JSON data)."""
