"""Seeded random substreams: one scenario seed fixes every random draw.

Each consumer asks for its own named substream, so adding draws in one place (say,
bus jitter) never shifts the numbers another place sees (say, equipage). Substreams
are numpy ``SeedSequence`` children keyed by a stable hash of the name, so they are
identical across processes, machines and Python hash seeds.

Per-element draws that must not depend on which other elements exist (one vehicle's
equipage, one message's delivery) are *counter-based*: :func:`counter_uniform` hashes a
base key with integer counters (SplitMix64), and :func:`stable_hash64` turns an id into
such a counter. Its one body is :func:`splitmix_uniforms` (whole-array uint64 arithmetic), which
the simulator's engine compiles as it is (``services.simulator.kernels.draws``): same bits.
:func:`equipage` is the one rule for which vehicles carry a V2X unit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray


class Substream(StrEnum):
    EQUIPAGE = "equipage"  # which background vehicles carry a V2X unit
    BUS_JITTER = "bus_jitter"  # per-message transmit-time jitter
    FAULT = "fault"  # stochastic fault draws (drop probability)
    CHANNEL = "channel"  # Bernoulli delivery draws
    RSU_SELECTION = "rsu_selection"  # which candidate sites get RSUs
    BLUEPRINT = "blueprint"  # vehicle models / dimensions
    TIE_BREAK = "tie_break"  # retrieval and search tie-breaking
    SEARCH = "search"  # spec-space mutation draws
    ASSIGNMENT = "assignment"  # parser defaults left open by the intent
    VARIATION = "variation"  # the world a seed draws within a spec's declared bounds
    BACKHAUL = "backhaul"  # loss draws of RSU-to-RSU backhaul forwarding
    SIGNAL_OFFSETS = "signal_offsets"  # random offsets of the junctions after the scenario junction (coordination)
    SHADOWING = "shadowing"  # a 3GPP TR 37.885 channel's LOS states, vehicle blockage and shadowing


def _key(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def substream(seed: int, name: Substream | str, *extra: int) -> np.random.Generator:
    """A generator for ``name`` under ``seed``; ``extra`` indexes sub-substreams (per agent, per link)."""
    seq = np.random.SeedSequence(entropy=int(seed), spawn_key=(_key(str(name)), *map(int, extra)))
    return np.random.Generator(np.random.PCG64(seq))


# ---------------------------------------------------------------------------- counter-based draws
def stable_hash64(name: str) -> int:
    """A 63-bit hash of an id, identical across processes and Python hash seeds."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little") >> 1


_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_S11, _S27, _S30, _S31 = np.uint64(11), np.uint64(27), np.uint64(30), np.uint64(31)
_INV_2_53 = 1.0 / 9007199254740992.0
_MASK64 = 0xFFFFFFFFFFFFFFFF


def splitmix_uniforms(bases: NDArray[np.uint64], columns: NDArray[np.uint64]) -> NDArray[np.float64]:
    """U[0, 1) per element ``i``: start from ``bases[i]``, then for each counter row ``j`` of ``columns``
    (shape ``(k, n)``) mix ``z = splitmix64(z ^ columns[j, i])``; the top 53 bits of ``z`` are the uniform.

    The one body of every counter-based draw: :func:`counter_uniform` runs it on numpy arrays, and the
    simulator's engine compiles this very function (``services.simulator.kernels.draws``), so the
    two give the same bits. Whole-array uint64 arithmetic only (it wraps mod 2**64, silently, in both)."""
    z = bases.copy()
    for j in range(columns.shape[0]):
        z = (z ^ columns[j]) + _GOLD
        z = (z ^ (z >> _S30)) * _M1
        z = (z ^ (z >> _S27)) * _M2
        z = z ^ (z >> _S31)
    return (z >> _S11).astype(np.float64) * _INV_2_53


def pack_counters(base: int, *counters: Any) -> tuple[NDArray[np.uint64], NDArray[np.uint64], tuple[int, ...]]:
    """``(bases, columns, shape)`` for :func:`splitmix_uniforms`: the counters broadcast to one shape, each
    reduced mod 2**64 (``astype(np.uint64)``: a negative counter wraps), flattened into the rows of
    ``columns``, and ``base`` repeated per element."""
    arrs = [np.asarray(c) for c in counters]
    n = arrs[0].shape[0] if arrs[0].ndim == 1 else -1
    if n >= 0 and all(a.ndim == 1 and a.shape[0] == n for a in arrs):  # the engine's case: columns of one length
        shape: tuple[int, ...] = (n,)
        columns = np.array(arrs, dtype=np.uint64).reshape(len(arrs), n)  # as astype: a negative counter wraps
    else:
        wide = np.broadcast_arrays(*(a.astype(np.uint64, copy=False) for a in arrs))
        shape = wide[0].shape
        n = int(np.prod(shape))
        columns = np.empty((len(wide), n), dtype=np.uint64)
        for j, a in enumerate(wide):
            columns[j] = a.reshape(n)
    bases = np.empty(n, dtype=np.uint64)
    bases.fill(base & _MASK64)
    return bases, columns, shape


def counter_uniform(base: int, *counters: Any) -> NDArray[np.float64]:
    """U[0, 1) per element from a base key and integer counters (order independent), shaped like the
    broadcast counters (:func:`splitmix_uniforms`)."""
    bases, columns, shape = pack_counters(base, *counters)
    return splitmix_uniforms(bases, columns).reshape(shape)


def equipage(seed: int, vehicle_ids: Sequence[str], penetration: float,
             always: Iterable[str] = ()) -> dict[str, bool]:
    """Which vehicles carry a V2X unit: the one equipage rule (grounding, the synthetic
    grounder and the simulator all call it).

    Each id gets its own counter-based uniform from the seed's EQUIPAGE substream, keyed
    by :func:`stable_hash64` of the id, so the draw of one vehicle never depends on which
    others exist or in which order they are listed; equipped iff u < ``penetration``
    (so 1.0 equips everyone, 0.0 no one). ``always`` lists ids whose equipage is fixed
    by the scenario (the ego, named agents): they come out equipped.
    """
    base = int(substream(seed, Substream.EQUIPAGE).integers(0, 2**63 - 1))
    fixed = set(always)
    hashes = np.asarray([stable_hash64(v) for v in vehicle_ids], dtype=np.uint64)
    u = counter_uniform(base, hashes) if len(vehicle_ids) else np.zeros(0)
    return {v: (True if v in fixed else bool(u[i] < penetration)) for i, v in enumerate(vehicle_ids)}
