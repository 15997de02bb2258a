"""Witness traces the search service writes itself, so that every archived witness has one.

A simulator replica writes the trace of an ``Execute`` into its own folder (another pod's emptyDir
on Kubernetes, named by program and seed, overwritten by the same pair in another campaign): the
search service cannot archive that file. So, when the re-check ran on a remote replica, the
witness is run once more *here*, through the simulator's own in-process path (same code, same
deterministic outcome bytes), with the trace written into the archive's staging folder; the trace
is kept only when its outcome bytes equal the re-check's, so it is the witness's trace, byte for
byte the run that was admitted. The store then renames it into ``traces/`` under its content hash
(``traces/<sha256>.mcap``, archive-relative; on PostgreSQL deployments ``LASTV2X_SEARCH_DATA_DIR``
is the volume the search replicas share).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote, urlparse

from lastv2x.core.program import ScenarioProgram


def write_witness_trace(program: ScenarioProgram, seed: int, app: str, staging_dir: Path,
                        expected_outcome: bytes) -> tuple[Path | None, str]:
    """(the staged trace, "") or (None, why there is none). Never raises: a witness without a trace is
    still a witness (its record says why)."""
    from services.simulator.execute import SimulatorLimits, app_under_test, run_one

    try:
        limits = replace(SimulatorLimits.from_env(), trace_dir=Path(staging_dir))
        resolved = app_under_test(app, limits) if app and app != "reference" else None
        try:
            outcome, uri = run_one(program, seed, limits, write_trace=True, app=resolved)
        finally:
            shutdown = getattr(resolved, "shutdown", None)
            if shutdown is not None:
                shutdown()
    except Exception as exc:  # noqa: BLE001 - the witness is archived without its trace, saying why
        return None, f"{type(exc).__name__}: {exc}"[:500]
    path = Path(unquote(urlparse(uri).path))
    if outcome.to_json_bytes() != expected_outcome:
        path.unlink(missing_ok=True)
        return None, "the in-process re-run's outcome differs from the re-check's: trace not archived"
    return path, ""


__all__ = ["write_witness_trace"]
