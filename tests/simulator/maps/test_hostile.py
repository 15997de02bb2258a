"""Hostile OpenDRIVE input is rejected with a typed MapError before carla sees it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.simulator.maps import Limits, LoadOptions, MapError, builtin_sources, load_xodr
from services.simulator.maps.xodr_facts import inspect_xodr

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<OpenDRIVE><header name="&lol9;"/></OpenDRIVE>
"""
XXE = """<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<OpenDRIVE><header name="&x;"/></OpenDRIVE>"""

ROAD = ('<road id="1" length="100" junction="-1"><planView>'
        '<geometry s="0" x="0" y="0" hdg="0" length="100"><line/></geometry></planView>{lanes}'
        "</road>")
LANES = ('<lanes><laneSection s="0"><center><lane id="0" type="none"/></center><right>'
         '<lane id="-1" type="{kind}"><width sOffset="0" a="3.5" b="0" c="0" d="0"/></lane>'
         "</right></laneSection></lanes>")


def odr(*roads: str) -> str:
    return '<?xml version="1.0"?><OpenDRIVE><header/>' + "".join(roads) + "</OpenDRIVE>"


CASES = {
    "plain text": ("hello, I am not a map", "not XML"),
    "json": ('{"OpenDRIVE": []}', "not XML"),
    "binary": (b"\x89PNG\r\n\x1a\n\xff\xfe\x00", "not UTF-8"),
    "billion laughs": (BILLION_LAUGHS, "DOCTYPE/ENTITY"),
    "external entity": (XXE, "DOCTYPE/ENTITY"),
    "bare doctype": ('<!DOCTYPE OpenDRIVE><OpenDRIVE/>', "DOCTYPE/ENTITY"),
    "malformed": ("<OpenDRIVE><road></OpenDRIVE>", "well-formed"),
    "wrong root": ("<svg><road/></svg>", "not <OpenDRIVE>"),
    "no roads": (odr(), "no <road>"),
    "road without lanes": (odr(ROAD.format(lanes="")), "no lanes"),
    "only a centre lane": (odr(ROAD.format(lanes=(
        '<lanes><laneSection s="0"><center><lane id="0" type="none"/></center>'
        "</laneSection></lanes>"))), "no lanes besides the centre"),
    "no driving lane": (odr(ROAD.format(lanes=LANES.format(kind="sidewalk"))), "no driving"),
    "nan geometry": (odr(ROAD.format(lanes=LANES.format(kind="driving")).replace(
        'hdg="0"', 'hdg="nan"')), "not finite"),
    "duplicate road id": (odr(ROAD.format(lanes=LANES.format(kind="driving")) * 2), "duplicated"),
    "no planView": (odr('<road id="1" length="5"><lanes/></road>'), "planView"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_input_raises_map_error_with_reason(case):
    data, reason = CASES[case]
    with pytest.raises(MapError) as info:
        load_xodr(data, name=f"hostile-{case}")
    assert reason in info.value.reason
    assert info.value.name == f"hostile-{case}"
    assert isinstance(info.value, ValueError)


def test_oversized_text_and_file_rejected_before_parsing(tmp_path):
    xodr, _ = builtin_sources("t_junction")
    small = LoadOptions(limits=Limits(max_bytes=1024))
    with pytest.raises(MapError, match="cap"):
        load_xodr(xodr, "big", options=small)
    big = tmp_path / "big.xodr"
    big.write_bytes(b"<" + b" " * 5000)  # never read: the stat size is over the cap
    with pytest.raises(MapError, match="cap"):
        load_xodr(big, options=small)
    with pytest.raises(MapError, match="total road length"):
        load_xodr(xodr, "long", options=LoadOptions(limits=Limits(max_total_road_length_m=10)))
    with pytest.raises(MapError, match="driving-lane length"):
        load_xodr(xodr, "wide", options=LoadOptions(limits=Limits(max_total_lane_length_m=200)))


def test_default_cap_is_64_mib():
    assert Limits().max_bytes == 64 * 1024 * 1024


def test_carla_parser_errors_become_map_errors(carla_parser):
    xodr, _ = builtin_sources("t_junction")
    broken = xodr.replace('connectingRoad="1001"', 'connectingRoad="7777"')
    with pytest.raises(MapError, match="carla could not parse"):
        load_xodr(broken, "dangling-connection")


def test_missing_file_is_a_map_error(tmp_path):
    with pytest.raises(MapError, match="cannot read"):
        load_xodr(tmp_path / "nope.xodr")


def test_good_map_still_loads_after_hostile_inputs(carla_parser):
    xodr, _ = builtin_sources("signalized_4way")
    before = load_xodr(xodr, "good")
    for data, _reason in CASES.values():
        with pytest.raises(MapError):
            load_xodr(data, "bad")
    after = load_xodr(xodr, "good")
    assert after.content_sha256 == before.content_sha256
    assert after.summary() == before.summary() and after.summary()["movements"] == 12


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300),
                 st.text(alphabet="<>/!?=\" OpenDRIVEroadlanes", max_size=200)))
def test_guard_only_ever_raises_map_error(data):
    try:
        inspect_xodr(data, "fuzz")
    except MapError as exc:
        assert exc.reason
