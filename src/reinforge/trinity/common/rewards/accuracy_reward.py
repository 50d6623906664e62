"""Mirror of ``trinity.common.rewards.accuracy_reward``."""

from reinforge.rewards import REWARD_FUNCTIONS, RewardFn
from reinforge.rewards import TrinityAccuracyReward as AccuracyReward

__all__ = ["REWARD_FUNCTIONS", "AccuracyReward", "RewardFn"]
