"""The house rules on size (issue 42): no Python file over 500 lines, no class with more
than 25 methods. Big files and classes are where the design's lines blur; this keeps
them from growing back. (The import-circle rule is ``test_layering.py``'s.)"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 500
MAX_METHODS = 25
#: where both rules hold; tests/ holds only the line rule (its classes group tests)
CODE_DIRS = ("src", "bench", "tools")
LINE_DIRS = (*CODE_DIRS, "tests")


def _python_files(dirs: tuple[str, ...]) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py") if ".venv" not in p.parts)


def too_long(paths: list[Path], limit: int = MAX_LINES, root: Path = ROOT) -> list[str]:
    """``path: N lines`` (relative to ``root``) for each file over ``limit`` lines."""
    found = []
    for path in paths:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def too_many_methods(source: str, limit: int = MAX_METHODS) -> list[str]:
    """``Class: N methods`` for each class (nested ones too) whose own body has more than
    ``limit`` ``def``/``async def`` statements (properties and static methods count)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            count = sum(
                isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) for item in node.body
            )
            if count > limit:
                found.append(f"{node.name}: {count} methods")
    return found


def test_no_file_over_500_lines() -> None:
    paths = _python_files(LINE_DIRS)
    assert paths, "no Python files found: the test would pass vacuously"
    assert too_long(paths) == []


def test_no_class_over_25_methods() -> None:
    found = []
    for path in _python_files(CODE_DIRS):
        for hit in too_many_methods(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(ROOT)}: {hit}")
    assert found == []


def test_the_checks_see_what_they_should(tmp_path: Path) -> None:
    """The counters themselves: a 26-method class and a 501-line file are caught, the
    limits are not (so a passing suite means the rules hold, not that nothing was read)."""
    methods = "\n".join(
        f"    def m{i}(self): ...\n    async def a{i}(self): ..." for i in range(13)
    )
    assert too_many_methods(f"class Big:\n{methods}\n") == ["Big: 26 methods"]
    assert too_many_methods(f"class Ok:\n{methods}\n    x = 1\n", limit=26) == []
    nested = "class Outer:\n    class Inner:\n" + methods.replace("    ", "        ") + "\n"
    assert too_many_methods(nested) == ["Inner: 26 methods"]
    long_file = tmp_path / "long.py"
    long_file.write_text("x = 1\n" * 501)
    ok_file = tmp_path / "ok.py"
    ok_file.write_text("x = 1\n" * 500)
    assert too_long([long_file, ok_file], root=tmp_path) == ["long.py: 501 lines"]
