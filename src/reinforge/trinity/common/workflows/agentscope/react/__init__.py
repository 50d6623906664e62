"""Mirror of ``trinity.common.workflows.agentscope.react``."""
