"""Mirror of ``trinity.common.workflows.eval_workflow``."""

from reinforge.workflows import AsyncMathEvalWorkflow, MathEvalWorkflow

__all__ = ["AsyncMathEvalWorkflow", "MathEvalWorkflow"]
