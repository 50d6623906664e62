"""Mirror of ``trinity.common.workflows.math_trainable_ruler_workflow``."""

from reinforge.workflows import MathTrainableRULERWorkflow

__all__ = ["MathTrainableRULERWorkflow"]
