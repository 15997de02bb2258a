"""The feasibility gate against paired admission: does the verifier let real failures through?

For each reference scene (``services.simulator.reference.reference_spec``) this draws ``--n``
random single-fault mutants with a fixed seed -- an operator valid for a stream the
application consumes, a random anchor (scenario time, a signal phase onset, the decision
epoch, a stop-bar distance), offset, duration (or none), magnitude within the operator's
range, the phase a SPaT corruption reports, the sender a suppression silences, and now and
then a small shift of the signal plan or of an agent's timing -- and runs each through the
real paired execution with the V2X source (``services.simulator.execute.run_one``). A mutant
the simulator refuses counts as not admitted. An admitted mutant whose scene is admitted without
its fault as well (a timing move alone can fail a scene: amber turning a step before the epoch,
the message in use still says green) is not a failure of its fault: it is counted apart
("unfaulted") and left out of the figures.

The gate's verdict is ``verify(spec).ok``; the baseline verdict comes from the verifier of
``--baseline REV`` (its whole tree exported with ``git archive``, run in a subprocess on the
same mutants), the current one from this checkout. Per application, both side by side:

* recall    = admitted failures the gate lets through / admitted failures (the issue's goal: >= 0.95)
* precision = admitted failures among the mutants the gate lets through
* blocked   = mutants the gate refuses to run (the executions it saves)

``--why`` lists, per check family, the admitted failures each verifier would have blocked.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import numpy as np  # noqa: E402
from baseline import export_tree  # noqa: E402

from lastv2x.core.catalogue import APPLICATIONS, FAULT_OPERATORS, STREAMS, Application  # noqa: E402
from lastv2x.core.errors import InvalidArgument  # noqa: E402
from lastv2x.core.spec import ScenarioSpec, parse_spec, spec_to_dict  # noqa: E402
from lastv2x.core.verifier import Severity, verify  # noqa: E402
from services.simulator.execute import SimulatorLimits, program_for, run_one  # noqa: E402
from services.simulator.reference import reference_spec  # noqa: E402

# The verifier before the gate knew every decision epoch (issue 12, item 2): its last commit before.
BASELINE_REV = "6083d74"
SEED = 20240612

_VERDICT_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from lastv2x.core.spec import parse_spec
from lastv2x.core.verifier import verify
out = []
for d in json.load(sys.stdin):
    r = verify(parse_spec(d))
    out.append([r.ok, sorted({f.check for f in r.findings if f.severity.value == "error"})])
json.dump(out, sys.stdout)
"""


def _uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _magnitude(rng: np.random.Generator, lo: float, hi: float) -> float:
    if lo < 0.0:  # symmetric range: a sign and a log-uniform size
        size = _log_uniform(rng, 0.05, hi)
        return round(size if rng.random() < 0.5 else -size, 3)
    return round(_log_uniform(rng, max(lo, 1e-3), hi), 3)


def _anchor(rng: np.random.Generator, spec: ScenarioSpec) -> dict[str, Any]:
    kinds = ["scenario_time", "decision_epoch", "stop_bar_distance"]
    if spec.map.signalized is not False:
        kinds.append("signal_event")
    kind = kinds[int(rng.integers(len(kinds)))]
    if kind == "scenario_time":
        return {"kind": "scenario_time", "offset_s": round(_uniform(rng, 0.0, spec.duration_s - 2.0), 3)}
    offset = round(_uniform(rng, -4.0, 3.0), 3)
    if kind == "signal_event":
        event = ("amber_onset", "red_onset", "green_onset")[int(rng.integers(3))]
        return {"kind": "signal_event", "event": event, "offset_s": offset}
    if kind == "decision_epoch":
        return {"kind": "ego_event", "event": "decision_epoch", "offset_s": offset}
    dist = round(_uniform(rng, 2.0, spec.ego.start_distance_m - 5.0), 2)
    return {"kind": "ego_event", "event": "stop_bar_distance", "distance_m": dist, "offset_s": offset}


def _fault(rng: np.random.Generator, spec: ScenarioSpec) -> dict[str, Any]:
    app = APPLICATIONS[spec.application]
    pairs = [(name, stream) for name, op in ((n, FAULT_OPERATORS[n]) for n in FAULT_OPERATORS)
             for stream in op.streams if stream in app.consumes]
    name, stream = pairs[int(rng.integers(len(pairs)))]
    op = FAULT_OPERATORS[name]
    f: dict[str, Any] = {"name": "f", "operator": name, "stream": stream.value, "anchor": _anchor(rng, spec)}
    if rng.random() < 0.7:
        f["duration_s"] = round(_log_uniform(rng, 0.2, 12.0), 3)
    if op.magnitude_range is not None:
        f["magnitude"] = _magnitude(rng, *op.magnitude_range)
    if name == "drop":
        u = rng.random()
        if u < 0.4:
            f["probability"] = round(_uniform(rng, 0.05, 1.0), 3)
        elif u < 0.8:
            f["burst_count"] = int(round(_log_uniform(rng, 1.0, 200.0)))
    if name == "spat_phase_corrupt":
        f["target_phase"] = ("green", "amber", "red")[int(rng.integers(3))]
    if op.requires_sender or rng.random() < 0.2:
        if STREAMS[stream].sender == "rsu":
            f["sender"] = "rsu"
        else:
            ids = [a.id for a in spec.agents if a.equipped]
            if ids:
                f["sender"] = ids[int(rng.integers(len(ids)))]
            elif op.requires_sender:
                f["sender"] = "rsu"  # nothing to silence: the simulator refuses it
    return f


def mutant(rng: np.random.Generator, base: ScenarioSpec, jitter: float = 1.0) -> dict[str, Any]:
    """One random single-fault mutant of ``base`` (a JSON dict the schema accepts); with probability
    0.3 the scene's timing moves a little too (``jitter`` scales how far), as the search's timing
    family does: signal offset, arrival offsets, brake onset, lead / relay gaps."""
    d = spec_to_dict(base)
    d["faults"] = [_fault(rng, base)]
    if rng.random() < 0.3:
        if APPLICATIONS[base.application].kind.value == "signal":
            d["signal"]["offset_s"] = round((d["signal"]["offset_s"] + float(rng.normal(0.0, 1.5 * jitter)))
                                            % d["signal"]["cycle_s"], 3)
        for a in d["agents"]:
            if a["role"] in ("cross", "opposing"):
                a["arrival_offset_s"] = round(min(30.0, max(-30.0, a["arrival_offset_s"]
                                                            + float(rng.normal(0.0, jitter)))), 3)
            if a["behaviour"]["kind"] == "hard_brake":
                a["behaviour"]["at_time_s"] = round(max(0.0, (a["behaviour"]["at_time_s"] or 3.0)
                                                        + float(rng.normal(0.0, jitter))), 3)
            if a["role"] in ("lead", "relay"):
                a["gap_m"] = round(min(300.0, max(5.0, a["gap_m"] * math.exp(float(rng.normal(0.0, 0.1 * jitter))))), 2)
    return d


def draw(app: Application, n: int, seed: int, jitter: float = 1.0) -> list[dict[str, Any]]:
    rng = np.random.default_rng([seed, list(Application).index(app)])
    base = reference_spec(app)
    out: list[dict[str, Any]] = []
    while len(out) < n:
        d = mutant(rng, base, jitter)
        try:
            parse_spec(d)
        except InvalidArgument:
            continue  # out of the schema: draw again
        out.append(d)
    return out


def _key(d: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()


def admitted(d: dict[str, Any], limits: SimulatorLimits) -> bool | None:
    """Paired admission of one mutant; False when the simulator refuses it, None when it crashes."""
    spec = parse_spec(d)
    try:
        outcome, _uri = run_one(program_for(spec), None, limits)
    except InvalidArgument:
        return False  # the simulator refuses it: nothing to admit
    except Exception as exc:  # noqa: BLE001 -- a simulator bug must not end the benchmark; counted and shown
        print(f"   simulator crash on {d['application']} {d['faults'][0]['operator']}/{d['faults'][0]['stream']}: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return None
    return outcome.admitted


def _admission(d: dict[str, Any], cache: dict[str, bool | None], limits: SimulatorLimits) -> tuple[bool | None, int]:
    """(admitted, paired executions run): from the cache when it has the mutant."""
    key = _key(d)
    if key in cache:
        return cache[key], 0
    cache[key] = admitted(d, limits)
    return cache[key], 1


def baseline_verdicts(rev: str, specs: list[dict[str, Any]]) -> list[tuple[bool, list[str]]]:
    with tempfile.TemporaryDirectory(prefix="lastv2x-gate-") as tmp:
        root = export_tree(rev, Path(tmp))
        proc = subprocess.run([sys.executable, "-c", _VERDICT_SCRIPT, str(root)], input=json.dumps(specs),
                              capture_output=True, text=True, check=True, cwd=tmp)
    return [(bool(ok), list(checks)) for ok, checks in json.loads(proc.stdout)]


def current_verdict(d: dict[str, Any]) -> tuple[bool, list[str]]:
    r = verify(parse_spec(d))
    return r.ok, sorted({f.check for f in r.findings if f.severity is Severity.ERROR})


@dataclass
class Score:
    n: int = 0
    admitted: int = 0  # admitted, and the scene without its fault is not
    unfaulted: int = 0  # admitted, but so is the scene without its fault (left out of the figures)
    passed: int = 0  # the gate lets it run
    passed_admitted: int = 0

    def add(self, ok: bool, adm: bool) -> None:
        self.n += 1
        self.admitted += adm
        self.passed += ok
        self.passed_admitted += ok and adm

    @property
    def recall(self) -> float | None:
        return self.passed_admitted / self.admitted if self.admitted else None

    @property
    def precision(self) -> float | None:
        return self.passed_admitted / self.passed if self.passed else None


def _fmt(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:5.2f}"


def _ratio(before: float | None, after: float | None) -> str:
    return "n/a" if not before or after is None else f"x{after / before:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=150, help="mutants per reference scene (default 150)")
    ap.add_argument("--apps", default=",".join(a.value for a in Application),
                    help="comma-separated applications (default all six)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--baseline", default=BASELINE_REV, help=f"git revision of the 'before' verifier ({BASELINE_REV})")
    ap.add_argument("--jitter", type=float, default=1.0, help="scale of the scene-timing moves (default 1)")
    ap.add_argument("--cache", type=Path, help="JSON file caching admission per mutant (development)")
    ap.add_argument("--why", action="store_true", help="list the check families that block admitted failures")
    args = ap.parse_args(argv)
    apps = [Application(a.strip().upper()) for a in args.apps.split(",") if a.strip()]
    limits = SimulatorLimits()
    cache: dict[str, bool | None] = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}

    t0 = time.perf_counter()
    mutants = {app: draw(app, args.n, args.seed, args.jitter) for app in apps}
    flat = [d for app in apps for d in mutants[app]]
    before = iter(baseline_verdicts(args.baseline, flat))
    rows = []
    runs = crashes = 0
    blocked_by: dict[str, dict[str, list[int]]] = {"before": {}, "after": {}}
    for app in apps:
        b, a = Score(), Score()
        for k, d in enumerate(mutants[app]):
            ok_b, why_b = next(before)
            ok_a, why_a = current_verdict(d)
            adm, ran = _admission(d, cache, limits)
            runs += ran
            crashes += adm is None
            if adm:  # does the scene fail without its fault? then the fault is not what fails it
                scene_fails, ran = _admission({**d, "faults": []}, cache, limits)
                runs += ran
                if scene_fails:
                    b.unfaulted += 1
                    a.unfaulted += 1
                    continue
            adm = bool(adm)
            b.add(ok_b, adm)
            a.add(ok_a, adm)
            if adm:
                for side, ok, why in (("before", ok_b, why_b), ("after", ok_a, why_a)):
                    if not ok:
                        for c in why:
                            blocked_by[side].setdefault(f"{app.value} {c}", []).append(k)
        rows.append((app, b, a))
    if args.cache:
        args.cache.write_text(json.dumps(cache))
    elapsed = time.perf_counter() - t0

    print(f"Gate vs paired admission: {args.n} random single-fault mutants per reference scene, seed {args.seed}, "
          f"timing jitter x{args.jitter:g}, "
          f"V2X source; before = verifier at {args.baseline}, after = this checkout")
    print(f"{'app':6} {'admitted':>8} {'unfaulted':>9} | {'passed':>6} {'recall':>6} {'prec':>5} {'blocked':>7} | "
          f"{'passed':>6} {'recall':>6} {'prec':>5} {'blocked':>7} | {'recall':>7} {'prec':>7}")
    print(f"{'':6} {'':>8} {'':>9} | {'before':^28} | {'after':^28} | {'after/before':^15}")
    tb, ta = Score(), Score()
    for _app, b, a in rows:
        for src, dst in ((b, tb), (a, ta)):
            dst.n += src.n
            dst.unfaulted += src.unfaulted
            dst.admitted += src.admitted
            dst.passed += src.passed
            dst.passed_admitted += src.passed_admitted
    for app, b, a in [*rows, ("all", tb, ta)]:
        name = app if isinstance(app, str) else app.value
        print(f"{name:6} {b.admitted:8d} {b.unfaulted:9d} | {b.passed:6d} {_fmt(b.recall):>6} {_fmt(b.precision):>5} "
              f"{b.n - b.passed:7d} | {a.passed:6d} {_fmt(a.recall):>6} {_fmt(a.precision):>5} {a.n - a.passed:7d} | "
              f"{_ratio(b.recall, a.recall):>7} {_ratio(b.precision, a.precision):>7}")
    if crashes:
        print(f"{crashes} mutants crashed the simulator (counted as not admitted)")
    print(f"({runs} paired executions, {elapsed:.0f} s. admitted: the fault's paired run is admitted and the scene "
          "without it is not; unfaulted: admitted without the fault too (its timing alone fails), left out. "
          "recall = admitted let through / admitted; precision = admitted / let through; blocked = gated mutants)")
    if args.why:
        for side in ("before", "after"):
            print(f"admitted failures blocked {side}, by check family (mutant indices):")
            for name, idx in sorted(blocked_by[side].items()):
                print(f"  {name:32} {len(idx):3d}  {idx[:12]}")
    low = [app.value for app, _b, a in rows if a.recall is not None and a.recall < 0.95]
    if low:
        print(f"recall below 0.95: {', '.join(low)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
