"""``countdown_reward``: the countdown numbers game (reach a target with given numbers)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from reinforge.rewards.countdown_equation import InvalidEquationError, evaluate_equation
from reinforge.rewards.extract import extract_answer
from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn


def parse_countdown_truth(truth: Any) -> tuple[int, list[int]]:
    """Read ``{"target": int, "numbers": [int, ...]}`` from a dict or its JSON text.

    ``nums`` is accepted for ``numbers`` (the key of common countdown datasets).
    """
    data = json.loads(truth) if isinstance(truth, str) else truth
    if not isinstance(data, dict):
        raise ValueError(f"countdown truth must be a dict or JSON object, got {truth!r}")
    numbers = data.get("numbers", data.get("nums"))
    if "target" not in data or numbers is None:
        raise ValueError(f"countdown truth needs 'target' and 'numbers', got {data!r}")
    return int(data["target"]), [int(n) for n in numbers]


def _left_hand_side(equation: str, target: int) -> str:
    """Drop a trailing ``= target`` (``(1+2)*8 = 24``); other uses of ``=`` stay invalid."""
    left, sep, right = equation.rpartition("=")
    if sep and right.strip() == str(target):
        return left
    return equation


@REWARD_FUNCTIONS.register_module("countdown_reward")
class CountdownReward(RewardFn):
    """Returns ``{"accuracy": ..., "format_score": ...}`` for a countdown answer.

    The equation is the last ``<answer>...</answer>`` block, else the last
    ``\\boxed{}``. It is correct when it uses every given number exactly once,
    only ``+ - * /`` and parentheses, and equals the target exactly; that scores
    ``accuracy = correct_score`` (1.0). An equation that is present but wrong,
    invalid or unsafe scores ``format_score`` (0.1); no equation scores 0.

    ``truth`` is ``{"target": ..., "numbers": [...]}`` as a dict or JSON string;
    when it is None the ``raw_task`` row is read for those keys instead.
    """

    def __init__(
        self, correct_score: float = 1.0, format_score: float = 0.1, **kwargs: Any
    ) -> None:
        super().__init__(correct_score=correct_score, format_score=format_score, **kwargs)
        self.correct_score = float(correct_score)
        self.format_score = float(format_score)

    def __call__(
        self,
        response: str,
        truth: str | dict[str, Any] | None = None,
        prompt: str | None = None,
        raw_task: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, float]:
        target, numbers = parse_countdown_truth(truth if truth is not None else raw_task)
        equation = extract_answer(response)
        if not equation:
            return {"accuracy": 0.0, "format_score": 0.0}
        if self.is_solution(equation, target, numbers):
            return {"accuracy": self.correct_score, "format_score": 0.0}
        return {"accuracy": 0.0, "format_score": self.format_score}

    @staticmethod
    def is_solution(equation: str, target: int, numbers: list[int]) -> bool:
        """True when ``equation`` uses exactly ``numbers`` and evaluates to ``target``."""
        try:
            value, used = evaluate_equation(_left_hand_side(equation, target))
        except InvalidEquationError:
            return False
        return Counter(used) == Counter(numbers) and value == target
