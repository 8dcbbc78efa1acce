"""The repeater's modules import each other without circles, deferred imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import plowline_repeater

PACKAGE = "plowline_repeater"


def _imports(path: Path) -> set[str]:
    """Return the package modules a file imports anywhere (top level or inside functions)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            found.add(node.module.removeprefix(f"{PACKAGE}."))
        elif isinstance(node, ast.Import):
            found |= {
                a.name.removeprefix(f"{PACKAGE}.") for a in node.names if a.name.startswith(PACKAGE)
            }
    return found


def _cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Return every import path that leads from a module back to itself."""
    cycles: list[tuple[str, ...]] = []

    def visit(path: tuple[str, ...]) -> None:
        for target in sorted(graph.get(path[-1], set())):
            if target == path[0]:
                cycles.append((*path, target))
            elif target not in path and target > path[0]:
                visit((*path, target))

    for start in sorted(graph):
        visit((start,))
    return cycles


def test_no_module_of_the_repeater_imports_itself_back() -> None:
    """A module two commands need is a module of its own, so no import path returns to its start."""
    root = Path(plowline_repeater.__file__).parent
    graph = {path.stem: _imports(path) for path in root.glob("*.py")}
    expected: list[tuple[str, ...]] = []
    assert expected == _cycles(graph)
