"""What the Execute RPCs do, without grpc: validate a program against its map and caps,
pick the information sources, run the pair, optionally write the MCAP trace.

The message-driven ego gets the V2X stack (channel over the map's buildings, faults,
reconstruction, monitor); the shadow ego gets ground truth. Programs on the synthetic
straight crossing have no buildings (open space).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lastv2x.core.catalogue import APPLICATIONS, Stream
from lastv2x.core.errors import ErrorCollector, FieldViolation, InvalidArgument
from lastv2x.core.faults import (
    RSU_SENDER,
    forged_id,
    free_forged_id,
    operator_field_problems,
)
from lastv2x.core.program import ScenarioProgram, backhaul_problems, program_sha256
from lastv2x.core.settings import env_flag
from lastv2x.core.spec import AnchorEvent, AnchorKind, FaultOperator, GhostRoute, ScenarioSpec
from lastv2x.core.synthetic import SYNTH_MAP_NAME, program_from_spec_on_straight_roads
from services.simulator.apps.access import AppAccess
from services.simulator.apps.contract import ApplicationUnderTest
from services.simulator.apps.plugin import resolve_app
from services.simulator.backends.carla_logic import CarlaSettings
from services.simulator.backends.plant import PlantOptions
from services.simulator.maps.settings import MapSettings
from services.simulator.paired import PairedOutcome, execute_batch, execute_paired
from services.simulator.v2x.stack import v2x_source_factory

if TYPE_CHECKING:  # the map model, the MCAP writer and raw-message mode load on first use (CLI start-up)
    from services.simulator.maps.model import RoadMap


@dataclass(frozen=True)
class SimulatorLimits:
    """The simulator service's settings, read once in ``main`` (``from_env``)."""

    max_duration_s: float = 120.0  # longest scenario a request may ask for, s
    max_batch: int = 256  # programs per ExecuteBatch
    trace_dir: Path = Path(".lastv2x/traces")
    map_paths: tuple[Path, ...] = ()  # directories or .xodr files of user maps
    app_step_timeout_s: float = 1.0  # deadline of one Step of an application under test over gRPC, s
    app_connect_timeout_s: float = 5.0  # deadline of its Describe / Open / Close, s
    app_access: AppAccess = AppAccess()  # LASTV2X_SIMULATOR_APP_*: allowed app addresses, the apps' own credentials
    max_rsus: int = 256  # RSUs per CoverageMap request
    etsi_asn1_dir: Path | None = None  # raw-message mode: the ETSI ASN.1 (None = ../shared/data/v2x_asn1/etsi)
    dsrc_asn1_dir: Path | None = None  # raw-message mode: a user-supplied ISO TS 19091 DSRC ASN.1 directory
    workers: int = 0  # ExecuteBatch worker processes (0 = the container's CPU limit, lastv2x.core.workers)
    carla: CarlaSettings = CarlaSettings()  # the carla backend's server (LASTV2X_CARLA_HOST, _PORT, _TIMEOUT_S)
    backend: str = "builtin"  # the simulator a request that names none runs on (services/simulator/backends)
    map_settings: MapSettings = MapSettings()  # LASTV2X_MAP_*: how user maps load (as grounding loads them)
    # warm up as the service starts (SimulatorCore.warm_up), NOT_SERVING until done: ~1-3 s of CPU that the first
    # request would pay. The image (deploy/Dockerfile) and `lastv2x up` set LASTV2X_SIMULATOR_WARM_UP=1;
    # off by default so that a core built in code (an in-process pipeline, a test server) starts at once
    warm_up: bool = False
    # compile the engine's kernels with numba (services/simulator/kernels; read once, as the engine is first imported);
    # 0 runs the same functions as Python (the same bits, no numba start-up: `lastv2x execute`'s one run)
    jit: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SimulatorLimits:
        """``LASTV2X_SIMULATOR_MAX_DURATION_S``, ``_MAX_BATCH``, ``_TRACE_DIR``, ``_APP_STEP_TIMEOUT_S``,
        ``_APP_CONNECT_TIMEOUT_S``, ``_APP_ALLOW``, ``_APP_TOKEN_FILES``, ``_APP_TLS_*`` (AppAccess), ``_MAX_RSUS``, ``_ETSI_ASN1_DIR``, ``_DSRC_ASN1_DIR``, ``_WORKERS``, ``_BACKEND``, ``_WARM_UP``, ``_JIT`` and the shared
        ``LASTV2X_MAP_PATHS`` (os.pathsep-separated) and ``LASTV2X_MAP_*`` (MapSettings), as grounding reads them."""
        env = os.environ if env is None else env
        p = "LASTV2X_SIMULATOR_"
        default = cls()
        try:
            return cls(max_duration_s=float(env.get(p + "MAX_DURATION_S", default.max_duration_s)),
                       max_batch=int(env.get(p + "MAX_BATCH", default.max_batch)),
                       trace_dir=Path(env.get(p + "TRACE_DIR") or default.trace_dir),
                       map_paths=tuple(Path(x) for x in env.get("LASTV2X_MAP_PATHS", "").split(os.pathsep)
                                       if x.strip()),
                       app_step_timeout_s=float(env.get(p + "APP_STEP_TIMEOUT_S", default.app_step_timeout_s)),
                       app_connect_timeout_s=float(env.get(p + "APP_CONNECT_TIMEOUT_S",
                                                           default.app_connect_timeout_s)),
                       app_access=AppAccess.from_env(env),
                       max_rsus=int(env.get(p + "MAX_RSUS", default.max_rsus)),
                       etsi_asn1_dir=Path(env[p + "ETSI_ASN1_DIR"]) if env.get(p + "ETSI_ASN1_DIR") else None,
                       dsrc_asn1_dir=Path(env[p + "DSRC_ASN1_DIR"]) if env.get(p + "DSRC_ASN1_DIR") else None,
                       workers=int(env.get(p + "WORKERS", default.workers)),
                       carla=CarlaSettings.from_env(env),
                       backend=resolve_backend(env.get(p + "BACKEND", ""), default.backend, p + "BACKEND"),
                       map_settings=MapSettings.from_env(env),
                       warm_up=env_flag(env.get(p + "WARM_UP", "0")),
                       jit=env_flag(env.get(p + "JIT", "1")))
        except ValueError as exc:
            raise InvalidArgument([], f"simulator settings: {exc}") from None

    def plant_options(self) -> PlantOptions:
        """What a simulator backend other than the builtin one takes from these settings."""
        return PlantOptions(self.map_paths, self.carla)

    def worker_count(self) -> int:
        """Worker processes of an ExecuteBatch: ``workers``, or the cgroup CPU limit when 0."""
        from lastv2x.core.workers import cpu_limit

        return self.workers if self.workers > 0 else cpu_limit()


MAP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # a map is named, never pathed, by a request


def _road_map(name: str, map_paths: tuple[Path, ...] = (), settings: MapSettings | None = None) -> RoadMap | None:
    """A program's map by name: built-in, or ``<name>.xodr`` under one of ``map_paths`` (a
    configured directory, or a configured file whose stem is ``name``), loaded with the map
    ``settings`` (``LASTV2X_MAP_*``, as grounding loads it). A request never names a server path:
    anything else is a MapError (InvalidArgument on ``map_name``)."""
    if name == SYNTH_MAP_NAME:
        return None
    from services.simulator.maps.errors import MapError

    if not MAP_NAME.fullmatch(name) or name.endswith(".xodr"):
        shown = name if len(name) <= 64 else name[:64] + "..."
        raise MapError(shown, "not a map name (letters, digits, '_', '.', '-'; at most 128): "
                       "maps load by built-in name or from the configured map directories (LASTV2X_MAP_PATHS)")
    return _load_named(name, map_paths, settings or MapSettings())


@functools.lru_cache(maxsize=16)
def _load_named(name: str, map_paths: tuple[Path, ...], settings: MapSettings) -> RoadMap:
    from services.simulator.maps import load_named

    return load_named(name, map_paths, settings)


def road_map_for(name: str, limits: SimulatorLimits) -> RoadMap | None:
    """The map a request names (see ``_road_map``); None for the synthetic straight crossing."""
    return _road_map(name, limits.map_paths, limits.map_settings)


def validate_program(program: ScenarioProgram, limits: SimulatorLimits, path: str = "program") -> RoadMap | None:
    """Caps and map references; raises InvalidArgument naming every bad field."""
    errors = ErrorCollector()
    if not math.isfinite(program.duration_s) or program.duration_s > limits.max_duration_s:
        errors.add(f"{path}.duration_s", f"{program.duration_s} s exceeds the cap of {limits.max_duration_s} s",
                   "shorten the scenario or raise LASTV2X_SIMULATOR_MAX_DURATION_S")
    road_map = None
    if program.map_name != SYNTH_MAP_NAME:
        from services.simulator.maps.errors import MapError

        try:
            road_map = _road_map(program.map_name, limits.map_paths, limits.map_settings)
        except MapError as exc:
            errors.add(f"{path}.map_name", exc.reason, "use a built-in map name or one under LASTV2X_MAP_PATHS")
    if road_map is not None:
        known = set(road_map.lanes) | set(road_map.movements)
        groups = set(road_map.signal_groups)
        junctions = set(road_map.junctions)
        for i, v in enumerate(program.vehicles):
            vpath = f"{path}.ego" if i == 0 else f"{path}.agents[{i - 1}]"
            for j, seg in enumerate(v.route.segments):
                if seg.id not in known:
                    errors.add(f"{vpath}.route.segments[{j}].id", f"map {program.map_name} has no lane {seg.id!r}")
            for j, c in enumerate(v.route.crossings):
                if c.junction_id not in junctions:
                    errors.add(f"{vpath}.route.crossings[{j}].junction_id",
                               f"map {program.map_name} has no junction {c.junction_id!r}")
        for k, g in enumerate(program.signal_groups):
            if g.id not in groups:
                errors.add(f"{path}.signal_groups[{k}].id", f"map {program.map_name} has no signal group {g.id!r}")
    validate_faults(program, errors, path)
    for problem in backhaul_problems(program.v2x, [r.id for r in program.rsus]):
        field, _, what = problem.partition(": ")
        errors.add(f"{path}.{field}", what, "join RSUs the program places (program.rsus), or drop the link")
    errors.raise_if_any()
    return road_map


def validate_faults(program: ScenarioProgram, errors: ErrorCollector, path: str = "program") -> None:
    """Refuse faults the verifier would block: a stream the application never reads, the
    operator/field/magnitude rules of ``lastv2x.core.faults`` (the verifier's ``operator_field``),
    anchors to events that never happen."""
    app = APPLICATIONS[program.application]
    ego = program.ego
    approach_m = (ego.route.stop_bar_s_m or 0.0) - ego.start_s_m
    for i, resolved in enumerate(program.faults):
        f = resolved.fault
        fpath = f"{path}.faults[{i}].fault"
        if f.stream not in app.consumes:
            errors.add(f"{fpath}.stream", f"{app.name} never consumes {f.stream}",
                       f"target one of {', '.join(app.consumes)}")
        for problem in operator_field_problems(f, program.spec):
            patch = ", ".join(f"{name} = {value!r}" for name, value in problem.patch)
            errors.add(f"{fpath}.{problem.fields[0]}", problem.message,
                       f"{problem.repair} ({patch})" if patch else problem.repair)
        if f.operator is FaultOperator.SPOOFED_RSU:
            group = resolved.target_group_id or ego.route.signal_group_id
            junction = next((g.junction_id for g in program.signal_groups if g.id == group), None)
            if not any(r.junction_id == junction for r in program.rsus):
                errors.add(f"{fpath}.operator", f"a forged roadside unit transmits from beside the RSU site of the "
                                                f"junction it lies about, and no RSU serves {junction or 'it'}",
                           "place an RSU there (spec v2x.rsu_placement junction or chain)")
            elif f.stream is Stream.MAP and junction not in {c.junction_id for c in ego.route.crossings}:
                errors.add(f"{fpath}.target_group", f"a forged MAP ties the ego's approach lanes to the target group, "
                                                    f"and the ego's route does not cross its junction {junction}",
                           "name a group of a junction the ego's route crosses, or leave it unset (the cross group)")
        if f.operator is FaultOperator.GHOST_SENDER and f.ghost_route is GhostRoute.CROSS and not any(
                a.route.conflict_s_m is not None for a in program.agents):
            errors.add(f"{fpath}.ghost_route", "a phantom on the crossing route drives the route of the agent that "
                                               "meets the ego at its conflict point, and no agent has one",
                       "give the program a cross or opposing agent with a conflict point, or put the phantom on the "
                       "ego's route (ghost_route ego)")
        if f.operator in (FaultOperator.GHOST_SENDER, FaultOperator.SPOOFED_RSU):
            forged = forged_id(f)
            real = {v.id for v in program.vehicles} | {r.id for r in program.rsus} | {RSU_SENDER}
            if forged in real:
                free = free_forged_id(f, real)
                errors.add(f"{fpath}.sender", f"the forged sender {forged!r} is a real vehicle or RSU of the program",
                           f"an id no vehicle or RSU has, e.g. {free!r}")
        if f.anchor.kind is AnchorKind.SIGNAL_EVENT and not program.signal_groups:
            errors.add(f"{fpath}.anchor", "signal events never happen: the program has no signal groups",
                       "anchor to scenario time or an ego event")
        if f.anchor.event is AnchorEvent.STOP_BAR_DISTANCE and (f.anchor.distance_m or 0.0) > approach_m + 1e-6:
            errors.add(f"{fpath}.anchor.distance_m", f"the ego starts {approach_m:.1f} m from the stop bar",
                       f"use at most {approach_m:.1f} m")
        if f.anchor.kind is AnchorKind.SCENARIO_TIME and f.anchor.offset_s >= program.duration_s:
            errors.add(f"{fpath}.anchor.offset_s", f"the window opens after the scenario ends ({program.duration_s} s)",
                       "open it earlier")


def program_for(spec: ScenarioSpec) -> ScenarioProgram:
    """A spec executed directly is laid on the synthetic straight crossing."""
    return program_from_spec_on_straight_roads(spec)


def app_under_test(spec: str | None, limits: SimulatorLimits, field: str = "app") -> ApplicationUnderTest:
    """The application a request names (``services.simulator.apps.plugin``), with the service's deadlines;
    raw-message mode encodes with the service's ASN.1 directories."""
    from services.simulator.v2x.wire import configure as configure_wire

    configure_wire(limits.etsi_asn1_dir, limits.dsrc_asn1_dir)
    return resolve_app(spec, step_timeout_s=limits.app_step_timeout_s,
                       connect_timeout_s=limits.app_connect_timeout_s, field=field, access=limits.app_access)


MAX_SEED = 2**63 - 1  # a seed is a non-negative int64 (numpy's generators refuse negatives)


def resolve_backend(name: str, default: str, path: str = "backend") -> str:
    """The backend a request runs on: its own name, else ``default``; an unknown name is refused at
    ``path`` listing the known ones (services/simulator/backends/base.py)."""
    from services.simulator.backends.base import BACKENDS, backend_info

    name = name.strip() or default
    try:
        return backend_info(name).name
    except InvalidArgument:
        raise InvalidArgument(FieldViolation(path, f"unknown simulator backend {name!r}",
                                             f"one of {', '.join(sorted(BACKENDS))}")) from None


def validate_seed(seed: int | None, path: str = "seed") -> None:
    """A request's seed override: None (the program's seed) or in [0, 2**63 - 1]."""
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise InvalidArgument(FieldViolation(path, f"{seed} is outside [0, 2**63 - 1]",
                                             "use a non-negative seed, or leave it unset for the program's"))


def run_one(program: ScenarioProgram, seed: int | None, limits: SimulatorLimits,
            write_trace: bool = False, app: ApplicationUnderTest | None = None,
            backend: str = "") -> tuple[PairedOutcome, str]:
    validate_seed(seed)
    road_map = validate_program(program, limits)
    factory = v2x_source_factory(road_map=road_map)
    backend = resolve_backend(backend, limits.backend)
    if not write_trace:
        return execute_paired(program, seed, md_source_factory=factory, app=app, backend=backend,
                              plant_options=limits.plant_options()), ""
    import secrets

    from services.simulator.scene import scene_channels
    from services.simulator.trace import TraceWriter

    limits.trace_dir.mkdir(parents=True, exist_ok=True)
    seed = program.seed if seed is None else seed
    name = program_sha256(program)[:16]
    path = (limits.trace_dir / f"{program.application.value.lower()}-{name}-{seed}.mcap").resolve()
    # one temp file per call: identical concurrent requests write the same trace side by side and
    # the last rename wins (same bytes); a failed run leaves nothing behind
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(6)}.part")
    try:
        # the program and seed travel with the trace: a recording replays without its request
        with TraceWriter(tmp, metadata={"program": program.model_dump_json(), "seed": str(seed)},
                         derived=scene_channels(program)) as trace:  # + /viz/scene (Foxglove SceneUpdate)
            outcome = execute_paired(program, seed, md_source_factory=factory, trace=trace, app=app, backend=backend,
                                     plant_options=limits.plant_options())
        tmp.replace(path)  # a trace is complete or absent, never half-written
    finally:
        tmp.unlink(missing_ok=True)
    return outcome, path.as_uri()


def run_batch(programs: Sequence[ScenarioProgram], seeds: Sequence[int | None], limits: SimulatorLimits,
              app: ApplicationUnderTest | None = None) -> list[PairedOutcome]:
    if len(programs) > limits.max_batch:
        raise InvalidArgument([], f"batch of {len(programs)} exceeds the cap of {limits.max_batch}")
    for i, s in enumerate(seeds):
        validate_seed(s, f"requests[{i}].seed")
    for i, p in enumerate(programs):
        validate_program(p, limits, f"requests[{i}].program")
    # One V2X source per rollout; programs on different maps get their own buildings.
    results: list[PairedOutcome | None] = [None] * len(programs)
    by_map: dict[str, list[int]] = {}
    for i, p in enumerate(programs):
        by_map.setdefault(p.map_name, []).append(i)
    for map_name, idx in by_map.items():
        factory = v2x_source_factory(road_map=_road_map(map_name, limits.map_paths, limits.map_settings))
        dts: dict[float, list[int]] = {}
        for i in idx:
            dts.setdefault(programs[i].dt_s, []).append(i)
        for group in dts.values():
            outs = execute_batch([programs[i] for i in group],
                                 [programs[i].seed if seeds[i] is None else seeds[i] for i in group],  # type: ignore[misc]
                                 md_source_factory=factory, app=app)
            for i, o in zip(group, outs, strict=True):
                results[i] = o
    return [r for r in results if r is not None]


def _chunk_task(programs: Sequence[ScenarioProgram], seeds: Sequence[int | None], limits: SimulatorLimits
                ) -> list[PairedOutcome]:
    return run_batch(programs, seeds, limits)  # a worker process runs the reference applications


def pool_chunks(n: int, workers: int, chunk: int) -> list[int]:
    """Where each chunk of an ``n``-program batch starts, for ``workers`` processes and chunks of at most
    ``chunk`` programs: a batch of fewer than ``workers * chunk`` programs is cut into ``workers`` chunks of
    (nearly) equal size, so every worker has a share (a campaign's generation of 12 on 2 workers: 6 + 6,
    not 8 + 4; one of 8: 4 + 4, not 8 on one core); larger batches go in chunks of ``chunk``, handed out
    as workers free up. Outcomes do not depend on the cut (a row's draws are keyed by its identity)."""
    if n <= 0:
        return []
    size = max(1, min(chunk, -(-n // max(1, workers))))
    return list(range(0, n, size))


def run_batch_on_workers(programs: Sequence[ScenarioProgram], seeds: Sequence[int | None], limits: SimulatorLimits,
                         app: ApplicationUnderTest | None = None, chunk: int = 8
                         ) -> list[PairedOutcome | RuntimeError]:
    """``run_batch`` spread over the shared worker pool (``lastv2x.core.workers``, ``limits.worker_count()``
    processes) in chunks of at most ``chunk`` programs (``pool_chunks``), results in request order; in this
    process when there is one worker, one chunk, or an application under test other than the reference
    apps (one object of this process). A program whose worker died is a RuntimeError in its place (the others are not
    affected); what ``run_batch`` raises (InvalidArgument for a bad program) is raised."""
    from services.simulator.apps.contract import ReferenceApp

    firsts = pool_chunks(len(programs), limits.worker_count(), max(1, chunk))
    workers = min(limits.worker_count(), len(firsts))
    if workers <= 1 or not (app is None or type(app) is ReferenceApp):
        return list(run_batch(programs, seeds, limits, app))
    from lastv2x.core.workers import TaskError, WorkerDied, shared_pool

    out: list[PairedOutcome | RuntimeError | None] = [None] * len(programs)
    ends = [*firsts[1:], len(programs)]  # (firsts is not empty here: two workers or more had a chunk)
    tasks = [(list(programs[f:e]), list(seeds[f:e]), limits) for f, e in zip(firsts, ends, strict=True)]
    for ci, result in shared_pool(workers).imap_unordered(_chunk_task, tasks):
        first, n = firsts[ci], len(tasks[ci][0])
        if isinstance(result, TaskError):
            raise result.error if result.error is not None else RuntimeError(result.text)
        for i in range(n):
            out[first + i] = RuntimeError(f"program {first + i}: not run: {result.message()}") \
                if isinstance(result, WorkerDied) else result[i]
    return [o for o in out if o is not None]
