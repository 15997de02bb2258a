"""`lastv2x witness verify ID --backend sumo` (issue 20): each witness of a real campaign replayed on
SUMO, both outcomes side by side, exit 0 only when the admission holds on the second simulator."""

from __future__ import annotations

import json

import pytest

from lastv2x_app.cli import main

pytest.importorskip("libsumo", reason="re-verification on SUMO needs the 'sumo' extra")


def test_every_witness_of_the_demo_campaign_is_confirmed_on_sumo(witness_archive, capsys) -> None:
    core, cid = witness_archive
    witnesses = core.witnesses(cid)
    for w in witnesses:
        capsys.readouterr()
        rc = main(["witness", "verify", w.id, "--backend", "sumo", "--out", str(core.settings.data_dir), "--json"])
        got = json.loads(capsys.readouterr().out)
        assert rc == 0 and got["confirmed"] and got["backend"] == "sumo", (w.id, got)
        assert got["archived"] == json.loads(w.outcome_json)  # side by side: the archive as it was
        assert got["replayed"]["admitted"] and got["replayed"]["md"]["failed"] and not got["replayed"]["gt"]["failed"]


def test_an_unknown_backend_is_bad_input(witness_archive, capsys) -> None:
    core, cid = witness_archive
    w = core.witnesses(cid)[0]
    rc = main(["witness", "verify", w.id, "--backend", "gazebo", "--out", str(core.settings.data_dir)])
    said = capsys.readouterr()
    assert rc == 2 and "unknown simulator backend 'gazebo'" in said.out + said.err
