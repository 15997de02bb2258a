"""The WINNER+ B1 line-of-sight path loss and the IEEE 802.11p receiver of the analytical 802.11p model of
Sepulcre et al. (IEEE TVT 71(1) 2022, DOI 10.1109/TVT.2021.3124708), as scalar kernels (issue 37 item 4): the
simulator's ``winner_b1_80211p`` channel (:mod:`.channel`) and the reference curve of ``bench/bench_prr.py``
(:mod:`services.simulator.v2x.analytic_80211p`) run these very bodies.

Units: distances and heights in metres, carrier frequency in GHz, losses in dB, powers in dBm.

- **Path loss** (the authors' ``get_PL_SH.m``; the WINNER+ B1 LOS model of 3GPP TR 36.885 Annex A.1.4 by
  common usage), with effective antenna heights ``h' = h - h_env`` and the breakpoint
  ``d_BP = 4 h'_tx h'_rx fc / c`` (c = 3e8 m/s as in the code: 78.5 m at 5.89 GHz and 1.5 m antennas)::

      d <  d_BP   22.7 log10(d) + 27 + 20 log10(fc)
      d >= d_BP   40 log10(d) + 7.56 - 17.3 log10(h'_tx) - 17.3 log10(h'_rx) + 2.7 log10(fc)

  never below free space, ``20 log10(d) + 46.4 + 20 log10(fc / 5)``; ``d`` at least :data:`MIN_DISTANCE_M`.
  An effective height under :data:`MIN_EFFECTIVE_HEIGHT_M` (an antenna at or below the environment height,
  where the formula's logarithm is undefined) counts as that minimum. Shadowing is the caller's: normal in
  dB with the model's 3 dB standard deviation.
- **Receiver** (the paper's sensing and propagation errors, without interference): a frame is sensed when
  its received power reaches the sensing threshold ``Psen``, then decoded with probability
  ``1 - FER(Eb/N0)``, ``Eb/N0 = SNR + 10 log10(BW / Rd)``; FER is the look-up table below, linear in dB
  between its points and constant beyond its ends (the authors' ``get_FER.m``, read from Goubet et al., IEEE
  TVT 64(9) 2015, Fig. 14, L = 1).
"""

from __future__ import annotations

import math

import numpy as np

from services.simulator.kernels import kernel

MIN_DISTANCE_M = 3.0  # the path loss at 3 m is used below 3 m (the authors' code; TR 36.885 Annex A.1.4)
MIN_EFFECTIVE_HEIGHT_M = 0.1  # ours: the floor of an effective antenna height (the formula needs h' > 0)
BREAKPOINT_SPEED_OF_LIGHT_M_S = 3e8  # c in d_BP, rounded as in the authors' code
# FER vs Eb/N0 [dB] (Goubet et al., IEEE TVT 64(9) 2015, Fig. 14, L = 1, as tabulated in the authors' code)
FER_EBN0_DB = np.array([0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0])
FER_VALUES = np.array([1.0, 1.0, 0.4, 1.5e-2, 4e-3, 3e-3, 2e-3, 1e-3])


@kernel
def winner_b1_path_loss_db(d_m: float, fc_ghz: float, h_tx_m: float, h_rx_m: float, h_env_m: float) -> float:
    """WINNER+ B1 LOS path loss [dB] at distance ``|d_m|`` (the model's formula above)."""
    d = abs(d_m)
    d = d if d > MIN_DISTANCE_M else MIN_DISTANCE_M
    he_tx = h_tx_m - h_env_m
    he_rx = h_rx_m - h_env_m
    he_tx = he_tx if he_tx > MIN_EFFECTIVE_HEIGHT_M else MIN_EFFECTIVE_HEIGHT_M
    he_rx = he_rx if he_rx > MIN_EFFECTIVE_HEIGHT_M else MIN_EFFECTIVE_HEIGHT_M
    d_bp = 4.0 * he_tx * he_rx * fc_ghz * 1e9 / BREAKPOINT_SPEED_OF_LIGHT_M_S
    if d < d_bp:
        pl = 22.7 * math.log10(d) + 27.0 + 20.0 * math.log10(fc_ghz)
    else:
        pl = (40.0 * math.log10(d) + 7.56 - 17.3 * math.log10(he_tx) - 17.3 * math.log10(he_rx)
              + 2.7 * math.log10(fc_ghz))
    free = 20.0 * math.log10(d) + 46.4 + 20.0 * math.log10(fc_ghz / 5.0)
    return pl if pl > free else free


@kernel
def frame_error_rate(ebn0_db: float) -> float:
    """FER at ``ebn0_db`` [dB] (the look-up table above; NaN for NaN)."""
    n = FER_EBN0_DB.shape[0]
    if ebn0_db <= FER_EBN0_DB[0]:
        return FER_VALUES[0]
    if ebn0_db >= FER_EBN0_DB[n - 1]:
        return FER_VALUES[n - 1]
    k = 0
    while k < n - 2 and ebn0_db > FER_EBN0_DB[k + 1]:
        k += 1
    x0, x1, y0, y1 = FER_EBN0_DB[k], FER_EBN0_DB[k + 1], FER_VALUES[k], FER_VALUES[k + 1]
    return y0 + (y1 - y0) * (ebn0_db - x0) / (x1 - x0)


@kernel
def decoded_probability(rssi_dbm: float, noise_dbm: float, sensing_dbm: float, ebn0_offset_db: float) -> float:
    """The receiver's delivery probability of a frame received at ``rssi_dbm``: 0 below the sensing threshold,
    else ``1 - FER(rssi - noise + ebn0_offset)`` (``ebn0_offset_db = 10 log10(BW / Rd)``)."""
    if not rssi_dbm >= sensing_dbm:
        return 0.0
    return 1.0 - frame_error_rate(rssi_dbm - noise_dbm + ebn0_offset_db)


@kernel
def winner_b1_path_losses_db(d_m: np.ndarray, fc_ghz: float, h_tx_m: float, h_rx_m: float, h_env_m: float,
                             out: np.ndarray) -> None:
    """:func:`winner_b1_path_loss_db` of every distance into ``out``."""
    for i in range(d_m.shape[0]):
        out[i] = winner_b1_path_loss_db(d_m[i], fc_ghz, h_tx_m, h_rx_m, h_env_m)


@kernel
def frame_error_rates(ebn0_db: np.ndarray, out: np.ndarray) -> None:
    """:func:`frame_error_rate` of every value into ``out``."""
    for i in range(ebn0_db.shape[0]):
        out[i] = frame_error_rate(ebn0_db[i])


__all__ = [
    "FER_EBN0_DB", "FER_VALUES", "MIN_DISTANCE_M", "MIN_EFFECTIVE_HEIGHT_M", "decoded_probability",
    "frame_error_rate", "frame_error_rates", "winner_b1_path_loss_db", "winner_b1_path_losses_db",
]
