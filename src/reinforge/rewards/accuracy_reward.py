"""``accuracy_reward``: is the response's final answer mathematically equal to the truth?"""

from __future__ import annotations

from typing import Any

from reinforge.rewards.math_check import match_score
from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn


@REWARD_FUNCTIONS.register_module("accuracy_reward")
class AccuracyReward(RewardFn):
    """Scores ``{"accuracy": 1.0}`` when math-verify finds the response's answer equal to ``truth``.

    The whole response goes to math-verify, which locates the final answer itself
    (last ``\\boxed{}``, "final answer is ...", the last formula). The truth may be
    a bare answer (``42``, ``3/4``) or LaTeX (``\\boxed{42}``, ``$3/4$``).

    Args:
        timeout: seconds allowed for parsing and comparing one response; past it
            the response scores 0. ``None`` or 0 checks in-process without a limit.
    """

    def __init__(self, timeout: float | None = 5.0, **kwargs: Any) -> None:
        super().__init__(timeout=timeout, **kwargs)
        self.timeout = timeout

    def __call__(
        self, response: str, truth: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> dict[str, float]:
        if truth is None or not response:
            return {"accuracy": 0.0}
        score = match_score(str(truth), response, prediction_is_answer=False, timeout=self.timeout)
        return {"accuracy": score}
