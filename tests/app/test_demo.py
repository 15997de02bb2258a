"""``make run``: every stage of the main path runs its real core on embedded defaults."""

from __future__ import annotations

from lastv2x_app.demo import run_demo


def test_demo_runs_every_stage_on_embedded_defaults() -> None:
    result = run_demo()
    stages = [row[0] for row in result.rows]
    for prefix in ("1 intent -> spec", "2 verify", "3 ground -> program", "4 paired: admission",
                   "5 trace (MCAP)", "6 reduce (STRaP)"):
        assert any(s.startswith(prefix) for s in stages), prefix
    assert dict((r[0], r[1]) for r in result.rows)["3 ground -> program"] == "grounded"  # a real map, no fallback
    assert result.data["verification"]["ok"] and result.data["segments"]
    assert result.data["outcome"]["admitted"]  # the intent's SPaT freeze is a communication-caused failure
    assert result.data["trace_uri"].startswith("file://") and "intent:" in result.table
