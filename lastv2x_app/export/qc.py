"""ASAM's Quality Checker on exported files (``lastv2x witness export ID --xosc --check``).

The official checker bundles, each on the files of its format: ``asam-qc-openscenarioxml``
(``qc_openscenario``, bundle ``xoscBundle``) on ``.xosc`` and ``asam-qc-opendrive``
(``qc_opendrive``, ``xodrBundle``) on ``.xodr``. Each bundle runs as its own process through
its own command-line entry (``<module>.main:main``, what its ``qc_opendrive`` /
``qc_openscenario`` script runs) with an ASAM configuration XML naming the input file and its
result file, once per file; a process runs every file of its bundle (the import of the
OpenDRIVE bundle, ~2 s of scipy and the like, is paid once). Its result, the ``.xqar``, is
written beside the checked file as ``<file>.xqar``; the text report is the framework's own
(``qc_framework``'s ``qc-report-text``).

The export's XSD validation stays the fast first gate (an ``.xosc`` that fails it is never
written). Here a bundle that is not installed, or whose process fails to start or to write
its result, is :class:`QcUnavailable`: one line, the export's files stay as written and are
marked unchecked in the sidecar (``asam_qc``).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Bundle:
    name: str  # the bundle's name in its configuration and result (CheckerBundle/@application)
    module: str  # its Python package; <module>.main:main is its command-line entry
    package: str  # what pip installs it as


BUNDLES: dict[str, Bundle] = {
    ".xosc": Bundle("xoscBundle", "qc_openscenario", "asam-qc-openscenarioxml"),
    ".xodr": Bundle("xodrBundle", "qc_opendrive", "asam-qc-opendrive"),
}
TIMEOUT_S = 600.0  # one bundle process, all its files (a CARLA town takes the OpenDRIVE bundle seconds)
LEVELS = {1: "error", 2: "warning", 3: "information"}  # qc_baselib.IssueSeverity
INSTALL_HINT = "pip install 'lastv2x[dev]' (make setup)"

# The bundle's own entry, once per configuration, in one process. Each run's exception is one line on
# stderr (the result file is then missing: the parent names the file); the exit status counts them.
_DRIVER = """\
import importlib, sys
module, configs = sys.argv[1], sys.argv[2:]
main = importlib.import_module(module + ".main").main
failed = 0
for cfg in configs:
    sys.argv = [module, "-c", cfg]
    try:
        main()
    except BaseException as exc:  # noqa: BLE001 - one line per file, never a traceback
        failed += 1
        print(f"{cfg}: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
sys.exit(1 if failed else 0)
"""


class QcUnavailable(Exception):  # noqa: N818 - a state, not a failure of ours
    """A checker bundle is missing or failed to start / to write its result: one line."""


@dataclass(frozen=True)
class Checker:
    checker_id: str
    status: str  # completed / skipped / error
    summary: str
    rules: tuple[str, ...]  # rule uids, asam.net:xodr:1.7.0:road.lane...: the 3rd part is the version it applies from

    @property
    def skipped_for_version(self) -> bool:
        """Skipped by the bundle's version gate (not by a failed precondition)."""
        return self.status == "skipped" and self.summary.startswith("Version ")


@dataclass(frozen=True)
class Issue:
    checker_id: str
    level: str  # error / warning / information
    rule_uid: str
    description: str
    where: str  # first XML location (xpath), if any


@dataclass(frozen=True)
class FileReport:
    """One bundle's result on one file (parsed from its ``.xqar``)."""

    file: Path
    bundle: str
    bundle_version: str
    xqar: Path
    checkers: tuple[Checker, ...]
    issues: tuple[Issue, ...]

    def at(self, *levels: str) -> list[Issue]:
        return [i for i in self.issues if i.level in levels]

    @property
    def clean(self) -> bool:
        """Every checker ran or was skipped by the bundle itself, and no issue at error or warning level."""
        return not self.at("error", "warning") and all(c.status != "error" for c in self.checkers)

    def counts(self) -> dict[str, int]:
        """checkers completed / skipped / failed (inside the bundle), and issues per level."""
        return {"completed": sum(c.status == "completed" for c in self.checkers),
                "skipped": sum(c.status == "skipped" for c in self.checkers),
                "failed": sum(c.status == "error" for c in self.checkers),
                "errors": len(self.at("error")), "warnings": len(self.at("warning")),
                "information": len(self.at("information"))}

    def summary_line(self) -> str:
        c = self.counts()
        by_version = sum(ck.skipped_for_version for ck in self.checkers)
        failed = f", {c['failed']} failed inside the bundle" if c["failed"] else ""
        return (f"{self.file.name}: {self.bundle} {self.bundle_version}: {c['completed']} of {len(self.checkers)} "
                f"checks completed, {c['skipped']} skipped"
                + (f" ({by_version} by the version the file declares)" if by_version else "") + failed
                + f"; {c['errors']} error(s), {c['warnings']} warning(s), {c['information']} information"
                  f" -> {self.xqar.name}")

    def to_dict(self) -> dict[str, Any]:
        return {"file": str(self.file), "bundle": self.bundle, "bundle_version": self.bundle_version,
                "xqar": str(self.xqar), "clean": self.clean, "counts": self.counts(),
                "skipped": [{"checker": c.checker_id, "summary": c.summary} for c in self.checkers
                            if c.status == "skipped"],
                "issues": [{"checker": i.checker_id, "level": i.level, "rule": i.rule_uid,
                            "description": i.description, "where": i.where} for i in self.at("error", "warning")]}


def bundle_for(path: Path) -> Bundle:
    try:
        return BUNDLES[path.suffix.lower()]
    except KeyError:
        raise ValueError(f"{path.name}: no ASAM checker bundle for {path.suffix or 'this'} files") from None


def missing_packages(paths: Iterable[Path] = ()) -> list[str]:
    """What is not installed here of the bundles of these files' formats (all if none given), the
    result library and the framework's text report."""
    wanted = {(b.module, b.package) for b in ({bundle_for(Path(p)) for p in paths} or set(BUNDLES.values()))}
    wanted |= {("qc_baselib", "asam-qc-baselib"), ("qc_framework", "asam-qc-framework")}
    return sorted(package for module, package in wanted if importlib.util.find_spec(module) is None)


def _config_xml(input_file: Path, bundle: Bundle, result_file: Path) -> str:
    from xml.sax.saxutils import quoteattr

    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Config>\n'
            f'  <Param name="InputFile" value={quoteattr(str(input_file))}/>\n'
            f'  <CheckerBundle application={quoteattr(bundle.name)}>\n'
            f'    <Param name="resultFile" value={quoteattr(str(result_file))}/>\n'
            "  </CheckerBundle>\n</Config>\n")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _parse(path: Path, bundle: Bundle, xqar: Path) -> FileReport:
    from qc_baselib import Result

    result = Result()
    result.load_from_file(str(xqar))
    checkers, issues = [], []
    (bundle_result,) = [b for b in result.get_checker_bundle_results() if b.name == bundle.name]
    for c in bundle_result.checkers:
        status = getattr(c.status, "value", str(c.status or "")).lower()
        checkers.append(Checker(c.checker_id, status, c.summary, tuple(r.rule_uid for r in c.addressed_rule)))
        for i in c.issues:
            where = next((x.xpath for loc in i.locations for x in loc.xml_location), "")
            issues.append(Issue(c.checker_id, LEVELS.get(int(i.level), str(i.level)), i.rule_uid or "",
                                i.description, where))
    return FileReport(path, bundle.name, bundle_result.version, xqar, tuple(checkers), tuple(issues))


def check_files(paths: Sequence[Path | str], *, result_dir: Path | str | None = None,
                timeout_s: float = TIMEOUT_S) -> list[FileReport]:
    """Run the bundle of each file's format on it; one :class:`FileReport` per file, in order.

    The ``.xqar`` of ``F`` is ``F.xqar`` beside it (or in ``result_dir``), written by the bundle (an
    earlier one is removed first). Raises :class:`QcUnavailable` (one line) when a bundle is not installed, or its
    process fails to start, times out or leaves a file without a result."""
    files = [Path(p).resolve() for p in paths]
    if not files:
        return []
    missing = missing_packages(files)
    if missing:
        raise QcUnavailable(f"ASAM Quality Checker not installed here ({', '.join(missing)}): {INSTALL_HINT}")
    by_bundle: dict[Bundle, list[int]] = {}
    for k, f in enumerate(files):
        by_bundle.setdefault(bundle_for(f), []).append(k)
    xqars = [(Path(result_dir).resolve() if result_dir else f.parent) / f"{f.name}.xqar" for f in files]
    for x in xqars:  # an earlier check's result is never taken for this one's
        x.parent.mkdir(parents=True, exist_ok=True)
        x.unlink(missing_ok=True)
    reports: list[FileReport | None] = [None] * len(files)
    procs: list[tuple[Bundle, list[int], subprocess.Popen[str]]] = []
    with tempfile.TemporaryDirectory(prefix="lastv2x-asam-qc.") as tmp:  # the configurations
        try:
            for bundle, ks in by_bundle.items():  # the bundles run side by side
                configs = []
                for k in ks:
                    cfg = Path(tmp) / f"{k}.config.xml"
                    cfg.write_text(_config_xml(files[k], bundle, xqars[k]))
                    configs.append(str(cfg))
                try:
                    proc = subprocess.Popen([sys.executable, "-c", _DRIVER, bundle.module, *configs], cwd=tmp,
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.PIPE, text=True)
                except OSError as exc:
                    raise QcUnavailable(f"ASAM checker bundle {bundle.package} failed to start: {exc}") from None
                procs.append((bundle, ks, proc))
            _collect(procs, files, xqars, reports, timeout_s)
        finally:
            for _, _, proc in procs:  # a bundle still running when another failed
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
    return [r for r in reports if r is not None]


def _collect(procs: list[tuple[Bundle, list[int], subprocess.Popen[str]]], files: list[Path], xqars: list[Path],
             reports: list[FileReport | None], timeout_s: float) -> None:
    for bundle, ks, proc in procs:
        try:
            _, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise QcUnavailable(f"ASAM checker bundle {bundle.package} did not finish in {timeout_s:.0f} s") from None
        for k in ks:
            if not xqars[k].is_file():
                raise QcUnavailable(f"ASAM checker bundle {bundle.package} failed on {files[k].name} "
                                    f"(exit {proc.returncode}): {_last_line(err)}")
            try:
                reports[k] = _parse(files[k], bundle, xqars[k])
            except Exception as exc:  # noqa: BLE001 - a result we cannot read is no result
                raise QcUnavailable(f"ASAM checker bundle {bundle.package} wrote an unreadable result for "
                                    f"{files[k].name}: {type(exc).__name__}: {_last_line(str(exc))}") from None


def text_report(report: FileReport, width: int = 100) -> str:
    """The framework's own text report (``qc-report-text``) of one result file."""
    from qc_baselib import Result
    from qc_framework.report.text.text_formatter import TextFormatter

    result = Result()
    result.load_from_file(str(report.xqar))
    formatter = TextFormatter()
    formatter.set_param("LineWidth", width)
    out = StringIO()
    formatter.dump(result, out)
    return out.getvalue().rstrip("\n")


@dataclass
class ExportCheck:
    """The checkers' verdict on one export: ``passed`` (no issue at error or warning level, no checker
    failing inside a bundle), ``issues``, or ``unchecked`` (``reason``: the one line)."""

    status: str
    reports: list[FileReport] = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "checked": self.status != "unchecked"}
        if self.reason:
            out["reason"] = self.reason
        if self.reports:
            out["files"] = [r.to_dict() for r in self.reports]
        return out

    def text(self, full: bool = True) -> str:
        if self.status == "unchecked":
            return f"ASAM Quality Checker: UNCHECKED, {self.reason}; the files are written, marked unchecked"
        lines = []
        for r in self.reports if full else ():
            try:
                lines.append(text_report(r))
            except Exception as exc:  # noqa: BLE001 - the summary below still says what the bundle found
                lines.append(f"({r.xqar.name}: the framework's text report failed: {type(exc).__name__}: {exc})"
                             .splitlines()[0])
        lines += [f"ASAM Quality Checker: {'passed' if self.status == 'passed' else 'ISSUES'}"]
        lines += [f"  {r.summary_line()}" for r in self.reports]
        return "\n".join(lines)


UNCHECKED = {"status": "unchecked", "checked": False,
             "reason": "not requested (lastv2x witness export --check runs ASAM's checker bundles)"}


def check_export(xosc: Path, xodr: Path, sidecar: Path | None = None) -> ExportCheck:
    """Run both bundles on an export (the ``.xodr`` first: the ``.xosc`` bundle reads it too) and record
    the verdict in the sidecar's ``asam_qc``. Never raises for a missing or failing bundle."""
    try:
        reports = check_files([xodr, xosc])
        check = ExportCheck("passed" if all(r.clean for r in reports) else "issues", reports)
    except QcUnavailable as exc:
        check = ExportCheck("unchecked", reason=str(exc))
    if sidecar is not None and sidecar.is_file():
        from lastv2x_app.export.xosc import _atomic_write

        data = json.loads(sidecar.read_text())
        data["asam_qc"] = check.to_dict()
        _atomic_write(sidecar, (json.dumps(data, indent=1) + "\n").encode())
    return check


__all__ = ["BUNDLES", "UNCHECKED", "Bundle", "Checker", "ExportCheck", "FileReport", "Issue", "QcUnavailable",
           "check_export", "check_files", "missing_packages", "text_report"]
