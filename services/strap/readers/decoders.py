"""Payload decoders built from the schemas embedded in recordings.

Recordings carry their own type definitions; we never rely on generated code:

* **protobuf** (MCAP ``protobuf`` schemas, Apollo Cyber channels): the schema is a
  set of ``FileDescriptorProto`` s.  Each recording gets its *own*
  ``DescriptorPool`` (two recordings may embed different versions of the same
  ``.proto``), files are added dependencies-first, and classes come from
  ``message_factory.GetMessageClass``.
* **ROS 2 CDR / ROS 1** (``ros2msg``/``ros1msg``/``ros2idl`` schemas): parsed by
  ``rosbags.typesys`` into a private typestore, deserialized by rosbags.
* **JSON**: ``orjson.loads`` (``json.loads`` for what orjson refuses).

Decoders are cached per schema so that decoding costs one lookup per message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

Decoder = Callable[[bytes], Any]


class SchemaDecodeError(ValueError):
    """A schema could not be turned into a decoder (caller adds path/offset)."""


def add_files_in_dependency_order(
    pool: descriptor_pool.DescriptorPool,
    files: Iterable[descriptor_pb2.FileDescriptorProto],
    already_added: set[str] | None = None,
) -> None:
    """Add ``files`` to ``pool`` so that every file follows its dependencies.

    Files already in the pool (by name) are skipped, so callers may feed
    overlapping descriptor sets (every Cyber channel repeats common deps).
    """
    added = already_added if already_added is not None else set()
    pending = {f.name: f for f in files if f.name not in added}
    while pending:
        progressed = False
        for name, fdp in list(pending.items()):
            if all(dep in added or dep not in pending for dep in fdp.dependency):
                try:
                    pool.Add(fdp)
                except TypeError as exc:  # conflicting redefinition
                    raise SchemaDecodeError(f"cannot add {name}: {exc}") from exc
                added.add(name)
                del pending[name]
                progressed = True
        if not progressed:
            raise SchemaDecodeError(f"circular or missing proto dependencies among {sorted(pending)}")


def protobuf_decoder(pool: descriptor_pool.DescriptorPool, full_name: str) -> Decoder:
    """Decoder for message type ``full_name`` (leading dot tolerated) in ``pool``."""
    try:
        descriptor = pool.FindMessageTypeByName(full_name.lstrip("."))
    except KeyError as exc:
        raise SchemaDecodeError(f"message type {full_name!r} not in the embedded descriptors") from exc
    cls = message_factory.GetMessageClass(descriptor)
    return cls.FromString


def protobuf_decoder_from_descriptor_set(data: bytes, full_name: str) -> Decoder:
    """MCAP ``protobuf`` schema: ``data`` is a serialized ``FileDescriptorSet``."""
    fds = descriptor_pb2.FileDescriptorSet()
    try:
        fds.ParseFromString(data)
    except Exception as exc:  # protobuf raises DecodeError (a subclass of Exception)
        raise SchemaDecodeError(f"schema {full_name!r} is not a FileDescriptorSet: {exc}") from exc
    pool = descriptor_pool.DescriptorPool()
    add_files_in_dependency_order(pool, fds.file)
    return protobuf_decoder(pool, full_name)


try:  # a fast JSON decoder (the recordings extra); the standard library's otherwise
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - orjson is in the recordings extra
    _fast_loads = json.loads


def json_decoder(data: bytes) -> Any:
    """JSON payload -> dicts/lists (orjson: ~2x the standard decoder; same values: orjson
    refuses NaN / Infinity literals, which the standard library's accepts, so those fall back)."""
    try:
        return _fast_loads(data)
    except ValueError:
        return json.loads(data)


def _json_decode_many(payloads: list) -> list:
    """:func:`json_decoder` over a list of payloads (one C-level map when orjson takes them all)."""
    try:
        return list(map(_fast_loads, payloads))
    except ValueError:
        return list(map(json_decoder, payloads))


json_decoder.many = _json_decode_many  # type: ignore[attr-defined]


class RosTypeDecoders:
    """ROS message decoders from embedded ``.msg``/``.idl`` text via rosbags.

    One private typestore per recording.  ROS 2 type names are normalised to
    ``pkg/msg/Name`` (old bags spell ``pkg/Name``).
    """

    def __init__(self) -> None:
        from rosbags.typesys import Stores, get_typestore

        self._store = get_typestore(Stores.EMPTY)
        self._cache: dict[tuple[str, str, str], Decoder] = {}

    @staticmethod
    def normalize(name: str) -> str:
        parts = name.split("/")
        if len(parts) == 2:
            return f"{parts[0]}/msg/{parts[1]}"
        return name

    def decoder(self, type_name: str, schema_encoding: str, text: str, message_encoding: str) -> Decoder:
        key = (type_name, schema_encoding, message_encoding)
        if key in self._cache:
            return self._cache[key]
        from rosbags.typesys import get_types_from_idl, get_types_from_msg

        name = self.normalize(type_name)
        try:
            if schema_encoding == "ros2idl":
                types = get_types_from_idl(text)
            else:
                types = get_types_from_msg(text, name)
            self._store.register(types)
        except Exception as exc:  # rosbags raises TypesysError and parser errors
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            hint = " (ROS 2 service-event types are not supported)" if "/srv/" in type_name else ""
            raise SchemaDecodeError(
                f"rosbags cannot parse the {schema_encoding} definition of {type_name!r}: "
                f"{first.rstrip(':')}{hint}"
            ) from exc
        store = self._store
        if message_encoding == "cdr":
            def decode(data: bytes, _n: str = name) -> Any:
                return store.deserialize_cdr(data, _n)
        else:
            def decode(data: bytes, _n: str = name) -> Any:
                return store.deserialize_ros1(data, _n)
        self._cache[key] = decode
        return decode
