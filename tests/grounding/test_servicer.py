"""The grounding service over real gRPC on loopback, with the planner role called over gRPC too."""

from __future__ import annotations

import grpc
import pytest

from lastv2x.core.spec import parse_spec
from lastv2x.rpc.convert import program_from_proto, spec_to_proto
from lastv2x.rpc.errors import field_violations
from lastv2x.rpc.server import ServerConfig, create_server
from lastv2x.rpc.services import SERVICES
from lastv2x.v1 import grounding_pb2, grounding_pb2_grpc
from services.grounding.core import GroundingConfig, GroundingCore
from services.grounding.remote_planner import RemotePlanner
from services.grounding.servicer import register

IMA = {"application": "IMA", "seed": 3, "map": {"town": "signalized_4way"},
       "agents": [{"id": "cross", "role": "cross", "arrival_offset_s": 0.5}]}


@pytest.fixture(scope="module")
def grounding(tmp_path_factory):
    llm, llm_port = create_server(ServerConfig("llm", log_json=False), SERVICES["llm"].register())
    llm.start()
    core = GroundingCore(GroundingConfig(cache_dir=tmp_path_factory.mktemp("catalogue")),
                         planner=RemotePlanner(f"127.0.0.1:{llm_port}"))
    server, port = create_server(ServerConfig("grounding", log_json=False), lambda s: register(s, core=core))
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield grounding_pb2_grpc.GroundingServiceStub(channel)
    server.stop(0)
    llm.stop(0)


def test_list_maps_has_the_builtins(grounding) -> None:
    maps = {m.name: m for m in grounding.ListMaps(grounding_pb2.ListMapsRequest(), timeout=60).maps}
    assert {"signalized_4way", "t_junction", "corridor", "urban_canyon"} <= set(maps)
    assert maps["corridor"].signalized_junction_count >= 4 and maps["urban_canyon"].building_count > 0


def test_ground_is_deterministic_and_uses_the_planner_over_grpc(grounding) -> None:
    req = grounding_pb2.GroundRequest(spec=spec_to_proto(parse_spec(IMA)))
    a = grounding.Ground(req, timeout=60).program
    b = grounding.Ground(req, timeout=60).program
    assert a == b
    program = program_from_proto(a)
    assert program.map_name == "signalized_4way"
    cross = next(v for v in program.agents if v.id == "cross")
    assert cross.route.conflict_s_m is not None and program.ego.route.conflict_s_m is not None


def test_retrieve_bad_kind_names_the_field(grounding) -> None:
    with pytest.raises(grpc.RpcError) as info:
        grounding.Retrieve(grounding_pb2.RetrieveRequest(kind="spaceships", query="x"), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field_violations(info.value)[0][0] == "kind"


def test_infeasible_spec_is_failed_precondition(grounding) -> None:
    spec = parse_spec({"application": "RLVW", "map": {"town": "t_junction", "signalized": True}})
    with pytest.raises(grpc.RpcError) as info:
        grounding.Ground(grounding_pb2.GroundRequest(spec=spec_to_proto(spec)), timeout=60)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert info.value.details()
