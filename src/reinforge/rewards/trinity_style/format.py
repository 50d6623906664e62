"""Trinity-RFT's ``FormatReward``: ``{"format_score": 0.1}`` for the expected layout, else -0.1."""

from __future__ import annotations

import re
from typing import Any

from reinforge.rewards.reward_fn import RewardFn

#: a think block then an answer block, each tag on its own line (Trinity-RFT's default)
TRINITY_FORMAT_PATTERN = r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$"


class TrinityFormatReward(RewardFn):
    """Matches ``pattern`` from the start of the response (DOTALL and MULTILINE).

    Unlike reinforge's ``FormatReward``, the scores are fixed (0.1 / -0.1) and the
    default pattern wants newlines around the tag contents.
    """

    def __init__(self, pattern: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pattern = pattern or TRINITY_FORMAT_PATTERN

    def __call__(self, response: str, *args: Any, **kwargs: Any) -> dict[str, float]:  # type: ignore[override]
        matched = re.match(self.pattern, response, re.DOTALL | re.MULTILINE)
        return {"format_score": 0.1 if matched else -0.1}
