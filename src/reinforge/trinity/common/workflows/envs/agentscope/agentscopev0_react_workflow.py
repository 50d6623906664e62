"""Mirror of ``trinity.common.workflows.envs.agentscope.agentscopev0_react_workflow``."""

from reinforge.workflows.agentscope import AgentScopeV0ReactMathWorkflow

__all__ = ["AgentScopeV0ReactMathWorkflow"]
