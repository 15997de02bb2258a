"""A set written first (bench/data/parse_perception_blind.jsonl): 20 intents about whether the equipped driver still
watches the lights (perception.equipped_see_signals) and how far it sees them, by a helper who had not read the
parser: 12 that say so (5 with a distance), 4 where the driver does not look, 4 that speak of lights or seeing in
another sense. Read first: 12 of 20 wholly right (every negative right; 4 of 12 positives). Mended on that same set
('pays attention to', 'comply with', 'notices the red', 'keeps looking at', 'visibility of the lights to 25 m', 'can
see the signal heads from about 60 m', and 'can spot the red from 50 m away', which had been read as a BSM position
offset of 50 m, a fault the user never asked for): 20 of 20 after, an in-sample figure."""

from __future__ import annotations

from lastv2x.core.catalogue import SIGNAL_SIGHT_DISTANCE_M
from services.llm.config import LlmConfig
from services.llm.roles import LlmRoles
from tests.llm.blind_sets import over_blind_set

ROLES = LlmRoles(config=LlmConfig())


@over_blind_set("perception")
def test_the_blind_perception_set(item: dict) -> None:
    spec, labels = ROLES.parse_intent(item["text"], seed=3).spec, item["labels"]
    assert spec.application.value == labels["application"]
    per = spec.perception
    assert bool(per and per.equipped_see_signals) is labels["equipped_see_signals"]
    if labels["equipped_see_signals"]:
        assert per is not None
        want = labels["signal_sight_distance_m"]
        assert per.signal_sight_distance_m == (SIGNAL_SIGHT_DISTANCE_M if want is None else want)
    assert spec.faults == () or all(f.operator.value != "bsm_position_offset" for f in spec.faults)
