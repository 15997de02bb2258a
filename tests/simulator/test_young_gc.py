"""The young GC generation widened while step loops run (services/simulator/young_gc.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from lastv2x.core.catalogue import Application
from services.simulator import paired, young_gc
from services.simulator.paired import execute_batch
from services.simulator.reference import reference_program


@pytest.fixture
def thresholds() -> Iterator[list[tuple[int, int, int]]]:
    """The thresholds in force when each step loop ends (spied), the process's own put back after."""
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    real = paired.restore_young_gc

    def spy() -> None:
        seen.append(gc.get_threshold())
        real()

    paired.restore_young_gc = spy  # type: ignore[assignment]
    try:
        gc.set_threshold(700, 10, 10)
        yield seen
    finally:
        paired.restore_young_gc = real  # type: ignore[assignment]
        gc.set_threshold(*before)


def test_a_step_loop_widens_the_young_generation_and_restores_it(thresholds: list) -> None:
    execute_batch([reference_program(Application.FCW, seed=s) for s in range(3)])
    assert thresholds == [(young_gc.GC_YOUNG_PER_ROW * 6, 10, 10)]  # 3 programs, 2 rollouts each
    assert gc.get_threshold() == (700, 10, 10)


def test_the_first_running_loop_sets_it_and_the_last_restores_it(thresholds: list) -> None:
    young_gc.widen_young_gc(4)
    young_gc.widen_young_gc(100)  # a loop of another thread meanwhile: the first one's setting holds
    assert gc.get_threshold() == (young_gc.GC_YOUNG_PER_ROW * 4, 10, 10)
    young_gc.restore_young_gc()
    assert gc.get_threshold() == (young_gc.GC_YOUNG_PER_ROW * 4, 10, 10)
    young_gc.restore_young_gc()
    assert gc.get_threshold() == (700, 10, 10)


def test_never_lowers_a_threshold_or_enables_a_collector_switched_off(thresholds: list) -> None:
    gc.set_threshold(10**6, 10, 10)
    execute_batch([reference_program(Application.FCW)])
    gc.set_threshold(0, 10, 10)
    execute_batch([reference_program(Application.FCW)])
    assert thresholds == [(10**6, 10, 10), (0, 10, 10)]
    assert gc.get_threshold() == (0, 10, 10)
