"""The campaign report: its data, its pages in a real headless browser (Debian chromium driven by
playwright: a screenshot per page type, no request leaves the folder) and its bad input, which
never leaves a partial report behind."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from lastv2x.core.errors import FailedPrecondition, InvalidArgument, NotFound
from lastv2x_app.cli import main
from lastv2x_app.report import write_report
from lastv2x_app.report.svg import EPISODE_COLOUR, FAULT_COLOUR

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def report(witness_archive, tmp_path_factory):
    core, cid = witness_archive
    return write_report(core, cid, tmp_path_factory.mktemp("reports"), archive=str(core.settings.data_dir))


def test_the_report_holds_every_witness_with_its_evidence(witness_archive, report) -> None:
    core, cid = witness_archive
    folder = report.folder
    assert folder.name == cid and sorted(p.name for p in folder.iterdir()) == sorted(
        ["index.html", "report.json", "xosc", *[f"{w.id}.html" for w in core.witnesses(cid)]])
    # each witness exported beside its page: OpenSCENARIO + OpenDRIVE + V2X sidecar, linked from it
    assert sorted(p.name for p in (folder / "xosc").iterdir()) == sorted(
        f"{w.id}{ext}" for w in core.witnesses(cid) for ext in (".xosc", ".xodr", ".v2x.json"))
    data = json.loads((folder / "report.json").read_text())
    assert data["complete"] is True and data["campaign_id"] == cid
    # yield curve: one point per search execution, admitted never decreases, ends at the journal's count
    pts = data["yield"]["points"]
    assert pts[0] == [0, 0] and all(b[0] == a[0] + 1 and b[1] >= a[1] for a, b in zip(pts, pts[1:], strict=False))
    assert data["yield"]["admitted"] >= len(data["witnesses"]) >= 2
    assert {r["witness_id"] for r in data["catalogue"]} >= {w["witness_id"] for w in data["witnesses"]}
    for w in data["witnesses"]:
        egos = w["trace"]["egos"]
        assert len(egos["md"]["t_s"]) > 50 and len(egos["gt"]["t_s"]) > 50
        assert w["outcome"]["admitted"] and w["outcome"]["md"]["failed"] and not w["outcome"]["gt"]["failed"]
        assert w["certificate"]["complete"] and w["faults"]
        epochs = [d for d in w["trace"]["decisions"] if d["epoch"]]
        assert {d["rollout"] for d in epochs} == {"md", "gt"}
        assert w["strap"]["segments"] and w["strap"]["kept_frames"] <= w["strap"]["frames"]
        assert any(c.startswith(f"lastv2x witness replay {w['witness_id']}") for c in w["commands"])
        # issue 41: commands are archive-relative (run in the archive folder), never an absolute path
        assert all(not any(Path(part).is_absolute() for part in c.split()) for c in w["commands"])
        assert f"lastv2x witness replay {w['witness_id']} --out ." in w["commands"]
        assert f"lastv2x strap reduce {w['trace_path']} --module application" in w["commands"]
        assert (folder / w["xosc"]["xosc"]).is_file()
        assert f'href="{w["xosc"]["xosc"]}"' in (folder / f"{w['witness_id']}.html").read_text()
        # each episode that a decision follows carries the outcome's hazard slack, in order
        slacks = [e["hazard_slack_s"] for e in w["episodes"] if e["hazard_slack_s"] is not None]
        assert slacks == [pytest.approx(s) for s in json.loads(core.witness(w["witness_id"]).outcome_json)
                          ["hazard_slack_s"]]
    archive = core.settings.data_dir
    for f in [folder / "report.json", *report.pages, *(folder / "xosc").glob("*.v2x.json")]:
        assert str(archive) not in f.read_text() and str(folder) not in f.read_text(), f
    assert not Path(data["archive"]).is_absolute() and (folder / data["archive"]).resolve() == archive.resolve()
    rlvw = next(w for w in data["witnesses"] if w["application"] == "RLVW")
    assert {p[2] for p in rlvw["trace"]["phases"]} == {0, 1, 2}  # green, amber, red of the ego group
    assert rlvw["trace"]["fault_windows"] and rlvw["coverage"]["cells"] and rlvw["coverage"]["rsus"]
    # the MD ego crossed the stop bar (red entry), its ground-truth twin stopped before it
    assert max(rlvw["trace"]["egos"]["md"]["d_m"]) > 0 > max(rlvw["trace"]["egos"]["gt"]["d_m"])
    # one sentence per witness chains fault -> belief beside the truth -> decision -> outcome, with both
    # counterfactuals (issue 31, item 6); never "failure margin none" on an admitted failure
    chain = rlvw["explanation"]
    assert "on SPAT" in chain and "believed" in chain and "while the light was" in chain
    assert "entered on red" in chain and "ground-truth ego decided stop" in chain and "without the fault" in chain
    page = (folder / f"{rlvw['witness_id']}.html").read_text()
    assert "failure margin none" not in page and "failure margin crossed" in page
    # the fault window is drawn over every other band (a solid strip along the top), and the page shows only
    # the episodes that matter: a decision followed them or they overlap the fault window (issue 31, item 6)
    chart = page[page.index("Time–distance"):]
    strip = chart.index(f'fill="{FAULT_COLOUR}" fill-opacity="0.75"')
    assert f'fill="{EPISODE_COLOUR}" fill-opacity="0.1"' not in chart[strip:chart.index("</svg>")]
    for w in data["witnesses"]:
        for e in w["episodes"]:
            assert e["matters"] == (e["hazard_slack_s"] is not None or any(
                (f["start_s"] or 0.0) <= (e["end_s"] if e["end_s"] is not None else w["duration_s"])
                and e["start_s"] <= (f["end_s"] if f["end_s"] is not None else w["duration_s"])
                for f in w["trace"]["fault_windows"]))


def test_the_pages_reference_nothing_outside_the_folder(report) -> None:
    for page in report.pages:
        html = page.read_text()
        assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
        assert "https://" not in html and "src=" not in html and "@import" not in html and "url(" not in html
        assert "Content-Security-Policy" in html and "default-src 'none'" in html


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (Debian: apt-get install -y chromium)")
def test_every_page_type_renders_in_headless_chromium_without_a_request(report, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")
    requests: list[str] = []
    shots = {}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("request", lambda r: requests.append(r.url))
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        for kind, path in (("campaign", report.index), ("witness", report.pages[1])):
            page.goto(path.resolve().as_uri())
            page.wait_for_load_state("networkidle")
            charts = page.locator("svg").count()
            assert charts >= (1 if kind == "campaign" else 4), (kind, charts)
            # every chart is laid out with a real size (rendered, not an empty box)
            for k in range(charts):
                box = page.locator("svg").nth(k).bounding_box()
                assert box and box["width"] > 200 and box["height"] > 80
            shots[kind] = tmp_path / f"{kind}.png"
            page.screenshot(path=str(shots[kind]), full_page=True)
        page.goto(report.index.resolve().as_uri())
        page.click(f"text={report.pages[1].stem}")  # the campaign page links to the witness page
        page.wait_for_load_state("networkidle")
        assert page.title() == f"Witness {report.pages[1].stem}"
        browser.close()
    assert errors == []
    outside = [u for u in requests if not u.startswith(report.folder.resolve().as_uri())]
    assert outside == [], outside  # no request leaves the report's folder: no CDN, font, image, script
    for kind, shot in shots.items():
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, kind
    if os.environ.get("LASTV2X_REPORT_SCREENSHOTS"):  # keep them for a person to look at
        dest = Path(os.environ["LASTV2X_REPORT_SCREENSHOTS"])
        dest.mkdir(parents=True, exist_ok=True)
        for shot in shots.values():
            shutil.copy(shot, dest / shot.name)


def test_an_unknown_campaign_or_an_unwritable_folder_is_refused_and_writes_nothing(witness_archive,
                                                                                   tmp_path: Path) -> None:
    core, _cid = witness_archive
    with pytest.raises(NotFound):
        write_report(core, "c-000000000000", tmp_path)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "a-file").write_text("")
    with pytest.raises(InvalidArgument) as exc:
        write_report(core, _cid, tmp_path / "a-file" / "reports")
    assert exc.value.violations[0].field == "--out" and "cannot write" in str(exc.value)


def test_a_witness_without_its_trace_fails_and_the_previous_report_stays(witness_archive, report) -> None:
    core, cid = witness_archive
    before = {p.name: p.read_bytes() for p in report.folder.rglob("*") if p.is_file()}
    w = core.witnesses(cid)[-1]
    trace = Path(w.trace_path)
    hidden = trace.with_name(trace.name + ".hidden")
    trace.rename(hidden)
    try:
        with pytest.raises(FailedPrecondition, match=f"witness {w.id} has no trace"):
            write_report(core, cid, report.folder.parent)
    finally:
        hidden.rename(trace)
    assert {p.name: p.read_bytes() for p in report.folder.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in report.folder.parent.iterdir()) == [cid]  # no temporary folder left


def test_a_failure_while_writing_leaves_no_partial_report(witness_archive, tmp_path: Path, monkeypatch) -> None:
    core, cid = witness_archive
    import lastv2x_app.report.html as html

    calls = []

    def broken(w, generated):
        calls.append(w["witness_id"])
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return "<html></html>"

    monkeypatch.setattr(html, "witness_page", broken)
    with pytest.raises(OSError):
        write_report(core, cid, tmp_path)
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []


def test_lastv2x_report_writes_it_and_says_where(witness_archive, tmp_path: Path, capsys) -> None:
    core, cid = witness_archive
    assert main(["report", cid, "--archive", str(core.settings.data_dir), "--out", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert Path(out["index"]).is_file() and out["witnesses"] == len(core.witnesses(cid))
    assert main(["report", "c-000000000000", "--archive", str(core.settings.data_dir), "--out", str(tmp_path)]) == 2
    assert "no campaign" in capsys.readouterr().out
    assert main(["report", cid, "--archive", str(tmp_path / "nothing-here")]) == 2
    assert "--archive" in capsys.readouterr().out


def test_a_campaign_on_the_synthetic_crossing_is_reported_without_map_parts(tmp_path: Path) -> None:
    """No map: no coverage grid and no OpenSCENARIO export, each page saying why; the rest is there."""
    from lastv2x_app.campaigns import local_core
    from lastv2x_app.export.xosc import export_witness
    from services.search.core import validate_request
    from tests.search.conftest import rlvw_failing_spec

    core = local_core(tmp_path / "search", synthetic_grounding=True)
    try:
        req = validate_request(settings=core.settings, specs=[rlvw_failing_spec(0)], seed=3, budget_per_scenario=2,
                               reflection_rounds=0)
        view = core.wait(core.start(req).id, timeout_s=300)
        assert view.state == "done" and core.witnesses(view.id)
        result = write_report(core, view.id, tmp_path / "reports")
        w = result.data["witnesses"][0]
        assert "synthetic" in w["xosc"]["error"] and w["coverage"]["cells"] == [] and w["trace"]["phases"]
        page = result.pages[1].read_text()
        assert "No OpenSCENARIO export" in page and "synthetic straight crossing" in page
        with pytest.raises(FailedPrecondition, match="synthetic straight crossing"):
            export_witness(core.witnesses(view.id)[0], tmp_path / "x")
    finally:
        core.close()




def test_the_report_shows_repairs_and_reflection_edits(tmp_path: Path) -> None:
    """The campaign page shows, per scenario, the verifier's repairs (one line each, as the results table) and
    each reflection round's diagnosis with its field edits (path: before -> after, rule; refused edits and why);
    the witness page a Repairs line; report.json holds them all. Fakes of the parser and reflector (the rest
    in-process, on the synthetic crossing): 'freeze' intents parse to the admitted RLVW freeze with its RSU out
    of the ego's range (the range repair is applied, the witness ran repaired); the other to the fault-free
    crossing, which nothing admits: it stalls and reflects, round 1 editing the ego's speed, round 2 the speed
    again and the application (refused: it changes what is tested)."""
    from lastv2x.core.spec import parse_spec, spec_to_dict
    from services.search.core import SearchCore, validate_request
    from services.search.pipeline import InProcessPipeline, Parsed, Reflected
    from services.search.settings import SearchSettings
    from tests.search.conftest import rlvw_failing_spec

    class Pipeline(InProcessPipeline):
        rounds = 0

        def parse(self, intent: str, seed: int, campaign: str) -> Parsed:
            d = spec_to_dict(rlvw_failing_spec(extra_faults=0))
            if "freeze" in intent:
                d["v2x"]["channel"]["range_m"] = 40.0
            else:
                d["faults"] = []
            return Parsed(parse_spec(d), 1, "test")

        def reflect(self, prompt: str, digest: dict, campaign: str, spec: object = None) -> Reflected:
            self.rounds += 1
            if self.rounds == 1:
                return Reflected("the ego is too slow to reach the stop bar on amber", "a faster ego", ("R1",),
                                 (("ego.speed_mps", 16.0, "R1"),))
            return Reflected("still too slow; try another application", "faster, on EEBL", ("R2",),
                             (("ego.speed_mps", 18.0, "R1"), ("application", "EEBL", "R2")))

    core = SearchCore(Pipeline(synthetic_grounding=True, trace_dir=tmp_path / "traces"),
                      SearchSettings(data_dir=tmp_path / "search", stall_candidates=1))
    try:
        req = validate_request(settings=core.settings, intents=["RLVW when the SPaT freeze hits", "RLVW, no fault"],
                               seed=3, budget_per_scenario=12, reflection_rounds=2, gate=False,
                               stop_at_first_admission=True)
        view = core.wait(core.start(req).id, timeout_s=300)
        assert view.state == "done", view.reason
        result = write_report(core, view.id, tmp_path / "reports")
    finally:
        core.close()
    data = json.loads((result.folder / "report.json").read_text())
    frozen, quiet = data["summary"]["scenarios"]
    (rep,) = frozen["repairs"]
    assert rep["applied"] and rep["patch"][0]["field"] == "v2x.channel.range_m"
    (w,) = data["witnesses"]
    assert w["repairs"] == frozen["repairs"]
    # each round: its diagnosis and edits, each with the value in the spec it edited (round 2 edits round 1's run)
    assert [(r["scenario"], r["round"]) for r in data["reflections"]] == [(1, 1), (1, 2)]
    one, two = data["reflections"]
    assert one["edits"] == [{"path": "ego.speed_mps", "from": 13.9, "value": 16.0, "rule": "R1"}]
    assert not one["edits_refused"] and quiet["reflection_rounds"] == 2
    assert two["edits"][0] == {"path": "ego.speed_mps", "from": 16.0, "value": 18.0, "rule": "R1"}
    assert "change what is tested" in two["edits_refused"]

    page = result.index.read_text()
    changes = page[page.index("Repairs and reflection"):]
    assert "intents[0] repaired" not in changes  # one line each, under the scenario's heading
    assert "repaired (channel_baseline): " in changes and "v2x.channel.range_m 40.0 -&gt; " in changes
    assert "reflection round 1: the ego is too slow to reach the stop bar on amber" in changes
    assert "ego.speed_mps: 13.9 -&gt; 16.0 (R1)" in changes and "ego.speed_mps: 16.0 -&gt; 18.0 (R1)" in changes
    assert "application: &quot;RLVW&quot; -&gt; &quot;EEBL&quot; (R2)" in changes
    assert "edits refused (the edits change what is tested" in changes
    witness_page = (result.folder / f"{w['witness_id']}.html").read_text()
    assert "<p>Repairs: repaired (channel_baseline): " in witness_page
