"""Mirror of ``rllm.rewards.math_reward``: ``RewardMathFn`` (rLLM's math reward; the rule
is ``reinforge.rewards.rllm_math.math_reward``)."""

from __future__ import annotations

from typing import Any

from reinforge.rewards.rllm_math import RewardConfig, RewardType, math_reward
from reinforge.workflows.episode.reward_output import RewardInput, RewardOutput


class RewardMathFn:
    """``RewardMathFn(config)(task_info, action) -> RewardOutput``; ``task_info`` may also
    be a ``RewardInput`` (its ``task_info`` and ``action`` are used)."""

    def __init__(self, config: RewardConfig | None = None) -> None:
        self.config = config or RewardConfig()

    def __call__(self, task_info: Any, action: Any = None) -> RewardOutput:
        if isinstance(task_info, RewardInput):
            task_info, action = task_info.task_info, task_info.action
        response = getattr(action, "action", action)
        reward, correct = math_reward(self.config, dict(task_info or {}), response)
        return RewardOutput(reward=reward, is_correct=correct)


def math_reward_fn(task_info: dict, action: Any) -> RewardOutput:
    """rLLM's ``math_reward_fn``: :class:`RewardMathFn` with the default ``RewardConfig``."""
    return RewardMathFn(RewardConfig())(task_info, action)


__all__ = ["RewardConfig", "RewardMathFn", "RewardOutput", "RewardType", "math_reward_fn"]
