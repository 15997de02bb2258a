"""Test doubles of information sources (not shipped: the real one is the V2X stack)."""

from __future__ import annotations

from dataclasses import replace

from services.simulator.info import (
    BelievedSignal,
    EgoInformation,
    GroundTruthSource,
    TraceSink,
    WorldSnapshot,
)


class FrozenSignalSource(GroundTruthSource):
    """Ground truth, except that from ``freeze_at_s`` on the ego group's signal keeps the state it
    had then, with a fresh age of information: a SPaT *freeze* (fresh-but-wrong)."""

    def __init__(self, freeze_at_s: float):
        self.freeze_at_s = freeze_at_s

    def reset(self, program, seed: int, *, trace: TraceSink | None = None) -> None:  # noqa: ANN001
        super().reset(program, seed, trace=trace)
        self._frozen: BelievedSignal | None = None

    def observe(self, snapshot: WorldSnapshot) -> EgoInformation:
        info = super().observe(snapshot)
        g = info.ego_group_id
        if g is None or snapshot.t_s < self.freeze_at_s:
            return info
        if self._frozen is None:
            self._frozen = info.signals[g]
        return replace(info, signals={**info.signals, g: self._frozen})


class SilentSource(GroundTruthSource):
    """No information at all: no SPaT, no MAP, no tracks (silent-by-absence)."""

    def observe(self, snapshot: WorldSnapshot) -> EgoInformation:
        return EgoInformation(snapshot.t_s, {}, None, {}, ())


class StaleSource(GroundTruthSource):
    """Ground truth with every age of information set to ``aoi_s`` (stale-but-detectable)."""

    def __init__(self, aoi_s: float):
        self.aoi_s = aoi_s

    def observe(self, snapshot: WorldSnapshot) -> EgoInformation:
        info = super().observe(snapshot)
        return replace(info,
                       signals={k: replace(v, aoi_s=self.aoi_s) for k, v in info.signals.items()},
                       tracks={k: replace(v, aoi_s=self.aoi_s) for k, v in info.tracks.items()},
                       eebl_events=tuple(replace(e, aoi_s=self.aoi_s) for e in info.eebl_events))
