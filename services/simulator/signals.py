"""Fixed-time signal plans, vectorized over groups (and over a batch of scenarios).

Definition (the one of :mod:`lastv2x.core.timeline`, per group): with
``u = (t + offset_s) mod cycle_s``, green on ``[0, G)``, amber on ``[G, G+A)``, red on
``[G+A, C)``. ``time_to_change_s`` is the time to the next phase start (the true SPaT
countdown); ``time_to_green_s`` the time to the next green onset (0 while green).
The timeline's cross group is expressed as a plan of its own by
``lastv2x.core.program`` (green starts at its own u = 0), so one formula serves every group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lastv2x.core.program import SignalGroupPlan
from services.simulator.info import PHASE_AMBER, PHASE_GREEN, PHASE_RED
from services.simulator.kernels import signals as kernels


@dataclass(frozen=True, eq=False)
class SignalTable:
    """Plans of ``G`` groups as arrays shaped ``(..., G)`` (any leading batch shape)."""

    group_ids: tuple[str, ...]
    cycle_s: np.ndarray
    green_s: np.ndarray
    amber_s: np.ndarray
    offset_s: np.ndarray

    @classmethod
    def from_plans(cls, plans: Sequence[SignalGroupPlan]) -> SignalTable:
        def arr(name: str) -> np.ndarray:
            return np.array([getattr(p, name) for p in plans], dtype=np.float64)
        return cls(tuple(p.id for p in plans), arr("cycle_s"), arr("green_s"), arr("amber_s"), arr("offset_s"))

    @classmethod
    def stack(cls, tables: Sequence[SignalTable], width: int) -> SignalTable:
        """Batch of tables padded to ``width`` groups (padding: a 1 s all-green plan nobody uses)."""
        def pad(name: str, fill: float) -> np.ndarray:
            out = np.full((len(tables), width), fill)
            for b, t in enumerate(tables):
                v = getattr(t, name)
                out[b, : len(v)] = v
            return out
        return cls((), pad("cycle_s", 1.0), pad("green_s", 1.0), pad("amber_s", 0.0), pad("offset_s", 0.0))

    def state(self, t_s: float | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(phase codes, time_to_change_s, time_to_green_s) at scenario time ``t_s``, each shaped like the plans
        (times shaped ``(T, 1, ...)``, one trailing 1 per plan axis, give a leading time axis)
        (:func:`services.simulator.kernels.signals.state`)."""
        shape = self.cycle_s.shape
        times = np.asarray(t_s, np.float64)
        rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        flat = [np.ascontiguousarray(a, np.float64).reshape(rows, shape[-1])
                for a in (self.cycle_s, self.green_s, self.amber_s, self.offset_s)]
        out = kernels.state(times.reshape(-1), *flat)
        lead = times.shape[:1] if times.ndim else ()
        return tuple(a.reshape(lead + shape) for a in out)  # type: ignore[return-value]

    def phase_at(self, t_s: float) -> np.ndarray:
        """Phase codes only: 0 green, 1 amber, 2 red."""
        return self.state(t_s)[0]


def onset_times_s(plan: SignalGroupPlan, phase: int, t0_s: float, t1_s: float) -> np.ndarray:
    """Every onset of ``phase`` of ``plan`` in [t0_s, t1_s) (scenario seconds)."""
    start_u = {PHASE_GREEN: 0.0, PHASE_AMBER: plan.green_s, PHASE_RED: plan.green_s + plan.amber_s}[phase]
    first = t0_s + ((start_u - (t0_s + plan.offset_s)) % plan.cycle_s)
    return np.arange(first, t1_s, plan.cycle_s)


__all__ = ["SignalTable", "onset_times_s"]
