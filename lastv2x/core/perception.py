"""Drivers without V2X: what an unequipped vehicle can see (``ScenarioSpec.perception``, ``ego.equipped``).

An unequipped vehicle has no on-board unit: it receives no SPaT, no BSM and no EEBL, and runs no
application. It drives by what it sees, in the traffic model (``services.simulator.traffic``):

* **signals** within ``signal_sight_distance_m`` of its next stop bar: a driver decides stop/go at
  amber or red only once the signal face is within sight (the usual "can I still stop" rule, at
  the distance where it first sees it); a signal beyond its sight is not acted on;
* **leaders** within ``leader_range_m`` (bumper gap), perceived with its reaction time (the
  driver profile's, or the seed-drawn ``reaction_time_s``: Treiber's human-driver delay).

Defaults and their sources:

* ``SIGNAL_SIGHT_DISTANCE_M = 100``: MUTCD (2009) Section 4D.12, Table 4D-2, minimum sight
  distance to a signal face: 270 ft (82 m) at 30 mph, 325 ft (99 m) at 35 mph; 100 m covers an
  urban approach at the default 13.9 m/s (50 km/h).
* ``LEADER_RANGE_M = 150``: an assumption of ours (no standard gives a perception range): longer
  than the AASHTO Green Book (2011) Table 3-1 design stopping sight distance at 80 km/h (130 m),
  so every leader that matters for stopping at urban speeds is seen; the field makes the range
  explicit and settable.

* **equipped drivers** (``equipped_see_signals``, off by default): a driver with V2X acts on a signal
  it sees within ``signal_sight_distance_m`` as well as on its application. Off, an equipped ego of a
  signal application (RLVW, GLOSA) acts on its application alone: RLVW's premise is a driver who
  misses the light, and a message-driven ego that hears a junction's SPaT too late enters on red.
  On, a GLOSA driver without an advisory stops for the red it can see, as people do (the LAST-V2X
  corridor study's "direct SPaT changes little" at 50 m).

When the rule applies (default-off, so programs without it keep their bytes): every unequipped
vehicle of a program drives by sight when the spec sets ``perception`` or its ego is unequipped
(``ego.equipped: false``; then with the default distances unless ``perception`` says otherwise).
Program builders (grounding, the synthetic crossing) call :func:`apply` on the program they built;
the program then carries ``equipped``, ``sight_distance_m`` and ``perception_range_m`` per vehicle.

Paired execution with an unequipped ego: it has no V2X, so both rollouts drive it by sight and the
application decides nothing (no decision records); nothing communication-induced can be admitted.
"""

from __future__ import annotations

from typing import Any

from lastv2x.core.catalogue import APPLICATIONS, LEADER_RANGE_M, SIGNAL_SIGHT_DISTANCE_M
from lastv2x.core.spec import Perception, ScenarioSpec

# FCW/EEBL egos are tested as the driver those warnings exist for: an inattentive one, who notices brake
# lights ahead 2 s late (an attentive driver's ~1 s reaction avoids every hard brake from the IDM following
# distance, leaving nothing for the warning to do). A follower (role ``follower``) is the driver an unwarranted
# brake endangers, inattentive for the same reason: an attentive IDM follower stops behind any brake the ego
# can make. A seed-drawn reaction time (``variation``) stays.
INATTENTIVE_REACTION_S = 2.0
# a follower that tailgates the ego, where no distance is given [m]: 0.8 s at 15 m/s, well under the two-second
# rule (the agents' default gap, 30 m, is two seconds): the parser's "tailgater" and the one the reflector adds (a
# phantom's needless brake needs someone behind it to harm)
TAILGATER_GAP_M = 12.0


def inattentive(program: Any) -> Any:
    """``program`` with reaction time ``INATTENTIVE_REACTION_S`` for its ego when its application warns of a lead
    that follows ahead (the catalogue's ``follows_lead``: FCW, EEBL), and for every follower, where nothing set
    one; else ``program``."""
    from lastv2x.core.program import VehicleRole

    def slow(v: Any) -> Any:
        return v.model_copy(update={"reaction_time_s": INATTENTIVE_REACTION_S})

    ego = program.ego
    if APPLICATIONS[program.application].follows_lead and ego.reaction_time_s is None:
        ego = slow(ego)
    agents = tuple(slow(a) if a.role is VehicleRole.FOLLOWER and a.reaction_time_s is None else a
                   for a in program.agents)
    if ego is program.ego and all(a is b for a, b in zip(agents, program.agents, strict=True)):
        return program
    return program.model_copy(update={"ego": ego, "agents": agents})


def finish(program: Any, spec: ScenarioSpec) -> Any:
    """What every program builder does last: :func:`inattentive` (the FCW/EEBL ego), :func:`apply` (drivers
    without V2X), then :func:`with_applications` (agents that run applications); a backhaul naming RSUs the
    builder did not place is FAILED_PRECONDITION (``lastv2x.core.program.backhaul_problems``)."""
    from lastv2x.core.errors import FailedPrecondition
    from lastv2x.core.program import backhaul_problems

    bad = backhaul_problems(spec.v2x, [r.id for r in program.rsus])
    if bad:
        raise FailedPrecondition("; ".join(bad), "rsu_placement 'chain' on a route with more junctions, or "
                                 "links between the RSUs placed")
    return with_applications(apply(inattentive(program), spec), spec)


def with_applications(program: Any, spec: ScenarioSpec | None = None) -> Any:
    """``program`` with each agent's ``application`` from the spec (issue 17, item 4: agents that run
    applications; an unequipped agent runs none). Without any: ``program`` itself."""
    spec = program.spec if spec is None else spec
    apps = {a.id: a.application for a in spec.agents if a.application is not None} if spec is not None else {}
    if not apps:
        return program
    agents = tuple(a.model_copy(update={"application": apps[a.id]}) if a.id in apps and a.equipped else a
                   for a in program.agents)
    return program.model_copy(update={"agents": agents})


def active(spec: ScenarioSpec | None) -> Perception | None:
    """The perception unequipped vehicles of ``spec`` drive by; None = the rule is off for this spec."""
    if spec is None:
        return None
    if spec.perception is not None:
        return spec.perception
    if not spec.ego.equipped:
        return Perception()
    return None


def apply(program: Any, spec: ScenarioSpec | None = None) -> Any:
    """``program`` with the ego's equipage from the spec and, where the rule is on, the sight distance
    and leader range set on every unequipped vehicle. Without the rule: ``program`` itself."""
    spec = program.spec if spec is None else spec
    per = active(spec)
    if per is None:
        return program
    assert spec is not None

    def see(v: Any, equipped: bool) -> Any:
        if equipped and per.equipped_see_signals:  # a driver with V2X who also watches the signal face
            return v.model_copy(update={"equipped": True, "sight_distance_m": per.signal_sight_distance_m})
        if equipped:
            return v if v.equipped else v.model_copy(update={"equipped": True})
        return v.model_copy(update={"equipped": False, "sight_distance_m": per.signal_sight_distance_m,
                                    "perception_range_m": per.leader_range_m})

    ego = see(program.ego, spec.ego.equipped)
    agents = tuple(see(a, a.equipped) for a in program.agents)
    return program.model_copy(update={"ego": ego, "agents": agents})


__all__ = ["INATTENTIVE_REACTION_S", "LEADER_RANGE_M", "SIGNAL_SIGHT_DISTANCE_M", "active", "apply", "finish",
           "inattentive", "with_applications"]
