"""Mirror of ``trinity.common.rewards.math_reward``."""

from reinforge.rewards import REWARD_FUNCTIONS, MathBoxedRewardFn, MathRewardFn, RewardFn

__all__ = ["REWARD_FUNCTIONS", "MathBoxedRewardFn", "MathRewardFn", "RewardFn"]
