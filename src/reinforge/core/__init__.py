"""Core data model: tasks, experiences, episodes, ids and registries. Imports nothing else of reinforge.

``Experience`` needs torch; the other names do not, so they are imported on first
use (PEP 562) and ``from reinforge.core.registry import Registry`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reinforge.core.lazy_exports import lazy_exports

_EXPORTS = {
    "Action": "reinforge.core.episode",
    "EID": "reinforge.core.eid",
    "Episode": "reinforge.core.episode",
    "Experience": "reinforge.core.experience",
    "FormatConfig": "reinforge.core.generation",
    "GenerationConfig": "reinforge.core.generation",
    "ModelOutput": "reinforge.core.model_output",
    "Registry": "reinforge.core.registry",
    "RegistryError": "reinforge.core.registry",
    "Step": "reinforge.core.episode",
    "StrictModel": "reinforge.core.strict_model",
    "Task": "reinforge.core.task",
    "TerminationEvent": "reinforge.core.episode",
    "TerminationReason": "reinforge.core.episode",
    "Trajectory": "reinforge.core.episode",
}

__all__ = [
    "EID",
    "Action",
    "Episode",
    "Experience",
    "FormatConfig",
    "GenerationConfig",
    "ModelOutput",
    "Registry",
    "RegistryError",
    "Step",
    "StrictModel",
    "Task",
    "TerminationEvent",
    "TerminationReason",
    "Trajectory",
]

if TYPE_CHECKING:
    from reinforge.core.eid import EID
    from reinforge.core.episode import (
        Action,
        Episode,
        Step,
        TerminationEvent,
        TerminationReason,
        Trajectory,
    )
    from reinforge.core.experience import Experience
    from reinforge.core.generation import FormatConfig, GenerationConfig
    from reinforge.core.model_output import ModelOutput
    from reinforge.core.registry import Registry, RegistryError
    from reinforge.core.strict_model import StrictModel
    from reinforge.core.task import Task


__getattr__, __dir__ = lazy_exports("reinforge.core", globals(), _EXPORTS)
