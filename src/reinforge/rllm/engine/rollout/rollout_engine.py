"""Mirror of ``rllm.engine.rollout.rollout_engine``."""

from reinforge.workflows.episode import ModelOutput, RolloutEngine

__all__ = ["ModelOutput", "RolloutEngine"]
