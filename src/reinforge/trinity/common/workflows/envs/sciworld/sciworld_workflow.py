"""Mirror of ``trinity.common.workflows.envs.sciworld.sciworld_workflow``."""

from reinforge.workflows import SciWorldWorkflow

__all__ = ["SciWorldWorkflow"]
