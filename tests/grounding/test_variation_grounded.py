"""Seeds that vary the world on a real map (issue 17, item 5): grounding draws as the synthetic builder does."""

from __future__ import annotations

import pytest

from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.spec import parse_spec
from tests.core.test_variation import BOUNDS, IMA, _world


def test_grounded_programs_vary_too(builtin_grounder):
    bounds = {**BOUNDS, "desired_speed_mps": {"min": 10.0, "max": 12.0}}
    spec = parse_spec({**IMA, "map": {"town": "signalized_4way_1lane", "busy": True}, "variation": bounds,
                       "ego": {"start_distance_m": 80.0}})
    a = builtin_grounder.ground(spec)
    b = builtin_grounder.ground(spec.model_copy(update={"seed": 1}))
    assert _world(a) != _world(b)
    assert a.spec == spec and "variation" in a.grounding.details
    assert all(0.8 <= v.reaction_time_s <= 1.6 for v in a.vehicles)
    assert _world(builtin_grounder.ground(spec)) == _world(a)
    late = spec.model_copy(update={"variation": spec.variation.model_copy(update={
        "arrival_jitter_s": spec.variation.arrival_jitter_s.model_copy(update={"min": 25.0, "max": 29.0})})})
    with pytest.raises(FailedPrecondition) as exc:  # a world that does not fit says what the seed drew
        builtin_grounder.ground(late)
    assert "drew" in exc.value.constraint and "another seed" in exc.value.alternative
