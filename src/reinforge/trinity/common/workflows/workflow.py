"""Mirror of ``trinity.common.workflows.workflow``."""

from reinforge.core import Experience, Task
from reinforge.models import ModelWrapper
from reinforge.workflows import (
    WORKFLOWS,
    AsyncMathWorkflow,
    AsyncSimpleWorkflow,
    BaseSimpleWorkflow,
    MathWorkflow,
    MultiTurnWorkflow,
    SimpleWorkflow,
    Workflow,
)

__all__ = [
    "WORKFLOWS",
    "AsyncMathWorkflow",
    "AsyncSimpleWorkflow",
    "BaseSimpleWorkflow",
    "Experience",
    "MathWorkflow",
    "ModelWrapper",
    "MultiTurnWorkflow",
    "SimpleWorkflow",
    "Task",
    "Workflow",
]
