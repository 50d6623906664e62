"""Mirror of ``trinity.common.rewards``: every reward class Trinity-RFT exports, with
Trinity-RFT's call signatures (``AccuracyReward`` and ``FormatReward`` here are the
Trinity-style ones, not ``reinforge.rewards.AccuracyReward`` / ``FormatReward``)."""

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
