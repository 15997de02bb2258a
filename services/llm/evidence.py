"""The evidence digest the reflector reads (LAST-V2X §2.5).

A paired run (message-driven ego + ground-truth twin) is summarized into one small
JSON object: the paired outcome (violations of each rollout, admission), the
divergence episodes with their hazard slack, the age of information of each stream
at the decision epoch, the failure margin, the verifier's findings and what each
fault actually did (its window, its sender's equipage, how many messages the ego
could have received in the window). The search service builds it from a trace;
the reflector only reads it.

Conventions (Appendix E): hazard slack = time of the next application decision
minus the end of the divergence episode (negative: the decision was taken while
the belief was wrong). Failure margin: signal applications, the smallest
non-negative hazard slack; conflict applications, the minimum ego-agent distance;
``NO_EPISODE_MARGIN`` when no qualifying episode or conflict occurred.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lastv2x.core.catalogue import Application, Stream
from lastv2x.core.errors import InvalidArgument
from lastv2x.core.spec import FaultOperator, Phase, violations_from

NO_EPISODE_MARGIN = 1.0e6  # the "large constant" of Appendix E


class DivergenceKind(StrEnum):
    SIGNAL_PHASE = "signal_phase"  # believed phase wrong
    COUNTDOWN = "countdown"  # countdown error > 1.0 s
    TRACK_DISPLACED = "track_displaced"  # neighbour track beyond its age-adjusted budget
    GHOST_TRACK = "ghost_track"  # track for a vehicle that no longer exists (> 2.0 s)
    MISSING_TRACK = "missing_track"  # a present vehicle has no track
    MAP_ASSOCIATION = "map_association"  # ego lane mapped to the wrong signal group
    STALE = "stale"  # input older than the freshness budget


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DivergenceEpisode(_Model):
    kind: DivergenceKind
    stream: Stream | None = None
    start_s: float = Field(ge=0.0)
    end_s: float = Field(ge=0.0)
    hazard_slack_s: float | None = Field(None, description="next decision time minus episode end; < 0: decided while wrong")


class FaultEvidence(_Model):
    name: str
    operator: FaultOperator
    stream: Stream
    window_start_s: float = Field(ge=0.0)
    window_end_s: float | None = Field(None, description="null: active to the end")
    magnitude: float | None = None
    sender: str | None = None
    sender_equipped: bool | None = None
    messages_affected: int | None = Field(None, ge=0, description="messages the operator acted on")
    longest_drop_run: int | None = Field(None, ge=0, description="a random drop: its longest run of consecutive "
                                                                 "lost messages from one sender")
    delivered_in_window: int | None = Field(None, ge=0, description="messages of the stream the ego could receive "
                                                                    "in the window without the fault (0: no exposure)")
    captured_phase: Phase | None = Field(None, description="SPaT freeze: phase captured when the window opened")


class FindingDigest(_Model):
    check: str
    severity: str
    message: str = ""
    fields: tuple[str, ...] = ()


class EvidenceDigest(_Model):
    application: Application
    admitted: bool
    md_violations: tuple[str, ...] = Field((), description="message-driven ego: red_entry, collision, ...")
    gt_violations: tuple[str, ...] = Field((), description="ground-truth twin")
    md_decision: str | None = Field(None, description="stop / go / brake / yield / proceed at the decision epoch")
    gt_decision: str | None = None
    divergence_episodes: tuple[DivergenceEpisode, ...] = ()
    decision_epoch_s: float | None = None
    decision_epoch_aoi_s: dict[Stream, float] = Field(default_factory=dict, description="MD ego AoI per stream")
    failure_margin: float | None = None
    verifier_findings: tuple[FindingDigest, ...] = ()
    faults: tuple[FaultEvidence, ...] = ()
    conflict_arrival_gap_s: float | None = Field(None, description="conflict apps: agent minus ego arrival, s")
    ego_in_range_fraction: float | None = Field(None, ge=0.0, le=1.0,
                                                description="share of the approach the ego is within radio range")
    penetration: float | None = Field(None, ge=0.0, le=1.0)

    @property
    def no_episode(self) -> bool:
        return self.failure_margin is None or self.failure_margin >= NO_EPISODE_MARGIN / 10

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any] | str) -> EvidenceDigest:
        """Validate JSON data; raise InvalidArgument naming every bad field (``evidence_digest.<path>``)."""
        try:
            if isinstance(data, str):
                return cls.model_validate_json(data)
            return cls.model_validate(data)
        except ValidationError as exc:
            raise InvalidArgument(violations_from(exc, prefix="evidence_digest.")) from None


__all__ = ["NO_EPISODE_MARGIN", "DivergenceEpisode", "DivergenceKind", "EvidenceDigest", "FaultEvidence",
           "FindingDigest"]
