"""AgentScope agents trained by reinforge: the workflow-function adapters and the ReAct
workflows, under Trinity-RFT's names. Importing this package does not import
AgentScope; building one of its workflows does (``pip install 'reinforge[agentscope]'``).
"""

from reinforge.workflows.agentscope.adapter import (
    AgentScopeWorkflowAdapter,
    AgentScopeWorkflowAdapterV1,
)
from reinforge.workflows.agentscope.chat_model import auxiliary_chat_models, policy_chat_model
from reinforge.workflows.agentscope.react_math import (
    AgentScopeReactMathWorkflow,
    AgentScopeReActWorkflow,
    AgentScopeV0ReactMathWorkflow,
)
from reinforge.workflows.agentscope.search import AgentScopeV1ReactSearchWorkflow
from reinforge.workflows.agentscope.tuner_types import JudgeOutput, WorkflowOutput

__all__ = [
    "AgentScopeReActWorkflow",
    "AgentScopeReactMathWorkflow",
    "AgentScopeV0ReactMathWorkflow",
    "AgentScopeV1ReactSearchWorkflow",
    "AgentScopeWorkflowAdapter",
    "AgentScopeWorkflowAdapterV1",
    "JudgeOutput",
    "WorkflowOutput",
    "auxiliary_chat_models",
    "policy_chat_model",
]
