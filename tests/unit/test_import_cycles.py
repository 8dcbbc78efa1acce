"""The project's modules import each other without a cycle, function-level imports included."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = sorted([*ROOT.glob("libs/*/src"), *ROOT.glob("services/*/src")])


def project_modules() -> dict[str, Path]:
    """Return every module under ``libs/*/src`` and ``services/*/src`` by its dotted name."""
    modules: dict[str, Path] = {}
    for source in SOURCE_ROOTS:
        for path in source.rglob("*.py"):
            parts = list(path.relative_to(source).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Yield every import statement under ``node`` but those under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for branch in child.orelse:
                yield from _imports(ast.Module(body=[branch], type_ignores=[]))
        else:
            yield from _imports(child)


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """Return the longest project module that ``name`` is or lies in (None: not ours)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imported_modules(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Return the project modules ``module`` imports anywhere in its text."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for statement in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(statement, ast.Import):
            targets = [alias.name for alias in statement.names]
        else:
            base = statement.module or ""
            if statement.level:
                anchor = package.split(".")[: len(package.split(".")) - statement.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in statement.names]
        for target in targets:
            owner = _owner(target, modules)
            if owner is not None and owner != module:
                found.add(owner)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of ``graph`` larger than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(start: str) -> None:  # iterative Tarjan: the graph is deep
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_the_graph_walk_finds_a_function_level_cycle(tmp_path: Path) -> None:
    """A cycle closed by an import inside a function is found; one under TYPE_CHECKING is not."""
    (tmp_path / "a.py").write_text("def f():\n    from b import g\n")
    (tmp_path / "b.py").write_text("import a\n")
    (tmp_path / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n"
    )
    modules = {name: tmp_path / f"{name}.py" for name in ("a", "b", "c")}
    graph = {name: imported_modules(name, path, modules) for name, path in modules.items()}
    graph["a"].add("c")

    assert import_cycles(graph) == [["a", "b"]]


def test_no_import_cycle_among_the_project_modules() -> None:
    """No module of libs/ or services/ imports, directly or through others, itself."""
    modules = project_modules()
    graph = {name: imported_modules(name, path, modules) for name, path in modules.items()}

    cycles = import_cycles(graph)

    assert not cycles, "import cycles (each a set of modules that import one another):\n" + (
        "\n".join("  " + " <-> ".join(cycle) for cycle in cycles)
    )
