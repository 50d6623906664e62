"""Trinity-RFT's ``MathRewardFn`` and ``MathBoxedRewardFn``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reinforge.rewards.extract import has_single_think_block, last_boxed
from reinforge.rewards.math_check import match_score
from reinforge.rewards.reward_fn import RewardFn
from reinforge.rewards.trinity_style.accuracy import TrinityAccuracyReward, simple_answer_parser
from reinforge.rewards.trinity_style.format import TrinityFormatReward


def boxed_accuracy(response: str, truth: str | None, timeout: float | None) -> float:
    """1.0 when the reply's last ``\\boxed{}`` matches the truth (its own last boxed
    answer, when it has one) under math-verify; 0.0 otherwise, or with no boxed answer."""
    answer = last_boxed(response)
    if answer is None or truth is None:
        return 0.0
    gold = last_boxed(str(truth))
    return match_score(gold if gold is not None else str(truth), answer, timeout=timeout)


class MathRewardFn(RewardFn):
    """``{"accuracy": 0 or 1, "format_score": ±0.1}``: accuracy of the ``<answer>`` block's
    content (``answer_parser``) plus the think-then-answer layout (``pattern``)."""

    DEFAULT_FORMAT_PATTERN = r".*?<think>.*?</think>\s*<answer>.*?</answer>\s*$"
    DEFAULT_ANSWER_PARSER = staticmethod(simple_answer_parser)

    def __init__(
        self,
        answer_parser: Callable[[str], Any] | None = None,
        pattern: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.accuracy_reward = TrinityAccuracyReward(answer_parser or simple_answer_parser)
        self.format_reward = TrinityFormatReward(pattern or self.DEFAULT_FORMAT_PATTERN)

    def __call__(  # type: ignore[override]
        self, response: str, prompt: str | None = None, truth: str | None = None, **kwargs: Any
    ) -> dict[str, float]:
        return self.accuracy_reward(response, prompt, truth) | self.format_reward(response)


class MathBoxedRewardFn(RewardFn):
    """``{"accuracy": 0 or 1, "format_score": 0 or -format_score_coef}``.

    The answer is the last ``\\boxed{}`` of the response; ``truth`` may itself be boxed.
    A response without a box scores 0.0 in total (no format penalty for it, unlike
    reinforge's ``math_boxed_reward``). ``with_think`` (a call argument, as in Trinity)
    adds the penalty when the response lacks exactly one ``<think>...</think>``.
    Constructor arguments are accepted and ignored, so ``reward_fn_args`` cannot break it.
    """

    def __init__(self, timeout: float | None = 5.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.timeout = timeout

    def __call__(  # type: ignore[override]
        self,
        response: str,
        prompt: str | None = None,
        truth: str | None = None,
        with_think: bool | None = False,
        format_score_coef: float | None = 0.1,
        **kwargs: Any,
    ) -> dict[str, float]:
        accuracy = boxed_accuracy(response, truth, self.timeout)
        format_score = 0.0
        if with_think and not has_single_think_block(response):
            format_score = -(format_score_coef or 0.1)
        return {"accuracy": accuracy, "format_score": format_score}
