"""Issue 41: a non-finite number (NaN, ±inf) is named as such, not as out of a bound it cannot be
compared with ("speed_mps NaN should be less than or equal to 40")."""

from __future__ import annotations

import math

import pytest

from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import parse_spec


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_speed_is_not_a_finite_number(value) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_spec({"application": "RLVW", "ego": {"speed_mps": value}})
    (v,) = info.value.violations
    assert v.field == "ego.speed_mps"
    assert "not a finite number" in v.description and "less than" not in v.description
    assert "finite" in v.hint and "bound is" in v.hint


def test_a_finite_speed_out_of_range_keeps_its_bound_message() -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_spec({"application": "RLVW", "ego": {"speed_mps": 41.0}})
    assert "less than or equal to 40" in info.value.violations[0].description
