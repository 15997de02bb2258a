"""The analytical IEEE 802.11p V2V packet-delivery model of Sepulcre, Gonzalez-Martín, Gozalvez,
Molina-Masegosa and Coll-Perales, "Analytical Models of the Performance of IEEE 802.11p Vehicle to
Vehicle Communications", IEEE Trans. Veh. Technol. 71(1), 2022 (early access Nov. 2021,
DOI 10.1109/TVT.2021.3124708; post-print arXiv:2104.07923), in numpy: a reference curve for the
channel bench (``bench/bench_prr.py``), not part of the simulator.

Set-up of the paper: vehicles on a straight highway, equally spaced ``1 / beta`` metres apart, every
one broadcasting ``B``-byte packets at ``lambda`` Hz with power ``Pt``; WINNER+ B1 path loss with
log-normal shadowing (:func:`winner_b1_path_loss_db`). The packet delivery ratio at Tx-Rx distance
``d`` is one minus four mutually exclusive error probabilities (equation numbers of the paper)::

    PDR(d) = 1 - dSEN(d) - dRXB(d) - dPRO(d) - dCOL(d)                                  (1)
    dSEN = pSEN                                                                          (3)
    dRXB = pRXB (1 - pSEN)                                                               (4)
    dPRO = pPRO (1 - pSEN)(1 - pRXB)                                                     (5)
    dCOL = pCOL (1 - pSEN)(1 - pRXB)(1 - pPRO)                                           (6)

- ``pSEN`` (12): received power below the sensing threshold, ``Q((Pt - PL(d) - Psen) / sigma)``.
- ``pPRO`` (24): the packet is sensed but lost to noise alone: the SNR's distribution (received power
  normal in dB, truncated at ``Psen``, over the noise) averaged against the frame error rate curve
  FER(Eb/N0), ``Eb/N0 = SINR + 10 log10(BW / Rd)``.
- ``pRXB`` (14)-(22): the receiver is busy with another packet: a closer concurrent transmitter
  (same backoff slot, 22) or a hidden terminal (16, 18) seized it. Both scale with the probability that
  the slot is idle, corrected by the CBR and the normalised autocorrelation of the packet-sensing
  ratio (PSR, 13, 20).
- ``pCOL`` (26)-(32): an interferer overlapping in time (concurrent, 22, or hidden, 18) lowers the SINR
  enough to lose the frame: ``p_int = (pSINR - pPRO) / (1 - pPRO)`` (30, 31), the SINR's distribution
  being the correlation of the received power's and the interference-plus-noise's densities.
- CBR (34, 35): ``CBR_u = beta lambda T_tr sum_d PSR(d)`` and the paper's quadratic correction.

Confirmed from: the authors' public MATLAB implementation of the paper (repository
``msepulcre/IEEE802.11p-model``: ``model80211p.m``, ``get_PL_SH.m``, ``get_SINRdistribution.m``,
``get_FER.m``), whose lines are annotated with the paper's equation numbers; this module follows it
equation by equation (the SINR densities on the same 0.1 dB grid, the same discrete sums). The
paper's PDF itself was not available, so the equations are confirmed only through that code. The FER
curve is the code's look-up table, read by its authors from Goubet et al., IEEE TVT 64(9) 2015,
Fig. 14 (L = 1), and used for every data rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.simulator.kernels import ieee80211p

FloatArray = NDArray[np.float64]
PathLossFn = Callable[[FloatArray], tuple[FloatArray, FloatArray]]

#: Tx-Rx distances of the paper's figures and of the bench [m]
DISTANCES_M = np.arange(0.0, 501.0, 25.0)

_SRC = "Sepulcre et al., IEEE TVT 71(1) 2022, as in the authors' MATLAB code (msepulcre/IEEE802.11p-model)"


def _p(default: Any, unit: str, source: str) -> Any:
    return field(default=default, metadata={"unit": unit, "source": source})


@dataclass(frozen=True)
class Analytic80211pParams:
    """Inputs of the analytical model; every field: unit and source in its metadata. Defaults: the
    paper's configuration "0.06 veh/m, 10 Hz, 23 dBm, 190 B, 6 Mb/s"."""

    density_veh_per_m: float = _p(0.06, "veh/m", _SRC + ": beta, tested 0.06 and 0.12")
    rate_hz: float = _p(10.0, "Hz", _SRC + ": lambda, tested 10 and 25 Hz")
    packet_bytes: int = _p(190, "B", _SRC + ": B, tested 190 and 500 B")
    header_bytes: int = _p(30, "B", _SRC + ": H, MAC/PHY headers as in the authors' OMNeT++ set-up")
    data_rate_bps: float = _p(6e6, "bit/s", _SRC + ": Rd, tested 6, 18, 27 Mb/s (6 Mb/s: QPSK 1/2)")
    tx_power_dbm: float = _p(23.0, "dBm", _SRC + ": Pt, tested 15, 23, 30 dBm")
    sensing_threshold_dbm: float = _p(-85.0, "dBm", _SRC + ": Psen")
    noise_dbm: float = _p(-95.0, "dBm", _SRC + ": background noise in 10 MHz with a 9 dB noise figure")
    bandwidth_hz: float = _p(10e6, "Hz", _SRC + ": BW, the 10 MHz 802.11p channel")
    slot_s: float = _p(13e-6, "s", _SRC + ": sigma, aSlotTime of IEEE 802.11-2012 (10 MHz)")
    preamble_signal_s: float = _p(40e-6, "s", _SRC + ": T_preamble 32 us + T_signal 8 us, IEEE 802.11-2012")
    carrier_frequency_hz: float = _p(5.89e9, "Hz", _SRC + ": fc of the WINNER+ B1 model")
    antenna_height_m: float = _p(1.5, "m", _SRC + ": h_BS = h_MS = 1.5 m (3GPP TR 36.885 vehicle UE)")
    environment_height_m: float = _p(0.5, "m", _SRC + ": average environment height of WINNER+ B1 "
                                     "(effective antenna heights 1.0 m)")
    shadowing_std_db: float = _p(3.0, "dB", _SRC + ": WINNER+ B1 LOS shadowing std")
    step_db: float = _p(0.1, "dB", _SRC + ": step_dB of the SINR densities")
    interferer_span_m: float = _p(1000.0, "m", _SRC + ": interferers up to round(1000 beta)/beta m on "
                                  "either side of the receiver")
    psr_span_m: int = _p(1500, "m", _SRC + ": PSR evaluated on -1500..1500 m in 1 m steps")

    @property
    def airtime_s(self) -> float:
        """T_tr = 40 us + (B + H) 8 / Rd (IEEE 802.11-2012 OFDM PHY timing)."""
        return self.preamble_signal_s + (self.packet_bytes + self.header_bytes) * 8.0 / self.data_rate_bps


def parameter_table(params: Analytic80211pParams | None = None) -> list[dict[str, str]]:
    """Rows ``{name, unit, value, source}`` for every input, plus the derived airtime."""
    p = params or Analytic80211pParams()
    rows = [{"name": f.name, "unit": f.metadata["unit"], "value": repr(getattr(p, f.name)),
             "source": f.metadata["source"]} for f in fields(p)]
    rows.append({"name": "airtime_s (derived)", "unit": "s", "value": f"{p.airtime_s:.6g}",
                 "source": "40 us + (B + H) 8 / Rd"})
    return rows


# FER vs Eb/N0 [dB] look-up table of the authors' code (Goubet et al., IEEE TVT 64(9) 2015, Fig. 14, L = 1),
# linear in dB between the points, 1 below 0 dB and 1e-3 above 35 dB: one home, the simulator's kernel
FER_EBN0_DB = ieee80211p.FER_EBN0_DB
FER_VALUES = ieee80211p.FER_VALUES


def frame_error_rate(ebn0_db: ArrayLike) -> FloatArray:
    """FER at ``ebn0_db`` (the look-up table above; the simulator's kernel)."""
    x = np.ascontiguousarray(np.asarray(ebn0_db, dtype=np.float64))
    out = np.empty(x.shape)
    ieee80211p.frame_error_rates(x.reshape(-1), out.reshape(-1))
    return out


def winner_b1_path_loss_db(distance_m: ArrayLike, params: Analytic80211pParams | None = None
                           ) -> tuple[FloatArray, FloatArray]:
    """(path loss [dB], shadowing std [dB]) of the WINNER+ B1 LOS model the paper uses (as in the authors'
    ``get_PL_SH.m``; the V2V model of 3GPP TR 36.885's evaluation methodology by common usage, section
    not confirmed): with effective heights ``h' = h - h_env`` and breakpoint
    ``d_BP = 4 h'_tx h'_rx fc / c`` (c = 3e8 as in the code; 78.5 m at 5.89 GHz)::

        d <  d_BP   22.7 log10(d) + 27 + 20 log10(fc/GHz)
        d >= d_BP   40 log10(d) + 7.56 - 17.3 log10(h'_tx) - 17.3 log10(h'_rx) + 2.7 log10(fc/GHz)

    never below free space, ``20 log10(d) + 46.4 + 20 log10(fc / 5 GHz)``; ``d`` at least 3 m. One home: the
    simulator's kernel (:func:`services.simulator.kernels.ieee80211p.winner_b1_path_loss_db`)."""
    p = params or Analytic80211pParams()
    d = np.ascontiguousarray(np.asarray(distance_m, dtype=np.float64))
    pl = np.empty(d.shape)
    h = p.antenna_height_m
    ieee80211p.winner_b1_path_losses_db(d.reshape(-1), p.carrier_frequency_hz / 1e9, h, h, p.environment_height_m,
                                        pl.reshape(-1))
    return pl, np.full(d.shape, p.shadowing_std_db)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _phi(x: FloatArray) -> FloatArray:
    """Standard normal CDF."""
    return np.asarray(0.5 * (1.0 + _erf(np.asarray(x) / math.sqrt(2.0))), dtype=np.float64)


@dataclass(frozen=True)
class PDRResult:
    """The model's outputs at ``distance_m``: PDR and the four error probabilities (each (D,)), and the CBR."""

    distance_m: FloatArray
    pdr: FloatArray
    sen: FloatArray
    rxb: FloatArray
    pro: FloatArray
    col: FloatArray
    cbr: float


def packet_delivery_ratio(params: Analytic80211pParams | None = None, distance_m: ArrayLike = DISTANCES_M,
                          path_loss: PathLossFn | None = None) -> PDRResult:
    """The model at Tx-Rx distances ``distance_m`` [m]; ``path_loss(d) -> (PL dB, sigma dB)`` replaces
    WINNER+ B1 (must accept negative distances, as the PSR sum runs over both sides)."""
    p = params or Analytic80211pParams()
    pl_fn: PathLossFn = path_loss or (lambda d: winner_b1_path_loss_db(d, p))
    dist = np.asarray(distance_m, dtype=np.float64)
    pt, psen, lam, ttr = p.tx_power_dbm, p.sensing_threshold_dbm, p.rate_hz, p.airtime_s
    ebn0_offset = 10.0 * math.log10(p.bandwidth_hz / p.data_rate_bps)

    # PSR (13) and CBR (34, 35)
    d_aux = np.arange(-p.psr_span_m, p.psr_span_m + 1, dtype=np.float64)
    pl_aux, sd_aux = pl_fn(d_aux)
    psr = _phi((pt - pl_aux - psen) / sd_aux)
    cbr_u = p.density_veh_per_m * lam * ttr * float(psr.sum())
    cbr = -0.2481 * cbr_u ** 2 + 0.913 * cbr_u + 0.003844
    # normalised autocorrelation of the PSR, lags 0.. (20)
    r_psr = np.correlate(psr, psr, "full")[psr.size - 1:]
    r_psr = r_psr / r_psr.max()

    # dB grid of the densities (as get_SINRdistribution: -200..200 dB)
    n_half = int(round(200.0 / p.step_db))
    x = np.arange(-n_half, n_half + 1) * p.step_db
    # FER on the lag grid: lag k <-> SINR = k step, k = -(n-1)..(n-1)
    lags = np.arange(-(x.size - 1), x.size) * p.step_db
    fer_lag = frame_error_rate(lags + ebn0_offset)

    pl_d, sd_d = pl_fn(dist)
    sen_pre = 1.0 - _phi((pt - pl_d - psen) / sd_d)  # (12)

    # G[dj, j] = E_x[FER(x - y_j)] over the received-power density of distance dj, truncated at Psen
    g = np.empty((dist.size, x.size))
    for k in range(dist.size):
        pr = np.exp(-0.5 * ((x - (pt - pl_d[k])) / sd_d[k]) ** 2)
        pr[x < psen - 1e-9] = 0.0
        total = pr.sum()
        if total <= 0.0:
            g[k] = 1.0  # nothing is sensed: the SEN error already accounts for every packet
            continue
        pr /= total
        g[k] = _g_row(pr, fer_lag, x.size)  # sum_i pr[i] FER((i - j) step)
    j_noise = int(round((p.noise_dbm - x[0]) / p.step_db))
    pro_pre = g[:, j_noise]  # (24): no interference, the I+N density is a point mass at the noise

    # interferers every 1/beta m on both sides of the receiver, up to round(1000 beta)/beta m
    n_int = int(round(p.interferer_span_m * p.density_veh_per_m))
    k_int = np.arange(-n_int, n_int + 1)
    k_int = k_int[k_int != 0]
    d_int_rx = k_int / p.density_veh_per_m
    pl_ir, sd_ir = pl_fn(np.abs(d_int_rx))

    # interference-plus-noise density of each interferer (get_SINRdistribution), rows normalised
    noise_mw = 10.0 ** (p.noise_dbm / 10.0)
    above = x > p.noise_dbm
    xa = x[above]
    lin = 10.0 ** (xa / 10.0)
    i_db = 10.0 * np.log10(lin - noise_mw)
    jac = lin / (lin - noise_mw)
    pin = np.zeros((d_int_rx.size, x.size))
    mu_i = (pt - pl_ir)[:, None]
    sd_i = sd_ir[:, None]
    pin[:, above] = jac[None, :] / sd_i * np.exp(-((i_db[None, :] - mu_i) ** 2) / (2.0 * sd_i ** 2))
    pin /= pin.sum(axis=1, keepdims=True)
    p_sinr = pin @ g.T  # (I, D): frame error probability with interferer i active (30)

    with np.errstate(invalid="ignore", divide="ignore"):
        p_int = np.where(pro_pre[None, :] >= 1.0, 0.0, (p_sinr - pro_pre[None, :]) / (1.0 - pro_pre[None, :]))  # (31)
    p_det_ir = _phi((pt - pl_ir - psen) / sd_ir)[:, None]  # the receiver senses interferer i
    d_int_tx = np.abs(d_int_rx[:, None] + dist[None, :])  # (I, D)
    pl_it, sd_it = pl_fn(d_int_tx.ravel())
    p_det_it = _phi((pt - pl_it.reshape(d_int_tx.shape) - psen) / sd_it.reshape(d_int_tx.shape))
    busy = 1.0 - cbr * r_psr[np.rint(d_int_tx).astype(np.int64)]
    closer = np.abs(d_int_rx)[:, None] < dist[None, :]

    p_sim_ct = p.slot_s * lam * p_det_it / busy  # (22)
    p_rxb_ct = np.where(closer, p_sim_ct * p_det_ir, 0.0)  # (21)
    p_rxb_ht = ttr * lam * p_det_ir * (1.0 - p_det_it) / busy  # (16)
    p_col_ct = np.where(closer, 0.0, p_int * p_sim_ct)  # (32)
    p_sim_ht = ttr * lam * (1.0 - p_det_it) / busy  # (18)
    p_col_ht = p_int * p_sim_ht + p_int * p_sim_ht * (1.0 - p_det_ir)  # (28)

    rxb_pre = 1.0 - np.prod(1.0 - (p_rxb_ct + p_rxb_ht), axis=0)  # (14)
    col_pre = 1.0 - np.prod(1.0 - (p_col_ct + p_col_ht), axis=0)  # (26)

    sen = sen_pre  # (3)
    rxb = rxb_pre * (1.0 - sen_pre)  # (4)
    pro = pro_pre * (1.0 - sen_pre) * (1.0 - rxb_pre)  # (5)
    col = col_pre * (1.0 - sen_pre) * (1.0 - rxb_pre) * (1.0 - pro_pre)  # (6)
    pdr = 1.0 - sen - rxb - pro - col  # (1)
    return PDRResult(dist, pdr, sen, rxb, pro, col, float(cbr))


def _g_row(pr: FloatArray, fer_lag: FloatArray, n: int) -> FloatArray:
    """``out[j] = sum_i pr[i] fer_lag[(i - j) + (n - 1)]`` for j = 0..n-1 (an FFT correlation)."""
    size = 1 << (2 * n - 1 + n - 1).bit_length()
    # convolution of pr with reversed fer: conv[m] = sum_i pr[i] fer_rev[m - i], fer_rev[t] = fer_lag[2n-2-t]
    conv = np.fft.irfft(np.fft.rfft(pr, size) * np.fft.rfft(fer_lag[::-1], size), size)
    # fer_lag[i - j + n - 1] = fer_rev[2n - 2 - (i - j + n - 1)] = fer_rev[(n - 1 + j) - i]
    return np.asarray(conv[n - 1:2 * n - 1], dtype=np.float64)


def mad_pp(model: ArrayLike, reference: ArrayLike) -> float:
    """Mean absolute deviation in percentage points between two ratio curves on the same distances
    (the paper's equation (36), x 100)."""
    a = np.asarray(model, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"curves differ in shape: {a.shape} vs {b.shape}")
    return float(np.mean(np.abs(a - b)) * 100.0)


__all__ = [
    "DISTANCES_M", "FER_EBN0_DB", "FER_VALUES", "Analytic80211pParams", "PDRResult", "frame_error_rate",
    "mad_pp", "packet_delivery_ratio", "parameter_table", "winner_b1_path_loss_db",
]
