"""OpenSCENARIO export of witnesses: every export validates against the ASAM schema of the version
it declares, the built-in maps' OpenDRIVE against OpenDRIVE 1.7, the signal phases are the
platform's, the faults travel as parameters and a sidecar, and bad input leaves nothing behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from lastv2x.core.errors import InvalidArgument, NotFound
from lastv2x.core.program import ScenarioProgram, SignalGroupPlan
from lastv2x_app.cli import main
from lastv2x_app.export.asam import XOSC_SCHEMAS, schema_dir, validate_xodr, validate_xosc
from lastv2x_app.export.xosc import LAMPS, _phases, export_witness
from services.simulator.maps import builtin_map_names
from services.simulator.maps.builtin import builtin_sources
from services.simulator.signals import SignalTable


def test_the_schemas_come_from_the_scenariogeneration_wheel() -> None:
    names = {p.name for p in schema_dir().glob("*.xsd")}
    assert set(XOSC_SCHEMAS.values()) <= names and "opendrive_17_core.xsd" in names


@pytest.mark.parametrize("name", builtin_map_names())
def test_every_builtin_map_is_valid_opendrive_1_7(name: str) -> None:
    xodr = builtin_sources(name)[0].encode()
    assert validate_xodr(xodr) == []
    broken = etree.fromstring(xodr)
    broken.find("road").set("length", "-3")  # the validator does reject what 1.7 forbids
    assert validate_xodr(etree.tostring(broken))


@pytest.mark.parametrize("offset_s", [0.0, 5.0, 27.0, 28.5, 31.0, 59.9, 19.432, 47.432])
def test_the_exported_phase_list_shows_the_platforms_phase_at_every_time(offset_s: float) -> None:
    plan = SignalGroupPlan(id="g", junction_id="j", cycle_s=60.0, green_s=27.0, amber_s=3.0, offset_s=offset_s)
    phases = _phases(plan)
    assert sum(d for _, d in phases) == pytest.approx(plan.cycle_s)
    bounds = np.cumsum([0.0] + [d for _, d in phases])
    table = SignalTable.from_plans([plan])
    for t in np.arange(0.05, 3 * plan.cycle_s, 0.37):  # the controller cycles its list from t = 0
        u = t % plan.cycle_s
        k = int(np.searchsorted(bounds, u, side="right") - 1)
        if min(abs(u - b) for b in bounds) < 1e-6:
            continue
        assert phases[k][0] == int(table.phase_at(float(t))[0]), (t, phases)


@pytest.mark.parametrize("minor", sorted(XOSC_SCHEMAS))
def test_every_witness_exports_to_valid_openscenario(witness_archive, tmp_path: Path, minor: int) -> None:
    core, cid = witness_archive
    for w in core.witnesses(cid):
        result = export_witness(w, tmp_path, osc_minor=minor)
        xml = result.xosc.read_bytes()
        schema, errors = validate_xosc(xml)
        assert errors == [] and schema == XOSC_SCHEMAS[minor] == result.xosc_schema
        assert result.xodr_valid and validate_xodr(result.xodr.read_bytes()) == []
        program = ScenarioProgram.model_validate_json(w.record["program_json"])
        doc = etree.fromstring(xml)
        # every program vehicle is an entity, the ego first, at its start speed and following its route
        names = [o.get("name") for o in doc.iterfind("Entities/ScenarioObject")]
        assert names == [program.ego.id, *[a.id for a in program.agents]]
        assert doc.find("RoadNetwork/LogicFile").get("filepath") == result.xodr.name
        assert len(doc.findall(".//FollowTrajectoryAction")) == len(names)
        stop = doc.find("Storyboard/StopTrigger//SimulationTimeCondition")
        assert float(stop.get("value")) == pytest.approx(program.duration_s)
        # the faults: parameters in the file, in full in the sidecar; the header says so
        params = {p.get("name"): p.get("value") for p in doc.iterfind("ParameterDeclarations/ParameterDeclaration")}
        assert params["V2X_faults"] == str(len(program.faults)) >= "1"
        for i, rf in enumerate(program.faults):
            assert params[f"V2X_fault{i}_operator"] == rf.fault.operator.value
            assert params[f"V2X_fault{i}_stream"] == rf.fault.stream.value
            assert float(params[f"V2X_fault{i}_window_start_s"]) == pytest.approx(rf.nominal_window_s[0])
        assert "no OpenSCENARIO form" in doc.find("FileHeader").get("description")
        side = json.loads(result.sidecar.read_text())
        assert side["witness_id"] == w.id and len(side["faults"]) == len(program.faults)
        assert side["faults"][0]["fault"]["operator"] == program.faults[0].fault.operator.value
        assert params["V2X_sidecar"] == result.sidecar.name
        # signal controllers: one per planned group, over the map's OpenDRIVE signal ids
        ctrls = doc.findall("RoadNetwork/TrafficSignals/TrafficSignalController")
        assert {c.get("name") for c in ctrls} == {g.id for g in program.signal_groups}
        xodr_ids = {s.get("id") for s in etree.fromstring(result.xodr.read_bytes()).iter("signal")}
        states = {st.get("state") for st in doc.iter("TrafficSignalState")}
        assert {st.get("trafficSignalId") for st in doc.iter("TrafficSignalState")} <= xodr_ids
        assert states <= set(LAMPS.values()) and (ctrls == [] or states)


def test_the_exports_are_deterministic(witness_archive, tmp_path: Path) -> None:
    core, cid = witness_archive
    w = core.witnesses(cid)[0]
    a = export_witness(w, tmp_path / "a").xosc.read_bytes()
    b = export_witness(w, tmp_path / "b").xosc.read_bytes()
    assert a == b


def test_lastv2x_witness_export_writes_the_three_files(witness_archive, tmp_path: Path, capsys) -> None:
    core, cid = witness_archive
    w = core.witnesses(cid)[0]
    dest = tmp_path / "out"
    assert main(["witness", "export", w.id, "--xosc", "--out", str(core.settings.data_dir),
                 "--dest", str(dest), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in dest.iterdir()) == sorted([f"{w.id}.v2x.json", f"{w.id}.xodr", f"{w.id}.xosc"])
    assert data["xosc_schema"] == "OpenSCENARIO_1_2.xsd" and data["xodr_valid"]
    # issue 41: the sidecar's replay command is archive-relative (run in the archive folder), and no
    # absolute path of this machine is in it
    text = (dest / f"{w.id}.v2x.json").read_text()
    sidecar = json.loads(text)
    assert sidecar["replay"] == f"lastv2x witness replay {w.id} --out ."
    assert "archive folder" in sidecar["replay_in"]
    assert str(tmp_path) not in text and str(core.settings.data_dir) not in text
    assert not Path(sidecar["archive"]).is_absolute()
    assert (dest / sidecar["archive"]).resolve() == core.settings.data_dir.resolve()


def test_bad_input_is_refused_and_leaves_nothing(witness_archive, tmp_path: Path, capsys) -> None:
    core, cid = witness_archive
    archive = str(core.settings.data_dir)
    assert main(["witness", "export", "w-0000000000000000", "--xosc", "--out", archive,
                 "--dest", str(tmp_path / "x")]) == 2
    assert "no witness" in capsys.readouterr().out and not (tmp_path / "x").exists() or not any(
        (tmp_path / "x").iterdir())
    w = core.witnesses(cid)[0]
    assert main(["witness", "export", w.id, "--out", archive]) == 2  # no format
    assert "--xosc" in capsys.readouterr().out
    with pytest.raises(NotFound):
        core.witness("w-unknown")
    with pytest.raises(InvalidArgument, match="OpenSCENARIO 1.9"):
        export_witness(w, tmp_path, osc_minor=9)
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o500)
    try:
        if os.access(locked, os.W_OK):  # root ignores the mode bits: use a path under a file instead
            locked = tmp_path / "a-file" / "sub"
            (tmp_path / "a-file").write_text("")
        with pytest.raises(InvalidArgument, match="cannot write") as exc:
            export_witness(w, locked)
        assert exc.value.violations[0].field == "--dest"
    finally:
        os.chmod(tmp_path / "locked", 0o700)
