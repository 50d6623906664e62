"""Mirror of ``trinity.common.rewards.basic_reward`` (older Trinity-RFT kept every reward here)."""

from reinforge.rewards import (
    REWARD_FUNCTIONS,
    CountDownRewardFn,
    MathBoxedRewardFn,
    MathDAPORewardFn,
    MathRewardFn,
    RewardFn,
    RMGalleryFn,
)
from reinforge.rewards import (
    TrinityAccuracyReward as AccuracyReward,
)
from reinforge.rewards import (
    TrinityFormatReward as FormatReward,
)

__all__ = [
    "REWARD_FUNCTIONS",
    "AccuracyReward",
    "CountDownRewardFn",
    "FormatReward",
    "MathBoxedRewardFn",
    "MathDAPORewardFn",
    "MathRewardFn",
    "RMGalleryFn",
    "RewardFn",
]
