"""Golden outcome bytes: paired execution must not change behaviour silently.

SHA-256 of ``PairedOutcome.to_json_bytes()`` for the six reference programs and the
servicer's FREEZE_BEFORE_AMBER spec, seeds 0..3, with the ground-truth source and with
the V2X stack as the message-driven source; plus ExecuteBatch of the reference
programs, the trace messages of traced runs (every reference program and FREEZE_BEFORE_AMBER,
hashed over floats rounded to ``TRACE_DECIMALS``: portable across CPUs), and the V2X stack's beliefs in the
50-vehicle urban canyon (buildings, SPaT relay, EEBL rebroadcast) of ``bench/scenes.py``.

A deliberate behaviour change regenerates them::

    .venv/bin/python -m tests.simulator.test_golden_outcomes

and must say why in the change that updates the hashes below.

Changes so far: issue 32 keyed every link's delivery draw by (seed, stream, sender, message, receiver) instead
of its place in the step (``messages.LinkDraws``): IMA/v2x/2 and the canyon beliefs moved, every admission
verdict stayed (``tests/simulator/v2x/test_link_draws.py``). Issue 37 (drivers who perceive like people): a
driver brakes for the leader it perceives no harder than its profile's ``decel_emergency_mps2`` (5.5 m/s2 for a
normal driver, was the tyres' 8), and the reference EEBL warns on EEBL events only (not also on a BSM track's
hard-braking flag, which made every EEBL-stream fault ineffective): FCW and EEBL moved (paired, batch, traces),
every admission verdict of the reference programs stayed (not admitted, margin 6.50 m, seeds 0-3, both sources).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from lastv2x.core.catalogue import Application
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import parse_spec
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from services.simulator.info import ground_truth_factory
from services.simulator.paired import execute_batch, execute_paired
from services.simulator.reference import reference_program
from services.simulator.v2x.stack import v2x_source_factory

FREEZE_BEFORE_AMBER = {  # tests/simulator/test_servicer.py
    "application": "RLVW", "seed": 7, "signal": {"offset_s": 22.353},
    "faults": [{"name": "freeze_spat", "operator": "freeze", "stream": "SPAT",
                "anchor": {"kind": "signal_event", "event": "amber_onset", "offset_s": -0.5}}],
}
SEEDS = (0, 1, 2, 3)
SOURCES: dict[str, Callable[[], Any]] = {"gt": lambda: ground_truth_factory, "v2x": lambda: v2x_source_factory()}


def _programs() -> dict[str, Callable[[int], ScenarioProgram]]:
    out: dict[str, Callable[[int], ScenarioProgram]] = {
        app.value: (lambda s, a=app: reference_program(a, seed=s)) for app in Application}
    freeze = program_from_spec_on_straight_roads(parse_spec(FREEZE_BEFORE_AMBER))
    out["FREEZE_BEFORE_AMBER"] = lambda s: freeze
    return out


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


class _Recorder:
    """Hashes trace messages with every float rounded to TRACE_DECIMALS (and -0.0 as 0.0): a last-bit
    difference of another CPU's libm or SIMD loops (AVX-512 ``np.power``) does not move the hash."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def publish(self, channel: str, t_s: float, message: Mapping[str, Any]) -> None:
        self.h.update(json.dumps(_fixed([channel, t_s, message]), sort_keys=True, default=str).encode())


TRACE_DECIMALS = 6


def _fixed(x: Any) -> Any:
    if isinstance(x, float):
        return round(x, TRACE_DECIMALS) + 0.0 if math.isfinite(x) else str(x)
    if isinstance(x, tuple | list):
        return [_fixed(v) for v in x]
    if isinstance(x, Mapping):
        return {str(k): _fixed(v) for k, v in x.items()}
    return x


TRACED = ("FREEZE_BEFORE_AMBER", *(a.value for a in Application))  # traced runs (V2X source, seed 0)


def paired_cases() -> list[tuple[str, str, int]]:
    cases = [(name, src, s) for name in _programs() for src in SOURCES for s in SEEDS]
    return cases + [("FREEZE_BEFORE_AMBER", src, 7) for src in SOURCES]  # its own seed: the admitted case


def paired_hash(name: str, src: str, seed: int) -> str:
    prog = _programs()[name](seed)
    return _sha(execute_paired(prog, seed, md_source_factory=SOURCES[src]()).to_json_bytes())


def batch_hash(src: str) -> str:
    progs = [reference_program(a, seed=i) for i, a in enumerate(Application)]
    outs = execute_batch(progs, [p.seed for p in progs], md_source_factory=SOURCES[src]())
    return _sha(b"|".join(o.to_json_bytes() for o in outs))


def trace_hash(name: str) -> str:
    prog = _programs()[name](0)
    rec = _Recorder()
    out = execute_paired(prog, None, md_source_factory=v2x_source_factory(), trace=rec)
    rec.h.update(out.to_json_bytes())
    return rec.h.hexdigest()


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return round(x, 9) if math.isfinite(x) else str(x)
    if isinstance(x, tuple | list):
        return [_round(v) for v in x]
    if isinstance(x, Mapping):
        return {str(k): _round(v) for k, v in x.items()}
    if hasattr(x, "__slots__") or hasattr(x, "__dataclass_fields__"):
        fields = getattr(x, "__dataclass_fields__", None) or {}
        return {k: _round(getattr(x, k)) for k in fields}
    return x


def canyon_hash() -> str:
    from bench.scenes import canyon_scene, canyon_snapshots
    from services.simulator.v2x.stack import V2XInformationSource

    prog, buildings = canyon_scene()
    src = V2XInformationSource(buildings)
    src.reset(prog, 0)
    h = hashlib.sha256()
    for snap in canyon_snapshots(prog, 60):
        info = src.observe(snap)
        h.update(json.dumps(_round(info), sort_keys=True).encode())
    h.update(json.dumps(_round(src.report(()).extra), sort_keys=True, default=str).encode())
    return h.hexdigest()


GOLDEN_PAIRED: dict[str, str] = {
    "RLVW/gt/0": "aa015c17d04479ba726fe3c3ad0cd09493bebaf1082b87e923ae481cbe55ec81",
    "RLVW/gt/1": "f41b299fc145e8f21cadba60883d57562bc5b9eb90207dd1671e555cd9226adf",
    "RLVW/gt/2": "66a04f3b35afbe644e910aada90ca60863ff06e58949c16e98400b501ae8f098",
    "RLVW/gt/3": "93db8397d385eeac03303966a1688c0e160b9dfdaffb23ddf191261f2e07ec61",
    "RLVW/v2x/0": "389d3f41d87a15c73feb2157350a537ea5c20c28a5d3d0659a47e99c45964e27",
    "RLVW/v2x/1": "848756615a88549db080e79bcda4ea685999b53f8be17bc3a7c882fa212697c5",
    "RLVW/v2x/2": "6301cc9a5319d03152f0061424d9a8c9c888db6255448d11e381d03db3579140",
    "RLVW/v2x/3": "f665293d1b263458f0138038f474a4714ee79a547af7cee0634c6869062d223e",
    "GLOSA/gt/0": "45acaf24d930cca67cb084c88cacdd03cb109cf9c20463715704910c22d1a294",
    "GLOSA/gt/1": "5033b5a530ca143fee7ba834b20f49a0ed556d10760039e6a33bc1611f4f54e4",
    "GLOSA/gt/2": "510e268985b6a93f4c38e685be68836fd3a2a72d2c28ee54ade12a9b63d9ecf5",
    "GLOSA/gt/3": "77890cb4776859af0dc247f6c1ea2778cbd1e009924137b36c34c759e8f25168",
    "GLOSA/v2x/0": "89bb566681eeaea40428063c10447ce09843554da2628dde6c66ddc34b47808b",
    "GLOSA/v2x/1": "02a7f39ad91b652070b7afd93ad38d3da8283a4a78adeec3348bfdddb141bda4",
    "GLOSA/v2x/2": "d9ed0ecc571fc37f9656e4eff5c0e134c92252e663499e004902d282eab94922",
    "GLOSA/v2x/3": "21230d76e508ad28c989a7899c20a1207e51f7cfc50d4e2f5a086f04471db0b9",
    "FCW/gt/0": "38578ac4a81f81eb7117f8d1776949f6355b784f102d178b07181966ba521dc5",
    "FCW/gt/1": "8fdec7179764b4060a7a40aa7ff701defb78b0ecca84f0fe0e96e7a057b84e12",
    "FCW/gt/2": "e2a18383ca64aa6211f816342f3d16bf1032d691cb43845ba1b7fc2b81513504",
    "FCW/gt/3": "694c11ffebc86ced9adf07cb2991e266534af27a7041c980d0a830ab8184608b",
    "FCW/v2x/0": "319368f32a151579400f631dedffd27057a3c8daf9d73997418686c525d16ac3",
    "FCW/v2x/1": "ae3c419bb371967114aac22d4e25284c68156c1b89b452765bb7e982237679c1",
    "FCW/v2x/2": "77f36c73d61100f5d2de29671ec5ee8951d4627c24190bfafff28ef3ba7fbcaf",
    "FCW/v2x/3": "6286d87e0b9b48ddb46dec497ed07704fa096567bc5b251fd36d71b4f872fbf7",
    "EEBL/gt/0": "78a5a0e0149c98de877eb8b626d8b543ed6600c782ca9966b06a8419525ec64c",
    "EEBL/gt/1": "2b7678f5fdb9c2635875ba87988cb574f459963ba8de690f59f394ffeea6e0b5",
    "EEBL/gt/2": "9b30be9677018b2f4bced5a1de4a19dccc3da0e132f827973179c42334472c78",
    "EEBL/gt/3": "2253a8caea21690ab38e6700df75879f19100a39da37dd6f3a6b8220234e2cb9",
    "EEBL/v2x/0": "b88f09fe68450c8a2e6f87e2dfebb2657344defcfd36ca14cdf66edbc8301127",
    "EEBL/v2x/1": "c9ae40309b11baea4ea80119defffd002359f97208961bab5a5b354da8f5ff6e",
    "EEBL/v2x/2": "9c257496b94a7ee7c95f4aba77e6b18b5e78a76aa59d7cdb5af19237d64b2766",
    "EEBL/v2x/3": "ba7e35c0ba92bdcba59661a70705e3313ab7b191a36bea1e9fb24db6efdb50c3",
    "IMA/gt/0": "408358b79c97dc9762e357079ebe9030a3b6ff26bf5f2fc8c6eaf0665ad57d90",
    "IMA/gt/1": "a38134fd6082ee2bc40d23c0b8fab1f9be5959498223e955a76b125e9e1a9c63",
    "IMA/gt/2": "58111bc93f01ee3afdf5772e053bac6d6af4a01fb2ea5d7f4b0fca0a9eba2744",
    "IMA/gt/3": "9669cc4741db9d2d54beaa6a87bf986873f496b7010d1365674a481c80068a3f",
    "IMA/v2x/0": "996b6d126b790df9d80a86224838a67b262839f39cc47acde2934adc1d5d3407",
    "IMA/v2x/1": "3ec65efc0ed5d88d46967ebbf49160f0c2f1abc8aadb8905e3a14f6fc2c96f73",
    "IMA/v2x/2": "87339047f2e3101f35ce23f896f32b1c17d6fdb0a4f877b5fe58c414cfcfd528",
    "IMA/v2x/3": "cb8c54f47aea70416718217a2e1eb85f85e68d093d143aa001f118516c658a53",
    "LTA/gt/0": "d79271a5c3e923c96e27be2e980db6e9c1279c8da4e131b72a0c261a7c344d83",
    "LTA/gt/1": "7ecb38952c481929e06052407920391df0ef466b2495fbf9556db5574fb2b3d3",
    "LTA/gt/2": "e862fff1baa21fae22e9df3ad1f590035b918d6a71905d9b048b5a4f91dcc25b",
    "LTA/gt/3": "cefb926691aa092c2ccf673895246ea1cae09545b482e992c7e16259f9c9b882",
    "LTA/v2x/0": "ebab78b9a4ff44e034acbf7cdb63c649959d86c091a4f1cc7cc7c0523a24a863",
    "LTA/v2x/1": "99e70d4ab23b09b11e65b8891e07eba490435a87f1ac7aa2c3597bc3ab3ca284",
    "LTA/v2x/2": "3532ba2f35f842e4a5df48cb9ede7b21c4de8bd90b904d8df3bb5174670cf25e",
    "LTA/v2x/3": "a3a17d993a85b642677fc5be5354e17cdbb4bbde20de66342841a0621faa5488",
    "FREEZE_BEFORE_AMBER/gt/0": "d24b905bc934ccfd13d87abb3af858c4b7fe4726aab59b09dbb3dbd07f17ea41",
    "FREEZE_BEFORE_AMBER/gt/1": "ee92a61d1eeb56eddc18e44bd6f9b71a696082fb5435168ae7581a4fba77a371",
    "FREEZE_BEFORE_AMBER/gt/2": "10319b4e9303fd6ff95f8aa9429cae6ee5dab74b57df2d9e6ba2ca15cecaa288",
    "FREEZE_BEFORE_AMBER/gt/3": "4a7e0e5144d1976e11c342b0b6f2179892eaae6fbbec1953aa8064393fa6abfb",
    "FREEZE_BEFORE_AMBER/v2x/0": "4139466c74bf0786879dde19cf2ff61e4be49cb6df2f989b0dc47d4bd3cdb147",
    "FREEZE_BEFORE_AMBER/v2x/1": "410beff2ccdd1838b69c7cdb2c12eb6a59de098fa89eae2573e2fa3b2577c4f5",
    "FREEZE_BEFORE_AMBER/v2x/2": "da3901f39bebc7a5011b5d4ad4be34c778ba3588516baf1857925894715bd02e",
    "FREEZE_BEFORE_AMBER/v2x/3": "af161863e54b235a2c266aedeacc971343a755226cd6f3aa7b6c71e753106c55",
    "FREEZE_BEFORE_AMBER/gt/7": "ad72d12b6ae8b15156c8eaaa6b9970bf441b6a1ddacc28a77774fbc5a2354a4b",
    "FREEZE_BEFORE_AMBER/v2x/7": "c5180d779a2c6f6caa538e66851d7823c4e6ca0618b81ca3dd2a741b5578a8a6",
}
GOLDEN_BATCH: dict[str, str] = {
    "gt": "c157cf6197a65a783eab541c414e3d9480ac32f5a8cc979a3fadf7b750a3eda2",
    "v2x": "94489fefdc806783c6caea864d78d4f64c074632bbd0dced31edbfc9b8117277",
}
GOLDEN_TRACE: dict[str, str] = {  # over floats rounded to TRACE_DECIMALS (the same messages as before)
    "FREEZE_BEFORE_AMBER": "ecc8a5fd89f1d4532143494b4b6e15177060a03f99320768d690d1a1a09b70f7",
    "RLVW": "df57358605301b7b34423f8dbdbc61ad6792d03d654c9e6edae0677163706e3d",
    "GLOSA": "c9bf88568e21b661abb532df6acf05e117a0ad80fb559a221903d44cdbbd55d2",
    "FCW": "05ae1fc71bb0a938a78a8f49ad21fdba48975f6235aa7fb1259e551a4c5d212f",
    "EEBL": "23c3b071879cb6d2637130f6e8d73af5dec6b0ec7b10a4189ed6dda993a23eec",
    "IMA": "614ef9f8b8224cd80b569c67b3d56fd0fa2aeeea2f245be714adfd266e5bf6bc",
    "LTA": "d30a90959b2f18c94a796b2f5c1a201d68041dec3fa663906add5d0235d250de",
}
GOLDEN_CANYON = "bbe1c4328f4842549be8d6641fef765f113bbfcf8b45c9ce82e8ca3bd300dae4"


@pytest.mark.parametrize("name, src, seed", paired_cases())
def test_paired_outcome_bytes_unchanged(name: str, src: str, seed: int) -> None:
    assert paired_hash(name, src, seed) == GOLDEN_PAIRED[f"{name}/{src}/{seed}"]


@pytest.mark.parametrize("src", list(SOURCES))
def test_batch_outcome_bytes_unchanged(src: str) -> None:
    assert batch_hash(src) == GOLDEN_BATCH[src]


@pytest.mark.parametrize("name", list(GOLDEN_TRACE))
def test_trace_messages_unchanged(name: str) -> None:
    assert trace_hash(name) == GOLDEN_TRACE[name]


def test_v2x_canyon_beliefs_unchanged() -> None:
    assert canyon_hash() == GOLDEN_CANYON


# numpy's SIMD loops for log10 and tanh (the channel) give other last bits on AVX-512, AVX2 and SSE machines;
# outcome bytes (floats rounded to 1e-6), traces and canyon beliefs (rounded) must not see them
_PORTABLE_CHECK = """
import sys
from tests.simulator import test_golden_outcomes as g
bad = [k for k in ("RLVW/v2x/0", "GLOSA/v2x/1", "FCW/v2x/2", "EEBL/v2x/3", "IMA/v2x/0", "LTA/v2x/1")
       if g.paired_hash(*k.split("/")[:2], int(k.split("/")[2])) != g.GOLDEN_PAIRED[k]]
bad += ["batch"] * (g.batch_hash("v2x") != g.GOLDEN_BATCH["v2x"])
bad += ["trace"] * (g.trace_hash("EEBL") != g.GOLDEN_TRACE["EEBL"])
bad += ["canyon"] * (g.canyon_hash() != g.GOLDEN_CANYON)
print(bad)
sys.exit(1 if bad else 0)
"""


def test_golden_hashes_hold_on_the_sse_loops_of_numpy() -> None:
    """The hashes on numpy's lowest x86 dispatch level (AVX2 and AVX-512 loops switched off, as on an older CPU:
    the channel's log10 and tanh bits differ here) are the same."""
    import os
    import platform
    import subprocess
    import sys
    from pathlib import Path

    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the dispatch levels named are x86's")
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"}
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, "-c", _PORTABLE_CHECK], cwd=root, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]


def main() -> None:
    print("GOLDEN_PAIRED: dict[str, str] = {")
    for name, src, seed in paired_cases():
        print(f'    "{name}/{src}/{seed}": "{paired_hash(name, src, seed)}",')
    print("}\nGOLDEN_BATCH: dict[str, str] = {")
    for src in SOURCES:
        print(f'    "{src}": "{batch_hash(src)}",')
    print("}\nGOLDEN_TRACE: dict[str, str] = {")
    for name in TRACED:
        print(f'    "{name}": "{trace_hash(name)}",')
    print(f'}}\nGOLDEN_CANYON = "{canyon_hash()}"')


if __name__ == "__main__":
    main()
