"""The package layering of docs/architecture.md, read from the source: which reinforge
package imports which, imports inside functions and modules named in strings (for
``importlib.import_module``) included.

Lower layers never import higher ones, and no package has an import circle among its
own modules. The violations that exist today are listed by name below; the test fails
on any new one and on any listed one that is gone (so the list only shrinks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "reinforge"

#: what each package may import (besides itself); packages not named may import anything
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "models": {"core"},
    "rewards": {"core"},
    "algorithms": {"core"},
    "workflows": {"core", "models", "rewards"},
    # the group_advantage operator computes advantages with the trainer's pure functions
    "buffer": {"core", "models", "algorithms"},
    "explorer": {"core", "models", "rewards", "workflows", "buffer", "algorithms"},
    "trainer": {"core", "models", "algorithms", "buffer"},
}

#: (importing module, imported package) pairs that break the layering today
KNOWN_UPWARD: set[tuple[str, str]] = set()

#: import circles inside one package today, each as its sorted member modules
KNOWN_CIRCLES: set[tuple[str, ...]] = {
    ("reinforge.workflows.episode.adapter", "reinforge.workflows.episode.workflow"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[str]:
    """Every reinforge module ``path`` imports, at module level or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = (
        _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    )
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("reinforge.")
            and _exists(node.value)
        ):
            yield node.value  # a module imported by name (importlib.import_module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("reinforge"):
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if not target.startswith("reinforge"):
                continue
            yield target
            for alias in node.names:  # `from pkg import module` imports pkg.module
                candidate = f"{target}.{alias.name}"
                if _exists(candidate):
                    yield candidate


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (SRC / rel).with_suffix(".py").exists() or (SRC / rel / "__init__.py").exists()


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        graph[_module_name(path)] = {m for m in _imports(path) if _exists(m)}
    return graph


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    found = set()
    for module, targets in graph.items():
        allowed = ALLOWED.get(_package(module))
        if allowed is None:
            continue
        for target in targets:
            other = _package(target)
            if other and other != _package(module) and other not in allowed:
                found.add((module, other))
    return found


def circles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Strongly connected components of more than one module within one package
    (a package's ``__init__`` re-exporting its modules is not counted as an edge)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[tuple[str, ...]] = set()

    def edges(module: str) -> list[str]:
        same = _package(module)
        return [t for t in graph[module] if _package(t) == same and not _is_package_init(t)]

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in edges(module):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            members = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                members.append(top)
                if top == module:
                    break
            if len(members) > 1:
                found.add(tuple(sorted(members)))

    for module in sorted(graph):
        if module not in index and not _is_package_init(module):
            visit(module)
    return found


def _is_package_init(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (SRC / rel / "__init__.py").exists()


def test_no_package_imports_a_higher_one() -> None:
    found = upward_imports(_graph())
    assert found - KNOWN_UPWARD == set(), "new upward imports"
    assert KNOWN_UPWARD - found == set(), "fixed: remove from KNOWN_UPWARD"


def test_no_import_circle_inside_a_package() -> None:
    found = circles(_graph())
    assert found - KNOWN_CIRCLES == set(), "new import circles"
    assert KNOWN_CIRCLES - found == set(), "fixed: remove from KNOWN_CIRCLES"
