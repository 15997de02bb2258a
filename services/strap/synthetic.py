"""Deterministic synthetic platform traces, for tests, benchmarks and demos.

:func:`synthetic_platform_messages` streams ``(channel, timestamp_ns, payload)``
in timestamp order with the **payloads the simulator publishes**
(:mod:`services.simulator.trace`, documented in
:mod:`services.strap.readers.platform_trace`): an ego repeatedly crosses a
signalised intersection (fixed-time green/amber/red cycle of group ``j0.sg0``),
background traffic comes and goes, and every ``fault_every_s`` a SPaT *freeze*
keeps the message-driven (``md``) belief on the state it had, with a growing age
of information, so the believed phase, AoI band, application decision and the
divergence monitor change together.  Like a paired execution, ``/recon/ego``,
``/app/decision`` and ``/ctrl/ego`` carry both rollouts (``rollout`` ``md`` and
``gt``: the ground-truth twin believes the truth); ``/app/decision`` is published
on change, ``/v2x/belief`` at 2 Hz, ``/monitor/events`` once per episode.  Extra
"noise" channels (``/diag/<k>``) pad a trace to any channel count without adding
features.

It is a generator (constant memory) so hour-long traces can be written with
:func:`~services.strap.readers.platform_trace.write_trace` directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .readers.platform_trace import PLATFORM_CHANNELS

GREEN, AMBER, RED = 0, 1, 2
CYCLE_S = ((GREEN, 20.0), (AMBER, 3.0), (RED, 17.0))
LOOP_S = 40.0        # the ego meets the stop bar once per loop
EPOCH_AT_S = 25.0    # decision epoch within the loop
BAR_AT_S = 32.0      # the ego's front passes the stop bar (or waits there on red)
EGO_GROUP = "j0.sg0"


def _phase(t_s: float) -> tuple[int, float]:
    period = sum(d for _, d in CYCLE_S)
    x = t_s % period
    for code, dur in CYCLE_S:
        if x < dur:
            return code, dur - x
        x -= dur
    return CYCLE_S[-1][0], 0.0


def _decision(rollout: str, phase: int, loop_s: float, prev: tuple[str, str, bool] | None
              ) -> tuple[str, str, bool]:
    """RLVW-like: (action, reason, committed) latched at the epoch."""
    if loop_s >= BAR_AT_S and not (prev and prev[0] == "stop"):
        return "proceed", "no stop bar ahead", True
    if loop_s < EPOCH_AT_S:
        return "proceed", "before the decision epoch", False
    if prev is not None and prev[2]:
        return prev
    if phase == RED or phase == AMBER:
        return "stop", "believed red at the decision epoch", True
    return "proceed", "believed green", True


def synthetic_platform_messages(
    duration_s: float = 60.0,
    rate_hz: float = 20.0,
    *,
    seed: int = 0,
    n_channels: int = len(PLATFORM_CHANNELS),
    fault_every_s: float = 45.0,
    fault_duration_s: float = 4.0,
    start_ns: int = 1_700_000_000_000_000_000,
) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Yield a time-ordered synthetic trace (see module docstring)."""
    rng = np.random.default_rng(seed)
    n_ticks = int(round(duration_s * rate_hz))
    dt_ns = int(round(1e9 / rate_hz))
    belief_every = max(1, int(round(rate_hz / 2.0)))
    extra = [f"/diag/{k}" for k in range(max(0, n_channels - len(PLATFORM_CHANNELS)))]
    channels = set(PLATFORM_CHANNELS[:n_channels]) | set(extra)
    vehicles: list[dict[str, Any]] = []
    frozen: tuple[int, float, float] | None = None   # (phase, countdown, since)
    decided: dict[str, tuple[str, str, bool] | None] = {"md": None, "gt": None}
    next_id = 0
    for tick in range(n_ticks):
        t_s = tick / rate_hz
        ts = start_ns + tick * dt_ns
        out: list[tuple[str, dict[str, Any]]] = []
        if rng.random() < 0.004 and len(vehicles) < 6:
            vehicles.append({"id": f"v{next_id}", "x": float(rng.uniform(-50, 50)), "y": float(rng.uniform(-50, 50)),
                             "speed_mps": float(rng.uniform(0, 15)), "heading_rad": float(rng.uniform(-3, 3)),
                             "accel_mps2": 0.0, "alive": True, "equipped": bool(rng.random() < 0.8)})
            next_id += 1
        if vehicles and rng.random() < 0.003:
            vehicles.pop(int(rng.integers(len(vehicles))))
        if vehicles and rng.random() < 0.002:
            v = vehicles[int(rng.integers(len(vehicles)))]
            v["accel_mps2"] = float(rng.choice([-5.0, 0.0, 1.0]))
            v["speed_mps"] = 0.0 if rng.random() < 0.3 else v["speed_mps"]
        phase, remaining = _phase(t_s)
        in_fault = fault_every_s > 0 and (t_s % fault_every_s) >= fault_every_s - fault_duration_s
        if in_fault and frozen is None:
            frozen = (phase, remaining, t_s)
            window_end = t_s + fault_duration_s
            wrong = any(_phase(u)[0] != phase for u in np.arange(t_s, window_end, 1.0 / rate_hz))
            out.append(("/monitor/events", {"kind": "signal_phase" if wrong else "countdown",
                                            "subject": EGO_GROUP, "start_s": t_s, "end_s": window_end,
                                            "max_error": 1.0, "detail": "synthetic freeze"}))
        elif not in_fault:
            frozen = None
        loop_s = t_s % LOOP_S
        approaching = loop_s < BAR_AT_S
        ego_speed = 0.0 if (phase == RED and BAR_AT_S - 2.0 < loop_s < LOOP_S) else 10.0
        out.append(("/gt/vehicles", {"vehicles": [
            {"id": "ego", "x": 0.0, "y": loop_s * 10.0 - 320.0, "speed_mps": ego_speed, "heading_rad": 1.5708,
             "accel_mps2": 0.0, "alive": True, "equipped": True}] + [dict(v) for v in vehicles]}))
        out.append(("/signals/true", {"groups": [
            {"id": EGO_GROUP, "phase": phase, "time_to_change_s": round(remaining, 3)},
            {"id": "j0.sg1", "phase": RED if phase != RED else GREEN, "time_to_change_s": 5.0}]}))
        tracks = [{"id": v["id"], "x": v["x"], "y": v["y"], "speed_mps": v["speed_mps"], "aoi_s": 0.1}
                  for v in vehicles if v["equipped"]]
        beliefs: dict[str, tuple[int, float, float]] = {"gt": (phase, remaining, 0.0)}
        beliefs["md"] = (frozen[0], max(0.0, frozen[1] - (t_s - frozen[2])), t_s - frozen[2] + 0.1) \
            if frozen else (phase, remaining, 0.1)
        if tick % belief_every == 0:
            b = beliefs["md"]
            out.append(("/v2x/belief", {"ego_group_id": EGO_GROUP if approaching else None,
                                        "phase": b[0] if approaching else None,
                                        "countdown_s": round(b[1], 3) if approaching else None,
                                        "spat_aoi_s": round(b[2], 3) if approaching else None,
                                        "map_aoi_s": 0.4, "tracks": len(tracks), "events": 0,
                                        "active_faults": ["freeze"] if frozen else []}))
        for rollout in ("md", "gt"):
            b = beliefs[rollout]
            dec = _decision(rollout, b[0], loop_s, decided[rollout])
            if dec != decided[rollout]:
                out.append(("/app/decision", {"rollout": rollout, "app": "RLVW", "action": dec[0], "reason": dec[1],
                                              "epoch": dec[1].endswith("epoch") and dec[2], "committed": dec[2],
                                              "info_valid": True, "target_speed_mps": None, "brake_mps2": 0.0,
                                              "aoi_s": round(b[2], 3)}))
                decided[rollout] = dec
            if loop_s + 1.0 / rate_hz >= LOOP_S:
                decided[rollout] = None  # the next loop starts afresh
            signal = {"phase": b[0], "time_to_change_s": round(b[1], 3), "aoi_s": round(b[2], 3),
                      "valid": b[2] <= 1.0} if approaching else None
            out.append(("/recon/ego", {"rollout": rollout, "ego_group_id": EGO_GROUP if approaching else None,
                                       "signal": signal, "tracks": tracks if rollout == "md" else
                                       [{**tr, "aoi_s": 0.0} for tr in tracks], "eebl_events": 0}))
            out.append(("/ctrl/ego", {"rollout": rollout, "stop_at_bar": dec[0] == "stop", "v_target_mps": None,
                                      "brake_mps2": 0.0, "speed_mps": ego_speed}))
        for ch, payload in out:
            if ch in channels:
                yield ch, ts, payload
        for ch in extra:
            yield ch, ts, {"seq": tick, "load": 0.5}
