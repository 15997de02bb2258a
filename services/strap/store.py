"""Recordings the STRaP service holds: ingest to a staging file, validate, then publish.

A recording becomes visible only after its bytes are complete, under the size cap, and its
reader opens it and iterates it to the end; a partial or corrupt upload is deleted and never
becomes a recording. Ids are the first 16 hex digits of the content's SHA-256 (same bytes: one).

Reductions are cached per (recording, module, parameters) because RSC needs the
recording's frame vectors at prioritization time.

Durability (issue 16): the index of recordings is a SQLite database in the store
directory (``strap.db``, WAL, one file, as the search archive), written after the
recording's file is in place; at start the index is loaded, staging files of uploads a
killed process left in ``.incoming/`` are deleted, and so are recording files the index
does not list (a crash between the rename and the index write) and index rows whose file
is gone. ``quota_bytes`` bounds the bytes of all recordings together: an upload that would
pass it is refused (RESOURCE_EXHAUSTED naming the quota; while streaming once it alone is
over the quota, else before it is published) and the store is left unchanged; the same
bytes again add nothing. Reductions are not persisted: Reduce recomputes them.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lastv2x.core.errors import (
    Cancelled,
    FieldViolation,
    InvalidArgument,
    LastV2XError,
    NotFound,
    ResourceExhausted,
)
from lastv2x.core.files import open_private, private_dir, private_file

from .errors import (
    MessageDecodeError,
    MissingChannelsError,
    RecordingLimitError,
    SchemaError,
    StrapError,
    UnsupportedEncodingError,
)
from .pipeline import reduce_table
from .readers import ReadLimits, open_recording
from .reduce import ReduceParams, Reduction
from .scene_schema import ChannelMap, map_coverage, select_channel_map
from .vectorize import FrameTable, vectorize_recording

SUFFIXES = (".mcap", ".bag", ".db3", ".record")


#: the STRaP pod's memory limit (deploy/k8s/base/strap.yaml); the read limits' defaults are sized from it
POD_MEMORY_BYTES = 1 << 30

#: StrapConfig's integer settings and their variables
_INT_SETTINGS = {"max_bytes": "LASTV2X_STRAP_MAX_BYTES",
                 "max_decompressed_bytes": "LASTV2X_STRAP_MAX_DECOMPRESSED_BYTES",
                 "max_messages": "LASTV2X_STRAP_MAX_MESSAGES",
                 "max_chunk_bytes": "LASTV2X_STRAP_MAX_CHUNK_BYTES",
                 "max_held_bytes": "LASTV2X_STRAP_MAX_HELD_BYTES",
                 "quota_bytes": "LASTV2X_STRAP_QUOTA_BYTES"}


@dataclass(frozen=True)
class StrapConfig:
    """The STRaP service's settings, read once in ``main`` (``from_env``).

    The read limits bound what one recording may inflate while it is read (issues 16, 41):
    ``max_held_bytes`` (inflated bytes held at once across chunks <= 50 % of the pod's memory
    limit, :data:`POD_MEMORY_BYTES`; the rest is the interpreter, decoded messages and gRPC
    buffers; ``deploy/check.py`` checks the manifests) and ``max_chunk_bytes`` (1/16 of it) are
    memory; ``max_decompressed_bytes`` and ``max_messages`` are the work of one pass (2x the
    pod's limit in bytes; 4 M messages, ~1 h of 10 channels at 100 Hz, ~250 B of state each).
    """

    store_dir: Path = Path(".lastv2x/strap")  # recordings and their staging directory
    max_bytes: int = 512 * 1024 * 1024  # ingest cap per recording, bytes
    max_decompressed_bytes: int = 2 * POD_MEMORY_BYTES  # per recording, after decompression
    max_messages: int = 4_000_000  # per recording
    max_chunk_bytes: int = POD_MEMORY_BYTES // 16  # one chunk, after decompression
    max_held_bytes: int = POD_MEMORY_BYTES // 2  # inflated bytes held at once, across chunks
    quota_bytes: int = 16 * 1024 * 1024 * 1024  # all stored recordings together

    @property
    def limits(self) -> ReadLimits:
        return ReadLimits(self.max_decompressed_bytes, self.max_messages, self.max_chunk_bytes, self.max_held_bytes)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StrapConfig:
        """``LASTV2X_STRAP_DIR`` (else ``$LASTV2X_STATE_DIR/strap``) and the ``_INT_SETTINGS``."""
        env = os.environ if env is None else env
        store = env.get("LASTV2X_STRAP_DIR") or Path(env.get("LASTV2X_STATE_DIR") or ".lastv2x") / "strap"
        values: dict[str, int] = {}
        for attr, var in _INT_SETTINGS.items():
            raw = env.get(var)
            if raw is None:
                continue
            try:
                values[attr] = int(raw)
            except ValueError as exc:
                raise InvalidArgument(FieldViolation(var, str(exc))) from None
            if values[attr] <= 0:
                raise InvalidArgument(FieldViolation(var, f"{raw} is not positive"))
        return cls(Path(store), **values)


@dataclass(frozen=True)
class RecordingInfo:
    id: str
    name: str
    format: str
    path: Path
    channels: dict[str, tuple[str, int]]  # name -> (encoding, message count)
    start_ns: int
    end_ns: int
    size_bytes: int
    channel_map: str = ""  # as given at Ingest (built-in name or inline JSON); "" = chosen per Reduce
    map_name: str = ""     # the map a Reduce without one uses ("" = no built-in map matches)
    warnings: tuple[str, ...] = ()


_SCHEMA = """CREATE TABLE IF NOT EXISTS recordings (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, format TEXT NOT NULL, file TEXT NOT NULL,
    channels TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
    size_bytes INTEGER NOT NULL)"""


@dataclass
class StrapStore:
    root: Path
    max_bytes: int = 512 * 1024 * 1024
    limits: ReadLimits = field(default_factory=lambda: StrapConfig().limits)
    quota_bytes: int = StrapConfig.quota_bytes
    _recordings: dict[str, RecordingInfo] = field(default_factory=dict)
    _reductions: dict[tuple, tuple[FrameTable, Reduction]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _staged_bytes: int = 0  # bytes of uploads being staged now (they are on the store's disk too)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        private_dir(self.root)  # 0700, the index and recordings 0600: recordings are the team's
        self._db = sqlite3.connect(private_file(self.root / "strap.db"), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        cols = {row[1] for row in self._db.execute("PRAGMA table_info(recordings)")}
        if "channel_map" not in cols:  # an index written before channel maps could be given
            self._db.execute("ALTER TABLE recordings ADD COLUMN channel_map TEXT NOT NULL DEFAULT ''")
        self._recover()

    def _recover(self) -> None:
        """Load the index; delete staging leftovers, unindexed recording files and rows without a file."""
        for leftover in (self.root / ".incoming").glob("*"):
            if leftover.is_file():
                leftover.unlink()
        rows = self._db.execute("SELECT id, name, format, file, channels, start_ns, end_ns, size_bytes, "
                                "channel_map FROM recordings").fetchall()
        for rec_id, name, fmt, file, channels, start, end, size, cmap_spec in rows:
            path = self.root / file
            if not path.is_file():
                self._db.execute("DELETE FROM recordings WHERE id = ?", (rec_id,))
                continue
            chans = {c: (enc, int(n)) for c, (enc, n) in json.loads(channels).items()}
            info = RecordingInfo(rec_id, name, fmt, path, chans, start, end, size, cmap_spec)
            map_name, warnings = _ingest_map(cmap_spec, info)
            self._recordings[rec_id] = RecordingInfo(**{**info.__dict__, "map_name": map_name, "warnings": warnings})
        indexed = {info.path.name for info in self._recordings.values()}
        for path in self.root.iterdir():
            if path.is_file() and path.suffix in SUFFIXES and path.name not in indexed:
                path.unlink()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @property
    def stored_bytes(self) -> int:
        with self._lock:
            return sum(info.size_bytes for info in self._recordings.values())

    def _check_quota(self, name: str, size: int, rec_id: str | None = None, staged: int = 0) -> None:
        """Raise when ``size`` more bytes would pass the quota with what is stored and ``staged``
        (other uploads' staging files), call under the lock."""
        if rec_id is not None and rec_id in self._recordings:
            return  # the same bytes again: one recording, nothing added
        stored = sum(info.size_bytes for info in self._recordings.values())
        if stored + staged + size > self.quota_bytes:
            raise ResourceExhausted(f"recording {name!r} ({size} bytes or more) would pass the store's quota "
                                    f"quota_bytes = {self.quota_bytes} (LASTV2X_STRAP_QUOTA_BYTES; {stored} "
                                    f"bytes stored, {staged} being uploaded); nothing was stored")

    def _stage(self, name: str, size: int, n: int) -> None:
        """Count ``n`` more staged bytes of an upload now at ``size`` bytes. The store's disk holds
        at most ``quota_bytes + max_bytes`` (what ``deploy/check.py`` fits in the pod's emptyDir):
        the recordings, and staging files of uploads in progress (one alone always fits; the exact
        quota check, where the same content stored again adds nothing, is at publish)."""
        with self._lock:
            stored = sum(info.size_bytes for info in self._recordings.values())
            others = self._staged_bytes - size
            if stored + others + size + n > self.quota_bytes + self.max_bytes:
                raise ResourceExhausted(
                    f"recording {name!r} ({size + n} bytes or more) does not fit beside {stored} bytes stored and "
                    f"{others} being uploaded: the store holds quota_bytes = {self.quota_bytes} "
                    f"(LASTV2X_STRAP_QUOTA_BYTES) plus one upload of max_bytes = {self.max_bytes} "
                    "(LASTV2X_STRAP_MAX_BYTES); nothing was stored, retry when the other uploads are done")
            self._staged_bytes += n

    def ingest_chunks(self, name: str, chunks: Iterable[bytes], channel_map: str = "") -> RecordingInfo:
        """Store a complete, readable recording; ``channel_map`` (built-in name or inline JSON)
        is validated, checked against the recording's channels and kept for its Reduces."""
        suffix = _suffix(name)
        if channel_map:
            _map(channel_map, "", ())  # a bad map fails before any byte is stored
        staging = self.root / ".incoming"
        private_dir(staging)
        tmp = staging / f"{uuid.uuid4().hex}{suffix}"
        digest, size = hashlib.sha256(), 0
        try:
            with open_private(tmp, "wb") as fh:
                for chunk in chunks:
                    if size + len(chunk) > self.max_bytes:
                        raise ResourceExhausted(f"recording {name!r} exceeds the cap of {self.max_bytes} bytes "
                                                f"(at byte {size + len(chunk)}); nothing was stored")
                    self._stage(name, size, len(chunk))  # exact check (same content stored) at publish
                    size += len(chunk)
                    digest.update(chunk)
                    fh.write(chunk)
            info = self._inspect(tmp, name, size, digest.hexdigest()[:16])
            final = self.root / f"{info.id}{suffix}"
            map_name, warnings = _ingest_map(channel_map, info)
            info = RecordingInfo(**{**info.__dict__, "path": final, "channel_map": channel_map,
                                    "map_name": map_name, "warnings": warnings})
            with self._lock:
                self._check_quota(name, size, info.id, staged=self._staged_bytes - size)
                os.replace(tmp, final)  # then the index: a crash between the two leaves a file swept at start
                self._db.execute("INSERT OR REPLACE INTO recordings (id, name, format, file, channels, start_ns, "
                                 "end_ns, size_bytes, channel_map) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 (info.id, info.name, info.format, final.name, json.dumps(info.channels),
                                  info.start_ns, info.end_ns, info.size_bytes, channel_map))
                self._reductions = {k: v for k, v in self._reductions.items() if k[0] != info.id}
                self._recordings[info.id] = info
            return info
        finally:
            with self._lock:
                self._staged_bytes -= size
            if tmp.exists():
                tmp.unlink()

    def add_file(self, path: Path, name: str | None = None) -> RecordingInfo:
        """Ingest a file already on disk (CLI, tests)."""
        def chunks() -> Iterable[bytes]:
            with open(path, "rb") as fh:
                while block := fh.read(1 << 20):
                    yield block
        return self.ingest_chunks(name or path.name, chunks())

    def _inspect(self, path: Path, name: str, size: int, rec_id: str) -> RecordingInfo:
        try:
            with open_recording(path, limits=self.limits) as rec:
                counts: dict[str, int] = {}
                first = last = None
                for channel, t_ns, _msg in rec:  # decode everything once: corrupt files fail here
                    counts[channel] = counts.get(channel, 0) + 1
                    first = t_ns if first is None else first
                    last = t_ns
                channels = {c: (info.encoding, counts.get(c, 0)) for c, info in rec.channels().items()}
                fmt = rec.format
        except RecordingLimitError as exc:
            var = _INT_SETTINGS.get(exc.limit, "")
            raise ResourceExhausted(f"recording {name!r}: {exc.what} exceeds the limit {exc.limit} = {exc.value} "
                                    f"({var}); nothing was stored") from None
        except StrapError as exc:
            raise InvalidArgument(FieldViolation("chunk", f"{name}: {str(exc).replace(str(path), name)}",
                                                 "upload a complete, supported recording")) from None
        except LastV2XError:
            raise
        except Exception:  # noqa: BLE001 - any failure to decode (struct, zstd, lz4, ...) is a corrupt file
            raise InvalidArgument(FieldViolation("chunk", f"{name}: not a readable recording (truncated or "
                                                 "corrupt data)", "upload a complete, supported recording")) from None
        return RecordingInfo(rec_id, name, fmt, path, channels, first or 0, last or 0, size)

    def get(self, recording_id: str) -> RecordingInfo:
        with self._lock:
            info = self._recordings.get(recording_id)
        if info is None:
            raise NotFound(f"no recording {recording_id!r}; ingest it first")
        return info

    def reduce(self, recording_id: str, module: str, params: ReduceParams,
               stop: Callable[[], bool] | None = None, channel_map: str = "", strict: bool = False
               ) -> tuple[FrameTable, Reduction]:
        """``stop()`` (the call ended) is asked before reading and between reading and reducing.

        ``channel_map`` (built-in name or inline JSON) overrides the one given at Ingest; without
        either the selection rule chooses (:func:`select_channel_map`). A recording lacking some
        channels of its map is reduced over what is there (the table's ``warnings``), unless
        ``strict``: then FAILED_PRECONDITION listing them."""
        info = self.get(recording_id)
        _check(stop)
        spec = channel_map or info.channel_map
        cmap = _map(spec, info.format, info.channels)
        present, absent = map_coverage(cmap, info.channels)
        if not present:
            raise InvalidArgument(FieldViolation(
                "channel_map", f"the recording has none of the channels map {cmap.name!r} reads ({', '.join(absent)})",
                f"map the recording's own channels: {', '.join(sorted(info.channels)[:8])}"))
        known = sorted(cmap.modules)
        if module and module not in known:
            raise InvalidArgument(FieldViolation("module", f"unknown module {module!r} in channel map {cmap.name!r}",
                                                 f"use one of {known}"))
        key = (recording_id, module, params, spec, strict)
        with self._lock:
            hit = self._reductions.get(key)
        if hit:
            return hit
        try:
            with open_recording(info.path, limits=self.limits) as rec:
                table = vectorize_recording(rec, cmap, modules=[module] if module else None,
                                            missing="error" if strict else "none")
        except MissingChannelsError:
            raise
        except RecordingLimitError as exc:
            raise ResourceExhausted(f"recording {info.name!r}: {exc.what} exceeds the limit {exc.limit} = "
                                    f"{exc.value} ({_INT_SETTINGS.get(exc.limit, '')})") from None
        except (UnsupportedEncodingError, MessageDecodeError) as exc:
            raise InvalidArgument(FieldViolation(
                "channel_map", f"map {cmap.name!r}: {exc.reason}",
                f"drop {exc.channel!r} from the channel map, or record it in an encoding with an embedded "
                "definition (json, protobuf, ros2msg/ros1msg)")) from None
        except SchemaError as exc:
            raise InvalidArgument(FieldViolation("channel_map", str(exc), "fix the channel map")) from None
        except StrapError as exc:
            raise InvalidArgument(FieldViolation("module", str(exc), "choose a module whose channels the "
                                                 "recording has")) from None
        _check(stop)
        result = (table, reduce_table(table, params))
        with self._lock:
            self._reductions[key] = result
            self._reductions[(recording_id, "__last__")] = result
        return result

    def last_reduction(self, recording_id: str) -> tuple[FrameTable, Reduction]:
        with self._lock:
            hit = self._reductions.get((recording_id, "__last__"))
        if hit is None:
            raise NotFound(f"recording {recording_id!r} has not been reduced; call Reduce first")
        return hit


def _map(spec: str, fmt: str, channels: Iterable[str]) -> ChannelMap:
    """The channel map of a request (the one rule), bad maps as INVALID_ARGUMENT naming the JSON path."""
    try:
        return select_channel_map(spec, fmt, channels, allow_files=False)
    except SchemaError as exc:
        text = str(exc)
        problem, _, hint = text.partition("; fix: ")
        raise InvalidArgument(FieldViolation("channel_map", problem, hint or "fix the channel map")) from None


def _ingest_map(spec: str, info: RecordingInfo) -> tuple[str, tuple[str, ...]]:
    """(map a Reduce without one would use, warnings) for a just-inspected recording."""
    try:
        cmap = select_channel_map(spec, info.format, info.channels, allow_files=False)
    except SchemaError:
        return "", ("no built-in channel map matches this recording's channels: give channel_map at Reduce",)
    present, absent = map_coverage(cmap, info.channels)
    if spec and not present:
        raise InvalidArgument(FieldViolation(
            "channel_map", f"the recording has none of the channels map {cmap.name!r} reads ({', '.join(absent)})",
            f"map the recording's own channels: {', '.join(sorted(info.channels)[:8])}"))
    if absent:
        return cmap.name, (f"channel map {cmap.name!r}: the recording lacks {', '.join(absent)} (their features "
                           "will be none; Reduce with strict refuses)",)
    return cmap.name, ()


def _check(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise Cancelled("Reduce stopped: the call's deadline passed or its client went away")


def _suffix(name: str) -> str:
    if not name:
        raise InvalidArgument(FieldViolation("name", "the first chunk must carry the file name",
                                             f"e.g. drive.mcap; supported: {', '.join(SUFFIXES)}"))
    p = Path(name)
    if p.suffix in SUFFIXES:
        return p.suffix
    if p.name.split(".")[-2:-1] == ["record"] or ".record." in p.name:
        return ".record"
    raise InvalidArgument(FieldViolation("name", f"unsupported recording type {p.suffix or p.name!r}",
                                         f"supported: {', '.join(SUFFIXES)} (rosbag2 directories: ingest each file)"))
