"""Mirror of ``rllm.rewards.reward_types``."""

from reinforge.workflows.episode.reward_output import RewardInput, RewardOutput

__all__ = ["RewardInput", "RewardOutput"]
