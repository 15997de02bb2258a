"""The documentation site is checked in the suite (issue 38): `mkdocs build --strict` passes (no dangling
link, no missing nav page, no page left out of the nav), builds offline, and the generated reference pages
(docs/reference/, scripts/docs_reference.py) are exactly what the code generates now."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _reference_module():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts" / "docs_reference.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=config.parent, env=env, capture_output=True, text=True,
                          timeout=300)


def problems(result: subprocess.CompletedProcess[str]) -> str:
    """The WARNING / ERROR lines of a build: each names its page."""
    lines = [ln for ln in (result.stdout + result.stderr).splitlines() if re.match(r"\s*(WARNING|ERROR)", ln)]
    return "\n".join(lines) or (result.stdout + result.stderr)[-3000:]


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return _reference_module().render()


def test_reference_pages_match_the_code(rendered: dict[str, str]) -> None:
    stale = _reference_module().stale_pages(rendered=rendered)
    assert not stale, "out of date with the code (run make docs): " + ", ".join(stale)


def test_an_out_of_date_reference_page_is_named(rendered: dict[str, str], tmp_path: Path) -> None:
    ref = _reference_module()
    for name, text in rendered.items():
        (tmp_path / name).write_text(text)
    assert ref.stale_pages(tmp_path, rendered=rendered) == []
    (tmp_path / "settings.md").write_text(rendered["settings.md"].replace("LASTV2X_SEARCH_GATE", "LASTV2X_GATE"))
    (tmp_path / "cli.md").unlink()
    assert ref.stale_pages(tmp_path, rendered=rendered) == ["docs/reference/cli.md", "docs/reference/settings.md"]
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_reference.py"), "--check", "--out",
                          str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert "docs/reference/settings.md is out of date with the code: run make docs" in out.stdout


def test_site_builds_strict_and_offline(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = mkdocs_build(ROOT / "mkdocs.yml", site)
    assert result.returncode == 0, "mkdocs build --strict failed:\n" + problems(result)
    assert (site / "index.html").is_file() and (site / "reference" / "settings.html").is_file()
    # nothing a page loads comes from the network: no fonts, scripts or stylesheets from elsewhere
    external = set()
    for page in site.rglob("*.html"):
        for tag in re.findall(r"<(?:script|link|img)\b[^>]*>", page.read_text()):
            if re.search(r"""(?:src|href)=["']?(?:https?:)?//""", tag):
                external.add(f"{page.relative_to(site)}: {tag}")
    assert not external, "pages load from the network:\n" + "\n".join(sorted(external)[:10])


def test_a_dangling_link_or_a_missing_nav_page_fails_naming_the_page(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](guide.md).\n")
    (docs / "guide.md").write_text("# Guide\n\nSee [the setup](setup.md) and [Home](index.md#no-such-heading).\n")
    config = (ROOT / "mkdocs.yml").read_text()
    config = config[:config.index("\nnav:")] + "\nnav:\n  - Home: index.md\n  - Guide: guide.md\n  - Gone: gone.md\n"
    (tmp_path / "mkdocs.yml").write_text(config)
    result = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    text = problems(result)
    assert "guide.md" in text and "setup.md" in text, text  # the page and its dangling link
    assert "gone.md" in text, text  # the nav entry without a page
    assert "no-such-heading" in text, text  # an anchor that does not exist


def test_make_docs_builds_into_site_which_git_ignores() -> None:
    makefile = (ROOT / "Makefile").read_text()
    target = makefile[makefile.index("\ndocs:"):]
    target = target[:target.index("\n\n")]
    assert "scripts/docs_reference.py" in target and "--strict" in target and "--site-dir site" in target
    assert "--quiet" not in target  # mkdocs --quiet drops the warnings that --strict counts: nothing would fail
    assert "site/" in (ROOT / ".gitignore").read_text().split()
    assert shutil.which("git") is None or subprocess.run(
        ["git", "check-ignore", "-q", "site/index.html"], cwd=ROOT).returncode == 0
