"""ground(): programs for all six applications that the simulator executes, validation, infeasibility,
determinism."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lastv2x.core.catalogue import CONFLICT_WINDOW_S
from lastv2x.core.errors import FailedPrecondition, InvalidArgument
from lastv2x.core.program import program_from_json, program_to_json
from lastv2x.core.spec import Phase, parse_spec
from lastv2x.core.timeline import CROSS_GROUP, phase_at
from services.grounding.entries import heading_gap_rad
from services.grounding.ground import Grounder, ground
from services.simulator.signals import SignalTable

LEAD = {"id": "lead", "role": "lead", "gap_m": 40.0, "speed_mps": 10.0,
        "behaviour": {"kind": "hard_brake", "at_time_s": 5.0}}
SPECS = {  # application -> (spec, built-in map)
    "RLVW": ({"application": "RLVW", "faults": [
        {"name": "frz", "operator": "freeze", "stream": "SPAT",
         "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}, "duration_s": 8.0}]},
        "signalized_4way"),
    "GLOSA": ({"application": "GLOSA", "duration_s": 60.0, "map": {"junction_kind": "corridor"},
               "v2x": {"rsu_placement": "chain", "spat_relay": True}}, "corridor"),
    "FCW": ({"application": "FCW", "agents": [LEAD]}, "t_junction"),
    "EEBL": ({"application": "EEBL", "agents": [
        {**LEAD, "gap_m": 60.0, "speed_mps": 13.9, "behaviour": {"kind": "hard_brake", "at_time_s": 4.0}},
        {"id": "relay", "role": "relay", "gap_m": 30.0}],
        "faults": [{"name": "mute", "operator": "suppress_sender", "stream": "EEBL", "sender": "relay"}]},
        "urban_canyon"),
    "IMA": ({"application": "IMA", "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 0.5}],
             "map": {"busy": True}}, "signalized_4way_1lane"),
    "LTA": ({"application": "LTA", "ego": {"maneuver": "left"},
             "agents": [{"id": "opp", "role": "opposing", "arrival_offset_s": 0.5}]}, "signalized_4way"),
}


def _spec(app: str, town: str | None = None, **over):
    d = json.loads(json.dumps(SPECS[app][0]))
    d.setdefault("map", {})["town"] = town or SPECS[app][1]
    d.update(over)
    return parse_spec(d)


def _pos(route, s: float) -> np.ndarray:
    p = np.asarray(route.points_xy_m)
    cum = np.concatenate(([0.0], np.cumsum(np.hypot(*np.diff(p, axis=0).T))))
    return np.array([np.interp(s, cum, p[:, 0]), np.interp(s, cum, p[:, 1])])


def check_program(program, spec, catalogue) -> None:
    """The program honours the spec and the map's geometry."""
    rm = catalogue.road_map(program.map_name)
    ego = program.ego
    cr = ego.route.primary
    assert cr is not None
    # ego front bumper start_distance_m before its stop bar
    assert cr.stop_bar_s_m - (ego.start_s_m + ego.length_m / 2) == pytest.approx(spec.ego.start_distance_m, abs=1e-6)
    seg_ids = [s.id for s in ego.route.segments]
    move = rm.movements[next(i for i in seg_ids if i in rm.movements and rm.movements[i].junction_id ==
                             cr.junction_id)]
    assert move.turn == spec.ego.maneuver.value and move.from_lane_id == cr.approach_lane_id
    assert np.allclose(_pos(ego.route, cr.stop_bar_s_m), cr.stop_bar_xy_m, atol=0.05)
    for k in range(len(seg_ids) - 1):  # a connected path of real map elements
        assert seg_ids[k + 1] in rm.next_ids(seg_ids[k])
    plans = {g.id: g for g in program.signal_groups}
    if spec.application.value in ("RLVW", "GLOSA"):
        gid = cr.signal_group_id
        assert gid is not None and gid == move.signal_group_id
        g = plans[gid]
        assert (g.cycle_s, g.green_s, g.amber_s, g.offset_s) == (spec.signal.cycle_s, spec.signal.green_s,
                                                                  spec.signal.amber_s, spec.signal.offset_s)
    if cr.signal_group_id is not None:  # every group is the ego's plan or the timeline's cross group
        table = SignalTable.from_plans(program.signal_groups)
        for t in np.arange(0.0, 2 * spec.signal.cycle_s, 0.7):
            phases = table.phase_at(float(t))
            want_ego = ["green", "amber", "red"].index(phase_at(spec.signal, float(t)).value)
            want_cross = ["green", "amber", "red"].index(phase_at(spec.signal, float(t), CROSS_GROUP).value)
            for k, gp in enumerate(program.signal_groups):
                axis = program.grounding.details["signal_plans"][gp.id]
                assert int(phases[k]) == (want_ego if axis == "ego" else want_cross), (gp.id, t)
            ego_k = [gp.id for gp in program.signal_groups].index(cr.signal_group_id)
            cross_ks = [k for k, gp in enumerate(program.signal_groups)
                        if program.grounding.details["signal_plans"][gp.id] == "cross"]
            assert not (phases[ego_k] == 0 and any(phases[k] == 0 for k in cross_ks))  # never both green
    for a in spec.agents:
        v = next(x for x in program.agents if x.id == a.id)
        if a.role.value in ("lead", "relay"):
            assert v.start_s_m == pytest.approx(ego.start_s_m + a.gap_m, abs=1e-6)
            assert [s.id for s in v.route.segments][:len(seg_ids) - 2] == seg_ids[:len(seg_ids) - 2]
            assert v.route.primary.approach_lane_id == cr.approach_lane_id  # same lane, ahead
        if a.role.value in ("cross", "opposing"):
            vc = v.route.primary
            assert vc.conflict_s_m is not None and cr.conflict_s_m is not None
            assert np.allclose(vc.conflict_xy_m, cr.conflict_xy_m, atol=1e-6)
            assert np.allclose(_pos(v.route, vc.conflict_s_m), _pos(ego.route, cr.conflict_s_m), atol=0.05)
            t_ego = (cr.conflict_s_m - ego.start_s_m) / ego.initial_speed_mps
            assert v.arrive_conflict_at_s - t_ego == pytest.approx(a.arrival_offset_s, abs=1e-6)
            assert (vc.conflict_s_m - v.start_s_m) / v.arrive_conflict_at_s == pytest.approx(a.speed_mps, abs=1e-6)
            plan = program.grounding.details["plan"]
            a_ego = rm.junctions[cr.junction_id].approaches
            h = {x.id: x.heading_rad for x in a_ego}
            gap = heading_gap_rad(h[plan["ego"]["approach_id"]], h[plan[a.id]["approach_id"]])
            if a.role.value == "opposing":
                assert gap >= math.radians(135)
            else:
                assert math.radians(45) <= gap <= math.radians(135)
            assert rm.junctions[cr.junction_id].conflicts_of(plan["ego"]["movement_id"])
            assert abs(a.arrival_offset_s) <= CONFLICT_WINDOW_S
    for f in program.faults:
        if f.fault.sender is not None and f.fault.sender != "rsu":
            assert f.sender_id == f.fault.sender
    rec = program.grounding
    assert rec.builder == "grounding" and rec.details["hits"] and rec.details["chosen_junction_id"] == cr.junction_id
    assert program.map_sha256 == catalogue.entry(program.map_name).content_sha256


@pytest.fixture(scope="module")
def builtin_programs(builtin_grounder):
    return {app: builtin_grounder.ground(_spec(app)) for app in SPECS}


@pytest.mark.parametrize("app", sorted(SPECS))
def test_six_applications_on_builtin_maps(builtin_programs, builtin_catalogue, app):
    program = builtin_programs[app]
    assert program.map_name == SPECS[app][1]
    check_program(program, _spec(app), builtin_catalogue)
    assert program_from_json(program_to_json(program)) == program


def test_programs_execute_with_a_safe_ground_truth_ego(builtin_programs):
    from services.simulator.paired import execute_batch

    programs = [builtin_programs[a] for a in sorted(SPECS)]
    outs = execute_batch(programs)
    for app, o in zip(sorted(SPECS), outs, strict=True):
        assert not o.gt.failed, (app, o.gt.violations, o.gt.collision)
        assert not o.admitted


def test_one_paired_execution(builtin_programs):
    from services.simulator.paired import execute_paired

    out = execute_paired(builtin_programs["LTA"])
    assert not out.gt.failed and out.gt.min_agent_distance_m is not None


def test_specific_placements(builtin_programs, builtin_catalogue):
    glosa = builtin_programs["GLOSA"]
    assert [r.junction_id for r in glosa.rsus] == ["j1", "j2", "j3", "j4", "j5"]  # chain along the corridor
    assert glosa.ego.route.length_m > 900  # the ego route runs down the corridor
    rlvw = builtin_programs["RLVW"]
    assert len(rlvw.rsus) == 1 and rlvw.rsus[0].junction_id == rlvw.ego.route.primary.junction_id
    f = rlvw.faults[0]
    assert f.anchor_group_id == rlvw.ego_group_id and f.nominal_window_s is not None
    eebl = builtin_programs["EEBL"]
    assert eebl.faults[0].sender_id == "relay"
    ima = builtin_programs["IMA"]
    assert any(v.role.value == "background" for v in ima.agents)  # busy
    assert {"app:IMA"} <= set(ima.grounding.details["knowledge"])
    assert set(ima.grounding.details["profiles"]) == {v.id for v in ima.vehicles}


@pytest.mark.parametrize("town", ["Town04", "Town10HD", "Town03"])
def test_carla_towns_ground_and_execute(grounder, catalogue, town):
    from services.simulator.paired import execute_batch

    apps = ["FCW", "IMA", "LTA"] + (["RLVW"] if town != "Town03" else [])
    specs = [_spec(a, town) for a in apps]
    programs = [grounder.ground(s) for s in specs]
    for s, p in zip(specs, programs, strict=True):
        assert p.map_name == town
        check_program(p, s, catalogue)
    for app, o in zip(apps, execute_batch(programs), strict=True):
        assert not o.gt.failed, (town, app, o.gt.violations)


def test_determinism(builtin_grounder, builtin_catalogue, tmp_path):
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue

    spec = _spec("IMA", seed=7)
    a = program_to_json(builtin_grounder.ground(spec))
    b = program_to_json(builtin_grounder.ground(spec))
    assert a == b
    fresh = MapCatalogue(CatalogueConfig(cache_dir=tmp_path / "c", map_cache_dir=tmp_path / "m"))
    assert program_to_json(ground(spec, fresh)) == a  # a cold catalogue and a fresh index agree


def test_a_campaigns_candidates_share_their_roads_not_their_faults(builtin_grounder):
    """A campaign's candidates differ in their faults: their routes are laid once and shared (the same objects), and
    everything else of the program is what a fresh grounding gives; another start distance places the ego anew."""
    from services.grounding import assemble

    busy = _spec("IMA", seed=7)  # (a busy junction: background traffic on every approach)
    faulted = parse_spec({**json.loads(busy.model_dump_json()), "faults": [
        {"name": "late", "operator": "delay", "stream": "BSM", "magnitude": 0.4}]})
    a, b = builtin_grounder.ground(busy), builtin_grounder.ground(faulted)
    assert [v.route for v in (a.ego, *a.agents)] == [v.route for v in (b.ego, *b.agents)]
    assert all(x.route is y.route for x, y in zip((a.ego, *a.agents), (b.ego, *b.agents), strict=True))
    assert len(a.agents) > 2 and not a.faults and [f.fault.operator.value for f in b.faults] == ["delay"]
    assemble._ROUTES.clear()  # laid afresh, the same bytes
    assert program_to_json(builtin_grounder.ground(faulted)) == program_to_json(b)
    nearer = builtin_grounder.ground(busy.model_copy(update={"ego": busy.ego.model_copy(
        update={"start_distance_m": busy.ego.start_distance_m - 20.0})}))
    assert nearer.ego.start_s_m != a.ego.start_s_m and nearer.agents != a.agents  # (the crossing car is timed to it)


class _Planner:
    def __init__(self, fn):
        self.fn = fn
        self.calls = 0
        self.backend = "test-planner"

    def __call__(self, spec, candidates):
        self.calls += 1
        return self.fn(spec, candidates)


def test_planner_only_candidate_ids(builtin_catalogue, builtin_grounder):
    spec = _spec("LTA")
    bogus = _Planner(lambda s, c: {"ego": "signalized_4way/j9.a9", "opp": "made-up"})
    p = Grounder(builtin_catalogue, builtin_grounder.index, bogus).ground(spec)
    assert bogus.calls == 1 and p.grounding.details["planner_backend"] == "builtin"
    assert any("not a retrieved candidate" in n for n in p.grounding.notes)
    check_program(p, spec, builtin_catalogue)


def test_planner_role_map_is_validated(builtin_catalogue, builtin_grounder):
    spec = _spec("LTA")

    def by_role(s, cands):
        ids = {c.approach_id: c.candidate_id for c in cands}
        return {"ego": ids["j1.a3"], "opposing": ids["j1.a1"]}  # northbound ego, southbound opposing

    good = _Planner(by_role)
    p = Grounder(builtin_catalogue, builtin_grounder.index, good).ground(spec)
    assert p.grounding.details["planner_backend"] == "test-planner"
    assert p.grounding.details["plan"]["ego"]["approach_id"] == "j1.a3"
    assert p.grounding.details["plan"]["opp"]["approach_id"] == "j1.a1"

    def perpendicular(s, cands):
        ids = {c.approach_id: c.candidate_id for c in cands}
        return {"ego": ids["j1.a3"], "opp": ids["j1.a0"]}  # not the opposite approach

    p2 = Grounder(builtin_catalogue, builtin_grounder.index, _Planner(perpendicular)).ground(spec)
    assert p2.grounding.details["planner_backend"] == "builtin"
    assert any("not the opposite approach" in n for n in p2.grounding.notes)


def test_default_planner_is_the_llm_offline_planner(builtin_programs):
    assert all(p.grounding.details["planner_backend"].startswith("llm.") for p in builtin_programs.values())


@pytest.mark.parametrize("spec, constraint, alternative", [
    ({"application": "RLVW", "map": {"town": "t_junction"}}, "signalized", "junction"),
    ({"application": "GLOSA", "map": {"town": "Town03"}}, "signalized", "junction"),  # any map's, by rank
    ({"application": "IMA", "map": {"town": "t_junction"}, "agents": [{"id": "c", "role": "cross"}]},
     "roles", "junction"),
    ({"application": "RLVW", "map": {"town": "signalized_4way", "junction_kind": "corridor"}}, "junction_kind",
     "corridor"),
    ({"application": "RLVW", "map": {"town": "Town02", "min_approaches": 4}}, "approach_count", "junction"),
    ({"application": "RLVW", "map": {"town": "signalized_4way"}, "ego": {"start_distance_m": 400}}, "run_up",
     "start_distance_m <="),
    ({"application": "IMA", "map": {"town": "signalized_4way"},
      "agents": [{"id": "c", "role": "cross", "arrival_offset_s": -20}]}, "timing", "arrival_offset_s >="),
])
def test_infeasible_specs(grounder, spec, constraint, alternative):
    with pytest.raises(FailedPrecondition) as exc:
        grounder.ground(parse_spec(spec))
    assert exc.value.constraint.startswith(constraint), exc.value
    assert alternative in exc.value.alternative, exc.value


@pytest.mark.parametrize("fault, field", [
    ({"name": "x", "operator": "map_misassociation", "stream": "MAP", "target_group": "j7.sg9"}, "target_group"),
    ({"name": "x", "operator": "freeze", "stream": "SPAT",
      "anchor": {"kind": "signal_event", "event": "amber_onset", "group": "j7.sg9"}}, "anchor.group"),
    ({"name": "x", "operator": "suppress_sender", "stream": "BSM", "sender": "nobody"}, "sender"),
])
def test_a_fault_naming_what_the_scene_lacks_is_invalid(grounder, fault, field):
    spec = parse_spec({"application": "RLVW", "map": {"town": "signalized_4way"}, "faults": [fault]})
    with pytest.raises(InvalidArgument) as exc:
        grounder.ground(spec)
    (violation,) = exc.value.violations
    assert violation.field == f"faults[0].{field}" and violation.hint, violation


def test_nearest_alternative_is_feasible(grounder):
    with pytest.raises(FailedPrecondition) as exc:
        grounder.ground(parse_spec({"application": "RLVW", "map": {"town": "Town05"}}))
    alt = exc.value.alternative.split()
    town, junction = alt[0], alt[2]
    p = grounder.ground(parse_spec({"application": "RLVW", "map": {"town": town}}))
    assert p.map_name == town and junction.startswith("j")


def test_core_api(builtin_catalogue):
    from services.grounding.core import GroundingConfig, GroundingCore

    core = GroundingCore(GroundingConfig(), catalogue=builtin_catalogue)
    assert [m["name"] for m in core.list_maps()] == sorted(builtin_catalogue.names())
    hits = core.retrieve("knowledge", "signal phase and timing", 0, 3)
    assert len(hits) == 5 and all(h.kind == "knowledge" for h in hits)
    assert core.retrieve("approaches", "T-junction", 2)[0].kind == "approach"
    with pytest.raises(InvalidArgument) as exc:
        core.retrieve("roads", "", -1)
    assert {v.field for v in exc.value.violations} == {"kind", "query", "k"}
    assert core.ground(_spec("FCW")).map_name == "t_junction"
    cfg = GroundingConfig.from_env({"LASTV2X_GROUNDING_MAP_PATHS": "/a:/b", "LASTV2X_GROUNDING_BUILTINS": "0",
                                    "LASTV2X_GROUNDING_EMBEDDER": "lexical"})
    assert cfg.map_paths == (__import__("pathlib").Path("/a"), __import__("pathlib").Path("/b"))
    assert not cfg.include_builtins


def test_phase_helpers_agree_with_the_timeline():
    from lastv2x.core.program import cross_group_plan as cross_plan
    from lastv2x.core.program import ego_group_plan as ego_plan

    spec = _spec("RLVW", signal={"cycle_s": 50, "green_s": 20, "amber_s": 3, "all_red_s": 2, "offset_s": 7})
    table = SignalTable.from_plans([ego_plan("e", "j", spec.signal), cross_plan("c", "j", spec.signal)])
    for t in np.arange(0, 100, 0.25):
        ph = table.phase_at(float(t))
        assert Phase(["green", "amber", "red"][ph[0]]) == phase_at(spec.signal, float(t))
        assert Phase(["green", "amber", "red"][ph[1]]) == phase_at(spec.signal, float(t), CROSS_GROUP)
