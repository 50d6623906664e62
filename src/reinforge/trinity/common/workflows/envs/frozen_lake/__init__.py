"""Mirror of ``trinity.common.workflows.envs.frozen_lake``."""
