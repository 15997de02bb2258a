"""Vector indexes (FAISS ``IndexFlatIP``, one per kind) and hybrid retrieval for specs.

Kinds: ``approaches`` (one document per junction approach of every catalogued
map), ``knowledge`` (applications, fault operators and families, messages,
concepts) and ``behaviours`` (driver profiles). Each document's text is embedded
once; vectors are L2-normalized so inner product = cosine similarity.

Hybrid retrieval (:meth:`RetrievalIndex.candidates_for`): hard filters from the
spec decide *which* junctions and approaches may host the scene (map / town,
signalization, junction kind, approach count, the ego's manoeuvre under a signal
group where the application needs one, enough run-up, corridor chain, and the
roles' geometry: a cross approach whose movement really conflicts with the ego's,
an opposite approach for opposing traffic, the lead's lane); similarity to the
spec's query text ranks what passes. Equal scores (to 1e-6) are ordered by the
scenario seed's TIE_BREAK substream, so a replay retrieves the same list.

Without ``faiss`` the same flat inner-product search runs in numpy.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lastv2x.core.catalogue import APPLICATIONS, AppKind, canonical_map_name
from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.map_hosting import signal_required
from lastv2x.core.rng import Substream, substream
from lastv2x.core.spec import (
    EGO_LANE_ROLES,
    AgentRole,
    JunctionKind,
    RsuPlacement,
    ScenarioSpec,
    agent_maneuver,
)
from services.grounding.catalogue import MapCatalogue
from services.grounding.embed import (
    DEFAULT_EMBEDDER,
    Embedder,
    HybridEmbedder,
    l2_normalize,
    make_embedder,
)
from services.grounding.entries import (
    OPPOSITE_MIN_RAD,
    PERPENDICULAR,
    ApproachInfo,
    JunctionInfo,
    heading_gap_rad,
)
from services.grounding.knowledge import KnowledgeBase, load_knowledge

faiss: Any
try:  # the 'retrieval' extra
    import faiss
except ImportError:  # pragma: no cover - depends on the environment
    faiss = None

KINDS = ("approaches", "knowledge", "behaviours")
HIT_KIND = {"approaches": "approach", "knowledge": "knowledge", "behaviours": "behaviour"}
SCORE_DIGITS = 6
NON_EGO_WEIGHT = 0.5  # planner score factor of an approach that cannot host the ego
DEFAULT_JUNCTIONS = 3  # junctions whose approaches go to the planner
VEHICLE_LENGTH_M = 4.5
RUN_UP_MARGIN_M = 5.0
JUNCTION_DEPTH_M = 25.0  # most a conflict point lies beyond an agent's stop bar (optimistic run-up estimate)

KIND_WORDS = {
    "signalized_4way": "signalized four-way intersection, 4-way crossroads with traffic lights",
    "unsignalized_4way": "unsignalized four-way crossroads, stop-controlled or priority intersection",
    "t_junction": "T-junction, three-way tee intersection",
    "corridor": "arterial corridor of consecutive signalized junctions, RSU chain, green wave",
    "urban_canyon": "urban canyon: dense high-rise towers and skyscrapers, building blockage of radio links",
    "merge": "merge or diverge of two roads, ramp, not an intersection",
}


@dataclass(frozen=True)
class Doc:
    id: str
    kind: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """One retrieval result (the RetrievalHit message: kind, id, score, reason)."""

    kind: str  # "approach" | "knowledge" | "behaviour"
    id: str
    score: float  # cosine similarity clipped to [0, 1]
    reason: str
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "score": self.score, "reason": self.reason}


def approach_id(map_name: str, approach: str) -> str:
    return f"{map_name}/{approach}"


def _aliases(name: str) -> str:
    if name.lower().startswith("town"):
        digits = "".join(c for c in name if c.isdigit()).lstrip("0")
        return f"{name} CARLA town {digits} map {name}"
    return f"{name.replace('_', ' ')} built-in map {name}"


LANE_WORDS = {1: "single-lane", 2: "two-lane", 3: "three-lane", 4: "four-lane"}


def approach_doc(j: JunctionInfo, a: ApproachInfo) -> Doc:
    sig = "signalized (traffic lights)" if j.signalized else "unsignalized (stop or priority control)"
    moves = []
    for turn in ("straight", "left", "right", "uturn"):
        ms = j.movements_of(a.id, turn)
        if ms:
            groups = sorted({m.signal_group_id for m in ms if m.signal_group_id})
            moves.append(f"{turn} ({'signal group ' + ', '.join(groups) if groups else 'no signal'})")
    others = [b for b in j.approaches if b.id != a.id]
    opposite = [b for b in others if heading_gap_rad(b.heading_rad, a.heading_rad) >= OPPOSITE_MIN_RAD]
    perp = [b for b in others if PERPENDICULAR[0] <= heading_gap_rad(b.heading_rad, a.heading_rad) <= PERPENDICULAR[1]]
    kinds = "; ".join(KIND_WORDS.get(k, k) for k in j.kinds) or "junction"
    ex = j.exposure
    if "urban_canyon" in j.kinds:
        bld = f"dense tall buildings around it: {ex.count} buildings, built-up {ex.built_fraction:.0%}, mean height {ex.mean_height_m:.0f} m"
    elif ex.count:
        bld = (f"low-rise buildings nearby: {ex.count} buildings, built-up {ex.built_fraction:.0%}, "
               f"mean height {ex.mean_height_m:.0f} m")
    else:
        bld = "open surroundings, no buildings"
    corridor = ""
    if a.chain_ahead:
        corridor = (f" Corridor: next junction {a.next_junction_id} {a.next_junction_m:.0f} m ahead, "
                    f"{len(a.chain_ahead)} junctions ahead along the road.")
    text = (f"{_aliases(j.map_name)}, junction {j.id}: {kinds}; {sig} {j.approach_count}-way junction with "
            f"{j.approach_count} approaches. {LANE_WORDS.get(a.lane_count, 'multi-lane').capitalize()} approach {a.id} "
            f"from the {a.compass} ({a.lane_count} lane{'s' if a.lane_count > 1 else ''}). "
            f"Movements: {', '.join(moves)}. Cross traffic from {len(perp)} perpendicular approach(es); "
            f"{'an opposite approach with oncoming traffic' if opposite else 'no opposite approach'}. "
            f"Speed limit {a.speed_limit_mps * 3.6:.0f} km/h. {bld}.{corridor}")
    meta = {"map": j.map_name, "junction_id": j.id, "approach_id": a.id, "signalized": j.signalized,
            "kinds": list(j.kinds), "approach_count": j.approach_count, "turns": list(a.turns),
            "signalized_turns": list(a.signalized_turns), "lanes": a.lane_count, "compass": a.compass,
            "opposite": bool(opposite), "perpendicular": len(perp), "chain": len(a.chain_ahead)}
    return Doc(approach_id(j.map_name, a.id), "approaches", text, meta)


class FlatIndex:
    """Exact inner-product search over one kind (FAISS IndexFlatIP, numpy fallback)."""

    def __init__(self, docs: Sequence[Doc], vectors: np.ndarray):
        self.docs = tuple(docs)
        self.ids = tuple(d.id for d in docs)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0
        self._faiss = None
        if faiss is not None and len(self.docs):
            self._faiss = faiss.IndexFlatIP(self.dim)
            self._faiss.add(self.vectors)

    def __len__(self) -> int:
        return len(self.docs)

    @property
    def backend(self) -> str:
        return "faiss.IndexFlatIP" if self._faiss is not None else "numpy"

    @property
    def memory_bytes(self) -> int:
        return int(self.vectors.nbytes) * (2 if self._faiss is not None else 1)  # faiss keeps its own copy

    def search(self, q: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top ``k`` (row, score) for one query vector; ``allowed`` restricts to these rows."""
        n = len(self.docs) if allowed is None else len(allowed)
        k = min(k, n)
        if k <= 0:
            return []
        q = np.ascontiguousarray(q.reshape(1, -1), dtype=np.float32)
        if self._faiss is not None:
            params = None
            if allowed is not None:
                params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(np.asarray(allowed, dtype=np.int64)))
            scores, rows = self._faiss.search(q, k, params=params)
            return [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]
        rows_all = np.arange(len(self.docs)) if allowed is None else np.asarray(allowed, dtype=np.int64)
        sims = self.vectors[rows_all] @ q[0]
        top = np.argsort(-sims, kind="stable")[:k]
        return [(int(rows_all[i]), float(sims[i])) for i in top]


def _tie_order(items: list[tuple[str, float]], seed: int, salt: int) -> list[tuple[str, float]]:
    """Sort (id, score) by rounded score desc, equal scores in the seed's TIE_BREAK order."""
    ids = sorted(i for i, _ in items)
    keys = dict(zip(ids, substream(seed, Substream.TIE_BREAK, salt).random(len(ids)).tolist(), strict=True))
    return sorted(items, key=lambda it: (-round(it[1], SCORE_DIGITS), keys[it[0]], it[0]))


_KIND_SALT = {"approaches": 1, "knowledge": 2, "behaviours": 3}


# ── spec requirements (hard filters) ───────────────────────────────────────────
@dataclass(frozen=True)
class Requirements:
    town: str | None
    junction_kind: JunctionKind
    signalized: bool | None  # True: must be; False: must not be; None: either
    signal_needed: bool  # the ego movement must be under a signal group
    min_approaches: int
    ego_turn: str
    roles: tuple[tuple[str, str, str], ...]  # (agent id, role, turn)
    corridor: bool
    ego_run_up_m: float
    role_run_up_m: tuple[float, ...] = ()  # per role: optimistic road needed before the stop bar (conflict agents)
    junctions_ahead: int = 0  # junctions the ego approach's chain must hold ahead (map.junctions_ahead)
    whole_corridor: bool = False  # the ego approach starts its map's longest chain (map.whole_corridor)

    def describe(self) -> str:
        parts = []
        if self.signalized is True:
            parts.append("signalized")
        elif self.signalized is False:
            parts.append("unsignalized")
        if self.junction_kind is not JunctionKind.ANY:
            parts.append(self.junction_kind.value)
        parts.append("junction")
        return " ".join(parts)


def requirements(spec: ScenarioSpec) -> Requirements:
    app = APPLICATIONS[spec.application]
    kind = spec.map.junction_kind
    sig = signal_required(spec.application, kind.value, spec.map.signalized)  # the one home of the rule
    corridor = (kind is JunctionKind.CORRIDOR or spec.v2x.rsu_placement is RsuPlacement.CHAIN
                or spec.map.junctions_ahead > 0 or spec.map.whole_corridor)
    run_up = spec.ego.start_distance_m + VEHICLE_LENGTH_M + RUN_UP_MARGIN_M  # background behind it is optional
    roles = tuple((a.id, a.role.value, agent_maneuver(spec, a).value) for a in spec.agents)
    # a conflict agent covers at least speed * (ego time to its stop bar + offset), less what lies inside the junction
    t_ego = (spec.ego.start_distance_m + VEHICLE_LENGTH_M / 2) / spec.ego.speed_mps
    needs = tuple(max(0.0, a.speed_mps * (t_ego + a.arrival_offset_s) - JUNCTION_DEPTH_M)
                  if a.role in (AgentRole.CROSS, AgentRole.OPPOSING) else 0.0 for a in spec.agents)
    return Requirements(town=spec.map.town, junction_kind=kind, signalized=sig,
                        signal_needed=app.kind is AppKind.SIGNAL and sig is not False,
                        min_approaches=spec.map.min_approaches, ego_turn=spec.ego.maneuver.value, roles=roles,
                        role_run_up_m=needs, corridor=corridor, ego_run_up_m=run_up,
                        junctions_ahead=spec.map.junctions_ahead, whole_corridor=spec.map.whole_corridor)


def _ego_movements(j: JunctionInfo, a: ApproachInfo, req: Requirements) -> list:
    return [m for m in j.movements_of(a.id, req.ego_turn) if m.signal_group_id or not req.signal_needed]


def role_problem(j: JunctionInfo, a: ApproachInfo, role: str, turn: str, ego_moves: Sequence,
                 run_up_m: float = 0.0) -> str | None:
    """Why approach ``a`` (as the ego's, with these ego movements) cannot host ``role`` (None: it can)."""
    if role in EGO_LANE_ROLES:
        lanes = {m.from_lane_id for m in ego_moves}
        if any(m.from_lane_id in lanes for m in j.movements_of(a.id, turn)):
            return None
        return f"no {turn} movement from the ego's lane for the {role} vehicle"
    if role == AgentRole.BACKGROUND.value:
        return None if any(j.movements_of(b.id, turn) for b in j.approaches) else f"no {turn} movement for background"
    if role == AgentRole.CROSS.value:
        lo, hi = PERPENDICULAR
        others = [b for b in j.approaches if b.id != a.id and lo <= heading_gap_rad(b.heading_rad, a.heading_rad) <= hi]
        what = "perpendicular approach"
    elif role == AgentRole.OPPOSING.value:
        others = [b for b in j.approaches
                  if b.id != a.id and heading_gap_rad(b.heading_rad, a.heading_rad) >= OPPOSITE_MIN_RAD]
        what = "opposing approach"
    else:
        return f"unknown role {role!r}"
    if not others:
        return f"no {what}"
    ego_ids = {m.id for m in ego_moves}
    short = False
    for b in others:
        for m in j.movements_of(b.id, turn):
            if ego_ids & set(m.conflicts):
                if b.run_up_m + 1e-6 >= run_up_m:
                    return None
                short = True
    if not any(j.movements_of(b.id, turn) for b in others):
        return f"no {turn} movement on a {what}"
    if short:
        return f"too little run-up on the {what} (about {run_up_m:.0f} m needed)"
    return f"no {what} {turn} movement conflicts with the ego's {ego_moves[0].turn if ego_moves else ''} movement".replace("  ", " ")


def ego_problem(j: JunctionInfo, a: ApproachInfo, req: Requirements) -> tuple[str, str] | None:
    """(constraint, reason) why ``a`` cannot be the ego approach under ``req`` (None: it can)."""
    if not j.movements_of(a.id, req.ego_turn):
        return "ego_movement", f"no {req.ego_turn} movement"
    moves = _ego_movements(j, a, req)
    if not moves:
        return "ego_movement", f"the {req.ego_turn} movement has no signal group"
    if a.run_up_m + 1e-6 < req.ego_run_up_m:
        return "run_up", f"{a.run_up_m:.0f} m of run-up, {req.ego_run_up_m:.0f} m needed"
    if req.corridor and len(a.chain_ahead) < max(1, req.junctions_ahead):
        if not a.chain_ahead:
            return "corridor", "no junction ahead along the road"
        return "corridor", f"{len(a.chain_ahead)} junctions ahead along the road, {req.junctions_ahead} needed"
    for k, (_aid, role, turn) in enumerate(req.roles):
        need = req.role_run_up_m[k] if k < len(req.role_run_up_m) else 0.0
        why = role_problem(j, a, role, turn, moves, need)
        if why:
            return "roles", why
    return None


JUNCTION_CONSTRAINTS = ("town", "signalized", "junction_kind", "approach_count")
CONSTRAINT_ORDER = (*JUNCTION_CONSTRAINTS, "ego_movement", "run_up", "corridor", "roles")


def junction_problem(j: JunctionInfo, req: Requirements, skip: frozenset[str] = frozenset()) -> str | None:
    if "town" not in skip and req.town is not None and j.map_name != req.town:
        return "town"
    if "signalized" not in skip and req.signalized is not None and j.signalized != req.signalized:
        return "signalized"
    if ("junction_kind" not in skip and req.junction_kind is not JunctionKind.ANY
            and req.junction_kind.value not in j.kinds):
        return "junction_kind"
    if "approach_count" not in skip and j.approach_count < req.min_approaches:
        return "approach_count"
    return None


@dataclass(frozen=True)
class CandidateSet:
    """What hybrid retrieval hands the planner: approaches of the best junctions, with scores."""

    query: str
    requirements: Requirements
    hits: tuple[Hit, ...]  # approach hits, best first (ego-eligible ones carry meta['ego_eligible'])
    junctions: tuple[tuple[str, str, float], ...]  # (map, junction id, score), best first
    eligible: dict[str, tuple[str, ...]]  # junction key "map/jid" -> ego-eligible approach doc ids
    considered: int  # junctions that passed the junction-level filters
    rejected: dict[str, int]  # constraint -> junctions it eliminated


class RetrievalIndex:
    """The three indexes over a catalogue + knowledge base, rebuilt when the catalogue changes or, with no
    knowledge base given, when the core catalogue's registered applications or fault operators do (a plug-in
    registered after the index was built is retrievable at the next search)."""

    def __init__(self, catalogue: MapCatalogue, knowledge: KnowledgeBase | None = None,
                 embedder: Embedder | str | None = None, *, embedding_cache: Path | None = None):
        self.catalogue = catalogue
        self._own_knowledge = knowledge is None  # follow the registries (load_knowledge) at each refresh
        self.knowledge = knowledge or load_knowledge()
        self._base = make_embedder(embedder) if isinstance(embedder, str) else (embedder or make_embedder(DEFAULT_EMBEDDER))
        self.embedding_cache = embedding_cache
        self._lock = threading.RLock()
        # query text -> its vector under the current embedder (a campaign's candidates share their world, and so their
        # query: ``spec_query`` reads no fault); emptied when the embedder is refitted
        self._queries: dict[str, np.ndarray] = {}
        self._version: str | None = None
        self.build_s = 0.0
        self.refresh()

    # ---------------------------------------------------------------- build
    def _docs(self) -> dict[str, list[Doc]]:
        approaches = [approach_doc(j, a) for j in self.catalogue.junctions() for a in j.approaches]
        knowledge = [Doc(n.id, "knowledge", n.text, {"title": n.title, **n.facts}) for n in self.knowledge.of_kind("knowledge")]
        behaviours = [Doc(n.id, "behaviours", n.text, {"title": n.title, **n.facts})
                      for n in self.knowledge.of_kind("behaviours")]
        return {"approaches": approaches, "knowledge": knowledge, "behaviours": behaviours}

    def _embed_docs(self, texts: list[str]) -> np.ndarray:
        if self.embedding_cache is None or self.embedder.name == "lexical":
            return self.embedder.embed(texts)
        if isinstance(self.embedder, HybridEmbedder):  # cache the expensive parts one by one
            blocks = [self._embed_with(p, texts) * np.float32(math.sqrt(w))
                      for p, w in zip(self.embedder.parts, self.embedder.weights, strict=True)]
            return l2_normalize(np.concatenate(blocks, axis=1))
        return self._embed_with(self.embedder, texts)

    def _embed_with(self, embedder: Embedder, texts: list[str]) -> np.ndarray:
        if embedder.name == "lexical" or self.embedding_cache is None:
            return embedder.embed(texts)
        h = hashlib.sha256(embedder.name.encode())
        for t in texts:
            h.update(t.encode("utf-8") + b"\0")
        path = Path(self.embedding_cache) / f"emb.{embedder.name}.{h.hexdigest()[:24]}.npy"
        if path.is_file():
            try:
                arr = np.load(path)
                if arr.shape == (len(texts), embedder.dim):
                    return arr.astype(np.float32)
            except (OSError, ValueError):
                pass
        arr = embedder.embed(texts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, arr)
        except OSError:
            pass
        return arr

    def refresh(self) -> None:
        """(Re)build the indexes if the catalogue's version or the knowledge base changed."""
        import time

        with self._lock:
            version = self.catalogue.version
            knowledge = load_knowledge(self.knowledge.version) if self._own_knowledge else self.knowledge
            if version == self._version and knowledge is self.knowledge:
                return
            self.knowledge = knowledge
            t0 = time.perf_counter()
            docs = self._docs()
            corpus = [d.text for ds in docs.values() for d in ds]
            self.embedder = self._base.fit(corpus)
            self._queries = {}
            self.indexes = {kind: FlatIndex(ds, self._embed_docs([d.text for d in ds]) if ds
                                            else np.zeros((0, self.embedder.dim), np.float32))
                            for kind, ds in docs.items()}
            self._row = {kind: {d.id: i for i, d in enumerate(ix.docs)} for kind, ix in self.indexes.items()}
            self._version = version
            self.build_s = time.perf_counter() - t0

    @property
    def version(self) -> str:
        return f"{self._version}:{self.embedder.name}:{self.knowledge.version}"

    @property
    def memory_bytes(self) -> int:
        return sum(ix.memory_bytes for ix in self.indexes.values())

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector (read-only), remembered for the last 256 query texts."""
        queries = self._queries
        vec = queries.get(text)
        if vec is None:
            vec = self.embedder.embed([text])[0]
            vec.setflags(write=False)
            if len(queries) >= 256:
                queries.clear()
            queries[text] = vec
        return vec

    # ---------------------------------------------------------------- plain search
    def search(self, kind: str, query: str, k: int = 5, seed: int = 0,
               where: Callable[[Doc], bool] | None = None, qvec: np.ndarray | None = None) -> list[Hit]:
        """Top ``k`` documents of ``kind`` for ``query`` (after an optional metadata filter)."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; one of {KINDS}")
        self.refresh()
        ix = self.indexes[kind]
        allowed = None
        if where is not None:
            allowed = np.array([i for i, d in enumerate(ix.docs) if where(d)], dtype=np.int64)
        q = self.embed_query(query) if qvec is None else qvec
        n = len(ix) if allowed is None else len(allowed)
        want = min(n, max(4 * k, k + 16))
        res = ix.search(q, want, allowed)
        if len(res) > k and want < n and round(res[-1][1], SCORE_DIGITS) == round(res[k - 1][1], SCORE_DIGITS):
            res = ix.search(q, n, allowed)  # ties reach past the window: order all of them
        ordered = _tie_order([(ix.ids[r], s) for r, s in res], seed, _KIND_SALT[kind])[:k]
        out = []
        for did, s in ordered:
            d = ix.docs[self._row[kind][did]]
            out.append(Hit(HIT_KIND[kind], did, round(min(max(s, 0.0), 1.0), SCORE_DIGITS),
                           f"similarity {s:.3f} to the query", d.meta))
        return out

    def doc(self, kind: str, doc_id: str) -> Doc:
        return self.indexes[kind].docs[self._row[kind][doc_id]]

    # ---------------------------------------------------------------- hybrid (spec)
    def candidates_for(self, spec: ScenarioSpec, query: str, *, k_junctions: int = DEFAULT_JUNCTIONS) -> CandidateSet:
        """Hard filters from the spec, then similarity; raises FailedPrecondition with the nearest alternative."""
        self.refresh()
        req = requirements(spec)
        if req.town is not None:
            name = self.catalogue.resolve_name(req.town)
            if name is None:
                known = sorted(self.catalogue.names())
                raise FailedPrecondition(f"town: map {req.town!r} is not in the catalogue",
                                         f"one of {known}" if known else "add a map to the catalogue")
            req = Requirements(**{**req.__dict__, "town": name})
        if APPLICATIONS[spec.application].kind is AppKind.SIGNAL and spec.map.signalized is False:
            raise FailedPrecondition(f"signalized: {spec.application.value} decides from SPaT and needs a signalized "
                                     "junction, but map.signalized is false", "set map.signalized to true or null")
        junctions = self.catalogue.junctions()
        rejected: dict[str, int] = {}
        passed: list[JunctionInfo] = []
        for j in junctions:
            why = junction_problem(j, req)
            if why:
                rejected[why] = rejected.get(why, 0) + 1
            else:
                passed.append(j)
        eligible: dict[str, list[ApproachInfo]] = {}
        for j in passed:
            ok = [a for a in j.approaches if ego_problem(j, a, req) is None]
            if ok:
                eligible[f"{j.map_name}/{j.id}"] = ok
            else:
                worst = _first_failed(j, req)
                rejected[worst] = rejected.get(worst, 0) + 1
        if req.whole_corridor:  # only the approaches that start their map's longest chain
            longest: dict[str, int] = {}
            for key, ok in eligible.items():
                town = key.split("/")[0]
                longest[town] = max(longest.get(town, 0), *(len(a.chain_ahead) for a in ok))
            eligible = {key: kept for key, ok in eligible.items()
                        if (kept := [a for a in ok if len(a.chain_ahead) == longest[key.split("/")[0]]])}
        if not eligible:
            raise self._infeasible(req, spec, passed, rejected)
        q = self.embed_query(query)
        ix = self.indexes["approaches"]
        rows = np.array(sorted(self._row["approaches"][approach_id(j.map_name, a.id)]
                               for j in passed for a in j.approaches), dtype=np.int64)
        scored = {ix.ids[r]: s for r, s in ix.search(q, len(rows), rows)}
        ego_ids = {approach_id(key.split("/")[0], a.id) for key, ok in eligible.items() for a in ok}
        jscore = []
        for key, ok in eligible.items():
            best = max(scored[approach_id(key.split("/")[0], a.id)] for a in ok)
            jscore.append((key, best))
        jorder = _tie_order(jscore, spec.seed, 11)[:max(1, k_junctions)]
        hits: list[Hit] = []
        chosen: list[tuple[str, str, float]] = []
        by_key = {f"{j.map_name}/{j.id}": j for j in passed}
        for key, js in jorder:
            j = by_key[key]
            chosen.append((j.map_name, j.id, round(js, SCORE_DIGITS)))
            items = [(approach_id(j.map_name, a.id), scored[approach_id(j.map_name, a.id)]) for a in j.approaches]
            for did, s in _tie_order(items, spec.seed, 12):
                eg = did in ego_ids
                reason = (f"{'ego-eligible' if eg else 'other'} approach of {j.map_name} {j.id}; similarity {s:.3f}")
                hits.append(Hit("approach", did, round(min(max(s, 0.0), 1.0), SCORE_DIGITS), reason,
                                {**ix.docs[self._row['approaches'][did]].meta, "ego_eligible": eg}))
        return CandidateSet(query, req, tuple(hits), tuple(chosen),
                            {k: tuple(approach_id(k.split("/")[0], a.id) for a in v) for k, v in eligible.items()},
                            len(passed), rejected)

    def _infeasible(self, req: Requirements, spec: ScenarioSpec, passed: list[JunctionInfo],
                    rejected: dict[str, int]) -> FailedPrecondition:
        scope = req.town or "any catalogued map"
        junctions = self.catalogue.junctions()
        # the first constraint in CONSTRAINT_ORDER that leaves nothing
        survivors = junctions
        failed = "roles"
        for name in CONSTRAINT_ORDER:
            if name in JUNCTION_CONSTRAINTS:
                nxt = [j for j in survivors if junction_problem(j, req, frozenset(set(JUNCTION_CONSTRAINTS) - {name}))
                       is None]
            else:
                nxt = [j for j in survivors if _passes_upto(j, req, name)]
            if not nxt:
                failed = name
                break
            survivors = nxt
        constraint = _constraint_text(failed, req, spec, scope, survivors)
        return FailedPrecondition(constraint, self._alternative(req, failed, spec))

    def _alternative(self, req: Requirements, failed: str, spec: ScenarioSpec) -> str:
        junctions = self.catalogue.junctions()

        def feasible(r: Requirements, skip: frozenset[str] = frozenset()) -> list[JunctionInfo]:
            return [j for j in junctions if junction_problem(j, r, skip) is None
                    and any(ego_problem(j, a, r) is None for a in j.approaches)]

        def rank(js: list[JunctionInfo]) -> JunctionInfo:
            q = self.embed_query(spec_query(spec))
            ix = self.indexes["approaches"]
            best = None
            for j in js:
                s = max(float(ix.vectors[self._row["approaches"][approach_id(j.map_name, a.id)]] @ q)
                        for a in j.approaches)
                if best is None or (round(s, SCORE_DIGITS), j.map_name, j.id) > (round(best[0], SCORE_DIGITS),
                                                                                  best[1].map_name, best[1].id):
                    best = (s, j)
            assert best is not None
            return best[1]

        if failed == "corridor" and req.junctions_ahead > 1:  # a traversal longer than any road: the longest one
            most = max((len(a.chain_ahead) for j in junctions if junction_problem(j, req) is None
                        for a in j.approaches if _ego_movements(j, a, req)), default=0)
            if most >= 1:
                return f"map.junctions_ahead <= {most}" + (f" in {req.town}" if req.town else "")
        if failed == "run_up":  # the same place with a shorter start, if it has some road
            best = max((a.run_up_m for j in junctions if junction_problem(j, req) is None for a in j.approaches
                        if _ego_movements(j, a, req)), default=0.0)
            start = math.floor(best - VEHICLE_LENGTH_M - RUN_UP_MARGIN_M)
            if start >= 10:
                shorter = f"ego.start_distance_m <= {start}" + (f" in {req.town}" if req.town else "")
                if req.town is not None:
                    other = feasible(Requirements(**{**req.__dict__, "town": None}))
                    if other:
                        j = rank(other)
                        return f"{shorter}, or {j.map_name} junction {j.id} ({', '.join(j.kinds) or 'junction'})"
                return shorter
        if req.town is not None:
            other = feasible(Requirements(**{**req.__dict__, "town": None}))
            if other:
                j = rank(other)
                return f"{j.map_name} junction {j.id} ({', '.join(j.kinds) or 'junction'})"
        if req.junction_kind is not JunctionKind.ANY or req.min_approaches > 3:
            for kind in (JunctionKind.SIGNALIZED_4WAY, JunctionKind.T_JUNCTION, JunctionKind.CORRIDOR,
                         JunctionKind.URBAN_CANYON, JunctionKind.ANY):
                if kind is req.junction_kind:
                    continue
                alt = Requirements(**{**req.__dict__, "junction_kind": kind, "min_approaches": 3})
                js = feasible(alt) or feasible(Requirements(**{**alt.__dict__, "town": None}))
                if js:
                    j = rank(js)
                    return (f"use junction_kind {kind.value} (e.g. {j.map_name} junction {j.id})"
                            if kind is not JunctionKind.ANY else f"{j.map_name} junction {j.id}")
        if req.signalized is True and spec.map.signalized is None and \
                APPLICATIONS[spec.application].kind is not AppKind.SIGNAL:
            js = feasible(Requirements(**{**req.__dict__, "signalized": None}))
            if js:
                j = rank(js)
                return f"set map.signalized to null (e.g. {j.map_name} junction {j.id})"
        relaxed = feasible(Requirements(**{**req.__dict__, "town": None, "junction_kind": JunctionKind.ANY,
                                           "min_approaches": 3}))
        if relaxed:
            j = rank(relaxed)
            return f"{j.map_name} junction {j.id} ({', '.join(j.kinds) or 'junction'})"
        return "change the ego manoeuvre or the agent roles; no catalogued junction hosts this scene"


def _first_failed(j: JunctionInfo, req: Requirements) -> str:
    order = {c: i for i, c in enumerate(CONSTRAINT_ORDER)}
    worst = None
    for a in j.approaches:
        why = ego_problem(j, a, req)
        if why is not None and (worst is None or order[why[0]] > order[worst]):
            worst = why[0]
    return worst or "ego_movement"


def _passes_upto(j: JunctionInfo, req: Requirements, name: str) -> bool:
    """Some approach passes every ego-level constraint up to and including ``name``."""
    order = CONSTRAINT_ORDER.index(name)
    for a in j.approaches:
        why = ego_problem(j, a, req)
        if why is None or CONSTRAINT_ORDER.index(why[0]) > order:
            return True
    return False


def _constraint_text(failed: str, req: Requirements, spec: ScenarioSpec, scope: str,
                     survivors: list[JunctionInfo]) -> str:
    what = req.describe()
    if failed == "town":
        return f"town: no junctions in {scope}"
    if failed == "signalized":
        return f"signalized: no {'signalized' if req.signalized else 'unsignalized'} junction in {scope}"
    if failed == "junction_kind":
        return f"junction_kind: no {what} in {scope}"
    if failed == "approach_count":
        return f"approach_count: no {what} with at least {req.min_approaches} approaches in {scope}"
    sig = "signalized " if req.signal_needed else ""
    if failed == "ego_movement":
        return f"ego_movement: no {what} in {scope} offers a {sig}{req.ego_turn} ego movement"
    if failed == "run_up":
        return (f"run_up: no {sig}{req.ego_turn} approach of a {what} in {scope} has {req.ego_run_up_m:.0f} m "
                f"of road before its stop bar for ego.start_distance_m = {spec.ego.start_distance_m:g}")
    if failed == "corridor":
        if req.junctions_ahead > 1:
            return (f"corridor: no {what} in {scope} has {req.junctions_ahead} junctions ahead along the road "
                    f"({req.junctions_ahead + 1} in a row)")
        return f"corridor: no {what} in {scope} has a junction ahead along the road for an RSU chain"
    reasons: dict[str, int] = {}
    for j in survivors:
        for a in j.approaches:
            why = ego_problem(j, a, req)
            if why is not None and why[0] == "roles":
                reasons[why[1]] = reasons.get(why[1], 0) + 1
    top = max(sorted(reasons), key=lambda r: reasons[r]) if reasons else "the roles do not fit"
    shape = "T-junction" if survivors and all(j.approach_count == 3 for j in survivors) else what
    return f"roles: {shape} in {scope} has {top} for {spec.application.value}"


def spec_query(spec: ScenarioSpec) -> str:
    """The text a spec retrieves approaches with (intent + what the spec says about the place)."""
    app = APPLICATIONS[spec.application]
    req = requirements(spec)
    words = [app.title, spec.application.value, *app.synonyms[:2]]
    if req.signalized is True:
        words.append("signalized intersection with traffic lights, SPaT")
    elif req.signalized is False:
        words.append("unsignalized intersection")
    elif spec.application.value == "IMA":
        words.append("unsignalized crossroads, cross traffic")
    if spec.map.junction_kind is not JunctionKind.ANY:
        words.append(KIND_WORDS.get(spec.map.junction_kind.value, spec.map.junction_kind.value))
    if spec.map.town:
        words.append(f"map {canonical_map_name(spec.map.town)}")
    words.append(f"ego {spec.ego.maneuver.value} movement")
    for a in spec.agents:
        words.append({"cross": "cross traffic from a perpendicular approach",
                      "opposing": "opposite approach with oncoming traffic", "lead": "lead vehicle ahead",
                      "relay": "relay vehicle", "follower": "following vehicle behind the ego",
                      "background": "background traffic"}[a.role.value])
    if spec.map.busy:
        words.append("busy intersection with traffic on every approach")
    if spec.v2x.rsu_placement is RsuPlacement.CHAIN or spec.v2x.spat_relay:
        words.append("corridor RSU chain junctions ahead")
    if spec.intent:
        words.append(spec.intent)
    return ". ".join(words)


__all__ = ["KINDS", "CandidateSet", "Doc", "FlatIndex", "Hit", "Requirements", "RetrievalIndex", "approach_doc",
           "approach_id", "ego_problem", "junction_problem", "requirements", "role_problem", "spec_query"]
