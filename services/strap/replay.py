"""Module replay on recorded platform traces: the fault oracle of STRaP §5.

A regression test of a changed module replays a segment's recorded *inputs*
into the changed module and compares its *outputs*, frame by frame, with the
recorded outputs; the change is a **fault on that segment** when more than
10 % of the frames differ after the 1 s warm-up pre-roll
(:func:`services.strap.evaluate.is_inconsistent`).

Two modules can be replayed (traces of ``services/simulator/trace.py``). The
inputs are read from the trace where it records them
(``services/strap/TRACE_REQUESTS.md`` §3); older traces fall back to rebuilt
approximations, and :attr:`RecordedRun.approximated` says which inputs a run had
to rebuild (:data:`APPROXIMATED_INPUTS` lists them all):

**Application** (any function with the ``APPS[app].decide`` signature).
:func:`load_run` gives, for every step of the message-driven (``md``)
rollout, the two inputs of ``decide(info, ego, ctx, previous)``:

* ``EgoInformation`` from the ``/recon/ego`` payload, exactly (every believed
  signal with its ``time_to_green_s``, the association, every track field, the
  EEBL events, ``map_aoi_s``).  On a trace whose ``/recon/ego`` predates those
  fields they are rebuilt: ``time_to_green_s`` from the believed phase,
  countdown and the program's plan; each track's heading / acceleration /
  hard-braking flag from the sender's ground truth at ``t - aoi``; EEBL events
  placed at the vehicles seen braking hard within the event timeout;
  ``map_aoi_s`` from the 2 Hz ``/v2x/belief`` summary, aged;
* ``EgoState`` from the md ``/app/input``, exactly.  On a trace without it:
  from ``/gt/vehicles[0]`` and the program's route geometry (arc length by
  projection, stop-bar and conflict distances from the route's crossings).

The ``AppContext`` comes from the program (:func:`services.simulator.paired.app_context`).
The module's own state — the previous decision — is seeded at the pre-roll start
with the recorded decision then in force (``/app/decision`` is published on
change; ``after_epoch`` and ``evidence_t_s``, not published, are rebuilt from the
decision history: the one input still rebuilt on today's traces),
then evolves from the module's own outputs.  A frame's output is
:func:`decision_key` — what the controller consumes: action, target speed,
braking demand (the reason text is not an output).

**Reconstruction** (a module object with the interface of
``services/simulator/v2x/reconstruction.py``, e.g. a mutant).
The recorded ``/v2x/rx`` names every message the ego received (stream, sender,
id, timestamp, hops, arrival time) but not its contents, so the receiver cannot
be fed from it alone; the whole V2X stack is replayed *open loop* on the
recorded md world instead: :func:`world_snapshots` rebuilds each step's
``WorldSnapshot`` from ``/gt/vehicles`` + ``/signals/true`` + the program (every
field the stack and its monitor read), and a ``V2XInformationSource`` whose
receivers are the replayed module's ``Receiver`` observes them.  With
``check_rx=True`` the messages this replay delivers are compared with the
recorded ``/v2x/rx`` step by step (``StackReplay.rx_mismatch``): the module is
fed what was recorded.  The stack's channel draws depend on the whole history,
so this replay starts at the recording's start; segments compare their frames
after their pre-roll.  A frame's output is :func:`belief_key` — the
``/recon/ego`` payload vectorized with the platform channel map (the paper
compares vectorized module outputs).

The original modules reproduce the recorded outputs exactly on the reference
scenarios (tested: ``tests/strap/test_recorded_inputs.py``, the decisions of
``/app/decision``); :func:`fidelity` measures it for any trace, and
``baseline="original"`` compares a changed module with the *replayed* original
instead of the recording where a rebuilt input matters.

Layout: this module (replays, comparison) is the entry point and re-exports
:mod:`services.strap.recorded` (the rebuilt run, output keys) and
:mod:`services.strap.replay_v2x` (the open-loop V2X stack).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.simulator.apps import APPS

from .evaluate import is_inconsistent
from .recorded import (
    APPROXIMATED_INPUTS,
    DecideFn,
    DecisionKey,
    RecordedRun,
    belief_key,
    decision_key,
    load_run,
    read_messages,
    recon_payload,
)
from .reduce import Segment
from .replay_v2x import (
    StackReplay,
    receiver_source_factory,
    recorded_belief_keys,
    replay_reconstruction,
    world_snapshots,
)
from .vectorize import FrameTable

WARMUP_S = 1.0
FAULT_THRESHOLD = 0.10

# ---------------------------------------------------------------------------- application replay
@dataclass(frozen=True)
class Replay:
    """Outputs of one replay over steps ``[first, stop)``; the first ``warmup`` are not compared."""

    first: int
    stop: int
    warmup: int
    outputs: tuple[Any, ...]
    expected: tuple[Any, ...]
    error: str | None = None   # the module raised: its later outputs are ``None``

    @property
    def mismatch(self) -> np.ndarray:
        return np.array([a != b for a, b in zip(self.outputs, self.expected, strict=True)], dtype=bool)

    @property
    def compared(self) -> int:
        return max(0, len(self.outputs) - self.warmup)

    @property
    def inconsistency(self) -> float:
        m = self.mismatch[self.warmup:]
        return float(m.mean()) if m.size else 0.0

    def is_fault(self, threshold: float = FAULT_THRESHOLD) -> bool:
        m = self.mismatch.astype(np.int8)[:, None]
        return is_inconsistent(np.zeros_like(m), m, warmup_frames=self.warmup, threshold=threshold)


def run_application(run: RecordedRun, decide: DecideFn, first: int, stop: int, *,
                    seed_state: bool = True) -> tuple[list[DecisionKey | None], str | None]:
    """``decide`` over steps ``[first, stop)``: its output keys (``None`` after an exception) and the error."""
    prev = run.decisions[first - 1] if (seed_state and first > 0) else None
    out: list[DecisionKey | None] = []
    for k in range(first, stop):
        try:
            dec = decide(run.info[k], run.ego[k], run.ctx, prev)
            key = decision_key(dec)
        except Exception as exc:  # a crashing change is inconsistent from here on
            return out + [None] * (stop - k), f"{type(exc).__name__}: {exc}"
        out.append(key)
        prev = dec
    return out, None


def replay_application(run: RecordedRun, decide: DecideFn | None, first: int, stop: int, *,
                       warmup: int = 0, baseline: str | Sequence[DecisionKey | None] = "recorded",
                       seed_state: bool = True) -> Replay:
    """Replay steps ``[first, stop)`` into ``decide`` (default: the registered application).

    ``baseline``: ``"recorded"`` compares with the recorded outputs
    (:meth:`RecordedRun.recorded_keys`); ``"original"`` with the registered
    application replayed the same way (same seeded state, same rebuilt inputs:
    only the change differs); or the expected output keys of steps ``[first, stop)``.
    """
    decide = decide or APPS[run.application].decide
    outs, err = run_application(run, decide, first, stop, seed_state=seed_state)
    if isinstance(baseline, str):
        if baseline == "recorded":
            expected = list(run.expected[first:stop])
        elif baseline == "original":
            expected, _ = run_application(run, APPS[run.application].decide, first, stop, seed_state=seed_state)
        else:
            raise ValueError("baseline must be 'recorded', 'original' or a sequence of expected outputs")
    else:
        expected = list(baseline)
        if len(expected) != stop - first:
            raise ValueError(f"{len(expected)} expected outputs for {stop - first} steps")
    return Replay(first, stop, min(warmup, stop - first), tuple(outs), tuple(expected), err)


def segment_steps(run: RecordedRun, table: FrameTable, segment: Segment) -> tuple[int, int, int]:
    """(first step, stop step, warm-up steps) of a segment: pre-roll start to clip end."""
    ts = table.timestamps_ns
    first = int(run.steps_of([ts[segment.preroll_start]])[0])
    start = int(run.steps_of([ts[segment.start]])[0])
    last = int(run.steps_of([ts[segment.clip_end - 1]])[0])
    return first, last + 1, start - first


def replay_segment(run: RecordedRun, table: FrameTable, segment: Segment, decide: DecideFn | None = None, *,
                   baseline: str | Sequence[DecisionKey | None] = "recorded", seed_state: bool = True) -> Replay:
    """Replay one kept segment (with its pre-roll as warm-up) into an application module."""
    first, stop, warm = segment_steps(run, table, segment)
    return replay_application(run, decide, first, stop, warmup=warm, baseline=baseline, seed_state=seed_state)


def fidelity(run: RecordedRun, decide: DecideFn | None = None) -> float:
    """Fraction of steps where the (original) module replayed over the whole run
    reproduces the recorded decision (1.0: the rebuilt inputs are sufficient)."""
    rep = replay_application(run, decide, 0, run.n_steps, seed_state=False)
    return 1.0 - float(rep.mismatch.mean()) if run.n_steps else 1.0


def compare_window(outputs: Sequence[Any], expected: Sequence[Any], first: int, stop: int, warmup: int) -> Replay:
    """A :class:`Replay` over steps ``[first, stop)`` of whole-run output lists."""
    return Replay(first, stop, min(warmup, stop - first), tuple(outputs[first:stop]), tuple(expected[first:stop]))


def replay_segment_reconstruction(run: RecordedRun, table: FrameTable, segment: Segment,
                                  replayed: StackReplay, expected: Sequence[Any] | None = None) -> Replay:
    """One segment's frames of a whole-run V2X replay, compared after the pre-roll."""
    first, stop, warm = segment_steps(run, table, segment)
    exp = recorded_belief_keys(run) if expected is None else expected
    return compare_window(replayed.keys, exp, first, stop, warm)


__all__ = ["APPROXIMATED_INPUTS", "FAULT_THRESHOLD", "WARMUP_S", "RecordedRun", "Replay", "StackReplay",
           "belief_key", "compare_window", "decision_key", "fidelity", "load_run", "read_messages",
           "receiver_source_factory", "recon_payload", "recorded_belief_keys", "replay_application",
           "replay_reconstruction", "replay_segment", "replay_segment_reconstruction", "run_application",
           "segment_steps", "world_snapshots"]
