"""OpenAI-compatible backend: any Chat Completions endpoint through the official client.

GPT-4o, vLLM, llama.cpp (``llama_cpp.server``) and other servers that speak
``POST /v1/chat/completions``. Sampling follows the paper (temperature 0.2, a fixed
seed). Each role asks for JSON-schema structured output (``response_format`` of
type ``json_schema``); a server that rejects it is asked again in JSON mode carrying
the schema (``json_object_schema``: ``{"type": "json_object", "schema": ...}``, which
llama-cpp-python's server turns into a grammar, so the answer is still constrained to
the schema), then in plain JSON mode (``json_object``) and then with no response
format, the schema being in the prompt either way; whatever comes back is validated by the role layer. The mode
that worked is remembered for later calls.

Transport policy (the client's own retries are off, so this policy is the only one):
* 429 / 5xx / connection errors / timeouts: bounded retries with exponential
  backoff (``backoff_s * 2**k``, capped, ``Retry-After`` honoured); then
  ``Unavailable`` naming the endpoint URL;
* 429 with ``insufficient_quota``: ``ResourceExhausted`` at once (not transient);
* 401 / 403 / 404: ``FailedPrecondition`` (credentials, model name);
* a per-campaign token budget (prompt + completion tokens): a call that could
  overrun it is refused before it is sent, with ``ResourceExhausted``.

The API key comes from a mounted secret file (``api_key_file``) or the environment
(``api_key_env``, default ``OPENAI_API_KEY``); it is never logged or put in errors.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import openai

from lastv2x.core.catalogue import APPLICATIONS
from lastv2x.core.errors import FailedPrecondition, ResourceExhausted, Unavailable
from lastv2x.core.spec import spec_json_schema
from services.llm.backends.base import (
    ParseRequest,
    PlanRequest,
    ReflectRequest,
    RepairRequest,
    RoleReply,
)
from services.llm.config import OpenAIConfig
from services.llm.errors import MalformedOutput
from services.llm.knowledge import render_notes
from services.llm.prompting import DEFAULT_VERSION, load_prompt

MODES = ("json_schema", "json_object_schema", "json_object", "none")
MIN_OUTPUT_TOKENS = 256  # a call that cannot afford this much answer is refused
_FORMAT_HINT = re.compile(r"response_format|json_schema|json_object|structured|schema", re.IGNORECASE)


@dataclass
class TokenBudget:
    """Prompt + completion tokens one campaign may spend; thread-safe."""

    limit: int
    used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    def check(self, campaign: str, need: int) -> None:
        with self._lock:
            if need > self.limit - self.used:
                raise ResourceExhausted(f"token budget of campaign {campaign!r} exhausted: {self.used} of "
                                        f"{self.limit} tokens used, the next call needs about {need}")

    def charge(self, tokens: int) -> None:
        with self._lock:
            self.used += max(0, int(tokens))


def resolve_api_key(config: OpenAIConfig, environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    if config.api_key_file:
        try:
            with open(config.api_key_file, encoding="utf-8") as fh:
                key = fh.read().strip()
        except OSError as exc:
            raise FailedPrecondition(f"cannot read the API key file {config.api_key_file}: {exc.strerror}",
                                     "mount the secret or unset api_key_file") from None
        if not key:
            raise FailedPrecondition(f"the API key file {config.api_key_file} is empty")
        return key
    key = env.get(config.api_key_env, "").strip()
    if key:
        return key
    if (urlparse(config.base_url).hostname or "").endswith("openai.com"):
        raise FailedPrecondition(f"no API key for {config.base_url}",
                                 f"set {config.api_key_env} or api_key_file")
    return "not-needed"  # local servers (llama.cpp, vLLM) usually run without auth


def extract_json(content: str | None) -> dict[str, Any]:
    """The one JSON object in a completion (tolerates markdown fences and surrounding prose)."""
    if content is None or not content.strip():
        raise MalformedOutput("the model returned no content", content or "")
    text = content.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidates = [text] + ([fenced.group(1)] if fenced else [])
    if "{" in text:
        candidates.append(text[text.index("{"):text.rindex("}") + 1])
    for cand in candidates:
        try:
            data = json.loads(cand)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
        raise MalformedOutput(f"expected a JSON object, got {type(data).__name__}", content)
    raise MalformedOutput("the answer is not JSON", content)


def plan_schema(agent_ids: list[str], candidate_ids: list[str]) -> dict[str, Any]:
    return {
        "type": "object", "additionalProperties": False, "required": ["assignments", "rationale"],
        "properties": {
            "assignments": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["agent_id", "candidate_id", "lane_id"],
                "properties": {"agent_id": {"type": "string", "enum": agent_ids},
                               "candidate_id": {"type": "string", "enum": candidate_ids},
                               "lane_id": {"type": "string"}}}},
            "rationale": {"type": "string"}}}


def reflection_schema(rule_ids: list[str]) -> dict[str, Any]:
    edit = {"type": "object", "additionalProperties": False, "required": ["path", "value", "rule"],
            "properties": {"path": {"type": "string"}, "value": {}, "rule": {"type": "string", "enum": rule_ids}}}
    return {"type": "object", "additionalProperties": False, "required": ["diagnosis", "revised_prompt", "rule_ids"],
            "properties": {"diagnosis": {"type": "string"}, "revised_prompt": {"type": "string"},
                           "rule_ids": {"type": "array", "items": {"type": "string", "enum": rule_ids}},
                           "edits": {"type": "array", "items": edit}}}


class OpenAIBackend:
    """The three roles over a Chat Completions endpoint (see the module docstring)."""

    name = "openai"

    def __init__(self, config: OpenAIConfig | None = None, *, client: Any = None,
                 sleep: Callable[[float], None] = time.sleep, prompt_version: str = DEFAULT_VERSION,
                 environ: dict[str, str] | None = None):
        self.config = config or OpenAIConfig()
        self.name = f"openai:{self.config.model}"  # the label results carry: backend and model
        self.prompt_version = prompt_version
        self._sleep = sleep
        self._client = client or openai.OpenAI(base_url=self.config.base_url,
                                               api_key=resolve_api_key(self.config, environ),
                                               timeout=self.config.timeout_s, max_retries=0)
        self._mode: str | None = None if self.config.structured_output == "auto" else self.config.structured_output
        self._budgets: dict[str, TokenBudget] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIBackend(base_url={self.config.base_url!r}, model={self.config.model!r})"

    def budget(self, campaign: str) -> TokenBudget:
        with self._lock:
            return self._budgets.setdefault(campaign, TokenBudget(self.config.token_budget_per_campaign))

    # ── roles ─────────────────────────────────────────────────────────────
    def _spec_prompt(self, role: str, maps: Any, assignment: dict[str, Any]) -> str:
        return load_prompt(role, self.prompt_version).render(
            schema=json.dumps(spec_json_schema(), separators=(",", ":")),
            maps=", ".join(maps.names), assignment=json.dumps(assignment))

    def parse(self, request: ParseRequest) -> RoleReply:
        system = self._spec_prompt("parser", request.maps, request.assignment)
        user = {"intent": request.text, "seed": request.seed}
        return self._complete("parser", system, user, spec_json_schema(), "ScenarioSpec", request.campaign)

    def repair(self, request: RepairRequest) -> RoleReply:
        system = self._spec_prompt("repair", request.maps, request.assignment)
        user = {"intent": request.text, "seed": request.seed, "attempt": request.attempt,
                "previous_answer": request.previous if request.previous is not None else request.raw,
                "problems": list(request.problems)}
        return self._complete("repair", system, user, spec_json_schema(), "ScenarioSpec", request.campaign)

    def plan(self, request: PlanRequest) -> RoleReply:
        spec = request.spec
        roles = [{"agent_id": "ego", "role": "ego", "turn": spec.ego.maneuver.value}] + [
            {"agent_id": a.id, "role": a.role.value, "turn": a.maneuver.value} for a in spec.agents]
        system = load_prompt("planner", self.prompt_version).render(problems=_problems_text(request.problems))
        user = {"application": spec.application.value, "app_kind": APPLICATIONS[spec.application].kind.value,
                "signalized": spec.map.signalized, "roles": roles, "seed": spec.seed,
                "spec": spec.model_dump(mode="json"),
                "candidates": [c.to_dict() for c in request.candidates]}
        if request.previous is not None:
            user["previous_answer"] = request.previous
        schema = plan_schema([r["agent_id"] for r in roles], [c.candidate_id for c in request.candidates])
        return self._complete("planner", system, user, schema, "ScenePlan", request.campaign)

    def reflect(self, request: ReflectRequest) -> RoleReply:
        system = load_prompt("reflector", self.prompt_version).render(
            notes=render_notes(request.notes), problems=_problems_text(request.problems))
        user: dict[str, Any] = {"prompt": request.prompt, "evidence_digest": request.digest.to_dict()}
        if request.spec is not None:
            user["spec"] = request.spec
        if request.previous is not None:
            user["previous_answer"] = request.previous
        return self._complete("reflector", system, user, reflection_schema([n.id for n in request.notes]),
                              "Reflection", request.campaign)

    # ── transport ─────────────────────────────────────────────────────────
    def _complete(self, role: str, system: str, user: dict[str, Any], schema: dict[str, Any], schema_name: str,
                  campaign: str) -> RoleReply:
        user_text = json.dumps(user, ensure_ascii=False)
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user_text}]
        budget = self.budget(campaign)
        prompt_estimate = (len(system) + len(user_text)) // 3 + 16  # conservative chars -> tokens
        min_output = min(MIN_OUTPUT_TOKENS, self.config.max_output_tokens)
        budget.check(campaign, prompt_estimate + min_output)
        max_tokens = max(min_output, min(self.config.max_output_tokens, budget.remaining - prompt_estimate))
        modes = [self._mode] if self._mode else list(MODES)
        last_format_error: Exception | None = None
        for mode in modes:
            try:
                response = self._call(messages, mode, schema, schema_name, max_tokens)
            except (openai.BadRequestError, _FormatRejected) as exc:
                if mode != "none" and self._mode is None and _FORMAT_HINT.search(str(exc)):
                    last_format_error = exc
                    continue  # the server lacks this structured-output mode: try the next one
                raise FailedPrecondition(f"LLM endpoint {self.config.base_url} rejected the request: "
                                         f"{_error_text(exc)}") from None
            self._mode = mode
            usage = getattr(response, "usage", None)
            tokens = int(getattr(usage, "total_tokens", 0) or 0) or prompt_estimate + 1
            budget.charge(tokens)
            choice = response.choices[0] if response.choices else None
            content = choice.message.content if choice is not None else None
            if choice is not None and choice.finish_reason == "length":
                raise MalformedOutput("the answer was cut off at the token limit", content or "")
            data = extract_json(content)
            notes = (f"prompt {role}.{self.prompt_version}", f"model {getattr(response, 'model', '?')}",
                     f"structured output {mode}", f"tokens {tokens} (campaign {campaign}: {budget.used} used)")
            return RoleReply(data, notes, (), tokens)
        raise FailedPrecondition(f"LLM endpoint {self.config.base_url} accepts no structured-output mode: "
                                 f"{_error_text(last_format_error)}")

    def _call(self, messages: list[dict[str, str]], mode: str, schema: dict[str, Any], schema_name: str,
              max_tokens: int) -> Any:
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages,
                                  "temperature": self.config.temperature, "seed": self.config.seed,
                                  "max_tokens": max_tokens}
        if mode == "json_schema":
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": schema_name, "schema": schema, "strict": False}}
        elif mode == "json_object_schema":  # llama-cpp-python: JSON mode constrained by a grammar from the schema
            kwargs["response_format"] = {"type": "json_object", "schema": grammar_schema(schema)}
        elif mode == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        tries = self.config.max_retries + 1
        last: Exception | None = None
        for attempt in range(tries):
            try:
                return self._client.chat.completions.create(**kwargs)
            except openai.RateLimitError as exc:
                if _code(exc) == "insufficient_quota":
                    raise ResourceExhausted(f"LLM endpoint {self.config.base_url}: quota exhausted") from None
                last, wait = exc, _retry_after(exc)
            except openai.APIStatusError as exc:
                if exc.status_code in (401, 403):
                    raise FailedPrecondition(f"LLM endpoint {self.config.base_url} rejected the credentials "
                                             f"({exc.status_code})", f"check {self.config.api_key_env} or "
                                                                     "api_key_file") from None
                if exc.status_code == 404:
                    raise FailedPrecondition(f"LLM endpoint {self.config.base_url} does not serve model "
                                             f"{self.config.model!r} ({_error_text(exc)})") from None
                if exc.status_code < 500 and exc.status_code != 408:
                    raise
                if mode != "none" and self._mode is None and _FORMAT_HINT.search(str(exc)):
                    # Some servers (llama-cpp-python's) answer an unsupported response_format with a 500
                    # that names it: not transient, so fall back to the next mode instead of retrying.
                    raise _FormatRejected(str(exc)) from None
                last, wait = exc, _retry_after(exc)
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                last, wait = exc, None
            if attempt + 1 < tries:
                delay = self.config.backoff_s * (2 ** attempt)
                self._sleep(min(self.config.max_backoff_s, max(delay, wait or 0.0)))
        what = f"HTTP {last.status_code}" if isinstance(last, openai.APIStatusError) else type(last).__name__
        raise Unavailable(f"LLM endpoint {self.config.base_url} unavailable after {tries} attempt(s): {what}")


_LENGTH_KEYS = ("maxLength", "minLength", "pattern", "format")


def grammar_schema(schema: Any) -> Any:
    """The schema as a grammar builder can take it: string length bounds and patterns dropped (llama.cpp
    spells ``maxLength: 4000`` out as 4000 nested optionals and fails), the verbatim ``intent`` left out
    (the role layer pins it); everything else, and the validation of the answer, unchanged."""
    if isinstance(schema, list):
        return [grammar_schema(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: grammar_schema(v) for k, v in schema.items() if k not in _LENGTH_KEYS}
    props = out.get("properties")
    if isinstance(props, dict) and "intent" in props and "application" in props:
        out["properties"] = {k: v for k, v in props.items() if k != "intent"}
        if isinstance(out.get("required"), list):
            out["required"] = [r for r in out["required"] if r != "intent"]
    return out


class _FormatRejected(Exception):
    """A server error that names the response format: the mode is unsupported, not the server down."""


def _problems_text(problems: tuple[dict[str, Any], ...]) -> str:
    if not problems:
        return ""
    return "\nYour previous answer was rejected; fix these problems:\n" + json.dumps(list(problems), indent=1)


def _code(exc: openai.APIStatusError) -> str | None:
    body = exc.body if isinstance(exc.body, dict) else {}
    err = body.get("error", body) if isinstance(body, dict) else {}
    return err.get("code") if isinstance(err, dict) else None


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


def _error_text(exc: Exception | None) -> str:
    if exc is None:
        return ""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return str(exc)[:300]


__all__ = ["MODES", "OpenAIBackend", "TokenBudget", "extract_json", "plan_schema", "reflection_schema",
           "resolve_api_key"]
