"""The synthetic crossing's routes are remembered: a campaign's candidates share them, and a route laid afresh is the
same bytes."""

from __future__ import annotations

import json

from lastv2x.core import synthetic
from lastv2x.core.catalogue import Application
from lastv2x.core.spec import parse_spec
from services.simulator.reference import reference_spec


def test_candidates_that_differ_in_their_faults_share_their_routes() -> None:
    base = reference_spec(Application.IMA, seed=7)
    faulted = parse_spec({**json.loads(base.model_dump_json()), "faults": [
        {"name": "late", "operator": "delay", "stream": "BSM", "magnitude": 0.4}]})
    a = synthetic.program_from_spec_on_straight_roads(base)
    b = synthetic.program_from_spec_on_straight_roads(faulted)
    assert all(x.route is y.route for x, y in zip((a.ego, *a.agents), (b.ego, *b.agents), strict=True))
    synthetic._laid_route.cache_clear()  # laid afresh: the same bytes
    assert synthetic.program_from_spec_on_straight_roads(faulted).model_dump_json() == b.model_dump_json()
    nearer = synthetic.program_from_spec_on_straight_roads(base.model_copy(update={"ego": base.ego.model_copy(
        update={"start_distance_m": base.ego.start_distance_m + 30.0})}))
    assert nearer.ego.route != a.ego.route  # a longer approach is another route
