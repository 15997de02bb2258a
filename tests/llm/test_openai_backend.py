"""The OpenAI-compatible backend against a real HTTP peer speaking Chat Completions."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from lastv2x.core.errors import FailedPrecondition, ResourceExhausted, Unavailable
from lastv2x.core.spec import spec_json_schema
from services.llm.backends.openai_compat import OpenAIBackend, extract_json, resolve_api_key
from services.llm.config import OpenAIConfig
from services.llm.errors import MalformedOutput
from services.llm.fake_openai_server import FakeOpenAIServer, FakeReply, offline_model
from services.llm.roles import LlmRoles
from tests.llm.conftest import FREEZE_INTENT, Sleeps, openai_backend

SPEC = {"application": "IMA", "agents": [{"id": "cross", "role": "cross"}]}


def test_request_wire_format(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue(SPEC)
    res = LlmRoles(openai_backend(fake_server)).parse_intent("IMA with cross traffic.", 9)
    assert res.backend == "openai:fake-gpt" and res.spec.application.value == "IMA" and res.spec.seed == 9
    (body,) = fake_server.requests
    assert body["model"] == "fake-gpt" and body["temperature"] == 0.2 and body["seed"] == 20240611
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "ScenarioSpec"
    assert fmt["json_schema"]["schema"] == spec_json_schema()
    system, user = body["messages"]
    assert system["role"] == "system" and system["content"].startswith("You are the scenario parser")
    assert user["role"] == "user" and '"intent": "IMA with cross traffic."' in user["content"]
    assert fake_server.headers[0]["authorization"] == "Bearer sk-test"
    assert "prompt parser.v1" in res.notes and "structured output json_schema" in res.notes


def test_falls_back_to_json_mode_and_remembers(sleeps: Sleeps) -> None:
    with FakeOpenAIServer(json_schema_supported=False) as server:
        server.enqueue(SPEC, SPEC)
        backend = openai_backend(server, sleeps)
        roles = LlmRoles(backend)
        roles.parse_intent("IMA with cross traffic.", 1)
        roles.parse_intent("IMA with cross traffic.", 2)
        kinds = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert "ScenarioSpec JSON Schema" in server.requests[1]["messages"][0]["content"]  # schema in the prompt
    assert not sleeps  # a format fallback is not a retry


def test_a_500_naming_the_response_format_falls_back_without_retries(sleeps: Sleeps) -> None:
    # llama-cpp-python's server (seen live with SmolLM2) rejects json_schema with HTTP 500
    with FakeOpenAIServer(json_schema_supported=False, unsupported_format_status=500) as server:
        server.enqueue(SPEC)
        res = LlmRoles(openai_backend(server, sleeps)).parse_intent("IMA with cross traffic.", 1)
        kinds = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert res.ok and kinds == ["json_schema", "json_object"] and not sleeps


def test_retries_429_and_500_with_backoff(fake_server: FakeOpenAIServer, sleeps: Sleeps) -> None:
    fake_server.enqueue(FakeReply(status=429, error_type="rate_limit_error", headers={"Retry-After": "0.05"}),
                        FakeReply(status=500), FakeReply(status=503), SPEC)
    res = LlmRoles(openai_backend(fake_server, sleeps)).parse_intent("IMA", 1)
    assert res.ok and len(fake_server.requests) == 4
    assert sleeps == [pytest.approx(0.05), pytest.approx(0.02), pytest.approx(0.04)]  # Retry-After, then 2x


def test_persistent_5xx_is_unavailable_naming_the_url(fake_server: FakeOpenAIServer, sleeps: Sleeps) -> None:
    fake_server.enqueue(*[FakeReply(status=500)] * 4)
    with pytest.raises(Unavailable) as err:
        LlmRoles(openai_backend(fake_server, sleeps, max_retries=3)).parse_intent("IMA", 1)
    assert fake_server.url in str(err.value) and "HTTP 500" in str(err.value) and "4 attempt" in str(err.value)
    assert len(fake_server.requests) == 4 and len(sleeps) == 3


def test_unreachable_endpoint_is_unavailable(sleeps: Sleeps) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    url = f"http://127.0.0.1:{port}/v1"
    backend = OpenAIBackend(OpenAIConfig(base_url=url, timeout_s=1.0, max_retries=2, backoff_s=0.01),
                            sleep=sleeps, environ={})
    t0 = time.perf_counter()
    with pytest.raises(Unavailable) as err:
        LlmRoles(backend).parse_intent("IMA", 1)
    assert url in str(err.value) and "APIConnectionError" in str(err.value)
    assert len(sleeps) == 2 and time.perf_counter() - t0 < 5


def test_timeout_is_bounded(fake_server: FakeOpenAIServer, sleeps: Sleeps) -> None:
    fake_server.enqueue(FakeReply(content=SPEC, delay_s=1.0), FakeReply(content=SPEC, delay_s=1.0))
    with pytest.raises(Unavailable) as err:
        LlmRoles(openai_backend(fake_server, sleeps, timeout_s=0.2, max_retries=1)).parse_intent("IMA", 1)
    assert "APITimeoutError" in str(err.value)


def test_quota_is_resource_exhausted_without_retry(fake_server: FakeOpenAIServer, sleeps: Sleeps) -> None:
    fake_server.enqueue(FakeReply(status=429, error_type="insufficient_quota", error_code="insufficient_quota"))
    with pytest.raises(ResourceExhausted):
        LlmRoles(openai_backend(fake_server, sleeps)).parse_intent("IMA", 1)
    assert not sleeps


def test_bad_credentials_fail_fast(sleeps: Sleeps) -> None:
    with FakeOpenAIServer(api_key="sk-right") as server:
        with pytest.raises(FailedPrecondition) as err:
            LlmRoles(openai_backend(server, sleeps)).parse_intent("IMA", 1)
    assert "credentials" in str(err.value) and "sk-test" not in str(err.value) and not sleeps


def test_token_budget_per_campaign(fake_server: FakeOpenAIServer) -> None:
    fake_server.responder = lambda body: FakeReply(content=SPEC, prompt_tokens=9000, completion_tokens=1000)
    roles = LlmRoles(openai_backend(fake_server, token_budget_per_campaign=20_500))
    roles.parse_intent("IMA", 1, campaign="c1")
    roles.parse_intent("IMA", 2, campaign="c1")
    with pytest.raises(ResourceExhausted) as err:
        roles.parse_intent("IMA", 3, campaign="c1")
    assert "'c1'" in str(err.value)
    assert len(fake_server.requests) == 2  # refused before sending
    roles.parse_intent("IMA", 4, campaign="c2")  # other campaigns keep their own budget
    assert roles.backend.budget("c1").used == 20_000


def test_api_key_from_a_mounted_secret_file(tmp_path: Path) -> None:
    secret = tmp_path / "openai-key"
    secret.write_text("sk-from-file\n")
    with FakeOpenAIServer(api_key="sk-from-file") as server:
        server.enqueue(SPEC)
        backend = OpenAIBackend(OpenAIConfig(base_url=server.url, api_key_file=str(secret)),
                                environ={"OPENAI_API_KEY": "sk-env"})
        assert LlmRoles(backend).parse_intent("IMA", 1).ok
    assert "sk-from-file" not in repr(backend)


def test_api_key_resolution_errors(tmp_path: Path) -> None:
    with pytest.raises(FailedPrecondition):
        resolve_api_key(OpenAIConfig(api_key_file=str(tmp_path / "missing")), {})
    with pytest.raises(FailedPrecondition) as err:
        resolve_api_key(OpenAIConfig(), {})  # api.openai.com needs a key
    assert "OPENAI_API_KEY" in err.value.alternative
    assert resolve_api_key(OpenAIConfig(), {"OPENAI_API_KEY": "sk-x"}) == "sk-x"
    assert resolve_api_key(OpenAIConfig(base_url="http://127.0.0.1:1/v1"), {}) == "not-needed"


@pytest.mark.parametrize(("content", "ok"), [
    ('{"a": 1}', True), ('```json\n{"a": 1}\n```', True), ('Here it is: {"a": 1} hope it helps', True),
    ("[1, 2]", False), ("def f(): pass", False), ("", False), (None, False),
])
def test_extract_json(content: str | None, ok: bool) -> None:
    if ok:
        assert extract_json(content) == {"a": 1}
    else:
        with pytest.raises(MalformedOutput):
            extract_json(content)


def test_truncated_answer_is_repaired(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue(FakeReply(content='{"application": "IM', finish_reason="length"), SPEC)
    res = LlmRoles(openai_backend(fake_server)).parse_intent("IMA", 1)
    assert res.attempts_used == 2
    assert "cut off" in fake_server.requests[1]["messages"][1]["content"]


def test_end_to_end_matches_the_offline_backend() -> None:
    with FakeOpenAIServer(offline_model) as server:
        res = LlmRoles(openai_backend(server)).parse_intent(FREEZE_INTENT, 7)
        repair_body = server.requests[1]
    offline = LlmRoles().parse_intent(FREEZE_INTENT, 7)
    assert res.spec == offline.spec and res.attempts_used == offline.attempts_used == 2
    assert res.backend == "openai:fake-gpt"
    assert "decision_window" in repair_body["messages"][1]["content"]  # findings went into the repair prompt


def test_without_json_schema_the_schema_still_constrains_json_mode(sleeps: Sleeps) -> None:
    """llama-cpp-python's server refuses json_schema but builds a grammar from json_object's "schema"."""
    with FakeOpenAIServer(json_schema_supported=False, unsupported_format_status=500) as server:
        server.enqueue(SPEC)
        backend = openai_backend(server, sleeps)
        res = LlmRoles(backend).parse_intent("IMA with cross traffic.", 1)
        formats = [r.get("response_format") for r in server.requests]
    assert res.ok and formats[0]["type"] == "json_schema"
    sent = formats[1]
    assert sent["type"] == "json_object" and "intent" not in sent["schema"]["properties"]
    assert "maxLength" not in json.dumps(sent["schema"]) and set(sent["schema"]["properties"]) == \
        set(spec_json_schema()["properties"]) - {"intent"}
    assert "structured output json_object_schema" in res.notes and backend._mode == "json_object_schema"
