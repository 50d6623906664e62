"""Mirror of ``trinity.common.rewards.dapo_reward``."""

from reinforge.rewards import REWARD_FUNCTIONS, MathDAPORewardFn, RewardFn

__all__ = ["REWARD_FUNCTIONS", "MathDAPORewardFn", "RewardFn"]
