"""FrozenLake (gymnasium's toy-text game) played in text: ``frozen_lake_workflow`` and
``step_wise_frozen_lake_workflow`` (``workflow.py``) over ``TextFrozenLake`` (``env.py``)."""

from reinforge.envs.frozen_lake.workflow import FrozenLakeWorkflow, StepWiseFrozenLakeWorkflow

__all__ = ["FrozenLakeWorkflow", "StepWiseFrozenLakeWorkflow"]
