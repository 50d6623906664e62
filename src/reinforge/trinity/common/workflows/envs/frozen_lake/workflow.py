"""Mirror of ``trinity.common.workflows.envs.frozen_lake.workflow``."""

from reinforge.workflows import FrozenLakeWorkflow

__all__ = ["FrozenLakeWorkflow"]
