"""The ghost_sender operator (issue 37 item 3): BSMs from a vehicle that does not exist, where the spec puts it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lastv2x.core.catalogue import FAULT_OPERATORS, Application, FailureClass, Stream
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.core.verifier import verify
from services.simulator.execute import SimulatorLimits, run_one
from services.simulator.reference import reference_spec
from services.simulator.v2x.forged import GhostVehicle
from services.simulator.v2x.stack import V2XInformationSource
from tests.simulator.v2x.world import run


def _fcw(**fault: object) -> dict:
    d = reference_spec(Application.FCW).model_dump(mode="json")
    d["agents"][0]["behaviour"] = {"kind": "none"}  # the real lead keeps its speed: only the ghost is news
    d["faults"] = [{"name": "ghost", "operator": "ghost_sender", "stream": "BSM", "magnitude": 40.0,
                    "anchor": {"kind": "scenario_time", "offset_s": 2.0}, "duration_s": 5.0, **fault}]
    return d


def test_the_catalogue_entry() -> None:
    info = FAULT_OPERATORS["ghost_sender"]
    assert info.failure_class is FailureClass.FRESH_BUT_WRONG and info.streams == (Stream.BSM, Stream.EEBL)
    assert info.magnitude_unit == "m" and info.magnitude_range == (-300.0, 300.0)
    (knob,) = info.knobs  # farther is weaker
    assert knob.inverse and (knob.field, knob.weakest, knob.strongest) == ("magnitude", 300.0, 10.0)


def test_a_spec_without_a_ghost_keeps_its_bytes() -> None:
    spec = reference_spec(Application.FCW)
    assert "ghost_speed_mps" not in spec.model_dump_json()
    assert "ghost_speed_mps" in parse_spec(_fcw(ghost_speed_mps=3.0)).model_dump_json()


def test_the_ghost_sits_on_the_route_and_moves_along_it() -> None:
    g = GhostVehicle([(0.0, 0.0), (100.0, 0.0), (100.0, 100.0)], 30.0, 10.0, 7, 1)
    g.place(2.0, 50.0)
    assert g.pose(2.0) == pytest.approx((80.0, 0.0, 0.0))
    x, y, h = g.pose(4.0)  # 100 m along: the corner, then up the second segment
    assert (x, y) == pytest.approx((100.0, 0.0)) and h == pytest.approx(math.pi / 2)
    assert g.pose(7.0)[:2] == pytest.approx((100.0, 30.0))
    g.place(5.0, 0.0)  # placed once: the window's first step
    assert g.pose(2.0)[:2] == pytest.approx((80.0, 0.0))
    past = GhostVehicle([(0.0, 0.0), (10.0, 0.0)], 20.0, 0.0, 7, 1)  # past the route's end: along its last segment
    past.place(0.0, 0.0)
    assert past.pose(0.0) == pytest.approx((20.0, 0.0, 0.0))


def test_the_ego_hears_a_ghost_only_in_its_window_at_10_hz() -> None:
    prog = program_from_spec_on_straight_roads(parse_spec(_fcw()))
    steps = run(prog, V2XInformationSource(), 0)
    seen = [(round(s.t_s, 2), info.tracks["ghost"]) for s, info in steps if "ghost" in info.tracks]
    assert seen and 2.0 <= seen[0][0] <= 2.2
    ego_x0 = next(s for s, _ in steps if s.t_s >= 2.0).xy_m[0]
    first = seen[0][1]
    h = first.heading_rad  # the route's heading: the ghost lies on the ego's line, 40 m ahead
    lateral = -(first.xy_m[0] - ego_x0[0]) * math.sin(h) + (first.xy_m[1] - ego_x0[1]) * math.cos(h)
    along = (first.xy_m[0] - ego_x0[0]) * math.cos(h) + (first.xy_m[1] - ego_x0[1]) * math.sin(h)
    assert first.speed_mps == 0.0 and abs(lateral) < 1e-6 and along > 0.0
    assert math.hypot(first.xy_m[0] - ego_x0[0], first.xy_m[1] - ego_x0[1]) == pytest.approx(40.0, abs=1.0)
    assert all(tr.xy_m == first.xy_m for _, tr in seen)  # stopped: the same position in every BSM
    fresh = [t for t, tr in seen if tr.aoi_s < 0.2]
    assert 6.8 <= fresh[-1] <= 7.2  # the window ends at 7 s
    assert "ghost" not in {v for s, _ in steps for v in s.vehicle_ids}  # nobody of the world


def test_fcw_brakes_for_a_ghost_and_the_twin_does_not() -> None:
    """Phantom braking: the message-driven ego brakes for a stopped ghost 40 m ahead; its ground-truth twin, which
    knows nobody is there, does not. No contact follows, so paired admission does not admit it (FCW's failure is
    the ego striking a vehicle ahead): the effect shows in the decisions and stops, not as a failure."""
    spec = parse_spec(_fcw())
    assert verify(spec).ok
    o, _ = run_one(program_from_spec_on_straight_roads(spec), None, SimulatorLimits())
    brakes = [d for d in o.md.decisions if d.action == "brake" and 2.0 <= d.t_s <= 7.0]
    assert brakes and not any(d.action == "brake" and 2.0 <= d.t_s <= 7.0 for d in o.gt.decisions)
    assert not o.admitted and not o.md.violations


def test_no_ghost_no_change() -> None:
    """A fault window that never opens sends no ghost: the outcome is the one without the fault."""
    d = _fcw(anchor={"kind": "scenario_time", "offset_s": 29.9}, duration_s=0.01)
    base = reference_spec(Application.FCW).model_dump(mode="json")
    base["agents"][0]["behaviour"] = {"kind": "none"}
    a, _ = run_one(program_from_spec_on_straight_roads(parse_spec(d)), None, SimulatorLimits())
    b, _ = run_one(program_from_spec_on_straight_roads(parse_spec(base)), None, SimulatorLimits())
    assert [x.action for x in a.md.decisions if x.t_s < 29.5] == [x.action for x in b.md.decisions if x.t_s < 29.5]


def test_the_same_seed_is_the_same_ghost() -> None:
    prog = program_from_spec_on_straight_roads(parse_spec(_fcw()))
    a = [(s.t_s, i.tracks.get("ghost")) for s, i in run(prog, V2XInformationSource(), 3)]
    b = [(s.t_s, i.tracks.get("ghost")) for s, i in run(prog, V2XInformationSource(), 3)]
    assert a == b


@pytest.mark.parametrize("sender", ["lead", "ego", "rsu"])
def test_a_ghost_with_a_real_id_is_invalid_argument_naming_the_sender(sender: str) -> None:
    from services.simulator.servicer import SimulatorServicer  # noqa: F401  (the service validates the same)
    spec = parse_spec(_fcw(sender=sender))
    finding = next(f for f in verify(spec).findings if f.check == "operator_field")
    assert finding.fields == ("faults[0].sender",) and finding.repair.patch[0] == ("faults[0].sender", "ghost")
    if sender == "lead":
        with pytest.raises(InvalidArgument) as e:
            program_from_spec_on_straight_roads(spec)
        assert e.value.violations[0].field == "faults[0].sender"


def test_ghost_bsms_are_not_made_without_a_ghost() -> None:
    prog = program_from_spec_on_straight_roads(reference_spec(Application.FCW))
    src = V2XInformationSource()
    src.reset(prog, 0)
    assert src.faults.ghosts == [] and np.isfinite(0.0)


def test_the_appearance_check_catches_the_ghost_and_changes_nothing_else() -> None:
    """The reference build's appearance option (``reference:appearance=60``): a sender first heard within 60 m of
    the ego after the run's first second is not trusted, so FCW no longer brakes for the ghost; on the same scene
    without a ghost, and with the real lead braking, its decisions are the reference's to the byte."""
    from services.simulator.apps.plugin import resolve_app

    checked = resolve_app("reference:appearance=60")
    assert checked.build.target == "reference:appearance=60"
    program = program_from_spec_on_straight_roads(parse_spec(_fcw()))
    o, _ = run_one(program, None, SimulatorLimits(), app=checked)
    assert not any(d.action == "brake" and 2.0 <= d.t_s <= 7.0 for d in o.md.decisions)
    plain = program_from_spec_on_straight_roads(reference_spec(Application.FCW))  # the lead brakes hard, no fault
    a, _ = run_one(plain, None, SimulatorLimits(), app=checked)
    b, _ = run_one(plain, None, SimulatorLimits())
    assert [(d.t_s, d.action) for d in a.md.decisions] == [(d.t_s, d.action) for d in b.md.decisions]
    assert any(d.action == "brake" for d in a.md.decisions)  # it still brakes for the real one


@pytest.mark.parametrize(("spec", "words"), [
    ("reference:appearance=0", "(0, 1000] m"), ("reference:appearance=x", "is not a distance"),
    ("reference:colour=1", "no option 'colour'"), ("reference:appearance=50,appearance=60", "twice"),
])
def test_a_bad_appearance_option_is_invalid_argument(spec: str, words: str) -> None:
    from services.simulator.apps.plugin import resolve_app

    with pytest.raises(InvalidArgument) as info:
        resolve_app(spec)
    assert words in info.value.violations[0].description and info.value.violations[0].field == "app"


def test_both_options_together() -> None:
    from services.simulator.apps.plugin import resolve_app

    app = resolve_app("reference:freshness=0.3,appearance=60")
    assert (app.plausible_age_s, app.appearance_m) == (0.3, 60.0)  # type: ignore[attr-defined]
    assert app.build.target == "reference:freshness=0.3,appearance=60"


def _ima_phantom(**fault: object) -> dict:
    """IMA on the synthetic crossing: the real cross car 14 s after the ego (no conflict), a tailgater 8 m behind,
    and a phantom on the crossing route 150 m before the conflict point at 12 m/s."""
    return {"application": "IMA", "seed": 3, "duration_s": 20.0,
            "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 14.0},
                       {"id": "tail", "role": "follower", "gap_m": 8.0}],
            "faults": [{"name": "g", "operator": "ghost_sender", "stream": "BSM", "magnitude": 150.0,
                        "ghost_speed_mps": 12.0, "ghost_route": "cross", **fault}]}


def test_a_phantom_on_the_crossing_route_makes_ima_yield_and_the_tailgater_strike() -> None:
    """issue 37 item 3: a forged crossing car (ghost_route cross) is predicted at the conflict point, so the
    message-driven ego yields and its tailgater rear-ends it; the twin, which knows nobody crosses, drives on.
    Admitted, fresh-but-wrong. The phantom on the ego's own route, or none, changes nothing."""
    spec = parse_spec(_ima_phantom())
    assert verify(spec).ok or not [f for f in verify(spec).findings if f.severity.value == "error"]
    o, _ = run_one(program_from_spec_on_straight_roads(spec), None, SimulatorLimits())
    assert any(d.action == "yield" for d in o.md.decisions) and not any(d.action == "yield" for d in o.gt.decisions)
    assert o.admitted and o.md.collision is not None and o.gt.collision is None
    own = _ima_phantom(ghost_route="ego")
    none = {**own, "faults": []}
    for d in (own, none):
        out, _ = run_one(program_from_spec_on_straight_roads(parse_spec(d)), None, SimulatorLimits())
        assert not out.admitted and not any(x.action == "yield" for x in out.md.decisions)


def test_a_crossing_phantom_in_a_program_without_a_crossing_agent_is_invalid_argument() -> None:
    """A program (built by hand) whose phantom drives the crossing route but whose agents have no conflict point:
    INVALID_ARGUMENT naming the fault's ghost_route, never a crash inside the V2X source."""
    from lastv2x.core.errors import InvalidArgument as Invalid

    program = program_from_spec_on_straight_roads(parse_spec(_ima_phantom()))
    cross = next(a for a in program.agents if a.route.conflict_s_m is not None)
    flat = cross.model_copy(update={"route": cross.route.model_copy(update={"crossings": ()})})
    bad = program.model_copy(update={"agents": tuple(flat if a is cross else a for a in program.agents)})
    assert all(a.route.conflict_s_m is None for a in bad.agents)
    with pytest.raises(Invalid) as info:
        run_one(bad, None, SimulatorLimits())
    assert info.value.violations[0].field == "program.faults[0].fault.ghost_route"
