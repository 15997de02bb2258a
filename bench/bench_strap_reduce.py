"""STRaP whole reduce vs reading the file (issue 18, item 3; prints numbers, not a test).

    .venv/bin/python bench/bench_strap_reduce.py [--duration-s 3600] [--repeats 3]

On one synthetic platform trace (20 Hz, 10 channels, zstd/lz4 as write_trace writes it), side by
side in one run, best of ``--repeats`` interleaved runs each:

* raw ``mcap`` iteration of the file (``make_reader(f).iter_messages(log_time_order=True)``,
  no decoding): the floor a reader built on the library cannot beat;
* the whole reduce: open -> read + decode -> align -> vectorize -> smooth -> segment -> clip ->
  de-duplicate (``pipeline.ingest`` + ``pipeline.reduce_table``), all channels of the map;
* ratio raw / reduce (>= 1.0: the reduce is faster than just iterating the file) and frames/s;
* peak traced memory (tracemalloc) of the whole reduce at 1/6 of the duration and at the full
  duration (flat = the same up to the frame table, which grows by 88 bytes per frame).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcap.reader import make_reader  # noqa: E402

from services.strap.pipeline import ingest, reduce_table  # noqa: E402
from services.strap.readers import write_trace  # noqa: E402
from services.strap.reduce import ReduceParams  # noqa: E402
from services.strap.synthetic import synthetic_platform_messages  # noqa: E402


def raw_iteration(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in make_reader(f).iter_messages(log_time_order=True))


def whole_reduce(path: Path):
    table = ingest(path, "platform")
    return table, reduce_table(table, ReduceParams())


def best(fn, repeats: int) -> tuple[object, float]:
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, min(times)


def peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration-s", type=float, default=3600.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_strap_reduce_"))
    traces = {}
    for dur in (args.duration_s / 6, args.duration_s):
        p = tmp / f"trace_{int(dur)}s.mcap"
        write_trace(p, synthetic_platform_messages(dur, rate_hz=20, n_channels=10))
        traces[dur] = p
    path = traces[args.duration_s]
    n_msgs = raw_iteration(path)  # also warms the page cache
    t_raw, t_red = [], []
    for _ in range(args.repeats):  # interleaved, so load on the machine hits both alike
        t0 = time.perf_counter()
        raw_iteration(path)
        t_raw.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        table, red = whole_reduce(path)
        t_red.append(time.perf_counter() - t0)
    raw_s, red_s = min(t_raw), min(t_red)
    print(f"trace: {args.duration_s:.0f} s, {n_msgs:,} messages, {table.n_frames:,} frames, "
          f"{path.stat().st_size / 2**20:.1f} MiB")
    print(f"raw mcap iteration (no decode): {raw_s:.2f} s  ({n_msgs / raw_s:,.0f} msg/s)")
    print(f"whole reduce (read+decode+align+vectorize+reduce): {red_s:.2f} s  "
          f"({table.n_frames / red_s:,.0f} frames/s, {n_msgs / red_s:,.0f} msg/s); "
          f"{red.n_segments_total} segments -> {len(red.segments)} kept, reduction {red.reduction_ratio:.1%}")
    print(f"ratio raw / reduce = {raw_s / red_s:.2f}x (>= 1.0: faster than iterating the file); "
          f"all runs raw {[round(t, 2) for t in t_raw]}, reduce {[round(t, 2) for t in t_red]}")
    for dur, p in traces.items():
        frames = int(dur * 20)
        print(f"peak traced memory, whole reduce of {dur:.0f} s ({frames:,} frames): "
              f"{peak(lambda p=p: whole_reduce(p)) / 2**20:.1f} MiB "
              f"(of which the frame table {frames * 44 * 2 / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
