"""Adding a fault operator or an application = one implementation + one catalogue entry (issue 39).

A throwaway operator (``zz_spat_lag``: SPaT held back by ``magnitude`` seconds, named "zzblurred" in an
intent) and a throwaway application (``ZZGLOW``: a signal application named "zz glow warning", deciding
with RLVW's rule) are registered here, in this test alone (every registry is restored afterwards), and
one intent that names both runs the whole chain: parse (offline grammar) -> verify -> ground (the
synthetic crossing the search's bench uses) -> execute (paired run, admitted) -> shrink (1-minimal, the
operator's magnitude halved as its catalogue entry says). The OpenAI backend's parser prompt and the spec
schema offer both, and grounding's knowledge index retrieves their notes. No other file names either of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from lastv2x.core import catalogue as cat
from lastv2x.core.catalogue import (
    APPLICATIONS,
    FAULT_OPERATORS,
    Application,
    Stream,
    extension_member,
)
from lastv2x.core.spec import FaultOperator, spec_json_schema
from lastv2x.core.synthetic import program_from_spec_on_straight_roads
from lastv2x.core.verifier import verify
from services.grounding.catalogue import CatalogueConfig, MapCatalogue
from services.grounding.index import RetrievalIndex
from services.grounding.knowledge import load_knowledge
from services.llm.backends.openai_compat import OpenAIBackend
from services.llm.config import LlmConfig, OpenAIConfig
from services.llm.fake_openai_server import FakeOpenAIServer, offline_model
from services.llm.roles import LlmRoles
from services.search.shrink import Shrinker, Verdict
from services.simulator import apps
from services.simulator.apps import signal
from services.simulator.execute import SimulatorLimits, run_one
from services.simulator.v2x import faults as sim_faults
from tests.search.straight_roads import admission_on_straight_roads

OPERATOR = "zz_spat_lag"
APP = "ZZGLOW"
INTENT = "Check that zz glow warning stays safe when the SPaT feed gets zzblurred by 4 s just before amber."


class _Lag:
    """The operator's one class: every matching row is held back by the fault's magnitude."""

    name = OPERATOR

    def apply(self, fault: sim_faults.ActiveFault, step: sim_faults.StepBatch, rows: sim_faults.BoolArray) -> int:
        return sim_faults.OPERATORS["delay"].apply(fault, step, rows)


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[Application]:
    for registry in (FAULT_OPERATORS, APPLICATIONS, sim_faults.OPERATORS, apps.APPS):
        monkeypatch.setattr(registry, "_items", dict(registry._items))
    monkeypatch.setattr(cat, "_EXTENSION_APPS", set())
    for enum in (Application, FaultOperator):
        monkeypatch.setattr(enum, "_value2member_map_", dict(enum._value2member_map_))
    # the operator: one catalogue entry + one class
    cat.register_fault_operator(cat.FaultOperatorInfo(
        OPERATOR, cat.FaultKind.TEMPORAL, cat.FailureClass.STALE_BUT_DETECTABLE, (Stream.SPAT,), "*", "s",
        (0.05, 20.0), False, "Hold every SPaT message back by `magnitude` seconds (a test operator).",
        cues=(r"\bzzblur\w*",), default_magnitude=3.0, cue_families=("late",),
        tolerance="latency"))
    sim_faults.register_operator(_Lag())
    # the application: one catalogue entry + one decide function
    app = extension_member(Application, APP)
    cat.register_application(dataclasses.replace(
        APPLICATIONS[Application.RLVW], name=app, title="ZZ glow warning", synonyms=("zz glow warning",)))
    apps.register(app, signal.rlvw)
    yield app


def test_a_registered_operator_and_application_run_the_whole_chain(plugins: Application) -> None:
    # parse (the offline grammar reads the operator's and the application's wording from the catalogue)
    parsed = LlmRoles(config=LlmConfig()).parse_intent(INTENT, seed=3)
    assert parsed.ok, parsed.findings
    spec = parsed.spec
    assert spec.application is plugins
    (fault,) = spec.faults
    assert (fault.operator.value, fault.stream, fault.magnitude) == (OPERATOR, Stream.SPAT, 4.0)
    assert fault.anchor is not None and fault.anchor.event is not None and fault.anchor.event.value == "amber_onset"
    # verify
    report = verify(spec)
    assert report.ok, report.findings
    # ground
    program = program_from_spec_on_straight_roads(spec)
    assert program.application is plugins and program.faults[0].fault.operator.value == OPERATOR
    # execute: the message-driven ego enters on red, its ground-truth twin does not
    outcome, _ = run_one(program, None, SimulatorLimits())
    assert outcome.admitted and "red_entry" in outcome.md.violations and not outcome.gt.violations

    # shrink: what "weaker" means for the operator comes from its catalogue entry (its magnitude range)
    run = admission_on_straight_roads()
    result = Shrinker(run, max_calls=40).run(spec)
    assert result.complete and run(result.spec) is Verdict.ADMITTED
    assert [f.operator.value for f in result.spec.faults] == [OPERATOR]
    passes = {e.pass_name for e in result.certificate}
    assert {"remove_fault", "halve_magnitude"} <= passes, passes


@pytest.fixture
def index_before(tmp_path: Path) -> RetrievalIndex:
    """A retrieval index over the built-in maps, built before the plug-ins are registered."""
    cat_ = MapCatalogue(CatalogueConfig(cache_dir=tmp_path / "cache", map_cache_dir=tmp_path / "maps"))
    return RetrievalIndex(cat_)


def test_grounding_knowledge_has_an_entry_for_each_registered_one(index_before: RetrievalIndex,
                                                                   plugins: Application) -> None:
    """The knowledge notes come from the catalogue entries (no prose file names the plug-ins), and an index
    built before they were registered retrieves them at its next search."""
    kb = load_knowledge()
    op_note, app_note = kb.get(f"fault:{OPERATOR}"), kb.get(f"app:{APP}")
    assert "Hold every SPaT message back" in op_note.text and "zzblur" in op_note.text
    assert op_note.facts["streams"] == ["SPAT"] and op_note.facts["magnitude_unit"] == "s"
    assert "zz glow warning" in app_note.text and app_note.facts["decision_rule"] == APPLICATIONS[plugins].decision_rule
    hits = index_before.search("knowledge", "zzblurred SPaT", 3)
    assert hits[0].id == f"fault:{OPERATOR}", hits
    assert index_before.search("knowledge", "zz glow warning application", 3)[0].id == f"app:{APP}"


def test_the_openai_prompt_and_schema_offer_the_registered_ones(plugins: Application) -> None:
    """The parser prompt's lists and the ScenarioSpec schema's enums are read from the registries when a
    request is made, so the plug-ins registered after import are offered like the built-in ones."""
    schema = spec_json_schema()["$defs"]
    assert OPERATOR in schema["FaultOperator"]["enum"] and APP in schema["Application"]["enum"]
    with FakeOpenAIServer(offline_model) as server:
        backend = OpenAIBackend(OpenAIConfig(base_url=server.url, model="fake-gpt", timeout_s=5.0),
                                sleep=lambda _s: None, environ={"OPENAI_API_KEY": "sk-test"})
        parsed = LlmRoles(backend).parse_intent(INTENT, seed=3)
        body = server.requests[0]
    assert parsed.ok and parsed.spec.application is plugins, parsed.findings
    system = body["messages"][0]["content"]
    assert f"{OPERATOR} (SPAT; s)" in system and f"{APP} (ZZ glow warning)" in system
    sent = body["response_format"]["json_schema"]["schema"]["$defs"]
    assert OPERATOR in sent["FaultOperator"]["enum"] and APP in sent["Application"]["enum"]


def test_the_no_silent_drop_guard_accepts_the_operator_for_the_words_its_entry_declares(plugins: Application) -> None:
    """Its catalogue entry says "late" words describe it: a clause saying the SPaT comes in late is covered by it
    as by delay (the guard's vocabulary is its own; only the operator families come from the catalogue)."""
    from services.llm import fault_cues

    text = "Check the zz glow warning when SPaT messages arrive 4 s late."
    (cue,) = fault_cues.detect(text)
    assert {OPERATOR, "delay"} <= cue.operators
    assert fault_cues.unparsed(text, [OPERATOR]) == []  # covered by its own family, not only by the fallback


def test_the_verifier_and_reflector_read_its_tolerance_from_its_entry(plugins: Application) -> None:
    """Its entry names the "latency" tolerance: the reflector raises a tolerated magnitude past the budget as it
    does a delay's (lastv2x.core.tolerance holds the one limit)."""
    from services.llm.evidence import EvidenceDigest

    d = EvidenceDigest.from_dict({"application": APP, "admitted": False, "decision_epoch_s": 6.0,
                                  "failure_margin": 1e6, "decision_epoch_aoi_s": {"SPAT": 0.4},
                                  "faults": [{"name": "f", "operator": OPERATOR, "stream": "SPAT",
                                              "window_start_s": 4.0, "magnitude": 0.3}]})
    ref = LlmRoles(config=LlmConfig()).reflect(INTENT, d, spec={"application": APP, "faults": [{}]})
    assert ref.rule_ids == ("magnitude_below_threshold",)
    assert [(e.path, e.value) for e in ref.edits] == [("faults[0].magnitude", 1.2)]


def test_the_registries_are_the_builtin_ones_again() -> None:
    assert OPERATOR not in FAULT_OPERATORS and APP not in [a.value for a in APPLICATIONS]
    schema = spec_json_schema()["$defs"]
    assert OPERATOR not in schema["FaultOperator"]["enum"] and APP not in schema["Application"]["enum"]
    assert not {f"fault:{OPERATOR}", f"app:{APP}"} & {n.id for n in load_knowledge().notes}
    with pytest.raises(ValueError):
        FaultOperator(OPERATOR)

