"""``math_boxed_reward``: math accuracy of the last ``\\boxed{}`` answer."""

from __future__ import annotations

from typing import Any

from reinforge.rewards.extract import has_single_think_block, last_boxed
from reinforge.rewards.math_check import match_score
from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn


@REWARD_FUNCTIONS.register_module("math_boxed_reward")
class MathBoxedReward(RewardFn):
    """Returns ``{"accuracy": 0 or 1, "format_score": 0 or -format_score_coef}``.

    The answer is the content of the last ``\\boxed{...}`` (nested braces are
    fine), compared with ``truth`` by math-verify. ``format_score`` is 0 for a
    well-formed response and ``-format_score_coef`` when there is no boxed answer
    or, with ``has_think``, when the response lacks exactly one
    ``<think>...</think>`` block; the penalty is not doubled when both fail.

    Args:
        timeout: seconds allowed for the math check (default 5); a timeout scores 0.
        format_score_coef: size of the format penalty (default 0.1).
        has_think: also require a think block (default False). ``with_think`` is
            accepted as another name for it, as in Trinity-RFT.
    """

    def __init__(
        self,
        timeout: float | None = 5.0,
        format_score_coef: float = 0.1,
        has_think: bool = False,
        **kwargs: Any,
    ) -> None:
        has_think = bool(kwargs.pop("with_think", has_think))
        super().__init__(
            timeout=timeout, format_score_coef=format_score_coef, has_think=has_think, **kwargs
        )
        self.timeout = timeout
        self.format_score_coef = float(format_score_coef)
        self.has_think = has_think

    def __call__(
        self, response: str, truth: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> dict[str, float]:
        answer = last_boxed(response)
        well_formed = answer is not None and (
            not self.has_think or has_single_think_block(response)
        )
        format_score = 0.0 if well_formed else -self.format_score_coef
        accuracy = 0.0
        if answer and truth is not None:
            accuracy = match_score(str(truth), answer, timeout=self.timeout)
        return {"accuracy": accuracy, "format_score": format_score}
