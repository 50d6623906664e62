"""Rewrites Trinity-RFT and rLLM imports to reinforge's mirror packages, one file at a time.

Only import statements change: ``from trinity.X import ...`` becomes
``from reinforge.trinity.X import ...`` (and ``rllm.`` likewise) when reinforge has a
module at that path; strings, comments and every other line stay as they were. Import
statements are found with the tokenizer, so a docstring that shows an import is not
rewritten. What cannot be mapped is reported with its line: an import of a module
without a mirror is left unchanged; one naming something the mirror does not export is
rewritten all the same (its other names map). Upstream files import their own helpers by
absolute path (``from trinity.common.workflows.envs.frozen_lake.utils import *``); when
such a module has no mirror but a file of its name lies beside the importing one (both
copied into one plugin folder), the import becomes relative (``from .utils import *``).
A file beside the importing one also wins over a mirror that lacks some of the
imported names, when that file defines all of them: the user's copy is what they mean.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from reinforge.cli.module_exports import Unreadable, imported_all, static_all

#: upstream top-level package -> its mirror under reinforge
MIRRORS = {"trinity": "reinforge.trinity", "rllm": "reinforge.rllm"}

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # src/reinforge


@dataclass(frozen=True)
class Unmapped:
    """An import ``reinforge migrate`` could not (fully) carry over."""

    line: int
    module: str
    reason: str


class RewriteError(RuntimeError):
    """An unexpected failure while rewriting one import statement: ``line`` names it, so
    ``reinforge migrate`` can say where it happened instead of printing a traceback."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass
class RewriteResult:
    """A file's text before and after, and what was left for a hand edit."""

    old: str
    new: str
    unmapped: list[Unmapped] = field(default_factory=list)
    #: imports pointed at a file beside this one: (line, upstream module, relative module)
    to_siblings: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.old != self.new


def _mirror_path(module: str) -> Path | None:
    """The file of reinforge module ``module`` (a package's ``__init__.py``), or None."""
    rel = Path(*module.split(".")[1:])
    for candidate in (
        (_PACKAGE_ROOT / rel).with_suffix(".py"),
        _PACKAGE_ROOT / rel / "__init__.py",
    ):
        if candidate.is_file():
            return candidate
    return None


#: modules whose exports are being read (a cycle of ``from m import __all__`` stops here)
_READING: set[str] = set()


@cache
def _exported_names(module: str) -> frozenset[str] | None:
    """The mirror module's ``__all__`` plus the names it defines or imports at top level
    and its submodules; None when it has none of them (or is not a reinforge module file).

    ``__all__`` is read statically (:mod:`reinforge.cli.module_exports`: starred and
    concatenated lists, ``+=``, ``from m import __all__``); a form that reading cannot
    follow is taken from the imported module instead.
    """
    path = _mirror_path(module)
    if path is None or module in _READING:
        return None
    _READING.add(module)
    try:
        try:
            listed = static_all(path, module, _exported_names)
        except Unreadable:
            listed = imported_all(module)
    finally:
        _READING.discard(module)
    # what the module defines, assigns or imports at top level is importable from it too
    names: set[str] = set(listed or ()) | _defined_names(path)
    if path.name == "__init__.py":
        names.update(p.stem for p in path.parent.glob("*.py") if p.stem != "__init__")
        names.update(p.parent.name for p in path.parent.glob("*/__init__.py"))
    return frozenset(names) if listed is not None or names else None


def _defined_names(path: Path) -> frozenset[str]:
    """The names a module file defines or imports at its top level (unreadable: none)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def _sibling_defines(
    siblings: Mapping[str, Path] | frozenset[str], stem: str, wanted: list[str]
) -> bool:
    """Whether the file ``stem`` beside the importing one defines every name of ``wanted``."""
    if not isinstance(siblings, Mapping) or stem not in siblings or "*" in wanted:
        return False
    path = siblings[stem]
    if path.is_dir():
        path = path / "__init__.py"
    return set(wanted) <= _defined_names(path)


#: where the reasons point a user for what is not mirrored
_NOT_PROVIDED = "docs/migrating.md, 'What is not provided, and why'"


def _no_module(module: str) -> str:
    """Why an import of upstream ``module`` was left as it was, and what to change."""
    path = module.replace(".", "/") + ".py"
    return (
        f"no module reinforge.{module} in reinforge; change this line: copy upstream's "
        f"{path} beside this file (migrate then imports it from there) or import what it "
        f"gives from elsewhere ({_NOT_PROVIDED})"
    )


def _no_name(module: str, name: str) -> str:
    """Why ``from module import name`` will fail after the rewrite, and what to change."""
    return (
        f"reinforge.{module} has no '{name}'; change this line: take '{name}' out of it "
        f"and define or import it yourself ({_NOT_PROVIDED})"
    )


def _root(module: str) -> str:
    return module.split(".", 1)[0]


def _import_statements(text: str) -> list[tuple[int, int, int]]:
    """(first row, last row, column) of each import statement, from the tokenizer; text
    the tokenizer cannot read (an unclosed bracket at the end) is a ``SyntaxError``."""
    try:
        return _scan_imports(text)
    except tokenize.TokenError as exc:
        message, (line, column) = exc.args
        raise SyntaxError(f"{message} (line {line})", ("<source>", line, column, None)) from exc


def _scan_imports(text: str) -> list[tuple[int, int, int]]:
    statements: list[tuple[int, int, int]] = []
    first: tokenize.TokenInfo | None = None
    skip = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if (
                first is not None
                and first.type == tokenize.NAME
                and first.string in ("import", "from")
            ):
                statements.append((first.start[0], token.start[0], first.start[1]))
            first = None
        elif first is None and token.type not in skip:
            first = token
        elif token.type == tokenize.OP and token.string == ";":
            first = None  # ``x = 1; import y`` is left alone: not a line-leading import
    return statements


def _rewrite_from(line: str, col: int, module: str) -> str:
    pattern = re.compile(r"(from\s+)" + re.escape(module) + r"(?=[\s(])")
    head, tail = line[:col], line[col:]
    return head + pattern.sub(lambda m: m.group(1) + f"reinforge.{module}", tail, count=1)


def _rewrite_to_sibling(line: str, col: int, module: str) -> str:
    pattern = re.compile(r"(from\s+)" + re.escape(module) + r"(?=[\s(])")
    head, tail = line[:col], line[col:]
    stem = module.rsplit(".", 1)[-1]
    return head + pattern.sub(lambda m: m.group(1) + f".{stem}", tail, count=1)


def rewrite_source(
    text: str, siblings: Mapping[str, Path] | frozenset[str] = frozenset()
) -> RewriteResult:
    """``text`` with its Trinity-RFT / rLLM imports pointed at reinforge's mirrors.

    ``siblings`` are the files beside this one (module name -> path; or names only): an
    upstream module without a mirror whose last part is one of them is imported from
    that file, and so is one whose mirror lacks names that file defines.
    """
    lines = text.splitlines(keepends=True)
    result = RewriteResult(old=text, new=text)
    for first, last, col in _import_statements(text):
        try:
            _rewrite_statement(lines, first, last, col, siblings, result)
        except Exception as exc:  # a bug here must name the line, not end in a traceback
            raise RewriteError(first, f"{type(exc).__name__}: {exc}") from exc
    result.new = "".join(lines)
    return result


def _rewrite_statement(
    lines: list[str],
    first: int,
    last: int,
    col: int,
    siblings: Mapping[str, Path] | frozenset[str],
    result: RewriteResult,
) -> None:
    """Rewrite the import statement on rows ``first``..``last`` of ``lines`` in place."""
    source = "".join(lines[first - 1 : last])[col:]
    try:
        statement = ast.parse(source).body[0]
    except (SyntaxError, IndexError):
        return
    if isinstance(statement, ast.ImportFrom):
        if statement.level or not statement.module or _root(statement.module) not in MIRRORS:
            return
        target = f"reinforge.{statement.module}"
        stem = statement.module.rsplit(".", 1)[-1]
        wanted = [alias.name for alias in statement.names]
        exported = _exported_names(target)
        mirror_lacks = exported is not None and not set(wanted) <= exported
        if (_mirror_path(target) is None and stem in siblings) or (
            mirror_lacks and _sibling_defines(siblings, stem, wanted)
        ):
            lines[first - 1] = _rewrite_to_sibling(lines[first - 1], col, statement.module)
            result.to_siblings.append((first, statement.module, f".{stem}"))
            return
        if _mirror_path(target) is None:
            result.unmapped.append(Unmapped(first, statement.module, _no_module(statement.module)))
            return
        for alias in statement.names:
            if exported is not None and alias.name != "*" and alias.name not in exported:
                result.unmapped.append(
                    Unmapped(first, statement.module, _no_name(statement.module, alias.name))
                )
        lines[first - 1] = _rewrite_from(lines[first - 1], col, statement.module)
    elif isinstance(statement, ast.Import):
        _rewrite_import(statement, lines, first, last, col, result)


def _rewrite_import(
    statement: ast.Import, lines: list[str], first: int, last: int, col: int, result: RewriteResult
) -> None:
    """``import trinity.X [as y]``: the mirror path; a plain one also binds ``trinity``."""
    upstream = [a for a in statement.names if _root(a.name) in MIRRORS]
    if not upstream:
        return
    missing = [a.name for a in upstream if _mirror_path(f"reinforge.{a.name}") is None]
    for name in missing:
        result.unmapped.append(Unmapped(first, name, _no_module(name)))
    if missing:
        return
    if first != last or len(statement.names) != 1:
        result.unmapped.append(
            Unmapped(first, upstream[0].name, "multi-name or multi-line 'import': edit by hand")
        )
        return
    alias = statement.names[0]
    line = lines[first - 1]
    head, tail = line[:col], line[col:]
    replacement = f"import reinforge.{alias.name}"
    if alias.asname is None:  # keep the name ``trinity`` / ``rllm`` bound, as before
        replacement = f"from reinforge import {_root(alias.name)}; {replacement}"
    tail = re.sub(
        r"import\s+" + re.escape(alias.name) + r"\b", lambda _: replacement, tail, count=1
    )
    lines[first - 1] = head + tail


def sibling_modules(file: Path) -> dict[str, Path]:
    """The other ``*.py`` files and packages in ``file``'s folder, by module name."""
    folder = file.parent
    found = {p.stem: p for p in folder.glob("*.py") if p != file and p.stem != "__init__"}
    found.update({p.parent.name: p.parent for p in folder.glob("*/__init__.py")})
    return found


def python_files(path: Path) -> list[Path]:
    """``path`` itself, or every ``*.py`` under it (sorted)."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*.py") if p.is_file())
    return [path]
