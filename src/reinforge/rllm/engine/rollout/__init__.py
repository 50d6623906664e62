"""Mirror of ``rllm.engine.rollout``: ``RolloutEngine`` and ``ModelOutput``."""

from reinforge.workflows.episode import ModelOutput, RolloutEngine

__all__ = ["ModelOutput", "RolloutEngine"]
