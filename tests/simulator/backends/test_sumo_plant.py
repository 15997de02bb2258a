"""The SUMO plant (services/simulator/backends/sumo_plant.py) on libsumo: vehicles where the program
puts them, commanded speeds taken exactly, SUMO's own drivers stopping at the lights our plan sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from lastv2x.core.catalogue import Application
from services.simulator.backends.base import open_plant
from services.simulator.backends.plant import TickCommand
from services.simulator.reference import reference_program

pytest.importorskip("libsumo", reason="the SUMO backend needs the 'sumo' extra")


def _run(tmp_path: Path, app: Application, driven: list[str], speeds: dict[str, float], phase: str, steps: int):
    from services.simulator.backends.sumo_plant import SumoPlant

    p = reference_program(app, seed=1)
    plant = SumoPlant(tmp_path)
    try:
        first = plant.start(p, "md", driven)
        last = first
        for k in range(1, steps + 1):
            last = plant.tick(TickCommand(k, k * p.dt_s, speeds, {g.id: phase for g in p.signal_groups}))
    finally:
        plant.close()
    return p, first, last


def test_vehicles_start_where_the_program_puts_them_and_take_the_commanded_speed(tmp_path: Path) -> None:
    p, first, last = _run(tmp_path, Application.FCW, ["ego", "lead"], {"ego": 10.0, "lead": 5.0}, "green", 40)
    for v in p.vehicles:
        y0 = p.ego.route.points_xy_m[0][1] + v.start_s_m  # the synthetic approach runs north along x = 1.75
        assert first[v.id].xy_m == pytest.approx((1.75, y0), abs=1e-6)
    # ballistic steps from 13.9 m/s: the first step brakes to the command, then it is held
    dt = p.dt_s
    assert last["ego"].speed_mps == pytest.approx(10.0) and last["lead"].speed_mps == pytest.approx(5.0)
    travelled = last["ego"].xy_m[1] - first["ego"].xy_m[1]
    assert travelled == pytest.approx((13.9 + 10.0) / 2 * dt + 10.0 * 39 * dt, abs=1e-6)


@pytest.mark.parametrize(("phase", "stops"), [("red", True), ("green", False)])
def test_a_driver_sumo_drives_obeys_the_light_our_plan_sets(tmp_path: Path, phase: str, stops: bool) -> None:
    _, _, last = _run(tmp_path, Application.RLVW, [], {}, phase, 400)  # 20 s: the ego is SUMO's own driver
    if stops:
        assert last["ego"].present and last["ego"].speed_mps < 0.1 and -16.0 < last["ego"].xy_m[1] < -10.0
    else:
        assert not last["ego"].present or last["ego"].xy_m[1] > 10.0  # through the junction


def test_an_unknown_backend_and_a_builtin_one() -> None:
    from lastv2x.core.errors import InvalidArgument

    assert open_plant("builtin") is None and open_plant("") is None
    with pytest.raises(InvalidArgument, match="backend.*unknown simulator backend 'gazebo'.*sumo"):
        open_plant("gazebo")
