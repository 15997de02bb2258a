"""``python -m services.simulator.kernels``: compile the engine's kernels into numba's on-disk cache (the image
build runs it, so a pod loads them instead of compiling; SimulatorCore.warm_up then loads them at start)."""

from __future__ import annotations

import time

from lastv2x.core.catalogue import Application
from services.simulator.paired import execute_batch, execute_paired
from services.simulator.reference import reference_program


def main() -> None:
    start = time.perf_counter()
    from services.simulator.v2x.stack import v2x_source_factory

    execute_batch([reference_program(app, seed=0) for app in Application])  # the batch signatures
    # the V2X stack's kernels (the channel, the message schedules): what ExecuteBatch runs
    execute_batch([reference_program(app, seed=0) for app in Application], md_source_factory=v2x_source_factory())
    execute_paired(reference_program(Application.RLVW))
    print(f"kernels compiled and cached in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
