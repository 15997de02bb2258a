"""Packet reception ratio vs distance, checked against a published 802.11p curve (prints; not a test).

    .venv/bin/python bench/bench_prr.py [--draws 20000] [--seed 0] [--table]

One V2V link in open space (no buildings), antennas 1.5 m, Tx-Rx distance 0-500 m in 25 m steps:

(a) ``current``: the simulator's channel, ``evaluate_links(..., None, ChannelParams())`` (PRR =
    ``delivery_prob``): log-distance path loss, logistic receiver, 150 m range cut-off.
(b) ``tr37885``: 3GPP TR 37.885 highway V2V (``services/simulator/kernels/tr37885.py``): LOS / NLOSv
    drawn with the highway LOS probability, car blocker (1.6 m) in NLOSv, log-normal shadowing;
    Monte Carlo over ``--draws`` draws per distance (``numpy`` PCG64, ``--seed``; the same draws at
    every distance), mean delivery probability. Two receivers:
    ``tr37885/logistic``  the simulator's own channel with ``v2x.channel.model = tr37885_highway``
                          (``evaluate_links`` given the draws; range 2 km): 20 dBm, 0 dBi, the logistic in
                          RSSI (50 % at -90 dBm), 0 at or below the -98 dBm noise floor;
    ``tr37885/802.11p``   the analytic model's receiver without interference: 23 dBm, sensed when
                          RSSI >= -85 dBm, then 1 - FER(SNR + 10 log10(BW/Rd)) over -95 dBm noise.
(c) ``winner_b1_80211p``: the simulator's channel with ``v2x.channel.model = winner_b1_80211p`` (range 2 km):
    WINNER+ B1 LOS path loss, 3 dB shadowing drawn per link, the 802.11p receiver (sensed from -85 dBm, then
    1 - FER), 23 dBm and a 9 dB noise figure (the model's presets); no interference; the same draws.
(r) ``sepulcre``: the analytical IEEE 802.11p model of Sepulcre et al., IEEE TVT 71(1) 2022
    (``services/simulator/v2x/analytic_80211p.py``) at 0.06 and 0.12 veh/m, 10 Hz, 190 B, 6 Mb/s,
    23 dBm, WINNER+ B1 path loss: the reference curves.
(d) diagnostic rows ``winnerB1/logistic`` and ``winnerB1/802.11p``: the reference's own channel
    (WINNER+ B1 + 3 dB shadowing, Monte Carlo) through each receiver, without interference; their
    deviation from (r) is what the receiver rule and the MAC/interference terms account for, so the
    rest of (b)'s deviation is the path-loss model.

Then the mean absolute deviation (percentage points, the paper's eq. (36) x 100) of every model row
against (r) at each density, and the wall time. The output is deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.simulator.kernels import JIT, tr37885  # noqa: E402
from services.simulator.v2x import analytic_80211p as an  # noqa: E402
from services.simulator.v2x.channel import ChannelParams, evaluate_links  # noqa: E402

DENSITIES = (0.06, 0.12)
SOURCE = ("Sepulcre, Gonzalez-Martin, Gozalvez, Molina-Masegosa, Coll-Perales, 'Analytical Models of "
          "the Performance of IEEE 802.11p Vehicle to Vehicle Communications', IEEE TVT 71(1) 2022, "
          "doi:10.1109/TVT.2021.3124708 (equations as in the authors' MATLAB code)")


def current_prr(distances: np.ndarray, params: ChannelParams) -> np.ndarray:
    """(a): the simulator's channel in open space."""
    n = distances.size
    h = params.vehicle_antenna_height_m
    tx = np.zeros((n, 2))
    rx = np.column_stack([distances, np.zeros(n)])
    return np.asarray(evaluate_links(tx, np.full(n, h), rx, np.full(n, h), None, params).delivery_prob,
                      dtype=np.float64)


def tr37885_losses(distances: np.ndarray, fc_ghz: float, h_m: float, draws: int, seed: int) -> np.ndarray:
    """(D, K) TR 37.885 highway losses [dB] (path loss + NLOSv blockage + shadowing), common draws."""
    rng = np.random.default_rng(seed)
    u = rng.random(draws)
    z_sf = rng.standard_normal(draws)
    z_blk = rng.standard_normal(draws)
    out = np.empty((distances.size, draws))
    for i, d in enumerate(distances):
        tr37885.draw_link_losses_db(tr37885.HIGHWAY, float(d), fc_ghz, h_m, h_m, tr37885.BLOCKER_CAR_M,
                                    u, z_sf, z_blk, out[i])
    return out


def simulator_prr(model: str, distances: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """(b), (c) through the simulator's own channel: ``evaluate_links`` under ``model`` (the spec's
    ``v2x.channel.model``, with its presets; no range cut-off within the bench's 500 m), the draws (LOS state,
    blockage, shadowing) given as the same common draws as :func:`tr37885_losses`; mean delivery probability
    per distance."""
    params = ChannelParams(range_m=2000.0).with_model(model)
    rng = np.random.default_rng(seed)
    u, z_sf, z_blk = rng.random(draws), rng.standard_normal(draws), rng.standard_normal(draws)
    n = distances.size * draws
    rx = np.column_stack([np.repeat(distances, draws), np.zeros(n)])
    h = np.full(n, params.vehicle_antenna_height_m)
    link_draws = np.stack([np.tile(u, distances.size), np.tile(z_blk, distances.size), np.tile(z_sf, distances.size)])
    lb = evaluate_links(np.zeros((n, 2)), h, rx, h, None, params, link_draws)
    return np.asarray(lb.delivery_prob.reshape(distances.size, draws).mean(axis=1), dtype=np.float64)


def logistic_prr(loss_db: np.ndarray, params: ChannelParams) -> np.ndarray:
    """Mean delivery probability of the simulator's receiver (ChannelParams' logistic in RSSI, 0 at or
    below the noise floor) over the draws (last axis); no range cut-off."""
    rssi = np.maximum(params.tx_power_dbm + params.antenna_gain_dbi - loss_db, params.noise_floor_dbm)
    p = 1.0 / (1.0 + np.exp(-params.delivery_slope_per_db * (rssi - params.delivery_midpoint_dbm)))
    return np.asarray(np.where(rssi <= params.noise_floor_dbm, 0.0, p).mean(axis=-1), dtype=np.float64)


def analytic_rx_prr(loss_db: np.ndarray, ap: an.Analytic80211pParams) -> np.ndarray:
    """Mean delivery probability of the analytic model's receiver without interference: sensed when the
    received power reaches ``Psen``, then decoded with probability 1 - FER(SNR + 10 log10(BW / Rd))."""
    rssi = ap.tx_power_dbm - loss_db
    ebn0 = rssi - ap.noise_dbm + 10.0 * math.log10(ap.bandwidth_hz / ap.data_rate_bps)
    ok = np.where(rssi >= ap.sensing_threshold_dbm, 1.0 - an.frame_error_rate(ebn0), 0.0)
    return np.asarray(ok.mean(axis=-1), dtype=np.float64)


def mad_table(models: dict[str, np.ndarray], references: dict[float, np.ndarray]) -> dict[str, dict[float, float]]:
    """MAD [pp] of every model curve against every reference curve."""
    return {name: {rho: an.mad_pp(curve, ref) for rho, ref in references.items()} for name, curve in models.items()}


def run(draws: int, seed: int) -> tuple[np.ndarray, dict[str, np.ndarray], dict[float, np.ndarray]]:
    distances = an.DISTANCES_M
    params = ChannelParams()
    base = an.Analytic80211pParams()
    losses = tr37885_losses(distances, params.carrier_frequency_hz / 1e9, params.vehicle_antenna_height_m,
                            draws, seed)
    # diagnostic rows: the reference's own channel (WINNER+ B1, 3 dB shadowing, same normal draws) through
    # each receiver, without interference: what is left between them and (c) is the MAC / interference part
    pl_b1, sd_b1 = an.winner_b1_path_loss_db(distances, base)
    z = np.random.default_rng(seed).standard_normal(draws)
    b1 = pl_b1[:, None] + sd_b1[:, None] * z[None, :]
    models = {
        "current": current_prr(distances, params),
        "tr37885/logistic": simulator_prr("tr37885_highway", distances, draws, seed),
        "tr37885/802.11p": analytic_rx_prr(losses, base),
        "winner_b1_80211p": simulator_prr("winner_b1_80211p", distances, draws, seed),
        "winnerB1/logistic": logistic_prr(b1, params),
        "winnerB1/802.11p": analytic_rx_prr(b1, base),
    }
    refs = {rho: an.packet_delivery_ratio(an.Analytic80211pParams(density_veh_per_m=rho), distances).pdr
            for rho in DENSITIES}
    return distances, models, refs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--draws", type=int, default=20000, help="Monte Carlo draws per distance (TR 37.885)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--table", action="store_true", help="also print both models' parameter tables")
    args = ap.parse_args()

    t0 = time.perf_counter()
    distances, models, refs = run(args.draws, args.seed)
    wall = time.perf_counter() - t0

    ref_names = {rho: f"sepulcre {rho:g}" for rho in refs}
    cols = list(models) + list(ref_names.values())
    print(f"PRR vs distance, one V2V link in open space ({args.draws} draws per distance, seed {args.seed})")
    print("reference: " + SOURCE)
    print("  (10 Hz, 190 B, 6 Mb/s, 23 dBm, Psen -85 dBm, noise -95 dBm, WINNER+ B1 + 3 dB shadowing)")
    print(f"{'d [m]':>6}  " + "  ".join(f"{c:>16}" for c in cols))
    for i, d in enumerate(distances):
        vals = [models[m][i] for m in models] + [refs[rho][i] for rho in refs]
        print(f"{d:6.0f}  " + "  ".join(f"{v:16.3f}" for v in vals))
    print("\nmean absolute deviation vs the analytic 802.11p curve [percentage points], 0-500 m, 21 points")
    print(f"{'model':>18}  " + "  ".join(f"{'rho ' + format(r, 'g') + ' veh/m':>16}" for r in refs))
    for name, row in mad_table(models, refs).items():
        print(f"{name:>18}  " + "  ".join(f"{row[r]:16.2f}" for r in refs))
    print(f"\nwall time {wall:.2f} s (kernels {'compiled' if JIT else 'interpreted'}, first compile included "
          "when the kernel cache is cold)")
    if args.table:
        for title, rows in (("3GPP TR 37.885 V2V model", tr37885.parameter_table()),
                            ("analytic 802.11p model", an.parameter_table())):
            print(f"\n{title}:")
            for r in rows:
                print(f"  {r['name']:<38} {r['unit']:>6}  {r['value']:<48} {r['source']}")


if __name__ == "__main__":
    main()
