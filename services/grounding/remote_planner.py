"""The scene-planner role over gRPC: the grounding service asks the LLM service's PlanScene.

Used when ``LASTV2X_LLM_TARGET`` names an LLM service (as in the Kubernetes config);
otherwise grounding calls the offline planner in-process. The reply's assignments keep
the planner's contract: only ids of the candidates sent may come back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lastv2x.core.spec import ScenarioSpec
from lastv2x.rpc.convert import spec_to_proto
from lastv2x.rpc.security import open_channel
from lastv2x.v1 import llm_pb2, llm_pb2_grpc

_TURNS = {1: "straight", 2: "left", 3: "right"}


class RemotePlanner:
    """A ``planner(spec, candidates)`` callable backed by ``LlmService.PlanScene``."""

    def __init__(self, target: str, timeout_s: float = 10.0):
        self._channel = open_channel(target)  # TLS and token as this process's settings say
        self._stub = llm_pb2_grpc.LlmServiceStub(self._channel)
        self._timeout_s = timeout_s

    def __call__(self, spec: ScenarioSpec, candidates: Sequence[Any]) -> dict[str, Any]:
        req = llm_pb2.PlanSceneRequest(spec=spec_to_proto(spec))
        for c in candidates:
            req.candidates.add(candidate_id=c.candidate_id, map_name=c.map_name, junction_id=c.junction_id,
                               approach_id=c.approach_id, heading_rad=c.heading_rad,
                               movements=[str(m) for m in c.movements], lanes=list(c.lanes), score=c.score)
        reply = self._stub.PlanScene(req, timeout=self._timeout_s)
        return {"assignments": [{"agent_id": a.agent_id, "role": a.role, "candidate_id": a.candidate_id,
                                 "lane_id": a.lane_id or None, "turn": _TURNS.get(a.maneuver),
                                 "signal_group": a.signal_group if a.HasField("signal_group") else None}
                                for a in reply.assignments], "backend": reply.backend}
