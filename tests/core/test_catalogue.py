"""The catalogue is the one home of applications and fault operators (issue 39): the contract's enums, the
spec's enums and every consumer agree with it; a name registered later resolves like a built-in one."""

from __future__ import annotations

from enum import StrEnum

import pytest

from lastv2x.core import catalogue as cat
from lastv2x.core.catalogue import (
    APPLICATIONS,
    FAULT_OPERATORS,
    ROUTE_LATERAL_BAND_M,
    STREAMS,
    Application,
    ApplicationInfo,
    Stream,
    extension_member,
)
from lastv2x.core.spec import FaultOperator, parse_spec
from lastv2x.v1 import common_pb2


def _proto_values(enum_name: str, prefix: str) -> list[str]:
    values = common_pb2.DESCRIPTOR.enum_types_by_name[enum_name].values
    assert values[0].name == f"{prefix}UNSPECIFIED" and values[0].number == 0
    return [v.name.removeprefix(prefix) for v in sorted(values[1:], key=lambda v: v.number)]


def test_proto_enums_are_the_catalogue() -> None:
    """protos/lastv2x/v1/common.proto lists exactly the catalogue's entries, in registration order (numbers 1..n)."""
    assert _proto_values("FaultOperator", "FAULT_OPERATOR_") == [n.upper() for n in FAULT_OPERATORS]
    assert _proto_values("Application", "APPLICATION_") == [a.value.upper() for a in APPLICATIONS]
    assert _proto_values("Stream", "STREAM_") == [s.value.upper() for s in STREAMS]


def test_spec_enums_name_the_catalogue_entries() -> None:
    assert [o.value for o in FaultOperator] == list(FAULT_OPERATORS)
    assert list(Application) == list(APPLICATIONS)
    assert list(Stream) == list(STREAMS)


def test_application_facts_live_in_the_catalogue() -> None:
    ahead = {a.name for a in APPLICATIONS.values() if a.ahead_only}
    assert ahead == {Application.FCW, Application.EEBL}
    assert {a.name for a in APPLICATIONS.values() if a.follows_lead} == ahead
    assert all(a.lateral_band_m == ROUTE_LATERAL_BAND_M == 2.5 for a in APPLICATIONS.values())
    assert APPLICATIONS[Application.FCW].threshold("release_ttc_s") == 4.0
    with pytest.raises(KeyError, match="no threshold"):
        APPLICATIONS[Application.RLVW].threshold("release_ttc_s")


def test_the_verifier_reads_the_catalogue_threshold() -> None:
    from lastv2x.core import verifier_epochs

    assert verifier_epochs.FCW_RELEASE_TTC_S == APPLICATIONS[Application.FCW].threshold("release_ttc_s")


def test_operator_facts_live_in_the_catalogue() -> None:
    q = {n: FAULT_OPERATORS[n].magnitude_quantity for n in FAULT_OPERATORS}
    assert q["delay"] == "time" and q["bsm_position_offset"] == "dist" and q["bsm_speed_offset"] == "speed"
    assert q["drop"] is None and q["freeze"] is None
    assert [k.field for k in FAULT_OPERATORS["drop"].knobs] == ["probability", "burst_count"]
    assert [k.field for k in FAULT_OPERATORS["delay"].knobs] == ["magnitude"]
    assert FAULT_OPERATORS["freeze"].knobs == ()
    signed = {n for n in FAULT_OPERATORS if FAULT_OPERATORS[n].signed}
    assert signed == {"spat_countdown_offset", "bsm_speed_offset", "bsm_position_offset", "ghost_sender"}
    assert signed == {n for n in FAULT_OPERATORS if FAULT_OPERATORS[n].negative_words}  # a sign needs its words


def test_registries_refuse_duplicates_and_a_second_lateral_band() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        cat.register_fault_operator(FAULT_OPERATORS["drop"])
    info = APPLICATIONS[Application.IMA]
    with pytest.raises(ValueError, match="lateral band"):
        cat.register_application(ApplicationInfo(**{**info.__dict__, "lateral_band_m": 3.0}))


def test_a_name_registered_later_resolves_like_a_built_in_one(monkeypatch: pytest.MonkeyPatch) -> None:
    class Colour(StrEnum):
        RED = "red"

    pink = extension_member(Colour, "pink")
    assert Colour("pink") is pink and pink.value == "pink" and list(Colour) == [Colour.RED]
    # a fault operator the spec's enum does not list is valid once the catalogue has it
    spec = {"application": "RLVW", "faults": [{"name": "z", "operator": "zz_test_op", "stream": "SPAT"}]}
    with pytest.raises(Exception, match="operator"):
        parse_spec(spec)
    monkeypatch.setattr(FAULT_OPERATORS, "_items", {**FAULT_OPERATORS._items})
    cat.register_fault_operator(cat.FaultOperatorInfo(
        "zz_test_op", cat.FaultKind.SEMANTIC, cat.FailureClass.FRESH_BUT_WRONG, (Stream.SPAT,), "phase", "", None,
        False, "test"))
    assert parse_spec(spec).faults[0].operator.value == "zz_test_op"
