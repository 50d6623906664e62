"""Reward functions and their registry."""

from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn

__all__ = ["REWARD_FUNCTIONS", "RewardFn"]
