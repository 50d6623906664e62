"""Mirror of ``trinity.common.workflows.envs.sciworld``."""
