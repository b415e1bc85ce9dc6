"""The documentation site builds without a warning, its nav names real pages, and the README's links resolve.

The test command installs the ``docs`` extra (``pip install -e ".[test,runtime,docs]"``), so a missing
mkdocs is a failure here, not a skip.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
INSTALL = 'pip install -e ".[test,runtime,docs]" && pytest'


def require_docs_tools() -> None:
    missing = []
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "yaml"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(module)
    if missing:
        pytest.fail(f"the docs tools are not installed ({', '.join(missing)} missing): "
                    'pip install -e ".[docs]"')


def nav_pages(entries) -> list[str]:
    """Every page path named in mkdocs.yml's nav, however deeply nested."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in nav_pages(value)]
    return []


def test_site_builds_strict(tmp_path):
    require_docs_tools()
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "api" / "index.html").is_file()


def test_nav_pages_exist():
    require_docs_tools()
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = nav_pages(config["nav"])
    assert pages, "mkdocs.yml has no nav"
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist: {missing}"
    unlisted = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if str(p.relative_to(DOCS)) not in pages)
    assert not unlisted, f"pages missing from mkdocs.yml's nav: {unlisted}"


def test_readme_links_resolve():
    text = re.sub(r"```.*?```", "", (ROOT / "README.md").read_text(), flags=re.S)
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:|#", t)]
    assert local, "the README links no docs page"
    broken = [t for t in local if not (ROOT / t).exists()]
    assert not broken, f"README.md links files that do not exist: {broken}"


def test_readme_test_command_is_ci_command():
    """The README's second quick-start command and .ci/run install and test alike."""
    assert INSTALL in (ROOT / "README.md").read_text()
    assert INSTALL in (ROOT / ".ci" / "run").read_text()
