"""Mirror of ``rllm.rewards.countdown_reward``: ``countdown_reward_fn`` over reinforge's
countdown checker.

rLLM's countdown tasks carry ``target`` and ``nums``; the reward is 1.0 for an equation
that uses each number once and hits the target, else 0.0 (rLLM gives no partial
credit here), with ``is_correct`` to match.
"""

from __future__ import annotations

from typing import Any

from reinforge.rewards import CountdownReward
from reinforge.workflows.episode.reward_output import RewardOutput

_CHECKER = CountdownReward()


def countdown_reward_fn(task_info: dict, action: Any) -> RewardOutput:
    """Score a countdown equation (``<answer>`` or ``\\boxed{}``) against the task."""
    response = getattr(action, "action", action)
    numbers = task_info.get("nums", task_info.get("numbers"))
    if task_info.get("target") is None or numbers is None:
        return RewardOutput(
            reward=0.0, is_correct=False, metadata={"error": "Missing target or nums"}
        )
    components = _CHECKER(
        "" if response is None else str(response),
        truth={"target": task_info["target"], "numbers": list(numbers)},
    )
    correct = components["accuracy"] > 0
    return RewardOutput(reward=1.0 if correct else 0.0, is_correct=correct, metadata=components)
