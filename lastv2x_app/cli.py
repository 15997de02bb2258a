"""``lastv2x``: the user's command.

  lastv2x up | down | status            the local stack (five services on loopback)
  lastv2x verify SPEC.json [--json]     the analytic verifier (in-process, or --target HOST:PORT)
  lastv2x schema                        the ScenarioSpec JSON Schema
  lastv2x maps list | show MAP [--junctions]   built-in and user maps (LASTV2X_MAP_PATHS) or any .xodr
  lastv2x execute FILE.json --live [--live-port P]   ... streamed to Foxglove as it runs (WebSocket, loopback)
  lastv2x parse "TEXT" [--seed N]       intent -> ScenarioSpec (the parser role on the LLM service's settings;
                                        exit 3 when a requested fault was not parsed, unless --allow-partial)
  lastv2x ground SPEC.json [--out P]    spec -> grounded program on a real map (--target: grounding)
  lastv2x execute FILE.json [--trace] [--app APP] [--backend sumo]   paired execution (--target: simulator)
  lastv2x coverage MAP [--rsu X,Y] [--png F]   channel coverage of a map's RSUs
  lastv2x strap reduce|prioritize|evaluate RECORDING [--module M] [--channel-map F] [--strict]   STRaP on a recording
  lastv2x strap schema                                 the channel maps' JSON Schema
  lastv2x campaign "INTENT"... [--spec FILE] [--budget N] [--out DIR] [--app APP]   search, minimize, archive
  lastv2x regress --app NEW [--archive DIR] [--witness ID] [--budget N]   re-run the archive on a new build (STRaP order)
  lastv2x witness list | show ID | replay ID [--out DIR]   the witness archive
  lastv2x witness verify ID [--backend sumo]   replay a witness on another simulator: admitted again?
  lastv2x witness export ID --xosc [--dest DIR] [--check]   a witness as OpenSCENARIO + OpenDRIVE (+ V2X sidecar JSON)
  lastv2x report CAMPAIGN [--archive DIR] [--out DIR]   the campaign as HTML pages (offline) + report.json
  lastv2x demo [--json]                 make run: one intent stage by stage, then a short campaign

Every command takes ``--json`` for machine-readable output. Exit codes: 0 ok,
1 the spec has error findings, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from lastv2x.core.errors import FieldViolation, InvalidArgument, LastV2XError


def _channel(target: str) -> Any:
    """A channel to ``--target`` with the platform's client settings (``LASTV2X_TLS_*``,
    ``LASTV2X_AUTH_TOKEN_FILE``: ``lastv2x.rpc.security``), plaintext when none is set."""
    from lastv2x.rpc.security import ClientSecurity, open_channel
    from lastv2x.rpc.server import ServerConfig

    return open_channel(target, security=ClientSecurity.from_config(ServerConfig.from_env("cli")))


def _print(data: Any, as_json: bool, table: str) -> None:
    print(json.dumps(data, indent=2, sort_keys=False) if as_json else table)


def _read_spec_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    p = Path(path)
    if not p.is_file():
        raise InvalidArgument([], f"no such spec file: {path}")
    return p.read_text()


def cmd_verify(args: argparse.Namespace) -> int:
    text = _read_spec_text(args.spec)
    if args.target:

        from lastv2x.rpc.convert import message_to_dict
        from lastv2x.v1 import llm_pb2, llm_pb2_grpc

        with _channel(args.target) as channel:
            reply = llm_pb2_grpc.LlmServiceStub(channel).Verify(llm_pb2.VerifyRequest(spec_json=text), timeout=10)
        report = message_to_dict(reply.report)
        report.setdefault("ok", False)
        report.setdefault("findings", [])
    else:
        from lastv2x.core.spec import parse_spec
        from lastv2x.core.verifier import verify

        report = verify(parse_spec(text)).to_dict()
    lines = [f"{'ok' if report['ok'] else 'BLOCKED'}: {len(report['findings'])} finding(s)"]
    for f in report["findings"]:
        lines.append(f"  [{f['severity']}] {f['check']}: {f['message']}")
        lines.append(f"      fields: {', '.join(f['fields'])}")
        if f.get("repair"):
            lines.append(f"      repair: {f['repair']['description']}")
    _print(report, args.json, "\n".join(lines))
    return 0 if report["ok"] else 1


def cmd_schema(args: argparse.Namespace) -> int:
    from lastv2x.core.spec import spec_json_schema

    print(json.dumps(spec_json_schema(), indent=2))
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    from lastv2x_app import stack

    procs = stack.up(args.base_port, supervise=args.supervise)
    rows = [{"service": p.name, "address": p.address, "pid": p.pid} for p in procs]
    _print(rows, args.json, "\n".join(f"{r['service']:<10} {r['address']:<16} pid {r['pid']}" for r in rows))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from lastv2x_app import stack

    stopped = stack.down()
    _print({"stopped": stopped}, args.json, "stopped: " + (", ".join(stopped) or "nothing running"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from lastv2x_app import stack

    rows = [{"service": p.name, "address": p.address, "health": stack.health_status(p.address),
             "restarts": p.restarts} for p in stack.read_state()]
    supervised = "supervised" if stack.supervisor_pid() else "not supervised"
    _print(rows, args.json, "\n".join(f"{r['service']:<10} {r['address']:<16} {r['health']:<12} restarts "
                                      f"{r['restarts']}" for r in rows)
           + (f"\n({supervised})" if rows else "") or "stack not running (lastv2x up)")
    return 0 if rows and all(r["health"] == "SERVING" for r in rows) else 3


def _map_settings() -> tuple[tuple[Path, ...], Any]:
    """The user-map settings the services read: ``LASTV2X_MAP_PATHS`` and ``LASTV2X_MAP_*``."""
    import os

    from services.simulator.maps import MapSettings

    paths = tuple(Path(x) for x in os.environ.get("LASTV2X_MAP_PATHS", "").split(os.pathsep) if x.strip())
    return paths, MapSettings.from_env(os.environ)


def _road_map(name: str) -> Any:
    """A map as the CLI's commands take it: a built-in or user map by name (``LASTV2X_MAP_PATHS``),
    or a ``.xodr`` path; user maps load with the ``LASTV2X_MAP_*`` settings."""
    from services.simulator.maps import builtin_map_names, find_named, load_map

    paths, settings = _map_settings()
    if name in builtin_map_names():
        return load_map(name)
    path = find_named(name, paths) if "/" not in name and not name.endswith(".xodr") else Path(name)
    if path is None:
        raise InvalidArgument([FieldViolation("map", f"{name!r} is neither a built-in map "
                                              f"({', '.join(builtin_map_names())}), a map under LASTV2X_MAP_PATHS "
                                              "nor a .xodr path", "set LASTV2X_MAP_PATHS to the directory holding "
                                              f"{name}.xodr, or pass the file's path")])
    return load_map(path, options=settings.load_options(path.stem))


def cmd_maps(args: argparse.Namespace) -> int:
    from services.simulator.maps import builtin_map_names

    if args.action == "list":
        rows = []
        names = list(builtin_map_names())
        paths, _ = _map_settings()
        for root in paths:
            names += [f.stem for f in (sorted(root.glob("*.xodr")) if root.is_dir() else [root])
                      if f.stem not in names]
        for name in names:
            m = _road_map(name)
            rows.append({"name": name, "source": "builtin" if name in builtin_map_names() else m.source,
                         "sha256": m.content_sha256[:12], **m.summary()})
        table = "\n".join(f"{r['name']:<24} junctions {r['junctions']:>3} (signalized {r['signalized_junctions']:>3})  "
                          f"movements {r['movements']:>4}  buildings {r['buildings']:>3}  {r['sha256']}" for r in rows)
        _print(rows, args.json, table)
        return 0
    if not args.name:
        raise InvalidArgument([], "maps show needs a map name or .xodr path")
    m = _road_map(args.name)
    data: dict[str, Any] = {"name": m.name, "sha256": m.content_sha256, **m.summary()}
    lines = [f"{m.name}  sha256 {m.content_sha256[:16]}  " + ", ".join(f"{k} {v}" for k, v in m.summary().items())]
    if args.junctions:
        data["junctions"] = []
        for j in m.junctions.values():
            turns: dict[str, int] = {}
            for mv in j.movements.values() if isinstance(j.movements, dict) else j.movements:
                mv = m.movements[mv] if isinstance(mv, str) else mv
                turns[str(mv.turn)] = turns.get(str(mv.turn), 0) + 1
            row = {"id": j.id, "signalized": j.signalized, "approaches": len(j.approaches),
                   "movements": turns, "conflicts": len(j.conflicts),
                   "centre_m": [round(float(c), 1) for c in j.centre]}
            data["junctions"].append(row)
            lines.append(f"  {j.id:<8} {'signalized' if j.signalized else 'priority  '}  approaches {len(j.approaches)}  "
                         f"movements {turns}  conflicts {len(j.conflicts)}  centre {row['centre_m']}")
    _print(data, args.json, "\n".join(lines))
    return 0


def _load_program_or_spec(path: str) -> tuple[str, Any]:
    """A JSON file holding a ScenarioProgram (has "ego" with a "route") or a ScenarioSpec."""
    text = _read_spec_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument([FieldViolation("<root>", f"not JSON: {exc.msg} at char {exc.pos}")]) from None
    if isinstance(data, dict) and isinstance(data.get("ego"), dict) and "route" in data["ego"]:
        from pydantic import ValidationError

        from lastv2x.core.program import ScenarioProgram
        from lastv2x.core.spec import violations_from

        try:
            return "program", ScenarioProgram.model_validate(data)
        except ValidationError as exc:
            raise InvalidArgument(violations_from(exc, "program.")) from None
    from lastv2x.core.spec import parse_spec

    return "spec", parse_spec(data)


def _outcome_lines(d: dict[str, Any]) -> list[str]:
    from lastv2x.core.catalogue import margin_text

    lines = [f"{'ADMITTED' if d['admitted'] else 'not admitted'}: failure margin {margin_text(d['failure_margin'], admitted=d['admitted'])}"]
    if d.get("app_error"):
        lines.insert(0, f"APPLICATION ERROR: {d['app_error']}")
    for name in ("md", "gt"):
        r = d[name]
        v = ",".join(["red_entry"] * bool(r.get("red_entries") or r.get("violations"))) or "safe"
        lines.append(f"  {name}: {'FAILED ' + v if r['failed'] else 'safe'}; stops {r['stops']}")
    return lines


def _execute_live(args: argparse.Namespace, kind: str, obj: Any) -> int:
    """``execute --live``: in-process, streamed to a foxglove-sdk WebSocket server (lastv2x_app.viz.live)."""
    from lastv2x_app.viz.live import run_live
    from services.simulator.execute import SimulatorLimits, app_under_test, program_for

    if args.target or args.trace:
        raise InvalidArgument(FieldViolation("--live", "the live view runs in-process and writes no file",
                                             "drop --target / --trace, or run without --live"))
    if args.live_rate < 0:
        raise InvalidArgument(FieldViolation("--live-rate", f"{args.live_rate} is negative",
                                             "1 = real time, 0 = as fast as it computes"))
    program = obj if kind == "program" else program_for(obj)
    limits = SimulatorLimits.from_env()

    def ready(port: int) -> None:
        print(f"live view: open ws://{args.live_host}:{port} in Foxglove (3D panel: /viz/scene)", file=sys.stderr,
              flush=True)

    result, sent, port = run_live(program, args.seed, limits, app_under_test(args.app, limits), host=args.live_host,
                                  port=args.live_port, rate=args.live_rate, wait_for_client_s=args.live_wait,
                                  linger_s=args.live_linger, on_ready=ready)
    outcome = result.to_dict()
    outcome["live"] = {"address": f"ws://{args.live_host}:{port}", "messages": sent}
    _print(outcome, args.json, "\n".join(_outcome_lines(outcome) + [f"  live: {sent} messages on ws://"
                                                                    f"{args.live_host}:{port}"]))
    return 0


def cmd_execute(args: argparse.Namespace) -> int:
    # One run: the simulator's kernels run as Python, which costs less than numba's import and the load of
    # their compiled code (~1.1 s); same bits (services/simulator/kernels). LASTV2X_SIMULATOR_JIT=1 compiles.
    os.environ.setdefault("LASTV2X_SIMULATOR_JIT", "0")
    kind, obj = _load_program_or_spec(args.scenario)
    if args.live:
        return _execute_live(args, kind, obj)
    if args.target:

        from lastv2x.rpc.convert import program_to_proto, spec_to_proto
        from lastv2x.v1 import simulator_pb2, simulator_pb2_grpc

        req = simulator_pb2.ExecuteRequest(write_trace=args.trace, app=args.app or "", backend=args.backend or "")
        if kind == "program":
            req.program.CopyFrom(program_to_proto(obj))
        else:
            req.spec.CopyFrom(spec_to_proto(obj))
        if args.seed is not None:
            req.seed = args.seed
        with _channel(args.target) as channel:
            reply = simulator_pb2_grpc.SimulatorServiceStub(channel).Execute(req, timeout=120)
        outcome = json.loads(reply.outcome.outcome_json)
        outcome["trace_uri"] = reply.outcome.trace_uri  # an id in the simulator's trace folder, not a path
        if reply.outcome.trace_uri:
            from services.simulator.execute import SimulatorLimits
            from services.simulator.trace import trace_file

            try:  # the simulator on this machine (lastv2x up): its folder is the one these settings name
                local = trace_file(reply.outcome.trace_uri, SimulatorLimits.from_env().trace_dir)
            except ValueError:
                local = None
            if local is not None and local.is_file():
                outcome["trace_path"] = str(local)
    else:
        from services.simulator.execute import SimulatorLimits, app_under_test, program_for, run_one

        program = obj if kind == "program" else program_for(obj)
        # The simulator service's own settings (user maps, caps, trace directory, app deadlines).
        limits = SimulatorLimits.from_env()
        result, uri = run_one(program, args.seed, limits, args.trace, app_under_test(args.app, limits),
                              args.backend or "")
        outcome = result.to_dict()
        outcome["trace_uri"] = uri
    trace = outcome.get("trace_path") or outcome.get("trace_uri")
    if args.target and trace and "trace_path" not in outcome:
        trace += " (in the simulator's trace folder, its LASTV2X_SIMULATOR_TRACE_DIR)"
    lines = _outcome_lines(outcome) + ([f"  trace: {trace}"] if trace else [])
    _print(outcome, args.json, "\n".join(lines))
    return 0


def cmd_parse(args: argparse.Namespace) -> int:
    from services.llm.config import LlmConfig
    from services.llm.roles import LlmRoles
    from services.llm.stated import STATED_CHECK

    # The LLM service's own settings (LASTV2X_LLM_*), so ParseIntent gives the same spec.
    result = LlmRoles(config=LlmConfig.from_env()).parse_intent(args.text, args.seed)
    data = {"spec": result.spec.model_dump(mode="json"), "attempts_used": result.attempts_used,
            "backend": result.backend, "report": result.report.to_dict(), "notes": list(result.notes),
            "partial": bool(result.unparsed)}
    _print(data, args.json, json.dumps(data["spec"], indent=2))
    if not args.json:  # the status on stderr, so `parse "..." > spec.json` writes a spec `execute` reads
        print(f"# {result.attempts_used} attempt(s), backend {result.backend}, "
              f"{'ok' if result.report.ok else 'BLOCKED'}" + (", PARTIAL" if result.unparsed else ""), file=sys.stderr)
    # A stated fault the verifier finds ineffective is kept as stated: say why the spec is BLOCKED
    for finding in result.findings:
        if finding.check == STATED_CHECK or finding.severity.value == "error":
            print(f"lastv2x parse: {finding.check}: {finding.message}", file=sys.stderr)
    # No silent drop (issue 19): a fault the intent asks for and the spec lacks fails the command.
    for finding in result.unparsed:
        print(f"lastv2x parse: {finding.message}", file=sys.stderr)
    if result.unparsed and not args.allow_partial:
        print("lastv2x parse: the spec is partial (exit 3); rephrase the clause, or pass --allow-partial to accept "
              "it without that fault", file=sys.stderr)
        return 3
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    from services.simulator.coverage_service import RSU_HEIGHT_M, RsuPlacement, coverage_for

    rsus = []
    for i, text in enumerate(args.rsu or []):
        try:
            vals = [float(v) for v in text.split(",")]
        except ValueError:
            vals = []
        if len(vals) not in (2, 3) or not all(abs(v) < 1e6 for v in vals):
            raise InvalidArgument([FieldViolation(f"--rsu[{i}]", f"{text!r} is not X,Y or X,Y,HEIGHT in metres",
                                                  "e.g. --rsu 160,160 (map frame, 5 m mast)")])
        rsus.append(RsuPlacement(f"rsu{i}", (vals[0], vals[1]), vals[2] if len(vals) == 3 else RSU_HEIGHT_M, ""))
    cov, layout = coverage_for(args.map, rsus, blockage_db_per_m=args.blockage, range_m=args.range,
                               cell_m=args.cell, road_map=_road_map(args.map))
    data = {**cov.to_dict(), "rsus": [{"id": r.id, "xy_m": list(r.xy_m)} for r in layout]}
    if args.png:
        from services.simulator.v2x.coverage import render_png

        try:
            data["png"] = str(render_png(cov, args.png, title=f"{args.map}: {args.blockage or 5} dB/m"))
        except ImportError:
            raise InvalidArgument([FieldViolation("--png", "matplotlib is not installed",
                                                  "pip install matplotlib")]) from None
    _print(data, args.json, f"{args.map}: coverage {cov.fraction:.1%} of road, {cov.in_range_fraction:.1%} "
           f"of in-range road; {len(layout)} RSU(s)" + (f"; png {data['png']}" if args.png else ""))
    return 0


def cmd_strap(args: argparse.Namespace) -> int:
    """STRaP on a recording file, in-process: reduce | prioritize | evaluate; or print the
    channel maps' JSON Schema (schema)."""
    from pathlib import Path as _Path

    import numpy as np

    from services.strap.errors import (
        MessageDecodeError,
        MissingChannelsError,
        SchemaError,
        StrapError,
        UnsupportedEncodingError,
    )
    from services.strap.pipeline import evaluate_orders, ingest, prioritize_reduction, reduce_table
    from services.strap.reduce import ReduceParams

    if args.action == "schema":
        from services.strap.map_schema import channel_map_json_schema
        from services.strap.scene_schema import load_schema

        print(json.dumps(channel_map_json_schema(load_schema()), indent=2))
        return 0
    if not args.recording:
        raise InvalidArgument([FieldViolation("recording", f"strap {args.action} needs a recording",
                                              "an MCAP file, ROS bag (or rosbag2 directory) or Apollo .record")])
    path = _Path(args.recording)
    try:  # the map: --channel-map, else the one selection rule (services.strap.scene_schema.select_channel_map)
        table = ingest(path, args.channel_map, modules=[args.module] if args.module else None,
                       missing="error" if args.strict else "none")
        reduction = reduce_table(table, ReduceParams(window=args.window))
    except SchemaError as exc:
        problem, _, hint = str(exc).partition("; fix: ")
        raise InvalidArgument([FieldViolation("--channel-map", problem, hint)]) from None
    except (UnsupportedEncodingError, MessageDecodeError) as exc:
        raise InvalidArgument([FieldViolation("--channel-map", exc.reason,
                                              f"drop {exc.channel!r} from the channel map (or --module to one "
                                              "that does not read it)")]) from None
    except MissingChannelsError as exc:
        if args.strict:
            raise InvalidArgument([FieldViolation("--strict", str(exc), "drop --strict to reduce over the channels "
                                                  "that are there, or give a --channel-map of them")]) from None
        raise InvalidArgument([FieldViolation("--channel-map", f"the recording has none of the channels the map "
                                              f"reads: {str(exc)}", "give a --channel-map of the recording's own "
                                              "channels")]) from None
    except StrapError as exc:
        raise InvalidArgument([FieldViolation("recording", str(exc))]) from None
    for warning in table.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    segs = [{"index": s.index, "start_s": (s.start_ns - int(table.timestamps_ns[0])) / 1e9,
             "frames": s.clip_frames, "vector": [int(v) for v in s.vector]} for s in reduction.segments]
    data: dict[str, Any] = {"recording": str(path), "module": args.module, "frames": table.n_frames,
                            "kept_frames": reduction.kept_frames, "segments": segs,
                            "features": list(table.feature_names), "channel_map": table.channel_map,
                            "missing_channels": list(table.missing_channels),
                            "zeroed_features": list(table.zeroed_features), "warnings": list(table.warnings)}
    lines = [f"{path.name}: {table.n_frames} frames -> {len(segs)} segments, {reduction.kept_frames} frames kept "
             f"({1 - reduction.kept_frames / max(1, table.n_frames):.0%} reduction)"]
    if args.action == "reduce":
        lines += [f"  #{s['index']:<5} at {s['start_s']:8.2f} s  {s['frames']:>4} frames" for s in segs]
    elif args.action == "prioritize":
        order = np.asarray(prioritize_reduction(reduction, table, args.method, seed=args.seed)).reshape(-1, len(segs))[0]
        data["order"] = [int(i) for i in order]
        lines += [f"  rank {r:<4} segment #{segs[i]['index']} at {segs[i]['start_s']:.2f} s"
                  for r, i in enumerate(data["order"], start=1)]
    else:
        if not args.faults:
            raise InvalidArgument([FieldViolation("--faults", "evaluate needs a fault matrix",
                                                  "JSON list of rows (one per segment) of booleans (one per fault)")])
        matrix = np.asarray(json.loads(_Path(args.faults).read_text()), dtype=bool)
        if matrix.ndim != 2 or matrix.shape[0] != len(segs):
            raise InvalidArgument([FieldViolation("--faults", f"matrix shape {matrix.shape} does not match "
                                                  f"{len(segs)} segments")])
        scores = evaluate_orders(reduction, table, matrix, seed=args.seed)
        data["scores"] = {m: {"apfd": sc.apfd, "top_k": sc.top_k} for m, sc in scores.items()}
        lines += [f"  {m:<4} APFD {v['apfd']:.3f}  Top-K {v['top_k']}" for m, v in data["scores"].items()]
    _print(data, args.json, "\n".join(lines))
    return 0


def cmd_ground(args: argparse.Namespace) -> int:
    """Spec -> ScenarioProgram through the grounding core (or --target a grounding service)."""
    from lastv2x.core.spec import parse_spec

    spec = parse_spec(_read_spec_text(args.spec))
    if args.target:

        from lastv2x.rpc.convert import program_from_proto, spec_to_proto
        from lastv2x.v1 import grounding_pb2, grounding_pb2_grpc

        with _channel(args.target) as channel:
            reply = grounding_pb2_grpc.GroundingServiceStub(channel).Ground(
                grounding_pb2.GroundRequest(spec=spec_to_proto(spec)), timeout=60)
        program = program_from_proto(reply.program)
    else:
        from services.grounding.core import GroundingConfig, GroundingCore

        program = GroundingCore(GroundingConfig.from_env()).ground(spec)
    data = json.loads(program.model_dump_json())
    if args.out:
        from pathlib import Path as _Path

        _Path(args.out).write_text(json.dumps(data, indent=1))
    crossing = program.ego.route.crossings[0] if program.ego.route.crossings else None
    table = (f"{program.application.value} on {program.map_name}"
             + (f" junction {crossing.junction_id} ({crossing.turn.value}, group {crossing.signal_group_id})"
                if crossing else "")
             + f": {len(program.agents)} agent(s), {len(program.rsus)} RSU(s), {len(program.faults)} fault(s)"
             + "".join(f"\n  note: {n}" for n in program.grounding.notes[:8])
             + (f"\n  written to {args.out}" if args.out else ""))
    _print(data, args.json, table)
    return 0


DEFAULT_ARCHIVE = ".lastv2x/search"


def _campaign_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    specs = [_read_spec_text(f) for f in args.spec or []]
    return {"intents": list(args.intents), "specs": specs, "seed": args.seed, "budget_per_scenario": args.budget,
            "reflection_rounds": args.reflection_rounds, "in_flight": args.concurrency, "gate": not args.no_gate,
            "stop_at_first_admission": args.stop_at_first, "app": args.app or "", "allow_partial": args.allow_partial,
            "budget_in_executions": args.budget_in_executions}


def cmd_campaign(args: argparse.Namespace) -> int:
    from lastv2x_app.campaigns import Progress, results_table, witness_summary

    kw = _campaign_kwargs(args)
    progress = Progress() if not args.json else None
    if args.resume and (args.intents or args.spec):
        raise InvalidArgument(FieldViolation("--resume", "a resumed campaign runs its own intents and specs",
                                             "give --resume ID alone"))
    if args.target:
        summary, witnesses, state, reason, cid = _remote_campaign(args.target, kw, progress, args.resume)
        archive = f"search service {args.target}"
    else:
        from lastv2x_app.campaigns import local_core
        from services.search.core import validate_request
        from services.simulator.execute import SimulatorLimits, app_under_test

        core = local_core(Path(args.out))
        try:
            if args.resume:  # a failed or cancelled campaign of this archive, run on from its journal
                cid = core.resume(args.resume).id
            else:
                app_under_test(kw["app"], SimulatorLimits.from_env())  # an app that does not answer fails here
                request = validate_request(settings=core.settings, **kw)
                cid = core.start(request).id
            for event, _ in core.watch(cid):
                if progress:
                    progress(event)
            view = core.get(cid)
            summary, state, reason = view.summary, view.state, view.reason
            witnesses = [witness_summary(w.record) for w in core.witnesses(cid)]
        finally:
            core.close()
        archive = str(Path(args.out).resolve())
    if progress:
        progress.close()
    data = {"campaign_id": cid, "state": state, "reason": reason, "summary": summary, "witnesses": witnesses,
            "archive": archive}
    _print(data, args.json, f"campaign {cid}\n" + results_table(summary, witnesses, archive, state=state,
                                                                  reason=reason))
    return 0 if state == "done" else 1


def _remote_campaign(target: str, kw: dict[str, Any], progress: Any, resume: str | None = None) -> tuple[Any, ...]:

    from lastv2x.core.spec import parse_spec
    from lastv2x.rpc.convert import message_to_dict, spec_to_proto
    from lastv2x.v1 import search_pb2, search_pb2_grpc
    from lastv2x_app.campaigns import witness_summary
    from services.search.campaign import Event
    from services.search.servicer import reflection_from_proto, repair_from_proto

    options = search_pb2.CampaignOptions(disable_gate=not kw["gate"], concurrency=kw["in_flight"], app=kw["app"],
                                         stop_at_first_admission=kw["stop_at_first_admission"],
                                         allow_partial=kw["allow_partial"],
                                         budget_in_executions=kw["budget_in_executions"])
    if kw["reflection_rounds"] is not None:
        options.reflection_rounds = kw["reflection_rounds"]
    request = search_pb2.StartCampaignRequest(intents=kw["intents"], seed=kw["seed"],
                                              budget_per_scenario=kw["budget_per_scenario"], options=options,
                                              specs=[spec_to_proto(parse_spec(t)) for t in kw["specs"]])
    with _channel(target) as channel:
        stub = search_pb2_grpc.SearchServiceStub(channel)
        if resume:
            cid = stub.ResumeCampaign(search_pb2.ResumeCampaignRequest(campaign_id=resume), timeout=30).campaign.id
        else:
            cid = stub.StartCampaign(request, timeout=30).campaign.id
        campaign = None
        for reply in stub.WatchCampaign(search_pb2.WatchCampaignRequest(campaign_id=cid)):
            campaign = reply.campaign
            p = reply.progress
            if progress:
                progress(Event(p.kind, p.scenario, reply.event, p.candidates_done, p.budget_total, p.executions_done,
                               p.admitted, p.eta_s if p.HasField("eta_s") else None))
        campaign = stub.GetCampaign(search_pb2.GetCampaignRequest(campaign_id=cid), timeout=30).campaign
        ws = stub.ListWitnesses(search_pb2.ListWitnessesRequest(campaign_id=cid), timeout=30).witnesses
    scenarios = []
    for sc in campaign.scenarios:
        d = message_to_dict(sc)
        scenarios.append({"source": sc.source, "intent": sc.intent, "application": d.get("application") or "",
                          "stage": sc.stage, "executions": sc.executions, "shrink_executions": sc.shrink_executions,
                          "admitted_executions": sc.admitted_executions,
                          "admitted_initially": sc.admitted_initially if sc.HasField("admitted_initially") else None,
                          "first_admitted_at": sc.first_admitted_at if sc.HasField("first_admitted_at") else None,
                          "reflection_rounds": sc.reflection_rounds, "witness_ids": list(sc.witness_ids),
                          "duplicate_keys": sc.duplicate_keys, "error": sc.error, "errored": sc.errored,
                          "unparsed_clauses": list(sc.unparsed_clauses), "coverage_gaps": sc.coverage_gaps,
                          "repairs": [repair_from_proto(r) for r in sc.repairs],
                          "reflections": [reflection_from_proto(r) for r in sc.reflections]})
    summary = {"scenarios": scenarios, "executions": campaign.executions, "admitted": campaign.admitted,
               "errored": campaign.errored, "coverage_gaps": campaign.coverage_gaps,
               "distinct_failures": campaign.distinct_failures,
               "distinct_keys": campaign.distinct_keys, "witness_ids": list(campaign.witness_ids),
               "elapsed_s": campaign.elapsed_s}
    witnesses = [witness_summary({"witness_id": w.id, "spec": message_to_dict(w.spec),
                                  "key": message_to_dict(w.catalog_key),
                                  "certificate": {"complete": w.certificate_complete, "steps": w.reduction_steps},
                                  "trace_uri": w.trace_uri}) for w in ws]
    state = message_to_dict(campaign).get("state", "")
    return summary, witnesses, str(state).lower(), campaign.reason, cid


def cmd_regress(args: argparse.Namespace) -> int:
    from lastv2x_app.campaigns import local_core
    from lastv2x_app.regress import strap_order
    from services.search.regress import regress
    from services.simulator.execute import SimulatorLimits, app_under_test

    limits = SimulatorLimits.from_env()
    app_under_test(args.app, limits)  # an app that does not answer fails here, named
    if args.baseline:
        app_under_test(args.baseline, limits)
    core = local_core(Path(args.archive))
    try:
        witnesses = core.witnesses(args.campaign or "")
        if args.witness:
            chosen = set(args.witness)
            unknown = chosen - {w.id for w in witnesses}
            if unknown:
                raise InvalidArgument(FieldViolation("witness", f"not in the archive: {', '.join(sorted(unknown))}",
                                                     "see `lastv2x witness list`"))
            witnesses = [w for w in witnesses if w.id in chosen]
        report = regress(witnesses, core.pipeline, args.app or "", baseline_app=args.baseline,
                         order=None if args.order == "chronological" else strap_order,
                         order_name="STRaP RSC" if args.order == "rsc" else "chronological", budget=args.budget)
    finally:
        core.close()
    counts = report.counts()
    lines = [f"regression of {len(report.rows)} witness(es) on {report.app.get('name', args.app)} "
             f"{report.app.get('version', '')} (order: {report.order}"
             + (f"; {report.skipped} left out by --budget" if report.skipped else "") + ")"]
    lines += [f"  {r.rank + 1:>3}. {r.witness_id}  {r.application:<5} {r.verdict:<14} "
              f"before: {'ADMITTED' if r.before['admitted'] else 'ok':<8} (md {'fail' if r.before['md_failed'] else 'safe'}"
              f", gt {'fail' if r.before['gt_failed'] else 'safe'})  now: "
              + (f"ERROR    {r.after.get('app_error') or r.after.get('refused')}" if r.verdict == "errored" else
                 f"{'ADMITTED' if r.after['admitted'] else 'ok':<8} "
                 f"(md {'fail' if r.after['md_failed'] else 'safe'}, gt {'fail' if r.after['gt_failed'] else 'safe'})")
              for r in report.rows]
    lines.append("  " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()))
    fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    lines.append(f"  APFD {fmt(report.apfd)} ({report.order}) vs {fmt(report.apfd_chronological)} (chronological)")
    _print(report.to_dict(), args.json, "\n".join(lines))
    return 0 if counts["still_failing"] + counts["newly_failing"] + counts["errored"] == 0 else 1


def cmd_witness(args: argparse.Namespace) -> int:
    from lastv2x_app.campaigns import local_core, witness_summary

    if args.action in ("show", "replay", "verify", "export") and not args.id:
        raise InvalidArgument(FieldViolation("id", f"witness {args.action} needs a witness id",
                                             "see `lastv2x witness list`"))
    core = local_core(Path(args.out))
    try:
        if args.action == "list":
            rows = [witness_summary(w.record) for w in core.witnesses(args.campaign or "")]
            table = "\n".join(f"{r['witness_id']}  {r['application']:<5}  {r['faults_left']} fault(s): "
                              f"{', '.join(r['faults']) or '-'}  [{'1-minimal' if r['complete'] else 'budget hit'}]"
                              for r in rows) or "no witnesses"
            _print(rows, args.json, table)
        elif args.action == "export":
            return _witness_export(args, core)
        elif args.action == "show":
            w = core.witness(args.id)
            cert = w.record["certificate"]
            lines = [f"witness {w.id} ({w.application}, key {w.key})", f"  intent: {w.record.get('intent') or '-'}",
                     f"  seed {w.record['seed']}; trace {w.trace_path or '-'}",
                     f"  faults: {json.dumps(w.record['spec']['faults'])}",
                     f"  certificate ({'complete: 1-minimal' if cert['complete'] else 'INCOMPLETE'}; "
                     f"{cert['steps']} weakening(s) accepted, {cert['executions']} run(s)):"]
            lines += [f"    {e['verdict']:<13} {e['weakening']}" for e in cert["weakenings"]]
            xc = w.record.get("cross_check")
            if xc:
                lines.append(f"  cross-check on {xc['backend']}: "
                             + (f"ERROR {xc['error']}" if xc.get("error") else
                                "admitted (confirmed)" if xc["admitted"] else "NOT admitted"))
            _print(w.record, args.json, "\n".join(lines))
        elif args.action == "verify":
            return _witness_verify(args, core)
        else:
            r = core.replay(args.id)
            data = {"witness_id": r.witness_id, "admitted": r.admitted, "identical": r.identical,
                    "archived_sha256": r.archived_sha256, "replay_sha256": r.replay_sha256}
            _print(data, args.json, f"{r.witness_id}: {'ADMITTED' if r.admitted else 'NOT admitted'}; outcome bytes "
                                    f"{'identical' if r.identical else 'DIFFER'} ({r.replay_sha256[:16]})")
            return 0 if r.identical and r.admitted else 1
    finally:
        core.close()
    return 0


def _witness_verify(args: argparse.Namespace, core: Any) -> int:
    """Replay a witness on another simulator; both outcomes side by side; exit 0 when admission holds."""
    r = core.replay(args.id, args.backend)
    archived, again = json.loads(r.archived_json), json.loads(r.outcome_json)
    data = {"witness_id": r.witness_id, "backend": args.backend, "confirmed": r.admitted,
            "archived": archived, "replayed": again}

    def side(o: dict[str, Any], rollout: str) -> str:
        ro = o[rollout]
        what = [f"{len(ro['red_entries'])} red entry"] if ro.get("red_entries") else []
        what += ["collision"] if ro.get("collision") else []
        if ro.get("closest_approach_m") is not None:
            what.append(f"closest {ro['closest_approach_m']:.1f} m")
        return f"{'FAIL' if ro['failed'] else 'safe'} ({', '.join(what) or 'stops ' + str(ro['stops'])})"

    lines = [f"{r.witness_id} on {args.backend}: {'CONFIRMED (admitted)' if r.admitted else 'NOT confirmed'}",
             f"  {'':<10} {'archived (builtin)':<34} {args.backend}",
             f"  {'md ego':<10} {side(archived, 'md'):<34} {side(again, 'md')}",
             f"  {'gt ego':<10} {side(archived, 'gt'):<34} {side(again, 'gt')}",
             f"  {'margin':<10} {archived['failure_margin']:<34} {again['failure_margin']}"]
    _print(data, args.json, "\n".join(lines))
    return 0 if r.admitted else 1


def _witness_export(args: argparse.Namespace, core: Any) -> int:
    from lastv2x_app.export.xosc import export_witness

    if not args.xosc:
        raise InvalidArgument(FieldViolation("--xosc", "witness export needs a format", "add --xosc"))
    result = export_witness(core.witness(args.id), Path(args.dest), osc_minor=args.osc_minor, archive=args.out)
    data = result.to_dict()
    text = (f"{result.witness_id}: {result.xosc} (valid against {result.xosc_schema}), "
            f"{result.xodr} (OpenDRIVE 1.7: {'valid' if result.xodr_valid else 'NOT valid'}), "
            f"V2X faults in {result.sidecar}")
    if not args.check:
        _print(data, args.json, text)
        return 0
    from lastv2x_app.export.qc import check_export

    check = check_export(result.xosc, result.xodr, result.sidecar)  # after the XSD gate, on the files as written
    data["asam_qc"] = check.to_dict()
    _print(data, args.json, text + "\n" + check.text())
    return 0 if check.status == "passed" else 1


def cmd_report(args: argparse.Namespace) -> int:
    from lastv2x_app.campaigns import local_core
    from lastv2x_app.report import write_report

    archive = Path(args.archive)
    if not (archive / "search.db").is_file():
        raise InvalidArgument(FieldViolation("--archive", f"no campaign archive at {archive}",
                                             "the --out folder of `lastv2x campaign` (default .lastv2x/search)"))
    core = local_core(archive)
    try:
        result = write_report(core, args.campaign, Path(args.out), archive=str(archive))
    finally:
        core.close()
    _print(result.to_dict(), args.json, f"report of {result.campaign_id}: {result.index} "
                                        f"({len(result.pages) - 1} witness page(s), report.json beside it)")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from lastv2x_app.campaigns import Progress
    from lastv2x_app.demo import run_demo

    progress = None if args.json else Progress()
    result = run_demo(progress=progress)
    if progress:
        progress.close()
    _print(result.data, args.json, result.table)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lastv2x", description=__doc__.split("\n\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--target", default=None, help="HOST:PORT of a remote service (default: in-process)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("verify", parents=[common], help="run the analytic verifier on a spec")
    p.add_argument("spec", help="ScenarioSpec JSON file, or - for stdin")
    p.set_defaults(fn=cmd_verify)
    sub.add_parser("schema", parents=[common], help="print the ScenarioSpec JSON Schema").set_defaults(fn=cmd_schema)
    p = sub.add_parser("up", parents=[common], help="start the local stack")
    p.add_argument("--base-port", type=int, default=None, help="first port (default: 50051..50055)")
    p.add_argument("--no-supervise", dest="supervise", action="store_false",
                   help="no supervisor (by default a service that dies is started again; status counts restarts)")
    p.set_defaults(fn=cmd_up)
    sub.add_parser("down", parents=[common], help="stop the local stack").set_defaults(fn=cmd_down)
    sub.add_parser("status", parents=[common], help="health of the local stack").set_defaults(fn=cmd_status)
    p = sub.add_parser("ground", parents=[common], help="spec -> grounded ScenarioProgram (--target: grounding)")
    p.add_argument("spec", help="ScenarioSpec JSON file, or - for stdin")
    p.add_argument("--out", default=None, help="also write the program JSON here (input of `execute`)")
    p.set_defaults(fn=cmd_ground)
    p = sub.add_parser("maps", parents=[common], help="road maps: list the built-in ones, show one")
    p.add_argument("action", choices=["list", "show"])
    p.add_argument("name", nargs="?", help="built-in map, user map under LASTV2X_MAP_PATHS, or .xodr path (show)")
    p.add_argument("--junctions", action="store_true", help="show: one line per junction")
    p.set_defaults(fn=cmd_maps)
    p = sub.add_parser("execute", parents=[common], help="paired execution of a program or spec JSON")
    p.add_argument("scenario", help="ScenarioProgram or ScenarioSpec JSON file, or - for stdin")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--trace", action="store_true", help="write an MCAP trace")
    p.add_argument("--live", action="store_true", help="stream the run to Foxglove (foxglove-sdk WebSocket server)")
    p.add_argument("--live-host", default="127.0.0.1", help="live view: address to bind (default loopback)")
    p.add_argument("--live-port", type=int, default=8765, help="live view: port (0 = any free)")
    p.add_argument("--live-rate", type=float, default=1.0, help="live view: scenario seconds per second (0 = max)")
    p.add_argument("--live-wait", type=float, default=0.0, help="live view: wait up to S s for a client first")
    p.add_argument("--live-linger", type=float, default=0.0, help="live view: keep serving S s after the run")
    p.add_argument("--app", default=None, help="application under test: reference (default), grpc://host:port, "
                                               "or a lastv2x.apps entry point")
    p.add_argument("--backend", default=None, help="simulator that moves the vehicles: builtin (default, "
                                                   "LASTV2X_SIMULATOR_BACKEND), sumo, carla")
    p.set_defaults(fn=cmd_execute)
    p = sub.add_parser("parse", parents=[common],
                       help="natural-language intent -> ScenarioSpec (parser role, LASTV2X_LLM_* settings)")
    p.add_argument("text")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--allow-partial", action="store_true",
                   help="exit 0 even when a fault the intent asks for is not in the spec (reported on stderr)")
    p.set_defaults(fn=cmd_parse)
    p = sub.add_parser("coverage", parents=[common], help="in-range road coverage of a map's RSUs")
    p.add_argument("map", help="built-in map, user map under LASTV2X_MAP_PATHS, or .xodr path")
    p.add_argument("--rsu", action="append", metavar="X,Y[,H]",
                   help="an RSU at map coordinates, m (repeatable; default one per signalized junction)")
    p.add_argument("--blockage", type=float, default=None, help="dB per metre (default 5)")
    p.add_argument("--range", type=float, default=None, help="radio range, m (default 150)")
    p.add_argument("--cell", type=float, default=5.0, help="grid cell, m")
    p.add_argument("--png", default=None, help="write a PNG here")
    p.set_defaults(fn=cmd_coverage)
    p = sub.add_parser("strap", parents=[common], help="STRaP: reduce / prioritize / evaluate a recording; "
                       "schema: the channel maps' JSON Schema")
    p.add_argument("action", choices=["reduce", "prioritize", "evaluate", "schema"])
    p.add_argument("recording", nargs="?", help="MCAP, ROS bag (rosbag2 directory) or Apollo .record file")
    p.add_argument("--channel-map", default=None,
                   help="channel map: a JSON file, inline JSON or a built-in name (platform, apollo, autoware); "
                        "default: the built-in map covering most of its channels")
    p.add_argument("--strict", action="store_true", help="refuse a recording that lacks channels of its map")
    p.add_argument("--module", default=None, help="updated module: keep only its channels' features")
    p.add_argument("--window", type=int, default=3, help="smoothing window, frames")
    p.add_argument("--method", default="RSC", choices=["RSC", "SC", "CH", "RD"])
    p.add_argument("--faults", default=None, help="evaluate: JSON fault matrix, segments x faults")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=cmd_strap)
    p = sub.add_parser("campaign", parents=[common],
                       help="find communication-induced failures, shrink them to 1-minimal witnesses, archive them")
    p.add_argument("intents", nargs="*", help="natural-language test intents")
    p.add_argument("--spec", action="append", help="a ScenarioSpec JSON file to refine directly (repeatable)")
    p.add_argument("--budget", type=int, default=0, help="candidates per scenario, gated ones included (0 = 120)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reflection-rounds", type=int, default=None, help="per scenario (default 5)")
    p.add_argument("--concurrency", type=int, default=0, help="executions in flight per simulator replica (0 = 4)")
    p.add_argument("--no-gate", action="store_true", help="ablation: run mutants the verifier would block")
    p.add_argument("--budget-in-executions", action="store_true",
                   help="the budget counts executions: gated candidates are not charged (at most 4 x budget in all)")
    p.add_argument("--stop-at-first", action="store_true", help="end each scenario at its first admitted failure")
    p.add_argument("--allow-partial", action="store_true",
                   help="run intents the parser read only in part (the table and witnesses name the unread clause); "
                        "default: such a scenario fails, naming it")
    p.add_argument("--out", default=DEFAULT_ARCHIVE, help="archive directory (in-process)")
    p.add_argument("--app", default=None, help="application under test: reference (default), grpc://host:port, "
                                               "or a lastv2x.apps entry point; witnesses record its build")
    p.add_argument("--resume", default=None, metavar="ID",
                   help="run a failed or cancelled campaign on from its journal (ResumeCampaign)")
    p.set_defaults(fn=cmd_campaign)
    p = sub.add_parser("regress", parents=[common],
                       help="re-run archived witnesses against a new app build: fixed / still / newly failing / errored")
    p.add_argument("--app", required=True, help="the new build: reference, grpc://host:port or a lastv2x.apps entry point")
    p.add_argument("--archive", default=DEFAULT_ARCHIVE, help="witness archive directory")
    p.add_argument("--witness", action="append", help="only this witness (repeatable); default: every one")
    p.add_argument("--campaign", default=None, help="only this campaign's witnesses")
    p.add_argument("--budget", type=int, default=None, help="stop after N re-runs (in priority order)")
    p.add_argument("--baseline", default=None, help="compare against a re-run on this build (default: the archive)")
    p.add_argument("--order", default="rsc", choices=["rsc", "chronological"],
                   help="re-run order: STRaP RSC over the witnesses' traces (default) or archive order")
    p.set_defaults(fn=cmd_regress)
    p = sub.add_parser("witness", parents=[common],
                       help="the witness archive: list, show (certificate), replay, verify (on another simulator: "
                            "--backend sumo), export (--xosc: OpenSCENARIO)")
    p.add_argument("action", choices=["list", "show", "replay", "verify", "export"])
    p.add_argument("id", nargs="?", help="witness id (show, replay, verify, export)")
    p.add_argument("--backend", default="sumo", help="verify: the simulator to re-verify on (default sumo)")
    p.add_argument("--xosc", action="store_true", help="export: OpenSCENARIO 1.x + OpenDRIVE + V2X sidecar JSON")
    p.add_argument("--dest", default=".lastv2x/export", help="export: output folder")
    p.add_argument("--osc-minor", type=int, default=2, help="export: OpenSCENARIO minor version 0..3 (default 2)")
    p.add_argument("--check", action="store_true", help="export: also run ASAM's Quality Checker bundles on the "
                                                         "files (report printed, FILE.xqar beside each; exit 1 "
                                                         "on an issue or when they cannot run)")
    p.add_argument("--campaign", default=None, help="list: only this campaign's witnesses")
    p.add_argument("--out", default=DEFAULT_ARCHIVE, help="archive directory")
    p.set_defaults(fn=cmd_witness)
    p = sub.add_parser("report", parents=[common],
                       help="a campaign's report: HTML pages that open offline (plots inline) + report.json")
    p.add_argument("campaign", help="campaign id (c-...)")
    p.add_argument("--archive", default=DEFAULT_ARCHIVE, help="the campaign's archive directory")
    p.add_argument("--out", default=".lastv2x/reports", help="reports folder (the report is OUT/CAMPAIGN/)")
    p.set_defaults(fn=cmd_report)
    sub.add_parser("demo", parents=[common], help="run the main path on embedded defaults").set_defaults(fn=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except InvalidArgument as exc:
        out = {"error": "INVALID_ARGUMENT", "message": str(exc),
               "violations": [{"field": v.field, "description": v.description, "hint": v.hint}
                              for v in exc.violations]}
        _print(out, args.json, f"error: {exc}")
        return 2
    except LastV2XError as exc:
        _print({"error": type(exc).__name__, "message": str(exc)}, args.json, f"error: {exc}")
        return 2
    except Exception as exc:  # a gRPC error from --target, say
        if type(exc).__module__.startswith("grpc"):
            code = getattr(exc, "code", lambda: None)()
            message = str(exc)
            details = getattr(exc, "details", lambda: message)()
            _print({"error": str(code), "message": details}, args.json, f"error: {code}: {details}")
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
