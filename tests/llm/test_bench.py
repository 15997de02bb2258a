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
