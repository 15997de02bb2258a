"""V2X stack of the simulator: messages, the spatial channel, faults, reconstruction, the monitor.

``messages`` (J2735-shaped batches, keys, jitter), ``channel`` + ``geometry`` (the
spatial channel over building footprints), ``faults`` (message-level fault operators),
``reconstruction`` (the ego's belief with AoI), ``monitor`` (divergence episodes), and
``stack`` — the information source that runs them every step (over ``transmit``,
``links`` and ``queues``). Pure numpy; no grpc, no carla. Inputs are plain arrays
(metres, ground frame); the channel's names are re-exported here.
"""

from .channel import (
    COVERAGE_DELIVERY_THRESHOLD,
    ChannelParams,
    LinkBudget,
    evaluate_links,
    parameter_table,
    sample_delivery,
)
from .coverage import CoverageResult, coverage_grid
from .geometry import BuildingSet, all_pairs

__all__ = [
    "COVERAGE_DELIVERY_THRESHOLD",
    "BuildingSet",
    "ChannelParams",
    "CoverageResult",
    "LinkBudget",
    "all_pairs",
    "coverage_grid",
    "evaluate_links",
    "parameter_table",
    "sample_delivery",
]
