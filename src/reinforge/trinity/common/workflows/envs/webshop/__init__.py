"""Mirror of ``trinity.common.workflows.envs.webshop``."""
