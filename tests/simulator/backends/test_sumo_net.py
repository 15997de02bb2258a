"""The program as a SUMO network (services/simulator/backends/sumo_net.py): real netconvert, read
back with sumolib; what each vehicle drives, which light controls which link."""

from __future__ import annotations

from pathlib import Path

import pytest

from lastv2x.core.catalogue import Application
from services.simulator.backends import sumo_net
from services.simulator.reference import reference_program
from tests.conftest import shared_data_dir

sumolib = pytest.importorskip("sumolib", reason="the SUMO backend needs the 'sumo' extra")
TOWN01 = shared_data_dir() / "opendrive" / "carla" / "Town01.xodr"


def test_a_signalized_scene_becomes_lanes_a_light_and_links_of_its_groups(tmp_path: Path) -> None:
    p = reference_program(Application.LTA, seed=1)
    net = sumo_net.build_network(p, tmp_path)
    sn = sumolib.net.readNet(str(net.net_path), withPrograms=True)
    assert {e.getID() for e in sn.getEdges()} == {"S.in", "W.out", "N.in", "S.out"}
    assert net.routes["ego"].edges == ("S.in", "W.out") and net.routes["opposing"].edges == ("N.in", "S.out")
    # the route's centre start plus half a length is SUMO's front-bumper departPos
    assert net.routes["ego"].depart_pos_m == pytest.approx(p.ego.start_s_m + p.ego.length_m / 2)
    assert net.junction_tls == {"j0": "j0"}
    links = {(i.getEdge().getID(), o.getEdge().getID()): k for i, o, k in sn.getTLS("j0").getConnections()}
    assert net.link_groups["j0"][links[("S.in", "W.out")]] == "j0.sg0"
    assert net.tls_state("j0", {"j0.sg0": "amber"})[links[("S.in", "W.out")]] == "y"
    assert set(net.tls_state("j0", {})) == {"r"}  # a group with no phase given stays red


def test_vehicles_on_one_lane_share_one_edge_and_an_unsignalized_junction_gets_no_light(tmp_path: Path) -> None:
    net = sumo_net.build_network(reference_program(Application.FCW, seed=1), tmp_path)
    assert net.routes["ego"].edges == net.routes["lead"].edges == ("S.in", "N.out")
    assert net.routes["lead"].depart_pos_m > net.routes["ego"].depart_pos_m
    assert net.junction_tls == {} and net.link_groups == {}


def test_the_network_is_built_once_per_layout(tmp_path: Path) -> None:
    a = sumo_net.build_network(reference_program(Application.RLVW, seed=1), tmp_path)
    mtime = a.net_path.stat().st_mtime_ns
    b = sumo_net.build_network(reference_program(Application.RLVW, seed=2), tmp_path)
    assert b.net_path == a.net_path and b.net_path.stat().st_mtime_ns == mtime
    assert [f.name for f in tmp_path.iterdir()] == [a.net_path.name]  # nothing half written left behind


@pytest.mark.skipif(not TOWN01.is_file(), reason=f"CARLA Town01 absent: {TOWN01} (../shared/data not here)")
def test_carla_town01_converts_with_its_16_traffic_lights(tmp_path: Path) -> None:
    net = sumolib.net.readNet(str(sumo_net.convert_opendrive(TOWN01, tmp_path)))
    assert len(net.getTrafficLights()) == 16


def test_a_map_netconvert_refuses_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.xodr"
    bad.write_text("<OpenDRIVE><road id='1' length='-5'>")
    with pytest.raises(sumo_net.SumoUnavailable, match="netconvert refused"):
        sumo_net.convert_opendrive(bad, tmp_path / "cache")
    assert not any((tmp_path / "cache").glob("*.xml"))
