"""What a mirror module exports, read from its source without importing it.

``reinforge migrate`` checks each imported name against the mirror's exports. Reading
them statically keeps the command fast (no torch import) and safe on a broken module,
but ``__all__`` is not always a literal: the mirror writes ``[*_moved, "x"]``,
``a + b``, ``__all__ += [...]``, ``__all__.extend(...)`` and ``from m import __all__``.
:func:`static_all` follows those forms; what it still cannot follow raises
:class:`Unreadable`, and the caller then asks the imported module itself
(:func:`imported_all`), so no form of ``__all__`` makes the command fail.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path


class Unreadable(ValueError):
    """``__all__`` is computed in a way the static reading does not follow."""


#: resolves ``from <module> import __all__`` to that module's names (None: unknown)
Resolver = Callable[[str], "frozenset[str] | None"]


def _strings(node: ast.expr, env: dict[str, list[str]], where: Path) -> list[str]:
    """The strings of a list/tuple expression, following ``*name`` and ``+``."""
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        out: list[str] = []
        for element in node.elts:
            if isinstance(element, ast.Starred):
                out += _strings(element.value, env, where)
            elif isinstance(element, ast.Constant) and isinstance(element.value, str):
                out.append(element.value)
            else:
                raise Unreadable(f"{where}:{element.lineno}: a non-string entry in __all__")
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _strings(node.left, env, where) + _strings(node.right, env, where)
    if isinstance(node, ast.Name) and node.id in env:
        return list(env[node.id])
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "tuple", "sorted", "set")
        and len(node.args) == 1
    ):
        return _strings(node.args[0], env, where)
    raise Unreadable(f"{where}:{node.lineno}: __all__ is computed ({ast.unparse(node)[:60]})")


def _absolute(module: str | None, level: int, package: str) -> str | None:
    """``from .x import y`` inside ``package`` -> the absolute module name."""
    if not level:
        return module
    parts = package.split(".")
    if level > len(parts):
        return None
    base = parts[: len(parts) - level + 1]
    return ".".join(base + ([module] if module else []))


def static_all(path: Path, module: str, resolve: Resolver) -> list[str] | None:
    """``__all__`` of the module at ``path`` (named ``module``); None when it sets none.

    Raises :class:`Unreadable` for a form it cannot follow (and ``SyntaxError`` for a
    file that is not Python).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    env: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name != "__all__":
                    continue
                source = _absolute(node.module, node.level, package)
                names = resolve(source) if source else None
                if names is None:
                    raise Unreadable(f"{path}:{node.lineno}: __all__ of {source} is unknown")
                env[alias.asname or "__all__"] = sorted(names)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    try:
                        env[target.id] = _strings(node.value, env, path)
                    except Unreadable:
                        if target.id == "__all__":
                            raise
                        env.pop(target.id, None)  # some other value: not a list of names
        elif isinstance(node, ast.AugAssign) and _is_all(node.target):
            env["__all__"] = env.get("__all__", []) + _strings(node.value, env, path)
        elif isinstance(node, ast.Expr) and _is_all_call(node.value):
            call = node.value
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            if call.func.attr == "append":
                values = [[_constant(arg, path) for arg in call.args]]
            else:
                values = [_strings(arg, env, path) for arg in call.args]
            env["__all__"] = env.get("__all__", []) + [n for v in values for n in v]
    return env.get("__all__")


def _is_all(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "__all__"


def _is_all_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and _is_all(node.func.value)
        and node.func.attr in ("extend", "append")
    )


def _constant(node: ast.expr, where: Path) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise Unreadable(f"{where}:{node.lineno}: __all__.append of a computed value")


def imported_all(module: str) -> list[str] | None:
    """``__all__`` of the imported module (its public names when it sets none); None when
    it cannot be imported here (a missing optional dependency, say)."""
    try:
        loaded = importlib.import_module(module)
    except Exception:  # any failure means "unknown", never a crash of the command
        return None
    names = getattr(loaded, "__all__", None)
    if names is None:
        names = [n for n in vars(loaded) if not n.startswith("_")]
    return [str(n) for n in names]
