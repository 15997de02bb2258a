"""LAST-V2X §3.3, corridor traversal along an RSU chain: GLOSA on the built-in ``corridor`` (signalized
junctions 250 m apart, one RSU per junction: ``rsu_placement: chain``), traversed whole (the ego starts at its first
junction, ``map.whole_corridor``; seeded offsets per junction, ``signal.coordination: random``) at radio ranges 50 / 100 / 150 m, four
arms (every driver, equipped or not, acts on the signal it sees within 100 m: ``perception.equipped_see_signals``):
no V2X (``ego.equipped: false``, driving by sight alone), direct SPaT (each RSU its own junction), RSU relay
over the radio (``v2x.spat_relay``) and RSU relay over the wired backhaul (``v2x.backhaul``). Per arm: the
message-driven ego's stops and the junctions it holds fresh SPaT for ahead (``Decision.known_ahead``, mean
over its decision epochs) and travel time, over seed-varied worlds (the ego's desired speed drawn per seed)."""

from __future__ import annotations

import statistics

from lastv2x_app.experiments import Progress, Row, command, table

SECTION = "LAST-V2X §3.3"
TITLE = "corridor: GLOSA stops, junctions known ahead"
PAPER = "at 50 m: stops 1.9 (no V2X) → ~1.9 (direct SPaT) → 1.0 (RSU relay); known ahead 0.5 (direct) vs 2.6 (relay)"
RANGES = (50.0, 100.0, 150.0)
ARMS = ("no V2X", "direct SPaT", "RSU relay (radio)", "RSU relay (backhaul)")
DURATION_S = 120.0  # long enough for the ego to cross all five junctions at its slowest drawn speed (10 m/s)


def spec_dict(arm: str, range_m: float, seed: int) -> dict:
    v2x: dict = {"rsu_placement": "chain", "channel": {"range_m": range_m}}
    if arm == "RSU relay (radio)":
        v2x["spat_relay"] = True
    if arm == "RSU relay (backhaul)":
        v2x["backhaul"] = {}
    # the whole corridor: the ego starts at its first junction and crosses all five (map.whole_corridor); the
    # junctions after the first run their own seeded offsets (signal.coordination random: an uncoordinated arterial)
    d = {"application": "GLOSA", "seed": seed, "duration_s": DURATION_S,
         "map": {"town": "corridor", "junction_kind": "corridor", "whole_corridor": True},
         "signal": {"coordination": "random"}, "v2x": v2x,
         # seed-varied worlds: the ego's desired speed (so its arrival phase) drawn per seed
         "variation": {"desired_speed_mps": {"min": 10.0, "max": 15.0}},
         # every driver watches the signal face within 100 m (MUTCD), equipped or not: GLOSA advises, it does not
         # drive through a red its driver can see (perception.equipped_see_signals)
         "perception": {"equipped_see_signals": True}}
    if arm == "no V2X":
        d["ego"] = {"equipped": False}
    return d


def run(quick: bool, progress: Progress, *, tiny: bool = False) -> Row:
    from lastv2x.core.spec import parse_spec
    from services.grounding.core import GroundingConfig, GroundingCore
    from services.simulator.execute import SimulatorLimits, run_one

    grounding = GroundingCore(GroundingConfig(map_paths=()))
    limits = SimulatorLimits()
    seeds = [1] if tiny else list(range(1, 4 if quick else 11))
    ranges = RANGES[:1] if tiny else RANGES
    res: dict[tuple[str, float], dict[str, list[float]]] = {}
    for range_m in ranges:
        for arm in ARMS:
            progress(f"{arm} at {range_m:.0f} m, {len(seeds)} seed(s)")
            acc: dict[str, list[float]] = {"stops": [], "ahead": [], "travel": [], "junctions": [], "red": []}
            for seed in seeds:
                program = grounding.ground(parse_spec(spec_dict(arm, range_m, seed)))
                out, _ = run_one(program, None, limits)
                md = out.md
                acc["stops"].append(md.stops)
                ahead = [d.known_ahead for d in md.decisions if getattr(d, "known_ahead", None) is not None]
                if ahead:
                    acc["ahead"].append(statistics.mean(ahead))
                acc["travel"].append(md.travel_time_s if md.travel_time_s is not None else md.end_t_s)
                acc["junctions"].append(len({c.junction_id for c in program.ego.route.crossings}))
                acc["red"].append(len(md.red_entries))
            res[(arm, range_m)] = acc

    def m(xs: list[float], fmt: str = ".1f") -> str:
        return format(statistics.mean(xs), fmt) if xs else "-"

    rows = [(f"{r:.0f} m", arm, m(res[(arm, r)]["stops"]), m(res[(arm, r)]["ahead"]), m(res[(arm, r)]["travel"]),
             m(res[(arm, r)]["red"], ".2f"), m(res[(arm, r)]["junctions"]))
            for r in ranges for arm in ARMS]
    r0 = ranges[0]
    ours = (f"at {r0:.0f} m: stops {m(res[('no V2X', r0)]['stops'])} (no V2X) → "
            f"{m(res[('direct SPaT', r0)]['stops'])} (direct) → {m(res[('RSU relay (radio)', r0)]['stops'])} "
            f"(radio relay) / {m(res[('RSU relay (backhaul)', r0)]['stops'])} (backhaul relay); known ahead "
            f"{m(res[('direct SPaT', r0)]['ahead'])} (direct) vs {m(res[('RSU relay (radio)', r0)]['ahead'])} "
            f"(radio relay) / {m(res[('RSU relay (backhaul)', r0)]['ahead'])} (backhaul)")
    why = ("Our corridor's RSUs stand 250 m apart, beyond every radio range tested, so a radio relay (RSU to RSU "
           "over the air) cannot carry SPaT ahead: only the wired backhaul does; the paper's chain was built so "
           "neighbouring RSUs hear each other. Every driver watches the lights within 100 m (MUTCD), equipped or not "
           "(perception.equipped_see_signals), so SPaT first heard 50 m before a junction changes little, as in "
           "the paper. A relaying RSU also describes the junctions it relays in its MAP, and GLOSA's advisory stands "
           "across the gaps in coverage until the stop bar it was made for: that is what cuts the relayed ego's "
           "stops. Ours is the built-in corridor (straight, five junctions, each with its own seeded offset), "
           "traversed from its first junction, with the reference GLOSA; the paper's corridor is a CARLA town. "
           "Known ahead is a mean over the ego's decision epochs, some of which at 50 m fall before it hears any "
           "RSU.")
    details = table(("range", "arm", "stops (MD ego)", "known ahead (mean over epochs)", "travel / end time s",
                     "red entries", "signalized junctions on route"), rows) + (
        "\n\nMeans over seeds; each seed draws the ego's desired speed in 10-15 m/s (`variation`), so it reaches "
        "the junctions at other phases. Known ahead is undefined for the unequipped ego (it decides by sight).")
    return Row("corridor", SECTION, TITLE, PAPER, ours,
               f"{len(seeds)} seed-varied worlds × {len(ranges)} ranges × {len(ARMS)} arms", command("corridor", quick),
               why=why, details=details, extra={"res": {f"{a}@{r:.0f}": v for (a, r), v in res.items()}})
