"""Mirror of ``trinity.common.workflows.step_wise_workflow``."""

from reinforge.workflows import (
    AsyncRewardPropagationWorkflow,
    AsyncStepWiseRewardWorkflow,
    RewardPropagationWorkflow,
    StepWiseRewardWorkflow,
)

__all__ = [
    "AsyncRewardPropagationWorkflow",
    "AsyncStepWiseRewardWorkflow",
    "RewardPropagationWorkflow",
    "StepWiseRewardWorkflow",
]
