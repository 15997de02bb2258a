"""ASAM's own Quality Checker bundles (asam-qc-opendrive, asam-qc-openscenarioxml; locked in the dev
extra) on every built-in map and on exported witnesses of each application: 0 issues at error and
warning level, no checker failing inside a bundle, and no rule skipped for version reasons.

The built-in maps declare OpenDRIVE 1.7. At 1.7 the OpenDRIVE bundle skips one rule, one it defines for
1.8 only (``junctions.connection.one_link_to_incoming``); so every map is also checked relabelled as 1.8,
where that rule runs: every rule of the bundle ran on every map and found nothing. A broken copy shows
the rules bite, and what the old 1.4 header did (the 1.7 rule skipped, its violation unseen).

The bundles run once for the whole session (one process per bundle over every file, :func:`qc_run`);
the tests read its reports. ``lastv2x witness export --check`` runs them once more, as a user would.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from lxml import etree

from lastv2x.core.catalogue import Application
from lastv2x_app.cli import main
from lastv2x_app.export import qc
from lastv2x_app.export.qc import Bundle, FileReport, check_files
from lastv2x_app.export.xosc import export_witness
from services.simulator.maps import builtin_map_names
from services.simulator.maps.builtin import builtin_sources

XODR_CHECKERS, XOSC_CHECKERS = 23, 17  # what the locked bundles define (a new bundle version says so here)


def _relabel(xodr: bytes, minor: int) -> bytes:
    out, n = re.subn(rb'revMajor="1" revMinor="\d+"', b'revMajor="1" revMinor="%d"' % minor, xodr, count=1)
    assert n == 1
    return out


def _broken(xodr: bytes) -> bytes:
    """A lane level that is true next to the centre line and false outside it on one road
    (``road.lane.level_true_one_side``, a rule from 1.7 on)."""
    doc = etree.fromstring(xodr)
    road = next(r for r in doc.iter("road") if len(r.findall(".//right/lane")) >= 2)
    lanes = {int(lane.get("id")): lane for lane in road.iter("lane")}
    lanes[-1].set("level", "true")
    lanes[-2].set("level", "false")
    return etree.tostring(doc, xml_declaration=True, encoding="UTF-8")


def _grounded_witnesses(cache: Path) -> list[SimpleNamespace]:
    """One witness-shaped export input per application: the program grounding makes of the grounding
    tests' spec of that application on its built-in map (what a witness of it holds)."""
    from services.grounding.catalogue import CatalogueConfig, MapCatalogue
    from services.grounding.ground import Grounder
    from services.grounding.index import RetrievalIndex
    from tests.grounding.test_ground import SPECS, _spec

    assert set(SPECS) == {a.value for a in Application}
    catalogue = MapCatalogue(CatalogueConfig(cache_dir=cache / "catalogue", map_cache_dir=cache / "maps"))
    grounder = Grounder(catalogue, RetrievalIndex(catalogue))
    out = []
    for app in sorted(SPECS):
        program = grounder.ground(_spec(app))
        wid = f"w-grounded-{app.lower()}"
        out.append(SimpleNamespace(id=wid, created_unix_s=1.7e9, outcome_json=b"{}",
                                   record={"witness_id": wid, "program_json": program.model_dump_json()}))
    return out


@pytest.fixture(scope="session")
def qc_run(witness_archive, tmp_path_factory) -> dict:
    """Every file of these tests checked in one run of each bundle; reports by file, a digest per xodr."""
    root = tmp_path_factory.mktemp("asam-qc")
    files: dict[str, Path] = {}

    def put(key: str, path: Path, data: bytes | None = None) -> None:
        if data is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        files[key] = path

    for name in builtin_map_names():
        xodr = builtin_sources(name)[0].encode()
        put(f"map:{name}", root / "maps" / f"{name}.xodr", xodr)
        put(f"map18:{name}", root / "maps-1.8" / f"{name}.xodr", _relabel(xodr, 8))
    broken = _broken(builtin_sources("signalized_4way")[0].encode())
    put("broken", root / "broken" / "signalized_4way.xodr", broken)
    put("broken14", root / "broken-1.4" / "signalized_4way.xodr", _relabel(broken, 4))

    core, cid = witness_archive
    witnesses = [*core.witnesses(cid), *_grounded_witnesses(root / "cache")]
    checked_xodr: dict[str, str] = {hashlib.sha256(files[f"map:{n}"].read_bytes()).hexdigest(): f"map:{n}"
                                     for n in builtin_map_names()}
    exports = {}
    for w in witnesses:
        result = export_witness(w, root / "export")  # OpenSCENARIO 1.2, the default
        exports[w.id] = result
        put(f"xosc:{w.id}", result.xosc)
        put(f"xosc13:{w.id}", export_witness(w, root / "export-1.3", osc_minor=3).xosc)
        digest = hashlib.sha256(result.xodr.read_bytes()).hexdigest()
        if digest not in checked_xodr:  # an exported built-in map is that map's bytes: checked once
            checked_xodr[digest] = f"xodr:{w.id}"
            put(f"xodr:{w.id}", result.xodr)
    # a copy of one export (its .xodr beside it) whose first entity reference names no entity
    first = exports[witnesses[0].id]
    bad = root / "bad-xosc"
    bad.mkdir()
    (bad / first.xodr.name).write_bytes(first.xodr.read_bytes())
    xml, n = re.subn(rb'entityRef="[^"]*"', b'entityRef="nobody"', first.xosc.read_bytes(), count=1)
    assert n == 1
    put("bad-xosc", bad / first.xosc.name, xml)

    keys = list(files)
    reports = dict(zip(keys, check_files([files[k] for k in keys]), strict=True))
    return {"reports": reports, "exports": exports, "xodr_of": checked_xodr, "witnesses": witnesses}


def _declared(path: Path) -> str:
    header = etree.parse(str(path)).getroot().find("header")
    return f"{header.get('revMajor')}.{header.get('revMinor')}"


def _since(rule_uid: str) -> tuple[int, ...]:
    """The version a rule applies from: asam.net:xodr:1.8.0:junctions... -> (1, 8, 0)."""
    return tuple(int(x) for x in rule_uid.split(":")[2].split("."))


def _assert_clean(report: FileReport, n_checkers: int) -> None:
    assert len(report.checkers) == n_checkers, report.summary_line()
    assert report.at("error", "warning") == [], [(i.checker_id, i.description, i.where) for i in report.issues]
    assert [c.checker_id for c in report.checkers if c.status == "error"] == [], report.summary_line()
    assert report.xqar.is_file() and report.xqar.name == report.file.name + ".xqar"


@pytest.mark.parametrize("name", builtin_map_names())
def test_every_builtin_map_passes_every_rule_of_the_opendrive_bundle(qc_run, name: str) -> None:
    at17, at18 = qc_run["reports"][f"map:{name}"], qc_run["reports"][f"map18:{name}"]
    assert _declared(at17.file) == "1.7"
    for report in (at17, at18):
        _assert_clean(report, XODR_CHECKERS)
    # at the declared 1.7, what is skipped is skipped by the bundle's version gate and is a rule it
    # defines from a later version only; no precondition skips (e.g. a failed schema check)
    skipped = [c for c in at17.checkers if c.status == "skipped"]
    assert all(c.skipped_for_version and min(map(_since, c.rules)) > (1, 7, 0) for c in skipped), skipped
    assert [c.checker_id for c in skipped] == ["check_asam_xodr_junctions_connection_one_link_to_incoming"]
    # ... and that rule runs on the same map declared 1.8: every rule of the bundle ran on every map
    completed = {c.checker_id for r in (at17, at18) for c in r.checkers if c.status == "completed"}
    assert completed == {c.checker_id for c in at17.checkers}


def test_exported_witnesses_of_every_application_pass_both_bundles(qc_run) -> None:
    reports = qc_run["reports"]
    apps = set()
    for w in qc_run["witnesses"]:
        result = qc_run["exports"][w.id]
        apps.add(json.loads(w.record["program_json"])["application"])
        for key in (f"xosc:{w.id}", f"xosc13:{w.id}"):  # OpenSCENARIO 1.2 (the default) and 1.3
            xosc = reports[key]
            _assert_clean(xosc, XOSC_CHECKERS)
            assert [c.checker_id for c in xosc.checkers if c.status != "completed"] == []  # none skipped
        xodr = reports[qc_run["xodr_of"][hashlib.sha256(result.xodr.read_bytes()).hexdigest()]]
        _assert_clean(xodr, XODR_CHECKERS)
        assert _declared(result.xodr) == "1.7"
        assert [c.checker_id for c in xodr.checkers if c.status == "skipped"] == [
            "check_asam_xodr_junctions_connection_one_link_to_incoming"]
    assert apps == {a.value for a in Application}


def test_the_bundles_catch_what_they_should_and_the_old_header_hid_it(qc_run) -> None:
    reports = qc_run["reports"]
    level = "check_asam_xodr_road_lane_level_true_one_side"
    broken = reports["broken"]
    assert {i.checker_id for i in broken.at("error", "warning")} == {level} and not broken.clean
    old = reports["broken14"]  # the same file as the built-in maps used to declare it: the rule never runs
    (ck,) = [c for c in old.checkers if c.checker_id == level]
    assert ck.status == "skipped" and ck.skipped_for_version and old.issues == ()
    assert sum(c.status == "skipped" for c in old.checkers) == 13
    bad = reports["bad-xosc"]
    assert {i.checker_id for i in bad.at("error", "warning")} == {
        "check_asam_xosc_reference_control_resolvable_entity_references"}
    assert "xoscBundle" in qc.text_report(bad) and not bad.clean


def test_witness_export_check_prints_the_report_and_writes_the_xqar(witness_archive, tmp_path: Path, capsys) -> None:
    core, cid = witness_archive
    w = core.witnesses(cid)[0]
    dest = tmp_path / "out"
    assert main(["witness", "export", w.id, "--xosc", "--check", "--out", str(core.settings.data_dir),
                 "--dest", str(dest)]) == 0
    out = capsys.readouterr().out
    assert out.count("ASAM QUALITY FRAMEWORK") == 2 and "ASAM Quality Checker: passed" in out
    assert f"{w.id}.xosc: xoscBundle" in out and f"{w.id}.xodr: xodrBundle" in out and "Traceback" not in out
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        f"{w.id}{s}" for s in (".xosc", ".xodr", ".v2x.json", ".xosc.xqar", ".xodr.xqar"))
    side = json.loads((dest / f"{w.id}.v2x.json").read_text())
    assert side["asam_qc"]["status"] == "passed" and side["asam_qc"]["checked"]
    assert {f["counts"]["errors"] + f["counts"]["warnings"] for f in side["asam_qc"]["files"]} == {0}
    # without --check: the sidecar says the files were not checked
    assert main(["witness", "export", w.id, "--xosc", "--out", str(core.settings.data_dir),
                 "--dest", str(tmp_path / "plain"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "asam_qc" not in data
    assert json.loads(Path(data["sidecar"]).read_text())["asam_qc"]["status"] == "unchecked"


@pytest.mark.parametrize("trouble", ["missing", "fails to start"])
def test_a_missing_or_broken_bundle_is_one_line_and_the_files_are_written_unchecked(
        witness_archive, tmp_path: Path, capsys, monkeypatch, trouble: str) -> None:
    if trouble == "missing":
        module = "no_such_asam_qc_bundle"
    else:  # importable, but its entry fails before it checks anything
        module = "broken_asam_qc_bundle"
        pkg = tmp_path / "site" / module
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "main.py").write_text("raise RuntimeError('cannot load its schemas')\n")
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
        monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    monkeypatch.setitem(qc.BUNDLES, ".xodr", Bundle("xodrBundle", module, "asam-qc-opendrive"))
    core, cid = witness_archive
    w = core.witnesses(cid)[0]
    dest = tmp_path / "out"
    code = main(["witness", "export", w.id, "--xosc", "--check", "--out", str(core.settings.data_dir),
                 "--dest", str(dest)])
    out = capsys.readouterr().out
    assert code == 1 and "Traceback" not in out
    (line,) = [ln for ln in out.splitlines() if "ASAM" in ln]
    assert line.startswith("ASAM Quality Checker: UNCHECKED") and "marked unchecked" in line
    assert ("not installed" in line and "asam-qc-opendrive" in line if trouble == "missing"
            else "asam-qc-opendrive failed" in line and "cannot load its schemas" in line)
    assert {f"{w.id}.xosc", f"{w.id}.xodr", f"{w.id}.v2x.json"} <= {p.name for p in dest.iterdir()}
    side = json.loads((dest / f"{w.id}.v2x.json").read_text())
    assert side["asam_qc"]["status"] == "unchecked" and side["asam_qc"]["reason"] in line
