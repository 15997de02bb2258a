"""Fixtures for the LLM service tests: the offline roles, a live fake Chat Completions
server on 127.0.0.1 (a real HTTP peer), and a four-way junction of approach candidates."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from services.llm.backends.openai_compat import OpenAIBackend
from services.llm.config import OpenAIConfig
from services.llm.fake_openai_server import FakeOpenAIServer
from services.llm.planner import ApproachCandidate, MovementOption
from services.llm.roles import LlmRoles

FREEZE_INTENT = ("Check that red-light violation warning stays safe when the SPaT feed freezes just before amber "
                 "at a busy signalized intersection.")


@pytest.fixture
def roles() -> LlmRoles:
    return LlmRoles()


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def openai_backend(server: FakeOpenAIServer, sleep: Sleeps | None = None, **config: object) -> OpenAIBackend:
    settings: dict[str, object] = {"base_url": server.url, "model": "fake-gpt", "timeout_s": 5.0, "backoff_s": 0.01,
                                   **config}
    cfg = OpenAIConfig(**settings)  # type: ignore[arg-type]
    return OpenAIBackend(cfg, sleep=sleep if sleep is not None else Sleeps(), environ={"OPENAI_API_KEY": "sk-test"})


def approach(cid: str, heading_deg: float, turns: tuple[str, ...] = ("straight", "left", "right"), *,
             junction: str = "j1", map_name: str = "signalized_4way", score: float = 1.0,
             signal: bool = True) -> ApproachCandidate:
    movements = tuple(MovementOption(t, f"{junction}.sg{cid}" if signal else None, f"{junction}.{cid}.{t}")
                      for t in turns)
    return ApproachCandidate(cid, map_name, junction, f"{junction}.a{cid}", math.radians(heading_deg), movements,
                             (f"{cid}.lane1", f"{cid}.lane2"), score)


@pytest.fixture
def four_way() -> tuple[ApproachCandidate, ...]:
    """Approaches of one 4-way junction heading N/E/S/W (travel direction), plus a far junction."""
    return (approach("north", 90.0, score=0.9), approach("east", 0.0, score=0.8),
            approach("south", 270.0, score=0.85), approach("west", 180.0, score=0.7),
            approach("far", 90.0, junction="j9", score=0.95))
