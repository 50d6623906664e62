"""``math_reward``: DeepSeek-R1 style math reward, accuracy plus format."""

from __future__ import annotations

import re
from typing import Any

from reinforge.rewards.extract import extract_answer
from reinforge.rewards.format_reward import FormatReward
from reinforge.rewards.math_check import match_score
from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn


@REWARD_FUNCTIONS.register_module("math_reward")
class MathReward(RewardFn):
    """Returns ``{"accuracy": 0 or 1, "format_score": ±0.1}`` for a math response.

    The answer is the content of the last ``<answer>...</answer>`` block, else of
    the last ``\\boxed{}`` (or the first group of the last ``answer_pattern``
    match, when given); it is compared with ``truth`` by math-verify. A response
    stating neither is checked whole, math-verify finding the answer itself.
    The format part is :class:`~reinforge.rewards.format_reward.FormatReward`.

    Args:
        timeout: seconds allowed for the math check (default 5); a timeout scores 0.
        answer_pattern: optional regex with one group that captures the answer.
        format_pattern: regex of the expected layout (default: think then answer).
        format_correct_score / format_wrong_score: format scores (default 0.1 / -0.1).
    """

    def __init__(
        self,
        timeout: float | None = 5.0,
        answer_pattern: str | None = None,
        format_pattern: str | None = None,
        format_correct_score: float = 0.1,
        format_wrong_score: float = -0.1,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            timeout=timeout,
            answer_pattern=answer_pattern,
            format_pattern=format_pattern,
            format_correct_score=format_correct_score,
            format_wrong_score=format_wrong_score,
            **kwargs,
        )
        self.timeout = timeout
        self.answer_pattern = re.compile(answer_pattern, re.DOTALL) if answer_pattern else None
        self.format_reward = FormatReward(
            pattern=format_pattern,
            correct_score=format_correct_score,
            wrong_score=format_wrong_score,
        )

    def extract(self, response: str) -> str | None:
        """The response's stated answer, or None."""
        if self.answer_pattern is None:
            return extract_answer(response)
        matches = self.answer_pattern.findall(response)
        return str(matches[-1]).strip() if matches else None

    def __call__(
        self, response: str, truth: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> dict[str, float]:
        format_score = self.format_reward(response)["format_score"]
        if truth is None or not response:
            return {"accuracy": 0.0, "format_score": format_score}
        answer = self.extract(response)
        if answer is None:
            accuracy = match_score(
                str(truth), response, prediction_is_answer=False, timeout=self.timeout
            )
        elif answer:
            accuracy = match_score(str(truth), answer, timeout=self.timeout)
        else:
            accuracy = 0.0
        return {"accuracy": accuracy, "format_score": format_score}
