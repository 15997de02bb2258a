"""A witness archive made once per test session by a real campaign (the demo's first two intents on
real built-in maps: an RLVW SPaT freeze admitted as written and an LTA BSM delay the search finds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lastv2x_app.campaigns import local_core
from lastv2x_app.demo import CAMPAIGN_BUDGET, CAMPAIGN_INTENTS, CAMPAIGN_SEED
from services.search.core import SearchCore, validate_request


@pytest.fixture(scope="session")
def witness_archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SearchCore, str]]:
    """(search core over the archive, campaign id); at least one witness per intent."""
    core = local_core(tmp_path_factory.mktemp("archive") / "search")
    request = validate_request(settings=core.settings, intents=list(CAMPAIGN_INTENTS[:2]), seed=CAMPAIGN_SEED,
                               budget_per_scenario=CAMPAIGN_BUDGET, stop_at_first_admission=True)
    view = core.wait(core.start(request).id, timeout_s=600)
    assert view.state == "done", view.reason
    assert len(core.witnesses(view.id)) >= 2
    yield core, view.id
    core.close()
