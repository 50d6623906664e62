"""Mirror of ``trinity.common.workflows.envs.frozen_lake.workflow``."""

from reinforge.envs.frozen_lake import FrozenLakeWorkflow

__all__ = ["FrozenLakeWorkflow"]
