"""The parse benchmark meets its targets on the offline backend, and its data is what it claims."""

from __future__ import annotations

import re

from bench import bench_parse
from lastv2x.core.catalogue import APPLICATIONS


def test_dataset_shape() -> None:
    rows = bench_parse.load()
    normal = [r for r in rows if r["kind"] == "normal"]
    faults = [r for r in rows if r["kind"] == "fault"]
    assert len(normal) == 100 and len(faults) >= 60
    assert {r["labels"]["application"] for r in normal} == {a.value for a in APPLICATIONS}
    assert len({r["id"] for r in rows}) == len(rows)
    names = re.compile(r"\b(rlvw|glosa|fcw|eebl|ima|lta|town\s*\d+)\b", re.IGNORECASE)
    assert not [r["text"] for r in normal if names.search(r["text"])]  # application and town left open
    for r in faults:
        for f in r["labels"]["faults"]:
            assert {"stream", "operator", "anchor", "magnitude"} <= set(f)


def test_offline_backend_meets_the_targets(capsys) -> None:  # noqa: ANN001
    assert bench_parse.main(["--check"]) == 0
    out = capsys.readouterr().out
    assert "targets (100 % compile within 2 attempts, >= 95 % field accuracy): MET" in out


def test_heldout_set_shape() -> None:
    """The held-out set (issue 19): >= 150 labelled intents, every fault fully labelled, kept apart from dev."""
    rows = bench_parse.load(bench_parse.HELDOUT)
    assert len(rows) >= 150 and len({r["id"] for r in rows}) == len(rows)
    assert {r["labels"]["application"] for r in rows} == {a.value for a in APPLICATIONS}
    assert sum(len(r["labels"]["faults"]) >= 2 for r in rows) >= 15  # several faults in one intent
    for r in rows:
        for f in r["labels"]["faults"]:
            assert set(f) == {"stream", "operator", "anchor", "magnitude"}
    if bench_parse.DEV.exists():
        dev = {r["text"].lower() for r in bench_parse.load(bench_parse.DEV)}
        assert not dev & {r["text"].lower() for r in rows}


def test_exact_scoring_counts_a_silent_drop() -> None:
    """A fault asked for and neither parsed nor reported is a silent drop; a matched one is exact."""
    want = [{"stream": "BSM", "operator": "delay", "anchor": "scenario_time", "magnitude": 0.5},
            {"stream": "BSM", "operator": "drop", "anchor": "scenario_time", "magnitude": None}]
    got = [{"stream": "BSM", "operator": "delay", "anchor": "scenario_time", "magnitude": 0.54}]
    pairs = bench_parse._match(want, got)
    assert pairs[0][1] is got[0] and pairs[1][1] is None
    assert bench_parse._close(0.54, 0.5) and not bench_parse._close(0.56, 0.5) and bench_parse._close(3, None)


def test_dev_set_meets_the_exact_targets(capsys) -> None:  # noqa: ANN001
    """The lexicon's development set (never the held-out one) scores exactly: no silent drop."""
    assert bench_parse.main(["--exact", "--data", str(bench_parse.DEV), "--check"]) == 0
    out = capsys.readouterr().out
    assert "silent drops          0 of" in out and "exact targets: MET" in out
