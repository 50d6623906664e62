"""User code named in a config: Python files and folders imported before the run starts.

A workflow, reward function or operator written for a project lives in the user's
own files; importing them runs their ``@WORKFLOWS.register_module(...)`` decorators,
so the config can name them like built-ins. ``plugins`` entries are files or folders,
relative to the config file.

A folder imports like a package: its parent folder goes on ``sys.path`` and the
folder is imported by its own name, then each of its ``*.py`` files as a submodule
(``my_plugins.rewards``), so a file can import a sibling (``from my_plugins import
helpers`` or ``from . import helpers``); the folder itself goes on ``sys.path`` too,
for code that imports a sibling by its bare name (``import helpers``). A file is
imported by its name with its folder on ``sys.path``, so ``plugin.MyReward`` names
the same module the plugin loaded; another project's file of the same name gives the
name up to it. A name taken by an installed module falls back to a private one. Workflow, experience operator and reward classes without a
``register_module`` decorator are then registered under their class names
(``plugin_registration``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

from reinforge.config import ConfigError
from reinforge.launcher.plugin_registration import register_plugin_classes


def _private_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    return f"reinforge_plugin_{path.stem}_{digest}"


def _loaded_from(path: Path) -> ModuleType | None:
    """The module already imported from ``path``, if any. Only files of the same name,
    or links, are resolved: resolving every loaded module's file costs ~0.1 s with torch
    loaded, per plugin file."""
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or (os.path.basename(file) != path.name and not os.path.islink(file)):
            continue
        if Path(file).resolve() == path:
            return module
    return None


def _on_sys_path(folder: Path) -> None:
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def _is_library(file: str) -> bool:
    """A module installed with Python or a package (not a user's project file)."""
    resolved = Path(file).resolve()
    if {"site-packages", "dist-packages"} & set(resolved.parts):
        return True
    return resolved.is_relative_to(Path(sys.base_prefix).resolve())


def _import_by_name(name: str, path: Path) -> ModuleType | None:
    """``import name`` when that resolves to ``path``; None when the name belongs to another.

    Another project's file of the same name (two projects' ``plugin.py`` run in one
    process: a notebook, a test session) gives the name up to this one, so that
    ``plugin.MyReward`` in this config names this config's file, as in a fresh process;
    an installed module keeps its name (this file is then imported under a private one)."""
    existing = sys.modules.get(name)
    if existing is not None:
        file = getattr(existing, "__file__", None)
        if file and Path(file).resolve() == path:
            return existing
        if not file or _is_library(file):
            return None
        del sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or Path(spec.origin).resolve() != path:
        return None
    return importlib.import_module(name)


def _import_private(path: Path) -> ModuleType:
    name = _private_name(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_plugin_file(path: Path) -> ModuleType:
    """Import one file once per process (a second call returns the same module)."""
    path = path.resolve()
    module = _loaded_from(path)
    if module is not None:
        return module
    _on_sys_path(path.parent)
    return _import_by_name(path.stem, path) or _import_private(path)


def load_plugin_folder(folder: Path) -> list[ModuleType]:
    """Import ``folder`` as a package, then each of its ``*.py`` files as a submodule."""
    folder = folder.resolve()
    _on_sys_path(folder.parent)
    _on_sys_path(folder)
    package = folder.name
    init = folder / "__init__.py"
    if not package.isidentifier() or (
        package in sys.modules and not _same_package(sys.modules[package], folder)
    ):
        return [load_plugin_file(f) for f in sorted(folder.glob("*.py"))]
    modules = [importlib.import_module(package)] if init.is_file() else []
    for file in sorted(folder.glob("*.py")):
        if file.name != "__init__.py":
            modules.append(
                _loaded_from(file.resolve()) or importlib.import_module(f"{package}.{file.stem}")
            )
    return modules


def _same_package(module: ModuleType, folder: Path) -> bool:
    paths = [Path(p).resolve() for p in getattr(module, "__path__", [])]
    return folder in paths


def load_plugins(entries: list[str], config_dir: str | None) -> list[ModuleType]:
    """Import every ``plugins`` entry; a failure is a ``ConfigError`` naming the entry."""
    base = Path(config_dir) if config_dir else Path.cwd()
    modules: list[ModuleType] = []
    for i, entry in enumerate(entries):
        path = Path(entry).expanduser()
        if not path.is_absolute():
            path = base / path
        if not (path.is_dir() or (path.is_file() and path.suffix == ".py")):
            raise ConfigError(f"plugins[{i}]: '{path}' is not a .py file or a folder")
        try:
            loaded = load_plugin_folder(path) if path.is_dir() else [load_plugin_file(path)]
        except Exception as exc:
            tb = traceback.format_exception(exc)[-3:]
            raise ConfigError(
                f"plugins[{i}]: importing '{path}' failed: {type(exc).__name__}: {exc}\n"
                + "".join(tb)
            ) from exc
        try:
            register_plugin_classes(loaded)
        except ValueError as exc:
            raise ConfigError(f"plugins[{i}] ('{entry}'): {exc}") from exc
        modules.extend(loaded)
    return modules
