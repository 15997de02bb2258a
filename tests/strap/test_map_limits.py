"""Issue 41: a hostile channel map is refused early, INVALID_ARGUMENT at ``channel_map`` naming the JSON
path and the limit, before it costs memory or seconds (a 3 MB map of 1,500 rules with 1,000-segment paths
cost +352 MB RSS before "nested too deeply"; 20,000 rules were accepted in 6.5 s)."""

from __future__ import annotations

import json
import resource
import time

import pytest

from lastv2x.core.errors import InvalidArgument
from services.strap.map_schema import MAX_MAP_BYTES, MAX_MAP_DEPTH, MAX_MAP_RULES, MAX_PATH_SEGMENTS
from services.strap.store import _map


def _platform(rules: list[dict], **extra: object) -> str:
    return json.dumps({"name": "hostile", "channels": {"/gt/ego": {"rules": rules}}, **extra})


def _refused(text: str) -> tuple[str, str]:
    with pytest.raises(InvalidArgument) as err:
        _map(text, "platform_trace", ["/gt/ego"])
    (v,) = err.value.violations
    assert v.field == "channel_map"
    return v.description, v.hint


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_the_3_mb_map_of_deep_paths_is_refused_before_it_is_parsed() -> None:
    deep = ".".join(["a"] * 1000)
    text = _platform([{"feature": "ego_speed", "path": deep} for _ in range(1500)])
    assert len(text) > 2_900_000
    before, t0 = _peak_mib(), time.perf_counter()
    problem, _ = _refused(text)
    assert f"limit of {MAX_MAP_BYTES} bytes" in problem and "MAX_MAP_BYTES" in problem
    assert _peak_mib() - before < 16 and time.perf_counter() - t0 < 1.0


def test_too_many_rules_are_refused_naming_the_limit() -> None:
    problem, hint = _refused(_platform([{"feature": "ego_speed"}] * (MAX_MAP_RULES + 500)))
    assert '$.channels["/gt/ego"].rules' in problem and f"limit of {MAX_MAP_RULES}" in problem
    assert "MAX_MAP_RULES" in problem and hint


def test_a_deep_path_is_refused_naming_the_rule() -> None:
    problem, _ = _refused(_platform([{"feature": "ego_speed", "path": ".".join(["a"] * 1000)}]))
    assert '$.channels["/gt/ego"].rules[0].path' in problem and f"limit of {MAX_PATH_SEGMENTS}" in problem


def test_deep_nesting_is_refused_before_json_loads() -> None:
    text = '{"name": "x", "channels": ' + "[" * 5000 + "]" * 5000 + "}"
    problem, _ = _refused(text)
    assert f"limit of {MAX_MAP_DEPTH} levels" in problem


def test_the_built_in_maps_are_within_every_limit() -> None:
    from services.strap.scene_schema import BUILTIN_MAPS, SCHEMA_DIR

    for name in BUILTIN_MAPS:
        text = (SCHEMA_DIR / f"channels_{name}.json").read_text()
        _map(text, "platform_trace", [])  # inline, as a client would send it: accepted
