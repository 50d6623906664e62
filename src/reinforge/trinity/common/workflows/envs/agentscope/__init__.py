"""Mirror of ``trinity.common.workflows.envs.agentscope``."""
