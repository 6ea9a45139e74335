"""The layout contract, read from the source: no two modules of kb import each other (directly or round a
longer loop), and kb, outside its CLI package, imports nothing from the front ends or the indexer."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("kb", "indexer", "server", "tui")


def _modules(package: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(path: Path, modules: frozenset[str] = frozenset()) -> set[str]:
    """Every module an ``import`` names anywhere in the file (in functions and TYPE_CHECKING blocks too).
    ``from pkg import name`` names the module ``pkg.name`` where that is one of ``modules``, else ``pkg``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                names.add(sub if sub in modules else node.module)
    return names


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (a submodule's implicit import of its own
    package is not an edge: it is how packages work, not a loop someone wrote)."""
    modules = _modules(package)
    keys = frozenset(modules)
    return {name: (_imports(path, keys) & keys) - {name} for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_walk_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph("kb")
    assert "kb.engine" in graph["kb.cli.match"] or "kb.cli.common" in graph["kb.cli.match"]
    assert "kb.distill" in graph["kb.issues"]  # imported inside issue_document()


def test_kb_has_no_import_cycle() -> None:
    assert cycles(import_graph("kb")) == []


def test_no_package_has_an_import_cycle() -> None:
    for package in PACKAGES[1:]:
        assert cycles(import_graph(package)) == [], package


def test_kb_imports_no_front_end_outside_its_cli() -> None:
    wrong = {
        name: sorted(n for n in _imports(path) if n.split(".")[0] in PACKAGES[1:])
        for name, path in _modules("kb").items()
        if not name.startswith("kb.cli")
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_no_front_end_imports_the_cli() -> None:
    for package in PACKAGES[1:]:
        for name, path in _modules(package).items():
            assert not any(n == "kb.cli" or n.startswith("kb.cli.") for n in _imports(path)), name
