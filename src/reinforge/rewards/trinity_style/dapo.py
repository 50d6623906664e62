"""Trinity-RFT's ``MathDAPORewardFn``: boxed-answer accuracy plus DAPO's overlong penalty."""

from __future__ import annotations

from collections.abc import Sized
from typing import Any

from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn
from reinforge.rewards.trinity_style.math import boxed_accuracy


@REWARD_FUNCTIONS.register_module("math_dapo_reward")
class MathDAPORewardFn(RewardFn):
    """``{"accuracy": 0 or 1, "format_score": penalty}`` (DAPO, arXiv 2503.14476).

    With ``enable_overlong_penalty`` a response of ``max_response_length - cache_length``
    tokens or fewer has no penalty, one longer than ``max_response_length`` gets
    ``-penalty_factor``, and the ones between a penalty growing linearly towards it.
    """

    def __init__(
        self,
        enable_overlong_penalty: bool | None = None,
        penalty_factor: float | None = None,
        max_response_length: int | None = None,
        cache_length: int | None = None,
        timeout: float | None = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.enable_overlong_penalty = enable_overlong_penalty
        self.penalty_factor = penalty_factor
        self.max_response_length = max_response_length
        self.cache_length = cache_length
        self.timeout = timeout
        if enable_overlong_penalty:
            if None in (penalty_factor, max_response_length, cache_length):
                raise ValueError(
                    "enable_overlong_penalty needs max_response_length, penalty_factor "
                    "and cache_length"
                )
            if max_response_length <= cache_length:  # type: ignore[operator]
                raise ValueError("max_response_length must be greater than cache_length")

    def __call__(  # type: ignore[override]
        self,
        response: str,
        response_token: Sized | None = None,
        truth: str | None = None,
        **kwargs: Any,
    ) -> dict[str, float]:
        accuracy = boxed_accuracy(response, truth, self.timeout)
        format_score = 0.0
        if self.enable_overlong_penalty and response_token is not None:
            format_score = self.compute_overlong_penalty(response_token)
        return {"accuracy": accuracy, "format_score": format_score}

    def compute_overlong_penalty(self, response_token: Sized) -> float:
        """The (non-positive) penalty for a response of ``len(response_token)`` tokens."""
        assert self.max_response_length is not None and self.cache_length is not None
        assert self.penalty_factor is not None
        length = len(response_token)
        expected = self.max_response_length - self.cache_length
        if length <= expected:
            return 0.0
        if length > self.max_response_length:
            return -self.penalty_factor
        return (expected - length) / self.cache_length * self.penalty_factor
