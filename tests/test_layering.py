"""The package layering of docs/architecture.md, and import circles, read from the source.

Layering: which reinforge package imports which, imports inside functions and modules
named in strings (for ``importlib.import_module``) included. Lower layers never import
higher ones.

Import circles: none, anywhere among reinforge's modules (package ``__init__`` modules
included). The graph is built with ``ast`` from the import statements (a module named in
a string, such as a lazy export table, is data here, not an import). An edge A -> B
means A's code runs ``import B`` or ``from B import name``; ``from B import name``
also reaches ``B.name`` when that is a module. A package importing its own submodules
in its ``__init__`` is not a circle by itself (the self-reference is dropped), but a
submodule doing ``from its_package import x`` while the package's ``__init__``
imports that submodule is one: ``x`` may not be defined yet when it runs. Not counted:
the implicit import of a module's parent packages (Python always runs those first)
and ``if TYPE_CHECKING:`` blocks (they never run).

Two graphs, both must be free of circles:

- import time: the statements that run when a module is imported (module level,
  class bodies, ``if``/``try``/``with`` blocks). A circle here makes the import order
  matter and breaks with a half-initialised module.
- with the imports inside functions added: a function-local import that closes a
  circle still makes two modules need each other, merely hidden from the import
  system. Invert the dependency instead (a registered slot, as
  ``models/wrapper/openai_access.py`` and ``EpisodeWorkflow``'s adapter factory do)
  or move the shared piece into a module both import.

Each failure lists every circle as a path ``a -> b -> a``.
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
    # the environments wing: workflows over environments, found by entry points
    "envs": {"core", "models", "rewards", "workflows"},
    # the group_advantage operator computes advantages with the trainer's pure functions
    "buffer": {"core", "models", "algorithms"},
    "explorer": {"core", "models", "rewards", "workflows", "buffer", "algorithms"},
    "trainer": {"core", "models", "algorithms", "buffer"},
}

#: (importing module, imported package) pairs that break the layering today
KNOWN_UPWARD: set[tuple[str, str]] = set()


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


def test_no_package_imports_a_higher_one() -> None:
    found = upward_imports(_graph())
    assert found - KNOWN_UPWARD == set(), "new upward imports"
    assert KNOWN_UPWARD - found == set(), "fixed: remove from KNOWN_UPWARD"


#: ``trainer.parallel`` (rank processes and the driver's handle on them) sits above the
#: trainer; the pieces a rank needs inside the trainer live in ``trainer.sharding``
TRAINER_ABOVE = "reinforge.trainer.parallel"


def parallel_imported_from_below(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, target) pairs where a trainer module outside ``trainer.parallel`` imports
    it: ``trainer.parallel`` stays one level, above ``Trainer`` and never below it."""
    found = set()
    for module, targets in graph.items():
        if not module.startswith("reinforge.trainer") or module.startswith(TRAINER_ABOVE):
            continue
        for target in targets:
            if target == TRAINER_ABOVE or target.startswith(TRAINER_ABOVE + "."):
                found.add((module, target))
    return found


def test_trainer_parallel_is_one_level() -> None:
    """Nothing else in ``reinforge.trainer`` imports ``trainer.parallel`` (the strategy, the
    rank plan and the sharded optimizer are ``trainer.sharding``)."""
    found = parallel_imported_from_below(_graph())
    assert not found, f"trainer modules importing trainer.parallel: {sorted(found)}"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_edges(source: str, module: str, *, is_package: bool, in_functions: bool) -> set[str]:
    """The modules ``module`` imports by statement (see the module docstring for what
    counts); ``in_functions`` adds the imports inside function bodies."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(nodes: Iterator[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                if in_functions:
                    visit(ast.iter_child_nodes(node))
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(iter(node.orelse))
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    target = ".".join([*base, node.module] if node.module else base)
                else:
                    target = node.module or ""
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names)
            else:
                visit(ast.iter_child_nodes(node))

    visit(iter(ast.parse(source).body))
    return {m for m in found if m.startswith("reinforge") and _exists(m) and m != module}


def _statement_graph(*, in_functions: bool) -> dict[str, set[str]]:
    return {
        _module_name(path): import_edges(
            path.read_text(encoding="utf-8"),
            _module_name(path),
            is_package=path.name == "__init__.py",
            in_functions=in_functions,
        )
        for path in sorted(SRC.rglob("*.py"))
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle (``[a, b, ..., a]``) per strongly connected group of modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.add(top)
                if top == module:
                    break
            if len(group) > 1:
                groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return [_path_around(graph, group) for group in groups]


def _path_around(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest path from the group's first module back to itself, inside the group."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for target in sorted(graph.get(module, set()) & group):
                if target == start:  # walk back from ``module`` to ``start``
                    path = [module]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target not in came_from:
                    came_from[target] = module
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle through {start}")  # a strongly connected group has one


def _report(found: list[list[str]]) -> str:
    return "import circles:\n" + "\n".join("  " + " -> ".join(c) for c in found)


def test_the_circle_check_sees_what_it_should() -> None:
    """The graph and the search catch a circle, and what is not an import is left out."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert circles(graph) == [["a", "b", "c", "a"]]
    source = (
        "from typing import TYPE_CHECKING\n"
        "from reinforge.workflows.episode import workflow\n"
        "import reinforge.core.episode\n"
        "if TYPE_CHECKING:\n"
        "    from reinforge.models import ModelWrapper\n"
        "def f():\n"
        "    from reinforge.buffer import pipeline\n"
        "LAZY = 'reinforge.explorer'\n"
    )
    args = {"module": "reinforge.x", "is_package": False}
    at_import = import_edges(source, **args, in_functions=False)
    assert at_import == {
        "reinforge.workflows.episode",
        "reinforge.workflows.episode.workflow",
        "reinforge.core.episode",
    }
    assert import_edges(source, **args, in_functions=True) == at_import | {
        "reinforge.buffer",
        "reinforge.buffer.pipeline",
    }


def test_no_import_circle_at_import_time() -> None:
    found = circles(_statement_graph(in_functions=False))
    assert not found, _report(found)


def test_no_import_circle_through_function_local_imports() -> None:
    found = circles(_statement_graph(in_functions=True))
    assert not found, _report(found)
