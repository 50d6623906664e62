"""Mirror of ``trinity.common.workflows.agentscope.react.react_workflow``."""

from reinforge.workflows.agentscope import AgentScopeReActWorkflow

__all__ = ["AgentScopeReActWorkflow"]
