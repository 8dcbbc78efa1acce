"""The guides name code that exists: every `file.py` and `plowline_…` module they cite is in the tree.

A guide that sends a newcomer to ``exactly_once.py`` after the module was renamed is a
docstring untrue to the code, one level up. The guides are the Markdown files a user
reads (README, docs/, deploy/, bench/); the tree is what git tracks.
"""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_FILE = re.compile(r"`([\w./-]+\.py)`")
_MODULE = re.compile(r"`(plowline_[a-z]+\.[\w.]+)")


def _tracked() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return listed.stdout.split()


def _guides(tracked: list[str]) -> list[str]:
    roots = ("docs/", "deploy/", "bench/")
    return ["README.md", *(f for f in tracked if f.endswith(".md") and f.startswith(roots))]


def _modules(tracked: list[str]) -> set[str]:
    modules = set()
    for path in tracked:
        found = re.fullmatch(r"(?:libs|services)/[^/]+/src/(.+)\.py", path)
        if found:
            modules.add(found.group(1).replace("/", ".").removesuffix(".__init__"))
    return modules


def _names_a_module(name: str, modules: set[str]) -> bool:
    """Say whether ``name`` is a module of the tree, or an attribute reached from one."""
    parts = name.rstrip(".").split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            found: object = importlib.import_module(".".join(parts[:end]))
            for attribute in parts[end:]:
                if not hasattr(found, attribute):
                    return False
                found = getattr(found, attribute)
            return True
    return False


def _names_a_file(name: str, tracked: list[str]) -> bool:
    return any(path == name or path.endswith("/" + name) for path in tracked)


def test_every_file_a_guide_cites_exists() -> None:
    """Each `name.py` (or `dir/name.py`) in a guide is a tracked file of that name."""
    tracked = _tracked()
    missing = [
        f"{guide}: {name}"
        for guide in _guides(tracked)
        for name in _FILE.findall((ROOT / guide).read_text())
        if not _names_a_file(name, tracked)
    ]
    assert missing == []


def test_every_module_a_guide_cites_exists() -> None:
    """Each `plowline_x.y…` in a guide is a module of the tree, or an attribute it has."""
    tracked = _tracked()
    modules = _modules(tracked)
    missing = [
        f"{guide}: {name}"
        for guide in _guides(tracked)
        for name in _MODULE.findall((ROOT / guide).read_text())
        if not _names_a_module(name, modules)
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("plowline_loader.batch.processor", True, id="module"),
        pytest.param("plowline_loader.batch.processor.BatchProcessor.deliver", True, id="method"),
        pytest.param("plowline_loader.exactly_once", False, id="renamed-module"),
        pytest.param("plowline_loader.batch.processor.NoSuchClass", False, id="missing-attribute"),
    ],
)
def test_a_module_name_is_checked_as_meant(name: str, expected: bool) -> None:
    """The check accepts a module and its attributes, and refuses a name no module has."""
    assert _names_a_module(name, _modules(_tracked())) is expected
