"""Workflows: how the policy works on one task and how the outcome is scored.

Workflows over environments (FrozenLake, ScienceWorld, WebShop, ALFWorld, email search)
live in the environments wing, ``reinforge.envs``; ``WORKFLOWS`` finds them by name.
"""

from reinforge.workflows.agentscope import (
    AgentScopeReactMathWorkflow,
    AgentScopeReActWorkflow,
    AgentScopeV0ReactMathWorkflow,
    AgentScopeV1ReactSearchWorkflow,
    AgentScopeWorkflowAdapter,
    AgentScopeWorkflowAdapterV1,
)
from reinforge.workflows.black_box_agent import BlackBoxAgentWorkflow
from reinforge.workflows.calculator_agent import CalculatorAgentWorkflow
from reinforge.workflows.distill import (
    AsyncOnPolicyDistillMathWorkflow,
    AsyncOnPolicyDistillWorkflow,
    OnPolicyDistillMathWorkflow,
    OnPolicyDistillWorkflow,
)
from reinforge.workflows.judged import (
    AsyncMathRMWorkflow,
    AsyncMathRULERWorkflow,
    MathRMWorkflow,
    MathRULERWorkflow,
    MathTrainableRULERWorkflow,
    RubricJudgeWorkflow,
)
from reinforge.workflows.math import (
    AsyncMathBoxedWorkflow,
    AsyncMathEvalWorkflow,
    AsyncMathWorkflow,
    MathBoxedWorkflow,
    MathEvalWorkflow,
    MathWorkflow,
)
from reinforge.workflows.multi_turn import MultiTurnWorkflow
from reinforge.workflows.multimodal import AsyncSimpleMMWorkflow, SimpleMMWorkflow
from reinforge.workflows.simple import AsyncSimpleWorkflow, BaseSimpleWorkflow, SimpleWorkflow
from reinforge.workflows.step_wise import (
    AsyncRewardPropagationWorkflow,
    AsyncStepWiseRewardWorkflow,
    RewardPropagationWorkflow,
    StepWiseRewardWorkflow,
)
from reinforge.workflows.tool_call import ToolCallWorkflow
from reinforge.workflows.workflow import WORKFLOWS, Workflow

__all__ = [
    "WORKFLOWS",
    "AgentScopeReActWorkflow",
    "AgentScopeReactMathWorkflow",
    "AgentScopeV0ReactMathWorkflow",
    "AgentScopeV1ReactSearchWorkflow",
    "AgentScopeWorkflowAdapter",
    "AgentScopeWorkflowAdapterV1",
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
    "BlackBoxAgentWorkflow",
    "CalculatorAgentWorkflow",
    "MathBoxedWorkflow",
    "MathEvalWorkflow",
    "MathRMWorkflow",
    "MathRULERWorkflow",
    "MathTrainableRULERWorkflow",
    "MathWorkflow",
    "MultiTurnWorkflow",
    "OnPolicyDistillMathWorkflow",
    "OnPolicyDistillWorkflow",
    "RewardPropagationWorkflow",
    "RubricJudgeWorkflow",
    "SimpleMMWorkflow",
    "SimpleWorkflow",
    "StepWiseRewardWorkflow",
    "ToolCallWorkflow",
    "Workflow",
]
