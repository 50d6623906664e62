"""Core data model: tasks, experiences, ids and registries. Imports nothing else of reinforge.

``Experience`` needs torch; the other names do not, so they are imported on first
use (PEP 562) and ``from reinforge.core.registry import Registry`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reinforge.core.lazy_exports import lazy_exports

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


__getattr__, __dir__ = lazy_exports("reinforge.core", globals(), _EXPORTS)
