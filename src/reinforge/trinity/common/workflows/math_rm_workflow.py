"""Mirror of ``trinity.common.workflows.math_rm_workflow``."""

from reinforge.workflows import AsyncMathRMWorkflow, MathRMWorkflow

__all__ = ["AsyncMathRMWorkflow", "MathRMWorkflow"]
