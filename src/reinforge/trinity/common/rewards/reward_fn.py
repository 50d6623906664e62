"""Mirror of ``trinity.common.rewards.reward_fn``."""

from reinforge.rewards import REWARD_FUNCTIONS, RewardFn, RMGalleryFn

__all__ = ["REWARD_FUNCTIONS", "RMGalleryFn", "RewardFn"]
