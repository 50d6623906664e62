"""Workflows over text environments: FrozenLake (gymnasium) and ScienceWorld (optional)."""

from reinforge.workflows.envs.frozen_lake import FrozenLakeWorkflow, StepWiseFrozenLakeWorkflow
from reinforge.workflows.envs.sciworld import SciWorldWorkflow

__all__ = ["FrozenLakeWorkflow", "SciWorldWorkflow", "StepWiseFrozenLakeWorkflow"]
