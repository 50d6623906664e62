"""Mirror of ``rllm.engine``: ``RolloutEngine`` and ``ModelOutput``, as rLLM exports them."""

from reinforge.workflows.episode import ModelOutput, RolloutEngine

__all__ = ["ModelOutput", "RolloutEngine"]
