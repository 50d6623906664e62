"""A name → class registry that also resolves dotted import paths.

Workflows, reward functions and (later) operators and algorithms are looked up by
the names users write in YAML. A name that is not registered but looks like
``package.module.ClassName`` is imported, so user code needs no registration step.

A registry may also name an entry-point group (``reinforge.workflows``): installed
packages list names there that load only when looked up, which is how the
environments wing (``reinforge.envs``) stays unimported until a config names one.
"""

from __future__ import annotations

import difflib
import importlib
import logging
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

_log = logging.getLogger(__name__)


def _is_builtin(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "")).startswith("reinforge.")


def _user_replaces_builtin(existing: Any, new: Any) -> bool:
    """A user's class (defined outside reinforge) takes a name a built-in holds: code
    written for Trinity-RFT registers its own ``math_boxed_workflow`` or
    ``frozen_lake_workflow``, and the file the user loads is the one they mean."""
    return _is_builtin(existing) and not _is_builtin(new)


class RegistryError(KeyError):
    """An unknown name was looked up in a registry."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class Registry:
    """Maps names to classes (or callables) of one kind, e.g. workflows."""

    def __init__(self, kind: str, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self._modules: dict[str, Any] = {}
        self._entry_point_group = entry_point_group
        self._lazy: dict[str, metadata.EntryPoint] | None = None

    def _entry_points(self) -> dict[str, metadata.EntryPoint]:
        """The group's entry points by name, read from the installed packages once."""
        if self._lazy is None:
            group = self._entry_point_group
            found = metadata.entry_points(group=group) if group else ()
            self._lazy = {ep.name: ep for ep in found}
        return self._lazy

    def _load_entry_point(self, name: str) -> Any:
        entry_point = self._entry_points()[name]
        try:
            obj = entry_point.load()
        except Exception as exc:
            where = entry_point.dist.name if entry_point.dist else "an installed package"
            raise RegistryError(
                f"{self.kind} '{name}' ({entry_point.value}, listed by {where}) "
                f"cannot be loaded: {type(exc).__name__}: {exc}"
            ) from exc
        if name not in self._modules:  # loading the module usually registers it already
            self.register_module(name)(obj)
        return self._modules[name]

    def register_module(
        self, name: str | None = None, *, force: bool = False
    ) -> Callable[[Any], Any]:
        """Decorator registering the decorated class under ``name`` (default: its own name)."""

        def decorator(obj: Any) -> Any:
            key = name or obj.__name__
            existing = self._modules.get(key)
            if existing is None:
                # a user's class takes a built-in name not loaded yet (built-ins skip the
                # check, so importing them does not read the installed packages' metadata)
                if not _is_builtin(obj) and key in self._entry_points():
                    _log.warning(
                        "%s name '%s' now names %s.%s (it named the built-in %s)",
                        self.kind,
                        key,
                        obj.__module__,
                        obj.__qualname__,
                        self._entry_points()[key].value,
                    )
            elif existing is not None and _user_replaces_builtin(obj, existing) and not force:
                return obj  # a built-in loaded after a user's class took its name: theirs stays
            if existing is not None and existing is not obj and not force:
                same_def = getattr(existing, "__module__", None) == getattr(
                    obj, "__module__", None
                ) and getattr(existing, "__qualname__", None) == getattr(obj, "__qualname__", None)
                if _user_replaces_builtin(existing, obj):
                    _log.warning(
                        "%s name '%s' now names %s.%s (it named the built-in %s.%s)",
                        self.kind,
                        key,
                        obj.__module__,
                        obj.__qualname__,
                        existing.__module__,
                        existing.__qualname__,
                    )
                elif not same_def:
                    raise ValueError(
                        f"{self.kind} name '{key}' is already registered to "
                        f"{existing.__module__}.{existing.__qualname__}"
                    )
            self._modules[key] = obj
            return obj

        return decorator

    def get(self, name: str) -> Any:
        """Return the object registered as ``name``, importing a dotted path if needed."""
        if name in self._modules:
            return self._modules[name]
        if name in self._entry_points():
            return self._load_entry_point(name)
        if "." in name:
            module_name, _, attr = name.rpartition(".")
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise RegistryError(
                    f"unknown {self.kind} '{name}': cannot import module '{module_name}' ({exc})"
                ) from exc
            if not hasattr(module, attr):
                raise RegistryError(
                    f"unknown {self.kind} '{name}': module '{module_name}' has no '{attr}'"
                )
            return getattr(module, attr)
        names = sorted(self)
        hint = difflib.get_close_matches(name, names, n=1)
        did_you_mean = f" Did you mean '{hint[0]}'?" if hint else ""
        known = ", ".join(names) or "(none)"
        raise RegistryError(
            f"unknown {self.kind} '{name}'.{did_you_mean} Known {self.kind}s: {known}. "
            "A dotted path 'package.module.Class' is also accepted."
        )

    def __contains__(self, name: object) -> bool:
        return name in self._modules or name in self._entry_points()

    def __iter__(self) -> Iterator[str]:
        """Every name: those registered and those an entry point lists, unloaded."""
        return iter({**dict.fromkeys(self._modules), **dict.fromkeys(self._entry_points())})

    def __len__(self) -> int:
        return len(set(self._modules) | set(self._entry_points()))

    @property
    def modules(self) -> dict[str, Any]:
        """The objects loaded so far (entry points not yet looked up are left out)."""
        return dict(self._modules)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._modules)})"
