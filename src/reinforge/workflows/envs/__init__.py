"""Workflows over text environments: FrozenLake (gymnasium), ScienceWorld (optional) and
email search over a generated mailbox."""

from reinforge.workflows.envs.email_search import EmailSearchWorkflow
from reinforge.workflows.envs.frozen_lake import FrozenLakeWorkflow, StepWiseFrozenLakeWorkflow
from reinforge.workflows.envs.sciworld import SciWorldWorkflow

__all__ = [
    "EmailSearchWorkflow",
    "FrozenLakeWorkflow",
    "SciWorldWorkflow",
    "StepWiseFrozenLakeWorkflow",
]
