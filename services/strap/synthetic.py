"""Deterministic synthetic platform traces, for tests, benchmarks and demos.

:func:`synthetic_platform_messages` streams ``(channel, timestamp_ns, payload)``
in timestamp order following the payload contract of
:mod:`services.strap.readers.platform_trace`: an ego repeatedly crosses a
signalised intersection (fixed-time green/amber/red cycle), background traffic
comes and goes, and — every ``fault_every_s`` — a SPaT *freeze* makes the
reconstructed belief stale so the believed phase, AoI band, application
decision and divergence monitor change together.  Extra "noise" channels
(``/diag/<k>``) pad a trace to any channel count without adding features.

It is a generator (constant memory) so hour-long traces can be written with
:func:`~services.strap.readers.platform_trace.write_trace` directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .readers.platform_trace import PLATFORM_CHANNELS

CYCLE_S = (("green", 20.0), ("amber", 3.0), ("red", 17.0))
KINDS = ("car", "car", "car", "truck", "bus", "van", "pedestrian", "bicycle", "motorcycle")
ACTIONS = ("cruise", "cruise", "stop", "change_lane", "turn_left", "turn_right", "cross")


def _phase(t_s: float) -> tuple[str, float]:
    period = sum(d for _, d in CYCLE_S)
    x = t_s % period
    for name, dur in CYCLE_S:
        if x < dur:
            return name, dur - x
        x -= dur
    return CYCLE_S[-1][0], 0.0


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
    extra = [f"/diag/{k}" for k in range(max(0, n_channels - len(PLATFORM_CHANNELS)))]
    channels = list(PLATFORM_CHANNELS[:n_channels]) + extra
    # fixed sub-tick offsets so that emitting tick by tick stays time-ordered
    offsets = {ch: i * dt_ns // (len(channels) + 1) for i, ch in enumerate(channels)}
    vehicles: list[dict[str, Any]] = []
    frozen: tuple[str, float] | None = None
    next_id = 0
    for tick in range(n_ticks):
        t_s = tick / rate_hz
        if rng.random() < 0.004 and len(vehicles) < 6:
            vehicles.append({"id": f"v{next_id}", "kind": str(rng.choice(KINDS)),
                             "action": str(rng.choice(ACTIONS)), "speed_mps": float(rng.uniform(0, 15))})
            next_id += 1
        if vehicles and rng.random() < 0.003:
            vehicles.pop(int(rng.integers(len(vehicles))))
        if vehicles and rng.random() < 0.002:
            vehicles[int(rng.integers(len(vehicles)))]["action"] = str(rng.choice(ACTIONS))
        phase, remaining = _phase(t_s)
        in_fault = fault_every_s > 0 and (t_s % fault_every_s) >= fault_every_s - fault_duration_s
        if in_fault and frozen is None:
            frozen = (phase, remaining)
        elif not in_fault:
            frozen = None
        believed, countdown = frozen if frozen else (phase, remaining)
        aoi = (t_s % fault_every_s - (fault_every_s - fault_duration_s)) if in_fault else 0.1
        loop_s = t_s % 40.0
        ego_speed = 0.0 if (phase == "red" and 30.0 < loop_s < 40.0) else 10.0
        decision = "none"
        if believed == "red" and loop_s > 25.0:
            decision = "stop"
        elif believed == "amber":
            decision = "warn"
        events = [{"kind": "phase_wrong"}] if believed != phase else []
        payloads: dict[str, dict[str, Any]] = {
            "/gt/vehicles": {"ego": {"speed_mps": ego_speed, "at_intersection": 30.0 < loop_s < 36.0,
                                     "near_crosswalk": 28.0 < loop_s < 31.0, "stop_sign_ahead": False},
                             "vehicles": [dict(v) for v in vehicles]},
            "/signals/true": {"group": "ego", "phase": phase, "countdown_s": round(remaining, 2)},
            "/v2x/tx": {"messages": [{"kind": "SPaT", "sender": "rsu0"}, {"kind": "BSM", "sender": "ego"}]},
            "/v2x/rx": {"messages": [] if in_fault else [{"kind": "SPaT", "sender": "rsu0", "latency_s": 0.02}],
                        "lost": 3 if in_fault else 0},
            "/recon/ego": {"believed_phase": believed, "countdown_s": round(countdown, 2), "aoi_s": round(aoi, 3),
                           "tracks": [{"id": v["id"]} for v in vehicles]},
            "/app/decision": {"app": "RLVW", "decision": decision},
            "/ctrl/ego": {"action": "brake" if decision == "stop" else ("stop" if ego_speed == 0 else "cruise"),
                          "accel_mps2": -3.0 if decision == "stop" else 0.0},
            "/monitor/events": {"events": events},
        }
        base = start_ns + tick * dt_ns
        for ch in channels:
            payload = payloads.get(ch, {"seq": tick, "load": 0.5})
            yield ch, base + offsets[ch], payload
