"""``make fuzz``: property-based fuzzing of every public RPC of the five services (issue 16, item 7).

The RPCs are enumerated from the service descriptors in ``lastv2x/v1/*_pb2.py``; the inputs are
hypothesis strategies derived from the request descriptors (:func:`message_strategy`: scalars with
NaN / inf / extreme integers, enums with unknown numbers, repeated fields, nested messages to a
depth cap, one member of each oneof), plus raw bytes and valid requests with one field perturbed.
All five servers run in this process on loopback, each call under a short deadline.

Every call is classified: ``ok``; ``expected`` (a domain status: INVALID_ARGUMENT, NOT_FOUND,
FAILED_PRECONDITION, RESOURCE_EXHAUSTED, UNAUTHENTICATED, OUT_OF_RANGE, UNIMPLEMENTED); ``slow``
(the deadline passed on an RPC that may legitimately take long: Execute, ExecuteBatch, streams
that follow a campaign; counted, not a failure); and the failures: ``crash`` (INTERNAL / UNKNOWN),
``hang`` (the deadline passed on a call that should be quick), ``leak`` (a status message naming
a server path, a traceback or a library's input dump), ``other`` (any other status).

    python -m lastv2x_app.fuzz [--per-rpc 10000] [--rpc Execute ...] [--seed N] [--json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

SERVICE_MODULES = ("llm", "grounding", "simulator", "search", "strap")
EXPECTED = frozenset({"INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED",
                      "UNAUTHENTICATED", "OUT_OF_RANGE", "UNIMPLEMENTED"})
CRASH = frozenset({"INTERNAL", "UNKNOWN"})
LEAK = re.compile(r"/work/|/tmp/|/home/|/usr/|site-packages|Traceback|input_value=|File \"")
DEADLINE_S = 5.0  # a call that should be quick
SLOW_DEADLINE_S = 20.0  # RPCs that run simulations or follow a campaign
SLOW_OK = frozenset({"Execute", "ExecuteBatch", "WatchCampaign", "StartCampaign", "ReplayWitness"})
MAX_STREAM_RESPONSES = 64  # a server stream is read this far, then cancelled
MAX_DEPTH = 3  # nested messages below the request


@dataclass(frozen=True)
class Rpc:
    service: str  # llm, grounding, ...
    name: str  # method name
    path: str  # /lastv2x.v1.Service/Method
    request: type[Message]
    client_streaming: bool
    server_streaming: bool

    @property
    def label(self) -> str:
        return f"{self.service}.{self.name}"


def rpcs() -> list[Rpc]:
    """Every public RPC of the five services, from their descriptors."""
    out = []
    for name in SERVICE_MODULES:
        module = importlib.import_module(f"lastv2x.v1.{name}_pb2")
        for service in module.DESCRIPTOR.services_by_name.values():
            for m in service.methods:
                cls = getattr(importlib.import_module(m.input_type.file.name.replace("/", ".").replace(
                    ".proto", "_pb2")), m.input_type.name)
                out.append(Rpc(name, m.name, f"/{service.full_name}/{m.name}", cls, m.client_streaming,
                               m.server_streaming))
    return out


# --- strategies derived from descriptors ---------------------------------------------------------

_NASTY_STRINGS = ["", " ", "\x00", "../../../../etc/shadow", "/etc/passwd", "/tmp", "grpc://127.0.0.1:1",
                  "reference", "NaN", "-1", "1e309", "{", "[" * 64, "{\"a\":" * 40, "x" * 5000, "\u202e\ud7ff",
                  "ego", "SPAT", "approaches", "knowledge", "synthetic_crossing", "rlvw", "RLVW", "a.mcap",
                  "a.db3", "a.bag", "a.csv"]
_INT_EDGES = [0, 1, -1, 2, 3, 255, 256, 2**31 - 1, -(2**31), 2**32, 2**53 + 1, 2**63 - 1, -(2**63)]
_FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 1e-320, 1e308, -1e308, float("nan"), float("inf"), float("-inf")]

_INT_RANGES = {
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1), FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1), FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1), FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1), FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1), FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1)}


def scalar_strategy(f: FieldDescriptor) -> st.SearchStrategy[Any]:
    """Values of one scalar or enum field, edge cases weighted in."""
    t = f.type
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return st.one_of(st.sampled_from([v for v in _INT_EDGES if lo <= v <= hi]), st.integers(-1000, 1000),
                         st.integers(lo, hi))
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        width: Literal[32, 64] = 32 if t == FieldDescriptor.TYPE_FLOAT else 64
        edges = [v for v in _FLOAT_EDGES if width == 64 or abs(v) < 3e38 or v != v or abs(v) == float("inf")]
        return st.one_of(st.sampled_from(edges), st.floats(-1e4, 1e4, width=width), st.floats(width=width))
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t == FieldDescriptor.TYPE_STRING:
        return st.one_of(st.sampled_from(_NASTY_STRINGS), st.text(max_size=24))
    if t == FieldDescriptor.TYPE_BYTES:
        return st.one_of(st.binary(max_size=64), st.sampled_from([b"", b"\x89MCAP0\r\n", b"\x89MCAP0\r\n" * 2]))
    if t == FieldDescriptor.TYPE_ENUM:
        known = [v.number for v in f.enum_type.values]
        return st.one_of(st.sampled_from(known), st.integers(-3, 1000), st.sampled_from([2**31 - 1, -(2**31)]))
    raise TypeError(f"no strategy for field type {t} ({f.full_name})")


def _is_repeated(f: FieldDescriptor) -> bool:
    if hasattr(f, "is_repeated"):
        return bool(f.is_repeated)
    return bool(f.label == FieldDescriptor.LABEL_REPEATED)


def _is_map(f: FieldDescriptor) -> bool:
    return f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type.GetOptions().map_entry


def field_strategy(f: FieldDescriptor, depth: int) -> st.SearchStrategy[Any] | None:
    """Values for one field (a list for repeated ones); None when it is a message past the depth cap."""
    if _is_map(f):
        key = scalar_strategy(f.message_type.fields_by_name["key"])
        value = field_strategy(f.message_type.fields_by_name["value"], depth + 1)
        return None if value is None else st.dictionaries(key, value, max_size=3)
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        if depth >= MAX_DEPTH:
            return None
        one: st.SearchStrategy[Any] = st.deferred(lambda: message_strategy(f.message_type, depth + 1))
    else:
        one = scalar_strategy(f)
    if _is_repeated(f):
        return st.lists(one, max_size=4 if f.type == FieldDescriptor.TYPE_MESSAGE else 8)
    return one


def set_field(msg: Message, f: FieldDescriptor, value: Any) -> None:
    """Assign ``value`` (as drawn by :func:`field_strategy`) to ``f`` of ``msg``, replacing what was there."""
    msg.ClearField(f.name)
    target = getattr(msg, f.name)
    if _is_map(f):
        for k, v in value.items():
            if isinstance(v, Message):
                target[k].CopyFrom(v)
            else:
                target[k] = v
    elif _is_repeated(f):
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            for v in value:
                target.add().CopyFrom(v)
        else:
            target.extend(value)
    elif f.type == FieldDescriptor.TYPE_MESSAGE:
        target.CopyFrom(value)
    else:
        setattr(msg, f.name, value)


_CACHE: dict[tuple[str, int], st.SearchStrategy[Message]] = {}


def message_strategy(desc: Descriptor, depth: int = 0) -> st.SearchStrategy[Message]:
    """Messages of type ``desc``: each field set or not; at most one member of each (real) oneof."""
    key = (desc.full_name, depth)
    if key in _CACHE:
        return _CACHE[key]
    cls = _message_class(desc)
    oneofs = [o for o in desc.oneofs if not _synthetic(o)]
    in_oneof = {f.name for o in oneofs for f in o.fields}
    plain = [(f, s) for f in desc.fields if f.name not in in_oneof
             for s in [field_strategy(f, depth)] if s is not None]
    groups = [[(f, s) for f in o.fields for s in [field_strategy(f, depth)] if s is not None] for o in oneofs]

    @st.composite
    def build(draw: Callable[..., Any]) -> Message:
        msg = cls()
        for f, s in plain:
            if draw(st.booleans()):
                _try_set(msg, f, draw(s))
        for group in groups:
            if group and draw(st.booleans()):
                f, s = draw(st.sampled_from(group))
                _try_set(msg, f, draw(s))
        return msg

    strategy = build()
    _CACHE[key] = strategy
    return strategy


def _synthetic(oneof: Any) -> bool:
    """The hidden oneof of a proto3 ``optional`` field."""
    return len(oneof.fields) == 1 and oneof.name == "_" + oneof.fields[0].name


def _try_set(msg: Message, f: FieldDescriptor, value: Any) -> None:
    try:
        set_field(msg, f, value)
    except (ValueError, TypeError):  # e.g. an unknown number on a closed enum: leave the field unset
        msg.ClearField(f.name)


def _message_class(desc: Descriptor) -> type[Message]:
    from google.protobuf import message_factory
    return message_factory.GetMessageClass(desc)  # type: ignore[no-any-return]


def mutate_strategy(seeds: list[Message]) -> st.SearchStrategy[Message]:
    """A valid request with one field (at the top or one level down in a set message) perturbed."""

    @st.composite
    def build(draw: Callable[..., Any]) -> Message:
        msg = type(seeds[0])()
        msg.CopyFrom(draw(st.sampled_from(seeds)))
        target, depth = msg, 0
        while True:  # descend into a set sub-message now and then
            nested = [f for f in target.DESCRIPTOR.fields if f.type == FieldDescriptor.TYPE_MESSAGE
                      and not _is_repeated(f) and target.HasField(f.name)]
            if not nested or depth >= MAX_DEPTH - 1 or not draw(st.booleans()):
                break
            target, depth = getattr(target, draw(st.sampled_from(nested)).name), depth + 1
        fields = list(target.DESCRIPTOR.fields)
        if not fields:
            return msg
        f = draw(st.sampled_from(fields))
        s = field_strategy(f, depth)
        if s is None or draw(st.integers(0, 9)) == 0:
            target.ClearField(f.name)
        else:
            _try_set(target, f, draw(s))
        return msg

    return build()


# --- seeds: one valid request per RPC ------------------------------------------------------------

def seed_requests() -> dict[str, list[Message]]:
    """Valid requests to mutate, by ``service.Method``."""
    from lastv2x.core.catalogue import Application
    from lastv2x.rpc.convert import spec_to_proto
    from lastv2x.v1 import grounding_pb2, llm_pb2, search_pb2, simulator_pb2, strap_pb2
    from services.simulator.reference import reference_spec

    spec = spec_to_proto(reference_spec(Application.RLVW, seed=7))
    short = spec_to_proto(reference_spec(Application.FCW, seed=3))
    intent = "Check that red-light violation warning stays safe when the SPaT feed freezes just before amber."
    return {
        "llm.ParseIntent": [llm_pb2.ParseIntentRequest(text=intent, seed=1)],
        "llm.PlanScene": [llm_pb2.PlanSceneRequest(spec=spec)],
        "llm.Reflect": [llm_pb2.ReflectRequest(prompt=intent, evidence_digest_json="{}")],
        "llm.Verify": [llm_pb2.VerifyRequest(spec=spec), llm_pb2.VerifyRequest(spec_json="{}")],
        "grounding.ListMaps": [grounding_pb2.ListMapsRequest()],
        "grounding.Retrieve": [grounding_pb2.RetrieveRequest(kind="approaches", query="left turn", k=3)],
        "grounding.Ground": [grounding_pb2.GroundRequest(spec=spec)],
        "simulator.Execute": [simulator_pb2.ExecuteRequest(spec=short, seed=1)],
        "simulator.ExecuteBatch": [simulator_pb2.ExecuteBatchRequest(requests=[simulator_pb2.ExecuteRequest(
            spec=short, seed=1)])],
        "simulator.CoverageMap": [simulator_pb2.CoverageMapRequest(map_name="synthetic_crossing")],
        "search.StartCampaign": [search_pb2.StartCampaignRequest(specs=[spec], budget_per_scenario=1, seed=1)],
        "search.WatchCampaign": [search_pb2.WatchCampaignRequest(campaign_id="c-0")],
        "search.GetCampaign": [search_pb2.GetCampaignRequest(campaign_id="c-0")],
        "search.CancelCampaign": [search_pb2.CancelCampaignRequest(campaign_id="c-0")],
        "search.ResumeCampaign": [search_pb2.ResumeCampaignRequest(campaign_id="c-0")],
        "search.ListCampaigns": [search_pb2.ListCampaignsRequest(limit=5)],
        "search.ListWitnesses": [search_pb2.ListWitnessesRequest()],
        "search.GetWitness": [search_pb2.GetWitnessRequest(witness_id="w-0")],
        "search.ReplayWitness": [search_pb2.ReplayWitnessRequest(witness_id="w-0")],
        "strap.Ingest": [strap_pb2.IngestRequest(name="a.mcap", chunk=b"\x89MCAP0\r\n")],
        "strap.Reduce": [strap_pb2.ReduceRequest(recording_id="r-0")],
        "strap.Prioritize": [strap_pb2.PrioritizeRequest()],
        "strap.Evaluate": [strap_pb2.EvaluateRequest()],
        "strap.ExportSegments": [strap_pb2.ExportSegmentsRequest()],
    }


def input_strategy(rpc: Rpc, seeds: list[Message]) -> st.SearchStrategy[tuple[str, list[bytes]]]:
    """(kind, request messages as bytes): typed from the descriptor, raw bytes, or a mutated seed.
    A client-streaming RPC gets 1-3 messages."""
    typed = message_strategy(rpc.request.DESCRIPTOR)
    raw = st.one_of(st.binary(max_size=256), st.sampled_from([b"\xff", b"\x0a\xff\xff\xff\xff\x0f", b"\x08" * 11]))
    mutated = mutate_strategy(seeds) if seeds else typed
    one = st.one_of(typed.map(lambda m: ("typed", m.SerializeToString())),
                    raw.map(lambda b: ("raw", b)),
                    mutated.map(lambda m: ("mutated", m.SerializeToString())))
    if not rpc.client_streaming:
        return one.map(lambda kb: (kb[0], [kb[1]]))
    return st.lists(one, min_size=1, max_size=3).map(lambda xs: (xs[0][0], [b for _, b in xs]))


# --- servers and calls ---------------------------------------------------------------------------

@contextmanager
def serving(root: Path) -> Iterator[dict[str, str]]:
    """The five services in this process on loopback ports; their temp state under ``root``."""
    from lastv2x.rpc.server import ServerConfig, create_server
    from lastv2x.rpc.services import SERVICES
    from services.grounding.core import GroundingConfig
    from services.search.core import SearchCore
    from services.search.pipeline import InProcessPipeline
    from services.search.servicer import register as register_search
    from services.search.settings import SearchSettings
    from services.simulator.execute import SimulatorLimits
    from services.strap.store import StrapConfig

    search_core = SearchCore(InProcessPipeline(synthetic_grounding=True, trace_dir=root / "search-traces"),
                             SearchSettings(data_dir=root / "search", stall_candidates=3, candidates_per_scenario=4,
                                            max_candidates_per_scenario=4, max_campaigns_running=1))
    registers = {
        "llm": SERVICES["llm"].register(),
        "grounding": SERVICES["grounding"].register(GroundingConfig(cache_dir=root / "catalogue")),
        "simulator": SERVICES["simulator"].register(SimulatorLimits(max_duration_s=30.0, trace_dir=root / "traces")),
        "search": lambda s: register_search(s, core=search_core),
        "strap": SERVICES["strap"].register(StrapConfig(store_dir=root / "strap")),
    }
    servers, targets = [], {}
    try:
        for name, register in registers.items():
            server, port = create_server(ServerConfig(name, log_json=False), register)
            server.start()
            servers.append(server)
            targets[name] = f"127.0.0.1:{port}"
        yield targets
    finally:
        for server in servers:
            server.stop(0)
        search_core.close()


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)  # the first few failures, for the report

    def add(self, outcome: str, code: str, note: str = "") -> None:
        self.counts["inputs"] += 1
        self.counts[outcome] += 1
        self.codes[code] += 1
        if outcome in ("crash", "hang", "leak", "other") and len(self.samples) < 5:
            self.samples.append(f"{outcome} {code}: {note[:300]}")

    @property
    def failures(self) -> int:
        return sum(self.counts[k] for k in ("crash", "hang", "leak", "other"))


def classify(rpc: Rpc, code: grpc.StatusCode, details: str) -> str:
    if details and LEAK.search(details):
        return "leak"
    if code == grpc.StatusCode.OK:
        return "ok"
    if code.name in EXPECTED:
        return "expected"
    if code.name in CRASH:
        return "crash"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "slow" if rpc.name in SLOW_OK else "hang"
    return "other"


def call(channel: grpc.Channel, rpc: Rpc, payloads: list[bytes], tally: Tally,
         after_ok: Callable[[Rpc, bytes], None] | None = None) -> None:
    """Send ``payloads`` as bytes (no client-side serialization), read the answer, classify it."""
    timeout = SLOW_DEADLINE_S if rpc.name in SLOW_OK else DEADLINE_S
    try:
        if rpc.client_streaming:
            reply = channel.stream_unary(rpc.path, request_serializer=None, response_deserializer=None)(
                iter(payloads), timeout=timeout)
        elif rpc.server_streaming:
            stream = channel.unary_stream(rpc.path, request_serializer=None, response_deserializer=None)(
                payloads[0], timeout=timeout)
            for i, _ in enumerate(stream):
                if i + 1 >= MAX_STREAM_RESPONSES:
                    stream.cancel()
                    break
            reply = b""
        else:
            reply = channel.unary_unary(rpc.path, request_serializer=None, response_deserializer=None)(
                payloads[0], timeout=timeout)
    except grpc.RpcError as e:
        code, details = e.code(), e.details() or ""
        if code == grpc.StatusCode.CANCELLED and rpc.server_streaming:  # our own cancel after enough responses
            code = grpc.StatusCode.OK
        tally.add(classify(rpc, code, details), code.name, f"{details} <- {payloads[0][:80]!r}")
        return
    tally.add("ok", "OK")
    if after_ok is not None:
        after_ok(rpc, reply)


def fuzz_rpc(channel: grpc.Channel, rpc: Rpc, examples: int, seeds: list[Message], derandomize: bool = True,
             after_ok: Callable[[Rpc, bytes], None] | None = None) -> Tally:
    """``examples`` inputs to one RPC (fewer only when hypothesis exhausts a finite input space)."""
    tally = Tally()

    @settings(max_examples=examples, database=None, deadline=None, derandomize=derandomize,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck), print_blob=False)
    @given(input_strategy(rpc, seeds))
    def run(case: tuple[str, list[bytes]]) -> None:
        call(channel, rpc, case[1], tally, after_ok)

    run()
    return tally


def cancel_started(channels: dict[str, grpc.Channel]) -> Callable[[Rpc, bytes], None]:
    """After a StartCampaign that was accepted, cancel the campaign: the fuzzer should not keep the
    in-process simulator busy with campaigns in the background."""
    from lastv2x.v1 import search_pb2, search_pb2_grpc

    def after(rpc: Rpc, reply: bytes) -> None:
        if rpc.label != "search.StartCampaign":
            return
        campaign = search_pb2.StartCampaignResponse.FromString(reply).campaign.id
        try:
            search_pb2_grpc.SearchServiceStub(channels["search"]).CancelCampaign(
                search_pb2.CancelCampaignRequest(campaign_id=campaign), timeout=DEADLINE_S)
        except grpc.RpcError:
            pass

    return after


COLUMNS = ("inputs", "ok", "expected", "slow", "crash", "hang", "internal/unknown", "leak", "other")


def fuzz_all(per_rpc: int, only: list[str] | None = None, derandomize: bool = True, root: Path | None = None,
             progress: Callable[[str, Tally, float], None] | None = None) -> dict[str, Tally]:
    """Every RPC (or those named in ``only``: ``Execute`` or ``simulator.Execute``) against in-process
    servers; one :class:`Tally` per RPC."""
    seeds = seed_requests()
    results: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="lastv2x-fuzz-") as tmp, serving(root or Path(tmp)) as targets:
        channels = {name: grpc.insecure_channel(t) for name, t in targets.items()}
        after = cancel_started(channels)
        try:
            for rpc in rpcs():
                if only and rpc.name not in only and rpc.label not in only:
                    continue
                start = time.perf_counter()
                results[rpc.label] = fuzz_rpc(channels[rpc.service], rpc, per_rpc, seeds.get(rpc.label, []),
                                              derandomize, after)
                if progress:
                    progress(rpc.label, results[rpc.label], time.perf_counter() - start)
        finally:
            for ch in channels.values():
                ch.close()
    return results


def row(tally: Tally) -> list[int]:
    c = tally.counts
    return [c["inputs"], c["ok"], c["expected"], c["slow"], c["crash"], c["hang"],
            tally.codes["INTERNAL"] + tally.codes["UNKNOWN"], c["leak"], c["other"]]


def table(results: dict[str, Tally]) -> str:
    lines = ["| RPC | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    total = [0] * len(COLUMNS)
    for label, tally in results.items():
        r = row(tally)
        total = [a + b for a, b in zip(total, r, strict=True)]
        lines.append(f"| {label} | " + " | ".join(f"{v:,}" for v in r) + " |")
    lines.append("| **all** | " + " | ".join(f"{v:,}" for v in total) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-rpc", type=int, default=10_000, help="inputs per RPC (default 10,000)")
    ap.add_argument("--rpc", action="append", help="only this RPC (Method or service.Method); repeatable")
    ap.add_argument("--random", action="store_true", help="new examples each run (default: derandomized)")
    ap.add_argument("--json", action="store_true", help="print the tallies as JSON instead of a table")
    args = ap.parse_args(argv)
    started = time.perf_counter()

    def progress(label: str, tally: Tally, secs: float) -> None:
        print(f"  {label}: {tally.counts['inputs']} inputs in {secs:.1f} s, failures {tally.failures}",
              file=sys.stderr, flush=True)
        for s in tally.samples:
            print(f"    {s}", file=sys.stderr)

    results = fuzz_all(args.per_rpc, args.rpc, not args.random, progress=progress)
    if args.json:
        print(json.dumps({k: {"counts": dict(t.counts), "codes": dict(t.codes), "samples": t.samples}
                          for k, t in results.items()}, indent=1))
    else:
        print(table(results))
        print(f"\n{sum(t.counts['inputs'] for t in results.values()):,} inputs over {len(results)} RPCs in "
              f"{time.perf_counter() - started:.0f} s; failures (crash + hang + leak + other): "
              f"{sum(t.failures for t in results.values())}")
    return 1 if any(t.failures for t in results.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
