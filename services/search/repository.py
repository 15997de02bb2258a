"""The search repository's contract (its rows and :class:`Repository`) and the one place that chooses the engine.

What it keeps, and why each table exists:

- ``campaigns``: one row per campaign (request, state, reason, summary) — what
  GetCampaign / ListCampaigns read.
- ``journal``: every state change of a campaign in order (dispatches with the RNG
  state, results, elite snapshots, reflection rounds, admissions, witnesses), so a
  campaign can be inspected and resumed.
- ``ledger``: one row per paired execution, keyed by the execution id
  ``hash(canonical program, seed, campaign)``. A second write of the same id is
  ignored: a retried or replayed execution is recorded once.
- ``catalogue``: one row per witness key (application × fault family × penetration
  band × conflict geometry), so equivalent failures are counted, not stored twice, with the
  failure signature of its witness's run, so the same failure found under another key (by
  another campaign) is counted there too; ``catalogue_hits`` names what was counted (the admitted execution's id), so an admission
  a resumed campaign retraces is not counted again.
- ``witnesses``: the archived 1-minimal witnesses (spec, program, grounding record,
  seed, outcome bytes with both rollouts and the monitor report, certificate) and
  ``flaky``: admissions that flipped when re-run.
- ``leases``: which search replica drives a campaign (holder, expiry); see
  :meth:`Repository.acquire_lease`.
- ``schema_version``: the applied migrations (``migrations.py``).

One implementation, ``store.SqlRepository``, writes the SQL for both engines over a small
dialect: ``store.Store`` (SQLite under ``LASTV2X_SEARCH_DATA_DIR``, the default) and
``store_pg.PostgresStore`` (``LASTV2X_SEARCH_DB=postgresql://...``, several search replicas
sharing one archive); ``services.search.stores.open_store`` picks one from the settings. Witness traces are files
under ``data_dir/traces`` for both (:class:`TraceFiles`). Nothing outside these modules writes SQL.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from lastv2x.core.files import private_dir


@dataclass(frozen=True)
class CampaignRow:
    id: str
    state: str  # queued, running, done, failed, cancelled
    reason: str
    request: dict[str, Any]
    summary: dict[str, Any]
    created_unix_s: float
    updated_unix_s: float


@dataclass(frozen=True)
class LedgerRow:
    execution_id: str
    campaign_id: str
    scenario: int
    purpose: str  # initial, search, reflection, shrink, recheck, cross_check, replay
    program_sha256: str
    seed: int
    admitted: bool
    failure_margin: float
    refused: str
    replica: str
    outcome_json: bytes


@dataclass(frozen=True)
class WitnessRow:
    id: str
    campaign_id: str
    key: str
    application: str
    created_unix_s: float
    outcome_json: bytes  # the archived canonical outcome bytes
    record: dict[str, Any]  # spec, program, grounding, seed, certificate, ...
    trace_path: str


class Repository(Protocol):
    """What the search service keeps, whatever the engine. Every method is one transaction.

    Leases (one campaign driven by one search replica at a time): :meth:`acquire_lease` takes
    the campaign for ``holder`` for ``ttl_s`` seconds when nobody holds it, when its lease has
    expired (the holder stopped renewing: it crashed, hung or lost the network), or when
    ``holder`` already holds it (then it extends). :meth:`renew_lease` extends it while the row
    is still ``holder``'s, and is False once another replica took it over or it was released:
    the holder must then stop driving that campaign. Expiry is measured on the database's
    clock (PostgreSQL) or this host's (SQLite), never by comparing replicas' clocks.
    """

    data_dir: Path
    traces_dir: Path
    staging_dir: Path
    engine: str  # "sqlite" or "postgresql"
    schema_version: int

    def close(self) -> None: ...

    # campaigns
    def create_campaign(self, campaign_id: str, request: dict[str, Any], state: str = "queued") -> None: ...
    def update_campaign(self, campaign_id: str, *, state: str | None = None, reason: str | None = None,
                        summary: dict[str, Any] | None = None) -> None: ...
    def get_campaign(self, campaign_id: str) -> CampaignRow: ...
    def list_campaigns(self, limit: int = 100) -> list[CampaignRow]: ...

    # journal: seq 0, 1, 2, ... per campaign
    def append_journal(self, campaign_id: str, kind: str, payload: dict[str, Any]) -> int: ...
    def journal(self, campaign_id: str) -> Iterator[tuple[int, str, dict[str, Any]]]: ...

    # ledger: a second write of an execution id changes nothing and returns False
    def record_execution(self, row: LedgerRow) -> bool: ...
    def get_execution(self, execution_id: str) -> LedgerRow | None: ...
    def count_executions(self, campaign_id: str) -> dict[str, int]: ...

    # catalogue + witnesses
    def catalogue_entry(self, key: str) -> dict[str, Any] | None: ...  # the row whose key is exactly ``key``
    def catalogue_entry_for_failure(self, signature: str) -> dict[str, Any] | None: ...  # same failure, any key
    def has_witness(self, witness_id: str, campaign_id: str) -> bool: ...
    def count_in_catalogue(self, key: str, hit: str = "") -> None: ...
    def catalogue(self, key: str | None = None) -> list[dict[str, Any]]: ...
    def archive_witness(self, witness: WitnessRow, key_fields: dict[str, str], staged_trace: Path | None,
                        hit: str = "", signature: str = "") -> bool: ...
    def get_witness(self, witness_id: str) -> WitnessRow: ...  # trace_path: where the trace lies on this host
    def trace_file(self, trace_path: str) -> str: ...
    def list_witnesses(self, campaign_id: str = "", application: str = "") -> list[WitnessRow]: ...
    def record_flaky(self, program_sha256: str, seed: int, campaign_id: str, detail: dict[str, Any]) -> None: ...
    def list_flaky(self, campaign_id: str) -> list[dict[str, Any]]: ...

    # leases
    def acquire_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool: ...
    def renew_lease(self, campaign_id: str, holder: str, ttl_s: float) -> bool: ...
    def release_lease(self, campaign_id: str, holder: str) -> bool: ...
    def lease_holder(self, campaign_id: str) -> str | None: ...


class TraceFiles:
    """``data_dir`` with ``traces/`` (archived) and ``staging/`` (being written); shared by both engines."""

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.traces_dir = self.data_dir / "traces"
        self.staging_dir = self.data_dir / "staging"  # traces being written; renamed into traces/
        for d in (self.data_dir, self.traces_dir, self.staging_dir):
            private_dir(d)  # 0700: witnesses and traces are the platform team's

    def _place_trace(self, witness_id: str, staged_trace: Path | None) -> str:
        """Rename the staged trace into ``traces/`` under its content hash (atomic on one filesystem; the same
        bytes twice are stored once); its archive-relative id ``traces/<sha256>.mcap`` or ''."""
        if staged_trace is None or not staged_trace.is_file():
            return ""
        digest = hashlib.sha256()
        with open(staged_trace, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        final = self.traces_dir / f"{digest.hexdigest()}.mcap"
        os.chmod(staged_trace, 0o600)
        os.replace(staged_trace, final)
        return final.relative_to(self.data_dir).as_posix()

    def trace_file(self, trace_path: str) -> str:
        """Where an archived trace lies on this host: an archive-relative id resolved under ``data_dir``
        (rows written before content addressing hold absolute paths: kept as they are)."""
        if not trace_path or Path(trace_path).is_absolute():
            return trace_path
        return str(self.data_dir / trace_path)

    def _located(self, w: WitnessRow) -> WitnessRow:
        return replace(w, trace_path=self.trace_file(w.trace_path))


def check_ttl(ttl_s: float) -> float:
    if not ttl_s > 0:
        raise ValueError(f"lease ttl_s must be > 0, got {ttl_s}")
    return float(ttl_s)


__all__ = ["CampaignRow", "LedgerRow", "Repository", "TraceFiles", "WitnessRow", "check_ttl"]
