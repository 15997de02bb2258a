"""Backhaul relays (issue 17, item 3): RSUs forward SPaT to each other over a wired backhaul with its
own latency and loss (not the radio), so a junction whose RSU the ego cannot hear is still known
ahead: its SPaT reaches the RSU the ego hears and that RSU rebroadcasts it."""

from __future__ import annotations

import pytest

from lastv2x.core.errors import FailedPrecondition, InvalidArgument
from lastv2x.core.repair import apply_patch
from lastv2x.core.spec import parse_spec, spec_to_dict
from lastv2x.core.verifier import verify


def _corridor(**v2x: object) -> dict:
    return {"application": "GLOSA", "duration_s": 40.0, "signal": {"offset_s": 6.0},
            "map": {"town": "corridor", "junction_kind": "corridor"},
            "v2x": {"rsu_placement": "chain", "channel": {"range_m": 100.0}, **v2x}}


def _known_ahead(builtin_grounder, corridor_map, spec: dict) -> tuple[list[int | None], object]:
    from services.simulator.paired import execute_paired
    from services.simulator.v2x.stack import v2x_source_factory

    program = builtin_grounder.ground(parse_spec(spec))
    out = execute_paired(program, program.seed, md_source_factory=v2x_source_factory(road_map=corridor_map))
    return [d.known_ahead for d in out.md.decisions if d.epoch], program


@pytest.fixture(scope="module")
def corridor_map(builtin_catalogue):
    return builtin_catalogue.road_map("corridor")


def test_backhaul_makes_junctions_out_of_radio_range_known_ahead(builtin_grounder, corridor_map):
    direct, program = _known_ahead(builtin_grounder, corridor_map, _corridor())
    backhaul, _ = _known_ahead(builtin_grounder, corridor_map, _corridor(backhaul={"latency_s": 0.02}))
    radio_relay, _ = _known_ahead(builtin_grounder, corridor_map, _corridor(spat_relay=True))
    n = len({c.junction_id for c in program.ego.route.crossings})
    assert n >= 2 and len(program.rsus) >= 2
    # 100 m radio range: at the first decision epoch the ego hears only the RSU of that junction; over the
    # radio the RSUs (250 m apart) do not hear each other either; over the backhaul they do
    assert direct[0] == 1 and radio_relay[0] == 1
    assert backhaul[0] == n
    lossy, _ = _known_ahead(builtin_grounder, corridor_map, _corridor(backhaul={"loss": 1.0}))
    assert lossy[0] == 1  # every forwarded message lost: as without a backhaul


def test_a_backhaul_between_rsus_that_do_not_exist_is_refused(builtin_grounder):
    spec = parse_spec(_corridor(rsu_placement="junction", backhaul={}))
    bad = [f for f in verify(spec).findings if "v2x.backhaul" in f.fields]
    assert len(bad) == 1 and bad[0].severity.value == "error"
    assert bad[0].repair.patch == (("v2x.rsu_placement", "chain"),)
    fixed = parse_spec(apply_patch(spec_to_dict(spec), bad[0].repair.patch))
    assert not [f for f in verify(fixed).findings if "v2x.backhaul" in f.fields]
    self_link = parse_spec(_corridor(backhaul={"links": [{"rsu_a": "rsu0", "rsu_b": "rsu0"}]}))
    assert [f.fields for f in verify(self_link).findings if f.severity.value == "error"] == [
        ("v2x.backhaul.links[0]",)]
    with pytest.raises(InvalidArgument) as exc:
        parse_spec(_corridor(backhaul={"links": [{"rsu_a": "rsu0", "rsu_b": "tower"}]}))
    assert exc.value.violations[0].field == "v2x.backhaul.links[0].rsu_b"
    # a link to an RSU the route's chain does not place: the builder says so (no program)
    with pytest.raises(FailedPrecondition, match="rsu9"):
        builtin_grounder.ground(parse_spec(_corridor(backhaul={"links": [{"rsu_a": "rsu0", "rsu_b": "rsu9"}]})))


def test_the_simulator_refuses_a_program_whose_backhaul_names_an_absent_rsu(builtin_grounder):
    from lastv2x.core.spec import Backhaul, BackhaulLink
    from services.simulator.execute import SimulatorLimits, validate_program

    program = builtin_grounder.ground(parse_spec(_corridor(backhaul={})))
    bad = program.model_copy(update={"v2x": program.v2x.model_copy(update={"backhaul": Backhaul(
        links=(BackhaulLink(rsu_a="rsu0", rsu_b="rsu7"),))})})
    with pytest.raises(InvalidArgument) as exc:
        validate_program(bad, SimulatorLimits.from_env({}))
    assert [v.field for v in exc.value.violations] == ["program.v2x.backhaul.links[0]"]


def test_a_backhaul_relay_lets_glosa_plan_across_the_gaps_between_rsus(builtin_grounder, corridor_map):
    """The corridor study at 50 m (issue 37 item 2; LAST-V2X §3.3): an RSU relaying the next junction's SPaT also
    describes its lanes (MAP), so right after a junction the ego ties its lane to the next group and gets an
    advisory, which stands across the gap in coverage; with direct SPaT it learns each junction only at 50 m and,
    watching the lights, stops as a driver without V2X would. Seed 5 of the experiment: 2 stops direct, 0 relayed."""
    from lastv2x_app.experiments.corridor import spec_dict
    from services.simulator.paired import execute_paired
    from services.simulator.v2x.stack import v2x_source_factory

    def run(arm: str) -> object:
        program = builtin_grounder.ground(parse_spec(spec_dict(arm, 50.0, 5)))
        return execute_paired(program, program.seed, md_source_factory=v2x_source_factory(road_map=corridor_map)).md

    direct, relayed = run("direct SPaT"), run("RSU relay (backhaul)")
    assert direct.stops == 2 and relayed.stops == 0
    assert direct.red_entries == () and relayed.red_entries == ()
    # the advisories that carried it: made for the next junction while the ego was still near the last one
    assert sum(d.action == "advise" for d in relayed.decisions) > sum(d.action == "advise" for d in direct.decisions)
