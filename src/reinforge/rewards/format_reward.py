"""``format_reward``: does the response follow the expected layout?"""

from __future__ import annotations

import re
from typing import Any

from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn

# DeepSeek-R1 layout: one think block, then one answer block, nothing after.
# ``(?:(?!</?tag>).)*`` is "any text without that tag", so a second or nested
# block breaks the match instead of being swallowed by a lazy ``.*?``.
DEFAULT_FORMAT_PATTERN = (
    r"^\s*<think>(?:(?!</?think>).)*</think>\s*"
    r"<answer>(?:(?!</?answer>).)*</answer>\s*$"
)


@REWARD_FUNCTIONS.register_module("format_reward")
class FormatReward(RewardFn):
    """Scores ``{"format_score": correct_score}`` when the response matches ``pattern``.

    Args:
        pattern: regular expression matched from the start of the response
            (``re.match`` with DOTALL, so ``.`` spans lines; end it with ``$`` to
            cover the whole response); defaults to :data:`DEFAULT_FORMAT_PATTERN`,
            ``<think>...</think>`` followed by ``<answer>...</answer>``.
        correct_score: score of a well-formed response (default 0.1).
        wrong_score: score of any other response (default -0.1).
    """

    def __init__(
        self,
        pattern: str | None = None,
        correct_score: float = 0.1,
        wrong_score: float = -0.1,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            pattern=pattern, correct_score=correct_score, wrong_score=wrong_score, **kwargs
        )
        self.pattern = re.compile(pattern or DEFAULT_FORMAT_PATTERN, re.DOTALL)
        self.correct_score = float(correct_score)
        self.wrong_score = float(wrong_score)

    def matches(self, response: str) -> bool:
        return self.pattern.match(response) is not None

    def __call__(
        self, response: str, truth: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> dict[str, float]:
        score = self.correct_score if self.matches(response) else self.wrong_score
        return {"format_score": score}
