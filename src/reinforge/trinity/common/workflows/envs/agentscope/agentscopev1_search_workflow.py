"""Mirror of ``trinity.common.workflows.envs.agentscope.agentscopev1_search_workflow``."""

from reinforge.workflows.agentscope import AgentScopeV1ReactSearchWorkflow

__all__ = ["AgentScopeV1ReactSearchWorkflow"]
