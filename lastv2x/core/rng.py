"""Seeded random substreams: one scenario seed fixes every random draw.

Each consumer asks for its own named substream, so adding draws in one place (say,
bus jitter) never shifts the numbers another place sees (say, equipage). Substreams
are numpy ``SeedSequence`` children keyed by a stable hash of the name, so they are
identical across processes, machines and Python hash seeds.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum

import numpy as np


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


def _key(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def substream(seed: int, name: Substream | str, *extra: int) -> np.random.Generator:
    """A generator for ``name`` under ``seed``; ``extra`` indexes sub-substreams (per agent, per link)."""
    seq = np.random.SeedSequence(entropy=int(seed), spawn_key=(_key(str(name)), *map(int, extra)))
    return np.random.Generator(np.random.PCG64(seq))
