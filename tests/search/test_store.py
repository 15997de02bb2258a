"""The search store: idempotent ledger, ordered journal, catalogue dedup, atomic witness archive."""

from __future__ import annotations

from pathlib import Path

import pytest

from lastv2x.core.errors import NotFound
from services.search.store import LedgerRow, Store, WitnessRow

KEY = {"application": "RLVW", "fault_family": "freeze@SPAT", "penetration_band": "[0.8,1.0]",
       "conflict_geometry": "straight"}


def _row(eid: str, admitted: bool = True) -> LedgerRow:
    return LedgerRow(eid, "c-1", 0, "search", "sha", 7, admitted, 0.5, "", "in-process", b'{"a":1}')


def _witness(wid: str, key: str = "k1") -> WitnessRow:
    return WitnessRow(wid, "c-1", key, "RLVW", 1.0, b'{"admitted":true}', {"spec": {}, "seed": 7}, "")


def test_ledger_ignores_a_second_write_of_the_same_id(tmp_path: Path) -> None:
    store = Store(tmp_path)
    assert store.record_execution(_row("e1", admitted=True))
    assert not store.record_execution(_row("e1", admitted=False))
    got = store.get_execution("e1")
    assert got is not None and got.admitted and got.outcome_json == b'{"a":1}'
    assert store.count_executions("c-1") == {"search": 1}


def test_journal_keeps_order_and_survives_reopen(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.create_campaign("c-1", {"seed": 1})
    for i in range(5):
        assert store.append_journal("c-1", "result", {"i": i}) == i
    store.close()
    again = Store(tmp_path)
    assert [p["i"] for _, _, p in again.journal("c-1")] == list(range(5))
    assert again.get_campaign("c-1").request == {"seed": 1}


def test_catalogue_counts_equivalent_failures_once(tmp_path: Path) -> None:
    store = Store(tmp_path)
    assert store.archive_witness(_witness("w-1"), KEY, None)
    assert not store.archive_witness(_witness("w-2"), KEY, None)  # same key: counted, not stored
    assert [w.id for w in store.list_witnesses()] == ["w-1"]
    (entry,) = store.catalogue()
    assert entry["count"] == 2 and entry["witness_id"] == "w-1"


def test_witness_trace_is_moved_into_place_before_the_row_commits(tmp_path: Path) -> None:
    store = Store(tmp_path)
    staged = store.staging_dir / "x.mcap"
    staged.write_bytes(b"mcap")
    store.archive_witness(_witness("w-1"), KEY, staged)
    w = store.get_witness("w-1")
    assert not staged.exists() and Path(w.trace_path).read_bytes() == b"mcap"
    assert Path(w.trace_path).parent == store.traces_dir


def test_a_failed_archive_leaves_no_row(tmp_path: Path) -> None:
    store = Store(tmp_path)
    bad = WitnessRow("w-1", "c-1", "k1", "RLVW", 1.0, b"{}", {"unserializable": object()}, "")
    with pytest.raises(TypeError):
        store.archive_witness(bad, KEY, None)
    assert store.list_witnesses() == [] and store.catalogue() == []


def test_unknown_ids_are_not_found(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with pytest.raises(NotFound):
        store.get_campaign("c-nope")
    with pytest.raises(NotFound):
        store.get_witness("w-nope")
