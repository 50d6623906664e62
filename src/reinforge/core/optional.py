"""Optional dependencies: import one, or say which extra installs it."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingDependencyError(ImportError):
    """A feature needs a package the installed extras do not include."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """``importlib.import_module(module)``, or an error naming the feature and the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{feature} needs the '{module.split('.')[0]}' package, which this install lacks: "
            f"pip install 'reinforge[{extra}]'"
        ) from exc
