"""V2X message records with SAE J2735 semantics, struct-of-arrays per step.

Every stream is a :class:`RecordBatch` subclass: one numpy array per field, one row
per message (or per message row: a SPaT carries one row per signal group, a MAP one
row per lane). Senders, groups and lanes are dense integer keys from a
:class:`KeyTable`, so batches of a whole step are filtered, faulted and merged
without Python loops over messages.

J2735 semantics kept (SAE J2735 202309 / J2945/1):

* **BSM** (BasicSafetyMessage, Part I core data) at 10 Hz from every equipped
  vehicle: position, speed, heading, longitudinal acceleration, brake applied,
  ``msgCnt`` (0..127, +1 mod 128 per message and sender), a timestamp (the time the
  position was determined; J2735 ``secMark``), and Part II ``VehicleEventFlags``.
  A hard-braking vehicle sets ``eventHardBraking`` (bit 7) -- the **EEBL** event.
* **EEBL** records travel with their carrier's BSM (same transmission, same channel
  draw) and name the *origin* vehicle, the origin's event position / deceleration /
  timestamp and a hop count (0 = the braking vehicle itself, k = k-th V2V
  rebroadcast).
* **SPaT** (SignalPhaseAndTiming) at 10 Hz per RSU: per signal group the phase
  (``MovementPhaseState``) and ``minEndTime``/``maxEndTime`` as *absolute* scenario
  time (J2735 ``TimeMark`` is absolute tenths of a second of the hour; absolute time
  lets a receiver dead-reckon the countdown and lets relayed states stay correct).
  Fixed-time signals have minEndTime == maxEndTime. Relayed rows (RSU-to-RSU relay)
  keep the origin RSU's timestamp and end times and carry a hop count.
* **MAP** (MapData) at 1 Hz per RSU: one row per approach lane: lane, stop-bar
  position and the signal group controlling it (J2735 ``connectsTo.signalGroup``).

Bus jitter: each sender transmits periodically with its own phase offset in
[0, T) and a per-message bus delay in [0, ``bus_delay_max_s``) between the state
sample and the radio, both drawn from the scenario's ``BUS_JITTER`` substream by a
counter-based hash of (sender id, message index), so adding a vehicle never shifts
another sender's draws.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
from numpy.typing import NDArray

from lastv2x.core.catalogue import STREAMS, Stream
from lastv2x.core.rng import Substream, stable_hash64, substream
from services.simulator.kernels.draws import counter_uniform, keyed_uniforms
from services.simulator.kernels.schedule import due_slots, quiet_until

if TYPE_CHECKING:
    from services.simulator.info import WorldSnapshot

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# the streams and their values, read once for the per-step code of the V2X stack: on Python 3.11 an Enum member
# read as a class attribute (``Stream.SPAT``) costs ~900 instructions (EnumType has a ``__getattr__``, so every
# class attribute read takes the slow hook), and ``Stream.value`` is a Python-level property (~800 more)
BSM_STREAM, SPAT_STREAM, MAP_STREAM, EEBL_STREAM = Stream.BSM, Stream.SPAT, Stream.MAP, Stream.EEBL
STREAM_VALUE = {s: s.value for s in Stream}

BSM_PERIOD_S = STREAMS[Stream.BSM].period_s
SPAT_PERIOD_S = STREAMS[Stream.SPAT].period_s
MAP_PERIOD_S = STREAMS[Stream.MAP].period_s
EEBL_PERIOD_S = STREAMS[Stream.EEBL].period_s
MSG_COUNT_MOD = 128  # J2735 MsgCount ::= INTEGER (0..127)
EVENT_HARD_BRAKING = 1 << 7  # J2735 VehicleEventFlags.eventHardBraking
EEBL_DECEL_THRESHOLD_MPS2 = 0.4 * 9.80665  # J2945/1 hard-braking event: decel > 0.4 g
DEFAULT_BUS_DELAY_MAX_S = 0.005  # stack/bus delay between state sample and air (representative)
NO_KEY = -1


class J2735PhaseState(IntEnum):
    """J2735 MovementPhaseState (the SPaT ``eventState``)."""

    UNAVAILABLE = 0
    DARK = 1
    STOP_THEN_PROCEED = 2
    STOP_AND_REMAIN = 3  # red
    PRE_MOVEMENT = 4
    PERMISSIVE_MOVEMENT_ALLOWED = 5
    PROTECTED_MOVEMENT_ALLOWED = 6  # green
    PERMISSIVE_CLEARANCE = 7
    PROTECTED_CLEARANCE = 8  # amber / yellow
    CAUTION_CONFLICTING_TRAFFIC = 9


# ---------------------------------------------------------------------------
# Keys and counter-based draws
# ---------------------------------------------------------------------------

class KeyTable:
    """Dense integer keys for string ids (vehicles, RSUs, groups, lanes), append-only."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._index: dict[str, int] = {}
        self._names: list[str] = []
        self._hash: list[int] = []
        self._hash_arr: NDArray[np.uint64] | None = None  # self._hash as an array, rebuilt after a new key
        for n in names:
            self.key(n)

    def key(self, name: str) -> int:
        k = self._index.get(name)
        if k is None:
            k = len(self._names)
            self._index[name] = k
            self._names.append(name)
            self._hash.append(stable_hash64(name))
            self._hash_arr = None
        return k

    def keys(self, names: Sequence[str]) -> IntArray:
        return np.fromiter((self.key(n) for n in names), dtype=np.int64, count=len(names))

    def get(self, name: str | None) -> int:
        if name is None:
            return NO_KEY
        return self._index.get(name, NO_KEY)

    def name(self, key: int) -> str:
        return self._names[int(key)]

    def names(self, keys: Iterable[int]) -> list[str]:
        return [self._names[int(k)] for k in keys]

    def hash_rows(self, keys: list[int]) -> list[int]:
        """:meth:`hashes` of a few keys as Python ints."""
        table = self._hash
        return [table[k] for k in keys]

    def hashes(self, keys: IntArray) -> NDArray[np.uint64]:
        return self.hash_table()[np.asarray(keys, dtype=np.int64)]

    def hash_table(self) -> NDArray[np.uint64]:
        """Every key's id hash, by key (the same array until a new key is added)."""
        table = self._hash_arr
        if table is None:
            table = self._hash_arr = np.asarray(self._hash, dtype=np.uint64)
        return table

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __len__(self) -> int:
        return len(self._names)


_DELAY_BLOCK = 64  # bus delays are computed for this many consecutive messages of a sender at once
_SMALL = 32  # up to this many elements the arithmetic runs on Python scalars (same result, no numpy overhead)
_TRUES = np.ones(256, dtype=bool)
_TRUES.setflags(write=False)


def trues(n: int) -> BoolArray:
    """``np.ones(n, dtype=bool)`` (which is a Python-level function: ~1 us on tiny arrays)."""
    return _TRUES[:n].copy() if n <= 256 else np.ones(n, dtype=bool)


def live_equipped(snap: WorldSnapshot) -> np.ndarray:
    """The vehicles that transmit (and may relay): equipped and alive (a fresh array)."""
    return np.asarray(snap.equipped, dtype=bool) & np.asarray(snap.alive, dtype=bool)


def filled(n: int, value: float, dtype: Any = np.float64) -> np.ndarray:
    """``np.full(n, value, dtype)`` for a scalar ``value``, without its Python-level overhead."""
    out = np.empty(n, dtype=dtype)
    out.fill(value)
    return out


_STREAM_KEYS: dict[str, int] = {}


def _stream_key(stream: Stream) -> int:
    k = _STREAM_KEYS.get(stream)
    if k is None:
        k = _STREAM_KEYS[stream] = stable_hash64(f"stream:{stream}")
    return k


@dataclass(frozen=True)
class BusJitter:
    """Per-sender transmit phase and per-message bus delay from the BUS_JITTER substream."""

    base: int
    bus_delay_max_s: float = DEFAULT_BUS_DELAY_MAX_S
    # (stream, sender hash, block) -> the delays of that sender's messages block * _DELAY_BLOCK onwards:
    # a step's few due senders read them instead of hashing their counters one call at a time
    _blocks: dict[tuple[Stream, int, int], list[float]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_seed(cls, seed: int, bus_delay_max_s: float = DEFAULT_BUS_DELAY_MAX_S) -> BusJitter:
        base = int(substream(seed, Substream.BUS_JITTER).integers(0, 2**63 - 1))
        return cls(base, float(bus_delay_max_s))

    def phase_s(self, sender_hash: NDArray[np.uint64], stream: Stream, period_s: float) -> FloatArray:
        """Transmit phase offset in [0, period) of each sender on ``stream``."""
        return period_s * counter_uniform(self.base ^ _stream_key(stream), sender_hash)

    def delay_key(self, stream: Stream) -> np.uint64:
        """The base key of ``stream``'s bus delays: message ``m`` of a sender with id hash ``h`` waits
        ``bus_delay_max_s * U(delay_key; h, m + 1)`` (:meth:`bus_delay_s`; the BSM kernel
        ``kernels.transmit.bsm_slots`` draws the same)."""
        return np.uint64((self.base ^ _stream_key(stream)) & 0xFFFFFFFFFFFFFFFF)

    def bus_delay_s(self, sender_hash: NDArray[np.uint64], stream: Stream, index: IntArray) -> FloatArray:
        """Delay in [0, bus_delay_max_s) of message ``index`` of each sender."""
        index = np.asarray(index)
        if self.bus_delay_max_s <= 0.0 or index.size == 0:
            return np.zeros(index.shape)
        if index.ndim == 1 and index.shape[0] <= _SMALL and np.shape(sender_hash) == index.shape:
            out = []
            for h, i in zip(np.asarray(sender_hash).tolist(), index.tolist(), strict=True):
                block = self._blocks.get((stream, h, i // _DELAY_BLOCK))
                if block is None:
                    block = self._delay_block(stream, h, i // _DELAY_BLOCK)
                out.append(block[i % _DELAY_BLOCK])
            return np.array(out, dtype=np.float64)
        u = counter_uniform(self.base ^ _stream_key(stream), sender_hash, index + 1)
        return self.bus_delay_max_s * u

    def _delay_block(self, stream: Stream, sender_hash: int, block: int) -> list[float]:
        """The delays of messages ``block * _DELAY_BLOCK`` to ``+ _DELAY_BLOCK - 1`` of one sender (the same
        elementwise values :meth:`bus_delay_s` computes for them one by one), kept for the next calls."""
        index = np.arange(block * _DELAY_BLOCK, (block + 1) * _DELAY_BLOCK, dtype=np.int64)
        u = counter_uniform(self.base ^ _stream_key(stream), np.full(_DELAY_BLOCK, sender_hash, np.uint64), index + 1)
        values = self._blocks[(stream, sender_hash, block)] = (self.bus_delay_max_s * u).tolist()
        return values


@dataclass(frozen=True)
class LinkDraws:
    """The uniform of each link's Bernoulli draw, keyed by what the link carries, never by where it sits in a
    step or a batch: (scenario seed, stream, sender, message index, receiver) through a counter-based
    generator (``counter_uniform``) under the seed's CHANNEL (radio) or BACKHAUL (wired) substream. So adding a
    sender, an RSU or another row to a batch moves no other link's draw, and any engine that keys its draws
    the same way replays the same deliveries."""

    base: int

    @classmethod
    def from_seed(cls, seed: int, name: Substream = Substream.CHANNEL) -> LinkDraws:
        return cls(int(substream(seed, name).integers(0, 2**63 - 1)))

    def uniform(self, stream: Stream, sender_hash: NDArray[np.uint64], msg_id: IntArray,
                receiver_hash: NDArray[np.uint64]) -> FloatArray:
        """U[0, 1) per link from its sender's and receiver's id hashes and the sender-local message index."""
        return self.uniform_spans(len(sender_hash), [(slice(None), stream, sender_hash, msg_id, receiver_hash)])

    def uniform_spans(self, n: int, spans: Sequence[tuple[slice, Stream, NDArray[np.uint64], IntArray,
                                                           NDArray[np.uint64]]]) -> FloatArray:
        """:meth:`uniform` of ``n`` links given span by span (``(span, stream, sender hashes, message indices,
        receiver hashes)``, the spans covering ``range(n)``), in one kernel call (``kernels.draws``)."""
        bases = np.empty(n, dtype=np.uint64)
        columns = np.empty((3, n), dtype=np.uint64)
        for sl, stream, sender_hash, msg_id, receiver_hash in spans:
            bases[sl] = self.base ^ _stream_key(stream)  # (both 63-bit)
            columns[0, sl] = sender_hash
            columns[1, sl] = np.asarray(msg_id, dtype=np.int64) + 1
            columns[2, sl] = receiver_hash
        return keyed_uniforms(bases, columns)


def due_mask(t_prev: float | None, t_now: float, phase_s: FloatArray, period_s: float) -> BoolArray:
    """Senders whose schedule ``phase + k*period`` has a slot in (t_prev, t_now] (``kernels.schedule.due_slots``).

    On the first step (``t_prev`` None) every sender transmits once.
    """
    if t_prev is None:
        return trues(phase_s.shape[0])
    return due_slots(float(t_prev), float(t_now), phase_s, float(period_s))


QUIET_GUARD_S = 1e-6  # far above the rounding of (t - phase) / period at any scenario time, far below a step


def quiet_until_s(t_now: float, phase_s: FloatArray, period_s: float) -> float:
    """A time before which none of the senders has a slot after ``t_now``: for any ``t_prev >= t_now``
    and ``t < quiet_until_s(...)``, ``due_mask(t_prev, t, ...)`` is all False, so a caller may skip it.

    Each sender's next slot is ``phase + (k + 1) * period`` for its slot ``k`` at ``t_now`` (as
    :func:`due_mask` counts it, with its 1e-9 slot tolerance); :data:`QUIET_GUARD_S` earlier covers the
    rounding of that division (``kernels.schedule.quiet_until``). -inf (check every step) when a phase is not
    finite; +inf without senders."""
    return float(quiet_until(float(t_now), phase_s, float(period_s), QUIET_GUARD_S))


# ---------------------------------------------------------------------------
# Record batches
# ---------------------------------------------------------------------------

_FIELDS: dict[type, tuple[str, ...]] = {}
_EMPTY: dict[type, Any] = {}


@dataclass(frozen=True, eq=False)
class RecordBatch:
    """Struct of equal-length arrays; subclasses declare the fields (``sender`` first)."""

    stream: ClassVar[Stream]
    if TYPE_CHECKING:  # common to every stream; declared per subclass (keyword construction)
        sender: IntArray
        msg_id: IntArray
        tx_time_s: FloatArray
        timestamp_s: FloatArray

    def __len__(self) -> int:
        return len(self.sender)  # (1-D: its length, without building the shape tuple)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        names = _FIELDS.get(cls)
        if names is None:
            names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
        return names

    @classmethod
    def empty(cls) -> Self:
        out = _EMPTY.get(cls)
        if out is None:
            kw = {n: np.zeros(0, dtype=_DTYPES.get(n, np.float64)) for n in cls.field_names()}
            for arr in kw.values():
                arr.setflags(write=False)
            out = _EMPTY[cls] = cls(**kw)
        return out

    @classmethod
    def _build(cls, columns: dict[str, Any]) -> Self:
        """``cls(**columns)`` for a complete column dict, without the frozen dataclass ``__init__``'s
        per-field ``object.__setattr__`` (batches are built, taken and merged many times a step)."""
        out = object.__new__(cls)
        out.__dict__.update(columns)
        return out

    def take(self, index: Any) -> Self:
        d = self.__dict__
        return self._build({n: d[n][index] for n in self.field_names()})

    def replace(self, **changes: Any) -> Self:
        for n in changes:
            if n not in self.__dict__:
                raise TypeError(f"{type(self).__name__} has no field {n!r}")
        kw = dict(self.__dict__)
        kw.update(changes)
        return self._build(kw)

    @classmethod
    def concat(cls, batches: Sequence[Self]) -> Self:
        batches = [b for b in batches if len(b)]
        if not batches:
            return cls.empty()
        if len(batches) == 1:
            return batches[0]
        return cls._build({n: np.concatenate([b.__dict__[n] for b in batches]) for n in cls.field_names()})

    def rows(self) -> list[dict[str, Any]]:
        """Plain dict rows (for traces and tests; not for hot paths)."""
        cols = {n: getattr(self, n).tolist() for n in self.field_names()}
        return [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]


_DTYPES: dict[str, Any] = {
    "sender": np.int64, "origin": np.int64, "group": np.int64, "lane": np.int64,
    "msg_count": np.int64, "msg_id": np.int64, "hop_count": np.int64, "event_flags": np.int64,
    "phase": np.int64, "brake_flag": np.bool_, "event_id": np.int64,
}


@dataclass(frozen=True, eq=False)
class BsmBatch(RecordBatch):
    """BSM Part I core data + event flags, one row per message."""

    stream: ClassVar[Stream] = Stream.BSM
    sender: IntArray
    msg_id: IntArray  # sender-local running index (msg_count = msg_id mod 128)
    msg_count: IntArray
    tx_time_s: FloatArray
    timestamp_s: FloatArray
    x_m: FloatArray
    y_m: FloatArray
    speed_mps: FloatArray
    heading_rad: FloatArray
    accel_mps2: FloatArray
    brake_flag: BoolArray
    event_flags: IntArray


@dataclass(frozen=True, eq=False)
class EeblBatch(RecordBatch):
    """A hard-braking event carried by a BSM (hop 0) or a V2V rebroadcast (hop >= 1)."""

    stream: ClassVar[Stream] = Stream.EEBL
    sender: IntArray  # carrier (the vehicle transmitting this BSM)
    msg_id: IntArray  # carrier's BSM index (shares the BSM's channel draw)
    origin: IntArray  # the braking vehicle
    event_id: IntArray  # origin-local event number (one per hard-braking onset)
    hop_count: IntArray
    tx_time_s: FloatArray
    timestamp_s: FloatArray  # origin's sample time of the reported state
    x_m: FloatArray  # origin position at timestamp
    y_m: FloatArray
    heading_rad: FloatArray
    speed_mps: FloatArray
    decel_mps2: FloatArray  # positive = braking


@dataclass(frozen=True, eq=False)
class SpatBatch(RecordBatch):
    """SPaT, one row per (message, signal group); relayed rows have hop_count >= 1."""

    stream: ClassVar[Stream] = Stream.SPAT
    sender: IntArray  # transmitting RSU
    msg_id: IntArray  # sender-local message index (rows of one message share it)
    msg_count: IntArray
    origin: IntArray  # RSU of the intersection the row describes
    group: IntArray
    phase: IntArray  # simulator phase code (see stack.PHASE_CODES)
    min_end_time_s: FloatArray  # absolute scenario time
    max_end_time_s: FloatArray
    green_start_time_s: FloatArray  # next green onset (J2735 next MovementEvent); <= timestamp while green
    tx_time_s: FloatArray
    timestamp_s: FloatArray  # origin RSU's sample time
    hop_count: IntArray


@dataclass(frozen=True, eq=False)
class MapBatch(RecordBatch):
    """MapData, one row per (message, approach lane)."""

    stream: ClassVar[Stream] = Stream.MAP
    sender: IntArray
    msg_id: IntArray
    msg_count: IntArray
    lane: IntArray
    group: IntArray  # NO_KEY = lane not signal-controlled
    stop_x_m: FloatArray
    stop_y_m: FloatArray
    tx_time_s: FloatArray
    timestamp_s: FloatArray


BATCH_TYPES: dict[Stream, type[RecordBatch]] = {
    Stream.BSM: BsmBatch, Stream.EEBL: EeblBatch, Stream.SPAT: SpatBatch, Stream.MAP: MapBatch}


# ---------------------------------------------------------------------------
# Static RSU content
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class MapLane:
    lane_id: str
    signal_group_id: str | None
    stop_bar_xy: tuple[float, float]


@dataclass(frozen=True)
class RsuSite:
    """An RSU: where it is, which signal groups it broadcasts (SPaT) and its MAP lanes."""

    rsu_id: str
    xy: tuple[float, float]
    group_ids: tuple[str, ...]
    lanes: tuple[MapLane, ...] = ()
    height_m: float | None = None  # None = the channel's RSU antenna height
    junction_id: str = ""


# ---------------------------------------------------------------------------
# Generators (vectorized per step)
# ---------------------------------------------------------------------------

def make_bsms(sender: IntArray, msg_id: IntArray, t_s: float, bus_delay_s: FloatArray,
              xy_m: FloatArray, speed_mps: FloatArray, heading_rad: FloatArray,
              accel_mps2: FloatArray, brake_flag: BoolArray, hard_brake: BoolArray) -> BsmBatch:
    """BSMs of the given senders sampled at ``t_s`` (arrays already restricted to them)."""
    n = sender.shape[0]
    flags = np.where(hard_brake, EVENT_HARD_BRAKING, 0).astype(np.int64)
    return BsmBatch(
        sender=sender.astype(np.int64), msg_id=msg_id.astype(np.int64),
        msg_count=(msg_id % MSG_COUNT_MOD).astype(np.int64),
        tx_time_s=t_s + bus_delay_s, timestamp_s=np.full(n, t_s),
        x_m=xy_m[:, 0].astype(np.float64), y_m=xy_m[:, 1].astype(np.float64),
        speed_mps=np.asarray(speed_mps, np.float64), heading_rad=np.asarray(heading_rad, np.float64),
        accel_mps2=np.asarray(accel_mps2, np.float64), brake_flag=np.asarray(brake_flag, bool),
        event_flags=flags)


def eebl_from_bsms(bsm: BsmBatch, event_id: IntArray) -> EeblBatch:
    """Hop-0 EEBL records of the BSMs that carry the hard-braking flag."""
    sel = np.nonzero(bsm.event_flags & EVENT_HARD_BRAKING)[0]
    b = bsm.take(sel)
    return EeblBatch(
        sender=b.sender, msg_id=b.msg_id, origin=b.sender.copy(), event_id=event_id[sel].astype(np.int64),
        hop_count=np.zeros(len(b), np.int64), tx_time_s=b.tx_time_s, timestamp_s=b.timestamp_s,
        x_m=b.x_m, y_m=b.y_m, heading_rad=b.heading_rad, speed_mps=b.speed_mps,
        decel_mps2=np.maximum(0.0, -b.accel_mps2))


def make_spat(sender: IntArray, msg_id: IntArray, rsu_groups: Sequence[IntArray], t_s: float,
              bus_delay_s: FloatArray, phase_of_group: IntArray, end_time_of_group: FloatArray,
              green_time_of_group: FloatArray) -> SpatBatch:
    """Own-intersection SPaT rows of the transmitting RSUs.

    ``rsu_groups[i]``: group keys RSU ``sender[i]`` serves; ``phase_of_group``,
    ``end_time_of_group`` (absolute end of the current phase) and
    ``green_time_of_group`` (absolute next green onset) are indexed by group key.
    """
    counts = np.array([len(g) for g in rsu_groups], dtype=np.int64)
    if counts.sum() == 0:
        return SpatBatch.empty()
    groups = np.concatenate([np.asarray(g, np.int64) for g in rsu_groups])
    rep = np.repeat(np.arange(len(rsu_groups)), counts)
    ends = end_time_of_group[groups]
    return SpatBatch(
        sender=sender[rep].astype(np.int64), msg_id=msg_id[rep].astype(np.int64),
        msg_count=(msg_id[rep] % MSG_COUNT_MOD).astype(np.int64), origin=sender[rep].astype(np.int64),
        group=groups, phase=phase_of_group[groups].astype(np.int64), min_end_time_s=ends.copy(),
        max_end_time_s=ends.copy(), green_start_time_s=green_time_of_group[groups].astype(np.float64),
        tx_time_s=t_s + bus_delay_s[rep], timestamp_s=np.full(groups.shape[0], t_s),
        hop_count=np.zeros(groups.shape[0], np.int64))


def make_map(sender: IntArray, msg_id: IntArray, rsu_lanes: Sequence[tuple[IntArray, IntArray, FloatArray]],
             t_s: float, bus_delay_s: FloatArray) -> MapBatch:
    """MAP rows; ``rsu_lanes[i] = (lane keys, group keys, stop-bar xy (L, 2))`` of sender i."""
    counts = np.array([len(lanes[0]) for lanes in rsu_lanes], dtype=np.int64)
    if counts.sum() == 0:
        return MapBatch.empty()
    rep = np.repeat(np.arange(len(rsu_lanes)), counts)
    lanes = np.concatenate([np.asarray(r[0], np.int64) for r in rsu_lanes])
    groups = np.concatenate([np.asarray(r[1], np.int64) for r in rsu_lanes])
    stops = np.concatenate([np.asarray(r[2], np.float64).reshape(-1, 2) for r in rsu_lanes])
    return MapBatch(
        sender=sender[rep].astype(np.int64), msg_id=msg_id[rep].astype(np.int64),
        msg_count=(msg_id[rep] % MSG_COUNT_MOD).astype(np.int64), lane=lanes, group=groups,
        stop_x_m=stops[:, 0].copy(), stop_y_m=stops[:, 1].copy(), tx_time_s=t_s + bus_delay_s[rep],
        timestamp_s=np.full(lanes.shape[0], t_s))


def message_starts(sender: IntArray, msg_id: IntArray) -> BoolArray:
    """First row of every (sender, msg_id) message in a row-per-group batch (rows contiguous)."""
    if sender.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    change = np.empty(sender.shape[0], dtype=bool)
    change[0] = True
    change[1:] = (sender[1:] != sender[:-1]) | (msg_id[1:] != msg_id[:-1])
    return change


def message_count(batch: RecordBatch) -> int:
    """``message_starts(batch.sender, batch.msg_id).sum()``: the messages in a row-per-item batch."""
    n = len(batch)
    if n > 16:
        return int(message_starts(batch.sender, batch.msg_id).sum())
    if n == 0:
        return 0
    snd, mid = batch.sender.tolist(), batch.msg_id.tolist()
    return 1 + sum(1 for i in range(1, n) if snd[i] != snd[i - 1] or mid[i] != mid[i - 1])


def message_start_rows(batch: RecordBatch) -> list[int]:
    """``np.nonzero(message_starts(batch.sender, batch.msg_id))[0]`` as a list: the first row of each message."""
    n = len(batch)
    if n > 16:
        return np.nonzero(message_starts(batch.sender, batch.msg_id))[0].tolist()
    snd, mid = batch.sender.tolist(), batch.msg_id.tolist()
    return [i for i in range(n) if i == 0 or snd[i] != snd[i - 1] or mid[i] != mid[i - 1]]


def row_messages(batch: RecordBatch) -> np.ndarray:
    """``np.cumsum(message_starts(batch.sender, batch.msg_id)) - 1``: the message number of each row."""
    n = len(batch)
    if n > 16:
        return np.cumsum(message_starts(batch.sender, batch.msg_id)) - 1
    snd, mid = batch.sender.tolist(), batch.msg_id.tolist()
    out, m = [0] * n, 0
    for i in range(1, n):
        if snd[i] != snd[i - 1] or mid[i] != mid[i - 1]:
            m += 1
        out[i] = m
    return np.array(out, dtype=np.int64)


def j2735_phase_state(green: bool, amber: bool, red: bool) -> J2735PhaseState:
    """Protected movement phase state of a fixed-time signal head."""
    if green:
        return J2735PhaseState.PROTECTED_MOVEMENT_ALLOWED
    if amber:
        return J2735PhaseState.PROTECTED_CLEARANCE
    if red:
        return J2735PhaseState.STOP_AND_REMAIN
    return J2735PhaseState.UNAVAILABLE
