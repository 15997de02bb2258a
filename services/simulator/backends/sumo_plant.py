"""The SUMO plant (see base.py): libsumo on the program's own network (sumo_net.py).

Per rollout: one SUMO simulation, ballistic integration at the program's ``dt_s``, fixed seed,
no teleports, collisions left to our adjudicator (``--collision.action none``). Vehicles:

* every program vehicle gets its own vehicle type (its length, ``maxSpeed`` = desired speed,
  Krauss with ``sigma = 0`` so runs repeat bit for bit) and departs at t = 0 where the program
  puts it, with no insertion checks;
* the vehicles we drive (``driven``: the ego and the scripted agents) run with speed mode 0 and
  take the commanded speed each step (our controllers already brake for leaders and bars);
* background vehicles follow SUMO's Krauss car-following and junction right-of-way.

Signal heads: each light's links take their group's phase every step
(:meth:`SumoNetwork.tls_state`). libsumo holds one simulation per process, so rollouts on this
backend run one at a time per process (:data:`_ONE_AT_A_TIME`).
"""

from __future__ import annotations

import math
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

from lastv2x.core.program import ScenarioProgram
from services.simulator.backends.plant import TickCommand, VehicleReading
from services.simulator.backends.sumo_net import SumoNetwork, SumoUnavailable, build_network

_ONE_AT_A_TIME = threading.Lock()  # libsumo: one simulation per process


def _libsumo():  # type: ignore[no-untyped-def]
    try:
        import libsumo
    except ImportError:
        raise SumoUnavailable("the SUMO backend needs libsumo: pip install 'lastv2x[sumo]'") from None
    return libsumo


def routes_xml(program: ScenarioProgram, net: SumoNetwork) -> str:
    """The ``.rou.xml`` of a program: a type, a route and a vehicle per program vehicle."""
    out = ["<routes>"]
    for v in program.vehicles:
        r = net.routes[v.id]
        out.append(f'  <vType id={quoteattr("t-" + v.id)} length="{v.length_m:.3f}" minGap="0" '
                   f'maxSpeed="{v.desired_speed_mps:.3f}" accel="2.6" decel="4.5" emergencyDecel="9" sigma="0" '
                   f'speedFactor="1" speedDev="0"/>')
        out.append(f'  <route id={quoteattr("r-" + v.id)} edges={quoteattr(" ".join(r.edges))}/>')
    for v in program.vehicles:  # vehicles after every route and type; depart order = program order
        r = net.routes[v.id]
        out.append(f'  <vehicle id={quoteattr(v.id)} type={quoteattr("t-" + v.id)} route={quoteattr("r-" + v.id)} '
                   f'depart="0" departLane="0" departPos="{r.depart_pos_m:.4f}" '
                   f'departSpeed="{r.depart_speed_mps:.4f}" arrivalPos="max" insertionChecks="none"/>')
    out.append("</routes>")
    return "\n".join(out)


class SumoPlant:
    """A :class:`~services.simulator.backends.base.Plant` on libsumo."""

    name = "sumo"
    drives_background = True

    def __init__(self, cache_dir: Path | str | None = None):
        self.cache_dir = cache_dir
        self._sumo = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._lengths: dict[str, float] = {}
        self._ids: tuple[str, ...] = ()
        self._net: SumoNetwork | None = None
        self._locked = False
        self._tls_state: dict[str, str] = {}

    def start(self, program: ScenarioProgram, rollout: str, driven: Sequence[str]) -> Mapping[str, VehicleReading]:
        sumo = _libsumo()
        net = self._net = build_network(program, self.cache_dir)
        _ONE_AT_A_TIME.acquire()
        self._locked = True
        try:
            self._tmp = tempfile.TemporaryDirectory(prefix="lastv2x-sumo-run-")
            rou = Path(self._tmp.name) / "scene.rou.xml"
            rou.write_text(routes_xml(program, net))
            sumo.start(["sumo", "-n", str(net.net_path), "-r", str(rou), "--step-length", repr(program.dt_s),
                        "--step-method.ballistic", "true", "--seed", str(program.seed % 2**31),
                        "--collision.action", "none", "--time-to-teleport", "-1", "--no-step-log", "true",
                        "--no-warnings", "true", "--begin", "0"])
            self._sumo = sumo
            self._lengths = {v.id: v.length_m for v in program.vehicles}
            self._ids = tuple(v.id for v in program.vehicles)
            sumo.simulationStep()  # inserts every vehicle at its departure (it moves from the next step)
            for vid in driven:
                if vid in self._lengths:
                    sumo.vehicle.setSpeedMode(vid, 0)
            return self._read()
        except Exception:
            self.close()
            raise

    def tick(self, command: TickCommand) -> Mapping[str, VehicleReading]:
        sumo, net = self._sumo, self._net
        assert sumo is not None and net is not None, "tick before start"
        for tls in net.link_groups:
            state = net.tls_state(tls, dict(command.group_phases))
            if self._tls_state.get(tls) != state:
                sumo.trafficlight.setRedYellowGreenState(tls, state)
                self._tls_state[tls] = state
        present = set(sumo.vehicle.getIDList())
        for vid, v in command.speeds_mps.items():
            if vid in present:
                sumo.vehicle.setSpeed(vid, max(0.0, float(v)))
        sumo.simulationStep()
        return self._read()

    def _read(self) -> dict[str, VehicleReading]:
        sumo = self._sumo
        assert sumo is not None
        present = set(sumo.vehicle.getIDList())
        out: dict[str, VehicleReading] = {}
        for vid in self._ids:
            if vid not in present:
                out[vid] = VehicleReading((math.nan, math.nan), math.nan, 0.0, present=False)
                continue
            fx, fy = sumo.vehicle.getPosition(vid)  # front bumper
            heading = math.radians(90.0 - sumo.vehicle.getAngle(vid))  # SUMO: degrees clockwise from north
            half = self._lengths[vid] / 2.0
            out[vid] = VehicleReading((fx - half * math.cos(heading), fy - half * math.sin(heading)),
                                      math.atan2(math.sin(heading), math.cos(heading)), sumo.vehicle.getSpeed(vid))
        return out

    def close(self) -> None:
        try:
            if self._sumo is not None:
                self._sumo.close()
        finally:
            self._sumo = None
            self._tls_state = {}
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None
            if self._locked:
                self._locked = False
                _ONE_AT_A_TIME.release()


__all__ = ["SumoPlant", "routes_xml"]
