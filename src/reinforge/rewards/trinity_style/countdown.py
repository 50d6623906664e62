"""Trinity-RFT's ``CountDownRewardFn`` (TinyZero's countdown scoring): ``{"score": ...}``."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from reinforge.rewards.countdown_equation import InvalidEquationError, evaluate_equation
from reinforge.rewards.countdown_reward import parse_countdown_truth
from reinforge.rewards.reward_fn import RewardFn

_ANSWER = re.compile(r"<answer>(.*?)</answer>")


class CountDownRewardFn(RewardFn):
    """1.0 for a correct equation, 0.1 for a wrong or invalid one, 0 for none.

    Only the response's last line is read, and in it the last ``<answer>...</answer>``;
    the equation must use each given number exactly once and reach the target.
    ``truth`` is the JSON text (or dict) ``{"target": ..., "numbers": [...]}``.
    """

    correct_score = 1.0
    format_score = 0.1

    def __call__(  # type: ignore[override]
        self, response: str, prompt: str | None = None, truth: Any = None, **kwargs: Any
    ) -> dict[str, float]:
        target, numbers = parse_countdown_truth(
            json.loads(truth) if isinstance(truth, str) else truth
        )
        answers = _ANSWER.findall(response.split("\n")[-1])
        if not answers:
            return {"score": 0.0}
        equation = answers[-1].strip()
        used = [int(n) for n in re.findall(r"\d+", equation)]
        if Counter(used) != Counter(numbers):
            return {"score": self.format_score}
        try:
            value, _ = evaluate_equation(equation)
        except InvalidEquationError:
            return {"score": self.format_score}
        return {"score": self.correct_score if abs(value - target) < 1e-5 else self.format_score}
