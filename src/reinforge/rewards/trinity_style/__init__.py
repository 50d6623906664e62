"""Reward functions under Trinity-RFT's class names, with Trinity-RFT's call signatures.

reinforge's own rewards (``reinforge.rewards.MathBoxedReward`` and the others) take
their options in the constructor and ``truth`` before ``prompt``; code written for
Trinity-RFT passes ``prompt`` second, options at call time, and expects Trinity's
scores. The classes here behave the way that code expects, while the answer checking
is reinforge's (math-verify under a timeout). They are re-exported at Trinity's module
paths by ``reinforge.trinity.common.rewards``.
"""

from reinforge.rewards.trinity_style.accuracy import TrinityAccuracyReward, simple_answer_parser
from reinforge.rewards.trinity_style.countdown import CountDownRewardFn
from reinforge.rewards.trinity_style.dapo import MathDAPORewardFn
from reinforge.rewards.trinity_style.format import TrinityFormatReward
from reinforge.rewards.trinity_style.math import MathBoxedRewardFn, MathRewardFn
from reinforge.rewards.trinity_style.rm_gallery import RMGalleryFn

__all__ = [
    "CountDownRewardFn",
    "MathBoxedRewardFn",
    "MathDAPORewardFn",
    "MathRewardFn",
    "RMGalleryFn",
    "TrinityAccuracyReward",
    "TrinityFormatReward",
    "simple_answer_parser",
]
