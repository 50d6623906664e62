"""Mirror of ``trinity.common.workflows.on_policy_distill_workflow``."""

from reinforge.workflows.distill import (
    AsyncOnPolicyDistillMathWorkflow,
    AsyncOnPolicyDistillWorkflow,
    OnPolicyDistillMathWorkflow,
    OnPolicyDistillWorkflow,
)

__all__ = [
    "AsyncOnPolicyDistillMathWorkflow",
    "AsyncOnPolicyDistillWorkflow",
    "OnPolicyDistillMathWorkflow",
    "OnPolicyDistillWorkflow",
]
