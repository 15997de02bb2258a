"""Grounding (LAST-V2X Module II): spec -> retrieved junction -> validated roles -> ScenarioProgram.

``ground(spec, catalogue, planner=None)``:

1. **retrieve** candidate approaches (hybrid: hard filters from the spec, then
   similarity; :meth:`services.grounding.index.RetrievalIndex.candidates_for`);
2. **plan**: the scene-planner role maps semantic roles (ego, cross, opposing,
   lead, relay, background) onto *candidate ids*; the default is the LLM service's
   scene-planner role in-process (``LlmRoles().plan_scene``; its offline ``solve`` +
   ``validate_plan`` when no LLM backend can be built). Only candidate ids are
   accepted; a plan that fails validation is recorded and the deterministic
   built-in planner decides instead;
3. **validate** lane assignments against the catalogue: the ego's movement exists
   on its approach (under a signal group when the application needs one); cross
   traffic comes from a perpendicular approach and its movement has a conflict
   point with the ego's; opposing traffic comes from the opposite approach and
   conflicts with the ego's turn; leads and relays drive on the ego's lane, ahead;
4. **assemble**: route polylines from the RoadMap route API (upstream run-up,
   approach lane, junction movement, exit lanes), start positions so conflict
   agents reach the conflict point ``arrival_offset_s`` after the ego (constant
   speeds, as the verifier's closed form) and leads start ``gap_m`` ahead, RSUs (one
   at the junction, or a chain along the corridor; RSU_SELECTION substream),
   fixed-time plans for every signal group (the ego's axis follows ``spec.signal``,
   the crossing axis the cross-group definition of ``lastv2x.core.timeline``), driver
   profiles and fault references resolved to ids, and a GroundingRecord saying
   what was retrieved, the scores and why it was chosen.

Infeasible specs raise ``FailedPrecondition(constraint, alternative)``; a fault that
names a sender or signal group the scene lacks raises ``InvalidArgument``. Same spec +
seed + catalogue -> byte-identical program JSON.

This module is the grounder (retrieve, plan, assemble, and on a placement failure retry
at the next retrieved junctions); the steps live in ``planning`` (2), ``selection`` (3)
and ``assemble`` (4); retrieval in ``index``, the map catalogue in ``catalogue``.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from lastv2x.core import perception, variation
from lastv2x.core.errors import FailedPrecondition
from lastv2x.core.program import ScenarioProgram
from lastv2x.core.spec import ScenarioSpec
from services.grounding.assemble import GroundOptions, ProgramAssembler
from services.grounding.catalogue import MapCatalogue
from services.grounding.index import CandidateSet, Hit, RetrievalIndex, requirements, spec_query
from services.grounding.planning import (
    BuiltinPlanner,
    Planner,
    backend_said,
    default_planner,
    parse_assignments,
    planner_candidates,
)
from services.grounding.selection import PlanRejected, Selection, validate_selection

MAX_RETRIES = 8  # junctions tried after the planner's choice fails placement


@dataclass
class Grounder:
    """Holds the catalogue, the retrieval index and the planner; ``ground(spec)`` is thread-safe."""

    catalogue: MapCatalogue
    index: RetrievalIndex | None = None
    planner: Planner | None = None
    options: GroundOptions = field(default_factory=GroundOptions)
    planner_backend: str = ""

    def __post_init__(self) -> None:
        if self.index is None:
            self.index = index_for(self.catalogue)
        if self.planner is None:
            self.planner, self.planner_backend = default_planner()
        elif not self.planner_backend:
            self.planner_backend = str(getattr(self.planner, "backend", None) or getattr(
                self.planner, "__name__", type(self.planner).__name__))

    # ---------------------------------------------------------------- retrieve + plan
    def retrieve(self, spec: ScenarioSpec) -> CandidateSet:
        assert self.index is not None
        return self.index.candidates_for(spec, spec_query(spec), k_junctions=self.options.k_junctions)

    def plan(self, spec: ScenarioSpec, cands: CandidateSet) -> tuple[Selection, str, list[str]]:
        notes: list[str] = []
        ids = {h.id for h in cands.hits}
        if self.planner is not None:
            pcands = planner_candidates(cands, self.catalogue)
            try:
                out = self.planner(spec, pcands)
                assignment = parse_assignments(out, spec, ids)
                said = backend_said(out)
                backend = f"{self.planner_backend}:{said}" if said else self.planner_backend
                return validate_selection(spec, assignment, cands, self.catalogue), backend, notes
            except PlanRejected as exc:
                notes.append(f"planner {self.planner_backend} rejected: {'; '.join(exc.reasons)[:500]}")
            except FailedPrecondition as exc:
                notes.append(f"planner {self.planner_backend} found no plan: {exc}"[:500])
            except Exception as exc:  # an LLM planner may fail in any way; the built-in one decides then
                notes.append(f"planner {self.planner_backend} failed: {type(exc).__name__}: {exc}"[:500])
        builtin = BuiltinPlanner(cands, self.catalogue)
        try:
            assignment = parse_assignments(builtin(spec, ()), spec, ids)
            return validate_selection(spec, assignment, cands, self.catalogue), "builtin", notes
        except PlanRejected as exc:
            top = cands.junctions[0]
            raise FailedPrecondition(f"roles: no valid role assignment at the retrieved junctions: "
                                     f"{'; '.join(exc.reasons)}", f"{top[0]} junction {top[1]} with other "
                                     "agent manoeuvres, or another junction_kind") from None

    # ---------------------------------------------------------------- ground
    def ground(self, spec: ScenarioSpec) -> ScenarioProgram:
        """The spec on a catalogued map; its ``variation`` is drawn from its seed first
        (``lastv2x.core.variation``: speeds and arrival offsets before placement, reaction times
        and background traffic on the program)."""
        drawn = variation.draw(spec)
        if drawn is None:
            return perception.finish(self._ground(spec), spec)
        try:
            return perception.finish(variation.apply(self._ground(drawn.spec), drawn), spec)
        except FailedPrecondition as exc:  # say the world this seed drew is what does not fit
            raise FailedPrecondition(f"{exc.constraint} (seed {spec.seed} drew {drawn.record})",
                                     f"{exc.alternative}, or narrower variation bounds, or another seed") from None

    def _ground(self, spec: ScenarioSpec) -> ScenarioProgram:
        assert self.index is not None
        cands = self.retrieve(spec)
        sel, backend, plan_notes = self.plan(spec, cands)
        try:
            return self.assemble(spec, cands, sel, backend, plan_notes)
        except FailedPrecondition as first:  # a fault naming what the scene lacks is InvalidArgument: no retry
            # placement failed at this junction (run-up, timing): the next retrieved junctions may fit
            tried = {(sel.junction.map_name, sel.junction.id)}
            notes = [*plan_notes, f"{sel.junction.map_name} {sel.junction.id} failed: {first.constraint}"]
            more = self.index.candidates_for(spec, cands.query, k_junctions=self.options.k_junctions + MAX_RETRIES)
            for _ in range(MAX_RETRIES):
                sub = _without(more, tried)
                sub = _first_junctions(sub, self.options.k_junctions)
                if not sub.junctions:
                    break
                try:
                    sel, backend, extra = self.plan(spec, sub)
                except FailedPrecondition:
                    tried |= {(m, jid) for m, jid, _ in sub.junctions}
                    continue
                try:
                    return self.assemble(spec, sub, sel, backend, notes + extra)
                except FailedPrecondition as exc:
                    tried.add((sel.junction.map_name, sel.junction.id))
                    notes.append(f"{sel.junction.map_name} {sel.junction.id} failed: {exc.constraint}")
            raise first from None

    def assemble(self, spec: ScenarioSpec, cands: CandidateSet, sel: Selection, backend: str,
                 plan_notes: list[str]) -> ScenarioProgram:
        assert self.index is not None
        return ProgramAssembler(self.catalogue, self.index, self.options).assemble(spec, cands, sel, backend,
                                                                                  plan_notes)


def _first_junctions(cands: CandidateSet, k: int) -> CandidateSet:
    keep = cands.junctions[:k]
    keys = {(m, jid) for m, jid, _ in keep}
    hits = tuple(h for h in cands.hits if (h.meta["map"], h.meta["junction_id"]) in keys)
    return CandidateSet(cands.query, cands.requirements, hits, keep, cands.eligible, cands.considered, cands.rejected)


def _without(cands: CandidateSet, junctions: set[tuple[str, str]]) -> CandidateSet:
    """The candidate set less the approaches of these (map, junction id) pairs."""
    hits = tuple(h for h in cands.hits if (h.meta["map"], h.meta["junction_id"]) not in junctions)
    keep = tuple(jx for jx in cands.junctions if (jx[0], jx[1]) not in junctions)
    eligible = {k: v for k, v in cands.eligible.items() if tuple(k.split("/", 1)) not in junctions}
    return CandidateSet(cands.query, cands.requirements, hits, keep, eligible, cands.considered, cands.rejected)


_INDEXES: weakref.WeakKeyDictionary[MapCatalogue, RetrievalIndex] = weakref.WeakKeyDictionary()


def index_for(catalogue: MapCatalogue) -> RetrievalIndex:
    """The catalogue's default retrieval index, built once per catalogue (refreshed on change)."""
    ix = _INDEXES.get(catalogue)
    if ix is None:
        ix = RetrievalIndex(catalogue)
        _INDEXES[catalogue] = ix
    else:
        ix.refresh()
    return ix


def ground(spec: ScenarioSpec, catalogue: MapCatalogue, planner: Planner | None = None, *,
           index: RetrievalIndex | None = None, options: GroundOptions | None = None) -> ScenarioProgram:
    """Spec -> typed ScenarioProgram on a catalogued map (see the module docstring)."""
    g = Grounder(catalogue, index or index_for(catalogue), planner, options or GroundOptions())
    return g.ground(spec)


def hits_of(program: ScenarioProgram) -> list[Hit]:
    """The retrieval hits a program's GroundingRecord names (for the servicer's GroundingRecord message)."""
    return [Hit(h["kind"], h["id"], h["score"], h["reason"]) for h in program.grounding.details.get("hits", [])]


__all__ = ["BuiltinPlanner", "GroundOptions", "Grounder", "PlanRejected", "Planner", "Selection", "default_planner",
           "ground", "hits_of", "index_for", "parse_assignments", "planner_candidates", "requirements",
           "validate_selection"]
