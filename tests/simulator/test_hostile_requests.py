"""Issue 16: the simulator's hostile-client findings, each reproduced over real gRPC on loopback.

Every bad request is INVALID_ARGUMENT naming its field (never UNKNOWN / INTERNAL), leaves no
file behind, and no request opens a server path of the client's choosing.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from lastv2x.rpc.errors import field_violations
from lastv2x.v1 import common_pb2, simulator_pb2
from services.simulator.execute import SimulatorLimits
from tests.simulator.conftest import served_simulator

SPEC = common_pb2.ScenarioSpec(application=common_pb2.APPLICATION_RLVW)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    traces = tmp_path_factory.mktemp("traces")
    with served_simulator(SimulatorLimits(max_duration_s=60.0, trace_dir=traces, max_rsus=16)) as stub:
        yield stub, traces


def _invalid(call, *args, **kwargs) -> list[str]:
    with pytest.raises(grpc.RpcError) as info:
        reply = call(*args, timeout=60, **kwargs)
        if not hasattr(reply, "ListFields"):  # a server stream
            list(reply)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    return [f for f, _ in field_violations(info.value)]


def test_negative_seed_is_invalid_and_leaves_no_part_file(served) -> None:
    sim, traces = served
    assert _invalid(sim.Execute, simulator_pb2.ExecuteRequest(spec=SPEC, seed=-1)) == ["seed"]
    assert _invalid(sim.Execute, simulator_pb2.ExecuteRequest(spec=SPEC, seed=-1, write_trace=True)) == ["seed"]
    batch = simulator_pb2.ExecuteBatchRequest(requests=[simulator_pb2.ExecuteRequest(spec=SPEC, seed=-1)])
    assert _invalid(sim.ExecuteBatch, batch) == ["requests[0].seed"]
    assert not list(traces.glob("*.part"))


def test_identical_concurrent_trace_writes_all_succeed(served) -> None:
    sim, traces = served
    req = simulator_pb2.ExecuteRequest(spec=SPEC, seed=11, write_trace=True)
    with ThreadPoolExecutor(6) as pool:
        replies = list(pool.map(lambda _: sim.Execute(req, timeout=120), range(6)))
    assert len({r.outcome.trace_uri for r in replies}) == 1
    assert len({r.outcome.outcome_sha256 for r in replies}) == 1
    assert not list(traces.glob("*.part"))
    assert len(list(traces.glob("*-11.mcap"))) == 1


def test_execute_batch_refuses_write_trace(served) -> None:
    sim, _ = served
    batch = simulator_pb2.ExecuteBatchRequest(requests=[simulator_pb2.ExecuteRequest(spec=SPEC),
                                                        simulator_pb2.ExecuteRequest(spec=SPEC, write_trace=True)])
    assert _invalid(sim.ExecuteBatch, batch) == ["requests[1].write_trace"]


def _cov(map_name: str = "corridor", rsus=(), **kw) -> simulator_pb2.CoverageMapRequest:
    req = simulator_pb2.CoverageMapRequest(map_name=map_name, **kw)
    for r in rsus:
        req.rsus.add(**r)
    return req


@pytest.mark.parametrize(("request_", "field"), [
    (_cov(range_m=-1.0), "range_m"),
    (_cov(range_m=math.inf), "range_m"),
    (_cov(range_m=math.nan), "range_m"),
    (_cov(blockage_db_per_m=math.nan), "blockage_db_per_m"),
    (_cov(blockage_db_per_m=-0.5), "blockage_db_per_m"),
    (_cov(rsus=[{"id": "a", "xy_m": [math.nan, 0.0]}]), "rsus[0].xy_m"),
    (_cov(rsus=[{"id": "a", "xy_m": [0.0, math.inf]}]), "rsus[0].xy_m"),
    (_cov(rsus=[{"id": "a", "xy_m": [0.0, 0.0], "height_m": -3.0}]), "rsus[0].height_m"),
    (_cov(rsus=[{"id": "a", "xy_m": [0.0, 0.0], "height_m": math.nan}]), "rsus[0].height_m"),
    (_cov(rsus=[{"id": "x" * 300, "xy_m": [0.0, 0.0]}]), "rsus[0].id"),
    (_cov(rsus=[{"id": f"r{i}", "xy_m": [float(i), 0.0]} for i in range(17)]), "rsus"),
    (_cov(map_name="x" * 300), "map_name"),
], ids=["range-1", "range-inf", "range-nan", "blockage-nan", "blockage-neg", "rsu-nan", "rsu-inf", "height-neg",
        "height-nan", "id-300", "rsu-cap", "name-300"])
def test_coverage_map_bad_values_name_the_field(served, request_, field) -> None:
    sim, _ = served
    assert field in _invalid(sim.CoverageMap, request_)


@pytest.mark.parametrize("name", ["/etc/passwd", "../../etc/passwd", "/etc/hostname", "./corridor",
                                  "corridor.xodr", "~/x"])
def test_no_request_opens_a_server_path(served, tmp_path, name) -> None:
    sim, _ = served
    with pytest.raises(grpc.RpcError) as info:
        sim.CoverageMap(_cov(map_name=name), timeout=30)
    err = info.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in field_violations(err)] == ["map_name"]
    assert "LASTV2X_MAP_PATHS" in err.details() and "not XML" not in err.details()
    program = common_pb2.ScenarioProgram()
    program.map_name = name
    with pytest.raises(grpc.RpcError) as info:
        sim.Execute(simulator_pb2.ExecuteRequest(program=program), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not XML" not in info.value.details()


def test_maps_load_from_configured_directories_by_name(tmp_path) -> None:
    from services.simulator.core import SimulatorCore
    from services.simulator.maps import builtin_files

    xodr = builtin_files("corridor", cache_dir=tmp_path / "cache")
    user = tmp_path / "maps"
    user.mkdir()
    (user / "my_corridor.xodr").write_bytes(xodr.read_bytes())
    core = SimulatorCore(SimulatorLimits(map_paths=(user,)))
    cov, layout = core.coverage_map("my_corridor")
    assert cov.fraction > 0 and layout
    from lastv2x.core.errors import InvalidResource

    with pytest.raises(InvalidResource):
        core.coverage_map(str(user / "my_corridor.xodr"))
