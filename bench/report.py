"""`make bench`: run the benchmark scripts and write their figures to docs/benchmarks.md.

    .venv/bin/python bench/report.py                          # every script of make bench, in order
    .venv/bin/python bench/report.py --only bench/bench_maps.py   # re-run one (repeatable); the others keep
                                                              # their last recorded figures
    .venv/bin/python bench/report.py --captured DIR           # take each script's output from DIR/<stem>.txt
    .venv/bin/python bench/report.py --render                 # only re-render the page from bench/results.json

Each script runs as `make bench` always ran it (the same arguments), its output streamed to the terminal
and kept. Per script the page records what it compares with what (one line), the command, its printed
figures (verbatim: the scripts print their own side-by-side ratios), the commit it ran on (``+dirty`` when
the tree had local changes), the date and the machine's cores and load. Results are kept in
``bench/results.json`` so that re-running one script updates its section alone. A script that fails stops
the run (as `make bench` did) with its output and exit status recorded, and the exit status is non-zero.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "bench" / "results.json"


@dataclass(frozen=True)
class Bench:
    script: str
    args: tuple[str, ...]
    compares: str  # what is compared with what, one line


#: `make bench`, in its order and with its arguments.
BENCHES: tuple[Bench, ...] = (
    Bench("bench/bench_verifier.py", (), "analytic verifier specs/s in-process vs the gRPC Verify round trip on "
          "loopback, beside a bare grpcio echo"),
    Bench("bench/bench_gate.py", ("--n", "60"), "the verifier gate vs paired admission on random single-fault "
          "mutants of each reference scene (recall, precision)"),
    Bench("bench/bench_search.py", ("--budget", "150"), "search yield with the gate on vs off, minimization vs the "
          "paper's greedy delta debugging, the campaign loop vs the simulator's batch"),
    Bench("bench/bench_simulator.py", ("--baseline", "c9e0fa4"), "builtin simulator: paired execution per "
          "application, ExecuteBatch with 1 worker vs the pool, the traffic core vs SUMO, each vs c9e0fa4 (before the "
          "compiled engine's stage 1)"),
    Bench("bench/bench_channel.py", (), "spatial V2X channel: links/s and coverage at 5 vs 1 dB/m blockage"),
    Bench("bench/bench_prr.py", (), "packet reception ratio vs distance: the log-distance, TR 37.885 and WINNER+ B1 / "
          "802.11p channels vs the analytical 802.11p model (mean absolute deviation, pp)"),
    Bench("bench/bench_v2x.py", (), "V2X stack as message source vs the ground-truth-only run"),
    Bench("bench/bench_grounding.py", (), "grounding: catalogue build cold vs cached, Ground latency, retrieval "
          "recall@5 of the embedders"),
    Bench("bench/bench_strap.py", (), "STRaP core: smoothing + segmentation frames/s, reader vs raw mcap iteration, "
          "memory at 10 min vs 1 h"),
    Bench("bench/bench_strap_reduce.py", (), "STRaP whole reduce vs raw mcap iteration of the same file "
          "(frames/s, peak memory)"),
    Bench("bench/bench_strap_faults.py", (), "STRaP on the six apps' traces: RSC vs CH / RD orders (APFD, Top-K), "
          "reduction and fault coverage"),
    Bench("bench/bench_app_contract.py", (), "application contract: in-process fast path vs batched step vs gRPC "
          "loopback, per decision"),
    Bench("bench/bench_backends.py", (), "builtin vs SUMO backend: wall time per scene and admission verdicts"),
    Bench("bench/bench_maps.py", (), "loading every CARLA town through carla's OpenDRIVE parser vs the 30 s budget"),
    Bench("bench/bench_cli.py", ("--baseline", "c21697a"), "lastv2x execute start-up vs c21697a (before the lazy "
          "imports)"),
    Bench("bench/bench_v2x_profile.py", ("--baseline", "c21697a"), "where V2X-sourced paired execution spends its "
          "time, vs c21697a"),
    Bench("bench/bench_grounded.py", ("--baseline", "fd260f5"), "paired runs of make run's grounded programs vs "
          "fd260f5 (before the float blockage and the numpy route scan)"),
    Bench("bench/bench_campaign_grounding.py", ("--baseline", "a8ecb7f"), "grounding a campaign's candidates (parsed "
          "held-out intents and seeded mutants) vs a8ecb7f (before routes, route lengths and query vectors were "
          "remembered)"),
)


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine() -> dict[str, object]:
    """Commit, date and the machine: cores (all, and those this process may use) and load."""
    commit = _git("rev-parse", "--short=12", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=no"):
        commit += "+dirty"
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count() or 0
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {"commit": commit, "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "cores": os.cpu_count() or 0, "usable_cores": usable, "load": round(load[0], 2),
            "python": sys.version.split()[0]}


def command(b: Bench) -> str:
    return " ".join([".venv/bin/python", b.script, *b.args])


def _docstring_line(script: str) -> str:
    path = ROOT / script
    if not path.is_file():
        return ""
    text = path.read_text()
    for quote in ('"""', "'''"):
        if text.lstrip().startswith(quote):
            body = text.lstrip()[3:]
            return body[:body.find(quote)].strip().split("\n\n")[0].replace("\n", " ")
    return ""


def run_one(b: Bench, python: str) -> dict[str, object]:
    """Run ``b`` as make bench does, streaming its output, and return its record."""
    print(f"== {b.script} ({b.compares})", flush=True)
    started = time.monotonic()
    info = machine()
    proc = subprocess.Popen([python, b.script, *b.args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        lines.append(line)
    rc = proc.wait()
    return {**info, "command": command(b), "rc": rc, "seconds": round(time.monotonic() - started, 1),
            "output": "".join(lines)}


def captured_one(b: Bench, folder: Path) -> dict[str, object] | None:
    path = folder / (Path(b.script).stem + ".txt")
    if not path.is_file():
        return None
    return {**machine(), "command": command(b), "rc": 0, "seconds": None, "output": path.read_text(),
            "captured": path.name}


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}text\n{text.rstrip()}\n{ticks}"


def render(results: dict[str, dict[str, object]]) -> str:
    out = ["# Benchmarks", "",
           "<!-- GENERATED by bench/report.py (make bench): do not edit; re-run the benchmarks -->", "",
           "Written by `make bench` (`bench/report.py`): every benchmark script it runs, with what it compares, "
           "the command, the figures it printed, the commit, the date and the machine's cores. Timings depend on "
           "the machine and its load: compare figures taken in one run, side by side, which is how the scripts "
           "print their ratios. One script re-runs alone with "
           "`.venv/bin/python bench/report.py --only bench/<script>.py`; the others keep their last figures, "
           "each with its own commit and date. Figures from before this page existed, hand-kept: "
           "[Measured, past sessions](operations/measured-history.md).", "",
           "| script | compares | commit | date | cores (usable) | load | seconds | status |",
           "|---|---|---|---|---|---:|---:|---|"]
    for b in BENCHES:
        r = results.get(b.script)
        anchor = Path(b.script).stem.replace("_", "-")
        if r is None:
            out.append(f"| [`{b.script}`](#{anchor}) | {b.compares} | — | — | — | — | — | not run yet |")
            continue
        status = "ok" if r["rc"] == 0 else f"FAILED (exit {r['rc']})"
        secs = "—" if r.get("seconds") is None else f"{r['seconds']:g}"
        out.append(f"| [`{b.script}`](#{anchor}) | {b.compares} | `{r['commit']}` | {r['date']} | "
                   f"{r['cores']} ({r['usable_cores']}) | {r['load']} | {secs} | {status} |")
    out.append("")
    for b in BENCHES:
        r = results.get(b.script)
        out += [f"## {Path(b.script).stem.replace('_', '-')}", "",
                f"**Compares** {b.compares}.", ""]
        doc = _docstring_line(b.script)
        if doc:
            out += [f"Script `{b.script}`: {doc}", ""]
        out += ["```sh", command(b), "```", ""]
        if r is None:
            out += ["Not run yet: `make bench` (or `bench/report.py --only` this script) records its figures here.",
                    ""]
            continue
        how = f"captured output `{r['captured']}`" if r.get("captured") else f"{r['seconds']:g} s"
        out += [f"Commit `{r['commit']}`, {r['date']}, {r['cores']} cores ({r['usable_cores']} usable), load "
                f"{r['load']}, Python {r['python']}; {how}; exit status {r['rc']}.", "",
                _fence(str(r["output"]) or "(no output)"), ""]
    return "\n".join(out).rstrip() + "\n"


def load_results(path: Path = RESULTS) -> dict[str, dict[str, object]]:
    return json.loads(path.read_text()) if path.is_file() else {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", default=[], metavar="SCRIPT", help="run only this script (repeatable)")
    ap.add_argument("--captured", type=Path, default=None, help="read DIR/<script stem>.txt instead of running")
    ap.add_argument("--render", action="store_true", help="re-render the page from the results file only")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--out", type=Path, default=PAGE)
    args = ap.parse_args(argv)
    known = {b.script for b in BENCHES}
    unknown = [s for s in args.only if s not in known]
    if unknown:
        ap.error(f"not a make bench script: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    results = load_results(args.results)
    rc = 0
    if not args.render:
        for b in BENCHES:
            if args.only and b.script not in args.only:
                continue
            if args.captured is not None:
                record = captured_one(b, args.captured)
                if record is None:
                    continue
            elif not (ROOT / b.script).is_file():
                continue
            else:
                record = run_one(b, sys.executable)
            results[b.script] = record
            args.results.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
            if record["rc"] != 0:
                print(f"{b.script} failed (exit {record['rc']}): recorded, stopping", file=sys.stderr)
                rc = 1
                break
    args.out.write_text(render(results))
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
