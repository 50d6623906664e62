"""Mirror of ``rllm.rewards.reward_fn``."""

from reinforge.workflows.episode.reward_output import RewardFunction, zero_reward

__all__ = ["RewardFunction", "zero_reward"]
