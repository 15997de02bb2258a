"""The OpenAI backend's prompts keep the long shared part first, so a server can reuse its KV cache.

llama.cpp (and vLLM's prefix cache) re-evaluate a prompt only from the first token that differs from a
cached one: anything intent- or seed-specific placed before the ~4.5k-token schema costs the whole schema
again on every call (minutes per intent on a 2-core CPU).
"""

from __future__ import annotations

import json
import os

from lastv2x.core.spec import spec_json_schema
from services.llm.fake_openai_server import FakeOpenAIServer, offline_model
from services.llm.roles import LlmRoles
from tests.llm.conftest import FREEZE_INTENT, openai_backend

SCHEMA_TEXT = json.dumps(spec_json_schema(), separators=(",", ":"))


def _systems(intents: list[tuple[str, int]]) -> list[tuple[str, str]]:
    with FakeOpenAIServer(offline_model) as server:
        roles = LlmRoles(openai_backend(server))
        for text, seed in intents:
            roles.parse_intent(text, seed)
        bodies = list(server.requests)
    out = []
    for body in bodies:
        system = body["messages"][0]["content"]
        out.append(("repair" if "repairing your previous answer" in system else "parser", system))
    return out


def test_intent_and_seed_specific_text_comes_after_the_schema() -> None:
    calls = _systems([(FREEZE_INTENT, 7), ("Forward collision warning with a lead car braking hard.", 123456)])
    by_role: dict[str, list[str]] = {}
    for role, system in calls:
        by_role.setdefault(role, []).append(system)
    assert len(by_role["parser"]) == 2 and by_role["repair"]  # the freeze intent needs a repair
    for role, systems in by_role.items():
        schema_end = systems[0].index(SCHEMA_TEXT) + len(SCHEMA_TEXT)
        assert "leaves open" not in systems[0][:schema_end], role  # the seed's assignment is not before it
        for other in systems[1:]:
            assert len(os.path.commonprefix([systems[0], other])) >= schema_end, role
    # the two seeds' assignments do differ, so the prompts differ only after the schema
    assert by_role["parser"][0] != by_role["parser"][1]


def test_no_default_application_is_offered_when_the_intent_names_one() -> None:
    """Seed defaults are for fields the intent leaves open: an intent naming its application gets no
    ``application_if_unstated`` to copy (a small model copied it), one naming none still gets it."""
    (_, named), = _systems([("Forward collision warning with a lead car braking hard.", 5)])[:1]
    (_, open_), = _systems([("A scenario in which half of the messages are lost.", 5)])[:1]
    assert "application_if_unstated" not in named and "town_if_unstated" in named
    assert "application_if_unstated" in open_
