"""A campaign report a person reads (``lastv2x report CAMPAIGN``, and the end of ``make run``).

``<out>/<campaign id>/`` holds ``index.html`` (the campaign: request, scenarios, yield curve,
witnesses, catalogue), one ``<witness id>.html`` per witness (outcome, time–distance plot of
both egos with signal phases, fault windows and divergence episodes shaded, the fault set and
its certificate, AoI at the decision epochs and hazard slack per episode, the scene's channel
coverage, the STRaP segments of its trace, the replay commands, the spec) and
``report.json`` (all of it as data). The pages open offline: inline CSS and SVG, no script,
no external resource (a Content-Security-Policy of ``default-src 'none'`` says so to the
browser too).

Never partial: the folder is built under a temporary name beside the target and renamed into
place only when every page is written (a previous report of the campaign is replaced in one
rename). An unknown campaign is NotFound, a witness whose trace is missing FailedPrecondition
naming it, an output folder that cannot be written INVALID_ARGUMENT on ``--out``; in each case
nothing is left behind.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lastv2x.core.errors import FieldViolation, InvalidArgument

DEFAULT_REPORT_DIR = ".lastv2x/reports"


@dataclass(frozen=True)
class ReportResult:
    campaign_id: str
    folder: Path
    index: Path
    pages: tuple[Path, ...]  # index first, then one per witness
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"campaign_id": self.campaign_id, "folder": str(self.folder), "index": str(self.index),
                "pages": [str(p) for p in self.pages], "witnesses": len(self.data["witnesses"])}


def _writable_parent(out_dir: Path, field: str) -> Path:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out_dir, prefix=".probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InvalidArgument(FieldViolation(field, f"cannot write to {out_dir}: {exc.strerror or exc}",
                                             "choose a writable folder for the report")) from None
    return out_dir


def write_report(core: Any, campaign_id: str, out_dir: Path | str = DEFAULT_REPORT_DIR, *, archive: str = "",
                 out_field: str = "--out") -> ReportResult:
    """Write the report of ``campaign_id`` (from ``core``: a ``services.search.core.SearchCore``)
    to ``out_dir/<campaign_id>/``; returns where."""
    from lastv2x_app.export.xosc import archive_ref
    from lastv2x_app.report.collect import campaign_data
    from lastv2x_app.report.html import campaign_page, witness_page

    parent = _writable_parent(Path(out_dir), out_field)
    data = campaign_data(core, campaign_id, archive)  # NotFound / FailedPrecondition before anything is written
    # the archive as seen from the report's folder: the report names no absolute path (issue 41)
    data["archive"] = archive_ref(archive, parent / campaign_id) if archive else ""
    generated = dt.datetime.now(tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    data["generated"] = generated
    final = parent / campaign_id
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{campaign_id}.partial-"))
    try:
        _export_witnesses(core, campaign_id, data, tmp / "xosc", archive)
        names = ["index.html"]
        (tmp / "index.html").write_text(campaign_page(data, generated), encoding="utf-8")
        for w in data["witnesses"]:
            (tmp / f"{w['witness_id']}.html").write_text(witness_page(w, generated), encoding="utf-8")
            names.append(f"{w['witness_id']}.html")
        data["complete"] = True
        (tmp / "report.json").write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o755)
        old = None
        if final.exists():
            old = parent / f".{campaign_id}.old-{os.getpid()}"
            os.replace(final, old)
        os.replace(tmp, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ReportResult(campaign_id, final, final / "index.html", tuple(final / n for n in names), data)


def _export_witnesses(core: Any, campaign_id: str, data: dict[str, Any], folder: Path, archive: str) -> None:
    """Each witness as OpenSCENARIO + OpenDRIVE + V2X sidecar under ``xosc/`` (lastv2x_app.export.xosc);
    without the ``export`` extra the pages say so instead."""
    try:
        import scenariogeneration  # noqa: F401
    except ImportError:
        for w in data["witnesses"]:
            w["xosc"] = None
        return
    from lastv2x.core.errors import FailedPrecondition
    from lastv2x_app.export.xosc import export_witness

    by_id = {w["witness_id"]: w for w in data["witnesses"]}
    for row in core.witnesses(campaign_id):
        try:
            result = export_witness(row, folder, archive=archive)
        except FailedPrecondition as exc:  # e.g. the synthetic crossing has no OpenDRIVE: the page says why
            by_id[row.id]["xosc"] = {"error": str(exc)}
            continue
        by_id[row.id]["xosc"] = {"xosc": f"xosc/{result.xosc.name}", "xodr": f"xosc/{result.xodr.name}",
                                 "sidecar": f"xosc/{result.sidecar.name}", "schema": result.xosc_schema}


__all__ = ["DEFAULT_REPORT_DIR", "ReportResult", "write_report"]
