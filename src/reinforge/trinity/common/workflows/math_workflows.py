"""Mirror of ``trinity.common.workflows.math_workflows``."""

from reinforge.workflows import AsyncMathWorkflow, MathWorkflow

__all__ = ["AsyncMathWorkflow", "MathWorkflow"]
