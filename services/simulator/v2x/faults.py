"""Message-level fault operators (LAST-V2X Appendix C), acting on top of the channel.

Pipeline per message: the sender transmits a record (``messages``), the channel
decides per link whether it is delivered and with what latency, then the faults of
this module act on the *message* (the same decision for every receiver of it, so a
dropped SPaT is not resurrected by a relay) and the survivors go to the receiver
queue. A fault

* targets one stream and a field (``*`` = the whole payload; defaults from the
  catalogue), optionally one sender (``None`` = every sender, ``"rsu"`` = every
  RSU, else a vehicle or RSU id);
* is active on a window ``[start, end)``: ``start`` = anchor + ``offset_s``;
  ``end`` = start + ``duration_s`` or the end of the scenario when unset. Anchors:
  scenario time; the onset of a signal group's phase (closed form from the plan when
  the context provides it, else predicted online from the snapshot's phase and
  time-to-change); an ego event -- the ego's distance to the stop bar dropping to
  ``distance_m``, or its decision epoch d <= ds(v) -- resolved online the first time
  the condition holds (a negative offset uses the constant-speed prediction of that
  moment, then locks);
* carries its magnitude and the magnitude's provenance, both reported in
  :class:`FaultActivity`.

Windows, anchors and the activity report live in :mod:`.fault_windows`; the operators and the engine here.

Operators (one class each, registered once in :data:`OPERATORS`, which refuses
duplicate names): ``drop`` (``probability`` per message from the FAULT substream,
or the first ``burst_count`` messages of each matching sender in the window, or
everything), ``delay`` (+``magnitude`` s latency), ``freeze`` (keep sending the
payload captured when the window opens -- the sender's last message sampled before
``start`` -- with fresh timestamps), ``timestamp_offset`` (stamp ``magnitude`` s in
the past), ``spat_phase_corrupt`` (report ``target_phase``; unset: green->red,
amber->green, red->green), ``spat_countdown_offset`` (shift min/max end time),
``bsm_position_offset`` (``magnitude`` m backwards along the heading; negative: forwards),
``bsm_speed_offset`` (+``magnitude`` m/s, floored at 0), ``map_misassociation`` (the
ego's lanes point at ``target_group``, default the cross group) and
``suppress_sender`` (the sender transmits nothing) and ``replay`` (in place of each
message, the one its sender sent ``magnitude`` s earlier, content and original
timestamp kept: stale by its own stamps; freeze re-stamps) and ``ghost_sender`` (BSMs at 10 Hz
from a vehicle that does not exist, ``magnitude`` m ahead of the ego on its route when the window
opens, at ``ghost_speed_mps``: :class:`.forged.GhostVehicle`, sent by the transmit step beside the real
ones and carried by the channel from where it claims to be; on EEBL each BSM flags a hard brake and carries
its hop-0 EEBL record) and ``spoofed_rsu`` (SPaT at 10 Hz for
one signal group from a roadside unit that is not the junction's, showing ``target_phase``:
:class:`.forged.SpoofedRsu`, sent by the transmit step beside the real RSUs from the junction's RSU site,
stamped one SPaT period ahead so that the receiver's newest-stamp-wins rule keeps it over the real
RSU's SPaT). SPaT and phase-corrupt /
countdown operators act on ``target_group`` when it is set, else on every group.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from lastv2x.core.catalogue import FAULT_OPERATORS, Registry, Stream
from lastv2x.core.faults import forged_id, rewires_lanes
from lastv2x.core.rng import Substream, stable_hash64, substream
from services.simulator.kernels.draws import counter_uniform

from . import forged
from .fault_windows import (
    CROSS_GROUP_ALIAS,
    EGO_GROUP_ALIASES,
    EgoEventInput,
    FaultActivity,
    FaultContext,
    FaultWindow,
)
from .forged import GhostVehicle, SpoofedRsu
from .messages import (
    NO_KEY,
    BoolArray,
    BsmBatch,
    EeblBatch,
    FloatArray,
    IntArray,
    KeyTable,
    MapBatch,
    RecordBatch,
    SpatBatch,
    message_starts,
    trues,
)

RSU_SENDER_ALIAS = "rsu"



_NO_ROWS_B = np.zeros(0, dtype=bool)
_NO_ROWS_F = np.zeros(0)
_SHARED_ROWS = 256
_ALL_KEPT = np.ones(_SHARED_ROWS, dtype=bool)
_NO_DELAY = np.zeros(_SHARED_ROWS)
_ALL_KEPT.setflags(write=False)
_NO_DELAY.setflags(write=False)
# (keep, extra_delay_s) of an untouched step of n rows, by n: read-only views made once
_UNTOUCHED_COLUMNS = [(_ALL_KEPT[:n], _NO_DELAY[:n]) for n in range(_SHARED_ROWS + 1)]


@dataclass(slots=True)
class StepBatch:
    """One stream's messages of a step as they pass the fault stage.

    ``keep``: the message still exists (False = dropped / suppressed by a fault);
    ``extra_delay_s``: latency a fault adds, per row. Content faults replace
    ``batch``; freeze may change the number of rows (SPaT / MAP), so ``keep`` and
    ``extra_delay_s`` always have one entry per row of the current ``batch``.

    Slots: one is made per stream and step (four a step, most of them untouched and empty), and setting
    slots costs a fraction of filling an instance ``__dict__``.
    """

    stream: Stream
    t_s: float
    batch: RecordBatch
    keep: BoolArray
    extra_delay_s: FloatArray
    #: True for :meth:`untouched` steps: every row kept, no delay (a reader may skip ``keep`` and ``extra_delay_s``)
    untouched_rows: bool = field(default=False, repr=False)

    @classmethod
    def of(cls, stream: Stream, t_s: float, batch: RecordBatch) -> StepBatch:
        n = len(batch)
        if n:
            return cls(stream, t_s, batch, trues(n), np.zeros(n))
        # zero-length arrays: nothing can be written to them, one pair serves every empty step
        return cls(stream, t_s, batch, _NO_ROWS_B, _NO_ROWS_F)

    @classmethod
    def untouched(cls, stream: Stream, t_s: float, batch: RecordBatch) -> StepBatch:
        """:meth:`of` for a stream no fault acts on: every row kept, no delay, as read-only views of shared
        arrays (only operators write to a step, and none runs on it)."""
        n = batch.sender.shape[0]  # len(batch) without the Python-level __len__ call
        if n > _SHARED_ROWS:
            return cls.of(stream, t_s, batch)
        out = object.__new__(cls)  # cls(stream, t_s, batch, keep, delay, True) without the __init__ call
        out.stream, out.t_s, out.batch = stream, t_s, batch
        out.keep, out.extra_delay_s = _UNTOUCHED_COLUMNS[n]
        out.untouched_rows = True
        return out


class Operator(Protocol):
    name: str

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        """Act on the rows (``rows``: matching sender, window active); return rows affected."""
        ...


OPERATORS: Registry[str, Operator] = Registry("fault operator implementation")


def register_operator(op: Operator) -> Operator:
    if op.name not in FAULT_OPERATORS:
        raise ValueError(f"operator {op.name!r} is not in the catalogue")
    return OPERATORS.register(op.name, op)


def _message_index(batch: RecordBatch) -> IntArray:
    """Message number of each row (rows of one message share it)."""
    return np.cumsum(message_starts(batch.sender, batch.msg_id)) - 1


class _Drop:
    name = "drop"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        f = fault.fault
        b = step.batch
        starts = message_starts(b.sender, b.msg_id) & rows
        if f.burst_count is not None:
            drop_msg = np.zeros(len(b), dtype=bool)
            for i in np.nonzero(starts)[0]:  # one per matching message (few per step)
                s = int(b.sender[i])
                used = fault.burst_used.get(s, 0)
                if used < int(f.burst_count):
                    fault.burst_used[s] = used + 1
                    drop_msg[i] = True
        elif f.probability is not None:
            u = counter_uniform(fault.key, fault.sender_hash(b.sender), b.msg_id)
            drop_msg = starts & (u < float(f.probability))
            _count_runs(fault, b.sender, starts, drop_msg)
        else:
            drop_msg = starts
        # propagate the message decision to all its rows
        midx = _message_index(b)
        dropped_msgs = np.zeros(int(midx[-1]) + 1 if len(b) else 0, dtype=bool)
        dropped_msgs[midx[drop_msg]] = True
        hit = dropped_msgs[midx] & rows
        step.keep &= ~hit
        return int(np.count_nonzero(drop_msg))


def _count_runs(fault: ActiveFault, sender: IntArray, starts: BoolArray, dropped: BoolArray) -> None:
    """A random drop's longest run of consecutive lost messages from one sender (``activity.longest_drop_run``):
    what delays the receiver's information, where the count of lost messages does not (a 40 % loss over a run
    loses many, rarely several in a row)."""
    runs, a = fault.drop_runs, fault.activity
    for i in np.nonzero(starts)[0].tolist():  # messages in order (a sender's rows are consecutive by msg_id)
        s = int(sender[i])
        run = runs.get(s, 0) + 1 if dropped[i] else 0
        runs[s] = run
        if run > (a.longest_drop_run or 0):
            a.longest_drop_run = run
    if a.longest_drop_run is None:
        a.longest_drop_run = 0


class _Delay:
    name = "delay"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        step.extra_delay_s = step.extra_delay_s + np.where(rows, float(fault.fault.magnitude or 0.0), 0.0)
        return int(np.count_nonzero(message_starts(step.batch.sender, step.batch.msg_id) & rows))


class _Suppress:
    name = "suppress_sender"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        step.keep &= ~rows
        return int(np.count_nonzero(message_starts(step.batch.sender, step.batch.msg_id) & rows))


class _TimestampOffset:
    name = "timestamp_offset"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        b = step.batch
        mag = float(fault.fault.magnitude or 0.0)
        step.batch = b.replace(timestamp_s=np.where(rows, b.timestamp_s - mag, b.timestamp_s))
        return int(np.count_nonzero(message_starts(b.sender, b.msg_id) & rows))


def _group_rows(fault: ActiveFault, b: SpatBatch, rows: BoolArray) -> BoolArray:
    if fault.target_group_key != NO_KEY:
        return rows & (b.group == fault.target_group_key)
    return rows


class _PhaseCorrupt:
    name = "spat_phase_corrupt"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        b = step.batch
        assert isinstance(b, SpatBatch)
        sel = _group_rows(fault, b, rows)
        codes = fault.ctx.phases
        if fault.fault.target_phase is not None:
            new = np.full(len(b), codes.code(fault.fault.target_phase))
        else:
            flip = {codes.green: codes.red, codes.amber: codes.green, codes.red: codes.green}
            new = np.array([flip.get(int(p), int(p)) for p in b.phase], dtype=np.int64)
        step.batch = b.replace(phase=np.where(sel, new, b.phase))
        return int(np.count_nonzero(sel))


class _CountdownOffset:
    name = "spat_countdown_offset"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        b = step.batch
        assert isinstance(b, SpatBatch)
        sel = _group_rows(fault, b, rows)
        mag = float(fault.fault.magnitude or 0.0)
        step.batch = b.replace(min_end_time_s=np.where(sel, b.min_end_time_s + mag, b.min_end_time_s),
                               max_end_time_s=np.where(sel, b.max_end_time_s + mag, b.max_end_time_s),
                               green_start_time_s=np.where(sel, b.green_start_time_s + mag,
                                                           b.green_start_time_s))
        return int(np.count_nonzero(sel))


class _PositionOffset:
    name = "bsm_position_offset"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        b = step.batch
        assert isinstance(b, BsmBatch | EeblBatch)
        mag = float(fault.fault.magnitude or 0.0)
        dx = np.where(rows, -mag * np.cos(b.heading_rad), 0.0)
        dy = np.where(rows, -mag * np.sin(b.heading_rad), 0.0)
        step.batch = b.replace(x_m=b.x_m + dx, y_m=b.y_m + dy)
        return int(np.count_nonzero(rows))


class _SpeedOffset:
    name = "bsm_speed_offset"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        b = step.batch
        assert isinstance(b, BsmBatch)
        mag = float(fault.fault.magnitude or 0.0)
        step.batch = b.replace(speed_mps=np.where(rows, np.maximum(0.0, b.speed_mps + mag), b.speed_mps))
        return int(np.count_nonzero(rows))


class _Misassociation:
    name = "map_misassociation"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        b = step.batch
        assert isinstance(b, MapBatch)
        if fault.target_group_key == NO_KEY:
            return 0
        sel = rows & np.isin(b.lane, fault.ego_lane_keys)
        step.batch = b.replace(group=np.where(sel, fault.target_group_key, b.group))
        return int(np.count_nonzero(sel))


# Field groups a field-restricted freeze holds (anything else / "*": the whole payload).
_FREEZE_FIELDS: dict[str, tuple[str, ...]] = {
    "position": ("x_m", "y_m"), "speed": ("speed_mps",), "heading": ("heading_rad",),
    "acceleration": ("accel_mps2",), "brake_flag": ("brake_flag",), "event_flags": ("event_flags",),
    "phase": ("phase",), "min_end_time": ("min_end_time_s", "max_end_time_s", "green_start_time_s"),
    "max_end_time": ("max_end_time_s",), "lane_signal_group": ("group",),
    "stop_bar": ("stop_x_m", "stop_y_m"), "deceleration": ("decel_mps2",),
    "event_flag": (),
}
_FRESH = ("sender", "msg_id", "msg_count", "tx_time_s", "timestamp_s")


class _Freeze:
    """Replays the payload captured when the window opened (see ActiveFault.observe_tx)."""

    name = "freeze"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        b = step.batch
        senders = np.unique(b.sender[rows])
        affected = 0
        for s in senders.tolist():
            cap = fault.captured.get(s)
            if cap is None:  # nothing sent before the window: capture the first message in it
                first = np.nonzero(rows & (b.sender == s))[0]
                mid = b.msg_id[first[0]]
                cap = b.take(np.nonzero((b.sender == s) & (b.msg_id == mid))[0])
                fault.captured[s] = cap
            affected += self._replace(fault, step, rows & (step.batch.sender == s), cap)
        return affected

    def _replace(self, fault: ActiveFault, step: StepBatch, sel: BoolArray, cap: RecordBatch) -> int:
        b = step.batch
        fields = _FREEZE_FIELDS.get(fault.target_field, None)
        idx = np.nonzero(sel)[0]
        if idx.size == 0:
            return 0
        if fields is not None:  # field-restricted freeze
            if not fields:
                return 0
            # per-row join on the identity of the row (group / lane / single row)
            ident = _row_identity(b)
            cap_ident = _row_identity(cap)
            lookup = {int(k): i for i, k in enumerate(cap_ident.tolist())}
            src = np.array([lookup.get(int(k), -1) for k in ident[idx]], dtype=np.int64)
            ok = src >= 0
            changes = {}
            for name in fields:
                col = getattr(b, name).copy()
                col[idx[ok]] = getattr(cap, name)[src[ok]]
                changes[name] = col
            step.batch = b.replace(**changes)
            return int(np.count_nonzero(ok))
        # whole payload: replace every selected message by the captured rows, fresh stamps
        sel_msgs = np.unique(_message_index(b)[idx])
        return _splice_messages(step, {m: cap for m in sel_msgs.tolist()}, _FRESH)


def _splice_messages(step: StepBatch, replacement: dict[int, RecordBatch | None], fresh: tuple[str, ...]) -> int:
    """Put ``replacement[m]`` in place of the rows of message ``m`` (its number, ``_message_index``), the
    columns ``fresh`` taken from the message it replaces (the transmission: sender, message id, ...), every
    other column the replacement's; ``None``: the message is not sent (its rows stay, not kept). The one home
    of freeze's and replay's whole-message substitution (a replacement may have another number of rows: SPaT,
    MAP). Returns the number of messages replaced or withheld."""
    b = step.batch
    midx = _message_index(b)
    pieces: list[RecordBatch] = []
    keeps: list[BoolArray] = []
    delays: list[FloatArray] = []
    prev = 0
    for m in sorted(replacement):
        rows_m = np.nonzero(midx == m)[0]
        lo, hi = int(rows_m[0]), int(rows_m[-1]) + 1
        if lo > prev:
            pieces.append(b.take(slice(prev, lo)))
            keeps.append(step.keep[prev:lo])
            delays.append(step.extra_delay_s[prev:lo])
        cap = replacement[m]
        if cap is None:  # nothing to put there: the message is withheld
            pieces.append(b.take(slice(lo, hi)))
            keeps.append(np.zeros(hi - lo, dtype=bool))
            delays.append(step.extra_delay_s[lo:hi])
        else:
            n = len(cap)
            values = {name: np.full(n, getattr(b, name)[lo]) for name in fresh if hasattr(b, name)}  # EEBL: no msg_count
            pieces.append(cap.replace(**values))
            keeps.append(np.full(n, bool(step.keep[lo:hi].all())))
            delays.append(np.full(n, float(step.extra_delay_s[lo:hi].max())))
        prev = hi
    if prev < len(b):
        pieces.append(b.take(slice(prev, len(b))))
        keeps.append(step.keep[prev:])
        delays.append(step.extra_delay_s[prev:])
    step.batch = type(b).concat(pieces) if pieces else type(b).empty()
    step.keep = np.concatenate(keeps) if keeps else np.zeros(0, bool)
    step.extra_delay_s = np.concatenate(delays) if delays else np.zeros(0)
    return len(replacement)


# what a replayed message takes from the transmission it replaces: only the radio's (who sends it, the
# message id the channel's draws are keyed by, when it leaves); content, msg_count and timestamp are the old ones
_REPLAY_FRESH = ("sender", "msg_id", "tx_time_s")
_SAME_INSTANT_S = 1e-6  # generation times this close are one instant (step times are sums of dt)


class ReplayHistory:
    """Each sender's messages of one stream as it sent them (before any fault), long enough back for a replay
    ``lag_s`` earlier: per sender, in generation order, pruned to the newest message at least ``lag_s`` old
    and those after it. Keyed by the sender, never by a row's place in a batch."""

    def __init__(self, lag_s: float):
        self.lag_s = lag_s
        self._sent: dict[int, deque[tuple[float, RecordBatch]]] = {}

    def record(self, batch: RecordBatch, rows: BoolArray, t_s: float) -> None:
        """Keep the messages of the ``rows`` senders sent at ``t_s``; forget what no replay can reach again."""
        midx = _message_index(batch)
        starts = np.nonzero(message_starts(batch.sender, batch.msg_id) & rows)[0]
        for i in starts.tolist():
            rows_m = np.nonzero(midx == midx[i])[0]
            sent = self._sent.setdefault(int(batch.sender[i]), deque())
            sent.append((float(batch.timestamp_s[i]), batch.take(rows_m)))
        horizon = t_s - self.lag_s + _SAME_INSTANT_S  # replays from now on ask for messages no newer than this
        for sent in self._sent.values():
            while len(sent) >= 2 and sent[1][0] <= horizon:
                sent.popleft()

    def at(self, sender: int, generated_by_s: float) -> RecordBatch | None:
        """The sender's newest message generated no later than ``generated_by_s`` (None: none that old)."""
        sent = self._sent.get(sender)
        if not sent or sent[0][0] > generated_by_s + _SAME_INSTANT_S:
            return None
        best = sent[0][1]
        for ts, msg in sent:
            if ts > generated_by_s + _SAME_INSTANT_S:
                break
            best = msg
        return best


class _Replay:
    """Re-sends, in place of each matching message, the one its sender sent ``magnitude`` s earlier (a captured
    message played back): its content, message count and generation timestamp as they were, only the
    transmission new (sender, message id, send time). A sender with nothing sent that long ago sends nothing
    (nothing the receiver gets in the window is newer than the lag). Contrast freeze, which re-stamps."""

    name = "replay"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        b = step.batch
        history = fault.history
        assert history is not None
        midx = _message_index(b)
        replacement: dict[int, RecordBatch | None] = {}
        for i in np.nonzero(message_starts(b.sender, b.msg_id) & rows)[0].tolist():
            replacement[int(midx[i])] = history.at(int(b.sender[i]), float(b.timestamp_s[i]) - history.lag_s)
        return _splice_messages(step, replacement, _REPLAY_FRESH) if replacement else 0


class _GhostSender:
    """The forged vehicle's BSMs are made by :meth:`FaultEngine.ghost_bsms` (the transmit step adds them to the
    step's BSMs, so the channel carries them from where the ghost claims to be); here they are only counted."""

    name = "ghost_sender"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        return int(np.count_nonzero(message_starts(step.batch.sender, step.batch.msg_id) & rows))


class _SpoofedRsu:
    """The forged roadside unit's SPaTs (MAPs) are made by :meth:`FaultEngine.spoof_spat` (``spoof_map``; the
    transmit step adds them to the step's SPaT or MAP, so the channel carries them from the junction's RSU site);
    here they are only counted."""

    name = "spoofed_rsu"

    def apply(self, fault: ActiveFault, step: StepBatch, rows: BoolArray) -> int:
        spoof = fault.spoof
        if spoof is None:
            return 0
        mine = step.batch.sender == spoof.key
        return int(np.count_nonzero(message_starts(step.batch.sender, step.batch.msg_id) & mine))


def _row_identity(b: RecordBatch) -> IntArray:
    if isinstance(b, SpatBatch):
        return b.origin * 1_000_003 + b.group
    if isinstance(b, MapBatch):
        return b.lane
    if isinstance(b, EeblBatch):
        return b.origin * 1_000_003 + b.event_id
    return np.zeros(len(b), dtype=np.int64)


for _op in (_Drop(), _Delay(), _Suppress(), _TimestampOffset(), _PhaseCorrupt(), _CountdownOffset(),
            _PositionOffset(), _SpeedOffset(), _Misassociation(), _Freeze(), _Replay(), _GhostSender(),
            _SpoofedRsu()):
    register_operator(_op)


# ---------------------------------------------------------------------------
# Runtime
# ---------------------------------------------------------------------------

@dataclass
class ActiveFault:
    """One fault of the scenario at run time: window, sender filter, operator state."""

    fault: Any
    ctx: FaultContext
    window: FaultWindow
    operator: Operator
    stream: Stream
    target_field: str
    key: int
    senders: KeyTable
    groups: KeyTable
    lanes: KeyTable
    activity: FaultActivity
    target_group_key: int = NO_KEY
    ego_lane_keys: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    sender_names: frozenset[str] | None = None  # resolved sender ids (program); None = from the spec
    captured: dict[int, RecordBatch] = field(default_factory=dict)
    burst_used: dict[int, int] = field(default_factory=dict)
    drop_runs: dict[int, int] = field(default_factory=dict)  # a random drop: each sender's current run of losses
    history: ReplayHistory | None = None  # replay: what each matching sender sent, back to the lag
    ghost: GhostVehicle | None = None  # ghost_sender: the forged vehicle
    spoof: SpoofedRsu | None = None  # spoofed_rsu: the forged roadside unit
    _last_before: dict[int, RecordBatch] = field(default_factory=dict)
    _sender_ok: dict[int, bool] = field(default_factory=dict)

    def sender_hash(self, sender: IntArray) -> Any:
        return self.senders.hashes(sender)

    def matches_sender(self, sender: IntArray) -> BoolArray:
        want = self.fault.sender
        if want is None or sender.size == 0:
            return trues(sender.shape[0]) if sender.ndim == 1 else np.ones(sender.shape, dtype=bool)
        out = np.empty(sender.shape, dtype=bool)
        for k in np.unique(sender).tolist():
            ok = self._sender_ok.get(k)
            if ok is None:
                name = self.senders.name(k)
                if self.sender_names is not None:
                    ok = name in self.sender_names
                else:
                    ok = name == want or (want == RSU_SENDER_ALIAS and name in self.ctx.rsu_ids)
                self._sender_ok[k] = ok
            out[sender == k] = ok
        return out

    def observe_tx(self, batch: RecordBatch, t_s: float) -> None:
        """Remember each sender's last message sampled before the window opens (freeze), or what each sent
        back to the replay's lag (replay: before and in the window, as sent)."""
        if self.history is not None and len(batch):
            self.history.record(batch, self.matches_sender(batch.sender), t_s)
            return
        if self.operator.name != "freeze" or len(batch) == 0:
            return
        start = self.window.start_s
        if start is not None and t_s >= start:
            for s, cap in self._last_before.items():
                self.captured.setdefault(s, cap)
            self._last_before.clear()
            return
        rows = self.matches_sender(batch.sender)
        for s in np.unique(batch.sender[rows]).tolist():
            idx = np.nonzero(rows & (batch.sender == s))[0]
            last = batch.msg_id[idx].max()
            self._last_before[s] = batch.take(idx[batch.msg_id[idx] == last])

    def apply(self, step: StepBatch) -> None:
        if not self.window.active(step.t_s) or len(step.batch) == 0:
            return
        rows = self.matches_sender(step.batch.sender)
        if not np.count_nonzero(rows):
            return
        n = self.operator.apply(self, step, rows)
        if n:
            a = self.activity
            a.messages_affected += n
            a.first_affected_s = step.t_s if a.first_affected_s is None else a.first_affected_s
            a.last_affected_s = step.t_s


class FaultEngine:
    """All faults of a scenario; ``apply(stream, t, batch)`` per step and stream."""

    def __init__(self, faults: Sequence[Any], ctx: FaultContext, senders: KeyTable, groups: KeyTable,
                 lanes: KeyTable):
        """``faults``: program ``ResolvedFault`` records (or bare spec ``Fault`` objects)."""
        self.ctx = ctx
        self.faults: list[ActiveFault] = []
        names: set[str] = set()
        for item in faults:
            f = getattr(item, "fault", item)
            if f.name in names:
                raise ValueError(f"duplicate fault name {f.name!r}")
            names.add(f.name)
            info = FAULT_OPERATORS[str(getattr(f.operator, "value", f.operator))]
            stream = Stream(f.stream)
            if stream not in info.streams:
                raise ValueError(f"fault {f.name!r}: operator {info.name} cannot target {stream}")
            resolved_senders = tuple(getattr(item, "sender_ids", ()) or ())
            if not resolved_senders and getattr(item, "sender_id", None):
                resolved_senders = (item.sender_id,)
            window = FaultWindow(f, ctx, None, getattr(item, "anchor_group_id", None))
            fld = f.field or info.default_field
            key = int(substream(ctx.seed, Substream.FAULT).integers(0, 2**62)) ^ stable_hash64(f.name)
            activity = FaultActivity(
                f.name, info.name, str(stream), fld, f.sender, str(getattr(f.anchor.kind, "value", f.anchor.kind)),
                window.start_s, window.end_s, f.magnitude, f.provenance)
            af = ActiveFault(f, ctx, window, OPERATORS[info.name], stream, fld, key, senders, groups, lanes,
                             activity, sender_names=frozenset(resolved_senders) or None)
            tg = getattr(item, "target_group_id", None) or f.target_group
            if rewires_lanes(f):  # map_misassociation, a forged MAP: the cross group unless one is named
                tg = tg or CROSS_GROUP_ALIAS
            if tg is not None:
                name = ctx.cross_group_id if tg == CROSS_GROUP_ALIAS else (
                    ctx.ego_group_id if tg in EGO_GROUP_ALIASES else tg)
                af.target_group_key = groups.key(name) if name else NO_KEY
            af.ego_lane_keys = np.asarray([lanes.key(x) for x in ctx.ego_lane_ids], dtype=np.int64)
            if info.name == "replay":
                af.history = ReplayHistory(float(f.magnitude or 0.0))
            forged = forged_id(f)
            if forged is not None:  # ghost_sender, spoofed_rsu: a sender nobody has (built in forged.py)
                name = next(iter(af.sender_names)) if af.sender_names else forged
                af.sender_names = frozenset({name})
                k = senders.key(name)
                if info.name == "ghost_sender":
                    af.ghost = GhostVehicle.for_fault(f, ctx, k, senders.hash_rows([k])[0], stream)
                else:
                    if af.target_group_key == NO_KEY:  # default: the ego's group
                        af.target_group_key = groups.key(ctx.ego_group_id) if ctx.ego_group_id else NO_KEY
                    af.spoof = SpoofedRsu.for_fault(f, ctx, k, senders.hash_rows([k])[0], af.target_group_key, stream)
            self.faults.append(af)
        self._streams = frozenset(af.stream for af in self.faults)  # the streams some fault acts on
        self.ghosts = [af for af in self.faults if af.ghost is not None]  # empty: the transmit step skips them
        self.spoofers = [af for af in self.faults if af.spoof is not None]  # empty: the transmit step skips them

    def __iter__(self) -> Iterator[ActiveFault]:
        return iter(self.faults)

    def __len__(self) -> int:
        return len(self.faults)

    def update_windows(self, t_s: float, ego: EgoEventInput | None, phase: IntArray | None = None,
                       time_to_change: FloatArray | None = None,
                       group_index: dict[str, int] | None = None) -> None:
        for af in self.faults:
            was = af.window.resolved
            af.window.update(t_s, ego, None, phase, time_to_change, group_index)
            if af.window.resolved and not was:
                af.activity.start_s = af.window.start_s
                af.activity.end_s = af.window.end_s

    def apply(self, stream: Stream, t_s: float, batch: RecordBatch) -> StepBatch:
        if stream not in self._streams:
            return StepBatch.untouched(stream, t_s, batch)
        step = StepBatch.of(stream, t_s, batch)
        if not len(batch):
            return step
        for af in self.faults:
            if af.stream is stream:
                af.observe_tx(batch, t_s)
                af.apply(step)
        return step

    def ghost_bsms(self, t_prev_s: float | None, t_s: float, ego_s_m: float, jitter: Any) -> BsmBatch | None:
        """The forged vehicles' BSMs due in ``(t_prev_s, t_s]`` (:func:`.forged.ghost_bsms`); None: none."""
        return forged.ghost_bsms(self.ghosts, t_prev_s, t_s, ego_s_m, jitter)

    def spoof_spat(self, t_prev_s: float | None, t_s: float, jitter: Any) -> SpatBatch | None:
        """The forged roadside units' SPaTs due in ``(t_prev_s, t_s]`` (:func:`.forged.spoof_spat`); None: none."""
        return forged.spoof_spat(self.spoofers, self.ctx, t_prev_s, t_s, jitter)

    def spoof_map(self, t_prev_s: float | None, t_s: float, jitter: Any) -> MapBatch | None:
        """The forged roadside units' MAPs due in ``(t_prev_s, t_s]`` (:func:`.forged.spoof_map`); None: none."""
        return forged.spoof_map(self.spoofers, t_prev_s, t_s, jitter)

    def active(self, t_s: float) -> list[ActiveFault]:
        return [af for af in self.faults if af.window.active(t_s)]

    def activities(self, end_s: float | None = None) -> list[FaultActivity]:
        out = []
        for af in self.faults:
            a = af.activity
            if end_s is not None and a.end_s is not None and math.isinf(a.end_s):
                a.end_s = end_s
            out.append(a)
        return out
