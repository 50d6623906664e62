"""Mirror of ``trinity.common.rewards.format_reward``."""

from reinforge.rewards import REWARD_FUNCTIONS, RewardFn
from reinforge.rewards import TrinityFormatReward as FormatReward

__all__ = ["REWARD_FUNCTIONS", "FormatReward", "RewardFn"]
