"""Mirror of ``trinity.common.workflows.envs.alfworld``."""
