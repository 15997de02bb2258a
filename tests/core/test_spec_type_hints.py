"""Bad input gets a repair hint (non-negotiable): a value of the wrong type or size in a spec names its field
and what to send instead, never an empty hint."""

from __future__ import annotations

import pytest

from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import parse_spec


@pytest.mark.parametrize(("patch", "field", "hint"), [
    ({"perception": {"equipped_see_signals": "maybe"}}, "perception.equipped_see_signals", "use true or false"),
    ({"seed": "seven"}, "seed", "use a whole number"),
    ({"seed": 1.5}, "seed", "use a whole number"),
    ({"duration_s": "long"}, "duration_s", "use a number"),
    ({"intent": 5}, "intent", "use a JSON string"),
    ({"intent": "x" * 4001}, "intent", "at most 4000 characters"),
    ({"faults": "drop"}, "faults", "use a JSON array"),
    ({"ego": 3}, "ego", "use a JSON object"),
    ({"agents": [{"id": f"a{i}", "role": "background"} for i in range(17)]}, "agents", "at most 16 items"),
])
def test_a_value_of_the_wrong_type_or_size_is_refused_with_what_to_send(patch: dict, field: str, hint: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_spec({"application": "GLOSA", **patch})
    (v,) = info.value.violations
    assert v.field == field and v.hint == hint
