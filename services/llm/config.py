"""Configuration of the LLM service: one frozen dataclass, read once in ``main``.

``LlmConfig.from_env()`` reads ``LASTV2X_LLM_<FIELD>`` variables (``LASTV2X_LLM_OPENAI_<FIELD>``
for the endpoint); nothing else in the package reads the environment except the OpenAI backend resolving its API key
(from ``api_key_env`` or a mounted secret file ``api_key_file``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lastv2x.core.errors import FieldViolation, InvalidArgument
from lastv2x.core.map_hosting import load_catalogue_dir
from lastv2x.core.settings import fields_from_env
from services.llm.maps import BUILTIN_MAPS, MapView

DEFAULT_MAX_TEXT_CHARS = 4000


@dataclass(frozen=True)
class OpenAIConfig:
    """An OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, llama.cpp, ...)."""

    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o"
    api_key_env: str = "OPENAI_API_KEY"
    api_key_file: str | None = None  # a mounted secret; wins over the environment
    temperature: float = 0.2  # paper, Appendix F
    seed: int = 20240611  # fixed sampling seed (paper, Appendix F)
    timeout_s: float = 60.0  # per request
    max_retries: int = 3  # on 429 / 5xx / connection errors, after the first try
    backoff_s: float = 0.5  # first retry delay; doubles each retry
    max_backoff_s: float = 8.0  # cap, also for Retry-After
    max_output_tokens: int = 2048
    token_budget_per_campaign: int = 200_000  # prompt + completion tokens
    structured_output: str = "auto"  # auto | json_schema | json_object_schema | json_object | none

    def __post_init__(self) -> None:
        bad = []
        if self.structured_output not in ("auto", "json_schema", "json_object_schema", "json_object", "none"):
            bad.append(FieldViolation("structured_output", f"unknown mode {self.structured_output!r}",
                                      "auto, json_schema, json_object_schema, json_object or none"))
        if not 0.0 <= self.temperature <= 2.0:
            bad.append(FieldViolation("temperature", "outside [0, 2]"))
        for name in ("timeout_s", "backoff_s", "max_backoff_s"):
            if getattr(self, name) < 0:
                bad.append(FieldViolation(name, "must be >= 0"))
        for name in ("max_retries",):
            if getattr(self, name) < 0:
                bad.append(FieldViolation(name, "must be >= 0"))
        for name in ("max_output_tokens", "token_budget_per_campaign"):
            if getattr(self, name) < 1:
                bad.append(FieldViolation(name, "must be >= 1"))
        if not self.base_url.startswith(("http://", "https://")):
            bad.append(FieldViolation("base_url", f"not an http(s) URL: {self.base_url!r}"))
        if bad:
            raise InvalidArgument(bad)


@dataclass(frozen=True)
class LlmConfig:
    backend: str = "offline"  # a name in the backend registry
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    max_attempts: int = 3  # parse-repair attempts per intent
    plan_attempts: int = 2
    reflect_attempts: int = 2
    # Towns an intent leaves open are assigned among these: maps the grounding catalogue serves
    # (the built-in maps; the CARLA towns when grounding has LASTV2X_MAP_PATHS pointing at them).
    assignable_maps: tuple[str, ...] = BUILTIN_MAPS
    # The grounding catalogue's directory (its LASTV2X_GROUNDING_CACHE_DIR): when set, a town is assigned only
    # when one of its catalogued junctions can host the request (a signal app: a signalized junction).
    map_catalogue: str | None = None
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)

    def __post_init__(self) -> None:
        if self.max_text_chars < 1:
            raise InvalidArgument(FieldViolation("max_text_chars", "must be >= 1"))
        for name in ("max_attempts", "plan_attempts", "reflect_attempts"):
            if not 1 <= getattr(self, name) <= 10:
                raise InvalidArgument(FieldViolation(name, "must be in [1, 10]"))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LlmConfig:
        """Read ``LASTV2X_LLM_<FIELD>`` (and ``LASTV2X_LLM_OPENAI_<FIELD>``) variables."""
        env = os.environ if env is None else env
        top = fields_from_env(cls, env, "LASTV2X_LLM_", skip=("openai",))
        sub = fields_from_env(OpenAIConfig, env, "LASTV2X_LLM_OPENAI_")
        return cls(**top, openai=OpenAIConfig(**sub))

    def map_view(self) -> MapView:
        """What the roles may assume about the maps: the one place open towns are drawn from,
        for the service and for every in-process caller (``lastv2x parse``, the demo)."""
        if self.map_catalogue:
            return MapView.from_hosting(load_catalogue_dir(self.map_catalogue), self.assignable_maps)
        return MapView(assignable=self.assignable_maps)

    def with_openai(self, **changes: Any) -> LlmConfig:
        return replace(self, openai=replace(self.openai, **changes))


