"""Mirror of ``trinity.common.rewards.countdown_reward``."""

from reinforge.rewards import REWARD_FUNCTIONS, CountDownRewardFn, RewardFn

__all__ = ["REWARD_FUNCTIONS", "CountDownRewardFn", "RewardFn"]
