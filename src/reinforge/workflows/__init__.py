"""Workflows: how the policy works on one task and how the outcome is scored."""

from reinforge.workflows.math import (
    AsyncMathBoxedWorkflow,
    AsyncMathEvalWorkflow,
    AsyncMathWorkflow,
    MathBoxedWorkflow,
    MathEvalWorkflow,
    MathWorkflow,
)
from reinforge.workflows.simple import AsyncSimpleWorkflow, BaseSimpleWorkflow, SimpleWorkflow
from reinforge.workflows.workflow import WORKFLOWS, Workflow

__all__ = [
    "WORKFLOWS",
    "AsyncMathBoxedWorkflow",
    "AsyncMathEvalWorkflow",
    "AsyncMathWorkflow",
    "AsyncSimpleWorkflow",
    "BaseSimpleWorkflow",
    "MathBoxedWorkflow",
    "MathEvalWorkflow",
    "MathWorkflow",
    "SimpleWorkflow",
    "Workflow",
]
