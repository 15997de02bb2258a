"""Shared pytest fixtures.

Third-party data lives outside the repo in ``../shared/data`` (see its SOURCES.md);
tests read it from there and skip with a clear reason when it is absent. Override
the location with ``LASTV2X_SHARED_DATA``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    env = os.environ.get("LASTV2X_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"third-party data not found at {path} (set LASTV2X_SHARED_DATA)")
    return path


@pytest.fixture
def served():  # type: ignore[no-untyped-def]
    """``served(servicer) -> "grpc://127.0.0.1:PORT"``: an application-under-test server on loopback,
    stopped after the test (lastv2x_app/example_app.py serves the builds)."""
    from lastv2x_app.example_app import serve

    servers = []

    def start(servicer) -> str:  # type: ignore[no-untyped-def]
        server, port = serve(servicer)
        servers.append(server)
        return f"grpc://127.0.0.1:{port}"
    yield start
    for s in servers:
        s.stop(0)


# Property tests draw the same examples on every run, so CI is deterministic; explore new
# examples locally with HYPOTHESIS_PROFILE=explore.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
