"""ROS 1 bags and ROS 2 bag directories through ``rosbags.highlevel.AnyReader``.

rosbags does the container work (bz2/lz4 chunks, unsorted chunks, sqlite3 and
MCAP storage, time-ordered merging); we add typed errors and two fixes for
failure modes found in real bags (see ``../shared/data/SOURCES.md``):

* **Silent zero messages** (the ``talker`` bags): rosbags matches each topic of
  ``metadata.yaml`` against the storage file's own topic records *including the
  QoS profile*; when the recorder wrote different QoS strings to the two places,
  every message is dropped without an error.  For uncompressed bags we therefore
  open the storage files listed in ``metadata.yaml`` directly (rosbags reads
  their own topic tables), which yields all messages.
* **Unparseable definitions** (ROS 2 service-event bags): AnyReader fails while
  parsing the embedded ``srv`` definition; we raise
  :class:`UnsupportedRecordingError` naming the bag and rosbags' reason.
  (The MCAP backend can still read the plain topics of such a bag.)

* **bz2 / lz4 bombs** (ROS 1): rosbags inflates a chunk whole before we see a
  message, so before a pass we walk the bag's records ourselves (headers only, the
  data skipped) and refuse a chunk whose header declares more uncompressed ``size``
  than the read limits allow (``max_chunk_bytes``, ``max_decompressed_bytes``);
  nothing is inflated (:func:`ros1_chunk_sizes`).

An empty bag is not an error: it has zero channels and yields nothing.
Messages that rosbags cannot deserialize (unknown type, size mismatch) raise
:class:`MessageDecodeError` naming the channel.  rosbags does not expose byte
offsets, so ``offset`` is ``None`` in these errors.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import (
    CorruptRecordingError,
    MessageDecodeError,
    RecordingError,
    RecordingLimitError,
    UnsupportedRecordingError,
)
from .base import ChannelInfo, RawSchema, RecordedMessage, Recording


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def rosbag2_storage_files(directory: Path) -> list[Path] | None:
    """Storage files of an uncompressed rosbag2 directory, or ``None`` to let
    rosbags handle the directory itself (compressed bags, odd metadata)."""
    from ruamel.yaml import YAML

    try:
        meta = YAML(typ="safe").load((directory / "metadata.yaml").read_text())
        info = meta["rosbag2_bagfile_information"]
        if info.get("compression_mode") or info.get("compression_format"):
            return None
        files = [directory / Path(name).name for name in info["relative_file_paths"]]
    except Exception:
        return None
    return files if files and all(f.is_file() for f in files) else None


ROS1_MAGIC = b"#ROSBAG V2.0\n"
_OP_CHUNK = 0x05
_MAX_RECORD_HEADER = 1 << 20  # a record header (field names and values) is tiny; past this the bag is corrupt


def ros1_chunk_sizes(path: Path) -> Iterator[int]:
    """The uncompressed ``size`` each chunk record of a ROS 1 bag (format 2.0) declares, read from the
    record headers alone (each record: header length, header fields ``name=value``, data length, data;
    the data is skipped, never read). Stops quietly at anything malformed: rosbags reports that."""
    import struct

    with open(path, "rb") as f:
        if f.read(len(ROS1_MAGIC)) != ROS1_MAGIC:
            return
        while True:
            raw = f.read(4)
            if len(raw) < 4:
                return
            (header_len,) = struct.unpack("<I", raw)
            if header_len > _MAX_RECORD_HEADER:
                return
            header = f.read(header_len)
            raw = f.read(4)
            if len(header) < header_len or len(raw) < 4:
                return
            (data_len,) = struct.unpack("<I", raw)
            fields, pos = {}, 0
            while pos + 4 <= len(header):
                (n,) = struct.unpack_from("<I", header, pos)
                name, _, value = header[pos + 4:pos + 4 + n].partition(b"=")
                fields[name] = value
                pos += 4 + n
            if fields.get(b"op") == bytes([_OP_CHUNK]) and len(fields.get(b"size", b"")) == 4:
                yield struct.unpack("<I", fields[b"size"])[0]
            f.seek(data_len, 1)


class RosbagsRecording(Recording):
    """A ROS 1 ``.bag`` file or a ROS 2 bag directory (``metadata.yaml`` + storage)."""

    def __init__(self, path: str | Path, channels=None) -> None:
        super().__init__(path, channels)
        from rosbags.highlevel import AnyReader, AnyReaderError

        self._any_reader_error = AnyReaderError
        if self.path.is_dir():
            self.format = "ros2"
            files = rosbag2_storage_files(self.path)
            inputs = files if files is not None else [self.path]
        else:
            self.format = "ros1" if self.path.suffix == ".bag" else "ros2"
            inputs = [self.path]
        self._reader: Any = None
        try:
            self._reader = AnyReader(inputs)
            self._reader.open()
        except AnyReaderError as exc:
            reason = _first_line(exc)
            if "parse" in reason.lower() or "definition" in reason.lower():
                hint = " (ROS 2 service-event bags are not supported)" if "srv/" in str(exc) else ""
                raise UnsupportedRecordingError(
                    self.path, None,
                    f"rosbags cannot use an embedded message definition: {reason.rstrip(':')}{hint}",
                ) from exc
            raise CorruptRecordingError(self.path, None, f"rosbags cannot open the bag: {reason}") from exc
        except FileNotFoundError as exc:
            raise RecordingError(self.path, None, f"not found: {exc}") from exc
        except Exception as exc:  # rosbags surfaces some container errors untyped
            raise CorruptRecordingError(self.path, None, f"rosbags cannot open the bag: {_first_line(exc)}") from exc
        self._infos: dict[str, ChannelInfo] = {}
        for con in self._reader.connections:
            prev = self._infos.get(con.topic)
            count = con.msgcount + (prev.message_count or 0 if prev else 0)
            encoding = "ros1" if self.format == "ros1" else "cdr"
            self._infos[con.topic] = ChannelInfo(con.topic, con.msgtype, encoding, count)

    def channels(self) -> Mapping[str, ChannelInfo]:
        return dict(self._infos)

    def time_range_ns(self) -> tuple[int, int] | None:
        if not self._reader.message_count:
            return None
        return int(self._reader.start_time), int(self._reader.end_time) - 1  # rosbags: end exclusive

    def _check_chunks(self) -> None:
        """ROS 1: refuse, before rosbags inflates anything, a chunk that declares more than the limits allow."""
        if self.format == "ros1" and self.limits.max_chunk_bytes < (1 << 62):
            for size in ros1_chunk_sizes(self.path):
                self._budget.chunk_room(size)

    def _iter_channel_names(self) -> Iterator[str]:
        self._check_chunks()
        for con, _ts, raw in self._reader.messages():
            self._budget.charge_messages()
            self._budget.charge_bytes(len(raw))
            yield con.topic

    def _iter_messages(self) -> Iterator[RecordedMessage]:
        conns = [c for c in self._reader.connections if self.wants(c.topic)]
        if not conns:
            return
        budget = self._budget
        self._check_chunks()
        if self._reader.message_count > budget.limits.max_messages:  # the bag's index says so: refuse now
            budget.charge_messages(self._reader.message_count)
        try:
            stream = self._reader.messages(connections=conns)
            for con, timestamp_ns, raw in stream:
                budget.charge_messages()
                budget.charge_bytes(len(raw))
                try:
                    payload = self._reader.deserialize(raw, con.msgtype)
                except Exception as exc:
                    raise MessageDecodeError(
                        self.path, None,
                        f"channel {con.topic!r} ({con.msgtype}) at {timestamp_ns} ns does not "
                        f"deserialize: {_first_line(exc)}", con.topic) from exc
                yield RecordedMessage(con.topic, int(timestamp_ns), payload)
        except (RecordingError, RecordingLimitError):
            raise
        except Exception as exc:
            raise CorruptRecordingError(self.path, None, f"rosbags failed while reading: {_first_line(exc)}") from exc

    def _iter_raw(self) -> Iterator[tuple[str, int, bytes]]:
        conns = [c for c in self._reader.connections if self.wants(c.topic)]
        if conns:
            self._check_chunks()
            for con, timestamp_ns, raw in self._reader.messages(connections=conns):
                self._budget.charge_messages()
                self._budget.charge_bytes(len(raw))
                yield con.topic, int(timestamp_ns), bytes(raw)

    def raw_schema(self, channel: str) -> RawSchema:
        con = next(c for c in self._reader.connections if c.topic == channel)
        text = con.msgdef.data if con.msgdef is not None else ""
        if self.format == "ros1":
            return RawSchema("ros1", con.msgtype.replace("/msg/", "/"), "ros1msg", text.encode())
        return RawSchema("cdr", con.msgtype, "ros2msg", text.encode())

    def close(self) -> None:
        reader, self._reader = getattr(self, "_reader", None), None
        if reader is not None:
            try:
                reader.close()
            except Exception:  # closing twice or after a failed open is harmless
                pass
