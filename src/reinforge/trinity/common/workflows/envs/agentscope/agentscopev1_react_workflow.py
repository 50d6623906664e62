"""Mirror of ``trinity.common.workflows.envs.agentscope.agentscopev1_react_workflow``."""

from reinforge.workflows.agentscope import AgentScopeReactMathWorkflow

__all__ = ["AgentScopeReactMathWorkflow"]
