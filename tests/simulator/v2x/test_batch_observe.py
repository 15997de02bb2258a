"""``V2XInformationSource.observe_batch``: the rows of a batch observed together (one channel evaluation
for the radio links of every row) give each row the belief, counters and report its own ``observe`` gives,
bit for bit; paired execution uses it and its outcomes do not move."""

from __future__ import annotations

import pytest

from bench.scenes import canyon_scene, canyon_snapshots
from lastv2x.core.catalogue import Application
from services.simulator.info import BatchSource
from services.simulator.paired import execute_batch
from services.simulator.reference import reference_program
from services.simulator.v2x.channel import ChannelParams
from services.simulator.v2x.stack import V2XInformationSource, v2x_source_factory
from tests.simulator.v2x.world import MiniWorld


def _state(src: V2XInformationSource) -> str:
    """What a row leaves behind: its counters (no wall time) and its report, as exact reprs."""
    return repr((src.stats.to_dict(), src.report(()).extra, src.report(()).episodes))


def test_the_v2x_source_is_a_batch_source() -> None:
    assert isinstance(V2XInformationSource(), BatchSource)


def test_observe_batch_is_each_rows_observe_bit_for_bit() -> None:
    """Rows of the 50-vehicle canyon (buildings, SPaT relay, EEBL rebroadcast: hundreds of links a step) with other seeds, another channel (its own evaluation) and open space (no
    buildings), observed together and one by one."""
    prog, buildings = canyon_scene()
    near = ChannelParams(tx_power_dbm=ChannelParams().tx_power_dbm - 12.0)

    def rows() -> list[V2XInformationSource]:
        out = [V2XInformationSource(buildings), V2XInformationSource(buildings), V2XInformationSource(None),
               V2XInformationSource(buildings, channel_params=near)]
        for seed, src in enumerate(out):
            src.reset(prog, seed % 2)
        return out

    together, alone = rows(), rows()
    links_per_step = []
    for snap in canyon_snapshots(prog, 40):
        before = sum(s.stats.links for s in together)
        infos = V2XInformationSource.observe_batch(together, [snap] * len(together))
        links_per_step.append(sum(s.stats.links for s in together) - before)
        for src, info in zip(alone, infos, strict=True):
            assert repr(src.observe(snap)) == repr(info)
    assert max(links_per_step) > 32  # the scene is the busy one it claims to be
    assert [_state(s) for s in together] == [_state(s) for s in alone]


def test_rows_that_send_nothing_on_some_steps() -> None:
    """Steps where some rows put nothing on the air (10 Hz messages, 20 Hz steps), the other rows one link or two."""
    progs = [reference_program(Application.RLVW, seed=1), reference_program(Application.FCW, seed=2)]

    def rows() -> list[V2XInformationSource]:
        out = [V2XInformationSource(), V2XInformationSource()]
        for p, src in zip(progs, out, strict=True):
            src.reset(p, p.seed)
        return out

    together, alone = rows(), rows()
    worlds = [MiniWorld(p) for p in progs]
    for _ in range(200):
        snaps = [w.snapshot() for w in worlds]
        infos = V2XInformationSource.observe_batch(together, snaps)
        for src, snap, info in zip(alone, snaps, infos, strict=True):
            assert repr(src.observe(snap)) == repr(info)
        for w in worlds:
            w.advance()
    assert [_state(s) for s in together] == [_state(s) for s in alone]


def test_paired_execution_observes_v2x_rows_as_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """ExecuteBatch calls observe_batch for its V2X rows, and its outcomes are the row-by-row ones."""
    progs = [reference_program(list(Application)[i % 6], seed=i) for i in range(8)]
    calls: list[int] = []
    real = V2XInformationSource.observe_batch

    def spy(sources, snaps):  # type: ignore[no-untyped-def]
        calls.append(len(sources))
        return real(sources, snaps)

    monkeypatch.setattr(V2XInformationSource, "observe_batch", staticmethod(spy))
    batched = [o.to_json_bytes() for o in execute_batch(progs, md_source_factory=v2x_source_factory())]
    assert calls and max(calls) == 8
    monkeypatch.setattr(V2XInformationSource, "observe_batch", None)  # row by row: observe
    calls.clear()
    one_by_one = [o.to_json_bytes() for o in execute_batch(progs, md_source_factory=v2x_source_factory())]
    assert not calls
    assert batched == one_by_one



def test_a_subclass_that_overrides_observe_alone_is_observed_row_by_row() -> None:
    """Its own ``observe`` runs (the inherited ``observe_batch`` would bypass it); overriding both batches."""
    calls: list[str] = []

    class Counted(V2XInformationSource):
        def observe(self, snap):  # type: ignore[no-untyped-def]
            calls.append("observe")
            return super().observe(snap)

    class Both(Counted):
        @staticmethod
        def observe_batch(sources, snaps):  # type: ignore[no-untyped-def]
            calls.append("batch")
            return V2XInformationSource.observe_batch(sources, snaps)

    progs = [reference_program(Application.FCW, seed=s) for s in range(2)]
    expected = [o.to_json_bytes() for o in execute_batch(progs, md_source_factory=v2x_source_factory())]
    for cls, kind in ((Counted, "observe"), (Both, "batch")):
        calls.clear()
        got = [o.to_json_bytes() for o in execute_batch(progs, md_source_factory=cls)]
        assert got == expected
        assert calls and set(calls) == {kind}
