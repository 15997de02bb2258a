"""Spatial V2X channel model (LAST-V2X Appendix B), vectorized over links.

Every V2I and V2V message passes independently through this channel for its
transmitter-receiver pair. Per link (all quantities in dB / dBm / metres / seconds):

``distance_m``
    3-D slant distance ``d = sqrt(|rx_xy - tx_xy|^2 + (h_rx - h_tx)^2)``.

``path_loss_db``
    Log-distance path loss with reference distance ``d0`` (1 m) and the free-space
    loss at ``d0`` as the intercept:
    ``PL(d) = FSPL(d0) + 10 n log10(max(d, d0) / d0)``,
    ``FSPL(d0) = 20 log10(4 pi d0 f / c)`` (= 47.86 dB at 5.9 GHz, 1 m).
    Optional dual slope (Cheng et al. 2007): beyond ``breakpoint_distance_m`` the
    exponent becomes ``path_loss_exponent_far`` (continuous at the breakpoint).

``blockage_db`` (building shadowing, the term the paper finds dominant)
    The ray is the straight 3-D segment between the two antenna tips; its height
    falls (or rises) linearly along the 2-D path,
    ``h_ray(s) = h_tx + (h_rx - h_tx) * s / D`` with ``s`` in [0, D], ``D`` the 2-D
    distance. For every building ``b`` (flat roof at ``H_b``) and every chord
    ``[s_a, s_b]`` of the 2-D path inside its footprint, the *height excess*
    ``e(s) = H_b - h_ray(s)`` is clipped to ``[0, h_sat]`` and integrated::

        L_eff = sum_b sum_chords  integral_{s_a}^{s_b} clip(e(s), 0, h_sat) / h_sat  ds
        W_eff = sum over wall crossings at s_w of clip(e(s_w), 0, h_sat) / h_sat
        blockage_db = min(B_NLOS, blockage_db_per_m * L_eff + wall_loss_db * W_eff)

    ``L_eff`` is in metres of "fully obstructed" path: a building entirely below the
    ray adds nothing; a building whose roof clears the ray by ``h_sat`` or more along
    the whole chord adds its full chord length; in between the contribution grows
    linearly with the height above the ray (so it is monotone in building height and
    saturates). Because ``e(s)`` is linear on a chord the integral is evaluated in
    closed form (exact, no sampling). The total is capped at ``B_NLOS``, the residual
    energy that reaches the receiver round corners and over roofs despite deep
    obstruction. The paper's model is the default ``wall_loss_db = 0``.

    Comparison with Sommer et al.'s obstacle model in Veins ("A Computationally
    Inexpensive Empirical Model of IEEE 802.11p Radio Shadowing in Urban
    Environments", WONS 2011; Veins ``SimpleObstacleShadowing``):
    ``L_obs = beta * n_walls + gamma * d_inside`` with beta = 9 dB per wall cut and
    gamma = 0.4 dB/m (the values shipped in Veins' ``examples/veins/config.xml``,
    ``db-per-cut="9" db-per-meter="0.4"``). Veins is purely 2-D and uncapped; our
    term is height-aware (only obstruction above the ray counts), has no per-wall
    term by default, a much steeper per-metre loss (5 dB/m; 1 dB/m in the paper's
    ablation), and a cap. A 20 m deep building gives 2*9 + 20*0.4 = 26 dB in Veins,
    min(35, 100) = 35 dB here at 5 dB/m and 20 dB at 1 dB/m. Setting
    ``wall_loss_db=9, blockage_db_per_m=0.4, blockage_cap_db=inf`` and a small
    ``blockage_saturation_m`` reproduces Veins for buildings that clear the ray.

``rssi_dbm``
    ``P_tx + G - PL - blockage`` for links within range, floored at the noise floor;
    exactly the noise floor for links beyond range ``R`` (``distance_m > range_m``).

``delivery_prob``
    Logistic in RSSI, ``1 / (1 + exp(-k (rssi - rssi_50)))``, and exactly 0 for links
    at the noise floor (out of range, or too weak): such messages are lost.

``latency_s``
    ``latency_base_s + latency_slope_s_per_db * max(0, knee - rssi)``: constant above
    the RSSI knee, growing linearly below it. Defined for every link; only meaningful
    for delivered messages.

A message is delivered when its link is not at the noise floor and a Bernoulli draw
with ``delivery_prob`` succeeds (:func:`sample_delivery`, with a caller-supplied
``numpy.random.Generator`` so runs replay from the scenario seed); semantic faults
act on top of this, elsewhere.

The defaults are representative, not measured (as in the paper); each field of
:class:`ChannelParams` carries its unit and public source in its metadata, and
:func:`parameter_table` renders them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .geometry import (
    BoolArray,
    BuildingSet,
    FloatArray,
    IntArray,
    as_heights,
    as_xy,
)

SPEED_OF_LIGHT_M_S = 299_792_458.0
#: A road point is covered when its best RSU's delivery probability is >= this.
COVERAGE_DELIVERY_THRESHOLD = 0.5

__all__ = [
    "COVERAGE_DELIVERY_THRESHOLD",
    "BuildingSet",
    "ChannelParams",
    "LinkBudget",
    "blockage_db",
    "delivery_and_latency",
    "delivery_and_latency_rows",
    "delivery_probability",
    "evaluate_links",
    "latency_s",
    "parameter_table",
    "path_loss_db",
    "sample_delivery",
]


def _p(default: Any, unit: str, source: str) -> Any:
    return field(default=default, metadata={"unit": unit, "source": source})


@dataclass(frozen=True)
class ChannelParams:
    """Channel parameters. Every field: unit and public source in its metadata.

    Derived quantities: :attr:`thermal_noise_dbm` (kTB, -104.0 dBm for 10 MHz),
    :attr:`noise_floor_dbm` (+ noise figure, -98.0 dBm), :attr:`reference_loss_db`
    (free-space loss at ``d0``, 47.86 dB at 5.9 GHz and 1 m).
    """

    carrier_frequency_hz: float = _p(
        5.9e9, "Hz",
        "5.9 GHz ITS band (5.850-5.925 GHz): FCC 47 CFR 90.377 / IEEE 802.11p (DSRC), "
        "ETSI EN 302 663 (ITS-G5), 3GPP band 47 (LTE-V2X PC5)")
    bandwidth_hz: float = _p(
        10e6, "Hz", "10 MHz channels of IEEE 802.11p / ETSI EN 302 663 and 3GPP TR 36.885 "
        "(V2X evaluation bandwidth)")
    thermal_noise_density_dbm_hz: float = _p(
        -174.0, "dBm/Hz", "kT at T0 = 290 K (Johnson-Nyquist); x 10 MHz -> -104 dBm")
    noise_figure_db: float = _p(
        6.0, "dB", "receiver noise figure giving the -98 dBm floor for 10 MHz used by the "
        "LAST-V2X design; 3GPP TR 36.885 assumes 9 dB for UEs, Veins' example uses "
        "-110 dBm thermal noise")
    tx_power_dbm: float = _p(
        20.0, "dBm", "20-23 dBm: ASTM E2213-03 / FCC 47 CFR 90.377 DSRC class C (20 dBm); "
        "3GPP TR 36.885 Table A.1.2-1 V2X UE max power 23 dBm")
    antenna_gain_dbi: float = _p(
        0.0, "dBi", "combined tx + rx antenna gain; isotropic (0 dBi) as a conservative "
        "default (3GPP TR 36.885 uses 3 dBi per vehicle antenna)")
    vehicle_antenna_height_m: float = _p(
        1.5, "m", "3GPP TR 36.885 Table A.1.2-1: vehicle UE antenna height 1.5 m")
    rsu_antenna_height_m: float = _p(
        5.0, "m", "3GPP TR 36.885 Table A.1.2-1: RSU antenna height 5 m (5-6 m on "
        "signal mast arms in deployments)")
    reference_distance_m: float = _p(
        1.0, "m", "log-distance model reference d0 = 1 m (Rappaport, Wireless "
        "Communications, 2nd ed., sec. 4.9.1); intercept = Friis free-space loss at d0")
    path_loss_exponent: float = _p(
        2.1, "-", "Cheng et al., IEEE JSAC 25(8) 2007, 5.9 GHz suburban V2V: gamma1 = 2.1 "
        "up to ~100 m; Karedal et al., IEEE TVT 60(1) 2011: 1.6-1.8 (LOS, 5.2 GHz); "
        "urban/NLOS fits reach ~2.75 -- range 2-2.75")
    breakpoint_distance_m: float | None = _p(
        None, "m", "dual-slope breakpoint; None = single slope. Cheng et al. 2007 report "
        "a critical distance of ~100 m")
    path_loss_exponent_far: float = _p(
        3.8, "-", "second slope beyond the breakpoint, Cheng et al. 2007 (gamma2 = 3.8); "
        "unused with a single slope")
    range_m: float = _p(
        150.0, "m", "LAST-V2X Table 4 / corridor study ranges 50, 100, 150 m; links "
        "beyond get the noise floor")
    blockage_db_per_m: float = _p(
        5.0, "dB/m", "LAST-V2X default 5 dB/m (ablation 1 dB/m); Veins/Sommer et al. 2011 "
        "fit 0.4 dB/m plus 9 dB per wall")
    blockage_saturation_m: float = _p(
        1.5, "m", "height above the ray at which a building counts as fully obstructing: "
        "~ first Fresnel-zone radius at mid-path, sqrt(lambda d / 4) = 1.1-1.4 m for "
        "100-150 m links at 5.9 GHz (ITU-R P.526)")
    blockage_cap_db: float = _p(
        35.0, "dB", "B_NLOS, residual energy round corners/roofs; representative: 5.9 GHz "
        "street-intersection NLOS measurements report excess losses of the order of "
        "20-40 dB over LOS (e.g. Mangel et al., IEEE VNC 2011); the paper leaves it "
        "unstated")
    wall_loss_db: float = _p(
        0.0, "dB/wall", "per-wall term of Sommer et al. 2011 (Veins: 9 dB/cut); 0 = the "
        "LAST-V2X model (per-metre only)")
    latency_base_s: float = _p(
        0.002, "s", "one-hop 802.11p access + airtime of a ~300 B BSM at 6 Mb/s is ~1-2 ms "
        "(AIFS + backoff + 0.4-0.5 ms frame); representative")
    latency_knee_dbm: float = _p(
        -85.0, "dBm", "IEEE 802.11-2012 Table 18-14: -85 dBm minimum sensitivity, 3 Mb/s "
        "at 10 MHz spacing; below it latency grows")
    latency_slope_s_per_db: float = _p(
        0.001, "s/dB", "representative 1 ms per dB below the knee (13 ms extra at the "
        "noise floor); well inside the 100 ms of 3GPP TS 22.185 / SAE J2945/1")
    delivery_midpoint_dbm: float = _p(
        -90.0, "dBm", "RSSI at 50 % delivery: 8 dB SNR over the -98 dBm floor (BPSK/QPSK "
        "1/2 decoding threshold region); near Veins' -89 dBm sensitivity")
    delivery_slope_per_db: float = _p(
        0.44, "1/dB", "logistic slope ln(9)/5: p = 0.9 at -85 dBm (802.11 sensitivity at "
        "<= 10 % PER) and p = 0.1 at -95 dBm")

    def __post_init__(self) -> None:
        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise ValueError(f"ChannelParams: {msg}")

        finite = [f.name for f in fields(self)
                  if f.name not in ("breakpoint_distance_m", "blockage_cap_db")]
        for name in finite:
            need(math.isfinite(getattr(self, name)), f"{name} must be finite")
        need(self.carrier_frequency_hz > 0, "carrier_frequency_hz must be > 0")
        need(self.bandwidth_hz > 0, "bandwidth_hz must be > 0")
        need(self.noise_figure_db >= 0, "noise_figure_db must be >= 0")
        need(self.vehicle_antenna_height_m >= 0 and self.rsu_antenna_height_m >= 0,
             "antenna heights must be >= 0")
        need(self.reference_distance_m > 0, "reference_distance_m must be > 0")
        need(self.path_loss_exponent > 0 and self.path_loss_exponent_far > 0,
             "path-loss exponents must be > 0")
        if self.breakpoint_distance_m is not None:
            need(math.isfinite(self.breakpoint_distance_m)
                 and self.breakpoint_distance_m > self.reference_distance_m,
                 "breakpoint_distance_m must be finite and > reference_distance_m")
        need(self.range_m > 0, "range_m must be > 0")
        need(self.blockage_db_per_m >= 0, "blockage_db_per_m must be >= 0")
        need(self.blockage_saturation_m > 0, "blockage_saturation_m must be > 0")
        need(not math.isnan(self.blockage_cap_db) and self.blockage_cap_db >= 0,
             "blockage_cap_db must be >= 0 (inf allowed)")
        need(self.wall_loss_db >= 0, "wall_loss_db must be >= 0")
        need(self.latency_base_s >= 0, "latency_base_s must be >= 0")
        need(self.latency_slope_s_per_db >= 0, "latency_slope_s_per_db must be >= 0")
        need(self.delivery_slope_per_db > 0, "delivery_slope_per_db must be > 0")

    @cached_property  # derived once per params object: the channel reads them on every link evaluation
    def wavelength_m(self) -> float:
        return SPEED_OF_LIGHT_M_S / self.carrier_frequency_hz

    @cached_property
    def thermal_noise_dbm(self) -> float:
        """kTB over the channel bandwidth (-104.0 dBm for 10 MHz)."""
        return self.thermal_noise_density_dbm_hz + 10.0 * math.log10(self.bandwidth_hz)

    @cached_property
    def noise_floor_dbm(self) -> float:
        """Thermal noise + receiver noise figure (-98.0 dBm by default)."""
        return self.thermal_noise_dbm + self.noise_figure_db

    @cached_property
    def reference_loss_db(self) -> float:
        """Free-space (Friis) loss at ``reference_distance_m`` (47.86 dB at 5.9 GHz, 1 m)."""
        return 20.0 * math.log10(4.0 * math.pi * self.reference_distance_m / self.wavelength_m)


def parameter_table(params: ChannelParams | None = None) -> list[dict[str, str]]:
    """Rows ``{name, unit, value, source}`` for every parameter (plus derived ones)."""
    p = params or ChannelParams()
    rows = [{"name": f.name, "unit": f.metadata["unit"], "value": repr(getattr(p, f.name)),
             "source": f.metadata["source"]} for f in fields(p)]
    rows += [
        {"name": "thermal_noise_dbm (derived)", "unit": "dBm",
         "value": f"{p.thermal_noise_dbm:.2f}", "source": "-174 dBm/Hz + 10 log10(B)"},
        {"name": "noise_floor_dbm (derived)", "unit": "dBm",
         "value": f"{p.noise_floor_dbm:.2f}", "source": "thermal noise + noise figure"},
        {"name": "reference_loss_db (derived)", "unit": "dB",
         "value": f"{p.reference_loss_db:.2f}", "source": "Friis 20 log10(4 pi d0 / lambda)"},
    ]
    return rows


# ---------------------------------------------------------------------------
# Elementary terms (vectorized, usable on their own)
# ---------------------------------------------------------------------------

def path_loss_db(distance_m: ArrayLike, params: ChannelParams) -> FloatArray:
    """Log-distance (optionally dual-slope) path loss in dB; ``d < d0`` clamps to ``d0``."""
    d = np.maximum(np.asarray(distance_m, dtype=np.float64), params.reference_distance_m)
    d0 = params.reference_distance_m
    pl = params.reference_loss_db + 10.0 * params.path_loss_exponent * np.log10(d / d0)
    bp = params.breakpoint_distance_m
    if bp is not None:
        at_bp = params.reference_loss_db + 10.0 * params.path_loss_exponent * math.log10(bp / d0)
        far = at_bp + 10.0 * params.path_loss_exponent_far * np.log10(d / bp)
        pl = np.where(d > bp, far, pl)
    return pl


def delivery_probability(rssi_dbm: ArrayLike, params: ChannelParams) -> FloatArray:
    """Logistic delivery probability; exactly 0 at or below the noise floor."""
    r = np.asarray(rssi_dbm, dtype=np.float64)
    z = -params.delivery_slope_per_db * (r - params.delivery_midpoint_dbm)
    p = 0.5 * (1.0 - np.tanh(0.5 * z))  # == 1 / (1 + exp(z)), overflow-free
    return np.where(r <= params.noise_floor_dbm, 0.0, p)


def latency_s(rssi_dbm: ArrayLike, params: ChannelParams) -> FloatArray:
    """Base latency, plus a linear term per dB below the RSSI knee."""
    r = np.asarray(rssi_dbm, dtype=np.float64)
    below = np.maximum(0.0, params.latency_knee_dbm - r)
    return params.latency_base_s + params.latency_slope_s_per_db * below


def _clipped_excess_length(e0: FloatArray, e1: FloatArray, length: FloatArray, sat: float
                           ) -> FloatArray:
    """``integral_0^L clip(e(s), 0, sat) / sat ds`` for ``e`` linear from e0 to e1.

    With ``F`` the antiderivative of ``g(e) = clip(e, 0, sat) / sat`` (0 for e <= 0,
    e^2 / (2 sat) up to sat, e - sat/2 beyond), the integral is
    ``L (F(e1) - F(e0)) / (e1 - e0)``, or ``L g(e0)`` when e1 == e0.
    """
    def antideriv(e: FloatArray) -> FloatArray:
        return np.where(e <= 0.0, 0.0, np.where(e < sat, e * e / (2.0 * sat), e - sat / 2.0))

    de = e1 - e0
    flat = np.abs(de) <= 1e-9 * max(1.0, sat)
    safe = np.where(flat, 1.0, de)
    sloped = length * (antideriv(e1) - antideriv(e0)) / safe
    level = length * np.clip(0.5 * (e0 + e1), 0.0, sat) / sat
    return np.where(flat, level, sloped)


def blockage_db(tx_xy: ArrayLike, tx_height_m: ArrayLike, rx_xy: ArrayLike,
                rx_height_m: ArrayLike, buildings: BuildingSet | None,
                params: ChannelParams) -> FloatArray:
    """Height-aware building blockage (dB) per link; see the module docstring."""
    p0 = as_xy(tx_xy, "tx_xy")
    p1 = as_xy(rx_xy, "rx_xy")
    n = p0.shape[0]
    if p1.shape[0] != n:
        raise ValueError("tx_xy and rx_xy must have the same number of rows")
    h0 = as_heights(tx_height_m, n, "tx_height_m")
    h1 = as_heights(rx_height_m, n, "rx_height_m")
    return _blockage(p0, h0, p1, h1, buildings, params)


def _blockage(p0: FloatArray, h0: FloatArray, p1: FloatArray, h1: FloatArray,
              buildings: BuildingSet | None, params: ChannelParams,
              pairs: tuple[IntArray, IntArray] | None = None) -> FloatArray:
    """Blockage (dB) per link (``pairs``: the links' building candidates, when the caller has them)."""
    n = p0.shape[0]
    out = np.zeros(n)
    if buildings is None or len(buildings) == 0 or n == 0:
        return out
    if params.blockage_db_per_m == 0.0 and params.wall_loss_db == 0.0:
        return out
    sat = params.blockage_saturation_m
    ch = buildings.chords(p0, p1, pairs)
    if ch.link.size:
        dist2d = np.hypot(*(p1 - p0).T)
        li = ch.link
        dh = h1[li] - h0[li]
        hb = buildings.heights_m[ch.building]
        e0 = hb - (h0[li] + dh * ch.t0)
        e1 = hb - (h0[li] + dh * ch.t1)
        eff = _clipped_excess_length(e0, e1, (ch.t1 - ch.t0) * dist2d[li], sat)
        out += params.blockage_db_per_m * np.bincount(li, weights=eff, minlength=n)
    if params.wall_loss_db > 0.0 and ch.wall_link.size:
        wl = ch.wall_link
        hw = h0[wl] + (h1[wl] - h0[wl]) * ch.wall_t
        w = np.clip(buildings.heights_m[ch.wall_building] - hw, 0.0, sat) / sat
        out += params.wall_loss_db * np.bincount(wl, weights=w, minlength=n)
    return np.minimum(out, params.blockage_cap_db)


# ---------------------------------------------------------------------------
# Link budget
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class LinkBudget:
    """Per-link channel state; every array has shape (N,), same order as the inputs.

    ``distance_m`` 3-D slant distance (m); ``path_loss_db`` (dB); ``blockage_db`` (dB,
    in [0, B_NLOS]); ``rssi_dbm`` (dBm, >= noise floor; == noise floor when out of
    range or too weak); ``in_range`` (distance <= R); ``delivery_prob`` in [0, 1];
    ``latency_s`` (s). ``noise_floor_dbm`` is the floor they were computed against.
    """

    distance_m: FloatArray
    path_loss_db: FloatArray
    blockage_db: FloatArray
    rssi_dbm: FloatArray
    in_range: BoolArray
    delivery_prob: FloatArray
    latency_s: FloatArray
    noise_floor_dbm: float

    def __len__(self) -> int:
        return int(self.distance_m.shape[0])

    @property
    def at_noise_floor(self) -> BoolArray:
        """Links that are lost regardless of the draw (out of range or too weak)."""
        return self.rssi_dbm <= self.noise_floor_dbm


def evaluate_links(tx_xy: ArrayLike, tx_height_m: ArrayLike, rx_xy: ArrayLike,
                   rx_height_m: ArrayLike, buildings: BuildingSet | None,
                   params: ChannelParams | None = None) -> LinkBudget:
    """Channel state for N tx-rx links at once.

    ``tx_xy``, ``rx_xy``: (N, 2) metres; ``tx_height_m``, ``rx_height_m``: (N,) or a
    scalar, antenna heights above ground (m); ``buildings``: footprints + roof
    heights (None = open space). Blockage is only computed for links within range.
    """
    params = params or ChannelParams()
    p0 = as_xy(tx_xy, "tx_xy")
    p1 = as_xy(rx_xy, "rx_xy")
    n = p0.shape[0]
    if p1.shape[0] != n:
        raise ValueError("tx_xy and rx_xy must have the same number of rows")
    h0 = as_heights(tx_height_m, n, "tx_height_m")
    h1 = as_heights(rx_height_m, n, "rx_height_m")
    arrays = _link_budget(p0, h0, p1, h1, buildings, params)
    for arr in arrays:
        arr.setflags(write=False)
    return LinkBudget(*arrays, noise_floor_dbm=params.noise_floor_dbm)


def _link_budget(p0: FloatArray, h0: FloatArray, p1: FloatArray, h1: FloatArray, buildings: BuildingSet | None,
                 params: ChannelParams) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, BoolArray,
                                                 FloatArray, FloatArray]:
    """The arrays of :func:`evaluate_links` for validated inputs."""
    n = p0.shape[0]
    d2 = np.hypot(p1[:, 0] - p0[:, 0], p1[:, 1] - p0[:, 1])
    dist = np.hypot(d2, h1 - h0)
    in_range = dist <= params.range_m
    pl = path_loss_db(dist, params)
    blk = np.zeros(n)
    if buildings is not None and len(buildings) and np.count_nonzero(in_range):  # open space: no blockage to add
        idx = np.nonzero(in_range)[0]
        blk[idx] = _blockage(p0[idx], h0[idx], p1[idx], h1[idx], buildings, params)
    floor = params.noise_floor_dbm
    rx_power = params.tx_power_dbm + params.antenna_gain_dbi - pl - blk
    rssi = np.where(in_range, np.maximum(rx_power, floor), floor)
    prob = delivery_probability(rssi, params)
    lat = latency_s(rssi, params)
    return dist, pl, blk, rssi, in_range, prob, lat


def delivery_and_latency(tx_xy: FloatArray, tx_height_m: FloatArray, rx_xy: FloatArray, rx_height_m: FloatArray,
                         buildings: BuildingSet | None, params: ChannelParams) -> tuple[FloatArray, FloatArray]:
    """``(delivery_prob, latency_s)`` of :func:`evaluate_links` (same bits) for float64 ``(N, 2)``
    positions and ``(N,)`` heights the caller built itself; anything that would not pass the
    input checks (non-finite values, negative heights) goes through :func:`evaluate_links`, which
    raises as it always did."""
    ok = (tx_xy.ndim == 2 and tx_xy.shape[1:] == (2,) and rx_xy.shape == tx_xy.shape
          and tx_height_m.shape == rx_height_m.shape == tx_xy.shape[:1] and tx_xy.dtype == np.float64
          and rx_xy.dtype == np.float64 and tx_height_m.dtype == np.float64 and rx_height_m.dtype == np.float64)
    if ok and 0 < tx_xy.shape[0] <= SMALL_LINKS:
        out = _small_delivery_and_latency(tx_xy, tx_height_m, rx_xy, rx_height_m, buildings, params)
        if out is not None:
            return out
        ok = False  # an input the checks of evaluate_links refuse
    elif ok and tx_xy.shape[0]:
        total = float(tx_xy.sum()) + float(rx_xy.sum()) + float(tx_height_m.sum()) + float(rx_height_m.sum())
        ok = math.isfinite(total) and float(tx_height_m.min()) >= 0.0 and float(rx_height_m.min()) >= 0.0
    if not ok:
        lb = evaluate_links(tx_xy, tx_height_m, rx_xy, rx_height_m, buildings, params)
        return lb.delivery_prob, lb.latency_s
    arrays = _link_budget(tx_xy, tx_height_m, rx_xy, rx_height_m, buildings, params)
    return arrays[5], arrays[6]


SMALL_LINKS = 32  # up to this many links the arithmetic runs on floats (numpy only for hypot, log10, tanh)
SMALL_FOOTPRINT_EDGES = 8  # ... and their blockage too, where the footprints they may cross have this many edges
SMALL_CHORD_PAIRS = 8  # ... for up to this many (link, footprint) pairs
# the candidate footprints are found on floats where links x footprints is at most this (a big map's hundreds go to
# numpy's box tests: measured crossover 500-1,000 for one to three links)
SMALL_BOX_TESTS = 600


def _blockage_rows(x0: list[float], y0: list[float], h0: list[float], x1: list[float], y1: list[float],
                   h1: list[float], dist2d: list[float], links: list[int], blds: list[int], buildings: BuildingSet,
                   params: ChannelParams) -> list[float]:
    """:func:`_blockage` (same bits) of a few links as float columns, ``dist2d`` their np.hypot ground
    lengths, ``links, blds`` their candidate pairs as lists (:meth:`~.geometry.BuildingSet.candidate_pairs_rows`,
    or :meth:`~.geometry.BuildingSet.candidate_pairs` on a big map): the chords by
    :meth:`~.geometry.BuildingSet.chords_rows`, each link's excess lengths summed in chord order (as
    np.bincount)."""
    n = len(x0)
    if params.blockage_db_per_m == 0.0 and params.wall_loss_db == 0.0:
        return [0.0] * n
    pieces, walls = buildings.chords_rows(x0, y0, x1, y1, links, blds)
    out = [0.0] * n
    heights = buildings.heights_rows
    sat = params.blockage_saturation_m
    if pieces:
        eff = [0.0] * n
        for k, b, t0, t1 in pieces:
            dh = h1[k] - h0[k]
            hb = heights[b]
            eff[k] += _clipped_excess_length_row(hb - (h0[k] + dh * t0), hb - (h0[k] + dh * t1),
                                                 (t1 - t0) * dist2d[k], sat)
        per_m = params.blockage_db_per_m
        out = [0.0 + per_m * e for e in eff]
    wall_db = params.wall_loss_db
    if wall_db > 0.0 and walls:
        w_sum = [0.0] * n
        for k, b, t in walls:
            c = heights[b] - (h0[k] + (h1[k] - h0[k]) * t)
            w_sum[k] += (c if c < sat else sat) / sat if c > 0.0 else 0.0  # np.clip(., 0, sat) / sat
        out = [o + wall_db * w for o, w in zip(out, w_sum, strict=True)]
    cap = params.blockage_cap_db
    return [o if o < cap else cap for o in out]  # np.minimum(out, cap)


def _clipped_excess_length_row(e0: float, e1: float, length: float, sat: float) -> float:
    """:func:`_clipped_excess_length` of one chord, on floats (the branch np.where keeps, computed alone)."""
    de = e1 - e0
    if abs(de) <= 1e-9 * max(1.0, sat):
        c = 0.5 * (e0 + e1)
        return length * (c if 0.0 < c < sat else sat if c >= sat else 0.0) / sat  # np.clip(c, 0, sat)

    def antideriv(e: float) -> float:
        return 0.0 if e <= 0.0 else (e * e / (2.0 * sat) if e < sat else e - sat / 2.0)
    return length * (antideriv(e1) - antideriv(e0)) / de


def delivery_and_latency_rows(tx_x: list[float], tx_y: list[float], tx_h: list[float], rx_x: list[float],
                              rx_y: list[float], rx_h: list[float], buildings: BuildingSet | None,
                              params: ChannelParams) -> tuple[FloatArray, FloatArray]:
    """:func:`delivery_and_latency` (same bits) of links given as Python float columns (transmitter x, y,
    antenna height, receiver x, y, height): a step's few links, collected on floats, need no arrays."""
    n = len(tx_x)
    if 0 < n <= SMALL_LINKS:
        out = _small_rows(tx_x, tx_y, tx_h, rx_x, rx_y, rx_h, buildings, params)
        if out is not None:
            return out
    p0 = np.array([tx_x, tx_y], dtype=np.float64).T.copy()
    p1 = np.array([rx_x, rx_y], dtype=np.float64).T.copy()
    return delivery_and_latency(p0, np.array(tx_h, dtype=np.float64), p1, np.array(rx_h, dtype=np.float64),
                                buildings, params)


def _small_delivery_and_latency(p0: FloatArray, h0: FloatArray, p1: FloatArray, h1: FloatArray,
                                buildings: BuildingSet | None, params: ChannelParams
                                ) -> tuple[FloatArray, FloatArray] | None:
    """:func:`_small_rows` of (N, 2) positions and (N,) heights."""
    return _small_rows(p0[:, 0].tolist(), p0[:, 1].tolist(), h0.tolist(), p1[:, 0].tolist(), p1[:, 1].tolist(),
                       h1.tolist(), buildings, params)


def _unary_rows(f: np.ufunc, xs: list[float]) -> list[float]:
    """``f(xs).tolist()``; a lone element goes to the ufunc as a Python float: the same float64 loop for half
    the call overhead of a one-element list (most steps evaluate a single link)."""
    return [float(f(xs[0]))] if len(xs) == 1 else f(xs).tolist()


def _small_rows(x0: list[float], y0: list[float], ha: list[float], x1: list[float], y1: list[float],
                hb: list[float], buildings: BuildingSet | None, params: ChannelParams
                ) -> tuple[FloatArray, FloatArray] | None:
    """:func:`_link_budget`'s delivery probability and latency, term by term in the same order on
    Python floats; the functions whose bits differ between numpy and ``math`` (hypot, log10, tanh)
    are still numpy's, one call for all links. None: non-finite positions or heights, or negative
    heights (inputs :func:`evaluate_links` refuses)."""
    if not (all(map(math.isfinite, x0 + y0 + x1 + y1 + ha + hb)) and min(ha) >= 0.0 and min(hb) >= 0.0):
        return None
    n = len(x0)
    d2 = np.hypot([x1[i] - x0[i] for i in range(n)], [y1[i] - y0[i] for i in range(n)])
    d2_l = d2.tolist()
    dz = [hb[i] - ha[i] for i in range(n)]
    # hypot(x, +-0) is |x| exactly (C99 Annex F), and d2 >= 0: vehicle-to-vehicle links need no second call
    dist = np.hypot(d2, dz).tolist() if any(dz) else d2_l
    rng_m, d0 = params.range_m, params.reference_distance_m
    in_range = [d <= rng_m for d in dist]
    dc = [d if d > d0 else d0 for d in dist]  # np.maximum(dist, d0)
    k_near = 10.0 * params.path_loss_exponent
    ref = params.reference_loss_db
    lg = _unary_rows(np.log10, [d / d0 for d in dc])
    pl = [ref + k_near * v for v in lg]
    bp = params.breakpoint_distance_m
    if bp is not None:
        at_bp = ref + k_near * math.log10(bp / d0)
        k_far = 10.0 * params.path_loss_exponent_far
        lg_far = _unary_rows(np.log10, [d / bp for d in dc])
        pl = [at_bp + k_far * lf if d > bp else p for d, p, lf in zip(dc, pl, lg_far, strict=True)]
    blk = [0.0] * n
    if buildings is not None and len(buildings) and any(in_range):
        idx = [i for i in range(n) if in_range[i]]
        xs0, ys0, xs1, ys1 = ([c[i] for i in idx] for c in (x0, y0, x1, y1))
        p0 = p1 = None
        # the buildings a link may cross: box tests on floats where they are few, else numpy's (a big map)
        if len(idx) * len(buildings) <= SMALL_BOX_TESTS:
            li, bi = buildings.candidate_pairs_rows(xs0, ys0, xs1, ys1)
        else:
            p0 = np.array([xs0, ys0], dtype=np.float64).T.copy()
            p1 = np.array([xs1, ys1], dtype=np.float64).T.copy()
            li_a, bi_a = buildings.candidate_pairs(p0, p1)
            li, bi = li_a.tolist(), bi_a.tolist()
        if not li:
            pass  # no link may cross a building (most steps): blockage 0.0, what _blockage returns (min(0, cap >= 0))
        elif len(li) <= SMALL_CHORD_PAIRS and buildings.max_edges(bi) <= SMALL_FOOTPRINT_EDGES:
            for j, v in enumerate(_blockage_rows(xs0, ys0, [ha[i] for i in idx], xs1, ys1, [hb[i] for i in idx],
                                                 [d2_l[i] for i in idx], li, bi, buildings, params)):
                blk[idx[j]] = v
        else:
            if p0 is None or p1 is None:
                p0 = np.array([xs0, ys0], dtype=np.float64).T.copy()
                p1 = np.array([xs1, ys1], dtype=np.float64).T.copy()
            h0 = np.array([ha[i] for i in idx], dtype=np.float64)
            h1 = np.array([hb[i] for i in idx], dtype=np.float64)
            found = np.array(li, dtype=np.intp), np.array(bi, dtype=np.intp)
            for i, v in zip(idx, _blockage(p0, h0, p1, h1, buildings, params, found).tolist(), strict=True):
                blk[i] = v
    floor = params.noise_floor_dbm
    head = params.tx_power_dbm + params.antenna_gain_dbi
    rssi = []
    for i in range(n):
        rp = head - pl[i] - blk[i]
        rssi.append((rp if rp > floor else floor) if in_range[i] else floor)  # np.where(in_range, np.maximum(.))
    neg_slope, mid = -params.delivery_slope_per_db, params.delivery_midpoint_dbm
    th = _unary_rows(np.tanh, [0.5 * (neg_slope * (r - mid)) for r in rssi])
    prob = [0.0 if r <= floor else 0.5 * (1.0 - v) for r, v in zip(rssi, th, strict=True)]
    knee, base, lat_slope = params.latency_knee_dbm, params.latency_base_s, params.latency_slope_s_per_db
    lat = []
    for r in rssi:
        below = knee - r
        lat.append(base + lat_slope * (0.0 if 0.0 > below else below))  # np.maximum(0.0, .)
    return np.array(prob, dtype=np.float64), np.array(lat, dtype=np.float64)


def sample_delivery(link_budget: LinkBudget, rng: np.random.Generator) -> BoolArray:
    """One Bernoulli draw per link: delivered iff ``u < delivery_prob``, ``u ~ U[0, 1)``.

    Always consumes exactly N uniforms from ``rng`` (also for hopeless links), so
    the random stream -- and therefore a replay from the scenario seed -- does not
    depend on which links happen to be in range. Links at the noise floor have
    probability 0 and are never delivered.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (seeded from the scenario)")
    u = rng.random(len(link_budget))
    return u < link_budget.delivery_prob
