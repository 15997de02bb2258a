"""V2X stack of the simulator: spatial channel model (more layers to come).

Pure numpy; no grpc, no carla. Inputs are plain arrays (metres, ground frame).
"""

from .channel import (
    COVERAGE_DELIVERY_THRESHOLD,
    ChannelParams,
    CoverageResult,
    LinkBudget,
    coverage_grid,
    evaluate_links,
    parameter_table,
    sample_delivery,
)
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
