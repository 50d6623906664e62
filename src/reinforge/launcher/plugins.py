"""User code named in a config: Python files imported before the run starts.

A workflow, reward function or operator written for a project lives in the user's
own file; importing it runs its ``@WORKFLOWS.register_module(...)`` decorators, so
the config can name it like a built-in. ``plugins`` entries are files or folders
(every ``*.py`` in them), relative to the config file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from reinforge.config import ConfigError


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    return f"reinforge_plugin_{path.stem}_{digest}"


def load_plugin_file(path: Path) -> ModuleType:
    """Import one file once per process (a second call returns the same module)."""
    name = _module_name(path.resolve())
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


def load_plugins(entries: list[str], config_dir: str | None) -> list[ModuleType]:
    base = Path(config_dir) if config_dir else Path.cwd()
    modules = []
    for i, entry in enumerate(entries):
        path = Path(entry).expanduser()
        if not path.is_absolute():
            path = base / path
        if path.is_dir():
            files = sorted(path.glob("*.py"))
        elif path.is_file() and path.suffix == ".py":
            files = [path]
        else:
            raise ConfigError(f"plugins[{i}]: '{path}' is not a .py file or a folder")
        for file in files:
            try:
                modules.append(load_plugin_file(file))
            except Exception as exc:
                tb = traceback.format_exception(exc)[-3:]
                raise ConfigError(
                    f"plugins[{i}]: importing '{file}' failed: {type(exc).__name__}: {exc}\n"
                    + "".join(tb)
                ) from exc
    return modules
