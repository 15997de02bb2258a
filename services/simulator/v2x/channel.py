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
    at the noise floor (out of range, or too weak): such messages are lost. (Under the
    ``winner_b1_80211p`` model, that model's 802.11p receiver instead: sensed from
    ``sensing_threshold_dbm``, then ``1 - FER(Eb/N0)``; :mod:`services.simulator.kernels.ieee80211p`.)

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

One body: every term above is computed by the compiled kernels of
:mod:`services.simulator.kernels.channel` (one loop over links, whatever their number); this module checks
inputs, packs :attr:`ChannelParams.kernel_vector` and the buildings' arrays, and wraps the results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.simulator.kernels import channel as k_channel
from services.simulator.kernels import tr37885
from services.simulator.kernels.draws import counter_uniform

from .geometry import (
    BoolArray,
    BuildingSet,
    FloatArray,
    IntArray,
    as_heights,
    as_xy,
)

SPEED_OF_LIGHT_M_S = 299_792_458.0
#: path-loss models by name (the spec's ``v2x.channel.model``) -> the kernels' code
PATH_LOSS_MODELS = {"log_distance": k_channel.LOG_DISTANCE, "tr37885_highway": k_channel.TR37885_HIGHWAY,
                    "tr37885_urban": k_channel.TR37885_URBAN, "winner_b1_80211p": k_channel.WINNER_B1_80211P}
#: what a model sets besides itself (:meth:`ChannelParams.with_model`): the WINNER+ B1 / 802.11p model is checked
#: against the analytical curve of Sepulcre et al. (``bench/bench_prr.py``) in that paper's configuration, 23 dBm
#: and a 9 dB noise figure (-95 dBm noise in 10 MHz); the other models keep the operator's parameters
MODEL_PRESETS: dict[str, dict[str, float]] = {"winner_b1_80211p": {"tx_power_dbm": 23.0, "noise_figure_db": 9.0}}
#: the lattice on which a TR 37.885 channel's draws are keyed [m] (:func:`channel_draws`): the LOS
#: decorrelation distance
SHADOWING_LATTICE_M = tr37885.DCORR_LOS_M
#: A road point is covered when its best RSU's delivery probability is >= this.
COVERAGE_DELIVERY_THRESHOLD = 0.5

__all__ = [
    "COVERAGE_DELIVERY_THRESHOLD",
    "BuildingSet",
    "ChannelParams",
    "LinkBudget",
    "blockage_db",
    "channel_draws",
    "delivery_and_latency",
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
    path_loss_model: str = _p(
        "log_distance", "-", "log_distance: the LAST-V2X model above (the default); tr37885_highway / "
        "tr37885_urban: 3GPP TR 37.885 V15 §6.2.1 V2V path loss, LOS/NLOSv/NLOS states, vehicle blockage and "
        "shadowing (services/simulator/kernels/tr37885.py, every constant sourced there); winner_b1_80211p: "
        "WINNER+ B1 LOS path loss, 3 dB shadowing and the 802.11p receiver (sensing threshold, FER table) of "
        "Sepulcre et al., IEEE TVT 71(1) 2022, without interference (services/simulator/kernels/ieee80211p.py; "
        "its presets: 23 dBm, 9 dB noise figure); the spec's v2x.channel.model")
    nlosv_blocker_height_m: float = _p(
        1.6, "m", "height of the vehicle that blocks an NLOSv link under TR 37.885: 1.6 m passenger car "
        "(3 m truck or bus), TR 37.885 V15 §6.2.1")
    environment_height_m: float = _p(
        0.5, "m", "winner_b1_80211p only: WINNER+ B1 average environment height (effective antenna heights "
        "h - 0.5 m), as in Sepulcre et al., IEEE TVT 71(1) 2022, the authors' get_PL_SH.m")
    winner_shadowing_std_db: float = _p(
        3.0, "dB", "winner_b1_80211p only: WINNER+ B1 LOS shadowing standard deviation (Sepulcre et al. 2022); "
        "drawn per link like TR 37.885's (channel_draws)")
    sensing_threshold_dbm: float = _p(
        -85.0, "dBm", "winner_b1_80211p only: the 802.11p receiver senses a frame from this power (Psen of "
        "Sepulcre et al. 2022; IEEE 802.11-2012 Table 18-14: -85 dBm minimum sensitivity at 3 Mb/s, 10 MHz)")
    data_rate_bps: float = _p(
        6e6, "bit/s", "winner_b1_80211p only: 802.11p data rate Rd, Eb/N0 = SNR + 10 log10(BW / Rd); 6 Mb/s "
        "(QPSK 1/2), the ETSI ITS-G5 control-channel default (ETSI EN 302 663) and Sepulcre et al.'s")

    def __post_init__(self) -> None:
        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise ValueError(f"ChannelParams: {msg}")

        finite = [f.name for f in fields(self)
                  if f.name not in ("breakpoint_distance_m", "blockage_cap_db", "path_loss_model")]
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
        need(self.path_loss_model in PATH_LOSS_MODELS,
             f"path_loss_model must be one of {', '.join(PATH_LOSS_MODELS)}")
        need(self.nlosv_blocker_height_m > 0, "nlosv_blocker_height_m must be > 0")
        need(self.environment_height_m >= 0, "environment_height_m must be >= 0")
        need(self.winner_shadowing_std_db >= 0, "winner_shadowing_std_db must be >= 0")
        need(self.data_rate_bps > 0, "data_rate_bps must be > 0")

    def with_model(self, path_loss_model: str) -> ChannelParams:
        """These parameters under ``path_loss_model`` (the spec's ``v2x.channel.model``), with that model's
        :data:`MODEL_PRESETS`."""
        return replace(self, path_loss_model=path_loss_model,
                                   **MODEL_PRESETS.get(path_loss_model, {}))

    @property
    def draws_links(self) -> bool:
        """Whether the model draws per link (TR 37.885: LOS state, vehicle blockage, shadowing; WINNER+ B1:
        shadowing; :func:`channel_draws`); the log-distance model draws nothing."""
        return self.path_loss_model != "log_distance"

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

    @cached_property
    def kernel_vector(self) -> np.ndarray:
        """The parameters as the channel kernels read them (``services.simulator.kernels.channel``, rows
        ``RANGE_M`` .. ``LATENCY_SLOPE``), read-only."""
        k = k_channel
        v = np.zeros(k.N_PRM)
        v[k.RANGE_M], v[k.D0_M], v[k.REF_LOSS_DB] = self.range_m, self.reference_distance_m, self.reference_loss_db
        v[k.K_NEAR], v[k.K_FAR] = 10.0 * self.path_loss_exponent, 10.0 * self.path_loss_exponent_far
        bp = self.breakpoint_distance_m
        if bp is not None:
            v[k.HAS_BREAKPOINT], v[k.BREAKPOINT_M] = 1.0, bp
            v[k.AT_BREAKPOINT_DB] = (self.reference_loss_db + 10.0 * self.path_loss_exponent
                                     * math.log10(bp / self.reference_distance_m))
        v[k.HEAD_DBM], v[k.FLOOR_DBM] = self.tx_power_dbm + self.antenna_gain_dbi, self.noise_floor_dbm
        v[k.BLOCKAGE_DB_PER_M], v[k.WALL_DB] = self.blockage_db_per_m, self.wall_loss_db
        v[k.SATURATION_M], v[k.CAP_DB] = self.blockage_saturation_m, self.blockage_cap_db
        v[k.DELIVERY_SLOPE], v[k.DELIVERY_MID_DBM] = self.delivery_slope_per_db, self.delivery_midpoint_dbm
        v[k.LATENCY_KNEE_DBM], v[k.LATENCY_BASE_S] = self.latency_knee_dbm, self.latency_base_s
        v[k.LATENCY_SLOPE] = self.latency_slope_s_per_db
        v[k.MODEL] = PATH_LOSS_MODELS[self.path_loss_model]
        v[k.FC_GHZ], v[k.BLOCKER_M] = self.carrier_frequency_hz / 1e9, self.nlosv_blocker_height_m
        v[k.SENSING_DBM] = self.sensing_threshold_dbm
        v[k.EBN0_OFFSET_DB] = 10.0 * math.log10(self.bandwidth_hz / self.data_rate_bps)
        v[k.ENVIRONMENT_H_M], v[k.WINNER_SIGMA_DB] = self.environment_height_m, self.winner_shadowing_std_db
        v.setflags(write=False)
        return v


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
# Elementary terms (over arrays, usable on their own; the kernel's bodies)
# ---------------------------------------------------------------------------

def _term(kind: int, values: ArrayLike, params: ChannelParams) -> FloatArray:
    v = np.ascontiguousarray(np.asarray(values, dtype=np.float64))
    out = np.empty(v.shape)
    k_channel.terms(kind, v.reshape(-1), params.kernel_vector, out.reshape(-1))
    return out


def path_loss_db(distance_m: ArrayLike, params: ChannelParams) -> FloatArray:
    """Log-distance (optionally dual-slope) path loss in dB; ``d < d0`` clamps to ``d0``."""
    return _term(0, distance_m, params)


def delivery_probability(rssi_dbm: ArrayLike, params: ChannelParams) -> FloatArray:
    """Delivery probability of the model's receiver (logistic, or the 802.11p receiver under ``winner_b1_80211p``);
    exactly 0 at or below the noise floor."""
    return _term(1, rssi_dbm, params)


def latency_s(rssi_dbm: ArrayLike, params: ChannelParams) -> FloatArray:
    """Base latency, plus a linear term per dB below the RSSI knee."""
    return _term(2, rssi_dbm, params)


def _columns(tx_xy: ArrayLike, tx_height_m: ArrayLike, rx_xy: ArrayLike, rx_height_m: ArrayLike
             ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """The six float64 columns of N links, checked (shapes, finite, heights >= 0: ``ValueError``)."""
    p0 = as_xy(tx_xy, "tx_xy")
    p1 = as_xy(rx_xy, "rx_xy")
    n = p0.shape[0]
    if p1.shape[0] != n:
        raise ValueError("tx_xy and rx_xy must have the same number of rows")
    h0 = as_heights(tx_height_m, n, "tx_height_m")
    h1 = as_heights(rx_height_m, n, "rx_height_m")
    c = np.ascontiguousarray
    return c(p0[:, 0]), c(p0[:, 1]), c(h0), c(p1[:, 0]), c(p1[:, 1]), c(h1)


def blockage_db(tx_xy: ArrayLike, tx_height_m: ArrayLike, rx_xy: ArrayLike,
                rx_height_m: ArrayLike, buildings: BuildingSet | None,
                params: ChannelParams) -> FloatArray:
    """Height-aware building blockage (dB) per link, whatever its range; see the module docstring."""
    cols = _columns(tx_xy, tx_height_m, rx_xy, rx_height_m)
    out = np.zeros(cols[0].shape[0])
    if buildings is not None and len(buildings) and out.size:
        k_channel.blockages(*cols, *buildings.kernel_arrays, params.kernel_vector, buildings.max_edges, out)
    return out


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
                   params: ChannelParams | None = None, draws: FloatArray | None = None) -> LinkBudget:
    """Channel state for N tx-rx links at once.

    ``tx_xy``, ``rx_xy``: (N, 2) metres; ``tx_height_m``, ``rx_height_m``: (N,) or a
    scalar, antenna heights above ground (m); ``buildings``: footprints + roof
    heights (None = open space). Blockage is only computed for links within range.
    ``draws`` (3, N): the links' draws under a TR 37.885 model (:func:`channel_draws`); without them
    every link is the median link (LOS wherever its LOS probability is above 0; no shadowing).
    """
    params = params or ChannelParams()
    out = _budget(*_columns(tx_xy, tx_height_m, rx_xy, rx_height_m), buildings, params, draws)
    in_range = out[k_channel.IN_RANGE] != 0.0
    out.setflags(write=False)
    in_range.setflags(write=False)
    return LinkBudget(distance_m=out[k_channel.DISTANCE], path_loss_db=out[k_channel.PATH_LOSS],
                      blockage_db=out[k_channel.BLOCKAGE], rssi_dbm=out[k_channel.RSSI], in_range=in_range,
                      delivery_prob=out[k_channel.DELIVERY], latency_s=out[k_channel.LATENCY],
                      noise_floor_dbm=params.noise_floor_dbm)


def delivery_and_latency(tx_x: FloatArray, tx_y: FloatArray, tx_h: FloatArray, rx_x: FloatArray, rx_y: FloatArray,
                         rx_h: FloatArray, buildings: BuildingSet | None, params: ChannelParams,
                         draws: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
    """``(delivery_prob, latency_s)`` of :func:`evaluate_links` (same bits) for links given as six (N,) float64
    columns the caller built itself (transmitter x, y, antenna height, receiver x, y, height): a step's links.
    Non-finite values or negative heights raise ``ValueError``, as :func:`evaluate_links` does."""
    out = _budget(tx_x, tx_y, tx_h, rx_x, rx_y, rx_h, buildings, params, draws)
    return out[k_channel.DELIVERY], out[k_channel.LATENCY]


_OPEN_SPACE = BuildingSet.empty()
_NO_DRAWS = np.zeros((3, 0))


def _budget(x0: FloatArray, y0: FloatArray, h0: FloatArray, x1: FloatArray, y1: FloatArray, h1: FloatArray,
            buildings: BuildingSet | None, params: ChannelParams, draws: FloatArray | None = None) -> FloatArray:
    """The kernel's (N_OUT, N) link budget of six float64 columns."""
    blds = _OPEN_SPACE if buildings is None else buildings
    n = x0.shape[0]
    if not params.draws_links:
        draws = _NO_DRAWS
    elif draws is None:
        draws = np.zeros((3, n))  # the median link: LOS wherever its LOS probability is above 0, no shadowing
    elif draws.shape != (3, n):
        raise ValueError(f"draws must have shape (3, {n}), got {draws.shape}")
    out = np.empty((k_channel.N_OUT, n))
    status = k_channel.link_budget(x0, y0, h0, x1, y1, h1, *blds.kernel_arrays, params.kernel_vector,
                                   blds.max_edges, np.ascontiguousarray(draws, dtype=np.float64), out)
    if status == k_channel.NOT_FINITE:
        raise ValueError("link positions and antenna heights must be finite")
    if status == k_channel.NEGATIVE_HEIGHT:
        raise ValueError("antenna heights must be >= 0 (metres above ground)")
    return out


def channel_draws(base: int, sender_hash: NDArray[np.uint64], receiver_hash: NDArray[np.uint64], tx_x: FloatArray,
                  tx_y: FloatArray, rx_x: FloatArray, rx_y: FloatArray) -> FloatArray:
    """The (3, N) draws of N links under a model that draws (TR 37.885, WINNER+ B1; rows ``U_LOS``, ``Z_BLOCKAGE``, ``Z_SHADOWING`` of
    :mod:`services.simulator.kernels.channel`), keyed by identity, never by a link's place in a step or batch:
    the seed's SHADOWING substream ``base``, the unordered pair of ends (A -> B and B -> A share one channel),
    and where the link's midpoint lies on a lattice of :data:`SHADOWING_LATTICE_M`.

    - ``U_LOS`` (LOS or NLOSv) and ``Z_BLOCKAGE`` belong to the nearest lattice node: a link keeps its state
      while its midpoint stays within half a lattice cell of one node.
    - ``Z_SHADOWING`` is a spatially correlated standard normal: the normals of the four surrounding nodes,
      bilinearly weighted and divided by the root of the summed squared weights (unit variance everywhere).
      Stateless, unlike the AR(1) update of ``tr37885.correlated_shadowing_db`` (a per-link state no row- and
      batch-independent engine keeps yet); measured correlation 0.92 / 0.73 / 0.29 / 0.04 at 2.5 / 5 / 10 /
      15 m of movement, where the exponential model gives 0.78 / 0.61 / 0.37 / 0.22: shorter tails, a
      similar correlation length.

    Normals are Box-Muller of two counter-based uniforms."""
    lo = np.minimum(sender_hash, receiver_hash)
    hi = np.maximum(sender_hash, receiver_hash)
    mx = 0.5 * (np.asarray(tx_x) + np.asarray(rx_x)) / SHADOWING_LATTICE_M
    my = 0.5 * (np.asarray(tx_y) + np.asarray(rx_y)) / SHADOWING_LATTICE_M
    ix, iy = np.floor(mx), np.floor(my)
    fx, fy = mx - ix, my - iy
    cx, cy = ix.astype(np.int64), iy.astype(np.int64)
    n = lo.shape[0]

    def uniform(gx: IntArray, gy: IntArray, tag: int) -> FloatArray:
        return counter_uniform(base, lo, hi, gx, gy, np.full(n, tag, np.uint64))

    def normal(gx: IntArray, gy: IntArray, tag: int) -> FloatArray:
        u1, u2 = uniform(gx, gy, tag), uniform(gx, gy, tag + 1)
        return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * math.pi * u2)

    draws = np.empty((3, n))
    nx, ny = cx + (fx >= 0.5), cy + (fy >= 0.5)  # the nearest node
    draws[k_channel.U_LOS] = uniform(nx, ny, 1)
    draws[k_channel.Z_BLOCKAGE] = normal(nx, ny, 2)
    weights = ((1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy)
    corners = ((cx, cy), (cx + 1, cy), (cx, cy + 1), (cx + 1, cy + 1))
    z = sum((w * normal(gx, gy, 4) for w, (gx, gy) in zip(weights, corners, strict=True)), np.zeros(n))
    draws[k_channel.Z_SHADOWING] = z / np.sqrt(sum(w * w for w in weights))
    return draws


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
