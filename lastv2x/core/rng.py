"""Seeded random substreams: one scenario seed fixes every random draw.

Each consumer asks for its own named substream, so adding draws in one place (say,
bus jitter) never shifts the numbers another place sees (say, equipage). Substreams
are numpy ``SeedSequence`` children keyed by a stable hash of the name, so they are
identical across processes, machines and Python hash seeds.

Per-element draws that must not depend on which other elements exist (one vehicle's
equipage, one message's delivery) are *counter-based*: :func:`counter_uniform` hashes a
base key with integer counters (SplitMix64), and :func:`stable_hash64` turns an id into
such a counter. :func:`equipage` is the one rule for which vehicles carry a V2X unit.
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


def _splitmix(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    with np.errstate(over="ignore"):
        z = x + _GOLD
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


_MASK64 = 0xFFFFFFFFFFFFFFFF
_GOLD_I, _M1_I, _M2_I = int(_GOLD), int(_M1), int(_M2)
_SMALL = 32  # up to this many elements the splitmix runs on Python ints (same bits, no numpy overhead)


def _splitmix_int(x: int) -> int:
    z = (x + _GOLD_I) & _MASK64
    z = ((z ^ (z >> 30)) * _M1_I) & _MASK64
    z = ((z ^ (z >> 27)) * _M2_I) & _MASK64
    return z ^ (z >> 31)


def counter_uniform_rows(base: int, *columns: Sequence[int]) -> list[float]:
    """:func:`counter_uniform` (same bits) of a few elements given as columns of Python ints (each in
    [0, 2**64): a negative counter must be reduced mod 2**64 first, as ``astype(np.uint64)`` does)."""
    b0 = base & _MASK64
    out = []
    for vals in zip(*columns, strict=True):
        zi = b0
        for v in vals:
            zi = _splitmix_int(zi ^ v)
        out.append(float(zi >> 11) * (1.0 / 9007199254740992.0))
    return out


def counter_uniform(base: int, *counters: Any) -> NDArray[np.float64]:
    """U[0, 1) per element from a base key and integer counters (order independent)."""
    arrs = [np.asarray(c).astype(np.uint64, copy=False) for c in counters]
    shapes = {a.shape for a in arrs}
    if len(shapes) == 1 and arrs[0].ndim == 1 and arrs[0].shape[0] <= _SMALL:
        return np.array(counter_uniform_rows(base, *(a.tolist() for a in arrs)), dtype=np.float64)
    if len(shapes) > 1:
        arrs = list(np.broadcast_arrays(*arrs))
    z = np.full(arrs[0].shape, np.uint64(base & 0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    for a in arrs:
        z = _splitmix(z ^ a)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


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
