"""Mirror of ``trinity.common.workflows.envs.sciworld.sciworld_workflow``."""

from reinforge.envs.sciworld import SciWorldWorkflow

__all__ = ["SciWorldWorkflow"]
