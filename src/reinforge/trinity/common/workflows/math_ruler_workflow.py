"""Mirror of ``trinity.common.workflows.math_ruler_workflow``."""

from reinforge.workflows import AsyncMathRULERWorkflow, MathRULERWorkflow

__all__ = ["AsyncMathRULERWorkflow", "MathRULERWorkflow"]
