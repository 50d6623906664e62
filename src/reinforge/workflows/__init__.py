"""Workflows: how the policy works on one task and how the outcome is scored."""

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
from reinforge.workflows.envs import (
    AlfworldWorkflow,
    FrozenLakeWorkflow,
    RAFTAlfworldWorkflow,
    RAFTReflectAlfworldWorkflow,
    SciWorldWorkflow,
    StepWiseAlfworldWorkflow,
    StepWiseFrozenLakeWorkflow,
    StepWiseWebShopWorkflow,
    WebShopWorkflow,
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
    "AlfworldWorkflow",
    "AsyncMathBoxedWorkflow",
    "AsyncMathEvalWorkflow",
    "AsyncMathRMWorkflow",
    "AsyncMathRULERWorkflow",
    "AsyncMathWorkflow",
    "AsyncRewardPropagationWorkflow",
    "AsyncSimpleMMWorkflow",
    "AsyncSimpleWorkflow",
    "AsyncStepWiseRewardWorkflow",
    "BaseSimpleWorkflow",
    "BlackBoxAgentWorkflow",
    "CalculatorAgentWorkflow",
    "FrozenLakeWorkflow",
    "MathBoxedWorkflow",
    "MathEvalWorkflow",
    "MathRMWorkflow",
    "MathRULERWorkflow",
    "MathTrainableRULERWorkflow",
    "MathWorkflow",
    "MultiTurnWorkflow",
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
    "ToolCallWorkflow",
    "WebShopWorkflow",
    "Workflow",
]
