"""Core data model: tasks, experiences, ids and registries. Imports nothing else of reinforge."""

from reinforge.core.eid import EID
from reinforge.core.experience import Experience
from reinforge.core.generation import FormatConfig, GenerationConfig
from reinforge.core.registry import Registry, RegistryError
from reinforge.core.task import Task

__all__ = [
    "EID",
    "Experience",
    "FormatConfig",
    "GenerationConfig",
    "Registry",
    "RegistryError",
    "Task",
]
