"""Backend registry, configuration, prompt files and package hygiene."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lastv2x.core.errors import InvalidArgument
from services.llm.backends import (
    BACKENDS,
    Backend,
    BackendRegistry,
    create_backend,
    default_registry,
)
from services.llm.backends.offline import OfflineBackend, reset_field
from services.llm.backends.openai_compat import OpenAIBackend
from services.llm.config import LlmConfig, OpenAIConfig
from services.llm.maps import MapView, canonical_map_name
from services.llm.prompting import ROLES, load_prompt

PACKAGE = Path(__file__).resolve().parents[2] / "services" / "llm"


def test_registry_rejects_duplicates_and_unknown_names() -> None:
    registry = default_registry()
    assert sorted(registry) == ["offline", "openai"] == sorted(BACKENDS)
    with pytest.raises(ValueError, match="duplicate LLM backend 'offline'"):
        registry.register("offline", lambda config: OfflineBackend())
    with pytest.raises(InvalidArgument) as err:
        create_backend(LlmConfig(backend="gpt5-magic"))
    assert err.value.violations[0].field == "backend"


def test_registry_checks_the_protocol() -> None:
    registry = BackendRegistry("LLM backend")
    registry.register("broken", lambda config: object())  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError):
        registry.create(LlmConfig(backend="broken"))


def test_backends_satisfy_the_protocol() -> None:
    assert isinstance(create_backend(LlmConfig()), OfflineBackend)
    assert isinstance(OfflineBackend(), Backend)
    backend = OpenAIBackend(OpenAIConfig(base_url="http://127.0.0.1:9/v1"), environ={})
    assert isinstance(backend, Backend) and backend.name == "openai:gpt-4o"


def test_config_from_env() -> None:
    cfg = LlmConfig.from_env({"LASTV2X_LLM_BACKEND": "openai", "LASTV2X_LLM_MAX_TEXT_CHARS": "2000",
                              "LASTV2X_LLM_OPENAI_BASE_URL": "http://vllm:8000/v1",
                              "LASTV2X_LLM_OPENAI_MODEL": "qwen", "LASTV2X_LLM_OPENAI_TEMPERATURE": "0.2",
                              "LASTV2X_LLM_OPENAI_API_KEY_FILE": "/var/run/secrets/openai",
                              "LASTV2X_LLM_OPENAI_TOKEN_BUDGET_PER_CAMPAIGN": "5000"})
    assert cfg.backend == "openai" and cfg.max_text_chars == 2000
    assert cfg.openai.base_url == "http://vllm:8000/v1" and cfg.openai.model == "qwen"
    assert cfg.openai.api_key_file == "/var/run/secrets/openai" and cfg.openai.token_budget_per_campaign == 5000
    assert LlmConfig.from_env({}) == LlmConfig()


@pytest.mark.parametrize(("env", "field"), [
    ({"LASTV2X_LLM_MAX_ATTEMPTS": "many"}, "LASTV2X_LLM_MAX_ATTEMPTS"),
    ({"LASTV2X_LLM_MAX_ATTEMPTS": "0"}, "max_attempts"),
    ({"LASTV2X_LLM_OPENAI_BASE_URL": "ftp://x"}, "base_url"),
    ({"LASTV2X_LLM_OPENAI_STRUCTURED_OUTPUT": "xml"}, "structured_output"),
])
def test_bad_config_names_the_field(env: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        LlmConfig.from_env(env)
    assert err.value.violations[0].field == field


def test_paper_sampling_defaults() -> None:
    cfg = OpenAIConfig()
    assert cfg.temperature == 0.2 and isinstance(cfg.seed, int) and cfg.model == "gpt-4o"


@pytest.mark.parametrize("role", ROLES)
def test_prompt_files_are_versioned_and_render(role: str) -> None:
    prompt = load_prompt(role, "v1")
    assert prompt.label == f"{role}.v1"
    assert (PACKAGE / "prompts" / f"{role}.v1.md").read_text().startswith(f"<!-- prompt: {role} v1 -->")
    text = prompt.render(**dict.fromkeys(prompt.placeholders(), "X"))
    assert "$" not in text.replace("$ref", "")
    assert "JSON object" in text


def test_unknown_prompt_version() -> None:
    with pytest.raises(FileNotFoundError):
        load_prompt("parser", "v999")


def test_knowledge_file_is_valid_json() -> None:
    data = json.loads((PACKAGE / "knowledge" / "reflection_notes.v1.json").read_text())
    assert data["version"] == "v1" and all({"id", "title", "note", "revision"} <= set(n) for n in data["notes"])


def test_map_view() -> None:
    view = MapView()
    assert canonical_map_name("town 3") == "Town03" and canonical_map_name("Town10") == "Town10HD"
    assert view.get("TOWN05").name == "Town05"
    assert view.candidates(view.get("t_junction").junction_kinds.__iter__().__next__())
    with pytest.raises(ValueError):
        MapView(maps=view.maps + view.maps[:1])
    custom = MapView.from_names(["MyCity"])
    assert custom.names == ("MyCity",) and custom.assignable == ("MyCity",)


def test_reset_field() -> None:
    data = {"ego": {"speed_mps": 99}, "agents": [{"id": "a"}, {"id": "b"}]}
    assert reset_field(data, "ego.speed_mps") == {"ego": {}, "agents": data["agents"]}
    assert reset_field(data, "agents[0]")["agents"] == [{"id": "b"}]
    assert reset_field(data, "nope.deeper[3]") == data
