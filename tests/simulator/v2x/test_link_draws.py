"""Link draws by identity (issue 32, item 2): a link's delivery uniform is keyed by (seed, stream, sender,
message, receiver), never by its place in a step or a batch.

Before this change every row drew ``substream(seed, CHANNEL).random(n)`` for a step's links in the order they
were collected, so adding an RSU or a vehicle moved the draws of every later link. The change moved the golden
hashes once (two paired cases and the canyon beliefs); this module is its parity suite against the old
sequential draws (rebuilt here as ``_sequential``):

* the same admission verdicts on every reference program (six applications, seeds 0..7) and the servicer's
  SPaT-freeze spec, over both draw schemes;
* statistically equal deliveries in the 50-vehicle urban canyon (buildings, SPaT relay, EEBL rebroadcast: many
  links between 0 and 1): per-step delivered fractions and delivered latencies pass a two-sample KS test;
* per-link invariance: the same link gets the same uniform wherever it sits and whatever else is drawn.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ks_2samp

from lastv2x.core.catalogue import Application, Stream
from lastv2x.core.rng import Substream, stable_hash64, substream
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.paired import execute_paired
from services.simulator.reference import reference_program
from services.simulator.v2x import links
from services.simulator.v2x.messages import LinkDraws
from services.simulator.v2x.stack import V2XInformationSource, v2x_source_factory
from tests.simulator.test_golden_outcomes import FREEZE_BEFORE_AMBER


@pytest.fixture
def sequential(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The draws as they were: one generator per row, ``random(n)`` for a step's links in collection order."""
    def old(self: V2XInformationSource, pending: links.PendingLinks) -> np.ndarray:
        rng = self.__dict__.setdefault("_old_rng", substream(self.seed, Substream.CHANNEL))
        return rng.random(pending.n)

    monkeypatch.setattr(links.LinkEvaluator, "_link_uniforms", old)
    yield


def _verdicts() -> dict[str, bool]:
    out = {}
    for app in Application:
        for seed in range(8):
            out[f"{app.value}/{seed}"] = execute_paired(reference_program(app, seed=seed), seed,
                                                        v2x_source_factory()).admitted
    freeze = program_from_spec_on_straight_roads(parse_spec(FREEZE_BEFORE_AMBER))
    for seed in range(4):
        out[f"FREEZE_BEFORE_AMBER/{seed}"] = execute_paired(freeze, seed, v2x_source_factory()).admitted
    return out


def test_admission_verdicts_match_the_sequential_draws(request: pytest.FixtureRequest) -> None:
    new = _verdicts()
    request.getfixturevalue("sequential")
    old = _verdicts()
    assert new == old
    assert any(new.values()) and not all(new.values())  # the cases discriminate


def _canyon_deliveries(seeds: range) -> tuple[list[float], list[float]]:
    """Per (seed, step): the delivered fraction of the step's links with 0 < p < 1; and every delivered
    uncertain link's latency, in the urban canyon."""
    from bench.scenes import canyon_scene, canyon_snapshots

    fractions: list[float] = []
    latencies: list[float] = []
    prog, buildings = canyon_scene()
    for seed in seeds:
        src = V2XInformationSource(buildings)
        src.reset(prog, seed)
        draw, finish = src._link_uniforms, src._finish_links
        drawn: list[np.ndarray] = []

        def recorded(pending: links.PendingLinks, draw: object = draw, drawn: list[np.ndarray] = drawn) -> np.ndarray:
            drawn.append(draw(pending))  # type: ignore[operator]
            return drawn[-1]

        def finish_spy(pending: links.PendingLinks, prob: np.ndarray, lat: np.ndarray, finish: object = finish,
                       drawn: list[np.ndarray] = drawn) -> None:
            finish(pending, prob, lat)  # type: ignore[operator]  # draws once (recorded)
            u, uncertain = drawn.pop(), (prob > 0.0) & (prob < 1.0)
            if uncertain.any():
                delivered = u[uncertain] < prob[uncertain]
                fractions.append(float(delivered.mean()))
                latencies.extend(lat[uncertain][delivered].tolist())

        src._link_uniforms = recorded  # type: ignore[method-assign]
        src._finish_links = finish_spy  # type: ignore[method-assign]
        for snap in canyon_snapshots(prog, 60):
            src.observe(snap)
    return fractions, latencies


def test_canyon_deliveries_are_distributed_as_with_the_sequential_draws(request: pytest.FixtureRequest) -> None:
    new_frac, new_lat = _canyon_deliveries(range(6))
    request.getfixturevalue("sequential")
    old_frac, old_lat = _canyon_deliveries(range(6))
    assert len(new_frac) > 100 and len(new_lat) > 1000
    assert new_frac != old_frac  # other draws ...
    assert ks_2samp(new_frac, old_frac).pvalue > 0.01  # ... from the same distribution
    assert ks_2samp(new_lat, old_lat).pvalue > 0.01
    assert abs(np.mean(new_frac) - np.mean(old_frac)) < 0.03


_IDS = st.lists(st.integers(0, 2**62), min_size=1, max_size=40, unique=True)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32), senders=_IDS, msg=st.integers(0, 10_000), perm_seed=st.integers(0, 1000))
def test_a_links_draw_does_not_depend_on_its_place_or_its_company(seed: int, senders: list[int], msg: int,
                                                                   perm_seed: int) -> None:
    draws = LinkDraws.from_seed(seed)
    sender = np.asarray(senders, dtype=np.uint64)
    n = sender.size
    msg_id = np.full(n, msg, np.int64)
    ego = np.full(n, stable_hash64("ego"), np.uint64)
    u = draws.uniform(Stream.BSM, sender, msg_id, ego)
    perm = np.random.default_rng(perm_seed).permutation(n)
    assert np.array_equal(draws.uniform(Stream.BSM, sender[perm], msg_id[perm], ego[perm]), u[perm])
    assert np.array_equal(draws.uniform(Stream.BSM, sender[:1], msg_id[:1], ego[:1]), u[:1])  # alone
    assert ((u >= 0.0) & (u < 1.0)).all()
    other = draws.uniform(Stream.SPAT, sender, msg_id, ego)  # another stream, another draw
    assert n < 3 or not np.array_equal(other, u)


def _splitmix64_reference(state: int) -> int:
    """Vigna's splitmix64.c ``next()`` from ``state``, on Python ints (the published reference)."""
    z = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


def test_the_draw_is_splitmix64_as_published() -> None:
    """The first output of SplitMix64 seeded with 0 is 0xE220A8397B1DCDAF (splitmix64.c); a uniform is its top 53
    bits."""
    from lastv2x.core.rng import counter_uniform
    from services.simulator.kernels import draws

    assert _splitmix64_reference(0) == 0xE220A8397B1DCDAF
    want = (0xE220A8397B1DCDAF >> 11) / 2.0**53
    assert counter_uniform(0, np.zeros(1, np.uint64))[0] == want
    assert draws.counter_uniform(0, np.zeros(1, np.uint64))[0] == want


_U64 = st.integers(0, 2**64 - 1)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(1, 3).flatmap(lambda k: st.lists(
    st.tuples(*([_U64] * k)), min_size=0, max_size=40)), st.booleans())
def test_one_body_for_every_draw_compiled_or_not(base, rows, signed):
    """issue 32 stage 2: every counter-keyed uniform of the engine runs ``lastv2x.core.rng.splitmix_uniforms``,
    compiled (``kernels.draws``) or as numpy (the core); both give the published SplitMix64 chain's bits for any
    number of elements (the Python-int twins for small counts are gone), negative counters wrapping mod 2**64."""
    from lastv2x.core.rng import counter_uniform
    from services.simulator.kernels import draws

    k = len(rows[0]) if rows else 2
    cols = [np.array([r[j] for r in rows], dtype=np.uint64) for j in range(k)]
    if signed:  # the same bits given as int64 (a negative counter is its value mod 2**64)
        cols = [c.view(np.int64) for c in cols]
    want = []
    for r in rows:
        z = base
        for v in r:
            z = _splitmix64_reference(z ^ v)
        want.append((z >> 11) / 2.0**53)
    assert counter_uniform(base, *cols).tolist() == want
    assert draws.counter_uniform(base, *cols).tolist() == want
    kernel = draws.keyed_uniforms
    py = getattr(kernel, "py_func", kernel)
    bases = np.full(len(rows), base, np.uint64)
    stacked = np.array(cols, dtype=np.uint64).reshape(k, len(rows))
    assert kernel(bases, stacked).tolist() == py(bases, stacked).tolist() == want
