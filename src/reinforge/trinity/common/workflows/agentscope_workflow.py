"""Mirror of ``trinity.common.workflows.agentscope_workflow`` (the AgentScope adapters),
with the tuner's ``WorkflowOutput`` / ``JudgeOutput`` that AgentScope 2.0 lacks."""

from reinforge.workflows.agentscope import (
    AgentScopeWorkflowAdapter,
    AgentScopeWorkflowAdapterV1,
    JudgeOutput,
    WorkflowOutput,
)

__all__ = [
    "AgentScopeWorkflowAdapter",
    "AgentScopeWorkflowAdapterV1",
    "JudgeOutput",
    "WorkflowOutput",
]
