"""Mirror of ``trinity.common.workflows``: the workflow base, registry and built-ins.

The environments' workflows (``FrozenLakeWorkflow``, ``AlfworldWorkflow``, ...) come from
the environments wing and load on first use, so importing this module does not import
gymnasium, TextWorld or ScienceWorld.
"""

import reinforge.envs
from reinforge.core import Experience, Task
from reinforge.core.lazy_exports import lazy_exports
from reinforge.models import ModelWrapper
from reinforge.workflows import (
    WORKFLOWS,
    AgentScopeReactMathWorkflow,
    AgentScopeReActWorkflow,
    AgentScopeV0ReactMathWorkflow,
    AgentScopeV1ReactSearchWorkflow,
    AgentScopeWorkflowAdapter,
    AgentScopeWorkflowAdapterV1,
    AsyncMathBoxedWorkflow,
    AsyncMathEvalWorkflow,
    AsyncMathRMWorkflow,
    AsyncMathRULERWorkflow,
    AsyncMathWorkflow,
    AsyncOnPolicyDistillMathWorkflow,
    AsyncOnPolicyDistillWorkflow,
    AsyncRewardPropagationWorkflow,
    AsyncSimpleMMWorkflow,
    AsyncSimpleWorkflow,
    AsyncStepWiseRewardWorkflow,
    BaseSimpleWorkflow,
    MathBoxedWorkflow,
    MathEvalWorkflow,
    MathRMWorkflow,
    MathRULERWorkflow,
    MathTrainableRULERWorkflow,
    MathWorkflow,
    MultiTurnWorkflow,
    OnPolicyDistillMathWorkflow,
    OnPolicyDistillWorkflow,
    RewardPropagationWorkflow,
    RubricJudgeWorkflow,
    SimpleMMWorkflow,
    SimpleWorkflow,
    StepWiseRewardWorkflow,
    ToolCallWorkflow,
    Workflow,
)

__all__ = [
    "WORKFLOWS",
    "AgentScopeReActWorkflow",
    "AgentScopeReactMathWorkflow",
    "AgentScopeV0ReactMathWorkflow",
    "AgentScopeV1ReactSearchWorkflow",
    "AgentScopeWorkflowAdapter",
    "AgentScopeWorkflowAdapterV1",
    "AlfworldWorkflow",
    "AsyncMathBoxedWorkflow",
    "AsyncMathEvalWorkflow",
    "AsyncMathRMWorkflow",
    "AsyncMathRULERWorkflow",
    "AsyncMathWorkflow",
    "AsyncOnPolicyDistillMathWorkflow",
    "AsyncOnPolicyDistillWorkflow",
    "AsyncRewardPropagationWorkflow",
    "AsyncSimpleMMWorkflow",
    "AsyncSimpleWorkflow",
    "AsyncStepWiseRewardWorkflow",
    "BaseSimpleWorkflow",
    "EmailSearchWorkflow",
    "Experience",
    "FrozenLakeWorkflow",
    "MathBoxedWorkflow",
    "MathEvalWorkflow",
    "MathRMWorkflow",
    "MathRULERWorkflow",
    "MathTrainableRULERWorkflow",
    "MathWorkflow",
    "ModelWrapper",
    "MultiTurnWorkflow",
    "OnPolicyDistillMathWorkflow",
    "OnPolicyDistillWorkflow",
    "RAFTAlfworldWorkflow",
    "RAFTReflectAlfworldWorkflow",
    "RewardPropagationWorkflow",
    "RubricJudgeWorkflow",
    "SciWorldWorkflow",
    "SimpleMMWorkflow",
    "SimpleWorkflow",
    "StepWiseAlfworldWorkflow",
    "StepWiseFrozenLakeWorkflow",
    "StepWiseRewardWorkflow",
    "StepWiseWebShopWorkflow",
    "Task",
    "ToolCallWorkflow",
    "WebShopWorkflow",
    "Workflow",
]

_ENV_EXPORTS = dict.fromkeys(reinforge.envs.__all__, "reinforge.envs")

__getattr__, __dir__ = lazy_exports(__name__, globals(), _ENV_EXPORTS)
