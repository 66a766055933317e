"""The pgrun package's modules import each other without a cycle (issue 14 item 2 broke the
app <-> scheduler one): every import counts, the ones under ``TYPE_CHECKING`` and the ones
inside functions too, so a cycle cannot hide behind a lazy import."""

from __future__ import annotations

import ast
from pathlib import Path

import pgrun

PACKAGE = Path(pgrun.__file__).parent


def imports_of(path: Path) -> set[str]:
    """The pgrun modules ``path`` imports (pgrun.x and pgrun.x.y count as x)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pgrun":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("pgrun."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("pgrun.")}
    return found - {path.stem}


def graph() -> dict[str, set[str]]:
    modules = {p.stem: p for p in PACKAGE.glob("*.py")}
    return {name: imports_of(path) & set(modules) for name, path in modules.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        path.pop()
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_cycle_finder_finds_one() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set(), "c": {"a"}}) is None


def test_the_package_has_no_import_cycle() -> None:
    edges = graph()
    assert {"app", "scheduler", "client", "loops"} <= set(edges)
    assert "loops" in edges["scheduler"] and "app" not in edges["scheduler"]
    assert cycle(edges) is None, " -> ".join(cycle(edges) or [])
