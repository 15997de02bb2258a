"""What a campaign report shows, gathered as plain JSON-able data (the HTML is drawn from it and
``report.json`` is it).

Per campaign: its request, state and summary, the yield curve (admitted vs executions, in
dispatch order, from the journal's ``result`` events), the catalogue rows of its witnesses.
Per witness: spec, fault set, certificate, outcome, and from its MCAP trace the time series
of both egos (distance to the stop bar), the ego group's true phase, fault windows,
decisions (with AoI at the decision epochs), the divergence episodes and their hazard
slack, the STRaP segments of the trace and the scene's channel coverage.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from lastv2x.core.errors import FailedPrecondition
from lastv2x_app.export.xosc import REPLAY_IN
from lastv2x_app.report.explain import causal_chain

SERIES_STEP_S = 0.1  # time-series resolution kept in the report (the trace has 0.05 s)
COVERAGE_CELL_M = 6.0
COVERAGE_MARGIN_M = 60.0  # around the egos' paths and the RSUs
MAX_SEGMENT_ROWS = 40


def _num(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def read_trace(path: Path) -> dict[str, list[tuple[float, dict[str, Any]]]]:
    """Topic -> [(t_s, message)] of the JSON channels of a platform trace."""
    from mcap.reader import make_reader

    out: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    with open(path, "rb") as fh:
        for _schema, channel, msg in make_reader(fh).iter_messages(log_time_order=False):
            if channel.message_encoding != "json":
                continue
            out.setdefault(channel.topic, []).append((msg.log_time / 1e9, json.loads(msg.data)))
    return out


def _keep(t: float, last: float | None) -> bool:
    return last is None or t - last >= SERIES_STEP_S - 1e-9


def witness_trace_data(program: Any, trace: dict[str, list[tuple[float, dict[str, Any]]]]) -> dict[str, Any]:
    """Time series of a witness's trace, sampled every SERIES_STEP_S."""
    crossing = program.ego.route.crossings[0] if program.ego.route.crossings else None
    ref_s = crossing.stop_bar_s_m if crossing else program.ego.start_s_m
    group = crossing.signal_group_id if crossing else None
    ego: dict[str, dict[str, list]] = {r: {"t_s": [], "d_m": [], "speed_mps": [], "x": [], "y": []} for r in ("md", "gt")}
    last: dict[str, float | None] = {"md": None, "gt": None}
    for t, m in trace.get("/app/input", []):
        r = m.get("rollout")
        if r in ego and _keep(t, last[r]):
            last[r] = t
            e = ego[r]
            e["t_s"].append(round(t, 3))
            e["d_m"].append(round(float(m["s_m"]) - ref_s, 2))
            e["speed_mps"].append(round(float(m["speed_mps"]), 2))
            e["x"].append(round(float(m["x"]), 2))
            e["y"].append(round(float(m["y"]), 2))
    phases: list[list[float]] = []  # [start_s, end_s, phase] runs of the ego group's true phase
    if group:
        prev_t = None
        for t, m in trace.get("/signals/true", []):
            ph = next((g["phase"] for g in m.get("groups", []) if g.get("id") == group), None)
            if ph is None:
                continue
            if phases and phases[-1][2] == ph:
                phases[-1][1] = t
            else:
                if phases:
                    phases[-1][1] = t
                phases.append([t, t, ph])
            prev_t = t
        if phases and prev_t is not None:
            phases[-1][1] = round(prev_t + program.dt_s, 3)
    decisions = [{"t_s": round(t, 3), "rollout": m.get("rollout"), "action": m.get("action"), "reason": m.get("reason"),
                  "epoch": bool(m.get("epoch")), "aoi_s": _num(m.get("aoi_s")), "info_valid": m.get("info_valid")}
                 for t, m in trace.get("/app/decision", [])]
    faults = [{"name": m.get("name"), "operator": m.get("operator"), "stream": m.get("stream"),
               "start_s": _num(m.get("start_s")), "end_s": _num(m.get("end_s"))}
              for _t, m in trace.get("/v2x/fault_window", [])]
    return {"reference": {"kind": "stop bar" if crossing else "start", "s_m": ref_s, "signal_group_id": group,
                          "junction_id": crossing.junction_id if crossing else None},
            "egos": ego, "phases": [[round(a, 3), round(b, 3), int(p)] for a, b, p in phases],
            "decisions": decisions, "fault_windows": faults}


def episode_matters(episode: dict[str, Any], fault_windows: list[dict[str, Any]], duration_s: float) -> bool:
    """An episode a reader needs: a decision followed it (it has a hazard slack), or it overlaps a fault window
    (what the fault did to the belief). The rest (a track diverging long after the decision, say) stay in
    report.json but not on the page."""
    if episode.get("hazard_slack_s") is not None:
        return True
    start = episode["start_s"]
    end = episode["end_s"] if episode.get("end_s") is not None else duration_s
    return any((f["start_s"] or 0.0) <= end and start <= (f["end_s"] if f["end_s"] is not None else duration_s)
               for f in fault_windows)


def strap_segments(trace_path: Path) -> dict[str, Any]:
    """STRaP's reduction of the trace for the 'application' module (as ``lastv2x strap reduce``)."""
    from services.strap.pipeline import ingest, reduce_table

    table = ingest(trace_path, "platform", modules=["application"])
    reduction = reduce_table(table)
    t0 = int(table.timestamps_ns[0]) if table.n_frames else 0
    rows: list[dict[str, Any]] = []
    previous: dict[str, int] = {}
    for seg in reduction.segments:
        features = dict(zip(table.feature_names, (int(v) for v in seg.vector), strict=True))
        changed = {n: v for n, v in features.items() if previous.get(n, 0) != v}
        previous = features
        rows.append({"index": seg.index, "start_s": round((seg.start_ns - t0) / 1e9, 3),
                     "end_s": round((seg.clip_last_ns - t0) / 1e9, 3), "frames": seg.clip_frames,
                     "changed": changed})
    return {"module": "application", "frames": table.n_frames, "kept_frames": reduction.kept_frames,
            "features": list(table.feature_names), "segments": rows[:MAX_SEGMENT_ROWS],
            "segments_total": len(rows)}


def scene_coverage(program: Any, paths_xy: list[list[tuple[float, float]]]) -> dict[str, Any]:
    """Best RSSI per road cell of the program's RSUs on its map, with its channel settings,
    cropped to the scene (the egos' paths and the RSUs)."""
    import numpy as np

    from lastv2x_app.export.xosc import program_road_map
    from services.simulator.coverage_service import RsuPlacement, coverage_for

    road_map = program_road_map(program)
    pts = [p for path in paths_xy for p in path] + [tuple(r.xy_m) for r in program.rsus]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    bounds = (min(xs) - COVERAGE_MARGIN_M, min(ys) - COVERAGE_MARGIN_M, max(xs) + COVERAGE_MARGIN_M,
              max(ys) + COVERAGE_MARGIN_M)
    buildings = []
    for b in road_map.buildings if road_map is not None else ():
        fp = np.asarray(b.footprint)
        if fp[:, 0].max() >= bounds[0] and fp[:, 0].min() <= bounds[2] and fp[:, 1].max() >= bounds[1] \
                and fp[:, 1].min() <= bounds[3]:
            buildings.append([[round(float(x), 1), round(float(y), 1)] for x, y in fp])
    data: dict[str, Any] = {"bounds": [round(v, 1) for v in bounds], "buildings": buildings,
                            "rsus": [{"id": r.id, "xy_m": list(r.xy_m), "height_m": r.height_m} for r in program.rsus],
                            "range_m": program.v2x.channel.range_m,
                            "blockage_db_per_m": program.v2x.channel.blockage_db_per_m, "cells": [],
                            "fraction": None}
    if not program.rsus or road_map is None:  # V2V only, or the synthetic crossing (no map to cover)
        data["note"] = "no RSU in this scene (V2V only)" if road_map is not None else \
            "the synthetic straight crossing: no map, no coverage grid"
        return data
    layout = [RsuPlacement(r.id, (float(r.xy_m[0]), float(r.xy_m[1])), float(r.height_m), r.junction_id or "")
              for r in program.rsus]
    cov, _ = coverage_for(program.map_name, layout, blockage_db_per_m=program.v2x.channel.blockage_db_per_m,
                          range_m=program.v2x.channel.range_m, cell_m=COVERAGE_CELL_M, road_map=road_map)
    grid = np.asarray(cov.best_rssi_dbm)
    ox, oy = (float(v) for v in cov.origin_xy)
    cells = []
    for iy, ix in zip(*np.nonzero(np.isfinite(grid)), strict=True):
        x, y = ox + ix * cov.cell_m, oy + iy * cov.cell_m
        if bounds[0] - cov.cell_m <= x <= bounds[2] and bounds[1] - cov.cell_m <= y <= bounds[3]:
            cells.append([round(x, 1), round(y, 1), round(float(grid[iy, ix]), 1)])
    data.update(cells=cells, cell_m=cov.cell_m, fraction=round(float(cov.fraction), 4),
                in_range_fraction=round(float(cov.in_range_fraction), 4))
    return data


def witness_data(w: Any, archive: str) -> dict[str, Any]:
    """Everything the witness page shows. A witness whose trace is missing is an error: its page
    would be missing its plots (FailedPrecondition naming the witness and the file)."""
    from lastv2x.core.program import ScenarioProgram

    record = w.record
    trace_path = Path(w.trace_path) if w.trace_path else None
    if trace_path is None or not trace_path.is_file():
        raise FailedPrecondition(f"witness {w.id} has no trace ({w.trace_path or 'none archived'}): its report page "
                                 "would have no time-distance plot, AoI, coverage of the run or STRaP segments",
                                 f"replay it into a new campaign, or restore {w.trace_path or 'its trace'} "
                                 "in the archive")
    program = ScenarioProgram.model_validate_json(record["program_json"])
    outcome = json.loads(w.outcome_json)
    trace = witness_trace_data(program, read_trace(trace_path))
    episodes = list((outcome.get("monitor") or {}).get("episodes") or [])
    slacks = list(outcome.get("hazard_slack_s") or [])
    epoch_times = sorted(d["t_s"] for d in trace["decisions"] if d["rollout"] == "md" and d["epoch"])
    # hazard_slacks (services.simulator.paired) skips an episode with no later decision: pair them the same way
    k = 0
    for ep in episodes:
        has_next = any(t >= ep["start_s"] - 1e-9 for t in [d["t_s"] for d in outcome["md"]["decisions"]
                                                              if d.get("epoch") or d.get("after_epoch")])
        ep["hazard_slack_s"] = slacks[k] if has_next and k < len(slacks) else None
        k += int(has_next)
        ep["matters"] = episode_matters(ep, trace["fault_windows"], program.duration_s)
    paths = [list(zip(trace["egos"][r]["x"], trace["egos"][r]["y"], strict=True)) for r in ("md", "gt")]
    return {
        "witness_id": w.id, "campaign_id": w.campaign_id, "application": w.application, "key": w.key,
        "key_fields": record["key"],
        "intent": record.get("intent") or "", "seed": record["seed"], "app": record.get("app") or {},
        # the verifier's repairs of the scenario's spec, applied or reported (issue 31 item 2; older records: none)
        "repairs": list(record.get("repairs") or []),
        "spec": record["spec"], "faults": record["spec"]["faults"], "certificate": record["certificate"],
        "map": program.map_name, "duration_s": program.duration_s,
        "outcome": {"admitted": outcome.get("admitted"), "failure_margin": outcome.get("failure_margin"),
                    "md": _rollout(outcome["md"]), "gt": _rollout(outcome["gt"]),
                    "failure_class": ((outcome.get("monitor") or {}).get("extra") or {}).get("failure_class"),
                    "sha256": hashlib.sha256(w.outcome_json).hexdigest()},
        "explanation": causal_chain(outcome, without_fault(program, record)),
        "episodes": episodes, "decision_epochs_s": epoch_times, "trace": trace,
        "trace_path": f"traces/{trace_path.name}",  # archive-relative: the report names no server path
        "coverage": scene_coverage(program, paths), "strap": strap_segments(trace_path),
        # archive-relative (issue 41): run in the archive folder, whatever path this machine has for it
        "commands": [f"lastv2x witness replay {w.id} --out .", f"lastv2x witness show {w.id} --out .",
                     f"lastv2x witness export {w.id} --xosc --out .",
                     f"lastv2x strap reduce traces/{trace_path.name} --module application",
                     f"lastv2x regress --app reference --witness {w.id} --archive ."],
        "commands_in": REPLAY_IN,
    }


def without_fault(program: Any, record: dict[str, Any]) -> dict[str, Any] | None:
    """The counterfactual: the same program and seed with its faults removed, on the reference applications
    (None for a witness found on a team's application: the report does not call it)."""
    if (record.get("app") or {}).get("target", "reference") not in ("reference", ""):
        return None
    from services.simulator.execute import SimulatorLimits, run_one

    clean = program.model_copy(update={"faults": ()})
    outcome, _ = run_one(clean, clean.seed, SimulatorLimits.from_env())
    return json.loads(outcome.to_json_bytes())  # type: ignore[no-any-return]


def _rollout(r: dict[str, Any]) -> dict[str, Any]:
    return {"failed": r.get("failed"), "red_entries": r.get("red_entries"), "collision": r.get("collision"),
            "stops": r.get("stops"), "min_agent_distance_m": r.get("min_agent_distance_m"),
            "end_t_s": r.get("end_t_s")}


def yield_curve(journal: Any) -> dict[str, Any]:
    """Cumulative admitted vs executions, in journal order; witness archivals marked."""
    executions, admitted, points, witnesses = 0, 0, [[0, 0]], []
    for _seq, kind, payload in journal:
        if kind == "result" and not payload.get("refused"):
            executions += 1
            admitted += int(bool(payload.get("admitted")))
            points.append([executions, admitted])
        elif kind == "witness":
            witnesses.append({"executions": executions, "witness_id": payload.get("witness_id"),
                              "key": payload.get("key")})
    return {"points": points, "witnesses": witnesses, "executions": executions, "admitted": admitted}


def reflection_rounds(journal: Any) -> list[dict[str, Any]]:
    """Each reflection round of the campaign, in journal order: scenario, round, the reflector's diagnosis,
    revised prompt and rules, its field edits with each field's value in the spec it edited (``from``: the
    scenario's root then, its initial run or the last reflected run), why the edits were refused (the words
    were parsed instead) and any error of the round."""
    from services.search.repairs import value_at as _value_at

    rounds: dict[tuple[int, int], dict[str, Any]] = {}
    root: dict[int, dict[str, Any]] = {}  # scenario -> the spec the next reflection edits
    reflected: dict[str, tuple[int, dict[str, Any]]] = {}  # a reflected run's execution id -> (scenario, spec)
    for _seq, kind, p in journal:
        if kind == "dispatch" and p.get("origin") == "initial":
            root[p["scenario"]] = p["spec"]
        elif kind == "dispatch" and p.get("origin") == "reflection":
            reflected[p["execution_id"]] = (p["scenario"], p["spec"])
        elif kind == "result" and p.get("execution_id") in reflected:
            sc, spec = reflected.pop(p["execution_id"])
            root[sc] = spec  # a reflected run that settled is the root the next round edits
        elif kind == "reflection":
            r = rounds.setdefault((p["scenario"], p["round"]), {
                "scenario": p["scenario"], "round": p["round"], "diagnosis": "", "revised_prompt": "",
                "rule_ids": [], "edits": [], "edits_refused": "", "error": ""})
            if "diagnosis" in p:
                edited = root.get(p["scenario"])
                r.update(diagnosis=p["diagnosis"], revised_prompt=p.get("revised_prompt", ""),
                         rule_ids=list(p.get("rule_ids", ())),
                         edits=[{"path": e["path"], "from": _value_at(edited, e["path"]) if edited else None,
                                 "value": e["value"], "rule": e.get("rule", "")} for e in p.get("edits", ())])
            if "edits_refused" in p:
                r["edits_refused"] = p["edits_refused"]
            if "error" in p or "parse_error" in p:
                r["error"] = p.get("error") or f"the revised prompt did not parse: {p['parse_error']}"
    return list(rounds.values())


def campaign_data(core: Any, campaign_id: str, archive: str) -> dict[str, Any]:
    """The campaign page's data and each witness's (NotFound for an unknown campaign id)."""
    view = core.get(campaign_id)
    rows = core.witnesses(campaign_id)
    witnesses = [witness_data(w, archive) for w in rows]
    keys = {w.key for w in rows}
    catalogue = [dict(r) for r in core.store.catalogue() if r["key"] in keys or r.get("first_campaign") == campaign_id]
    return {"format": "lastv2x.campaign-report/1", "campaign_id": view.id, "state": view.state, "reason": view.reason,
            "request": view.request, "summary": view.summary, "created_unix_s": view.created_unix_s,
            "archive": archive, "yield": yield_curve(core.store.journal(campaign_id)), "catalogue": catalogue,
            # the verifier's repairs are the summary's (scenarios[].repairs); the reflector's rounds the journal's
            "reflections": reflection_rounds(core.store.journal(campaign_id)), "witnesses": witnesses}


__all__ = ["campaign_data", "read_trace", "reflection_rounds", "scene_coverage", "strap_segments", "witness_data", "witness_trace_data",
           "yield_curve"]
