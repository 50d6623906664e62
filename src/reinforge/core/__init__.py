"""Core data model: tasks, experiences, ids and registries. Imports nothing else of reinforge.

``Experience`` needs torch; the other names do not, so they are imported on first
use (PEP 562) and ``from reinforge.core.registry import Registry`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "EID": "reinforge.core.eid",
    "Experience": "reinforge.core.experience",
    "FormatConfig": "reinforge.core.generation",
    "GenerationConfig": "reinforge.core.generation",
    "Registry": "reinforge.core.registry",
    "RegistryError": "reinforge.core.registry",
    "Task": "reinforge.core.task",
}

__all__ = [
    "EID",
    "Experience",
    "FormatConfig",
    "GenerationConfig",
    "Registry",
    "RegistryError",
    "Task",
]

if TYPE_CHECKING:
    from reinforge.core.eid import EID
    from reinforge.core.experience import Experience
    from reinforge.core.generation import FormatConfig, GenerationConfig
    from reinforge.core.registry import Registry, RegistryError
    from reinforge.core.task import Task


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reinforge.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
