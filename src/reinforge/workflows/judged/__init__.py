"""Workflows scored by a model: reward model, RULER, trainable RULER, rubric judge."""

from reinforge.workflows.judged.math_rm import (
    AsyncMathRMWorkflow,
    MathRMWorkflow,
    RewardModelScore,
)
from reinforge.workflows.judged.math_ruler import AsyncMathRULERWorkflow, MathRULERWorkflow
from reinforge.workflows.judged.math_trainable_ruler import MathTrainableRULERWorkflow
from reinforge.workflows.judged.rubric import RubricJudgeWorkflow

__all__ = [
    "AsyncMathRMWorkflow",
    "AsyncMathRULERWorkflow",
    "MathRMWorkflow",
    "MathRULERWorkflow",
    "MathTrainableRULERWorkflow",
    "RewardModelScore",
    "RubricJudgeWorkflow",
]
