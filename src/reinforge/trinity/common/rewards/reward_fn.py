"""Mirror of ``trinity.common.rewards.reward_fn``.

Trinity-RFT 0.1.x defined its reward classes in this module (``AccuracyReward``,
``FormatReward``, ``MathRewardFn``, ``MathBoxedRewardFn``, ``CountDownRewardFn``); from
0.2.0 they moved to modules of their own and this one kept the base class and registry.
Both imports work here, and both name the same classes, which follow 0.2.0 and later:
the call takes ``response``/``prompt``/``truth`` (by position too, as 0.1.x called them)
and returns a dict of scores, where 0.1.x returned a float unless ``return_dict``.
"""

from reinforge.rewards import REWARD_FUNCTIONS, RewardFn, RMGalleryFn
from reinforge.trinity.common.rewards import (
    AccuracyReward,
    CountDownRewardFn,
    FormatReward,
    MathBoxedRewardFn,
    MathRewardFn,
)

__all__ = [
    "REWARD_FUNCTIONS",
    "AccuracyReward",
    "CountDownRewardFn",
    "FormatReward",
    "MathBoxedRewardFn",
    "MathRewardFn",
    "RMGalleryFn",
    "RewardFn",
]
