"""LAST-V2X §3.4, EEBL relay chain: a lead brakes hard out of the ego's radio range, a relay car (CV2) between
them, a dense chain (about one second apart); over 10 seed-varied worlds (desired speeds and every driver's
alerted reaction to a warning drawn per seed, ``variation``), three arms: the relay rebroadcasts EEBL
(``v2x.eebl_rebroadcast``), no rebroadcast, and CV2 unequipped (a driver by sight).
Counted: seeds whose message-driven ego collides. The spec is the offline parser's reading of one sentence,
laid on the synthetic straight road (``program_from_spec_on_straight_roads``), V2X stack as message source."""

from __future__ import annotations

import statistics

from lastv2x_app.experiments import Progress, Row, command, table

SECTION = "LAST-V2X §3.4"
TITLE = "EEBL relay chain: collisions over seed-varied worlds"
PAPER = "collisions: relay 0/10, no relay 7/10, CV2 unequipped 9/10"
INTENT = ("EEBL relay chain: the lead, 35 m ahead, brakes hard at 8 m/s2 at 3 s; a relay car 15 m ahead "
          "rebroadcasts; radio range 30 m.")
# the reaction to warnings after Green (2000): 0.7 s fully expected .. beyond 1.25 s unexpected; the drivers'
# perception of their leader keeps the program builder's (the FCW/EEBL ego: inattentive, 2 s)
VARIATION = {"desired_speed_mps": {"min": 12.0, "max": 16.0}, "alerted_reaction_s": {"min": 0.7, "max": 1.5}}
ARMS = ("relay", "no relay", "CV2 unequipped")


def spec_for(base: dict, arm: str, seed: int) -> dict:
    d = {**base, "seed": seed, "variation": VARIATION, "v2x": {**base["v2x"], "eebl_rebroadcast": arm == "relay"}}
    if arm == "CV2 unequipped":
        d["agents"] = [{**a, "equipped": False} if a["id"] == "relay" else a for a in base["agents"]]
    return d


def run(quick: bool, progress: Progress, *, tiny: bool = False) -> Row:
    from lastv2x.core.spec import parse_spec, spec_to_dict
    from lastv2x.core.synthetic import program_from_spec_on_straight_roads
    from services.llm.config import LlmConfig
    from services.llm.roles import LlmRoles
    from services.simulator.execute import SimulatorLimits, run_one

    base = spec_to_dict(LlmRoles(config=LlmConfig()).parse_intent(INTENT, 1).spec)
    seeds = [1] if tiny else list(range(1, 11))  # cheap: --quick runs the paper's 10 too
    rows, counts = [], {}
    for arm in ARMS:
        progress(f"{arm}, {len(seeds)} seed(s)")
        hits, gaps, warned = 0, [], []
        for seed in seeds:
            out, _ = run_one(program_from_spec_on_straight_roads(parse_spec(spec_for(base, arm, seed))), None,
                             SimulatorLimits())
            hits += out.md.collision is not None
            brakes = [d.t_s for d in out.md.decisions if d.action == "brake"]
            if brakes:
                warned.append(brakes[0])
            if out.md.closest_approach_m is not None:
                gaps.append(out.md.closest_approach_m)
        counts[arm] = hits
        rows.append((arm, f"{hits}/{len(seeds)}", f"{statistics.mean(gaps):.1f}" if gaps else "-",
                     f"{len(warned)}/{len(seeds)}", f"{statistics.mean(warned):.1f}" if warned else "-"))
    ours = ", ".join(f"{arm} {counts[arm]}/{len(seeds)}" for arm in ARMS)
    gaps_txt = {a["id"]: a.get("gap_m") for a in base["agents"]}
    details = table(("arm", "MD ego collisions", "closest approach m (mean)", "seeds the ego's EEBL warns",
                    "first warning s (mean)"), rows) + (
        f"\n\nIntent: “{INTENT}” → lead {gaps_txt.get('lead')} m and relay {gaps_txt.get('relay')} m ahead, radio "
        f"range {base['v2x']['channel']['range_m']:.0f} m; per seed ego/agent desired speed in 12-16 m/s and "
        "alerted reaction to a warning in 0.7-1.5 s (`variation`); the ego notices brake lights ahead 2 s late "
        "(the inattentive FCW/EEBL driver), the agents by their profile. CV2 unequipped: the relay car drives by "
        "sight and sends nothing.")
    paper = {"relay": 0, "no relay": 7, "CV2 unequipped": 9}
    why = "" if all(counts[a] == paper[a] for a in ARMS) or len(seeds) != 10 else (
        "A warning acts through the driver (after the alerted reaction drawn per seed), so without any warning "
        "the inattentive ego notices CV2's brake lights too late to stop (CV2 unequipped). Without the "
        "rebroadcast the ego is still warned by CV2's own EEBL the moment CV2 brakes hard, which in our chain "
        "comes early enough to stop behind it; the paper's no-relay arm collides 7 times in 10, so its CV2 "
        "presumably warns later or not at all. The chain's gaps, speeds and reactions are ours: the paper gives "
        "none, and the sentence asks for a lead out of radio range behind one relay car.")
    return Row("eebl-relay", SECTION, TITLE, PAPER, ours, f"{len(seeds)} seed-varied worlds × {len(ARMS)} arms",
               command("eebl-relay", quick), why=why, details=details, extra={"counts": counts, "seeds": len(seeds)})
