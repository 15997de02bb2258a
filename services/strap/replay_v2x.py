"""Open-loop replay of the V2X stack on a recorded md world (reconstruction changes).

See :mod:`services.strap.replay`.  The recorded ``/v2x/rx`` names each message the
ego received (stream, sender, msg_id, timestamp, hops, arrival time) but not its
contents (positions, phases, MAP lanes), so it cannot be fed to a receiver alone;
a changed reconstruction module is replayed inside the whole stack: every step's
``WorldSnapshot`` is rebuilt from the trace and the program
(:func:`world_snapshots`) and observed by a ``V2XInformationSource`` whose
receivers are the changed module's (:func:`receiver_source_factory`).  The
recorded ``/v2x/rx`` is the check that this replay feeds the module what was
recorded: ``check_rx=True`` compares the stack's deliveries with it step by step
(:attr:`StackReplay.rx_mismatch`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import numpy as np

from lastv2x.core.program import ScenarioProgram
from services.simulator.info import (
    BRAKE_FLAG_THRESHOLD_MPS2,
    HARD_BRAKE_THRESHOLD_MPS2,
    NO_GROUP,
    EgoInformation,
    WorldSnapshot,
)
from services.simulator.signals import SignalTable

from .recorded import MD, EgoGeometry, RecordedRun, belief_key


def world_snapshots(run: RecordedRun) -> list[WorldSnapshot]:
    """The md world of every step, rebuilt as the V2X stack saw it (module docstring)."""
    prog = run.program
    geom = EgoGeometry(prog)
    lengths = np.array([v.length_m for v in prog.vehicles], dtype=np.float64)
    table = SignalTable.from_plans(prog.signal_groups) if prog.signal_groups else None
    rsu = (tuple(r.id for r in prog.rsus), np.array([r.xy_m for r in prog.rsus], dtype=np.float64).reshape(-1, 2),
           np.array([r.height_m for r in prog.rsus], dtype=np.float64))
    gidx_of: dict[tuple[str, ...], dict[str, int]] = {}
    ids_cache: dict[tuple[str, ...], tuple[str, ...]] = {}
    out = []
    for k, (vp, sp) in enumerate(zip(run.vehicles, run.signals, strict=True)):
        vs = vp["vehicles"]
        ids = tuple(v["id"] for v in vs)
        ids = ids_cache.setdefault(ids, ids)
        n = len(vs)
        xy = np.array([[v["x"], v["y"]] for v in vs], dtype=np.float64).reshape(n, 2)
        speed = np.array([v["speed_mps"] for v in vs], dtype=np.float64)
        heading = np.array([v["heading_rad"] for v in vs], dtype=np.float64)
        accel = np.array([v["accel_mps2"] for v in vs], dtype=np.float64)
        alive = np.array([bool(v.get("alive", True)) for v in vs])
        equipped = np.array([bool(v.get("equipped", True)) for v in vs])
        groups = tuple(g["id"] for g in sp.get("groups", ()))
        groups = ids_cache.setdefault(("#groups", *groups), groups) if groups else ()
        gidx = gidx_of.setdefault(groups, {g: i for i, g in enumerate(groups)})
        phase = np.array([g["phase"] for g in sp.get("groups", ())], dtype=np.int64)
        ttc = np.array([g["time_to_change_s"] for g in sp.get("groups", ())], dtype=np.float64)
        t_s = run.ego[k].t_s
        if table is not None and groups:
            order = [prog.signal_groups[i].id for i in range(len(prog.signal_groups))]
            ttg_all = dict(zip(order, table.state(t_s)[2].tolist(), strict=True))
            ttg = np.array([ttg_all.get(g, 0.0) for g in groups], dtype=np.float64)
        else:
            ttg = np.zeros(len(groups))
        s_ego = run.ego[k].s_m
        route_s = np.full(n, np.nan)
        route_s[0] = s_ego
        bar_d = np.full(n, np.inf)
        bar_d[0] = run.ego[k].stop_bar_distance_m
        nxt = np.full(n, NO_GROUP, dtype=np.int64)
        kb = geom.next_bar(s_ego)
        if kb < len(geom.groups) and geom.groups[kb] is not None and geom.groups[kb] in gidx:
            nxt[0] = gidx[geom.groups[kb]]
        arrays = [xy, speed, heading, accel, alive, equipped, route_s, bar_d, nxt, phase, ttc, ttg]
        for a in arrays:
            a.flags.writeable = False
        out.append(WorldSnapshot(
            t_s=float(t_s), step=k, vehicle_ids=ids, xy_m=xy, speed_mps=speed, heading_rad=heading,
            accel_mps2=accel, brake_flag=(accel <= -BRAKE_FLAG_THRESHOLD_MPS2) & alive,
            hard_brake_event=(accel <= -HARD_BRAKE_THRESHOLD_MPS2) & (speed > 0.0) & alive,
            equipped=equipped, alive=alive, route_s_m=route_s, stop_bar_distance_m=bar_d, next_group_index=nxt,
            length_m=lengths[:n] if lengths.shape[0] >= n else np.full(n, 4.5), ego_index=0,
            signal_group_ids=groups, true_phase=phase, time_to_change_s=ttc, time_to_green_s=ttg,
            rsu_ids=rsu[0], rsu_xy_m=rsu[1], rsu_height_m=rsu[2], rollout=MD))
    return out


def receiver_source_factory(module: ModuleType | None = None, **stack_kwargs: Any) -> Callable[[], Any]:
    """A ``SourceFactory`` of the V2X stack whose receivers (ego and RSUs) are
    ``module.Receiver`` (a changed ``reconstruction`` module; default the original)."""
    from services.simulator.v2x import reconstruction as original
    from services.simulator.v2x.stack import V2XConfig, V2XInformationSource

    mod = module or original

    class _Source(V2XInformationSource):
        def reset(self, program: ScenarioProgram, seed: int, *, trace: Any = None) -> None:
            super().reset(program, seed, trace=trace)
            cfg = self.config
            self.ego = mod.Receiver(self.app, track_timeout_s=cfg.track_timeout_s,
                                    event_timeout_s=cfg.event_timeout_s, record_peaks=cfg.record_peaks,
                                    self_key=self.ego_key)
            self.rsu_rx = {int(k): mod.Receiver(None, record_peaks=False, self_key=int(k)) for k in self.rsu_keys}

    base = stack_kwargs.pop("config", None) or V2XConfig()
    config = replace(base, track_timeout_s=getattr(mod, "TRACK_TIMEOUT_S", base.track_timeout_s),
                     event_timeout_s=getattr(mod, "EVENT_TIMEOUT_S", base.event_timeout_s), record_peaks=False)
    return lambda: _Source(config=config, **stack_kwargs)


@dataclass
class StackReplay:
    """Per-step beliefs of an open-loop V2X replay (``None`` after a crash)."""

    keys: list[tuple[int, ...] | None]
    error: str | None = None
    infos: list[EgoInformation] = field(default_factory=list, repr=False)
    #: with ``check_rx``: the steps whose deliveries to the ego differ from the recorded ``/v2x/rx``
    #: (``None``: not checked, or the trace has no ``/v2x/rx``)
    rx_mismatch: list[int] | None = None


def rx_key(m: Any) -> tuple[Any, ...]:
    """A received message's identity as ``/v2x/rx`` records it (contents are not traced)."""
    return (m.get("stream"), m.get("sender"), m.get("msg_id"), m.get("timestamp_s"), m.get("hops"),
            m.get("origin"), m.get("rx_s"))


class _RxSink:
    """A trace sink keeping only what the stack publishes on ``/v2x/rx``, per step time."""

    def __init__(self) -> None:
        self.rx: dict[int, list[tuple[Any, ...]]] = {}

    def publish(self, channel: str, t_s: float, message: Any) -> None:
        if channel == "/v2x/rx":
            self.rx.setdefault(int(round(t_s * 1e9)), []).extend(rx_key(m) for m in message.get("messages") or ())


def replay_reconstruction(run: RecordedRun, module: ModuleType | None = None, *,
                          snapshots: Sequence[WorldSnapshot] | None = None, keep_infos: bool = False,
                          check_rx: bool = False, **stack_kwargs: Any) -> StackReplay:
    """Replay the recorded md world into the V2X stack with ``module``'s receivers, from the start.

    ``check_rx``: also compare what the replayed stack delivers to the ego with the recorded
    ``/v2x/rx``, step by step (:attr:`StackReplay.rx_mismatch`)."""
    snaps = world_snapshots(run) if snapshots is None else snapshots
    src = receiver_source_factory(module, **stack_kwargs)()
    sink = _RxSink() if check_rx and run.rx_traced else None
    src.reset(run.program, run.seed, trace=sink)
    keys: list[tuple[int, ...] | None] = []
    infos: list[EgoInformation] = []
    for k, snap in enumerate(snaps):
        try:
            info = src.observe(snap)
            keys.append(belief_key(info))
        except Exception as exc:
            return StackReplay(keys + [None] * (len(snaps) - k), f"{type(exc).__name__}: {exc}", infos)
        if keep_infos:
            infos.append(info)
    mismatch = None
    if sink is not None:
        mismatch = [k for k, t in enumerate(run.timestamps_ns.tolist())
                    if sink.rx.get(int(t), []) != [rx_key(m) for m in run.rx[k]]]
    return StackReplay(keys, None, infos, mismatch)


def recorded_belief_keys(run: RecordedRun) -> list[tuple[int, ...]]:
    return [belief_key(r) for r in run.recon]


__all__ = ["StackReplay", "receiver_source_factory", "recorded_belief_keys", "replay_reconstruction", "rx_key",
           "world_snapshots"]
