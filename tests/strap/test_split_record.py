"""Apollo split records (x.record.00000, x.record.00001, ...) are read as one recording,
under one read budget (issue 18, item 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.strap.errors import RecordingLimitError
from services.strap.pipeline import ingest
from services.strap.readers import ReadLimits, SplitRecording, open_recording
from tests.strap.helpers import apollo_like_file, message_classes, write_cyber_record

OBS = "/apollo/perception/obstacles"


def _write_set(root: Path) -> list[Path]:
    fdp = apollo_like_file()
    cls = message_classes(fdp)
    channels = {OBS: ("apollo.perception.PerceptionObstacles", fdp)}

    def obstacles(*sub_types: int) -> bytes:
        msg = cls["PerceptionObstacles"]()
        for i, st in enumerate(sub_types):
            msg.perception_obstacle.add(id=i, sub_type=st)
        return msg.SerializeToString()

    paths = []
    for k, (t0, sub) in enumerate([(0, 3), (100, 6), (200, 3)]):  # car, then bus, then car again
        p = root / f"drive.record.{k:05d}"
        write_cyber_record(p, channels, [[(OBS, t0 + i * 10, obstacles(sub)) for i in range(10)]])
        paths.append(p)
    (root / "other.record.00000").write_bytes(paths[0].read_bytes())  # another set beside it
    return paths


def test_one_part_opens_the_whole_set_in_time_order(tmp_path: Path) -> None:
    parts = _write_set(tmp_path)
    for entry in (parts[1], tmp_path / "sub"):
        if entry.name == "sub":
            (tmp_path / "sub").mkdir()
            for p in parts:
                (tmp_path / "sub" / p.name).write_bytes(p.read_bytes())
        with open_recording(entry) as rec:
            assert isinstance(rec, SplitRecording) and rec.format == "cyber"
            assert rec.channels()[OBS].message_count == 30
            times = [t for _, t, _ in rec]
            assert times == sorted(times) and len(times) == 30 and times[-1] == 290
            assert rec.time_range_ns() == (0, 290)
            assert rec.message_counts() == {OBS: 30}
    table = ingest(parts[0], None, missing="none")
    assert table.channel_map == "apollo" and table.n_frames == 30
    car, bus = table.column("vehicle.car"), table.column("vehicle.bus")
    assert car[:10].all() and bus[10:20].all() and car[20:].all() and not bus[:10].any()


def test_the_read_limits_bound_the_whole_set(tmp_path: Path) -> None:
    parts = _write_set(tmp_path)
    with open_recording(parts[0], limits=ReadLimits(max_messages=25)) as rec:
        with pytest.raises(RecordingLimitError, match="max_messages"):
            list(rec)  # each part has 10: only the set passes 25
    with open_recording(parts[0], limits=ReadLimits(max_messages=30)) as rec:
        assert len(list(rec)) == 30


def test_a_lone_part_is_an_ordinary_record(tmp_path: Path) -> None:
    parts = _write_set(tmp_path)
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "x.record.00000").write_bytes(parts[0].read_bytes())
    with open_recording(lone / "x.record.00000") as rec:
        assert not isinstance(rec, SplitRecording)
        assert np.array_equal([t for _, t, _ in rec], np.arange(0, 100, 10))
