"""A name → class registry that also resolves dotted import paths.

Workflows, reward functions and (later) operators and algorithms are looked up by
the names users write in YAML. A name that is not registered but looks like
``package.module.ClassName`` is imported, so user code needs no registration step.
"""

from __future__ import annotations

import difflib
import importlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

_log = logging.getLogger(__name__)


def _user_replaces_builtin(existing: Any, new: Any) -> bool:
    """A user's class (defined outside reinforge) takes a name a built-in holds: code
    written for Trinity-RFT registers its own ``math_boxed_workflow`` or
    ``frozen_lake_workflow``, and the file the user loads is the one they mean."""
    return str(getattr(existing, "__module__", "")).startswith("reinforge.") and not str(
        getattr(new, "__module__", "")
    ).startswith("reinforge.")


class RegistryError(KeyError):
    """An unknown name was looked up in a registry."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class Registry:
    """Maps names to classes (or callables) of one kind, e.g. workflows."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._modules: dict[str, Any] = {}

    def register_module(
        self, name: str | None = None, *, force: bool = False
    ) -> Callable[[Any], Any]:
        """Decorator registering the decorated class under ``name`` (default: its own name)."""

        def decorator(obj: Any) -> Any:
            key = name or obj.__name__
            existing = self._modules.get(key)
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
        hint = difflib.get_close_matches(name, self._modules, n=1)
        did_you_mean = f" Did you mean '{hint[0]}'?" if hint else ""
        known = ", ".join(sorted(self._modules)) or "(none)"
        raise RegistryError(
            f"unknown {self.kind} '{name}'.{did_you_mean} Known {self.kind}s: {known}. "
            "A dotted path 'package.module.Class' is also accepted."
        )

    def __contains__(self, name: object) -> bool:
        return name in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    @property
    def modules(self) -> dict[str, Any]:
        return dict(self._modules)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._modules)})"
