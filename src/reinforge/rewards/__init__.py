"""Reward functions and their registry.

Importing this package registers the built-ins: ``accuracy_reward``,
``format_reward``, ``math_reward``, ``math_boxed_reward``, ``countdown_reward``
and ``reasoning_gym_reward``; Trinity-RFT's classes (``MathBoxedRewardFn``...) add
``math_dapo_reward`` and ``rm_gallery_reward``.
"""

from reinforge.rewards.accuracy_reward import AccuracyReward
from reinforge.rewards.call_outcome import CallOutcome
from reinforge.rewards.countdown_reward import CountdownReward
from reinforge.rewards.extract import extract_answer, last_boxed, last_tagged
from reinforge.rewards.format_reward import FormatReward
from reinforge.rewards.math_boxed_reward import MathBoxedReward
from reinforge.rewards.math_reward import MathReward
from reinforge.rewards.reasoning_gym_reward import ReasoningGymReward
from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn, call_reward_fn
from reinforge.rewards.timeout import call_with_timeout
from reinforge.rewards.trinity_style import (
    CountDownRewardFn,
    MathBoxedRewardFn,
    MathDAPORewardFn,
    MathRewardFn,
    RMGalleryFn,
    TrinityAccuracyReward,
    TrinityFormatReward,
)
from reinforge.rewards.worker_pool import RewardWorkerCrashed

__all__ = [
    "REWARD_FUNCTIONS",
    "AccuracyReward",
    "CallOutcome",
    "CountDownRewardFn",
    "CountdownReward",
    "FormatReward",
    "MathBoxedReward",
    "MathBoxedRewardFn",
    "MathDAPORewardFn",
    "MathReward",
    "MathRewardFn",
    "RMGalleryFn",
    "ReasoningGymReward",
    "RewardFn",
    "RewardWorkerCrashed",
    "TrinityAccuracyReward",
    "TrinityFormatReward",
    "call_reward_fn",
    "call_with_timeout",
    "extract_answer",
    "last_boxed",
    "last_tagged",
]
