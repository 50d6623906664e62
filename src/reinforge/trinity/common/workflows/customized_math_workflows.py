"""Mirror of ``trinity.common.workflows.customized_math_workflows``."""

from reinforge.workflows import AsyncMathBoxedWorkflow, MathBoxedWorkflow

__all__ = ["AsyncMathBoxedWorkflow", "MathBoxedWorkflow"]
