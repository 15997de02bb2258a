"""Loading every CARLA town through carla's own OpenDRIVE parser (``load_map``): seconds per town and
in all, against the 30 s budget for the set (a benchmark, not a test: wall time depends on the load).

Run: ``.venv/bin/python bench/bench_maps.py`` (towns from ``$LASTV2X_SHARED_DATA/opendrive/carla``,
default ``../shared/data`` beside the repository).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.simulator.maps import load_map  # noqa: E402
from tests.conftest import shared_data_dir  # noqa: E402 (the one home of the data location)
from tests.simulator.maps.invariants import CARLA_TOWNS  # noqa: E402

TOWN_SET_BUDGET_S = 30.0


def main() -> int:
    town_dir = shared_data_dir() / "opendrive" / "carla"
    total = 0.0
    for town in CARLA_TOWNS:
        path = town_dir / f"{town}.xodr"
        if not path.is_file():
            print(f"  {town}: not found at {path}")
            continue
        t0 = time.perf_counter()
        road_map = load_map(path)
        seconds = time.perf_counter() - t0
        total += seconds
        print(f"  {town}: {seconds:.2f} s, {len(road_map.junctions)} junctions")
    print(f"all towns: {total:.1f} s (budget {TOWN_SET_BUDGET_S:.0f} s: {total / TOWN_SET_BUDGET_S:.2f} of it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
