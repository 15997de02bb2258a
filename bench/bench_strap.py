"""STRaP core benchmark (prints numbers; not a test).

    .venv/bin/python bench/bench_strap.py [--duration-s 3600] [--rate-hz 20] [--channels 10]

1. align + vectorize + reduce frames/s on a synthetic 1-hour, 20 Hz, 10-channel
   platform trace: from in-memory messages (pure core) and from the MCAP file
   (ingest = read + JSON decode + the rest);
2. smoothing + segmentation frames/s on 1,000,000 frames x 40 features (w = 3);
3. read throughput of our MCAP reader (decoded, time-ordered) vs raw ``mcap``
   iteration of the same file (``iter_messages(log_time_order=True)``), as ratios;
4. peak memory (tracemalloc) while reading, and while ingesting, at two lengths;
5. effect of the optional min-segment-duration filter (1 s, reference code) on a
   fault-coverage proxy: one value-triggered "mutant" per distinct non-zero
   (feature, value) of the raw frames; a segment reveals it when its vector
   holds that value.  Also APFD of RSC / SC / CH / RD on those mutants.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcap.reader import make_reader  # noqa: E402

from services.strap.evaluate import apfd, random_baseline, top_k  # noqa: E402
from services.strap.pipeline import ingest  # noqa: E402
from services.strap.prioritize import prioritize  # noqa: E402
from services.strap.readers import open_recording, write_trace  # noqa: E402
from services.strap.reduce import ReduceParams, reduce_frames  # noqa: E402
from services.strap.synthetic import synthetic_platform_messages  # noqa: E402
from services.strap.vectorize import vectorize_messages  # noqa: E402


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def drain(path) -> int:
    return sum(1 for _ in open_recording(path))


def section(title: str) -> None:
    print(f"\n== {title}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration-s", type=float, default=3600.0)
    ap.add_argument("--rate-hz", type=float, default=20.0)
    ap.add_argument("--channels", type=int, default=10)
    ap.add_argument("--frames", type=int, default=1_000_000, help="frames for the smoothing benchmark")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_strap_"))
    gen = dict(rate_hz=args.rate_hz, n_channels=args.channels)

    section(f"synthetic trace: {args.duration_s:.0f} s, {args.rate_hz:g} Hz, {args.channels} channels")
    msgs, dt = timed(lambda: list(synthetic_platform_messages(args.duration_s, **gen)))
    print(f"generated {len(msgs):,} messages in {dt:.1f} s")
    trace = tmp / "trace.mcap"
    _, dt = timed(write_trace, trace, msgs)
    print(f"write_trace: {len(msgs) / dt:,.0f} msg/s, {trace.stat().st_size / 2**20:.1f} MiB (lz4)")

    section("1. align + vectorize + reduce")
    for modules in (None, ["reconstruction"]):
        table, t_vec = timed(vectorize_messages, msgs, "platform", modules=modules)
        red, t_red = timed(reduce_frames, table.timestamps_ns, table.vectors, ReduceParams())
        label = "all modules" if modules is None else f"module {modules[0]}"
        print(f"{label:>22}: {table.n_frames:,} frames x {table.vectors.shape[1]} features; "
              f"in-memory {table.n_frames / (t_vec + t_red):,.0f} frames/s "
              f"(align+vectorize {t_vec:.2f} s, reduce {t_red * 1e3:.0f} ms); "
              f"{red.n_segments_total} segments -> {len(red.segments)} kept, "
              f"reduction {red.reduction_ratio:.1%}")
    table, t_ing = timed(ingest, trace, "platform")
    red = reduce_frames(table.timestamps_ns, table.vectors)
    print(f"{'from MCAP (ingest)':>22}: {table.n_frames / t_ing:,.0f} frames/s "
          f"({len(msgs) / t_ing:,.0f} msg/s incl. read + JSON decode, {t_ing:.1f} s)")

    section("2. smoothing + segmentation (numpy)")
    rng = np.random.default_rng(0)
    n = args.frames
    v = np.repeat(rng.integers(0, 4, (n // 200 + 1, 40)), 200, axis=0)[:n].astype(np.int16)
    v[rng.random(n) < 0.01, 0] = 9  # 1 % single-frame glitches
    ts = np.arange(n, dtype=np.int64) * 50_000_000
    for w in (3, 5):
        r, dt = timed(reduce_frames, ts, v, ReduceParams(window=w))
        print(f"w={w}: {n / dt:,.0f} frames/s over {n:,} frames x 40 "
              f"({r.n_segments_total:,} segments, {len(r.segments):,} kept)")

    section("3. read throughput: ours vs raw mcap on the same file")
    drain(trace)  # warm the page cache so the first timed reader is not penalised
    with open(trace, "rb") as f:
        _, t_raw = timed(lambda: sum(1 for _ in make_reader(f).iter_messages(log_time_order=True)))
    with open(trace, "rb") as f:
        _, t_raw_json = timed(lambda: sum(1 for _s, _c, m in make_reader(f).iter_messages(log_time_order=True)
                                          if json.loads(m.data) is not None))
    count, t_ours = timed(drain, trace)
    print(f"raw mcap (no decode):   {count / t_raw:,.0f} msg/s")
    print(f"raw mcap + json.loads:  {count / t_raw_json:,.0f} msg/s")
    print(f"ours (decoded, checked): {count / t_ours:,.0f} msg/s  -> ratio ours/raw = "
          f"{t_raw / t_ours:.2f}x, ours/(raw+json) = {t_raw_json / t_ours:.2f}x (>1 = faster)")

    section("4. peak memory (tracemalloc) at two lengths")
    for dur in (args.duration_s / 6, args.duration_s):
        p = tmp / f"len_{int(dur)}.mcap"
        write_trace(p, synthetic_platform_messages(dur, **gen))
        read_peak = peak_bytes(lambda p=p: drain(p))
        ingest_peak = peak_bytes(lambda p=p: ingest(p, "platform"))
        frames = int(dur * args.rate_hz)
        print(f"{dur:>6.0f} s ({frames:,} frames): read peak {read_peak / 2**20:6.2f} MiB, "
              f"ingest peak {ingest_peak / 2**20:6.2f} MiB "
              f"(frame table alone {frames * 44 * 2 / 2**20:.2f} MiB)")

    section("5. min-segment-duration filter vs fault-coverage proxy; prioritization APFD")
    table = vectorize_messages(msgs, "platform", modules=["reconstruction"])
    raw_pairs = {(j, int(x)) for j in range(table.vectors.shape[1]) for x in np.unique(table.vectors[:, j]) if x}
    for min_s in (None, 1.0):
        red = reduce_frames(table.timestamps_ns, table.vectors, ReduceParams(min_segment_duration_s=min_s))
        faults = sorted(raw_pairs)
        fm = np.array([[sv[j] == x for j, x in faults] for sv in red.segment_vectors], dtype=bool)
        covered = int(fm.any(axis=0).sum()) if fm.size else 0
        print(f"min_segment_duration_s={min_s}: {len(red.segments)} segments, reduction "
              f"{red.reduction_ratio:.1%}, mutants revealed {covered}/{len(faults)} "
              f"({covered / len(faults):.1%})")
        if fm.size and fm.any():
            line = []
            for method in ("RSC", "SC", "CH"):
                order = prioritize(method, red.segment_vectors, frame_vectors=table.vectors)
                line.append(f"{method} APFD {apfd(order, fm):.3f} TopK {top_k(order, fm)}")
            rd = random_baseline(fm, 100, seed=0)
            line.append(f"RD APFD {rd.apfd:.3f} TopK {rd.top_k:.2f}")
            print("    " + "; ".join(line))


if __name__ == "__main__":
    main()
